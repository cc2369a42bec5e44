// SPDX-License-Identifier: GPL-2.0
/*
 * copy: copy copy_size bytes from copy_src_fd to copy_dst_fd through
 * read -> write chains, copy_slots blocks of copy_block bytes in flight,
 * all inside one io_uring_enter(). Short reads are resumed, a short write
 * or any error stops with iou_exit_status set. copy_buf: user memory of
 * copy_slots * copy_block bytes. To copy again, bump copy_generation.
 * copy_slots is 1..8: liburing-bpf refuses others when set or loaded, and
 * the program stops at once with -EINVAL if it gets one anyway.
 */
#include <iouring_bpf/ring.bpf.h>

char LICENSE[] SEC("license") = "GPL";

__u32 copy_generation;
__u32 copy_seen_generation;

static __always_inline int copy_fail(int err)
{
	iou_exit_status = err;
	return IOU_LOOP_STOP;
}

#define COPY_MAX_SLOTS 8
const volatile int copy_src_fd = -1, copy_dst_fd = -1;
const volatile __u64 copy_size, copy_buf;	/* copy_buf: slots * block bytes */
const volatile __u32 copy_block = 65536, copy_slots = 4;
__u64 copy_next_off, copy_done_bytes, copy_reads, copy_writes;
/* more slots would alias slots[]; none would wait forever for nothing */
IOURING_BPF_GLOBAL_RANGE(copy_slots, 1, COPY_MAX_SLOTS);
IOURING_BPF_GLOBAL_RANGE(copy_block, 1, 1U << 30);

enum {
	SLOT_IDLE,		/* free: take the next block */
	SLOT_READING,
	SLOT_READ_DONE,		/* write of len bytes not submitted yet */
	SLOT_WRITING,
	SLOT_RESUME,		/* short read: read the rest of the block */
};
struct copy_slot {
	__u64 off;	/* file offset of the bytes in the buffer */
	__u32 want;	/* bytes of the block not yet copied */
	__u32 len;	/* bytes read, to be written */
	__u32 state;
};
static struct copy_slot slots[COPY_MAX_SLOTS];	/* BPF-private */

/*
 * The per-CQE and per-slot logic lives in global functions: the verifier
 * checks each once on its own, which keeps the loops in copy() small
 * enough to converge (inlined, the state space explodes).
 */
__noinline int copy_complete(__u64 user_data, int res)
{
	struct copy_slot *slot = &slots[user_data & (COPY_MAX_SLOTS - 1)];

	if (res < 0)
		return res;
	if (slot->state == SLOT_READING) {
		if (res == 0)	/* EOF before copy_size: the file shrank */
			return -ENODATA;
		copy_reads++;
		slot->len = res;
		slot->state = SLOT_READ_DONE;
		return 0;
	}
	if (slot->state == SLOT_WRITING) {
		if ((__u32)res != slot->len)
			return -EIO;
		copy_writes++;
		copy_done_bytes += res;
		slot->off += res;
		slot->want -= res;
		slot->state = slot->want ? SLOT_RESUME : SLOT_IDLE;
		return 0;
	}
	return -EINVAL;
}

/* Prepare slot i's next operation in sqe: 1 if there is one, else 0. */
__noinline int copy_prep(struct io_uring_sqe *sqe, __u32 i)
{
	struct copy_slot *slot = &slots[i & (COPY_MAX_SLOTS - 1)];
	__u64 buf = copy_buf + (__u64)(i & (COPY_MAX_SLOTS - 1)) * copy_block;

	if (!sqe)
		return 0;
	if (slot->state == SLOT_IDLE && copy_next_off < copy_size) {
		__u64 left = copy_size - copy_next_off;

		slot->off = copy_next_off;
		slot->want = left < copy_block ? left : copy_block;
		copy_next_off += slot->want;
		slot->state = SLOT_RESUME;
	}
	if (slot->state == SLOT_RESUME) {
		iou_prep_read(sqe, copy_src_fd, buf, slot->want, slot->off, i);
		slot->state = SLOT_READING;
		return 1;
	}
	if (slot->state == SLOT_READ_DONE) {
		iou_prep_write(sqe, copy_dst_fd, buf, slot->len, slot->off, i);
		slot->state = SLOT_WRITING;
		return 1;
	}
	return 0;
}

IOURING_BPF_STEP(copy)
{
	struct iou_ring r;
	__u32 head, ready, i, n = 0;
	int ret;

	/* a skeleton may set copy_slots without liburing-bpf's range check */
	if (copy_slots < 1 || copy_slots > COPY_MAX_SLOTS)
		return copy_fail(-EINVAL);
	if (copy_seen_generation != copy_generation) {
		/* a new copy: forget the last one */
		bpf_for(i, 0, COPY_MAX_SLOTS)
			slots[i & (COPY_MAX_SLOTS - 1)].state = SLOT_IDLE;
		copy_next_off = copy_done_bytes = copy_reads = copy_writes = 0;
		iou_exit_status = 0;
		copy_seen_generation = copy_generation;
	}
	if (!iou_ring_open(&r, ring))
		return copy_fail(-EFAULT);

	head = iou_cq_head(&r);
	ready = iou_cq_tail(&r) - head;
	bpf_for(i, 0, ready) {
		struct io_uring_cqe *cqe = iou_cqe_at(&r, head + i);

		ret = copy_complete(cqe->user_data, cqe->res);
		if (ret)
			return copy_fail(ret);
	}
	iou_cq_advance(&r, ready);
	if (copy_done_bytes >= copy_size)
		return IOU_LOOP_STOP;

	bpf_for(i, 0, copy_slots)
		n += copy_prep(iou_sqe_at(&r, n), i);
	if (n) {
		ret = bpf_io_uring_submit_sqes(ring, n);
		if (ret != (int)n)
			return copy_fail(ret < 0 ? ret : -EAGAIN);
	}
	iou_wait_cqes(&r, lp, 1);
	return IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(copy_ops, copy);
