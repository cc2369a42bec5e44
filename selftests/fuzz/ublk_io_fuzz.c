// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz/ublk-io: a ublk server that serves correctly most of the time and
 * misbehaves on purpose, while a reader/writer of ours does O_DIRECT I/O
 * on /dev/ublkbN and checks every byte it reads back.
 *
 * A case adds a device (plain copy, NEED_GET_DATA, USER_COPY, ZERO_COPY or
 * AUTO_BUF_REG with ZERO_COPY, sometimes USER_RECOVERY(_REISSUE); 1-2
 * queues of depth 1-8), forks a server process (a memfd is the backing),
 * starts the device and runs 8-48 reads, writes, flushes and discards at
 * queue depth 1-4. The server, at a per-case rate and from a per-case set,
 *   - sends commands the driver must refuse, and checks the errno: bad tag
 *     or queue id, FETCH twice, COMMIT without FETCH or while one is in
 *     flight, NEED_GET_DATA when none is due (or COMMIT when it is),
 *     bad buffer addresses for the mode, bad ublk_auto_buf_reg fields,
 *     REGISTER_IO_BUF/UNREGISTER_IO_BUF with a wrong tag, index or queue
 *     or on a request without data, data SQEs on the request's buffer in
 *     the wrong direction or too long, pread/pwrite on /dev/ublkcN in the
 *     wrong direction or place; none of them may change anything;
 *   - misbehaves in ways the driver must survive: wrong results (negative,
 *     0, short, unaligned, larger than the request), a commit without the
 *     data, requests held for a while, a buffer unregistered only after the
 *     commit, buffer addresses that fault or are short, auto registration
 *     into slots that are taken or past the table, NEED_GET_DATA with a
 *     bad address, and being killed in the middle (then, with
 *     USER_RECOVERY, a new server recovers the device).
 * The reader gets its data or an error, never wrong data (unless the server
 * lied about it), and with only refused commands nothing fails at all. At
 * the end the device is deleted: the server must end by itself (unless a
 * misbehaviour can only end with its death), every I/O must complete and
 * every trace of the device must go within the bounds, else the case fails
 * (a hang with the kernel stacks). Replaying a case seed repeats the same
 * device, workload and fault plan; which request meets which fault depends
 * on timing when queue depth > 1. Units: the server's I/O commands (FETCH,
 * COMMIT_AND_FETCH, NEED_GET_DATA, REGISTER/UNREGISTER_IO_BUF, refused ones).
 *
 * The device's request timeout is 5 s (io_timeout), so that a server that
 * died holding every tag of a queue is noticed by ublk_timeout() soon.
 *
 * Kernel bugs this fuzzer found are reproduced by default;
 * $IOURING_BPF_UBLK_FUZZ_AVOID (comma-separated names) steers around them on
 * a kernel without their fixes (patches 29 and 33):
 *   res-big-read      a READ committed with a result larger than the request
 *                     in plain copy mode hits WARN_ON_ONCE(io->res >
 *                     rq_bytes) in ublk_unmap_io(): larger results only for
 *                     WRITEs there
 *   unaligned-result  a partial result that is not a whole logical block is
 *                     taken as is: the rest of the request can be less than
 *                     a sector (nr_sectors 0 with bytes left), which a
 *                     correct server can never finish; no such results
 *   recovery-start    a USER_RECOVERY device whose server dies while
 *                     START_DEV's partition scan waits for it: the scan's
 *                     read is requeued for good and START_DEV, the quiesce
 *                     work and DEL_DEV block in D state; the server of such
 *                     a device dies only once START_DEV returned
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <linux/blkdev.h>
#include <linux/falloc.h>

#include "ublk_fuzz.h"

#define NAME		"ublk-io"
#define DEV_BYTES	(4ULL << 20)
#define MAX_Q		2
#define MAX_DEPTH	8
#define MAX_IO		(128u << 10)
#define MAX_IOS		48
#define MAX_QD		4
#define SLOT_SPARE	2		/* buffer-table slots past nrq * depth */

/* ------------------------------------------------------------------ */
/* the plan of a case                                                 */

enum mode { MODE_COPY, MODE_NGD, MODE_UC, MODE_ZC, MODE_AUTO, MODE_AUTO_FB, MODE_NR };
static const char *const mode_name[] = { "copy", "need_get_data", "user_copy", "zero_copy",
					 "auto_buf_reg", "auto_buf_reg_fallback" };

/* refused commands: the driver must answer with the errno, nothing else */
enum fault {
	P_TAG, P_QUEUE, P_BUSY, P_NGD, P_FETCH_OWNED, P_COMMIT_ADDR, P_AUTO, P_REG, P_UNREG,
	P_DIR, P_UC, P_DOUBLE_REG,
	/* misbehaviour: accepted, with consequences the kernel must survive */
	M_RES_NEG, M_RES_BIG, M_RES_SHORT, M_RES_ODD, M_RES_ZERO, M_LIE, M_HOLD, M_LATE_UNREG,
	M_BAD_ADDR, M_AUTO_IDX, M_NGD_BAD, F_NR
};
#define FIRST_MISCHIEF	M_RES_NEG
static const char *const fault_name[] = {
	"bad-tag", "bad-queue", "busy", "ngd-not-due", "fetch-owned", "commit-addr",
	"auto-fields", "register", "unregister", "direction", "user-copy", "double-register",
	"res-negative", "res-big", "res-short", "res-unaligned", "res-zero", "lie", "hold",
	"late-unregister", "bad-addr", "auto-index", "ngd-bad-addr",
};

struct plan {
	enum mode mode;
	__u64 flags;
	unsigned int nrq, depth, lbs;
	bool cache, discard, recovery, reissue;
	unsigned int rate;		/* faults per 1000 chances */
	__u32 faults;			/* enabled */
	bool mischief;			/* any misbehaviour enabled */
	unsigned int kill_at;		/* the server dies at this request (0: never) */
	bool recover;			/* ... and a new one recovers the device */
	unsigned int nios, qd;
};

static bool has(const struct plan *p, enum fault f)
{
	return p->faults & (1U << f);
}

static bool zc_mode(enum mode m)
{
	return m == MODE_ZC || m == MODE_AUTO || m == MODE_AUTO_FB;
}

static bool auto_mode(enum mode m)
{
	return m == MODE_AUTO || m == MODE_AUTO_FB;
}

static bool copy_mode(enum mode m)
{
	return m == MODE_COPY || m == MODE_NGD;
}

/* faults that make sense for the mode */
static bool fault_fits(const struct plan *p, enum fault f)
{
	switch (f) {
	case P_AUTO: case M_AUTO_IDX: return auto_mode(p->mode);
	case P_REG: case P_UNREG: case P_DIR: case P_DOUBLE_REG: return zc_mode(p->mode);
	case M_LATE_UNREG: return p->mode == MODE_ZC;
	case M_BAD_ADDR: return copy_mode(p->mode);
	case M_NGD_BAD: return p->mode == MODE_NGD;
	default: return true;
	}
}

static void make_plan(struct fuzz_rng *r, struct plan *p)
{
	unsigned int x;

	memset(p, 0, sizeof(*p));
	p->mode = (enum mode)fuzz_below(r, MODE_NR);
	p->flags = UBLK_F_CMD_IOCTL_ENCODE;
	switch (p->mode) {
	case MODE_COPY: break;
	case MODE_NGD: p->flags |= UBLK_F_NEED_GET_DATA; break;
	case MODE_UC: p->flags |= UBLK_F_USER_COPY; break;
	case MODE_ZC:
		p->flags |= UBLK_F_SUPPORT_ZERO_COPY;
		if (fuzz_chance(r, 1, 3))
			p->flags |= UBLK_F_USER_COPY;
		break;
	default:
		p->flags |= UBLK_F_SUPPORT_ZERO_COPY | UBLK_F_AUTO_BUF_REG;
		break;
	}
	p->nrq = 1 + fuzz_below(r, MAX_Q);
	p->depth = 1 + fuzz_below(r, MAX_DEPTH);
	p->lbs = fuzz_chance(r, 4, 5) ? 512 : 4096;
	p->cache = fuzz_chance(r, 1, 2);
	p->discard = fuzz_chance(r, 1, 3);
	if (fuzz_chance(r, 1, 5)) {
		p->recovery = true;
		p->flags |= UBLK_F_USER_RECOVERY;
		if (fuzz_chance(r, 1, 2)) {
			p->reissue = true;
			p->flags |= UBLK_F_USER_RECOVERY_REISSUE;
		}
	}
	/* 1 in 8 cases has no faults at all: everything must work */
	x = (unsigned int)fuzz_below(r, 8);
	p->rate = x == 0 ? 0 : x < 4 ? 60 : x < 7 ? 160 : 350;
	for (int f = 0; f < F_NR; f++)
		if (fault_fits(p, f) && fuzz_chance(r, 1, 3))
			p->faults |= 1U << f;
	/* some cases only send refused commands: nothing may fail then */
	if (fuzz_chance(r, 1, 3))
		p->faults &= (1U << FIRST_MISCHIEF) - 1;
	if (!p->rate)
		p->faults = 0;
	p->mischief = p->faults >> FIRST_MISCHIEF;
	if (fuzz_chance(r, 1, 6)) {
		p->kill_at = 1 + fuzz_below(r, 24);
		p->recover = p->recovery && fuzz_chance(r, 2, 3);
	}
	p->nios = 8 + fuzz_below(r, MAX_IOS - 7);
	p->qd = 1 + fuzz_below(r, MAX_QD);
}

/* ------------------------------------------------------------------ */
/* what the server shares with the parent                             */

struct shared {
	_Atomic uint64_t units;		/* I/O commands sent */
	_Atomic uint64_t requests;	/* requests received */
	_Atomic uint32_t lies;		/* commits whose data the server did not move */
	_Atomic uint32_t stalls;	/* misbehaviour only the server's death ends */
	_Atomic uint32_t faults, probes, bad;
	_Atomic uint32_t kills;
	_Atomic uint32_t deleting;	/* DEL_DEV sent: no more faults, results may differ */
	_Atomic uint32_t started;	/* START_DEV returned */
	char msg[512];			/* the first unexpected result */
	_Atomic size_t log_len;
	char log[192 << 10];
};

static struct shared *sh;
static bool verbose;
static bool avoid_big_read, avoid_unaligned, avoid_recovery_start;

__attribute__((format(printf, 1, 2)))
static void slog(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	size_t n, at;

	va_start(ap, fmt);
	n = (size_t)vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n >= sizeof(line))
		n = sizeof(line) - 1;
	if (verbose) {
		fputs(line, stdout);
		fflush(stdout);
	}
	at = atomic_fetch_add(&sh->log_len, n);
	if (at + n < sizeof(sh->log))
		memcpy(sh->log + at, line, n);
}

__attribute__((format(printf, 1, 2)))
static void sbad(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	slog("  !! server: %s\n", line);
	if (atomic_fetch_add(&sh->bad, 1) == 0)
		snprintf(sh->msg, sizeof(sh->msg), "%s", line);
}

/* a failure of our own step: expected once the device is being deleted */
#define soft_bad(...) do {						\
	if (atomic_load(&sh->deleting))					\
		slog("  srv (deleting): " __VA_ARGS__), slog("\n");	\
	else								\
		sbad(__VA_ARGS__);					\
} while (0)

/* ------------------------------------------------------------------ */
/* the server (a child process)                                       */

/* ACTIVE: its FETCH/COMMIT/NEED_GET_DATA is in the driver; DELIVERED: it
 * completed (a CQE not handled yet); OWNED: we are serving a request */
enum tstate { TS_IDLE, TS_ACTIVE, TS_DELIVERED, TS_OWNED, TS_DONE };
enum kind { K_FETCH = 1, K_COMMIT, K_NGD, K_PROBE, K_SYNC, K_DATA };

struct held {
	bool used;
	unsigned int q, tag;
	double when;
	bool commit;		/* commit (res) or only unregister (slot) */
	int res;
	unsigned int slot;
};

struct srv {
	const struct plan *p;
	struct fuzz_rng rng;
	int dev_id, char_fd, memfd;
	struct io_uring ring;
	const struct ublksrv_io_desc *iods[MAX_Q];
	size_t iod_size;
	enum tstate st[MAX_Q][MAX_DEPTH];
	__u16 auto_idx[MAX_Q][MAX_DEPTH];	/* where the tag's next buffer goes */
	__u8 auto_flags[MAX_Q][MAX_DEPTH];
	unsigned char *bufs;			/* per tag: MAX_IO bytes + a guard page */
	unsigned char *tmp;
	size_t stride;
	struct io_uring_cqe *deferred;
	unsigned int nr_deferred, cap_deferred;
	struct held held[MAX_Q * MAX_DEPTH * 2];
	unsigned int nbufs;
	uint32_t seq;
	bool recovering;
};

static unsigned int slot_of(const struct srv *s, unsigned int q, unsigned int tag)
{
	return q * s->p->depth + tag;
}

static unsigned char *tag_buf(const struct srv *s, unsigned int q, unsigned int tag)
{
	return s->bufs + (size_t)(q * MAX_DEPTH + tag) * s->stride;
}

static __u64 mkud(enum kind k, unsigned int q, unsigned int tag, uint32_t seq)
{
	return (__u64)k << 56 | (__u64)(q & 0xff) << 48 | (__u64)(tag & 0xffff) << 32 | seq;
}

/* a command CQE seen: the tag is no longer in the driver, whatever we do
 * with the CQE later (probes must not pick it as "in flight") */
static void harvest(struct srv *s, const struct io_uring_cqe *cqe)
{
	enum kind k = (enum kind)(cqe->user_data >> 56);
	unsigned int q = (cqe->user_data >> 48) & 0xff, tag = (cqe->user_data >> 32) & 0xffff;

	if ((k == K_FETCH || k == K_COMMIT || k == K_NGD) && q < MAX_Q && tag < MAX_DEPTH &&
	    s->st[q][tag] == TS_ACTIVE)
		s->st[q][tag] = TS_DELIVERED;
}

static void defer_cqe(struct srv *s, const struct io_uring_cqe *cqe)
{
	harvest(s, cqe);
	if (s->nr_deferred == s->cap_deferred) {
		s->cap_deferred = s->cap_deferred ? 2 * s->cap_deferred : 64;
		s->deferred = realloc(s->deferred, s->cap_deferred * sizeof(*cqe));
		if (!s->deferred)
			abort();
	}
	s->deferred[s->nr_deferred++] = *cqe;
}

static struct io_uring_sqe *get_sqe(struct srv *s)
{
	struct io_uring_sqe *sqe = ufz_get_sqe(&s->ring);

	if (!sqe) {
		sbad("SQ ring full");
		_exit(3);
	}
	return sqe;
}

static void queue_cmd(struct srv *s, __u32 op, enum kind k, unsigned int q, unsigned int tag,
		      int res, __u64 addr)
{
	struct io_uring_sqe *sqe = get_sqe(s);

	ufz_prep_io_cmd(sqe, s->char_fd, op, (__u16)q, (__u16)tag, res, addr,
			mkud(k, q, tag, ++s->seq));
	if (auto_mode(s->p->mode))
		ufz_auto_buf_reg_to_sqe(sqe);
	atomic_fetch_add(&sh->units, 1);
}

/*
 * Submit and wait up to @secs for the CQE of @ud; others are deferred.
 * False if none came (the kernel kept the command).
 */
static bool wait_for(struct srv *s, __u64 ud, double secs, int *res)
{
	double end = fuzz_now() + secs;

	io_uring_submit(&s->ring);
	for (;;) {
		struct __kernel_timespec ts = { .tv_nsec = 20 * 1000 * 1000 };
		struct io_uring_cqe *cqe;
		int ret = io_uring_submit_and_wait_timeout(&s->ring, &cqe, 1, &ts, NULL);

		if (ret < 0 && ret != -ETIME && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
			sbad("io_uring_enter: %s", strerror(-ret));
			return false;
		}
		while (io_uring_peek_cqe(&s->ring, &cqe) == 0) {
			struct io_uring_cqe c = *cqe;

			io_uring_cqe_seen(&s->ring, cqe);
			if (c.user_data == ud) {
				*res = c.res;
				return true;
			}
			defer_cqe(s, &c);
		}
		if (fuzz_now() > end)
			return false;
	}
}

/* a command that must be refused with @want (0: accepted and completed) */
static void probe(struct srv *s, const char *what, __u32 op, unsigned int q, unsigned int tag,
		  int res, __u64 addr, int want)
{
	struct io_uring_sqe *sqe = get_sqe(s);
	__u64 ud = mkud(K_PROBE, q, tag, ++s->seq);
	int got;

	ufz_prep_io_cmd(sqe, s->char_fd, op, (__u16)q, (__u16)tag, res, addr, ud);
	if (auto_mode(s->p->mode))
		ufz_auto_buf_reg_to_sqe(sqe);
	atomic_fetch_add(&sh->units, 1);
	atomic_fetch_add(&sh->probes, 1);
	if (!wait_for(s, ud, 2, &got)) {
		soft_bad("probe %s (op 0x%x q %u tag %u res %d addr 0x%llx): taken by the kernel, want %s",
			 what, op, q, tag, res, (unsigned long long)addr, ufz_err(want));
		return;
	}
	if (atomic_load(&sh->deleting) && got < 0)
		want = got;	/* the device changes under us: any refusal */
	slog("    probe %s (op 0x%x q %u tag %u addr 0x%llx): %s%s\n", what, op, q, tag,
	     (unsigned long long)addr, ufz_err(got), got == want ? "" : " UNEXPECTED");
	if (got != want)
		sbad("probe %s (op 0x%x q %u tag %u res %d addr 0x%llx): %s, want %s", what, op, q,
		     tag, res, (unsigned long long)addr, ufz_err(got), ufz_err(want));
}

/* a synchronous SQE of ours (buffer command, data), not a probe */
static int sync_sqe(struct srv *s, struct io_uring_sqe *sqe, const char *what)
{
	__u64 ud = mkud(K_SYNC, 0, 0, ++s->seq);
	int res;

	sqe->user_data = ud;
	if (!wait_for(s, ud, 10, &res)) {
		sbad("%s did not complete in 10 s", what);
		return -ETIME;
	}
	return res;
}

static int buf_cmd(struct srv *s, __u32 op, unsigned int q, unsigned int tag, __u64 index)
{
	struct io_uring_sqe *sqe = get_sqe(s);

	ufz_prep_io_cmd(sqe, s->char_fd, op, (__u16)q, (__u16)tag, 0, index, 0);
	atomic_fetch_add(&sh->units, 1);
	return sync_sqe(s, sqe, op == UBLK_U_IO_REGISTER_IO_BUF ? "REGISTER_IO_BUF" :
			"UNREGISTER_IO_BUF");
}

/* READ_FIXED/WRITE_FIXED between the memfd and the buffer at @slot */
static int rw_fixed(struct srv *s, bool to_buf, unsigned int slot, __u64 buf_off,
		    unsigned int len, __u64 off)
{
	struct io_uring_sqe *sqe = get_sqe(s);

	io_uring_prep_rw(to_buf ? IORING_OP_READ_FIXED : IORING_OP_WRITE_FIXED, sqe, s->memfd,
			 (void *)(uintptr_t)buf_off, len, off);
	sqe->buf_index = (__u16)slot;
	return sync_sqe(s, sqe, to_buf ? "READ_FIXED" : "WRITE_FIXED");
}

static off_t uc_off(unsigned int q, unsigned int tag)
{
	return UBLKSRV_IO_BUF_OFFSET + ((off_t)q << UBLK_QID_OFF) + ((off_t)tag << UBLK_TAG_OFF);
}

/* FETCH/COMMIT_AND_FETCH addr for the tag in this mode */
static __u64 fetch_addr(struct srv *s, unsigned int q, unsigned int tag, bool commit)
{
	switch (s->p->mode) {
	case MODE_COPY:
		return (__u64)(uintptr_t)tag_buf(s, q, tag);
	case MODE_NGD:
		/* the commit's buffer holds a READ's data; a FETCH needs none */
		return commit ? (__u64)(uintptr_t)tag_buf(s, q, tag) : 0;
	case MODE_AUTO:
	case MODE_AUTO_FB: {
		struct ublk_auto_buf_reg reg = {
			.index = s->auto_idx[q][tag], .flags = s->auto_flags[q][tag],
		};

		return ublk_auto_buf_reg_to_sqe_addr(&reg);
	}
	default:
		return 0;
	}
}

static bool chance(struct srv *s)
{
	return s->p->rate && fuzz_below(&s->rng, 1000) < s->p->rate &&
	       !atomic_load(&sh->deleting);
}

/* a fault the plan has, chosen at random among those that fit @allowed */
static int pick_fault(struct srv *s, __u32 allowed)
{
	__u32 set = s->p->faults & allowed;
	int n = __builtin_popcount(set), k;

	if (!n || !chance(s))
		return -1;
	k = (int)fuzz_below(&s->rng, n);
	for (int f = 0; f < F_NR; f++)
		if ((set & (1U << f)) && !k--) {
			atomic_fetch_add(&sh->faults, 1);
			return f;
		}
	return -1;
}

/* another tag whose FETCH/COMMIT is in flight */
static bool active_tag(struct srv *s, unsigned int *q, unsigned int *tag)
{
	unsigned int n = s->p->nrq * s->p->depth, start = (unsigned int)fuzz_below(&s->rng, n);

	for (unsigned int i = 0; i < n; i++) {
		unsigned int k = (start + i) % n;

		if (s->st[k / s->p->depth][k % s->p->depth] == TS_ACTIVE) {
			*q = k / s->p->depth;
			*tag = k % s->p->depth;
			return true;
		}
	}
	return false;
}

/* refused commands sent while (q, tag) holds a request (op: its op) */
static void probe_in_request(struct srv *s, int f, unsigned int q, unsigned int tag,
			     unsigned int op, unsigned int bytes, bool buf_registered,
			     unsigned int data_slot)
{
	const struct plan *p = s->p;
	unsigned int slot = slot_of(s, q, tag), oq, otag;
	bool data = op == UBLK_IO_OP_READ || op == UBLK_IO_OP_WRITE;
	static const __u32 ops[] = { UBLK_U_IO_FETCH_REQ, UBLK_U_IO_COMMIT_AND_FETCH_REQ,
				     UBLK_U_IO_NEED_GET_DATA, UBLK_U_IO_REGISTER_IO_BUF,
				     UBLK_U_IO_UNREGISTER_IO_BUF };
	__u32 any = ops[fuzz_below(&s->rng, 5)];

	switch (f) {
	case P_TAG:
		probe(s, "bad tag", any, q, fuzz_chance(&s->rng, 1, 2) ? p->depth :
		      p->depth + (unsigned int)fuzz_below(&s->rng, 0x10000 - p->depth), bytes,
		      slot, -EINVAL);
		break;
	case P_QUEUE:
		probe(s, "bad queue", any, p->nrq + (unsigned int)fuzz_below(&s->rng, 250), tag,
		      bytes, slot, -EINVAL);
		break;
	case P_BUSY:
		if (active_tag(s, &oq, &otag)) {
			__u32 o = ops[fuzz_below(&s->rng, 3)];

			probe(s, "command on a tag in flight", o, oq, otag, 0,
			      fetch_addr(s, oq, otag, true), -EBUSY);
		}
		break;
	case P_NGD:
		probe(s, "NEED_GET_DATA not due", UBLK_U_IO_NEED_GET_DATA, q, tag, 0,
		      (__u64)(uintptr_t)tag_buf(s, q, tag), -EINVAL);
		break;
	case P_FETCH_OWNED:
		probe(s, "FETCH of a tag holding a request", UBLK_U_IO_FETCH_REQ, q, tag, 0,
		      fetch_addr(s, q, tag, false), -EBUSY);
		break;
	case P_COMMIT_ADDR:
		if (p->mode == MODE_UC || p->mode == MODE_ZC)
			probe(s, "COMMIT with an address (user copy/zero copy)",
			      UBLK_U_IO_COMMIT_AND_FETCH_REQ, q, tag, (int)bytes,
			      0x1000 + fuzz_below(&s->rng, 1 << 20), -EINVAL);
		else if (copy_mode(p->mode) && (op == UBLK_IO_OP_READ || p->mode == MODE_COPY))
			probe(s, "COMMIT without a buffer", UBLK_U_IO_COMMIT_AND_FETCH_REQ, q, tag,
			      (int)bytes, 0, -EINVAL);
		break;
	case P_AUTO: {
		static const __u64 bits[] = { 1ULL << 24, 0x80ULL << 24, 1ULL << 32, 1ULL << 63,
					      2ULL << 16, 0x80ULL << 16 };

		probe(s, "COMMIT with bad ublk_auto_buf_reg", UBLK_U_IO_COMMIT_AND_FETCH_REQ, q,
		      tag, (int)bytes, fetch_addr(s, q, tag, true) |
		      bits[fuzz_below(&s->rng, 6)], -EINVAL);
		break;
	}
	case P_REG:
		switch (fuzz_below(&s->rng, 4)) {
		case 0:
			probe(s, "REGISTER past the table", UBLK_U_IO_REGISTER_IO_BUF, q, tag, 0,
			      s->nbufs + fuzz_below(&s->rng, 100), -EINVAL);
			break;
		case 1:
			probe(s, "REGISTER index > U16_MAX", UBLK_U_IO_REGISTER_IO_BUF, q, tag, 0,
			      0x10000ULL + slot + (fuzz_next(&s->rng) & 0xffff0000ULL), -EINVAL);
			break;
		case 2:
			if (buf_registered)
				probe(s, "REGISTER into a taken slot", UBLK_U_IO_REGISTER_IO_BUF, q,
				      tag, 0, data_slot, -EBUSY);
			else if (!data)
				probe(s, "REGISTER a request without data", UBLK_U_IO_REGISTER_IO_BUF,
				      q, tag, 0, slot, -EINVAL);
			break;
		default:
			if (active_tag(s, &oq, &otag))
				probe(s, "REGISTER of a tag not holding a request",
				      UBLK_U_IO_REGISTER_IO_BUF, oq, otag, 0, s->nbufs - 1, -EINVAL);
			break;
		}
		break;
	case P_UNREG:
		switch (fuzz_below(&s->rng, 3)) {
		case 0:
			if (!buf_registered && data_slot == slot)
				probe(s, "UNREGISTER an empty slot", UBLK_U_IO_UNREGISTER_IO_BUF, q,
				      tag, 0, slot, -EINVAL);
			break;
		case 1:
			probe(s, "UNREGISTER index > U16_MAX", UBLK_U_IO_UNREGISTER_IO_BUF, q, tag,
			      0, (1ULL << 32) | slot, -EINVAL);
			break;
		default: {
			/* through this tag, another tag's slot (empty or not) */
			unsigned int other = (slot + 1 + (unsigned int)fuzz_below(&s->rng,
							s->nbufs - 1)) % s->nbufs;

			if (other != slot && other != data_slot)
				probe(s, "UNREGISTER another tag's slot", UBLK_U_IO_UNREGISTER_IO_BUF,
				      q, tag, 0, other, -EINVAL);
			break;
		}
		}
		break;
	case P_DIR:
		if (buf_registered && data) {
			bool rd = op == UBLK_IO_OP_READ;
			int r;

			atomic_fetch_add(&sh->probes, 1);
			if (fuzz_chance(&s->rng, 1, 2)) {
				/* a READ's buffer is only written, a WRITE's only read */
				r = rw_fixed(s, !rd, data_slot, 0, bytes, 0);
				slog("    probe %s on a %s's buffer: %s\n", rd ? "WRITE_FIXED" :
				     "READ_FIXED", rd ? "READ" : "WRITE", ufz_err(r));
				if (r != -EFAULT)
					sbad("%s on a %s request's buffer: %s, want -EFAULT",
					     rd ? "WRITE_FIXED" : "READ_FIXED", rd ? "READ" : "WRITE",
					     ufz_err(r));
			} else {
				unsigned int extra = 1 + (unsigned int)fuzz_below(&s->rng, 8192);

				r = rw_fixed(s, rd, data_slot, fuzz_chance(&s->rng, 1, 2) ? 0 : bytes,
					     bytes + extra, 0);
				slog("    probe data SQE past the buffer's end: %s\n", ufz_err(r));
				if (r != -EFAULT)
					sbad("data SQE past a request's buffer: %s, want -EFAULT",
					     ufz_err(r));
			}
		}
		break;
	case P_UC: {
		unsigned char b[512];
		bool uc = p->flags & UBLK_F_USER_COPY;
		bool rd = op == UBLK_IO_OP_READ;
		ssize_t r;
		int want;

		atomic_fetch_add(&sh->probes, 1);
		switch (fuzz_below(&s->rng, 3)) {
		case 0:	/* the wrong direction, or no user copy at all */
			if (!data)
				break;
			r = rd ? pread(s->char_fd, b, sizeof(b), uc_off(q, tag)) :
				 pwrite(s->char_fd, b, sizeof(b), uc_off(q, tag));
			want = -EACCES;
			goto check;
		case 1:	/* past the request */
			if (!data)
				break;
			r = rd ? pwrite(s->char_fd, b, sizeof(b), uc_off(q, tag) + bytes + 512) :
				 pread(s->char_fd, b, sizeof(b), uc_off(q, tag) + bytes + 512);
			want = uc ? -EINVAL : -EACCES;
			goto check;
		default: /* a queue or tag that does not exist */
			r = pread(s->char_fd, b, sizeof(b), fuzz_chance(&s->rng, 1, 2) ?
				  uc_off(p->nrq, tag) : uc_off(q, p->depth));
			want = -EINVAL;
		check:
			if (r < 0)
				r = -errno;
			slog("    probe user copy (q %u tag %u %s): %s\n", q, tag, rd ? "READ" : "WRITE",
			     ufz_err((int)r));
			if (r != want && !(atomic_load(&sh->deleting) && r < 0))
				sbad("pread/pwrite on /dev/ublkc%d misused: %zd, want %s", s->dev_id,
				     r, ufz_err(want));
		}
		break;
	}
	case P_DOUBLE_REG:
		if (data) {
			unsigned int spare = p->nrq * p->depth;
			int r = buf_cmd(s, UBLK_U_IO_REGISTER_IO_BUF, q, tag, spare);

			atomic_fetch_add(&sh->probes, 1);
			slog("    second REGISTER of q %u tag %u at slot %u: %s\n", q, tag, spare,
			     ufz_err(r));
			if (r)
				sbad("a second REGISTER_IO_BUF of a request (free slot %u): %s", spare,
				     ufz_err(r));
			else if ((r = buf_cmd(s, UBLK_U_IO_UNREGISTER_IO_BUF, q, tag, spare)))
				sbad("UNREGISTER_IO_BUF of the second registration: %s", ufz_err(r));
		}
		break;
	default:
		break;
	}
}

static void commit(struct srv *s, unsigned int q, unsigned int tag, int res, __u64 addr)
{
	queue_cmd(s, UBLK_U_IO_COMMIT_AND_FETCH_REQ, K_COMMIT, q, tag, res, addr);
	s->st[q][tag] = TS_ACTIVE;
}

static struct held *held_slot(struct srv *s)
{
	for (size_t i = 0; i < sizeof(s->held) / sizeof(s->held[0]); i++)
		if (!s->held[i].used)
			return &s->held[i];
	return NULL;
}

/* a result that is not the request's size */
static int wrong_result(struct srv *s, int f, unsigned int bytes)
{
	static const int negs[] = { -EIO, -ENOSPC, -EINVAL, -ENODEV, -EAGAIN, -ENOMEM,
				    -EOPNOTSUPP, -1, -4095, -4096, -EREMOTEIO };

	switch (f) {
	case M_RES_NEG:
		if (fuzz_chance(&s->rng, 1, 5))
			return fuzz_chance(&s->rng, 1, 2) ? INT32_MIN :
			       -(int)(1 + fuzz_below(&s->rng, INT32_MAX));
		return negs[fuzz_below(&s->rng, sizeof(negs) / sizeof(negs[0]))];
	case M_RES_BIG:
		return fuzz_chance(&s->rng, 1, 4) ? INT32_MAX :
		       (int)(bytes + 1 + fuzz_below(&s->rng, 1 << 20));
	case M_RES_SHORT:
		/* whole logical blocks */
		return bytes > s->p->lbs ?
		       (int)(s->p->lbs * (1 + fuzz_below(&s->rng, bytes / s->p->lbs - 1))) :
		       (int)bytes;
	case M_RES_ODD:
		return (int)(1 + fuzz_below(&s->rng, bytes - 1 ? bytes - 1 : 1));
	default:
		return 0;
	}
}

static void run_late_unreg(struct srv *s, struct held *h)
{
	int r = buf_cmd(s, UBLK_U_IO_UNREGISTER_IO_BUF, h->q, h->tag, h->slot);

	h->used = false;
	slog("  srv: late UNREGISTER q %u tag %u: %s\n", h->q, h->tag, ufz_err(r));
	if (r)
		soft_bad("late UNREGISTER_IO_BUF q %u tag %u: %s", h->q, h->tag, ufz_err(r));
}

/* the slot where the tag's buffer goes when we register it ourselves */
static unsigned int own_slot(const struct srv *s, unsigned int q, unsigned int tag)
{
	/* AUTO mode: our slots may hold what auto registration put there
	 * (another tag's request, after M_AUTO_IDX): a spare one instead */
	return auto_mode(s->p->mode) ? s->p->nrq * s->p->depth + 1 : slot_of(s, q, tag);
}

/* serve a request; returns with it committed (or held) */
static void serve(struct srv *s, unsigned int q, unsigned int tag)
{
	const struct plan *p = s->p;
	const struct ublksrv_io_desc *iod = &s->iods[q][tag];
	unsigned int op = ublksrv_get_op(iod);
	unsigned int bytes = iod->nr_sectors << 9;
	__u64 off = iod->start_sector << 9;
	unsigned int slot = slot_of(s, q, tag), data_slot = own_slot(s, q, tag);
	bool data = op == UBLK_IO_OP_READ || op == UBLK_IO_OP_WRITE;
	bool rd = op == UBLK_IO_OP_READ, registered = false, lie = false;
	bool need_reg = iod->op_flags & UBLK_IO_F_NEED_REG_BUF;
	__u64 caddr;
	int res = (int)bytes, f, r = 0;
	uint64_t n = atomic_fetch_add(&sh->requests, 1) + 1;

	s->st[q][tag] = TS_OWNED;
	slog("  srv: q %u tag %u op %u sector %llu sectors %u flags 0x%x\n", q, tag, op,
	     (unsigned long long)iod->start_sector, iod->nr_sectors, iod->op_flags);
	/* the tag's previous request may still wait for its late unregister */
	for (size_t i = 0; i < sizeof(s->held) / sizeof(s->held[0]); i++)
		if (s->held[i].used && !s->held[i].commit && s->held[i].q == q &&
		    s->held[i].tag == tag)
			run_late_unreg(s, &s->held[i]);
	if (auto_mode(p->mode) && data) {
		bool fb = s->auto_flags[q][tag] & UBLK_AUTO_BUF_REG_FALLBACK;
		bool past = s->auto_idx[q][tag] >= s->nbufs;

		/* NEED_REG_BUF only when asked for; past the table it must come */
		if ((need_reg && !fb) || (!need_reg && past))
			sbad("q %u tag %u: op_flags 0x%x with auto index %u flags %u", q, tag,
			     iod->op_flags, s->auto_idx[q][tag], s->auto_flags[q][tag]);
	} else if (need_reg) {
		sbad("q %u tag %u op %u: NEED_REG_BUF without auto registration", q, tag, op);
	}
	if (p->kill_at && n >= p->kill_at && !s->recovering &&
	    !(avoid_recovery_start && p->recovery && !atomic_load(&sh->started))) {
		if (zc_mode(p->mode) && data && !auto_mode(p->mode) && fuzz_chance(&s->rng, 1, 2)) {
			r = buf_cmd(s, UBLK_U_IO_REGISTER_IO_BUF, q, tag, slot);
			slog("  srv: REGISTER before dying: %s\n", ufz_err(r));
		}
		slog("  srv: killed at request %llu (q %u tag %u)\n", (unsigned long long)n, q, tag);
		atomic_fetch_add(&sh->kills, 1);
		kill(getpid(), SIGKILL);
		pause();
	}

	/* the request's buffer: registered by the driver (auto) or by us */
	if (zc_mode(p->mode) && data) {
		if (auto_mode(p->mode) && !need_reg) {
			data_slot = s->auto_idx[q][tag];
			registered = true;
		} else {
			r = buf_cmd(s, UBLK_U_IO_REGISTER_IO_BUF, q, tag, data_slot);
			if (r) {
				soft_bad("REGISTER_IO_BUF q %u tag %u slot %u: %s", q, tag, data_slot,
					 ufz_err(r));
				res = r;
			}
			registered = !r;
		}
	}
	/* the next request of the tag is registered where it belongs, unless
	 * misbehaviour says otherwise below */
	if (p->mode == MODE_AUTO) {
		s->auto_idx[q][tag] = (__u16)slot;
		s->auto_flags[q][tag] = 0;
	}
	caddr = fetch_addr(s, q, tag, true);

	/* refused commands first: they may change nothing */
	f = pick_fault(s, (1U << FIRST_MISCHIEF) - 1);
	if (f >= 0)
		probe_in_request(s, f, q, tag, op, bytes, registered, data_slot);

	f = pick_fault(s, ~((1U << FIRST_MISCHIEF) - 1));
	if (f == M_LIE && data) {
		lie = true;
		atomic_fetch_add(&sh->lies, 1);
		slog("  srv: lie: q %u tag %u committed without its data\n", q, tag);
	}
	/* the data */
	if (data && !lie && res >= 0) {
		switch (p->mode) {
		case MODE_COPY:
		case MODE_NGD: {
			/* a WRITE's data are where the driver put them (iod->addr) */
			void *b = rd ? (void *)tag_buf(s, q, tag) : (void *)(uintptr_t)iod->addr;

			r = rd ? (int)pread(s->memfd, b, bytes, off) : (int)pwrite(s->memfd, b, bytes, off);
			if (r < 0)
				r = -errno;
			break;
		}
		case MODE_UC:
			if (rd) {
				r = (int)pread(s->memfd, s->tmp, bytes, off);
				if (r == (int)bytes)
					r = (int)pwrite(s->char_fd, s->tmp, bytes, uc_off(q, tag));
			} else {
				r = (int)pread(s->char_fd, s->tmp, bytes, uc_off(q, tag));
				if (r == (int)bytes)
					r = (int)pwrite(s->memfd, s->tmp, bytes, off);
			}
			if (r < 0)
				r = -errno;
			break;
		default:
			r = registered ? rw_fixed(s, rd, data_slot, 0, bytes, off) : res;
			break;
		}
		if (r != (int)bytes) {
			soft_bad("q %u tag %u %s of %u bytes at %llu: %s", q, tag, rd ? "READ" : "WRITE",
				 bytes, (unsigned long long)off, ufz_err(r));
			res = r < 0 ? r : -EIO;
		}
	} else if (op == UBLK_IO_OP_DISCARD || op == UBLK_IO_OP_WRITE_ZEROES) {
		if (fallocate(s->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
			      bytes))
			res = -errno;
		else
			res = 0;
	} else if (!data) {
		res = 0;	/* FLUSH: the memfd has nothing to flush */
	}

	/* misbehaviour after the data */
	if ((f == M_RES_BIG && avoid_big_read && copy_mode(p->mode) && rd) ||
	    (f == M_RES_ODD && avoid_unaligned))
		f = -1;
	if (f >= M_RES_NEG && f <= M_RES_ZERO && (data || f == M_RES_NEG)) {
		res = wrong_result(s, f, bytes);
		if (f == M_RES_ODD)	/* what the rest is, is the block layer's business */
			atomic_fetch_add(&sh->lies, 1);
		slog("  srv: q %u tag %u result %d instead of %u\n", q, tag, res, bytes);
	}
	if (registered && !(auto_mode(p->mode) && !need_reg)) {
		/* ours to unregister (zero copy, or auto's fallback) */
		if (f == M_LATE_UNREG) {
			struct held *h = held_slot(s);

			if (h) {
				/* commit first; the request ends at the unregister */
				*h = (struct held){ .used = true, .q = q, .tag = tag, .slot = data_slot,
						    .when = fuzz_now() + 0.005 *
						    (double)fuzz_below(&s->rng, 40) };
				slog("  srv: q %u tag %u unregistered after the commit\n", q, tag);
				registered = false;
			}
		}
		if (registered && (r = buf_cmd(s, UBLK_U_IO_UNREGISTER_IO_BUF, q, tag, data_slot)))
			soft_bad("UNREGISTER_IO_BUF q %u tag %u slot %u: %s", q, tag, data_slot,
				 ufz_err(r));
	}
	if (f == M_BAD_ADDR) {
		/* the copy of a READ faults (or stops short); the tag's next
		 * WRITE is copied there too: stops short, or (unmapped)
		 * is retried for good until the server dies */
		unsigned int g = avoid_unaligned ? p->lbs : 512;
		unsigned int k = g * (1 + (unsigned int)fuzz_below(&s->rng, MAX_IO / g));

		switch (fuzz_below(&s->rng, 4)) {
		case 0:
			caddr = (__u64)(uintptr_t)(tag_buf(s, q, tag) + MAX_IO);	/* guard */
			atomic_fetch_add(&sh->stalls, 1);
			break;
		case 1:
			caddr = 0xffff888000000000ULL;
			atomic_fetch_add(&sh->stalls, 1);
			break;
		default:
			/* the last k bytes before the guard page, data copied in
			 * (less than a logical block: as an unaligned result) */
			if (k % p->lbs)
				atomic_fetch_add(&sh->lies, 1);
			if (rd && bytes)
				memmove(tag_buf(s, q, tag) + MAX_IO - k, tag_buf(s, q, tag),
					k < bytes ? k : bytes);
			caddr = (__u64)(uintptr_t)(tag_buf(s, q, tag) + MAX_IO - k);
			break;
		}
		slog("  srv: q %u tag %u commit buffer 0x%llx\n", q, tag, (unsigned long long)caddr);
	}
	if (f == M_AUTO_IDX) {
		switch (fuzz_below(&s->rng, 3)) {
		case 0:
			s->auto_idx[q][tag] = 0xffff;		/* past the table */
			break;
		case 1:
			s->auto_idx[q][tag] = (__u16)s->nbufs;	/* just past it */
			break;
		default:	/* another tag's slot */
			s->auto_idx[q][tag] = (__u16)((slot + 1) % (p->nrq * p->depth));
			break;
		}
		s->auto_flags[q][tag] = fuzz_chance(&s->rng, 1, 2) ? UBLK_AUTO_BUF_REG_FALLBACK : 0;
		caddr = fetch_addr(s, q, tag, true);
		slog("  srv: q %u tag %u next auto index %u flags %u\n", q, tag, s->auto_idx[q][tag],
		     s->auto_flags[q][tag]);
	}
	if (f == M_HOLD) {
		struct held *h = held_slot(s);

		if (h) {
			*h = (struct held){ .used = true, .q = q, .tag = tag, .commit = true,
					    .res = res, .when = fuzz_now() + 0.005 *
					    (double)fuzz_below(&s->rng, 60) };
			slog("  srv: q %u tag %u held\n", q, tag);
			return;
		}
	}
	commit(s, q, tag, res, caddr);
	/* double COMMIT: in the same submission, so the tag is still in flight */
	if (f < 0 && has(p, P_BUSY) && chance(s))
		probe(s, "second COMMIT_AND_FETCH", UBLK_U_IO_COMMIT_AND_FETCH_REQ, q, tag, res, caddr,
		      -EBUSY);
}

static void run_held(struct srv *s, bool all)
{
	double now = fuzz_now();

	for (size_t i = 0; i < sizeof(s->held) / sizeof(s->held[0]); i++) {
		struct held *h = &s->held[i];

		if (!h->used || (!all && now < h->when))
			continue;
		if (h->commit) {
			h->used = false;
			commit(s, h->q, h->tag, h->res, fetch_addr(s, h->q, h->tag, true));
		} else {
			run_late_unreg(s, h);
		}
	}
}

/* NEED_GET_DATA: the WRITE wants a buffer to be copied into */
static void need_get_data(struct srv *s, unsigned int q, unsigned int tag)
{
	__u64 addr = (__u64)(uintptr_t)tag_buf(s, q, tag);
	int f = pick_fault(s, 1U << M_NGD_BAD | 1U << P_BUSY);

	s->st[q][tag] = TS_OWNED;
	if (f == P_BUSY)	/* a COMMIT instead: refused, the flag stays */
		probe(s, "COMMIT when NEED_GET_DATA is due", UBLK_U_IO_COMMIT_AND_FETCH_REQ, q, tag,
		      0, addr, -EINVAL);
	if (f == M_NGD_BAD) {
		addr = fuzz_chance(&s->rng, 1, 2) ? (__u64)(uintptr_t)(tag_buf(s, q, tag) + MAX_IO) :
		       0xffff888000000000ULL;
		slog("  srv: q %u tag %u NEED_GET_DATA with buffer 0x%llx\n", q, tag,
		     (unsigned long long)addr);
	}
	queue_cmd(s, UBLK_U_IO_NEED_GET_DATA, K_NGD, q, tag, 0, addr);
	s->st[q][tag] = TS_ACTIVE;
}

static void cmd_cqe(struct srv *s, const struct io_uring_cqe *c)
{
	enum kind k = (enum kind)(c->user_data >> 56);
	unsigned int q = (c->user_data >> 48) & 0xff, tag = (c->user_data >> 32) & 0xffff;

	if (k != K_FETCH && k != K_COMMIT && k != K_NGD && k != K_PROBE)
		return;		/* a synchronous step given up on */
	if (k == K_PROBE) {
		/* a probe the kernel kept (reported when it happened) */
		slog("  srv: late completion of a probe q %u tag %u: %s\n", q, tag, ufz_err(c->res));
		return;
	}
	if (q >= s->p->nrq || tag >= s->p->depth) {
		sbad("completion for q %u tag %u kind %d", q, tag, k);
		return;
	}
	if (c->res == UBLK_IO_RES_OK) {
		serve(s, q, tag);
	} else if (c->res == UBLK_IO_RES_NEED_GET_DATA && s->p->mode == MODE_NGD) {
		need_get_data(s, q, tag);
	} else {
		if (c->res != UBLK_IO_RES_ABORT)
			sbad("q %u tag %u: %s ended with %s", q, tag,
			     k == K_FETCH ? "FETCH" : k == K_COMMIT ? "COMMIT_AND_FETCH" :
			     "NEED_GET_DATA", ufz_err(c->res));
		s->st[q][tag] = TS_DONE;
	}
}

static bool all_ended(struct srv *s)
{
	for (unsigned int q = 0; q < s->p->nrq; q++)
		for (unsigned int t = 0; t < s->p->depth; t++)
			if (s->st[q][t] != TS_DONE)
				return false;
	return true;
}

/* before a tag's first FETCH: all of these are refused */
static void probe_before_fetch(struct srv *s, unsigned int q, unsigned int tag)
{
	const struct plan *p = s->p;
	__u64 bad_addr = 0;

	switch (fuzz_below(&s->rng, 6)) {
	case 0:
		probe(s, "COMMIT before FETCH", UBLK_U_IO_COMMIT_AND_FETCH_REQ, q, tag, 4096,
		      fetch_addr(s, q, tag, true), -EINVAL);
		break;
	case 1:
		probe(s, "REGISTER before FETCH", UBLK_U_IO_REGISTER_IO_BUF, q, tag, 0,
		      slot_of(s, q, tag), -EINVAL);
		break;
	case 2:
		probe(s, "NEED_GET_DATA before FETCH", UBLK_U_IO_NEED_GET_DATA, q, tag, 0,
		      (__u64)(uintptr_t)tag_buf(s, q, tag), -EINVAL);
		break;
	case 3:
		probe(s, "UNREGISTER before FETCH", UBLK_U_IO_UNREGISTER_IO_BUF, q, tag, 0,
		      slot_of(s, q, tag), -EINVAL);
		break;
	default:
		/* a FETCH whose address the mode refuses */
		if (auto_mode(p->mode))
			bad_addr = fetch_addr(s, q, tag, false) | (fuzz_chance(&s->rng, 1, 2) ?
								   1ULL << 24 : 4ULL << 16);
		else if (p->mode == MODE_UC || p->mode == MODE_ZC)
			bad_addr = 0x10000;
		else if (p->mode == MODE_COPY)
			bad_addr = 0;
		else
			break;	/* NEED_GET_DATA: any address is fine */
		probe(s, "FETCH with an address the mode refuses", UBLK_U_IO_FETCH_REQ, q, tag, 0,
		      bad_addr, -EINVAL);
		break;
	}
}

static int server_main(const struct plan *p, uint64_t seed, int dev_id, int memfd,
		       int ready_fd, bool recovering)
{
	struct io_uring_params prm;
	struct srv s;
	unsigned int q, t;
	int ret;
	char ok = 'F';

	memset(&s, 0, sizeof(s));
	s.p = p;
	s.rng.s = seed ^ 0x5e4e4e4eULL ^ (recovering ? 0xabcdULL : 0);
	s.dev_id = dev_id;
	s.memfd = memfd;
	s.recovering = recovering;
	s.nbufs = p->nrq * p->depth + SLOT_SPARE;
	s.stride = MAX_IO + 4096;
	s.bufs = mmap(NULL, s.stride * MAX_Q * MAX_DEPTH, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	s.tmp = aligned_alloc(4096, MAX_IO);
	if (s.bufs == MAP_FAILED || !s.tmp) {
		sbad("memory");
		return 1;
	}
	for (q = 0; q < MAX_Q; q++)
		for (t = 0; t < MAX_DEPTH; t++) {
			/* a guard page after each tag's buffer: faults stop there */
			mprotect(tag_buf(&s, q, t) + MAX_IO, 4096, PROT_NONE);
			s.auto_idx[q][t] = (__u16)(q * p->depth + t);
			if (p->mode == MODE_AUTO_FB) {
				/* kublk --auto_zc_fallback: past the table */
				s.auto_idx[q][t] = 0xffff;
				s.auto_flags[q][t] = UBLK_AUTO_BUF_REG_FALLBACK;
			}
		}
	s.char_fd = ufz_open_char(dev_id);
	if (s.char_fd < 0) {
		sbad("open /dev/ublkc%d: %s", dev_id, strerror(errno));
		return 1;
	}
	memset(&prm, 0, sizeof(prm));
	/* task work only when we wait: what is in flight is known between waits */
	prm.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
	ret = io_uring_queue_init_params(128, &s.ring, &prm);
	if (!ret && zc_mode(p->mode))
		ret = io_uring_register_buffers_sparse(&s.ring, s.nbufs);
	if (ret) {
		sbad("server ring: %s", strerror(-ret));
		return 1;
	}
	for (q = 0; q < p->nrq; q++) {
		s.iods[q] = ufz_map_iods(s.char_fd, q, p->depth, &s.iod_size);
		if (!s.iods[q]) {
			sbad("mmap descriptors of queue %u: %s", q, strerror(errno));
			return 1;
		}
	}
	/* refused before anything is fetched */
	if (chance(&s) && p->faults & ((1U << FIRST_MISCHIEF) - 1))
		probe_before_fetch(&s, (unsigned int)fuzz_below(&s.rng, p->nrq),
				   (unsigned int)fuzz_below(&s.rng, p->depth));
	if (has(p, P_TAG) && chance(&s))
		probe(&s, "FETCH of a tag past the depth", UBLK_U_IO_FETCH_REQ, 0, p->depth, 0,
		      fetch_addr(&s, 0, 0, false), -EINVAL);
	if (has(p, P_QUEUE) && chance(&s))
		probe(&s, "FETCH of a queue that does not exist", UBLK_U_IO_FETCH_REQ, p->nrq, 0, 0,
		      fetch_addr(&s, 0, 0, false), -EINVAL);
	for (q = 0; q < p->nrq; q++)
		for (t = 0; t < p->depth; t++) {
			queue_cmd(&s, UBLK_U_IO_FETCH_REQ, K_FETCH, q, t, 0, fetch_addr(&s, q, t, false));
			s.st[q][t] = TS_ACTIVE;
		}
	io_uring_submit(&s.ring);
	/* FETCH twice: the tag's first FETCH is in flight */
	if (has(p, P_BUSY) && chance(&s)) {
		q = (unsigned int)fuzz_below(&s.rng, p->nrq);
		t = (unsigned int)fuzz_below(&s.rng, p->depth);
		probe(&s, "FETCH twice", UBLK_U_IO_FETCH_REQ, q, t, 0, fetch_addr(&s, q, t, false),
		      -EBUSY);
	}
	if (write(ready_fd, &ok, 1) != 1)
		return 1;
	close(ready_fd);

	while (!all_ended(&s)) {
		struct __kernel_timespec ts = { .tv_nsec = 10 * 1000 * 1000 };
		struct io_uring_cqe *cqe;

		if (getppid() == 1)
			_exit(1);
		run_held(&s, false);
		ret = io_uring_submit_and_wait_timeout(&s.ring, &cqe, 1, &ts, NULL);
		if (ret < 0 && ret != -ETIME && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
			sbad("io_uring_enter: %s", strerror(-ret));
			return 1;
		}
		/* every CQE first, so that the tags' states are known ... */
		while (io_uring_peek_cqe(&s.ring, &cqe) == 0) {
			struct io_uring_cqe c = *cqe;

			io_uring_cqe_seen(&s.ring, cqe);
			defer_cqe(&s, &c);
		}
		/* ... then one at a time (serving may defer more) */
		while (s.nr_deferred) {
			struct io_uring_cqe c = s.deferred[0];

			memmove(s.deferred, s.deferred + 1, --s.nr_deferred * sizeof(c));
			cmd_cqe(&s, &c);
		}
	}
	run_held(&s, true);
	io_uring_submit(&s.ring);
	slog("  srv: every tag ended\n");
	io_uring_queue_exit(&s.ring);
	close(s.char_fd);
	return 0;
}

/* ------------------------------------------------------------------ */
/* the parent: the device, the reader/writer, the checks              */

static struct fuzz_run run;
static struct ufz_ctrl ctl;

struct iou {
	int op;			/* 0 read, 1 write, 2 flush, 3 discard */
	__u64 off;
	unsigned int len;
	uint32_t wid;
	int slot;		/* buffer, -1 when not in flight */
	bool done;
};

struct cs {
	struct fuzz_rng rng;
	uint64_t seed;
	struct plan p;
	int dev_id;
	int memfd, bdev;
	pid_t srv;
	int srv_status;
	bool srv_reaped, srv_ready, killed_by_us, recovered, started, failed;
	char why[512];
	struct io_uring io;
	bool io_ok;
	struct iou ios[MAX_IOS];
	unsigned int next, inflight;
	uint32_t *shadow;	/* per 512-byte sector: write id, 0 zeros, ~0 unknown */
	unsigned char *bufs;	/* MAX_QD * MAX_IO */
	unsigned int io_errors, verified;
	bool del_pending, start_pending;
	int start_res;
};

#define UD_START	0x57a57aULL
#define UD_DEL		0xde1de1ULL

#define UNKNOWN	0xffffffffu

__attribute__((format(printf, 2, 3)))
static void case_fail(struct cs *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ufz_case_vfail(&c->failed, c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
}

static uint64_t pattern(uint32_t wid, uint64_t sector, unsigned int word)
{
	uint64_t x = ((uint64_t)wid << 32 | (uint32_t)sector) * 0x9e3779b97f4a7c15ULL + word;

	return x ^ (x >> 29);
}

static void fill(unsigned char *b, uint32_t wid, __u64 off, unsigned int len)
{
	for (unsigned int s = 0; s < len / 512; s++)
		for (unsigned int w = 0; w < 64; w++) {
			uint64_t v = pattern(wid, off / 512 + s, w);

			memcpy(b + s * 512 + w * 8, &v, 8);
		}
}

/* a read's data against what was last written there */
static void verify(struct cs *c, const struct iou *io, const unsigned char *b)
{
	for (unsigned int s = 0; s < io->len / 512; s++) {
		uint64_t sector = io->off / 512 + s;
		uint32_t wid = c->shadow[sector];

		if (wid == UNKNOWN)
			continue;
		for (unsigned int w = 0; w < 64; w++) {
			uint64_t v, want = wid ? pattern(wid, sector, w) : 0;

			memcpy(&v, b + s * 512 + w * 8, 8);
			if (v != want) {
				case_fail(c, "read of %u bytes at %llu: sector %llu word %u is 0x%llx, want 0x%llx (write #%u%s)",
					  io->len, (unsigned long long)io->off,
					  (unsigned long long)sector, w, (unsigned long long)v,
					  (unsigned long long)want, wid, wid ? "" : ": zeros");
				return;
			}
		}
	}
	c->verified++;
}

static void set_shadow(struct cs *c, __u64 off, unsigned int len, uint32_t wid)
{
	for (unsigned int s = 0; s < len / 512; s++)
		c->shadow[off / 512 + s] = wid;
}

/* the errnos a failed block I/O may end with (blk_status_to_errno) */
static bool io_errno(int res)
{
	switch (-res) {
	case EIO: case ENXIO: case ENODEV: case ENOSPC: case ENOLINK: case EREMOTEIO:
	case EBADE: case ENODATA: case EILSEQ: case ETIMEDOUT: case ENOMEM: case EBUSY:
	case EAGAIN: case EINVAL: case ETIME: case EOVERFLOW: case EOPNOTSUPP:
	case ETOOMANYREFS: case ECANCELED:
		return true;
	}
	return false;
}

static const char *const io_op_name[] = { "read", "write", "flush", "discard" };

/* may an I/O fail? only if the server misbehaved or died */
static bool failure_allowed(struct cs *c)
{
	return c->p.mischief || c->p.kill_at || atomic_load(&sh->bad) || c->del_pending;
}

static void io_done(struct cs *c, struct iou *io, int res)
{
	unsigned int expect = io->op <= 1 ? io->len : 0;

	c->inflight--;
	io->done = true;
	ufz_log("  io %s %u bytes at %llu: %s\n", io_op_name[io->op], io->len,
		(unsigned long long)io->off, ufz_err(res));
	if (res == (int)expect) {
		if (io->op == 0 && !atomic_load(&sh->lies))
			verify(c, io, c->bufs + (size_t)io->slot * MAX_IO);
		else if (io->op == 1)
			set_shadow(c, io->off, io->len, io->wid);
		else if (io->op == 3)
			set_shadow(c, io->off, io->len, 0);
	} else {
		c->io_errors++;
		if (res > 0 || (res < 0 && !io_errno(res)))
			case_fail(c, "%s of %u bytes at %llu: result %d is no block I/O errno",
				  io_op_name[io->op], io->len, (unsigned long long)io->off, res);
		else if (!failure_allowed(c))
			case_fail(c, "%s of %u bytes at %llu failed (%s) though the server only sent refused commands",
				  io_op_name[io->op], io->len, (unsigned long long)io->off,
				  ufz_err(res));
		if (io->op == 1 || io->op == 3)
			set_shadow(c, io->off, io->len, UNKNOWN);
	}
	io->slot = -1;
}

static bool overlaps(struct cs *c, const struct iou *a)
{
	for (unsigned int i = 0; i < c->next; i++) {
		const struct iou *b = &c->ios[i];

		if (b->done || b == a)
			continue;
		if (a->op == 2 || b->op == 2)
			return true;	/* a flush waits for the writes before it */
		if (a->off < b->off + b->len && b->off < a->off + a->len)
			return true;
	}
	return false;
}

static bool submit_io(struct cs *c, struct iou *io)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&c->io);
	bool used[MAX_QD] = { false };
	unsigned char *b;
	int slot = -1;

	if (!sqe)
		return false;
	for (unsigned int i = 0; i < c->next; i++)
		if (!c->ios[i].done && c->ios[i].slot >= 0)
			used[c->ios[i].slot] = true;
	for (int i = 0; i < MAX_QD; i++)
		if (!used[i]) {
			slot = i;
			break;
		}
	io->slot = slot;
	b = c->bufs + (size_t)slot * MAX_IO;
	switch (io->op) {
	case 0:
		memset(b, 0xa5, io->len);
		io_uring_prep_read(sqe, c->bdev, b, io->len, io->off);
		break;
	case 1:
		fill(b, io->wid, io->off, io->len);
		io_uring_prep_write(sqe, c->bdev, b, io->len, io->off);
		break;
	case 2:
		io_uring_prep_fsync(sqe, c->bdev, 0);
		break;
	default:
		io_uring_prep_rw(IORING_OP_URING_CMD, sqe, c->bdev, NULL, 0, 0);
		sqe->cmd_op = BLOCK_URING_CMD_DISCARD;
		sqe->addr = io->off;
		sqe->addr3 = io->len;
		break;
	}
	sqe->user_data = (__u64)(io - c->ios);
	ufz_log("  io #%u %s %u bytes at %llu%s\n", (unsigned int)(io - c->ios), io_op_name[io->op],
		io->len, (unsigned long long)io->off, io->op == 1 ? " (pattern)" : "");
	c->inflight++;
	return io_uring_submit(&c->io) == 1;
}

static void reap_io(struct cs *c, double secs)
{
	struct __kernel_timespec ts = { .tv_sec = (long)secs,
					.tv_nsec = (long)((secs - (long)secs) * 1e9) };
	struct io_uring_cqe *cqe;

	if (!c->inflight)
		return;
	if (io_uring_wait_cqe_timeout(&c->io, &cqe, &ts))
		return;
	while (io_uring_peek_cqe(&c->io, &cqe) == 0) {
		__u64 i = cqe->user_data;
		int res = cqe->res;

		io_uring_cqe_seen(&c->io, cqe);
		if (i < MAX_IOS && !c->ios[i].done)
			io_done(c, &c->ios[i], res);
	}
}

static void plan_ios(struct cs *c)
{
	unsigned int maxlen = MAX_IO / c->p.lbs;

	for (unsigned int i = 0; i < c->p.nios; i++) {
		struct iou *io = &c->ios[i];
		unsigned int r = (unsigned int)fuzz_below(&c->rng, 100);

		io->op = r < 45 ? 0 : r < 90 ? 1 : r < 95 ? (c->p.cache ? 2 : 0) :
			 (c->p.discard ? 3 : 1);
		io->len = c->p.lbs * (1 + (unsigned int)fuzz_below(&c->rng, fuzz_chance(&c->rng, 3, 4) ?
								  8 : maxlen));
		io->off = c->p.lbs * fuzz_below(&c->rng, (DEV_BYTES - io->len) / c->p.lbs + 1);
		if (io->op == 2)
			io->len = 0, io->off = 0;
		io->wid = i + 1;
		io->slot = -1;
	}
}

static bool server_alive(struct cs *c)
{
	int st;

	if (c->srv_reaped || c->srv <= 0)
		return false;
	if (waitpid(c->srv, &st, WNOHANG) == c->srv) {
		c->srv_reaped = true;
		c->srv_status = st;
		ufz_log("  server %d ended: %s %d\n", c->srv, WIFSIGNALED(st) ? "signal" : "exit",
			WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		return false;
	}
	return true;
}

static pid_t fork_server(struct cs *c, bool recovering)
{
	int pfd[2];
	pid_t pid;
	char b;
	double end;

	if (pipe(pfd))
		return -1;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* nothing of the parent's I/O: a dead server must not keep
		 * the disk open */
		if (c->bdev >= 0)
			close(c->bdev);
		if (c->io_ok)
			close(c->io.ring_fd);
		_exit(server_main(&c->p, c->seed, c->dev_id, c->memfd, pfd[1], recovering));
	}
	close(pfd[1]);
	if (pid < 0) {
		close(pfd[0]);
		return -1;
	}
	c->srv = pid;
	c->srv_reaped = false;
	/* its FETCHes are in when it says so (or it died) */
	end = fuzz_now() + 20;
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	while (fuzz_now() < end) {
		ssize_t n = read(pfd[0], &b, 1);

		if (n == 1 || n == 0) {
			c->srv_ready = n == 1;
			break;
		}
		usleep(2000);
	}
	close(pfd[0]);
	return pid;
}

static int ctrl(struct cs *c, __u32 op, __u64 data0, void *buf, unsigned int len, double secs)
{
	int res = ufz_ctrl_cmd(&ctl, op, c->dev_id, data0, buf, len, secs);

	ufz_log("  ctrl op 0x%x dev %d: %s\n", op, c->dev_id, ufz_err(res));
	return res;
}

/* a new server takes the device over (USER_RECOVERY) */
static void recover(struct cs *c)
{
	double end = fuzz_now() + 20;
	int res;

	do
		res = ctrl(c, UBLK_U_CMD_START_USER_RECOVERY, 0, NULL, 0, 10);
	while (res == -EBUSY && fuzz_now() < end && !usleep(20000));
	if (res) {
		case_fail(c, "START_USER_RECOVERY after the server died: %s", ufz_err(res));
		return;
	}
	if (fork_server(c, true) < 0 || !c->srv_ready) {
		case_fail(c, "the recovering server did not start: %s", strerror(errno));
		return;
	}
	res = ctrl(c, UBLK_U_CMD_END_USER_RECOVERY, (__u64)c->srv, NULL, 0, 20);
	if (res)
		case_fail(c, "END_USER_RECOVERY with a new server: %s", ufz_err(res));
	c->recovered = true;
}

static int setup_device(struct cs *c)
{
	struct ublksrv_ctrl_dev_info info;
	struct ublk_params prm;
	int res;

	memset(&info, 0, sizeof(info));
	info.nr_hw_queues = (__u16)c->p.nrq;
	info.queue_depth = (__u16)c->p.depth;
	info.max_io_buf_bytes = MAX_IO;
	info.dev_id = (__u32)-1;
	info.flags = c->p.flags;
	c->dev_id = -1;
	res = ctrl(c, UBLK_U_CMD_ADD_DEV, 0, &info, sizeof(info), 20);
	if (res) {
		case_fail(c, "ADD_DEV: %s", ufz_err(res));
		return res;
	}
	c->dev_id = (int)info.dev_id;
	if (info.nr_hw_queues < c->p.nrq) {
		ufz_log("  (%u queues, not %u)\n", info.nr_hw_queues, c->p.nrq);
		c->p.nrq = info.nr_hw_queues;
	}
	memset(&prm, 0, sizeof(prm));
	prm.len = sizeof(prm);
	prm.types = UBLK_PARAM_TYPE_BASIC;
	prm.basic.logical_bs_shift = (__u8)__builtin_ctz(c->p.lbs);
	prm.basic.physical_bs_shift = prm.basic.logical_bs_shift;
	prm.basic.io_min_shift = prm.basic.logical_bs_shift;
	prm.basic.io_opt_shift = 12;
	prm.basic.max_sectors = MAX_IO >> 9;
	prm.basic.dev_sectors = DEV_BYTES >> 9;
	prm.basic.attrs = c->p.cache ? UBLK_ATTR_VOLATILE_CACHE : 0;
	if (c->p.discard) {
		prm.types |= UBLK_PARAM_TYPE_DISCARD;
		prm.discard.discard_granularity = c->p.lbs;
		prm.discard.max_discard_sectors = MAX_IO >> 9;
		prm.discard.max_write_zeroes_sectors = MAX_IO >> 9;
		prm.discard.max_discard_segments = 1;
	}
	res = ctrl(c, UBLK_U_CMD_SET_PARAMS, 0, &prm, sizeof(prm), 20);
	if (res)
		case_fail(c, "SET_PARAMS: %s", ufz_err(res));
	return res;
}

static void describe_plan(const struct cs *c)
{
	char faults[512] = "";
	size_t n = 0;

	for (int f = 0; f < F_NR; f++)
		if (has(&c->p, f))
			n += snprintf(faults + n, sizeof(faults) - n, " %s", fault_name[f]);
	ufz_log("  plan: mode %s flags 0x%llx queues %u depth %u lbs %u%s%s ios %u qd %u rate %u/1000 faults:%s%s\n",
		mode_name[c->p.mode], (unsigned long long)c->p.flags, c->p.nrq, c->p.depth,
		c->p.lbs, c->p.cache ? " cache" : "", c->p.discard ? " discard" : "", c->p.nios,
		c->p.qd, c->p.rate, n ? faults : " none", c->p.recovery ?
		(c->p.reissue ? " recovery+reissue" : " recovery") : "");
	if (c->p.kill_at)
		ufz_log("  plan: the server dies at request %u%s\n", c->p.kill_at,
			c->p.recover ? ", a new one recovers the device" : "");
}

/* 5 s: a server that died holding a whole queue is timed out soon */
static void set_io_timeout(struct cs *c)
{
	char path[96];
	int fd;

	snprintf(path, sizeof(path), "/sys/block/ublkb%d/queue/io_timeout", c->dev_id);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "5000", 4) != 4)
		ufz_log("  %s: %s\n", path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* the completions of START_DEV and DEL_DEV, which run while we go on */
static void poll_ctl(struct cs *c)
{
	struct io_uring_cqe *cqe;

	while (!io_uring_peek_cqe(&ctl.ring, &cqe)) {
		if (cqe->user_data == UD_START && c->start_pending) {
			c->start_pending = false;
			c->start_res = cqe->res;
			ufz_log("  START_DEV: %s\n", ufz_err(cqe->res));
		} else if (cqe->user_data == UD_DEL && c->del_pending) {
			c->del_pending = false;
			ufz_log("  DEL_DEV: %s\n", ufz_err(cqe->res));
			if (cqe->res)
				case_fail(c, "DEL_DEV: %s", ufz_err(cqe->res));
		}
		io_uring_cqe_seen(&ctl.ring, cqe);
	}
}

static bool ctrl_submit(struct cs *c, __u32 op, __u64 data0, __u64 ud)
{
	return !ufz_ctrl_submit(&ctl, op, c->dev_id, data0, ud);
}

/* the I/O phase: bounded, whatever the server does */
static void run_ios(struct cs *c)
{
	double end = fuzz_now() + 15;
	char path[64];

	snprintf(path, sizeof(path), "/dev/ublkb%d", c->dev_id);
	c->bdev = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (c->bdev < 0) {
		if (!failure_allowed(c))
			case_fail(c, "open %s: %s", path, strerror(errno));
		else
			ufz_log("  open %s: %s\n", path, strerror(errno));
		return;
	}
	while ((c->next < c->p.nios || c->inflight) && fuzz_now() < end) {
		while (c->next < c->p.nios && c->inflight < c->p.qd &&
		       !overlaps(c, &c->ios[c->next])) {
			if (!submit_io(c, &c->ios[c->next])) {
				case_fail(c, "I/O submission failed");
				return;
			}
			c->next++;
		}
		reap_io(c, 0.05);
		if (c->p.kill_at && !server_alive(c)) {
			if (!c->p.recover || c->recovered)
				break;	/* nothing serves the rest: DEL_DEV ends it */
			recover(c);
		}
	}
	if (c->next < c->p.nios || c->inflight) {
		ufz_log("  I/O phase over: %u of %u issued, %u in flight\n", c->next, c->p.nios,
			c->inflight);
		if (!failure_allowed(c) && !atomic_load(&sh->kills))
			case_fail(c, "%u of %u I/O not done after 15 s though the server only sent refused commands",
				  c->p.nios - c->next + c->inflight, c->p.nios);
	}
}

/*
 * Delete the device while what is in flight finishes. The server must end
 * by itself (it sees every tag aborted) unless it misbehaved in a way only
 * its death ends or is dead already; every I/O must complete; every trace
 * of the device must go. Beyond 75 s it is a hang.
 */
static void cleanup(struct cs *c)
{
	double t0 = fuzz_now(), grace = t0 + 2;
	bool killed = false;
	int res;

	ufz_watchdog_arm(120, "the case's cleanup (DEL_DEV, the I/O and the server ending)");
	/* a server that works finishes what is in flight */
	while (c->inflight && fuzz_now() < grace && server_alive(c))
		reap_io(c, 0.05);
	/* the disk's last opener goes before DEL_DEV waits for the device */
	if (c->bdev >= 0) {
		close(c->bdev);
		c->bdev = -1;
	}
	if (c->dev_id >= 0) {
		__u32 op = fuzz_chance(&c->rng, 1, 2) ? UBLK_U_CMD_DEL_DEV : UBLK_U_CMD_DEL_DEV_ASYNC;

		atomic_store(&sh->deleting, 1);
		c->del_pending = true;
		ufz_log("  %s dev %d\n", op == UBLK_U_CMD_DEL_DEV ? "DEL_DEV" : "DEL_DEV_ASYNC",
			c->dev_id);
		if (!ctrl_submit(c, op, 0, UD_DEL)) {
			case_fail(c, "DEL_DEV submission failed");
			c->del_pending = false;
		}
	}
	t0 = fuzz_now();
	for (;;) {
		double el = fuzz_now() - t0;
		bool alive = server_alive(c);

		poll_ctl(c);
		reap_io(c, 0.02);
		if (!c->inflight && !c->del_pending && !c->start_pending && !alive)
			break;
		if (!c->inflight && (c->del_pending || c->start_pending)) {
			struct __kernel_timespec ts = { .tv_nsec = 10 * 1000 * 1000 };
			struct io_uring_cqe *cqe;

			io_uring_wait_cqe_timeout(&ctl.ring, &cqe, &ts);
		}
		if (el > 5 && alive && !killed) {
			ufz_log("  server still running %.0f s after DEL_DEV: SIGKILL\n", el);
			if (!c->p.mischief && !atomic_load(&sh->stalls) && !atomic_load(&sh->bad))
				case_fail(c, "the server did not see its tags aborted within 5 s of DEL_DEV");
			else if (!atomic_load(&sh->stalls))
				ufz_log("  (after misbehaviour without a stall)\n");
			kill(c->srv, SIGKILL);
			killed = true;
			c->killed_by_us = true;
		}
		if (el > 75) {
			case_fail(c, "hang: %s%s%s%u I/O in flight 75 s after DEL_DEV",
				  c->del_pending ? "DEL_DEV still running, " : "",
				  c->start_pending ? "START_DEV still running, " : "",
				  alive ? "server alive, " : "", c->inflight);
			ufz_log_dump(NAME);
			fprintf(stderr, "fuzz %s: server log:\n%.*s\n", NAME,
				(int)(atomic_load(&sh->log_len) < sizeof(sh->log) ?
				      atomic_load(&sh->log_len) : sizeof(sh->log)), sh->log);
			ufz_dump_stacks();
			fuzz_failed(&run, c->seed, "%s", c->why);
			fuzz_finish(&run);
			_exit(1);
		}
	}
	if (c->dev_id >= 0) {
		struct ublksrv_ctrl_dev_info info;
		char left[128];
		double end;

		if (ufz_dev_left(c->dev_id, 10, left, sizeof(left)))
			case_fail(c, "%s still there after DEL_DEV", left);
		end = fuzz_now() + 10;
		do
			res = ctrl(c, UBLK_U_CMD_GET_DEV_INFO, 0, &info, sizeof(info), 10);
		while (res != -ENODEV && fuzz_now() < end && !usleep(10000));
		if (res != -ENODEV)
			case_fail(c, "GET_DEV_INFO after DEL_DEV: %s, want -ENODEV", ufz_err(res));
	}
	ufz_watchdog_arm(0, "nothing");
}

static void one_case(uint64_t seed)
{
	double t0 = fuzz_now();
	struct cs c;

	memset(&c, 0, sizeof(c));
	c.rng.s = seed;
	c.seed = seed;
	c.bdev = -1;
	c.memfd = -1;
	c.dev_id = -1;
	make_plan(&c.rng, &c.p);
	memset(sh, 0, offsetof(struct shared, log));
	ufz_case_begin(&run, seed);
	describe_plan(&c);
	ufz_watchdog_arm(120, "the case's setup and I/O");
	c.shadow = calloc(DEV_BYTES / 512, sizeof(*c.shadow));
	c.bufs = aligned_alloc(4096, (size_t)MAX_QD * MAX_IO);
	c.memfd = memfd_create("ublk-io-fuzz", MFD_CLOEXEC);
	if (!c.shadow || !c.bufs || c.memfd < 0 || ftruncate(c.memfd, DEV_BYTES) ||
	    io_uring_queue_init(8, &c.io, 0)) {
		case_fail(&c, "setup: %s", strerror(errno));
		goto out;
	}
	c.io_ok = true;
	plan_ios(&c);
	if (setup_device(&c))
		goto out_del;
	if (fork_server(&c, false) < 0) {
		case_fail(&c, "fork: %s", strerror(errno));
		goto out_del;
	}
	if (!c.srv_ready) {
		/* START_DEV would wait for FETCHes that never come */
		case_fail(&c, "the server did not get its FETCHes in");
		goto out_del;
	}
	/* the server reads the partition table for it: bounded, and a
	 * server that died meanwhile leaves it to DEL_DEV */
	ufz_log("  START_DEV dev %d\n", c.dev_id);
	c.start_pending = ctrl_submit(&c, UBLK_U_CMD_START_DEV, (__u64)c.srv, UD_START);
	if (!c.start_pending) {
		case_fail(&c, "START_DEV submission failed");
		goto out_del;
	}
	for (double end = fuzz_now() + 30; c.start_pending && fuzz_now() < end;) {
		struct __kernel_timespec ts = { .tv_nsec = 10 * 1000 * 1000 };
		struct io_uring_cqe *cqe;

		io_uring_wait_cqe_timeout(&ctl.ring, &cqe, &ts);
		poll_ctl(&c);
		if (!server_alive(&c) && c.start_pending && fuzz_now() + 25 < end)
			end = fuzz_now() + 5;
	}
	if (c.start_pending) {
		if (!failure_allowed(&c) && !atomic_load(&sh->kills))
			case_fail(&c, "START_DEV still running after 30 s");
	} else if (c.start_res && !failure_allowed(&c) && !atomic_load(&sh->kills)) {
		case_fail(&c, "START_DEV: %s", ufz_err(c.start_res));
	} else if (!c.start_res) {
		c.started = true;
		atomic_store(&sh->started, 1);
		set_io_timeout(&c);
		run_ios(&c);
	}
out_del:
	cleanup(&c);
	if (c.memfd >= 0 && c.failed)
		ufz_log("  (case failed)\n");
out:
	if (!c.srv_reaped && c.srv > 0) {
		kill(c.srv, SIGKILL);
		waitpid(c.srv, NULL, 0);
	}
	if (atomic_load(&sh->bad)) {
		if (!c.failed)
			snprintf(c.why, sizeof(c.why), "server: %.480s", sh->msg);
		c.failed = true;
	}
	run.units += atomic_load(&sh->units);
	ufz_log("  case (%.2f s): %llu server commands, %llu requests, %u probes, %u faults, %u lies, %u stalls, %u I/O errors, %u reads verified\n",
		fuzz_now() - t0,
		(unsigned long long)atomic_load(&sh->units),
		(unsigned long long)atomic_load(&sh->requests), atomic_load(&sh->probes),
		atomic_load(&sh->faults), atomic_load(&sh->lies), atomic_load(&sh->stalls),
		c.io_errors, c.verified);
	if (c.failed) {
		ufz_log_dump(NAME);
		fprintf(stderr, "fuzz %s: the server's log:\n%.*s", NAME,
			(int)(atomic_load(&sh->log_len) < sizeof(sh->log) ?
			      atomic_load(&sh->log_len) : sizeof(sh->log)), sh->log);
		fuzz_failed(&run, seed, "%s", c.why);
	}
	if (c.io_ok)
		io_uring_queue_exit(&c.io);
	if (c.memfd >= 0)
		close(c.memfd);
	free(c.shadow);
	free(c.bufs);
}

int main(int argc, char **argv)
{
	static const struct ufz_issue issues[] = {
		{ "res-big-read", &avoid_big_read },
		{ "unaligned-result", &avoid_unaligned },
		{ "recovery-start", &avoid_recovery_start },
	};
	__u64 features = 0;
	uint64_t seed;
	int ret;

	ret = fuzz_init(&run, NAME, "io-commands", argc, argv);
	if (ret)
		return ret > 0 ? 0 : 2;
	ret = ufz_require_ublk(NAME);
	if (ret)
		return ret;
	verbose = run.verbose;
	ufz_log_echo = run.verbose;
	ufz_avoid(NAME, issues, sizeof(issues) / sizeof(issues[0]));
	signal(SIGPIPE, SIG_IGN);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	ret = ufz_ctrl_open(&ctl, 8, IORING_SETUP_SQE128);
	if (ret) {
		fprintf(stderr, "fuzz %s: /dev/ublk-control: %s\n", NAME, strerror(-ret));
		return 1;
	}
	ret = ufz_get_features(&ctl, &features);
	if (ret || !(features & UBLK_F_SUPPORT_ZERO_COPY) || !(features & UBLK_F_AUTO_BUF_REG)) {
		fprintf(stderr, "fuzz %s: GET_FEATURES %s features 0x%llx: no zero copy or auto buffer registration\n",
			NAME, ufz_err(ret), (unsigned long long)features);
		return 1;
	}
	ufz_watchdog_start(NAME, false);
	while (fuzz_next_case(&run, &seed))
		one_case(seed);
	ufz_ctrl_close(&ctl);
	return fuzz_finish(&run);
}
