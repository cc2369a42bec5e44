# fuzz/sqe: random SQEs written and submitted by a BPF loop_step program,
# and bpf_io_uring_get_region() with random ids and sizes (one program
# loaded per case: the size is a load-time constant)
bpf_object(sqe_fuzz ${S}/fuzz/sqe_fuzz.bpf.c)
bpf_object(sqe_region ${S}/fuzz/sqe_region.bpf.c)
iouring_bpf_test_program(sqe_fuzz_test ${S}/fuzz/sqe_fuzz.c
  LIBS fuzz_common sqe_fuzz_skel sqe_region_skel uring-bpf-static pthread)
target_include_directories(sqe_fuzz_test PRIVATE ${S}/fuzz)
iouring_bpf_test(NAME fuzz/sqe WHERE vm TIMEOUT 120 COMMAND $<TARGET_FILE:sqe_fuzz_test>)

# fuzz/lifecycle: attach, detach, ring close, map free, process exit and
# signals raced from several threads while a loop runs and sleeps
bpf_object(lifecycle_fuzz ${S}/fuzz/lifecycle.bpf.c)
iouring_bpf_test_program(lifecycle_fuzz_test ${S}/fuzz/lifecycle.c
  LIBS fuzz_common lifecycle_fuzz_skel uring-bpf-static pthread)
target_include_directories(lifecycle_fuzz_test PRIVATE ${S}/fuzz)
iouring_bpf_test(NAME fuzz/lifecycle WHERE vm TIMEOUT 120 COMMAND $<TARGET_FILE:lifecycle_fuzz_test>)
