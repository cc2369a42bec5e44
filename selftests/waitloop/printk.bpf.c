// SPDX-License-Identifier: GPL-2.0
/*
 * A policy that debugs the way every BPF developer does: bpf_printk() from
 * loop_step. Mainline definitions only, like upstream liburing's own
 * io_uring BPF tests, so it needs nothing of ours but the kernel.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

struct io_ring_ctx {
} __attribute__((preserve_access_index));

struct iou_loop_params {
	__u32 cq_wait_idx;
} __attribute__((preserve_access_index));

struct io_uring_bpf_ops {
	int (*loop_step)(struct io_ring_ctx *ctx, struct iou_loop_params *lp);
	__u32 ring_fd;
	void *priv;
} __attribute__((preserve_access_index));

enum { IOU_LOOP_CONTINUE = 0, IOU_LOOP_STOP = 1 };

/* set by the test, so the line it looks for is this run's */
const volatile __u32 token;
__u32 steps;
/* what each bpf_printk() returned, and where it ran: a failed test says why */
long printk_ret[4];
__u32 printk_cpu[4];

SEC("struct_ops.s/loop_step")
int BPF_PROG(printk_step, struct io_ring_ctx *ring, struct iou_loop_params *lp)
{
	__u32 step = ++steps;
	long ret;

	ret = bpf_printk("iouring-bpf printk token=%u step=%u", token, step);
	if (step < 4) {
		printk_ret[step] = ret;
		printk_cpu[step] = bpf_get_smp_processor_id();
	}
	return step < 3 ? IOU_LOOP_CONTINUE : IOU_LOOP_STOP;
}

SEC(".struct_ops.link")
struct io_uring_bpf_ops printk_ops = {
	.loop_step = (void *)printk_step,
};
