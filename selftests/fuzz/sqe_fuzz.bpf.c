// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz/sqe: a loop_step program that writes random SQEs into the SQ and
 * submits them from BPF, with random batch sizes (more than the SQ holds
 * too), random waits (cq_wait_idx, timeouts, flags) and random return
 * values. Everything is drawn from a PRNG seeded per case through .bss, so
 * a case seed replays the same SQEs. Field values come from the pools user
 * space filled (sqe_fuzz.h says which field of which opcode uses which).
 */
#include <iouring_bpf/ring.bpf.h>
#include "sqe_fuzz.h"

char LICENSE[] SEC("license") = "GPL";

/* set once before load; their own section so a per-case memset of .bss
 * leaves them alone */
__u64 sqf_pool[SQF_NR_CLASSES][SQF_POOL_N] SEC(".data.sqf");
__u8 sqf_kind[SQF_NR_CLASSES] SEC(".data.sqf");
struct sqf_spec sqf_spec[256] SEC(".data.sqf");
__u64 sqf_data_base SEC(".data.sqf");
__u64 sqf_data_size SEC(".data.sqf");
/* SQEs to turn into NOPs (same flags and user_data), to minimize a case */
__u64 sqf_nop_mask[SQF_SQE_LOG / 64] SEC(".data.sqf");

/* per case */
struct sqf_state sqf;
struct io_uring_sqe sqf_sqe_log[SQF_SQE_LOG];
struct sqf_cqe sqf_cqe_log[SQF_CQE_LOG];

/* splitmix64, like fuzz.h, so both sides agree on what a seed means */
static __always_inline __u64 sqf_rnd(void)
{
	__u64 z = (sqf.rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A value from pool cls. Global (verified once), scalars in and out. */
__noinline __u64 sqf_draw(__u32 cls)
{
	__u64 r = sqf_rnd(), v, n;
	__u32 k = cls;

	if (k >= SQF_NR_CLASSES)
		return 0;
	v = sqf_pool[k][r & (SQF_POOL_N - 1)];
	switch (sqf_kind[k]) {
	case FK_NUM:
		switch ((r >> 8) & 7) {
		case 0:
			return sqf_rnd();
		case 1:
			return v + ((r >> 16) & 7) - 3;
		case 2:
			return (r >> 16) & 0xff;
		default:
			return v;
		}
	case FK_BITS:
		switch ((r >> 8) & 7) {
		case 0:
			return 0;
		case 1:
			return sqf_rnd();
		default:
			/* a few of the meaningful bits */
			return sqf_pool[k][0] & sqf_rnd() & sqf_rnd();
		}
	case FK_DATA:
		n = sqf_data_size;
		if (!n)
			return v;
		switch ((r >> 8) & 7) {
		case 0:
		case 1:
			return v;
		case 2:
			return sqf_data_base + ((r >> 16) % n & ~4095ULL);
		case 3:
			return sqf_data_base + ((r >> 16) % n & ~7ULL);
		default:
			/* anywhere, including a little past the end */
			return sqf_data_base + (r >> 16) % (n + 256);
		}
	case FK_UD:
		n = sqf.written;
		return SQF_UD_TAG | (n ? (r >> 16) % n : 0);
	default:
		return v;
	}
}

/*
 * SQE flags: each of IOSQE_* (and the undefined bit 7, rarely) on its own
 * odds, links and fixed files more often than the rest.
 */
static __always_inline __u8 sqf_sqe_flags(void)
{
	__u64 r = sqf_rnd();
	__u8 f = r & (r >> 8) & (r >> 16) & 0x7f;	/* each bit 1 in 8 */

	if (((r >> 24) & 7) == 0)
		f |= 1U << IOSQE_IO_LINK_BIT;
	if (((r >> 27) & 7) == 0)
		f |= 1U << IOSQE_FIXED_FILE_BIT;
	if (((r >> 30) & 15) == 0)
		f |= 1U << IOSQE_IO_HARDLINK_BIT;
	if (((r >> 34) & 63) == 0)
		f |= 0x80;
	return f;
}

static __always_inline __u32 sqf_opcode(void)
{
	__u64 r = sqf_rnd();

	/* now and then any byte; else the kernel's opcodes and just past */
	if ((r & 31) == 0)
		return (r >> 8) & 0xff;
	return ((r >> 8) & 0xffff) % (IORING_OP_LAST + 2);
}

/* Fill one SQE and log it. Global: verified once, whatever calls it. */
__noinline int sqf_gen(struct io_uring_sqe *sqe, __u32 idx)
{
	struct sqf_spec *sp;
	__u32 op, nbufs;
	__u8 flags;

	if (!sqe)
		return 0;
	op = sqf_opcode() & 0xff;
	sp = &sqf_spec[op];
	flags = sqf_sqe_flags();

	__builtin_memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = op;
	sqe->flags = flags;
	sqe->ioprio = sqf_draw(sp->ioprio);
	/* with IOSQE_FIXED_FILE the fd is an index into the file table */
	if (sp->fd == FZ_FD && (flags & (1U << IOSQE_FIXED_FILE_BIT)))
		sqe->fd = sqf_draw(FZ_FIXED);
	else
		sqe->fd = sqf_draw(sp->fd);
	sqe->off = sqf_draw(sp->off);
	sqe->addr = sqf_draw(sp->addr);
	sqe->len = sqf_draw(sp->len);
	sqe->rw_flags = sqf_draw(sp->opflags);
	sqe->user_data = SQF_UD_TAG | idx;
	sqe->buf_index = sqf_draw(sp->buf);
	sqe->personality = sqf_draw(FZ_PERS);
	sqe->splice_fd_in = sqf_draw(sp->fdin);
	sqe->addr3 = sqf_draw(sp->addr3);
	sqe->__pad2[0] = sqf_draw(sp->pad2);

	/*
	 * Provided buffers start at addr, one every len bytes: keep all of
	 * them within the data area and the guard above it, or later reads
	 * would land in whatever the process mapped beyond.
	 */
	if (op == IORING_OP_PROVIDE_BUFFERS) {
		nbufs = sqe->fd;
		if ((__u64)nbufs * sqe->len > (16ULL << 20))
			sqe->len &= 63;
	}
	if (idx < SQF_SQE_LOG && (sqf_nop_mask[(idx / 64) & (SQF_SQE_LOG / 64 - 1)] >> (idx % 64)) & 1) {
		__u64 ud = sqe->user_data;

		__builtin_memset(sqe, 0, sizeof(*sqe));
		sqe->opcode = IORING_OP_NOP;
		sqe->flags = flags;
		sqe->user_data = ud;
		op = IORING_OP_NOP;
	}
	if (op == IORING_OP_MSG_RING)
		sqf.msg_rings++;

	/* the mask bounds it for the verifier; the barrier keeps clang from
	 * dropping the mask as implied by the comparison */
	if (idx < SQF_SQE_LOG) {
		barrier_var(idx);
		__builtin_memcpy(&sqf_sqe_log[idx & (SQF_SQE_LOG - 1)], sqe, sizeof(*sqe));
	}
	return 0;
}

/* Take what the CQ holds (all, or now and then nothing). */
static __always_inline void sqf_reap(struct iou_ring *r)
{
	__u32 head = iou_cq_head(r), ready = iou_cq_tail(r) - head, i;

	if (ready > iou_geom.cq_entries)
		ready = iou_geom.cq_entries;
	bpf_for(i, 0, ready) {
		struct io_uring_cqe *cqe = iou_cqe_at(r, head + i);
		__u32 n = sqf.cqes;

		if (n < SQF_CQE_LOG) {
			struct sqf_cqe *c;

			barrier_var(n);
			c = &sqf_cqe_log[n & (SQF_CQE_LOG - 1)];

			c->user_data = cqe->user_data;
			c->res = cqe->res;
			c->flags = cqe->flags;
		}
		sqf.cqes = n + 1;
	}
	iou_cq_advance(r, ready);
}

/* Write and submit one batch; submit more than written now and then. */
static __always_inline void sqf_batch(struct iou_ring *r, struct iou_ctx *ring)
{
	__u64 x = sqf_rnd();
	__u32 sq = iou_geom.sq_entries, count, nr, i;
	int ret;

	switch (x & 7) {
	case 0:
		count = 0;
		break;
	case 1:
		count = sq;
		break;
	default:
		count = 1 + (x >> 8) % 32;
		break;
	}
	if (count > sq)
		count = sq;
	bpf_for(i, 0, count) {
		sqf_gen(iou_sqe_at(r, i), sqf.written);
		sqf.written++;
	}

	/* the slots past count hold earlier, equally vetted SQEs (or zeroes) */
	switch ((x >> 16) & 15) {
	case 0:
		nr = count + 1 + ((x >> 24) & 7);
		break;
	case 1:
		nr = 2 * sq;
		break;
	case 2:
		nr = ~0U;
		break;
	default:
		nr = count;
		break;
	}
	ret = bpf_io_uring_submit_sqes(ring, nr);
	sqf.submit_calls++;
	sqf.last_submit = ret;
	if (ret > 0)
		sqf.submitted += ret;
	else if (ret < 0)
		sqf.submit_errors++;
	sqf.batches++;
}

/* How the loop should wait after this step. */
static __always_inline void sqf_wait(struct iou_ring *r, struct iou_loop_params *lp)
{
	__u64 x = sqf_rnd(), t = sqf_rnd();
	__u32 flags = IOU_LOOP_TIMEOUT;
	__u64 timeout = t % 500000;		/* up to 0.5 ms */

	switch (x & 31) {
	case 0 ... 7:		/* no wait at all */
		lp->cq_wait_idx = iou_cq_tail(r);
		flags = 0;
		timeout = 0;
		break;
	case 8 ... 23:		/* a few CQEs, bounded */
		iou_wait_cqes(r, lp, 1 + ((x >> 8) & 3));
		break;
	case 24 ... 25:		/* absolute deadline, maybe already past */
		iou_wait_cqes(r, lp, 1 + ((x >> 8) & 7));
		flags |= IOU_LOOP_TIMEOUT_ABS;
		timeout = (x >> 12) & 1 ? bpf_ktime_get_ns() + timeout : (x >> 13) & 1;
		break;
	case 26 ... 27:		/* any index at all */
		lp->cq_wait_idx = x >> 32;
		break;
	case 28:		/* timeouts at and past KTIME_MAX: unbounded */
		iou_wait_cqes(r, lp, 1 + ((x >> 8) & 3));
		flags |= (x >> 12) & 1 ? IOU_LOOP_TIMEOUT_ABS : 0;
		timeout = (x >> 13) & 1 ? ~0ULL : (1ULL << 63) - 1;
		sqf.unbounded_waits++;
		break;
	case 29:		/* no timeout: only a CQE or a signal ends it */
		iou_wait_cqes(r, lp, 1 + ((x >> 8) & 3));
		flags = 0;
		timeout = t;
		sqf.unbounded_waits++;
		break;
	case 30:		/* an output flag or unknown bits as input */
		lp->cq_wait_idx = iou_cq_tail(r);
		flags = (x >> 8) & 1 ? IOU_LOOP_WAIT_TIMED_OUT : 1U << (3 + ((x >> 9) & 15));
		break;
	default:		/* a zero timeout */
		iou_wait_cqes(r, lp, 1);
		timeout = 0;
		break;
	}
	lp->flags = flags;
	lp->timeout_ns = timeout;
	sqf.last_flags = flags;
}

/* STOP, CONTINUE or a value the loop must refuse with -EINVAL. */
static __always_inline int sqf_ret(int cont)
{
	__u64 x = sqf_rnd();
	int ret = cont ? IOU_LOOP_CONTINUE : IOU_LOOP_STOP;

	if ((x & 31) == 0) {
		static const int bad[4] = { 2, -1, 0x7fffffff, -22 };

		ret = bad[(x >> 8) & 3];
		sqf.last_action = SQF_ACT_BAD_RET;
	} else if (ret == IOU_LOOP_STOP) {
		sqf.last_action = SQF_ACT_STOP;
	} else if (sqf.last_flags & ~(IOU_LOOP_TIMEOUT | IOU_LOOP_TIMEOUT_ABS)) {
		sqf.last_action = SQF_ACT_BAD_FLAGS;
	} else {
		sqf.last_action = SQF_ACT_CONTINUE;
	}
	sqf.last_ret = ret;
	return ret;
}

SEC("struct_ops.s/loop_step")
int BPF_PROG(sqf_step, struct iou_ctx *ring, struct iou_loop_params *lp)
{
	struct iou_ring r;
	__u64 x;

	sqf.step_calls++;
	sqf.last_flags = 0;
	if (!iou_ring_open(&r, ring)) {
		sqf.ring_fail = 1;
		sqf.done = 1;
		sqf.last_action = SQF_ACT_STOP;
		return IOU_LOOP_STOP;
	}
	if (!sqf.started) {
		sqf.started = 1;
		sqf.rng = sqf.seed;
		x = sqf_rnd();
		sqf.plan_batches = 1 + (x & 0xff) % 20;
		sqf.plan_steps = sqf.plan_batches + ((x >> 8) & 7);
	}
	if (sqf.done) {
		/* user space comes back for the late CQEs */
		sqf_reap(&r);
		sqf.last_action = SQF_ACT_STOP;
		return IOU_LOOP_STOP;
	}

	x = sqf_rnd();
	if (x & 3)
		sqf_reap(&r);
	if (sqf.batches < sqf.plan_batches)
		sqf_batch(&r, ring);
	sqf.steps++;
	if (sqf.steps >= sqf.plan_steps && sqf.batches >= sqf.plan_batches) {
		sqf.done = 1;
		sqf_reap(&r);
		return sqf_ret(0);
	}
	/* a STOP halfway: user space enters again and the plan goes on */
	if (((x >> 8) & 31) == 0)
		return sqf_ret(0);
	sqf_wait(&r, lp);
	return sqf_ret(1);
}

SEC(".struct_ops.link")
struct io_uring_bpf_ops sqf_ops = {
	.loop_step = (void *)sqf_step,
};
