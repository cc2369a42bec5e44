/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Ring access for loop_step policies: CQ head/tail, CQEs and SQEs found
 * through the `iou_geom` global that user space fills before load. All
 * helpers are __always_inline so region pointers stay verifier-tracked.
 *
 * SQEs: the ring must be set up with IORING_SETUP_SQ_REWIND (and
 * NO_SQARRAY): a policy writes SQEs from index 0 and submits their count.
 * They are 64 bytes, or 128 on a ring set up with IORING_SETUP_SQE128
 * (iou_geom.sqe_size; iou_sqe_at() steps by it).
 */
#ifndef IOURING_BPF_RING_BPF_H
#define IOURING_BPF_RING_BPF_H

#include "common.bpf.h"
#include "geometry.h"

#define IOU_CQE_SIZE	16

const volatile struct iouring_bpf_geometry iou_geom;

struct iou_ring {
	struct iou_ctx *ctx;
	__u8 *cq;			/* IOU_REGION_CQ */
	struct io_uring_sqe *sqes;	/* IOU_REGION_SQ */
};

/* Map the CQ and SQ regions; false if the ring or geometry does not fit. */
static __always_inline bool iou_ring_open(struct iou_ring *r,
					  struct iou_ctx *ctx)
{
	r->ctx = ctx;
	r->cq = bpf_io_uring_get_region(ctx, IOU_REGION_CQ, iou_geom.cq_region_size);
	r->sqes = (struct io_uring_sqe *)bpf_io_uring_get_region(ctx, IOU_REGION_SQ,
							iou_geom.sq_region_size);
	return r->cq && r->sqes;
}

static __always_inline __u32 iou_cq_head(const struct iou_ring *r)
{
	return *(volatile __u32 *)(r->cq + iou_geom.cq_head);
}

static __always_inline __u32 iou_cq_tail(const struct iou_ring *r)
{
	return *(volatile __u32 *)(r->cq + iou_geom.cq_tail);
}

/* CQEs posted and not yet consumed. */
static __always_inline __u32 iou_cq_ready(const struct iou_ring *r)
{
	return iou_cq_tail(r) - iou_cq_head(r);
}

/* The CQE at absolute index idx (wraps). */
static __always_inline struct io_uring_cqe *iou_cqe_at(const struct iou_ring *r,
						       __u32 idx)
{
	__u32 slot = idx & (iou_geom.cq_entries - 1);

	return (struct io_uring_cqe *)(r->cq + iou_geom.cq_cqes +
				       (__u64)slot * IOU_CQE_SIZE);
}

/* Mark n CQEs consumed; this is what lets overflowed CQEs in. */
static __always_inline void iou_cq_advance(const struct iou_ring *r, __u32 n)
{
	*(volatile __u32 *)(r->cq + iou_geom.cq_head) = iou_cq_head(r) + n;
}

/*
 * Bytes per SQE: 128 on an IORING_SETUP_SQE128 ring, else 64 (also for a
 * geometry filled without sqe_size, which is 0 there). iou_geom is
 * read-only data, so the verifier knows which at load.
 */
static __always_inline __u32 iou_sqe_size(void)
{
	return iou_geom.sqe_size == 128 ? 128 : 64;
}

/*
 * SQE number i (0-based) of the next submission. The struct covers the
 * first 64 bytes; on an SQE128 ring the next 64 are the rest of its cmd
 * area (iouring_bpf/vblk.bpf.h fills them).
 */
static __always_inline struct io_uring_sqe *iou_sqe_at(const struct iou_ring *r,
						       __u32 i)
{
	__u32 slot = i & (iou_geom.sq_entries - 1);

	return (struct io_uring_sqe *)((__u8 *)r->sqes + (__u64)slot * iou_sqe_size());
}

static __always_inline void iou_prep_rw(struct io_uring_sqe *sqe, __u8 op,
					int fd, __u64 addr, __u32 len,
					__u64 off, __u64 user_data)
{
	__builtin_memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = op;
	sqe->fd = fd;
	sqe->addr = addr;
	sqe->len = len;
	sqe->off = off;
	sqe->user_data = user_data;
}

static __always_inline void iou_prep_nop(struct io_uring_sqe *sqe, __u64 user_data)
{
	iou_prep_rw(sqe, IORING_OP_NOP, -1, 0, 0, 0, user_data);
}

static __always_inline void iou_prep_read(struct io_uring_sqe *sqe, int fd,
					  __u64 buf, __u32 len, __u64 off,
					  __u64 user_data)
{
	iou_prep_rw(sqe, IORING_OP_READ, fd, buf, len, off, user_data);
}

static __always_inline void iou_prep_write(struct io_uring_sqe *sqe, int fd,
					   __u64 buf, __u32 len, __u64 off,
					   __u64 user_data)
{
	iou_prep_rw(sqe, IORING_OP_WRITE, fd, buf, len, off, user_data);
}

/*
 * Ask the loop to sleep until at least n CQEs are ready (posted and not
 * consumed). Counting from the head, not the tail, means CQEs that arrived
 * while the step ran never leave the loop asleep.
 */
static __always_inline void iou_wait_cqes(const struct iou_ring *r,
					  struct iou_loop_params *lp, __u32 n)
{
	lp->cq_wait_idx = iou_cq_head(r) + n;
}

#endif
