// SPDX-License-Identifier: GPL-2.0
/*
 * nops: run nop_total NOPs with at most nop_inflight in flight, all inside
 * one io_uring_enter(). The seed benchmark's "BPF-1" (inflight 1) and
 * "BPF-8" (inflight 8). With nop_inflight 0 it submits nothing and just
 * takes nop_total steps: the cost of the loop itself.
 *
 * Globals: nop_total, nop_inflight (set before load); nop_submitted,
 * nop_completed, nop_bad_cqes, nop_steps (read after the run); iou_exit_status
 * (non-zero: why the policy stopped early).
 */
#include <iouring_bpf/ring.bpf.h>

char LICENSE[] SEC("license") = "GPL";

/* Per step at most this many CQEs reaped and SQEs written: plain bounded
 * loops are cheaper than bpf_for()'s iterator kfunc calls per step. */
#define NOP_BATCH 32

const volatile __u32 nop_total = 1000;
const volatile __u32 nop_inflight = 8;
__u64 nop_submitted, nop_completed, nop_bad_cqes, nop_steps;

IOURING_BPF_STEP(nops_step)
{
	struct iou_ring r;
	__u32 head, ready, want, i;
	int ret;

	if (++nop_steps >= nop_total && !nop_inflight)
		return IOU_LOOP_STOP;
	if (!nop_inflight)
		return IOU_LOOP_CONTINUE;
	if (!iou_ring_open(&r, ring)) {
		iou_exit_status = -EFAULT;
		return IOU_LOOP_STOP;
	}

	head = iou_cq_head(&r);
	ready = iou_cq_tail(&r) - head;
	if (ready > NOP_BATCH)
		ready = NOP_BATCH;
	for (i = 0; i < NOP_BATCH && i < ready; i++) {
		struct io_uring_cqe *cqe = iou_cqe_at(&r, head + i);

		/* NOPs complete in submission order, tagged with their number */
		if (cqe->res != 0 || cqe->user_data != nop_completed)
			nop_bad_cqes++;
		nop_completed++;
	}
	iou_cq_advance(&r, ready);
	if (nop_completed >= nop_total)
		return IOU_LOOP_STOP;

	want = nop_inflight - (__u32)(nop_submitted - nop_completed);
	if (want > nop_total - nop_submitted)
		want = nop_total - nop_submitted;
	if (want > iou_geom.sq_entries)
		want = iou_geom.sq_entries;
	if (want > NOP_BATCH)
		want = NOP_BATCH;
	for (i = 0; i < NOP_BATCH && i < want; i++)
		iou_prep_nop(iou_sqe_at(&r, i), nop_submitted + i);
	if (want) {
		ret = bpf_io_uring_submit_sqes(ring, want);
		if (ret < 0) {
			iou_exit_status = ret;
			return IOU_LOOP_STOP;
		}
		nop_submitted += ret;
	}
	iou_wait_cqes(&r, lp, 1);
	return IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(nops_ops, nops_step);
