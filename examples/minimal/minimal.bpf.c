// SPDX-License-Identifier: GPL-2.0
/* The smallest useful policy: `total` NOPs, one at a time, one syscall. */
#include <iouring_bpf/ring.bpf.h>

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 total = 100;	/* set by user space before load */
__u32 done;				/* read by user space after the run */

IOURING_BPF_STEP(minimal_step)
{
	struct iou_ring r;

	if (!iou_ring_open(&r, ring))
		return IOU_LOOP_STOP;
	if (iou_cq_ready(&r)) {			/* the NOP in flight completed */
		iou_cq_advance(&r, 1);
		if (++done == total)
			return IOU_LOOP_STOP;
	}
	iou_prep_nop(iou_sqe_at(&r, 0), done);	/* SQ_REWIND: always SQE 0 */
	if (bpf_io_uring_submit_sqes(ring, 1) != 1)
		return IOU_LOOP_STOP;
	iou_wait_cqes(&r, lp, 1);		/* sleep until a CQE is ready */
	return IOU_LOOP_CONTINUE;
}

IOURING_BPF_OPS(minimal_ops, minimal_step);
