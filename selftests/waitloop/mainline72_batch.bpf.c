// SPDX-License-Identifier: GPL-2.0
/*
 * A policy written the way mainline 7.2 has it: the ring is an opaque
 * struct iou_ctx, the types come from the kernel's vmlinux.h, and the two
 * kfuncs are declared with 7.2's prototypes. It also includes this
 * project's common header, whose declarations must agree with mainline's.
 * It must build and load unchanged.
 *
 * Each step queues `batch` NOPs at SQEs 0..batch-1 (the ring is set up with
 * IORING_SETUP_SQ_REWIND), submits them at once and sleeps until all of
 * their CQEs are there; `rounds` rounds, then STOP.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <iouring_bpf/common.bpf.h>

char LICENSE[] SEC("license") = "GPL";

int bpf_io_uring_submit_sqes(struct iou_ctx *loop_ctx, u32 nr) __ksym;
__u8 *bpf_io_uring_get_region(struct iou_ctx *loop_ctx, __u32 region_id,
			      const size_t rdwr_buf_size) __ksym;

#define MAX_BATCH 8

/* from io_uring_setup(), set by user space */
const volatile __u32 cq_head_off, cq_tail_off, cqes_off, cq_mask;
const volatile __u64 cq_size, sq_size;
const volatile __u32 batch = 4, rounds = 16;
__u32 rounds_done, cqes_seen, cqes_bad, inflight;

SEC("struct_ops.s/loop_step")
int BPF_PROG(batch_step, struct iou_ctx *loop_ctx, struct iou_loop_params *lp)
{
	__u8 *cq = bpf_io_uring_get_region(loop_ctx, IOU_REGION_CQ, cq_size);
	__u8 *sq = bpf_io_uring_get_region(loop_ctx, IOU_REGION_SQ, sq_size);
	__u32 *head, *tail, i, n = batch;

	if (!cq || !sq || n == 0 || n > MAX_BATCH ||
	    sq_size < MAX_BATCH * sizeof(struct io_uring_sqe))
		return IOU_LOOP_STOP;
	head = (__u32 *)(cq + cq_head_off);
	tail = (__u32 *)(cq + cq_tail_off);

	/* reap; a wake-up may come before the whole round is there */
	bpf_for(i, 0, MAX_BATCH) {
		struct io_uring_cqe *cqe;

		if (*head == *tail)
			break;
		cqe = (struct io_uring_cqe *)(cq + cqes_off +
					      (__u64)(*head & cq_mask) * sizeof(*cqe));
		if (cqe->res != 0 || cqe->user_data / MAX_BATCH != rounds_done ||
		    !inflight)
			cqes_bad++;
		cqes_seen++;
		inflight--;
		*head = *head + 1;
	}
	if (*head != *tail || cqes_bad)
		return IOU_LOOP_STOP;
	if (inflight) {
		lp->cq_wait_idx = *head + inflight;
		return IOU_LOOP_CONTINUE;
	}
	if (cqes_seen)
		rounds_done = cqes_seen / n;
	if (rounds_done >= rounds)
		return IOU_LOOP_STOP;

	bpf_for(i, 0, MAX_BATCH) {
		struct io_uring_sqe *sqe = (struct io_uring_sqe *)sq + i;

		if (i >= n)
			break;
		__builtin_memset(sqe, 0, sizeof(*sqe));
		sqe->opcode = IORING_OP_NOP;
		sqe->fd = -1;
		sqe->user_data = (__u64)rounds_done * MAX_BATCH + i;
	}
	if (bpf_io_uring_submit_sqes(loop_ctx, n) != (int)n)
		return IOU_LOOP_STOP;
	inflight = n;
	lp->cq_wait_idx = *head + n;
	return IOU_LOOP_CONTINUE;
}

SEC(".struct_ops.link")
struct io_uring_bpf_ops mainline72_ops = {
	.loop_step = (void *)batch_step,
};
