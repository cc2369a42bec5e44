/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Link emulation engine (see link.h). Include it in one policy and call
 * iou_link_step() from its loop_step; bpf/policies/link.bpf.c does.
 *
 * Rules, as 6.12's io_uring applies them to IOSQE_IO_LINK chains:
 * - request i is linked to i+1 if it has IOU_LINK_SOFT or IOU_LINK_HARD;
 *   a chain's head starts at once, each member when its predecessor ends;
 * - a request fails if res < 0, or if a read or write moved fewer bytes
 *   than asked, or a timeout expired without IORING_TIMEOUT_ETIME_SUCCESS;
 * - a failed SOFT request cancels the whole rest of its chain (-ECANCELED
 *   entries, in order, after its own); HARD continues;
 * - SKIP_SUCCESS drops the entry of a request that did not fail; if such a
 *   request fails, the entries of the requests it cancels are dropped too;
 * - DRAIN starts a request only when every earlier one has ended, and
 *   nothing after it starts before it.
 * Sizes: IOU_LINK_MAX_REQS requests per run.
 *
 * Runs are independent: an SQE's user_data is IOU_LINK_UD(run generation,
 * index) (a cancel, timeout or poll removal naming a request of the table
 * by its user_data is sent that request's), so a CQE of an earlier run is
 * recognised and ignored; a run that
 * stops with an error still consumes the CQEs it saw; and a new run first
 * cancels the requests an earlier, failed run left in flight and waits
 * for them to end (IOU_LINK_UD_INTERNAL marks the cancel requests' own
 * CQEs) before it starts anything: run it again as often as you like.
 */
#ifndef IOURING_BPF_LINK_BPF_H
#define IOURING_BPF_LINK_BPF_H

#include "ring.bpf.h"
#include "link.h"

#define IOU_LINK_MASK (IOU_LINK_MAX_REQS - 1)

/* Input: set by user space, then bump iou_link_generation to run it. */
struct iou_link_req iou_link_reqs[IOU_LINK_MAX_REQS];
__u32 iou_link_nr_reqs;
__u32 iou_link_generation;

/* Output. */
struct iou_link_cqe iou_link_log[IOU_LINK_MAX_REQS];
__u32 iou_link_nr_log;
int iou_link_status;		/* 0 done, IOU_LINK_RUNNING, or -errno */

enum { IOU_LREQ_WAITING, IOU_LREQ_INFLIGHT, IOU_LREQ_DONE };
static __u8 iou_lreq_state[IOU_LINK_MAX_REQS];
static __u32 iou_link_seen_generation, iou_link_done;

/*
 * Requests of earlier runs still in flight (their CQEs are awaited before
 * a new run starts anything), and the user_data of those not yet sent a
 * cancel. Not static: see iou_link_scan_busy.
 */
__u32 iou_link_stale;
__u64 iou_link_stale_ud[IOU_LINK_MAX_REQS];
__u8 iou_link_stale_cancel[IOU_LINK_MAX_REQS];	/* 1: cancel not sent yet */
__u32 iou_link_stale_cursor;

/*
 * Follow-ups of completions, in completion order: start the next request
 * of a chain, or cancel the rest of one. The kernel queues both as task
 * work when a linked request completes and runs them first in, first
 * out, so a next request that completes at once posts its CQE before the
 * cancellations a later completion asked for. Each request is the target
 * of at most one follow-up, so the ring of IOU_LINK_MAX_REQS cannot fill.
 */
enum { IOU_LFU_START = 1, IOU_LFU_CANCEL = 2 };
struct iou_link_followup {
	__u32 kind;
	__u32 idx;
	__u32 drop_cqes;	/* CANCEL: post no entries (SKIP_SUCCESS failed) */
};
static struct iou_link_followup iou_link_fu[IOU_LINK_MAX_REQS];
static __u32 iou_link_fu_head, iou_link_fu_tail;

static __always_inline void iou_link_push(__u32 kind, __u32 idx, __u32 drop)
{
	struct iou_link_followup *fu = &iou_link_fu[iou_link_fu_tail & IOU_LINK_MASK];

	fu->kind = kind;
	fu->idx = idx;
	fu->drop_cqes = drop;
	iou_link_fu_tail++;
}

static __always_inline bool iou_link_is_rw(__u8 op)
{
	return op == IORING_OP_READ || op == IORING_OP_WRITE ||
	       op == IORING_OP_READV || op == IORING_OP_WRITEV ||
	       op == IORING_OP_READ_FIXED || op == IORING_OP_WRITE_FIXED;
}

static __always_inline void iou_link_log_cqe(__u64 user_data, int res)
{
	__u32 n = iou_link_nr_log;

	if (n < IOU_LINK_MAX_REQS) {
		iou_link_log[n & IOU_LINK_MASK].user_data = user_data;
		iou_link_log[n & IOU_LINK_MASK].res = res;
		iou_link_nr_log = n + 1;
	}
}

/* Start of a new run: forget the previous one, but not what it left in flight. */
__noinline int iou_link_reset(void)
{
	__u32 i;

	for (i = 0; i < IOU_LINK_MAX_REQS; i++) {
		if (iou_lreq_state[i] == IOU_LREQ_INFLIGHT) {
			iou_link_stale_ud[i] = IOU_LINK_UD(iou_link_seen_generation, i);
			iou_link_stale_cancel[i] = 1;
			iou_link_stale++;
		}
		iou_lreq_state[i] = IOU_LREQ_WAITING;
	}
	iou_link_stale_cursor = 0;
	iou_link_nr_log = 0;
	iou_link_done = 0;
	iou_link_fu_head = iou_link_fu_tail = 0;
	iou_link_status = IOU_LINK_RUNNING;
	iou_link_seen_generation = iou_link_generation;
	return iou_link_nr_reqs <= IOU_LINK_MAX_REQS ? 0 : -E2BIG;
}

/*
 * A completion for user_data: apply the rules. 0 or -errno. CQEs of the
 * engine's own cancel requests and of earlier runs are ignored.
 */
__noinline int iou_link_complete(__u64 user_data, int res)
{
	__u32 idx = user_data & IOU_LINK_UD_IDX_MASK;
	struct iou_link_req *req;
	bool failed;

	if (user_data & IOU_LINK_UD_INTERNAL)
		return 0;
	if ((__u32)(user_data >> 32) != iou_link_seen_generation) {
		if (iou_link_stale)
			iou_link_stale--;
		return 0;
	}
	if (idx >= IOU_LINK_MAX_REQS || idx >= iou_link_nr_reqs ||
	    iou_lreq_state[idx & IOU_LINK_MASK] != IOU_LREQ_INFLIGHT)
		return -ENOENT;
	idx &= IOU_LINK_MASK;
	req = &iou_link_reqs[idx];
	iou_lreq_state[idx] = IOU_LREQ_DONE;
	iou_link_done++;

	failed = res < 0;
	if (iou_link_is_rw(req->opcode) && res >= 0 && (__u32)res != req->len)
		failed = true;
	if (req->opcode == IORING_OP_TIMEOUT && res == -ETIME &&
	    (req->op_flags & IOU_TIMEOUT_ETIME_SUCCESS))
		failed = false;

	if (failed || !(req->flags & IOU_LINK_SKIP_SUCCESS))
		iou_link_log_cqe(req->user_data, res);

	if (!(req->flags & (IOU_LINK_SOFT | IOU_LINK_HARD)) ||
	    idx + 1 >= iou_link_nr_reqs)
		return 0;
	if (failed && !(req->flags & IOU_LINK_HARD)) {
		iou_link_push(IOU_LFU_CANCEL, idx + 1,
			      !!(req->flags & IOU_LINK_SKIP_SUCCESS));
		return 0;
	}
	/* result passing: the next request moves what this one returned */
	if ((iou_link_reqs[(idx + 1) & IOU_LINK_MASK].flags & IOU_LINK_LEN_FROM_PREV) &&
	    res >= 0)
		iou_link_reqs[(idx + 1) & IOU_LINK_MASK].len = res;
	iou_link_push(IOU_LFU_START, idx + 1, 0);
	return 0;
}

/* CANCEL follow-up: the rest of the chain from idx, in order. */
__noinline int iou_link_cancel_from(__u32 idx, __u32 drop_cqes)
{
	__u32 j;

	for (j = idx; j < IOU_LINK_MAX_REQS && j < iou_link_nr_reqs; j++) {
		/*
		 * The verifier sees idx as any value: mask the index, and keep
		 * LLVM from turning it back into a pointer it steps by hand.
		 */
		__u32 k = j & IOU_LINK_MASK;
		struct iou_link_req *next;

		barrier_var(k);
		next = &iou_link_reqs[k];
		if (iou_lreq_state[k] != IOU_LREQ_DONE) {
			iou_lreq_state[k] = IOU_LREQ_DONE;
			iou_link_done++;
			if (!drop_cqes)
				iou_link_log_cqe(next->user_data, -ECANCELED);
		}
		if (!(next->flags & (IOU_LINK_SOFT | IOU_LINK_HARD)))
			break;
	}
	return 0;
}

/*
 * Pop follow-ups: CANCEL ones are done here; for a START the request's
 * index is returned, so its SQE can go out alone and a completion at once
 * is seen before later follow-ups. -1 when the queue is empty.
 */
__noinline int iou_link_next_start(void)
{
	__u32 k;

	for (k = 0; k < IOU_LINK_MAX_REQS; k++) {
		struct iou_link_followup *fu;

		if (iou_link_fu_head == iou_link_fu_tail)
			return -1;
		fu = &iou_link_fu[iou_link_fu_head & IOU_LINK_MASK];
		iou_link_fu_head++;
		if (fu->kind == IOU_LFU_START)
			return fu->idx & IOU_LINK_MASK;
		iou_link_cancel_from(fu->idx, fu->drop_cqes);
	}
	return -1;
}

/*
 * Scan state of one step, in globals: the verifier need not track it. Not
 * static: LLVM would shrink a static that only holds 0 and 1 to one byte,
 * and the BTF, still saying four, would then be refused by the kernel.
 */
__u32 iou_link_scan_busy;	/* earlier requests not yet done */
__u32 iou_link_scan_stop;	/* nothing after this point may start */

__noinline int iou_link_prep(struct io_uring_sqe *sqe, __u32 i);

/*
 * Consider request i during a step's in-order scan: write its SQE into sqe
 * and return 1 if it starts now, 0 if not, -1 if the scan must stop.
 * A global function: verified once, which keeps the scan loop small.
 */
__noinline int iou_link_try_start(struct io_uring_sqe *sqe, __u32 i)
{
	struct iou_link_req *req = &iou_link_reqs[i & IOU_LINK_MASK];
	__u8 state = iou_lreq_state[i & IOU_LINK_MASK];
	bool head = i == 0 ||
		    !(iou_link_reqs[(i - 1) & IOU_LINK_MASK].flags &
		      (IOU_LINK_SOFT | IOU_LINK_HARD));

	if (!sqe || iou_link_scan_stop)
		return -1;
	if (state == IOU_LREQ_DONE)
		return 0;
	if (state == IOU_LREQ_INFLIGHT) {
		iou_link_scan_busy++;
		return 0;
	}
	/* DRAIN: only when everything before has ended; nothing passes it */
	if ((req->flags & IOU_LINK_DRAIN) && iou_link_scan_busy) {
		iou_link_scan_stop = 1;
		return -1;
	}
	iou_link_scan_busy++;
	/* chain members start as follow-ups of their predecessor */
	if (!head)
		return 0;
	return iou_link_prep(sqe, i);
}

/*
 * Requests that name another by user_data (cancel, timeout and poll
 * removal) name it by the user_data the table gives it: translate that to
 * the SQE user_data it runs under in this run. Others pass through.
 */
__noinline __u64 iou_link_target_ud(__u64 user_data)
{
	__u32 j;

	for (j = 0; j < IOU_LINK_MAX_REQS && j < iou_link_nr_reqs; j++)
		if (iou_link_reqs[j].user_data == user_data)
			return IOU_LINK_UD(iou_link_seen_generation, j);
	return user_data;
}

/* Write request i's SQE and mark it in flight. 1, or -1 without an SQE. */
__noinline int iou_link_prep(struct io_uring_sqe *sqe, __u32 i)
{
	struct iou_link_req *req = &iou_link_reqs[i & IOU_LINK_MASK];
	__u64 addr = req->addr;

	if (!sqe)
		return -1;
	if (req->opcode == IORING_OP_ASYNC_CANCEL || req->opcode == IORING_OP_TIMEOUT_REMOVE ||
	    req->opcode == IORING_OP_POLL_REMOVE)
		addr = iou_link_target_ud(addr);
	iou_prep_rw(sqe, req->opcode, req->fd, addr, req->len, req->off,
		    IOU_LINK_UD(iou_link_seen_generation, i & IOU_LINK_MASK));
	sqe->rw_flags = req->op_flags;
	iou_lreq_state[i & IOU_LINK_MASK] = IOU_LREQ_INFLIGHT;
	if (req->flags & IOU_LINK_DRAIN)
		iou_link_scan_stop = 1;
	return 1;
}

/*
 * Feed up to IOU_LINK_MAX_REQS ready CQEs to the rules and mark exactly
 * those consumed (a CQE that fails the run too: it was seen). More ready
 * CQEs wait for the next call. 0 or -errno.
 */
static __always_inline int iou_link_reap(struct iou_ring *r)
{
	__u32 head = iou_cq_head(r), ready = iou_cq_tail(r) - head, i;
	int ret;

	for (i = 0; i < IOU_LINK_MAX_REQS && i < ready; i++) {
		struct io_uring_cqe *cqe = iou_cqe_at(r, head + i);

		ret = iou_link_complete(cqe->user_data, cqe->res);
		if (ret) {
			iou_cq_advance(r, i + 1);
			return ret;
		}
	}
	iou_cq_advance(r, i);
	return 0;
}

/*
 * SQEs [from, n) of a submission the kernel did not take: their requests
 * are not in flight (nothing of theirs will complete).
 */
__noinline int iou_link_unsubmitted(struct io_uring_sqe *sqe)
{
	__u32 idx;

	if (!sqe || (sqe->user_data & IOU_LINK_UD_INTERNAL))
		return 0;
	idx = sqe->user_data & IOU_LINK_MASK;
	if (iou_lreq_state[idx] == IOU_LREQ_INFLIGHT)
		iou_lreq_state[idx] = IOU_LREQ_WAITING;
	return 0;
}

/* The next cancel of a stale request into sqe: 1, or 0 if none is left. */
__noinline int iou_link_cancel_stale(struct io_uring_sqe *sqe)
{
	__u32 k;

	if (!sqe)
		return 0;
	for (k = 0; k < IOU_LINK_MAX_REQS; k++) {
		__u32 i = iou_link_stale_cursor & IOU_LINK_MASK;

		barrier_var(i);		/* keep the masked index (see cancel_from) */
		if (iou_link_stale_cursor >= IOU_LINK_MAX_REQS)
			return 0;
		iou_link_stale_cursor++;
		if (!iou_link_stale_cancel[i])
			continue;
		iou_link_stale_cancel[i] = 0;
		iou_prep_rw(sqe, IORING_OP_ASYNC_CANCEL, -1, iou_link_stale_ud[i], 0, 0,
			    IOU_LINK_UD_INTERNAL);
		return 1;
	}
	return 0;
}

/* Submit n SQEs; on a short count, take back the requests not submitted. */
static __always_inline int iou_link_submit(struct iou_ring *r, __u32 n)
{
	int ret = bpf_io_uring_submit_sqes(r->ctx, n);
	__u32 i;

	if (ret == (int)n)
		return 0;
	bpf_for(i, ret < 0 ? 0 : ret, n)
		iou_link_unsubmitted(iou_sqe_at(r, i));
	return ret < 0 ? ret : -EAGAIN;
}

/*
 * One loop step: reap, start what may start, wait. Returns the loop_step
 * result; iou_link_status says how the run ended.
 */
static __always_inline int iou_link_step(struct iou_ctx *ring,
					 struct iou_loop_params *lp)
{
	struct iou_ring r;
	__u32 i, n = 0;
	int ret;

	if (iou_link_seen_generation != iou_link_generation) {
		ret = iou_link_reset();
		if (ret)
			goto fail;
	}
	if (!iou_ring_open(&r, ring)) {
		ret = -EFAULT;
		goto fail;
	}

	ret = iou_link_reap(&r);
	if (ret)
		goto fail;
	/* requests of an earlier run still in flight: cancel, wait for them */
	if (iou_link_stale) {
		bpf_for(i, 0, iou_geom.sq_entries) {
			int c = iou_link_cancel_stale(iou_sqe_at(&r, n));

			barrier_var(c);
			if (c <= 0)
				break;
			n += c;
		}
		if (n) {
			ret = iou_link_submit(&r, n);
			if (ret)
				goto fail;
		}
		iou_wait_cqes(&r, lp, 1);
		return IOU_LOOP_CONTINUE;
	}
	/* follow-ups in completion order, each start submitted on its own */
	bpf_for(i, 0, IOU_LINK_MAX_REQS) {
		int idx = iou_link_next_start();

		if (idx < 0)
			break;
		if (iou_link_prep(iou_sqe_at(&r, 0), idx) != 1) {
			ret = -EFAULT;
			goto fail;
		}
		ret = iou_link_submit(&r, 1);
		if (ret)
			goto fail;
		ret = iou_link_reap(&r);
		if (ret)
			goto fail;
	}
	if (iou_link_done >= iou_link_nr_reqs) {
		iou_link_status = 0;
		return IOU_LOOP_STOP;
	}

	iou_link_scan_busy = 0;
	iou_link_scan_stop = 0;
	bpf_for(i, 0, iou_link_nr_reqs) {
		if (n >= iou_geom.sq_entries)
			break;
		ret = iou_link_try_start(iou_sqe_at(&r, n), i);
		if (ret < 0)
			break;
		n += ret;
	}
	if (n) {
		ret = iou_link_submit(&r, n);
		if (ret)
			goto fail;
	}
	iou_wait_cqes(&r, lp, 1);
	return IOU_LOOP_CONTINUE;
fail:
	iou_link_status = ret;
	return IOU_LOOP_STOP;
}

#endif
