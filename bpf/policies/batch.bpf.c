// SPDX-License-Identifier: GPL-2.0
/*
 * batch: run batch_total requests, taken in turn from batch_tmpl[] (link
 * flags ignored), keeping batch_depth in flight, and wake up per
 * iouring_bpf/wait.bpf.h's multi-step min-wait (batch_wait). A ready
 * policy for "keep K requests in flight, reap them in batches".
 */
#include <iouring_bpf/wait.bpf.h>
#include <iouring_bpf/link.h>

char LICENSE[] SEC("license") = "GPL";

#define BATCH_MAX_TMPL 16

struct iou_link_req batch_tmpl[BATCH_MAX_TMPL];
__u32 batch_nr_tmpl = 1;
__u32 batch_total;
__u32 batch_depth = 8;
struct iou_minwait batch_wait = { .batch = 1, .min_wait_ns = 1000000 };

/* results */
__u64 batch_submitted, batch_completed, batch_errors, batch_steps, batch_peak_inflight;

IOURING_BPF_STEP(batch_step)
{
	struct iou_ring r;
	__u32 head, ready, room, i;
	int ret;

	batch_steps++;
	if (!iou_loop_has_timeouts(lp) || !iou_ring_open(&r, ring)) {
		iou_exit_status = -EOPNOTSUPP;
		return IOU_LOOP_STOP;
	}
	head = iou_cq_head(&r);
	ready = iou_cq_tail(&r) - head;
	bpf_for(i, 0, ready) {
		if (iou_cqe_at(&r, head + i)->res < 0)
			batch_errors++;
	}
	iou_cq_advance(&r, ready);
	batch_completed += ready;
	if (batch_completed >= batch_total) {
		iou_exit_status = 0;
		return IOU_LOOP_STOP;
	}

	room = iou_qd_room(batch_depth, batch_submitted - batch_completed,
			   batch_total - batch_submitted);
	bpf_for(i, 0, room) {
		__u64 n = batch_submitted + i;
		struct iou_link_req *t = &batch_tmpl[(n % batch_nr_tmpl) & (BATCH_MAX_TMPL - 1)];
		struct io_uring_sqe *sqe = iou_sqe_at(&r, i);

		iou_prep_rw(sqe, t->opcode, t->fd, t->addr, t->len, t->off, n);
		sqe->rw_flags = t->op_flags;
	}
	if (room) {
		ret = bpf_io_uring_submit_sqes(ring, room);
		if (ret < 0) {
			iou_exit_status = ret;
			return IOU_LOOP_STOP;
		}
		batch_submitted += ret;
	}
	if (batch_submitted - batch_completed > batch_peak_inflight)
		batch_peak_inflight = batch_submitted - batch_completed;
	iou_minwait_arm(&batch_wait, &r, lp, ready);
	return IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(batch_ops, batch_step);
