// SPDX-License-Identifier: GPL-2.0
/*
 * Programs the verifier must refuse; the test loads one at a time and
 * checks the message that names the problem.
 */
#include <iouring_bpf/ring.bpf.h>

char LICENSE[] SEC("license") = "GPL";

/*
 * The ring is opaque (struct iou_ctx, mainline 7.2): a program written for
 * 7.1 that takes it for a struct io_ring_ctx can neither write it ...
 */
IOURING_BPF_STEP(write_ctx)
{
	((struct io_ring_ctx *)ring)->flags = 0;
	return IOU_LOOP_STOP;
}
IOURING_BPF_OPS(write_ctx_ops, write_ctx);

/* ... nor read it */
IOURING_BPF_STEP(read_ctx)
{
	return ((struct io_ring_ctx *)ring)->flags ? IOU_LOOP_STOP : IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(read_ctx_ops, read_ctx);

/* lp->step is the kernel's counter, not the program's */
IOURING_BPF_STEP(write_step)
{
	lp->step = 0;
	return IOU_LOOP_STOP;
}
IOURING_BPF_OPS(write_step_ops, write_step);

/* 64 bytes asked for, byte 64 touched */
IOURING_BPF_STEP(region_past_size)
{
	__u8 *p = bpf_io_uring_get_region(ring, IOU_REGION_MEM, 64);

	if (p)
		p[64] = 1;
	return IOU_LOOP_STOP;
}
IOURING_BPF_OPS(region_past_size_ops, region_past_size);

/* the size must be known when the program is loaded */
__u64 runtime_size = 64;

IOURING_BPF_STEP(region_nonconst)
{
	__u8 *p = bpf_io_uring_get_region(ring, IOU_REGION_MEM, runtime_size);

	if (p)
		p[0] = 1;
	return IOU_LOOP_STOP;
}
IOURING_BPF_OPS(region_nonconst_ops, region_nonconst);
