// SPDX-License-Identifier: GPL-2.0
/*
 * loop_step programs that reproduce the loop defects a review found: a
 * program that never waits, waits with extreme timeouts, an
 * output flag handed back as input, and a program attached while another
 * one's loop slept.
 */
#include <iouring_bpf/ring.bpf.h>

char LICENSE[] SEC("license") = "GPL";

int exit_error;

/* --- spin: never waits, until user space sets spin_stop */
__u64 spin_steps;
volatile __u32 spin_stop;

IOURING_BPF_STEP(spin)
{
	spin_steps++;
	if (spin_stop)
		return IOU_LOOP_STOP;
	lp->cq_wait_idx = 0;	/* reached: no wait */
	return IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(spin_ops, spin);

/*
 * --- gp_probe: attached to a tracepoint and detached again by user space.
 * Detaching a BPF program from a perf event waits for an RCU tasks-trace
 * grace period (perf_event_detach_bpf_prog()), so the detach time measures
 * one. It never needs to run.
 */
SEC("tp/syscalls/sys_enter_getppid")
int gp_probe(void *ctx)
{
	return 0;
}

/*
 * --- far_timeout: read from a pipe that user space writes to later, with
 * a timeout so far away it must never expire first
 */
enum { FAR_REL, FAR_ABS, FAR_ABS_PAST_KTIME_MAX };
const volatile __u32 far_mode;
const volatile __s32 far_fd = -1;
const volatile __u64 far_buf;
__u64 far_start_ns, far_end_ns;
__u32 far_timed_out, far_steps, far_res_seen;
__s32 far_res;

IOURING_BPF_STEP(far_timeout)
{
	struct iou_ring r;

	if (!iou_ring_open(&r, ring)) {
		exit_error = -EFAULT;
		return IOU_LOOP_STOP;
	}
	far_steps++;
	if (far_steps == 1) {
		iou_prep_read(iou_sqe_at(&r, 0), far_fd, far_buf, 8, 0, 1);
		if (bpf_io_uring_submit_sqes(ring, 1) != 1) {
			exit_error = -EIO;
			return IOU_LOOP_STOP;
		}
		far_start_ns = bpf_ktime_get_ns();
		iou_wait_cqes(&r, lp, 1);
		lp->flags = IOU_LOOP_TIMEOUT;
		if (far_mode == FAR_REL) {
			lp->timeout_ns = ~0ULL;
		} else {
			lp->flags |= IOU_LOOP_TIMEOUT_ABS;
			/* 2^63 - 1 is KTIME_MAX: one past it and the top */
			lp->timeout_ns = far_mode == FAR_ABS ? ~0ULL : (1ULL << 63);
		}
		return IOU_LOOP_CONTINUE;
	}
	far_end_ns = bpf_ktime_get_ns();
	far_timed_out = !!(lp->flags & IOU_LOOP_WAIT_TIMED_OUT);
	if (iou_cq_ready(&r)) {
		struct io_uring_cqe *cqe = iou_cqe_at(&r, iou_cq_head(&r));

		if (cqe) {
			far_res = cqe->res;
			far_res_seen = 1;
		}
		iou_cq_advance(&r, 1);
	}
	return IOU_LOOP_STOP;
}
IOURING_BPF_OPS(far_ops, far_timeout);

/* --- echo_output: hands IOU_LOOP_WAIT_TIMED_OUT back as an input flag */
__u32 echo_steps;

IOURING_BPF_STEP(echo_output)
{
	echo_steps++;
	if (echo_steps > 1)
		return IOU_LOOP_STOP;
	lp->cq_wait_idx = 0;
	lp->flags = IOU_LOOP_WAIT_TIMED_OUT;
	return IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(echo_ops, echo_output);

/* --- first/second: the loop must never switch from one to the other */
__u64 first_steps, second_steps;

IOURING_BPF_STEP(first)
{
	first_steps++;
	lp->cq_wait_idx = 1U << 30;	/* far ahead: sleep until detached */
	return IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(first_ops, first);

IOURING_BPF_STEP(second)
{
	second_steps++;
	return IOU_LOOP_STOP;
}
IOURING_BPF_OPS(second_ops, second);

/*
 * --- flood: more NOPs than the CQ holds, waited for all at once; with the
 * overflow allocation failing some CQEs are lost for good
 */
const volatile __u32 flood_nops = 8;
volatile __u32 flood_phase;	/* user space: 1 = take what came and stop */
__u32 flood_submitted, flood_reaped;
__u64 flood_steps;

IOURING_BPF_STEP(flood)
{
	struct iou_ring r;
	__u32 i, round, n;
	int ret;

	if (!iou_ring_open(&r, ring)) {
		exit_error = -EFAULT;
		return IOU_LOOP_STOP;
	}
	flood_steps++;
	if (flood_phase) {
		flood_reaped = iou_cq_ready(&r);
		iou_cq_advance(&r, flood_reaped);
		return IOU_LOOP_STOP;
	}
	/* in batches of at most the SQ's size, none consumed */
	bpf_for(round, 0, 8) {
		if (flood_submitted >= flood_nops)
			break;
		n = 0;
		bpf_for(i, 0, iou_geom.sq_entries) {
			if (flood_submitted + n >= flood_nops)
				break;
			iou_prep_nop(iou_sqe_at(&r, i), flood_submitted + n);
			n++;
		}
		ret = bpf_io_uring_submit_sqes(ring, n);
		if (ret <= 0) {
			exit_error = ret ? ret : -EIO;
			return IOU_LOOP_STOP;
		}
		flood_submitted += ret;
	}
	/* all of them, however long it takes */
	iou_wait_cqes(&r, lp, flood_submitted);
	return IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(flood_ops, flood);

/*
 * --- overdue: a full CQ with overflow pending keeps the loop from ever
 * sleeping; the absolute deadline must still end the wait
 */
const volatile __u64 overdue_after_ns = 50 * 1000 * 1000;
__u64 overdue_start_ns, overdue_seen_ns, overdue_steps;
__u32 overdue_timed_out, overdue_submitted;

IOURING_BPF_STEP(overdue)
{
	struct iou_ring r;
	__u64 now = bpf_ktime_get_ns();
	__u32 i, round, n;
	int ret;

	if (!iou_ring_open(&r, ring)) {
		exit_error = -EFAULT;
		return IOU_LOOP_STOP;
	}
	overdue_steps++;
	if (!overdue_start_ns) {
		overdue_start_ns = now;
		/* twice the CQ's size, never consumed: overflow stays pending */
		bpf_for(round, 0, 8) {
			if (overdue_submitted >= 2 * iou_geom.cq_entries)
				break;
			n = 0;
			bpf_for(i, 0, iou_geom.sq_entries) {
				iou_prep_nop(iou_sqe_at(&r, i), overdue_submitted + n);
				n++;
			}
			ret = bpf_io_uring_submit_sqes(ring, n);
			if (ret <= 0) {
				exit_error = ret ? ret : -EIO;
				return IOU_LOOP_STOP;
			}
			overdue_submitted += ret;
		}
	} else if (lp->flags & IOU_LOOP_WAIT_TIMED_OUT) {
		overdue_timed_out = 1;
		overdue_seen_ns = now;
		return IOU_LOOP_STOP;
	} else if (now - overdue_start_ns > 3ULL * 1000 * 1000 * 1000) {
		/* the deadline went by unnoticed for seconds */
		overdue_seen_ns = now;
		return IOU_LOOP_STOP;
	}
	/* more CQEs than will ever come, by a deadline that stays put */
	iou_wait_cqes(&r, lp, 1000);
	lp->flags = IOU_LOOP_TIMEOUT | IOU_LOOP_TIMEOUT_ABS;
	lp->timeout_ns = overdue_start_ns + overdue_after_ns;
	return IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(overdue_ops, overdue);

/*
 * --- async_workers: NOPs with IOSQE_ASYNC, so io-wq creates its workers
 * from inside this (sleepable, migrate-disabled) program
 */
#define ASYNC_NOPS 4
__u32 async_submitted, async_reaped;
__s32 async_bad_res;

IOURING_BPF_STEP(async_workers)
{
	struct iou_ring r;
	__u32 i;
	int ret;

	if (!iou_ring_open(&r, ring)) {
		exit_error = -EFAULT;
		return IOU_LOOP_STOP;
	}
	if (!async_submitted) {
		bpf_for(i, 0, ASYNC_NOPS) {
			struct io_uring_sqe *sqe = iou_sqe_at(&r, i);

			iou_prep_nop(sqe, i);
			sqe->flags = 1U << IOSQE_ASYNC_BIT;
		}
		ret = bpf_io_uring_submit_sqes(ring, ASYNC_NOPS);
		if (ret != ASYNC_NOPS) {
			exit_error = ret < 0 ? ret : -EIO;
			return IOU_LOOP_STOP;
		}
		async_submitted = ret;
	}
	bpf_for(i, 0, ASYNC_NOPS) {
		struct io_uring_cqe *cqe;

		if (!iou_cq_ready(&r))
			break;
		cqe = iou_cqe_at(&r, iou_cq_head(&r));
		if (cqe && cqe->res)
			async_bad_res = cqe->res;
		iou_cq_advance(&r, 1);
		if (++async_reaped >= ASYNC_NOPS)
			return IOU_LOOP_STOP;
	}
	iou_wait_cqes(&r, lp, ASYNC_NOPS - async_reaped);
	return IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(async_ops, async_workers);

/*
 * One line per io_uring worker of process workers_tgid: its tid, its
 * migrate_disable() count and whether its cpus_ptr is its own cpus_mask
 * (not the one-CPU mask migrate_disable_switch() installs).
 */
#define PF_IO_WORKER_FLAG 0x00000010
const volatile __s32 workers_tgid;

SEC("iter/task")
int worker_state(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	__u64 own_mask, cpus_ptr;

	if (!t || t->tgid != workers_tgid || !(t->flags & PF_IO_WORKER_FLAG))
		return 0;
	own_mask = (__u64)&t->cpus_mask;
	cpus_ptr = (__u64)t->cpus_ptr;
	BPF_SEQ_PRINTF(ctx->meta->seq, "%d %u %d\n", t->pid, t->migration_disabled,
		       cpus_ptr == own_mask);
	return 0;
}
