// SPDX-License-Identifier: GPL-2.0
/*
 * BPF-0 through the trampoline: the empty step of the nops policy (with
 * nop_inflight 0), but not sleepable. The loop runs only a sleepable
 * program directly (kernel patch 40) and calls this one through its
 * struct_ops trampoline every step, as it called every program before that
 * patch: the patch's before, measured in the same boot as its after. (A
 * non-sleepable trampoline enters rcu_read_lock() where a sleepable one
 * enters the tasks-trace section; both also disable migration and set the
 * run context.)
 */
#include <iouring_bpf/ring.bpf.h>

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 step_total = 1000;
__u64 steps;

SEC("struct_ops/loop_step")
int BPF_PROG(trampoline_step, struct iou_ctx *ring, struct iou_loop_params *lp)
{
	if (++steps >= step_total)
		return IOU_LOOP_STOP;
	return IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(trampoline_ops, trampoline_step);
