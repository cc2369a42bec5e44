// SPDX-License-Identifier: GPL-2.0
/*
 * loop_step programs for the waitloop/ selftests; each has its own
 * struct_ops map, and a test attaches only the one it needs.
 */
#include <iouring_bpf/ring.bpf.h>

char LICENSE[] SEC("license") = "GPL";

/* Set when a program finds something it cannot go on with. */
int exit_error;
int exit_line;

#define FAIL(err)					\
	({						\
		exit_error = (err);			\
		exit_line = __LINE__;			\
		IOU_LOOP_STOP;				\
	})

/* --- stop_now: one step per io_uring_enter() */
__u64 stop_runs;

IOURING_BPF_STEP(stop_now)
{
	stop_runs++;
	return IOU_LOOP_STOP;
}
IOURING_BPF_OPS(stop_ops, stop_now);
IOURING_BPF_OPS(stop_ops2, stop_now);

/* --- copy: read -> write chains, copy_slots blocks in flight */
#define COPY_MAX_SLOTS 8
const volatile int copy_src_fd = -1, copy_dst_fd = -1;
const volatile __u64 copy_size, copy_buf;	/* copy_buf: slots * block bytes */
const volatile __u32 copy_block = 65536, copy_slots = 4;
__u64 copy_next_off, copy_done_bytes, copy_reads, copy_writes;

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

	if (!iou_ring_open(&r, ring))
		return FAIL(-EFAULT);

	head = iou_cq_head(&r);
	ready = iou_cq_tail(&r) - head;
	bpf_for(i, 0, ready) {
		struct io_uring_cqe *cqe = iou_cqe_at(&r, head + i);

		ret = copy_complete(cqe->user_data, cqe->res);
		if (ret)
			return FAIL(ret);
	}
	iou_cq_advance(&r, ready);
	if (copy_done_bytes >= copy_size)
		return IOU_LOOP_STOP;

	bpf_for(i, 0, copy_slots)
		n += copy_prep(iou_sqe_at(&r, n), i);
	if (n) {
		ret = bpf_io_uring_submit_sqes(ring, n);
		if (ret != (int)n)
			return FAIL(ret < 0 ? ret : -EAGAIN);
	}
	iou_wait_cqes(&r, lp, 1);
	return IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(copy_ops, copy);

/* --- sleeper: waits for a CQE that never comes */
enum { SLEEP_FOREVER, SLEEP_TIMEOUT_REL, SLEEP_TIMEOUT_ABS };
const volatile __u32 sleep_mode;
const volatile __u64 sleep_timeout_ns = 20 * 1000 * 1000;
__u64 sleep_steps, sleep_timed_out, sleep_first_step_seen;

IOURING_BPF_STEP(sleeper)
{
	struct iou_ring r;

	sleep_steps++;
	if (lp->step == 0)
		sleep_first_step_seen++;
	if (lp->flags & IOU_LOOP_WAIT_TIMED_OUT) {
		sleep_timed_out++;
		return IOU_LOOP_STOP;
	}
	if (!iou_ring_open(&r, ring))
		return FAIL(-EFAULT);
	iou_wait_cqes(&r, lp, 1);
	if (sleep_mode == SLEEP_TIMEOUT_REL) {
		lp->flags = IOU_LOOP_TIMEOUT;
		lp->timeout_ns = sleep_timeout_ns;
	} else if (sleep_mode == SLEEP_TIMEOUT_ABS) {
		lp->flags = IOU_LOOP_TIMEOUT | IOU_LOOP_TIMEOUT_ABS;
		lp->timeout_ns = bpf_ktime_get_ns() + sleep_timeout_ns;
	}
	return IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(sleeper_ops, sleeper);

/* --- overflow: post more CQEs than the CQ holds, then collect all */
const volatile __u32 ovf_total = 16;
__u64 ovf_submitted, ovf_completed, ovf_bad_cqes, ovf_max_ready;

IOURING_BPF_STEP(overflow)
{
	struct iou_ring r;
	__u32 head, ready, want, i;
	int ret;

	if (!iou_ring_open(&r, ring))
		return FAIL(-EFAULT);

	if (ovf_submitted < ovf_total) {
		/* don't consume anything until every NOP is submitted */
		want = ovf_total - ovf_submitted;
		if (want > iou_geom.sq_entries)
			want = iou_geom.sq_entries;
		bpf_for(i, 0, want)
			iou_prep_nop(iou_sqe_at(&r, i), ovf_submitted + i);
		ret = bpf_io_uring_submit_sqes(ring, want);
		if (ret <= 0)
			return FAIL(ret ? ret : -EAGAIN);
		ovf_submitted += ret;
		lp->cq_wait_idx = 0;	/* no wait */
		return IOU_LOOP_CONTINUE;
	}

	head = iou_cq_head(&r);
	ready = iou_cq_tail(&r) - head;
	if (ready > ovf_max_ready)
		ovf_max_ready = ready;
	bpf_for(i, 0, ready) {
		struct io_uring_cqe *cqe = iou_cqe_at(&r, head + i);

		if (cqe->res != 0 || cqe->user_data != ovf_completed)
			ovf_bad_cqes++;
		ovf_completed++;
	}
	iou_cq_advance(&r, ready);
	if (ovf_completed >= ovf_total)
		return IOU_LOOP_STOP;
	iou_wait_cqes(&r, lp, 1);
	return IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(overflow_ops, overflow);

/* --- param: reads its input from and writes its result to IOU_REGION_MEM */
struct param_area {
	__u64 in;
	__u64 out;
};

IOURING_BPF_STEP(param)
{
	struct param_area *p;

	p = (void *)bpf_io_uring_get_region(ring, IOU_REGION_MEM, sizeof(*p));
	if (!p)
		return FAIL(-ENOENT);
	p->out = p->in * 3 + 1;
	return IOU_LOOP_STOP;
}
IOURING_BPF_OPS(param_ops, param);
