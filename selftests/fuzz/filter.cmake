# fuzz/filter: random classic BPF filters against IORING_REGISTER_BPF_FILTER,
# each accepted one's verdicts compared with an interpreter's
iouring_bpf_test_program(filter_fuzz fuzz/filter_fuzz.c LIBS fuzz_common PkgConfig::LIBURING)
target_include_directories(filter_fuzz SYSTEM BEFORE PRIVATE "${BPF_TOOLS_DIR}/root/include")
target_include_directories(filter_fuzz PRIVATE ${S}/fuzz)
iouring_bpf_test(NAME fuzz/filter WHERE vm TIMEOUT 120 COMMAND $<TARGET_FILE:filter_fuzz>)
