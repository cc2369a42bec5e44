# fuzz/vblk: random virtio-blk passthrough commands on the scratch disk vblk1
iouring_bpf_test_program(vblk_fuzz fuzz/vblk_fuzz.c LIBS fuzz_common uring-bpf-static PkgConfig::LIBURING)
target_include_directories(vblk_fuzz PRIVATE ${S}/fuzz)
iouring_bpf_test(NAME fuzz/vblk WHERE vm TIMEOUT 120 COMMAND $<TARGET_FILE:vblk_fuzz>)
