/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * DAG scheduler engine (see dag.h). Include it in one policy and call
 * iou_dag_step() from its loop_step; bpf/policies/dag.bpf.c does.
 *
 * User space (liburing-bpf's iouring_bpf_dag_export()) fills the node and
 * edge tables, sets iou_dag_nr_nodes and iou_dag_max_inflight, and bumps
 * iou_dag_generation; after the run iou_dag_res[] holds every node's result
 * and iou_dag_order[] the order in which nodes ended.
 *
 * Every loop over nodes or edges lives in a global function with an
 * open-coded iterator, so the verifier checks each once, whatever the size.
 *
 * Runs are independent: SQEs carry IOU_DAG_UD(generation, node), so CQEs
 * of an earlier run are ignored; a run that stops with an error consumes
 * the CQEs it saw; a new run first cancels what a failed run left in
 * flight and waits for it to end before it starts any node.
 */
#ifndef IOURING_BPF_DAG_BPF_H
#define IOURING_BPF_DAG_BPF_H

#include "ring.bpf.h"
#include "dag.h"

#define IOU_DAG_NODE_MASK (IOU_DAG_MAX_NODES - 1)
#define IOU_DAG_EDGE_MASK (IOU_DAG_MAX_EDGES - 1)

/* Input. */
struct iou_dag_node iou_dag_nodes[IOU_DAG_MAX_NODES];
struct iou_dag_edge iou_dag_edges[IOU_DAG_MAX_EDGES];
__u32 iou_dag_nr_nodes;
__u32 iou_dag_max_inflight = 16;
__u32 iou_dag_generation;

/* Output. */
__s32 iou_dag_res[IOU_DAG_MAX_NODES];
__u32 iou_dag_order[IOU_DAG_MAX_NODES];
__u32 iou_dag_nr_done;
__u32 iou_dag_peak_inflight;

/* Internal; not static where LLVM could otherwise narrow them. */
enum { IOU_DAG_WAITING, IOU_DAG_QUEUED, IOU_DAG_INFLIGHT, IOU_DAG_DONE };
__u8 iou_dag_state[IOU_DAG_MAX_NODES];
__u8 iou_dag_blocked[IOU_DAG_MAX_NODES];	/* an in-edge was unsatisfied */
__u16 iou_dag_pending[IOU_DAG_MAX_NODES];	/* in-edges not yet resolved */
__u32 iou_dag_ready[IOU_DAG_MAX_NODES];	/* FIFO of nodes that may start */
__u32 iou_dag_ready_head, iou_dag_ready_tail;
__u32 iou_dag_cancel[IOU_DAG_MAX_NODES];	/* FIFO of nodes to cancel */
__u32 iou_dag_cancel_head, iou_dag_cancel_tail;
__u32 iou_dag_inflight, iou_dag_seen_generation;
/* requests of earlier runs still in flight; those not yet sent a cancel */
__u32 iou_dag_stale, iou_dag_stale_cursor;
__u32 iou_dag_stale_gen[IOU_DAG_MAX_NODES];
__u8 iou_dag_stale_cancel[IOU_DAG_MAX_NODES];

/* What the last run left in flight becomes stale: cancelled, then awaited. */
__noinline int iou_dag_forget_inflight(void)
{
	__u32 i;

	bpf_for(i, 0, IOU_DAG_MAX_NODES) {
		__u32 k = i & IOU_DAG_NODE_MASK;

		if (iou_dag_state[k] == IOU_DAG_INFLIGHT) {
			iou_dag_stale_gen[k] = iou_dag_seen_generation;
			iou_dag_stale_cancel[k] = 1;
			iou_dag_stale++;
		}
		iou_dag_state[k] = IOU_DAG_WAITING;
	}
	iou_dag_stale_cursor = 0;
	return 0;
}

/* The next cancel of a stale request into sqe: 1, or 0 if none is left. */
__noinline int iou_dag_cancel_stale(struct io_uring_sqe *sqe)
{
	__u32 i;

	if (!sqe)
		return 0;
	bpf_for(i, 0, IOU_DAG_MAX_NODES) {
		__u32 k = iou_dag_stale_cursor & IOU_DAG_NODE_MASK;

		if (iou_dag_stale_cursor >= IOU_DAG_MAX_NODES)
			return 0;
		iou_dag_stale_cursor++;
		if (!iou_dag_stale_cancel[k])
			continue;
		iou_dag_stale_cancel[k] = 0;
		iou_prep_rw(sqe, IORING_OP_ASYNC_CANCEL, -1,
			    IOU_DAG_UD(iou_dag_stale_gen[k], k), 0, 0, IOU_DAG_UD_INTERNAL);
		return 1;
	}
	return 0;
}

/* An SQE the kernel did not take: its node is not in flight after all. */
__noinline int iou_dag_unsubmitted(struct io_uring_sqe *sqe)
{
	__u32 k;

	if (!sqe || (sqe->user_data & IOU_DAG_UD_INTERNAL))
		return 0;
	k = sqe->user_data & IOU_DAG_NODE_MASK;
	if (iou_dag_state[k] == IOU_DAG_INFLIGHT) {
		iou_dag_state[k] = IOU_DAG_QUEUED;
		iou_dag_inflight--;
	}
	return 0;
}

/* A node ended with res: record it, then resolve its out-edges. */
__noinline int iou_dag_finish(__u32 idx, int res)
{
	__u32 k = idx & IOU_DAG_NODE_MASK, first, nr, e;
	bool failed = res < 0;

	iou_dag_res[k] = res;
	iou_dag_state[k] = IOU_DAG_DONE;
	iou_dag_order[iou_dag_nr_done & IOU_DAG_NODE_MASK] = k;
	iou_dag_nr_done++;

	first = iou_dag_nodes[k].first_out;
	nr = iou_dag_nodes[k].nr_out;
	bpf_for(e, 0, nr) {
		struct iou_dag_edge *edge = &iou_dag_edges[(first + e) & IOU_DAG_EDGE_MASK];
		__u32 child = edge->child & IOU_DAG_NODE_MASK;
		bool ok = edge->cond == IOU_DAG_ALWAYS ||
			  (edge->cond == IOU_DAG_ON_SUCCESS && !failed) ||
			  (edge->cond == IOU_DAG_ON_FAILURE && failed);

		if (!ok)
			iou_dag_blocked[child] = 1;
		if (iou_dag_pending[child] && --iou_dag_pending[child] == 0) {
			if (iou_dag_blocked[child]) {
				iou_dag_cancel[iou_dag_cancel_tail & IOU_DAG_NODE_MASK] = child;
				iou_dag_cancel_tail++;
			} else {
				iou_dag_ready[iou_dag_ready_tail & IOU_DAG_NODE_MASK] = child;
				iou_dag_ready_tail++;
				iou_dag_state[child] = IOU_DAG_QUEUED;
			}
		}
	}
	return 0;
}

/* Cancel every node the cancel FIFO holds, and whatever that blocks. */
__noinline int iou_dag_run_cancels(void)
{
	__u32 i;

	bpf_for(i, 0, IOU_DAG_MAX_NODES) {
		__u32 idx;

		if (iou_dag_cancel_head == iou_dag_cancel_tail)
			break;
		idx = iou_dag_cancel[iou_dag_cancel_head & IOU_DAG_NODE_MASK];
		iou_dag_cancel_head++;
		iou_dag_finish(idx, IOU_DAG_RES_CANCELLED);
	}
	return 0;
}

/* A new run: every node waits for its in-edges; roots are ready. */
__noinline int iou_dag_reset(void)
{
	__u32 i;

	iou_dag_forget_inflight();
	iou_dag_ready_head = iou_dag_ready_tail = 0;
	iou_dag_cancel_head = iou_dag_cancel_tail = 0;
	iou_dag_inflight = iou_dag_peak_inflight = iou_dag_nr_done = 0;
	iou_dag_seen_generation = iou_dag_generation;
	if (iou_dag_nr_nodes > IOU_DAG_MAX_NODES || !iou_dag_max_inflight)
		return -EINVAL;
	bpf_for(i, 0, iou_dag_nr_nodes) {
		__u32 k = i & IOU_DAG_NODE_MASK;

		iou_dag_res[k] = 0;
		iou_dag_blocked[k] = 0;
		iou_dag_pending[k] = iou_dag_nodes[k].nr_in;
		iou_dag_state[k] = IOU_DAG_WAITING;
		if (!iou_dag_nodes[k].nr_in) {
			iou_dag_ready[iou_dag_ready_tail & IOU_DAG_NODE_MASK] = k;
			iou_dag_ready_tail++;
			iou_dag_state[k] = IOU_DAG_QUEUED;
		}
	}
	return 0;
}

/* A CQE: 0 or -errno. Own cancels' and earlier runs' CQEs are ignored. */
__noinline int iou_dag_complete(__u64 user_data, int res)
{
	__u32 node = user_data & IOU_DAG_UD_NODE_MASK, k = node & IOU_DAG_NODE_MASK;

	if (user_data & IOU_DAG_UD_INTERNAL)
		return 0;
	if ((__u32)(user_data >> 32) != iou_dag_seen_generation) {
		if (iou_dag_stale)
			iou_dag_stale--;
		return 0;
	}
	if (node >= iou_dag_nr_nodes || iou_dag_state[k] != IOU_DAG_INFLIGHT)
		return -ENOENT;
	iou_dag_inflight--;
	iou_dag_finish(k, res);
	return iou_dag_run_cancels();
}

/* Start the next ready node into sqe: 1 if one started, 0 if none may. */
__noinline int iou_dag_start_one(struct io_uring_sqe *sqe)
{
	struct iou_dag_node *node;
	__u32 k;

	if (!sqe || iou_dag_ready_head == iou_dag_ready_tail ||
	    iou_dag_inflight >= iou_dag_max_inflight)
		return 0;
	k = iou_dag_ready[iou_dag_ready_head & IOU_DAG_NODE_MASK] & IOU_DAG_NODE_MASK;
	iou_dag_ready_head++;
	node = &iou_dag_nodes[k];

	iou_prep_rw(sqe, node->opcode, node->fd, node->addr, node->len, node->off,
		    IOU_DAG_UD(iou_dag_seen_generation, k));
	sqe->rw_flags = node->op_flags;
	iou_dag_state[k] = IOU_DAG_INFLIGHT;
	if (++iou_dag_inflight > iou_dag_peak_inflight)
		iou_dag_peak_inflight = iou_dag_inflight;
	return 1;
}

static __always_inline int iou_dag_step(struct iou_ctx *ring,
					struct iou_loop_params *lp)
{
	struct iou_ring r;
	__u32 head, ready, i, n = 0;
	int ret;

	if (iou_dag_seen_generation != iou_dag_generation) {
		iou_exit_status = IOU_DAG_RUNNING;
		ret = iou_dag_reset();
		if (ret)
			goto fail;
	}
	if (!iou_ring_open(&r, ring)) {
		ret = -EFAULT;
		goto fail;
	}

	head = iou_cq_head(&r);
	ready = iou_cq_tail(&r) - head;
	bpf_for(i, 0, ready) {
		struct io_uring_cqe *cqe = iou_cqe_at(&r, head + i);

		ret = iou_dag_complete(cqe->user_data, cqe->res);
		if (ret) {
			iou_cq_advance(&r, i + 1);	/* seen: not again */
			goto fail;
		}
	}
	iou_cq_advance(&r, ready);
	/* requests of an earlier run still in flight: cancel, wait for them */
	if (iou_dag_stale) {
		bpf_for(i, 0, iou_geom.sq_entries) {
			int c = iou_dag_cancel_stale(iou_sqe_at(&r, n));

			barrier_var(c);
			if (c <= 0)
				break;
			n += c;
		}
		if (n) {
			ret = bpf_io_uring_submit_sqes(ring, n);
			if (ret != (int)n) {
				ret = ret < 0 ? ret : -EAGAIN;
				goto fail;
			}
		}
		iou_wait_cqes(&r, lp, 1);
		return IOU_LOOP_CONTINUE;
	}
	if (iou_dag_nr_done >= iou_dag_nr_nodes) {
		iou_exit_status = 0;
		return IOU_LOOP_STOP;
	}

	/*
	 * n grows by what the global function returned, hidden from LLVM
	 * (which would fold it to n++) so the verifier does not know it
	 * either: with an exact n every iteration would be a new state.
	 */
	bpf_for(i, 0, iou_geom.sq_entries) {
		int started = iou_dag_start_one(iou_sqe_at(&r, n));

		barrier_var(started);
		if (started <= 0)
			break;
		n += started;
	}
	if (n) {
		ret = bpf_io_uring_submit_sqes(ring, n);
		if (ret != (int)n) {
			/* the nodes of SQEs not taken are not in flight */
			bpf_for(i, ret < 0 ? 0 : ret, n)
				iou_dag_unsubmitted(iou_sqe_at(&r, i));
			ret = ret < 0 ? ret : -EAGAIN;
			goto fail;
		}
	} else if (!iou_dag_inflight) {
		/* nothing running, nothing startable, not done: a bad graph */
		ret = -EDEADLK;
		goto fail;
	}
	iou_wait_cqes(&r, lp, 1);
	return IOU_LOOP_CONTINUE;
fail:
	iou_exit_status = ret;
	return IOU_LOOP_STOP;
}

#endif
