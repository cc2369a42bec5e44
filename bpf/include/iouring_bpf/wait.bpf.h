/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Wait policies for loop_step programs (need the timeout extension, see
 * iou_loop_has_timeouts()).
 *
 * Multi-step min-wait: wait until `batch` CQEs are ready, but no longer than
 * the current min-wait time; if that expires, wait for any one CQE (bounded
 * by max_wait_ns if set). With back-off, each expiry doubles the min-wait
 * time (up to max_wait_ns) and a met batch resets it: a workload that cannot
 * fill batches stops paying for them.
 *
 * Target queue depth: iou_qd_room() says how many requests to submit to keep
 * `depth` in flight.
 */
#ifndef IOURING_BPF_WAIT_BPF_H
#define IOURING_BPF_WAIT_BPF_H

#include "ring.bpf.h"
#include "wait.h"

/*
 * Set up the next wait. Call once per step, after reaping (`consumed` CQEs
 * this step) and submitting; lp->flags tells whether the last wait expired.
 * Deadlines are absolute, so early wake-ups do not stretch a phase. They
 * are on CLOCK_MONOTONIC, the ring's clock unless IORING_REGISTER_CLOCK
 * changed it.
 */
static __always_inline void iou_minwait_arm(struct iou_minwait *w, const struct iou_ring *r,
					    struct iou_loop_params *lp, __u32 consumed)
{
	__u64 now = bpf_ktime_get_ns();

	if (!w->cur_wait_ns)
		w->cur_wait_ns = w->min_wait_ns;
	if (consumed >= w->batch) {
		/* a whole batch: start over, and forget any back-off */
		w->batches++;
		if (w->backoff)
			w->cur_wait_ns = w->min_wait_ns;
		w->phase = 0;
		w->deadline_ns = 0;
	} else if (w->phase == 0 && (lp->flags & IOU_LOOP_WAIT_TIMED_OUT)) {
		w->expiries++;
		if (w->backoff) {
			w->cur_wait_ns *= 2;
			if (w->max_wait_ns && w->cur_wait_ns > w->max_wait_ns)
				w->cur_wait_ns = w->max_wait_ns;
		}
		w->phase = 1;
		w->deadline_ns = w->max_wait_ns ? now + w->max_wait_ns : 0;
	} else if (w->phase == 1 &&
		   (consumed || (lp->flags & IOU_LOOP_WAIT_TIMED_OUT))) {
		/* got its CQE, or gave up on it: a fresh batch phase */
		w->phase = 0;
		w->deadline_ns = 0;
	}

	if (w->phase == 0) {
		if (!w->deadline_ns)
			w->deadline_ns = now + w->cur_wait_ns;
		iou_wait_cqes(r, lp, w->batch);
	} else {
		iou_wait_cqes(r, lp, 1);
	}
	lp->flags = w->deadline_ns ? IOU_LOOP_TIMEOUT | IOU_LOOP_TIMEOUT_ABS : 0;
	lp->timeout_ns = w->deadline_ns;
}

/* How many requests to submit now to keep `depth` in flight. */
static __always_inline __u32 iou_qd_room(__u32 depth, __u32 inflight, __u32 remaining)
{
	__u32 room = inflight < depth ? depth - inflight : 0;

	if (room > remaining)
		room = remaining;
	if (room > iou_geom.sq_entries)
		room = iou_geom.sq_entries;
	return room;
}

#endif
