// SPDX-License-Identifier: GPL-2.0
/*
 * A struct_ops program that is not an io_uring loop (the kernel's
 * bpf_dummy_ops test type, sleepable member) calling the ublk kfunc. It
 * must not load: the kfunc takes a process-context lock and is meant for
 * io_uring_bpf_ops programs only, while other struct_ops types (sched_ext,
 * TCP congestion control) run in interrupt context.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

extern int bpf_ublk_get_io_desc(__u32 dev_id, __u32 q_id, __u32 tag, void *desc,
				__u32 desc__sz) __ksym;

struct ublksrv_io_desc desc_copy;

SEC("struct_ops.s/test_sleepable")
int BPF_PROG(not_a_loop, struct bpf_dummy_ops_state *state)
{
	return bpf_ublk_get_io_desc(0, 0, 0, &desc_copy, sizeof(desc_copy));
}

SEC(".struct_ops")
struct bpf_dummy_ops not_a_loop_ops = {
	.test_sleepable = (void *)not_a_loop,
};
