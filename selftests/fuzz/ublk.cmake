# fuzz/ublk-ctrl and fuzz/ublk-io: ublk's control commands, and a
# misbehaving server's I/O commands under O_DIRECT I/O, in raw UAPI through
# the distribution's liburing and the patched kernel's headers (as
# ublk/mainline_zc.c does)
foreach(f ublk_ctrl_fuzz ublk_io_fuzz)
  iouring_bpf_test_program(${f} fuzz/${f}.c
    LIBS ublk_fuzz_common fuzz_common PkgConfig::LIBURING pthread)
  target_include_directories(${f} SYSTEM BEFORE PRIVATE "${BPF_TOOLS_DIR}/root/include")
  target_include_directories(${f} PRIVATE ${S}/fuzz)
endforeach()
# the default budget is 20 s; a case's cleanup is bounded by 60 s more
iouring_bpf_test(NAME fuzz/ublk-ctrl WHERE vm TIMEOUT 150 COMMAND $<TARGET_FILE:ublk_ctrl_fuzz>)
iouring_bpf_test(NAME fuzz/ublk-io WHERE vm TIMEOUT 150 COMMAND $<TARGET_FILE:ublk_io_fuzz>)

# ublk/found-*: each kernel bug the two fuzzers found, replayed as a fixed
# command sequence (selftests/fuzz/ublk_found.c names the patch of each)
iouring_bpf_test_program(ublk_found fuzz/ublk_found.c
  LIBS ublk_fuzz_common PkgConfig::LIBURING pthread)
target_include_directories(ublk_found SYSTEM BEFORE PRIVATE "${BPF_TOOLS_DIR}/root/include")
target_include_directories(ublk_found PRIVATE ${S}/fuzz)
foreach(c params-shift partial-fetch result-bounds stop-then-start stop-ends-start
    del-during-start recovery-start-dies recovery-cycle recovery-unfetched-queue)
  iouring_bpf_test(NAME ublk/found-${c} WHERE vm TIMEOUT 120 COMMAND $<TARGET_FILE:ublk_found> ${c})
endforeach()
