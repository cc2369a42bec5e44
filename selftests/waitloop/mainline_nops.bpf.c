// SPDX-License-Identifier: GPL-2.0
/*
 * A policy written strictly against the mainline (Linux 7.1) interface:
 * its own copies of the mainline definitions, the two mainline kfuncs, no
 * project headers and no vmlinux.h. It must load and run unchanged.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

/* opaque: only passed on to the kfuncs */
struct io_ring_ctx {
} __attribute__((preserve_access_index));

struct iou_loop_params {
	__u32 cq_wait_idx;
} __attribute__((preserve_access_index));

struct io_uring_bpf_ops {
	int (*loop_step)(struct io_ring_ctx *ctx, struct iou_loop_params *lp);
	__u32 ring_fd;
	void *priv;
} __attribute__((preserve_access_index));

struct io_uring_sqe_min {	/* the first 32 bytes of a 64-byte SQE */
	__u8 opcode;
	__u8 flags;
	__u16 ioprio;
	__s32 fd;
	__u64 off;
	__u64 addr;
	__u32 len;
	__u32 rw_flags;
	__u64 user_data;
};

struct io_uring_cqe_min {
	__u64 user_data;
	__s32 res;
	__u32 flags;
};

enum { IOU_LOOP_CONTINUE = 0, IOU_LOOP_STOP = 1 };
enum { IOU_REGION_MEM = 0, IOU_REGION_CQ = 1, IOU_REGION_SQ = 2 };
#define OP_NOP 0

extern int bpf_io_uring_submit_sqes(struct io_ring_ctx *ctx, __u32 nr) __ksym;
extern __u8 *bpf_io_uring_get_region(struct io_ring_ctx *ctx, __u32 region_id,
				     const __u64 rdwr_buf_size) __ksym;

/* offsets and sizes from io_uring_setup(), set by user space */
const volatile __u32 cq_head_off, cq_tail_off, cqes_off, cq_mask;
const volatile __u64 cq_size, sq_size;
const volatile __u32 total = 100;
__u32 done, bad;

SEC("struct_ops.s/loop_step")
int BPF_PROG(mainline_step, struct io_ring_ctx *ring, struct iou_loop_params *lp)
{
	__u8 *cq = bpf_io_uring_get_region(ring, IOU_REGION_CQ, cq_size);
	__u8 *sq = bpf_io_uring_get_region(ring, IOU_REGION_SQ, sq_size);
	volatile __u32 *head, *tail;
	struct io_uring_sqe_min *sqe;

	if (!cq || !sq)
		return IOU_LOOP_STOP;
	head = (void *)(cq + cq_head_off);
	tail = (void *)(cq + cq_tail_off);

	if (*head != *tail) {
		struct io_uring_cqe_min *cqe;

		cqe = (void *)(cq + cqes_off + (__u64)(*head & cq_mask) * 16);
		if (cqe->res != 0 || cqe->user_data != done)
			bad++;
		done++;
		*head = *head + 1;
	}
	if (done >= total)
		return IOU_LOOP_STOP;

	/* one NOP at a time, SQ_REWIND: always SQE 0 */
	sqe = (void *)sq;
	__builtin_memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = OP_NOP;
	sqe->fd = -1;
	sqe->user_data = done;
	if (bpf_io_uring_submit_sqes(ring, 1) != 1)
		return IOU_LOOP_STOP;
	lp->cq_wait_idx = *head + 1;
	return IOU_LOOP_CONTINUE;
}

SEC(".struct_ops.link")
struct io_uring_bpf_ops mainline_ops = {
	.loop_step = (void *)mainline_step,
};
