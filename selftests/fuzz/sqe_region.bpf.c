// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz/sqe: bpf_io_uring_get_region() with a random region id and size.
 * The size must be a constant the verifier sees, so it is read-only data
 * that user space sets before each load: one object loaded per case. The
 * verifier may refuse a load (a size past u32, an access past the size);
 * a load it accepts must get the region exactly when it exists and is at
 * least that large.
 */
#include <iouring_bpf/common.bpf.h>

char LICENSE[] SEC("license") = "GPL";

enum { REG_NONE, REG_READ, REG_WRITE };

const volatile __u32 reg_id;
const volatile __u64 reg_size = 1;
const volatile __u64 reg_off;		/* the byte it touches */
const volatile __u32 reg_access;	/* REG_* */

__u32 reg_runs, reg_got;
__u8 reg_seen;

SEC("struct_ops.s/loop_step")
int BPF_PROG(region_step, struct iou_ctx *ring, struct iou_loop_params *lp)
{
	__u8 *p = bpf_io_uring_get_region(ring, reg_id, reg_size);

	reg_runs++;
	reg_got = !!p;
	if (!p)
		return IOU_LOOP_STOP;
	if (reg_access >= REG_READ)
		reg_seen = *(volatile __u8 *)(p + reg_off);
	/* the same byte back: the ring may still be in use */
	if (reg_access == REG_WRITE)
		*(volatile __u8 *)(p + reg_off) = reg_seen;
	return IOU_LOOP_STOP;
}

SEC(".struct_ops.link")
struct io_uring_bpf_ops region_ops = {
	.loop_step = (void *)region_step,
};
