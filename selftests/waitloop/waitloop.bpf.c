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
