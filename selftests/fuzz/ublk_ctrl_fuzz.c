// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz/ublk-ctrl: random sequences of ublk control commands on
 * /dev/ublk-control (URING_CMD in SQE128, the raw UAPI of the patched
 * kernel's <linux/ublk_cmd.h>).
 *
 * A case is a handful to ~20 commands: ADD_DEV, SET_PARAMS, GET_PARAMS,
 * START_DEV, STOP_DEV, DEL_DEV(_ASYNC), GET_DEV_INFO(2), START/END_USER_-
 * RECOVERY, GET_FEATURES, GET_QUEUE_AFFINITY, unknown and legacy command
 * numbers, a 64-byte SQE; with random device ids (mostly ours, sometimes
 * -1, huge or any), queue counts, depths and flags (known UBLK_F_* bits and
 * unknown ones), parameters of every type (valid, edge and noise values),
 * and buffers that are good, too short (next to a PROT_NONE page), NULL,
 * unmapped or kernel addresses. An eighth of the cases follow the life of a
 * device (add, set params, serve, start, kill the server, recover, delete)
 * with random commands in between, so that START_DEV, the partition scan
 * and recovery are reached too.
 *
 * START_DEV and END_USER_RECOVERY wait until every tag is fetched, so a
 * case may start a server thread for a device (it fetches every tag, or
 * only some, or fetches and then never answers) and may kill it (the ring
 * closed first, or the thread gone first). A command that does not complete
 * within a short wait is left pending and the case goes on. At the end of a
 * case every device it made is deleted: DEL_DEV, then (after 4 s, 2.5 s
 * with a server that holds requests for good) the servers are stopped,
 * then (after 12 s) what is still pending is cancelled; a command still
 * running after 60 s is a hang (failure with the kernel stacks). Needing
 * to cancel, or to stop a server that was answering, is a failure too:
 * DEL_DEV must release everything by itself.
 * Then every device must be gone (sysfs, /dev and GET_DEV_INFO -ENODEV),
 * so that the next case can reuse the ids.
 *
 * Checked: every result is 0 or one of the errnos the driver uses (-EINVAL,
 * -ENODEV, -EFAULT, -EEXIST, -EBUSY, -EPERM, -EACCES, -EOPNOTSUPP, -ENOMEM,
 * -EINTR, -ECANCELED, and from the path lookup of GET_DEV_INFO2 -ENOENT,
 * -ENOTDIR, -ENAMETOOLONG, -ELOOP); commands on ids that do not exist fail
 * -ENODEV; GET_FEATURES reports our kernel's flags; a valid ADD_DEV on a
 * free id works and returns sane information; GET_DEV_INFO of a device
 * describes it. Units: control commands issued.
 *
 * Kernel bugs this fuzzer found are reproduced by default; all are fixed
 * by kernel patches 28-33 and 35 (README "Reliability"). On a kernel
 * without those, $IOURING_BPF_UBLK_FUZZ_AVOID (comma-separated names)
 * steers the cases around them:
 *   start-wait      a START_DEV or END_USER_RECOVERY that waits for FETCHes
 *                   is not ended by DEL_DEV (which then waits for it too):
 *                   such commands are cancelled before the cleanup's DEL_DEV
 *   partial-cancel  a server that goes before it fetched every tag of a
 *                   queue hits WARN_ON_ONCE(task != ubq->ubq_daemon) in
 *                   ublk_uring_cmd_cancel_fn(): such servers are not killed
 *   stop-then-start once every tag was fetched, a START_DEV still goes
 *                   ahead after the FETCHes ended (STOP_DEV, DEL_DEV, the
 *                   server's exit; also after a STOP_DEV of a started
 *                   device) and sends the partition scan to them: use-after-
 *                   free of the io_uring_cmd in ublk_queue_rq(); no START_DEV
 *                   of the device after any of these
 *   recovery-start  a USER_RECOVERY device whose server dies, or is
 *                   aborted by DEL_DEV, while START_DEV's partition scan
 *                   waits for it: the scan's read is requeued and never
 *                   dispatched again, and START_DEV, the quiesce work and
 *                   DEL_DEV (holding ublk_ctl_mutex) block on ub->mutex in
 *                   D state; such devices get no stalled server, and their
 *                   servers are not killed while START_DEV runs
 *   param-shift     SET_PARAMS takes any io_min_shift, io_opt_shift and
 *                   physical_bs_shift (and a refused SET_PARAMS leaves its
 *                   values behind): START_DEV shifts 1 by them (UBSAN
 *                   shift-out-of-bounds); shifts are kept below 32
 *   recovery-cycle  after a server died, START_USER_RECOVERY, a new
 *                   server and END_USER_RECOVERY, a STOP_DEV/DEL_DEV ends
 *                   in a NULL io_uring_cmd in ublk_cancel_dev() from the
 *                   quiesce work (Oops), STOP/DEL then wait for that work
 *                   forever; no START_USER_RECOVERY
 */
#define _GNU_SOURCE
#include <sys/uio.h>

#include "ublk_fuzz.h"

#define NAME		"ublk-ctrl"
#define NR_FIXED	4	/* ids this run adds by number: id_base.. */
#define MAX_DEVS	8
#define MAX_CMDS	48	/* per case, cleanup included */
#define MAX_PEND	32
#define SLOT_SIZE	8192	/* each command's own buffer */
#define SRV_MAX_TAGS	256	/* a server fetches at most this many tags */
#define SRV_BUF_SIZE	(1 << 20)

/* ------------------------------------------------------------------ */
/* servers                                                            */

enum srv_mode { SRV_FULL, SRV_PARTIAL, SRV_STALL };
static const char *const srv_mode_name[] = { "full", "partial", "stall" };

struct srv {
	int id;
	unsigned int nrq, depth;
	__u64 flags;
	enum srv_mode mode;
	unsigned int nfetch;		/* tags it fetches */
	bool auto_bad_index, auto_fallback;
	_Atomic int stop;		/* 1: ring closed first, 2: thread gone first */
	_Atomic int state;		/* 0 setting up, 1 fetched, 2 ended */
	int char_fd;
	bool ring_ok, left_open;
	struct io_uring ring;
	void *iods[2];
	size_t iod_size;
	pthread_t th;
	int err;			/* setup step that failed (negative errno) */
	const char *err_step;
	unsigned long served, ended, odd, held;
	int odd_res;
};

static char *srv_buf;			/* shared by every plain-copy tag */

#define UD_SRV(kind, q, tag)	((__u64)(kind) << 32 | (__u64)(q) << 16 | (tag))
enum { K_FETCH = 1, K_COMMIT, K_GETDATA };

static __u64 srv_fetch_addr(const struct srv *s, unsigned int q, unsigned int tag)
{
	if (s->flags & UBLK_F_AUTO_BUF_REG) {
		struct ublk_auto_buf_reg reg = {
			.index = (__u16)(q * s->depth + tag),
			.flags = s->auto_fallback ? UBLK_AUTO_BUF_REG_FALLBACK : 0,
		};

		if (s->auto_bad_index)	/* past the table: registration fails */
			reg.index = 0xffff;
		return ublk_auto_buf_reg_to_sqe_addr(&reg);
	}
	if (s->flags & (UBLK_F_USER_COPY | UBLK_F_SUPPORT_ZERO_COPY))
		return 0;
	/* plain copy: one buffer for all tags, the data is never looked at */
	return (__u64)(uintptr_t)srv_buf;
}

static bool srv_sqe(struct srv *s, __u32 op, unsigned int q, unsigned int tag, int res,
		    __u64 addr, int kind)
{
	struct io_uring_sqe *sqe = ufz_get_sqe(&s->ring);

	if (!sqe)
		return false;
	ufz_prep_io_cmd(sqe, s->char_fd, op, q, tag, res, addr, UD_SRV(kind, q, tag));
	if (s->flags & UBLK_F_AUTO_BUF_REG)
		ufz_auto_buf_reg_to_sqe(sqe);
	return true;
}

static void srv_request(struct srv *s, unsigned int q, unsigned int tag)
{
	const struct ublksrv_io_desc *iod =
		(const struct ublksrv_io_desc *)s->iods[q] + tag;
	unsigned int op = ublksrv_get_op(iod);
	int res = 0;

	if (s->mode == SRV_STALL) {
		s->held++;	/* holds the request: only an abort ends it */
		return;
	}
	if (op == UBLK_IO_OP_READ || op == UBLK_IO_OP_WRITE)
		res = (int)(iod->nr_sectors << 9);
	s->served++;
	srv_sqe(s, UBLK_U_IO_COMMIT_AND_FETCH_REQ, q, tag, res, srv_fetch_addr(s, q, tag),
		K_COMMIT);
}

/* fetch some or all tags, answer every request with its size (data are
 * never looked at), until every fetched tag has ended or we are stopped */
static void *srv_thread(void *arg)
{
	struct srv *s = arg;
	unsigned int q, tag, n = 0, outstanding = 0;
	int ret;

	s->char_fd = ufz_open_char(s->id);
	if (s->char_fd < 0) {
		s->err = -errno;
		s->err_step = "open";
		goto out;
	}
	ret = io_uring_queue_init(s->nfetch + 8, &s->ring, 0);
	if (ret) {
		s->err = ret;
		s->err_step = "ring";
		goto out_close;
	}
	s->ring_ok = true;
	if (s->flags & UBLK_F_AUTO_BUF_REG) {
		ret = io_uring_register_buffers_sparse(&s->ring, s->nrq * s->depth);
		if (ret) {
			s->err = ret;
			s->err_step = "sparse buffers";
			goto out_ring;
		}
	}
	for (q = 0; q < s->nrq && q < 2; q++) {
		s->iods[q] = ufz_map_iods(s->char_fd, q, s->depth, &s->iod_size);
		if (!s->iods[q]) {
			s->err = -errno;
			s->err_step = "mmap";
			goto out_ring;
		}
	}
	for (q = 0; q < s->nrq && q < 2; q++)
		for (tag = 0; tag < s->depth && n < s->nfetch; tag++, n++)
			if (srv_sqe(s, UBLK_U_IO_FETCH_REQ, q, tag, 0, srv_fetch_addr(s, q, tag),
				    K_FETCH))
				outstanding++;
	ret = io_uring_submit(&s->ring);
	if (ret < 0) {
		s->err = ret;
		s->err_step = "submit";
	}
	atomic_store(&s->state, 1);

	while (outstanding && !atomic_load(&s->stop)) {
		struct __kernel_timespec ts = { .tv_nsec = 20 * 1000 * 1000 };
		struct io_uring_cqe *cqe;

		ret = io_uring_submit_and_wait_timeout(&s->ring, &cqe, 1, &ts, NULL);
		if (ret < 0 && ret != -ETIME && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
			s->err = ret;
			s->err_step = "wait";
			break;
		}
		while (io_uring_peek_cqe(&s->ring, &cqe) == 0) {
			__u64 ud = cqe->user_data;
			int res = cqe->res;

			io_uring_cqe_seen(&s->ring, cqe);
			q = (ud >> 16) & 0xffff;
			tag = ud & 0xffff;
			if (res == UBLK_IO_RES_OK) {
				srv_request(s, q, tag);
			} else if (res == UBLK_IO_RES_NEED_GET_DATA) {
				srv_sqe(s, UBLK_U_IO_NEED_GET_DATA, q, tag, 0,
					(__u64)(uintptr_t)srv_buf, K_GETDATA);
			} else {
				/* -ENODEV: the device is going; anything else
				 * (EINVAL for a bad FETCH) ends the tag too */
				if (res != UBLK_IO_RES_ABORT && !s->odd++)
					s->odd_res = res;
				s->ended++;
				outstanding--;
				/* a stalled server never commits what it holds;
				 * once the device goes it stops waiting (the
				 * requests were aborted without it) */
				if (s->mode == SRV_STALL && res == UBLK_IO_RES_ABORT) {
					outstanding -= s->held < outstanding ? s->held : outstanding;
					s->held = 0;
				}
			}
		}
	}
	if (atomic_load(&s->stop) == 2) {
		/* as a queue thread that dies: the ring and /dev/ublkcN stay
		 * open until the process closes them (main does, after join) */
		s->left_open = true;
		atomic_store(&s->state, 2);
		return NULL;
	}
out_ring:
	io_uring_queue_exit(&s->ring);
	s->ring_ok = false;
out_close:
	for (q = 0; q < 2; q++)
		if (s->iods[q]) {
			munmap(s->iods[q], s->iod_size);
			s->iods[q] = NULL;
		}
	close(s->char_fd);
	s->char_fd = -1;
out:
	atomic_store(&s->state, 2);
	return NULL;
}

static void srv_reap(struct srv *s)
{
	pthread_join(s->th, NULL);
	if (s->left_open) {
		unsigned int q;

		io_uring_queue_exit(&s->ring);
		for (q = 0; q < 2; q++)
			if (s->iods[q])
				munmap(s->iods[q], s->iod_size);
		close(s->char_fd);
	}
	ufz_log("     server of dev %d ended: mode %s served %lu ended %lu%s%s%s%s\n", s->id,
		srv_mode_name[s->mode], s->served, s->ended, s->err ? " error at " : "",
		s->err ? s->err_step : "", s->err ? " " : "", s->err ? ufz_err(s->err) : "");
	if (s->odd)
		ufz_log("     (%lu tags ended with other results than -ENODEV, first %s)\n", s->odd,
			ufz_err(s->odd_res));
	free(s);
}

/* ------------------------------------------------------------------ */
/* the case's state                                                   */

struct dev {
	bool used;
	int id;
	struct ublksrv_ctrl_dev_info info;	/* what ADD_DEV returned */
	bool deleted;		/* DEL_DEV(_ASYNC) returned 0 */
	bool del_sync;		/* ... and it was DEL_DEV: the id is free */
	bool del_pending;
	struct srv *srv;
	bool had_stall;		/* a server of it held a request for good */
	bool started;		/* START_DEV returned 0 */
	bool stopped_unstarted;	/* STOP_DEV returned 0 before any START_DEV did */
	bool fetch_lost;	/* a server fetched every tag and went, or STOP/DEL */
	unsigned int del_tries;	/* DEL_DEV refused in the cleanup */
};

struct pend {
	bool used;
	__u64 ud;
	__u32 op;
	int dev_id;
	unsigned int slot;
	bool cancelled;
};

enum expect { X_ANY = 1, X_ZERO, X_ENODEV, X_FEATURES, X_INFO, X_ADD };

struct cs {
	struct fuzz_rng rng;
	uint64_t seed;
	struct dev devs[MAX_DEVS];
	struct pend pend[MAX_PEND];
	unsigned int ncmd;
	bool failed;
	char why[256];
	int cur;		/* the device a template case works on (index) */
	int last_added;		/* index of the device ADD_DEV made last */
	bool stopped_servers, cancelled;
};

static struct fuzz_run run;
static struct ufz_ctrl ctl;		/* SQE128 */
static struct ufz_ctrl ctl64;		/* plain 64-byte SQEs: must be refused */
static int id_base;
static long nr_cpus;
static __u64 features;
static char *arena;			/* [rw page][PROT_NONE page] */
static long pagesz;
static unsigned char (*slots)[SLOT_SIZE];
static bool avoid_start_wait, avoid_partial_cancel, avoid_stop_start, avoid_recovery_start;
static bool avoid_param_shift, avoid_recovery_cycle;

__attribute__((format(printf, 2, 3)))
static void case_fail(struct cs *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ufz_case_vfail(&c->failed, c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
}

/* the device's server went: stop-then-start's condition, if unstarted */
static void dev_srv_gone(struct dev *d)
{
	if (d->srv && d->srv->mode != SRV_PARTIAL && atomic_load(&d->srv->state) >= 1)
		d->fetch_lost = true;
	srv_reap(d->srv);
	d->srv = NULL;
}

/* the device with @id: the one that may still exist, else one deleted
 * (an id is reused once its device is gone) */
static struct dev *dev_by_id(struct cs *c, int id)
{
	struct dev *gone = NULL;

	for (int i = 0; i < MAX_DEVS; i++)
		if (c->devs[i].used && c->devs[i].id == id) {
			if (!c->devs[i].deleted)
				return &c->devs[i];
			gone = &c->devs[i];
		}
	return gone;
}

/* a device that may exist: added and not (surely) deleted */
static bool dev_alive(const struct dev *d)
{
	return d->used && !d->deleted;
}

static const char *op_name(__u32 op)
{
	switch (op) {
	case UBLK_U_CMD_GET_QUEUE_AFFINITY: return "GET_QUEUE_AFFINITY";
	case UBLK_U_CMD_GET_DEV_INFO: return "GET_DEV_INFO";
	case UBLK_U_CMD_ADD_DEV: return "ADD_DEV";
	case UBLK_U_CMD_DEL_DEV: return "DEL_DEV";
	case UBLK_U_CMD_START_DEV: return "START_DEV";
	case UBLK_U_CMD_STOP_DEV: return "STOP_DEV";
	case UBLK_U_CMD_SET_PARAMS: return "SET_PARAMS";
	case UBLK_U_CMD_GET_PARAMS: return "GET_PARAMS";
	case UBLK_U_CMD_START_USER_RECOVERY: return "START_USER_RECOVERY";
	case UBLK_U_CMD_END_USER_RECOVERY: return "END_USER_RECOVERY";
	case UBLK_U_CMD_GET_DEV_INFO2: return "GET_DEV_INFO2";
	case UBLK_U_CMD_GET_FEATURES: return "GET_FEATURES";
	case UBLK_U_CMD_DEL_DEV_ASYNC: return "DEL_DEV_ASYNC";
	}
	return "op";
}

/* the errnos the driver (and the path lookup of GET_DEV_INFO2) return */
static bool sane_res(int res)
{
	switch (-res) {
	case 0: case EINVAL: case ENODEV: case EFAULT: case EEXIST: case EBUSY:
	case EPERM: case EACCES: case EOPNOTSUPP: case ENOMEM: case EINTR:
	case ECANCELED: case ENOENT: case ENOTDIR: case ENAMETOOLONG: case ELOOP:
		return true;
	}
	return false;
}

static void check_result(struct cs *c, unsigned int n, __u32 op, int res, enum expect x,
			 unsigned int slot, int dev_id)
{
	if (!sane_res(res))
		case_fail(c, "#%u %s: result %d (%s) is no errno the driver uses", n,
			  op_name(op), res, strerror(-res));
	switch (x) {
	case X_ZERO:
		if (res)
			case_fail(c, "#%u %s: %s, want 0", n, op_name(op), ufz_err(res));
		break;
	case X_ENODEV:
		if (res != -ENODEV)
			case_fail(c, "#%u %s on absent id %d: %s, want -ENODEV", n, op_name(op),
				  dev_id, ufz_err(res));
		break;
	case X_FEATURES: {
		__u64 f;

		memcpy(&f, slots[slot], sizeof(f));
		if (res)
			case_fail(c, "#%u GET_FEATURES: %s, want 0", n, ufz_err(res));
		else if (f != features)
			case_fail(c, "#%u GET_FEATURES: 0x%llx, first time 0x%llx", n,
				  (unsigned long long)f, (unsigned long long)features);
		break;
	}
	case X_INFO: {
		struct ublksrv_ctrl_dev_info info;

		memcpy(&info, slots[slot], sizeof(info));
		if (res)
			case_fail(c, "#%u GET_DEV_INFO of dev %d: %s, want 0", n, dev_id,
				  ufz_err(res));
		else if ((int)info.dev_id != dev_id || !info.nr_hw_queues ||
			 info.nr_hw_queues > nr_cpus || !info.queue_depth ||
			 info.queue_depth > UBLK_MAX_QUEUE_DEPTH || info.state > UBLK_S_DEV_QUIESCED ||
			 (info.flags & ~UFZ_F_KNOWN))
			case_fail(c, "#%u GET_DEV_INFO of dev %d: id %u queues %u depth %u state %u flags 0x%llx",
				  n, dev_id, info.dev_id, info.nr_hw_queues, info.queue_depth,
				  info.state, (unsigned long long)info.flags);
		break;
	}
	default:
		break;
	}
}

/* the outcome of an ADD_DEV that worked: the device joins the case */
static void add_done(struct cs *c, unsigned int n, unsigned int slot, int want_id,
		     __u64 asked_flags)
{
	struct ublksrv_ctrl_dev_info info;
	struct dev *d = NULL;
	__u64 must = UBLK_F_CMD_IOCTL_ENCODE | UBLK_F_URING_CMD_COMP_IN_TASK;

	memcpy(&info, slots[slot], sizeof(info));
	for (int i = 0; i < MAX_DEVS; i++)
		if (!c->devs[i].used) {
			d = &c->devs[i];
			break;
		}
	ufz_log("     -> dev %u queues %u depth %u max_io %u flags 0x%llx state %u\n",
		info.dev_id, info.nr_hw_queues, info.queue_depth, info.max_io_buf_bytes,
		(unsigned long long)info.flags, info.state);
	if ((want_id != -1 && (int)info.dev_id != want_id) || info.dev_id >= (1U << 20))
		case_fail(c, "#%u ADD_DEV asked id %d, got %u", n, want_id, info.dev_id);
	if ((info.flags & must) != must || (info.flags & ~UFZ_F_KNOWN) ||
	    (info.flags & UBLK_F_UNPRIVILEGED_DEV) ||
	    (info.flags & ~asked_flags & ~must) ||
	    ((info.flags & UBLK_F_NEED_GET_DATA) &&
	     (info.flags & (UBLK_F_USER_COPY | UBLK_F_SUPPORT_ZERO_COPY | UBLK_F_AUTO_BUF_REG))))
		case_fail(c, "#%u ADD_DEV: flags 0x%llx for asked 0x%llx", n,
			  (unsigned long long)info.flags, (unsigned long long)asked_flags);
	if (info.state != UBLK_S_DEV_DEAD || info.nr_hw_queues > nr_cpus ||
	    (info.max_io_buf_bytes & (pagesz - 1)))
		case_fail(c, "#%u ADD_DEV: state %u queues %u max_io %u", n, info.state,
			  info.nr_hw_queues, info.max_io_buf_bytes);
	if (!ufz_path_exists("/sys/class/ublk-char/ublkc%d", info.dev_id))
		case_fail(c, "#%u ADD_DEV: no /sys/class/ublk-char/ublkc%u", n, info.dev_id);
	if (dev_by_id(c, info.dev_id) && dev_alive(dev_by_id(c, info.dev_id)))
		case_fail(c, "#%u ADD_DEV: id %u is already a device of this case", n,
			  info.dev_id);
	if (!d) {
		case_fail(c, "#%u ADD_DEV: more than %d devices", n, MAX_DEVS);
		return;
	}
	memset(d, 0, sizeof(*d));
	d->used = true;
	d->id = info.dev_id;
	d->info = info;
	c->last_added = (int)(d - c->devs);
}

/* ------------------------------------------------------------------ */
/* issuing commands                                                   */

struct cmdx {
	__u32 op;
	struct ublksrv_ctrl_cmd cmd;
	enum expect x;
	double wait;		/* seconds before it is left pending */
	bool sqe64;
	__u64 add_flags;	/* ADD_DEV: what was asked */
	const char *note;
};

static void pend_done(struct cs *c, struct pend *p, int res);

/* a completion: of the command waited for (true) or of a pending one */
static bool reap_one(struct cs *c, struct io_uring *ring, __u64 want, int *res)
{
	struct io_uring_cqe *cqe;
	__u64 ud;
	int r;

	if (io_uring_peek_cqe(ring, &cqe))
		return false;
	ud = cqe->user_data;
	r = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	if (ud == want) {
		*res = r;
		return true;
	}
	if (ud >> 62 == 1)	/* ASYNC_CANCEL's own completion */
		return false;
	for (int i = 0; i < MAX_PEND; i++)
		if (c->pend[i].used && c->pend[i].ud == ud) {
			pend_done(c, &c->pend[i], r);
			return false;
		}
	case_fail(c, "completion of unknown user_data 0x%llx res %d", (unsigned long long)ud, r);
	return false;
}

static void reap_all(struct cs *c)
{
	struct io_uring_cqe *cqe;
	int res;

	while (!io_uring_peek_cqe(&ctl.ring, &cqe))
		reap_one(c, &ctl.ring, 0, &res);
}

/* wait for the command @ud up to @secs; false: still running */
static bool wait_ud(struct cs *c, struct io_uring *ring, __u64 ud, double secs, int *res)
{
	double end = fuzz_now() + secs;

	for (;;) {
		struct __kernel_timespec ts = { .tv_nsec = 5 * 1000 * 1000 };
		struct io_uring_cqe *cqe;
		int ret;

		while (!io_uring_peek_cqe(ring, &cqe))
			if (reap_one(c, ring, ud, res))
				return true;
		if (fuzz_now() >= end)
			return false;
		ret = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
		if (ret && ret != -ETIME && ret != -EINTR) {
			case_fail(c, "io_uring wait: %s", strerror(-ret));
			return false;
		}
	}
}

static void describe(char *buf, size_t sz, const struct cmdx *x)
{
	snprintf(buf, sz, "%s%s (op 0x%x) dev %d q %d len %u addr 0x%llx data 0x%llx path_len %u%s%s",
		 x->sqe64 ? "[SQE64] " : "", op_name(x->op), x->op, (int)x->cmd.dev_id,
		 x->cmd.queue_id == 0xffff ? -1 : x->cmd.queue_id, x->cmd.len,
		 (unsigned long long)x->cmd.addr, (unsigned long long)x->cmd.data[0],
		 x->cmd.dev_path_len, x->note ? " " : "", x->note ? x->note : "");
}

/* the completion of a command that was left pending */
static void pend_done(struct cs *c, struct pend *p, int res)
{
	unsigned int n = (unsigned int)(p->ud & 0xffff);
	struct dev *d = dev_by_id(c, p->dev_id);

	ufz_log("  #%u %s (pending) completed: res %s\n", n, op_name(p->op), ufz_err(res));
	p->used = false;
	check_result(c, n, p->op, res, X_ANY, p->slot, p->dev_id);
	if (p->op == UBLK_U_CMD_ADD_DEV && !res)
		add_done(c, n, p->slot, -1, ~0ULL);
	if (p->op == UBLK_U_CMD_START_DEV && !res && d)
		d->started = true;
	if (p->op == UBLK_U_CMD_STOP_DEV && !res && d && !d->started)
		d->stopped_unstarted = true;
	if ((p->op == UBLK_U_CMD_DEL_DEV || p->op == UBLK_U_CMD_DEL_DEV_ASYNC) && d) {
		d->del_pending = false;
		if (!res || res == -ENODEV) {
			d->deleted = true;
			d->del_sync |= p->op == UBLK_U_CMD_DEL_DEV || res == -ENODEV;
		}
	}
}

static unsigned int issue(struct cs *c, struct cmdx *x, unsigned int slot)
{
	unsigned int n = ++c->ncmd;
	__u64 ud = ((__u64)run.cases << 16) | n;
	struct ufz_ctrl *ring = x->sqe64 ? &ctl64 : &ctl;
	char what[256];
	double t0;
	int res, ret;

	describe(what, sizeof(what), x);
	ufz_log("  #%u %s\n", n, what);
	ud &= (1ULL << 62) - 1;
	if (!ufz_ctrl_prep(ring, x->op, &x->cmd, ud)) {
		case_fail(c, "#%u: SQ ring full", n);
		return n;
	}
	ret = io_uring_submit(&ring->ring);
	if (ret != 1) {
		case_fail(c, "#%u: submit: %s", n, ufz_err(ret));
		return n;
	}
	run.units++;
	if (x->op == UBLK_U_CMD_STOP_DEV || x->op == UBLK_U_CMD_DEL_DEV ||
	    x->op == UBLK_U_CMD_DEL_DEV_ASYNC) {
		struct dev *d = dev_by_id(c, (int)x->cmd.dev_id);

		if (d)
			d->fetch_lost = true;	/* whatever comes of it */
	}
	t0 = fuzz_now();
	if (!wait_ud(c, &ring->ring, ud, x->wait, &res)) {
		struct pend *p = NULL;

		for (int i = 0; i < MAX_PEND; i++)
			if (!c->pend[i].used) {
				p = &c->pend[i];
				break;
			}
		ufz_log("     pending after %.1f s\n", x->wait);
		if (x->sqe64) {
			case_fail(c, "#%u: a 64-byte SQE control command did not complete", n);
			/* the SQE64 ring is not reaped again: wait it out here */
			if (wait_ud(c, &ring->ring, ud, 30, &res))
				return n;
		}
		if (!p) {
			case_fail(c, "#%u: more than %d commands pending", n, MAX_PEND);
			return n;
		}
		*p = (struct pend){ .used = true, .ud = ud, .op = x->op,
				    .dev_id = (int)x->cmd.dev_id, .slot = slot };
		if (x->op == UBLK_U_CMD_DEL_DEV || x->op == UBLK_U_CMD_DEL_DEV_ASYNC) {
			struct dev *d = dev_by_id(c, (int)x->cmd.dev_id);

			if (d)
				d->del_pending = true;
		}
		return n;
	}
	ufz_log("     res %s (%.1f ms)\n", ufz_err(res), (fuzz_now() - t0) * 1e3);
	check_result(c, n, x->op, res, x->x, slot, (int)x->cmd.dev_id);
	if (x->op == UBLK_U_CMD_ADD_DEV && !res)
		add_done(c, n, slot, (int)x->cmd.dev_id, x->add_flags);
	else if (x->x == X_ADD && res && res != -ENOMEM)
		case_fail(c, "#%u: a valid ADD_DEV on a free id failed: %s", n, ufz_err(res));
	if (!res && (x->op == UBLK_U_CMD_START_DEV || x->op == UBLK_U_CMD_STOP_DEV)) {
		struct dev *d = dev_by_id(c, (int)x->cmd.dev_id);

		if (d && x->op == UBLK_U_CMD_START_DEV)
			d->started = true;
		else if (d && !d->started)
			d->stopped_unstarted = true;
	}
	if ((x->op == UBLK_U_CMD_DEL_DEV || x->op == UBLK_U_CMD_DEL_DEV_ASYNC) &&
	    (!res || res == -ENODEV)) {
		struct dev *d = dev_by_id(c, (int)x->cmd.dev_id);

		if (d && dev_alive(d)) {
			/* -ENODEV: gone already (its id was freed) */
			d->deleted = true;
			d->del_sync = x->op == UBLK_U_CMD_DEL_DEV || res == -ENODEV;
		}
	}
	return n;
}

/* ------------------------------------------------------------------ */
/* picking arguments                                                  */

enum addr_kind { A_GOOD, A_NULL, A_SHORT, A_UNMAPPED, A_KERNEL, A_RANDOM };

/*
 * Where a command's buffer is: its own slot (@data, @need bytes, copied in
 * for commands that read it), or a bad place. A_SHORT puts the first part
 * of the data right before the PROT_NONE page.
 */
static __u64 pick_addr(struct cs *c, unsigned int slot, const void *data, size_t need,
		       enum addr_kind *kind)
{
	unsigned int r = fuzz_below(&c->rng, 100);
	size_t keep;

	if (data)
		memcpy(slots[slot], data, need < SLOT_SIZE ? need : SLOT_SIZE);
	if (r < 85) {
		*kind = A_GOOD;
		return (__u64)(uintptr_t)slots[slot];
	}
	if (r < 89) {
		*kind = A_NULL;
		return 0;
	}
	if (r < 94 && need > 1) {
		*kind = A_SHORT;
		keep = 1 + fuzz_below(&c->rng, need - 1);
		if (keep > (size_t)pagesz)
			keep = pagesz;
		if (data)
			memcpy(arena + pagesz - keep, data, keep);
		return (__u64)(uintptr_t)(arena + pagesz - keep);
	}
	if (r < 96) {
		*kind = A_UNMAPPED;
		return (__u64)(uintptr_t)(arena + pagesz);
	}
	if (r < 98) {
		*kind = A_KERNEL;
		return 0xffff888000000000ULL + fuzz_below(&c->rng, 1 << 20);
	}
	*kind = A_RANDOM;
	return fuzz_next(&c->rng);
}

static __u16 pick_len(struct cs *c, size_t good)
{
	static const uint64_t edges[] = { 0, 1, 7, 8, 9, 31, 32, 63, 64, 65, 80, 104, 128, 135,
					  136, 137, 4096, 8192, 65535 };
	unsigned int r = fuzz_below(&c->rng, 100);

	if (r < 80)
		return (__u16)good;
	return (__u16)fuzz_pick(&c->rng, edges, sizeof(edges) / sizeof(edges[0]));
}

/* ids that surely are not a device: never made by this case and absent */
static bool foreign_absent(struct cs *c, __u32 id)
{
	if (id >= (1U << 20))
		return true;
	if (dev_by_id(c, (int)id))
		return false;
	if (id >= (__u32)id_base && id < (__u32)id_base + NR_FIXED)
		return false;
	return !ufz_path_exists("/sys/class/ublk-char/ublkc%d", (int)id);
}

/* a device id: mostly one of ours, sometimes -1, huge or any absent one */
static __u32 pick_id(struct cs *c)
{
	static const uint64_t huge[] = { 1U << 20, (1U << 20) + 1, 0x7fffffff, 0x80000000,
					 0xfffffffe, 0xffff, 0x10000 };
	unsigned int r = fuzz_below(&c->rng, 100);
	int alive[MAX_DEVS], n = 0;

	for (int i = 0; i < MAX_DEVS; i++)
		if (dev_alive(&c->devs[i]))
			alive[n++] = c->devs[i].id;
	if (r < 70 && n)
		return (__u32)alive[fuzz_below(&c->rng, n)];
	if (r < 85)
		return (__u32)(id_base + fuzz_below(&c->rng, NR_FIXED));
	if (r < 90)
		return (__u32)-1;
	if (r < 95)
		return (__u32)huge[fuzz_below(&c->rng, sizeof(huge) / sizeof(huge[0]))];
	r = (unsigned int)fuzz_below(&c->rng, 1024);
	/* never somebody else's device (the fuzzer may delete what it names) */
	return foreign_absent(c, r) ? r : 1U << 20;
}

/* the device a template case works on, else any id */
static __u32 target_id(struct cs *c, bool templ)
{
	if (templ && c->cur >= 0 && dev_alive(&c->devs[c->cur]) && fuzz_chance(&c->rng, 9, 10))
		return (__u32)c->devs[c->cur].id;
	return pick_id(c);
}

/* an id free for ADD_DEV: a fixed one not in use by this case, or -1 */
static __u32 free_id(struct cs *c)
{
	for (int tries = 0; tries < 8; tries++) {
		int id = id_base + (int)fuzz_below(&c->rng, NR_FIXED);
		struct dev *d = dev_by_id(c, id);

		if (!d || (d->deleted && d->del_sync))
			return (__u32)id;
	}
	return (__u32)-1;
}

static bool id_free(struct cs *c, __u32 id)
{
	struct dev *d;

	if (id == (__u32)-1) {
		for (int i = 0; i < MAX_DEVS; i++)
			if (c->devs[i].used && !(c->devs[i].deleted && c->devs[i].del_sync))
				return false;	/* -1 takes the lowest free id: maybe a
						 * deleted one still going */
		return true;
	}
	d = dev_by_id(c, (int)id);
	return (!d || (d->deleted && d->del_sync)) && id >= (__u32)id_base &&
	       id < (__u32)id_base + NR_FIXED;
}

static __u64 pick_flags(struct cs *c, bool sane)
{
	static const __u64 combos[] = {
		0, UBLK_F_SUPPORT_ZERO_COPY, UBLK_F_USER_COPY, UBLK_F_AUTO_BUF_REG,
		UBLK_F_AUTO_BUF_REG | UBLK_F_SUPPORT_ZERO_COPY, UBLK_F_NEED_GET_DATA,
		UBLK_F_USER_RECOVERY, UBLK_F_USER_RECOVERY | UBLK_F_USER_RECOVERY_REISSUE,
		UBLK_F_USER_COPY | UBLK_F_SUPPORT_ZERO_COPY, UBLK_F_UNPRIVILEGED_DEV,
		UBLK_F_USER_RECOVERY | UBLK_F_SUPPORT_ZERO_COPY,
		UBLK_F_USER_RECOVERY | UBLK_F_AUTO_BUF_REG,
	};
	__u64 f = combos[fuzz_below(&c->rng, sizeof(combos) / sizeof(combos[0]))];

	if (fuzz_chance(&c->rng, 1, 2))
		f |= UBLK_F_CMD_IOCTL_ENCODE;
	if (sane)
		return f;
	/* any known bit, and unknown ones (9, 10, 12..63) */
	for (int b = 0; b < 12; b++)
		if (fuzz_chance(&c->rng, 1, 5))
			f |= 1ULL << b;
	if (fuzz_chance(&c->rng, 1, 4))
		f |= 1ULL << (9 + fuzz_below(&c->rng, 55));
	return f;
}

/* ------------------------------------------------------------------ */
/* the commands                                                       */

/* what does not complete in this time is left pending (it waits for
 * something: a lock a START_DEV holds, a server) */
static double wait_default = 0.5;

static void cmd_init(struct cmdx *x, __u32 op, __u32 dev_id)
{
	memset(x, 0, sizeof(*x));
	x->op = op;
	x->cmd.dev_id = dev_id;
	x->cmd.queue_id = (__u16)-1;
	x->x = X_ANY;
	x->wait = wait_default;
}

/* rarely, a queue id that is not -1 */
static void maybe_bad_queue(struct cs *c, struct cmdx *x)
{
	if (fuzz_chance(&c->rng, 1, 20))
		x->cmd.queue_id = (__u16)fuzz_below(&c->rng, 3);
}

static void do_add(struct cs *c, bool sane)
{
	static const uint64_t nrq[] = { 1, 1, 1, 2, 2, 3, 0, UBLK_MAX_NR_QUEUES,
					UBLK_MAX_NR_QUEUES + 1, 0xffff };
	static const uint64_t depth[] = { 1, 2, 4, 8, 16, 31, 64, 128, UBLK_MAX_QUEUE_DEPTH, 0,
					  UBLK_MAX_QUEUE_DEPTH + 1, 0xffff };
	static const uint64_t maxio[] = { 4096, 65536, 512 << 10, 1 << 20, 0, 1, 4095, 4097,
					  2 << 20, 0xffffffff };
	struct ublksrv_ctrl_dev_info info;
	unsigned int slot = c->ncmd % 64;
	enum addr_kind ak = A_GOOD;
	struct cmdx x;
	__u32 id;

	memset(&info, 0, sizeof(info));
	id = sane || fuzz_chance(&c->rng, 1, 2) ? free_id(c) : pick_id(c);
	cmd_init(&x, UBLK_U_CMD_ADD_DEV, id);
	if (sane) {
		info.nr_hw_queues = 1 + fuzz_below(&c->rng, 2);
		info.queue_depth = 1 + fuzz_below(&c->rng, 8);
		info.max_io_buf_bytes = fuzz_chance(&c->rng, 1, 2) ? 65536 : 512 << 10;
	} else {
		info.nr_hw_queues = fuzz_pick(&c->rng, nrq, sizeof(nrq) / sizeof(nrq[0]));
		info.queue_depth = fuzz_pick(&c->rng, depth, sizeof(depth) / sizeof(depth[0]));
		info.max_io_buf_bytes = fuzz_pick(&c->rng, maxio, sizeof(maxio) / sizeof(maxio[0]));
	}
	info.flags = pick_flags(c, sane);
	info.dev_id = id;
	if (!sane && fuzz_chance(&c->rng, 1, 10))
		info.dev_id = (__u32)fuzz_below(&c->rng, 8) + id_base;	/* mismatch */
	if (!sane && fuzz_chance(&c->rng, 1, 8)) {
		/* what the driver owns: it must reset it */
		info.state = (__u16)fuzz_next(&c->rng);
		info.ublksrv_pid = (__s32)fuzz_next(&c->rng);
		info.owner_uid = (__u32)fuzz_next(&c->rng);
		info.ublksrv_flags = fuzz_next(&c->rng);
	}
	x.cmd.len = sane ? sizeof(info) : pick_len(c, sizeof(info));
	x.cmd.addr = sane ? (memcpy(slots[slot], &info, sizeof(info)),
			     (__u64)(uintptr_t)slots[slot]) :
		     pick_addr(c, slot, &info, sizeof(info), &ak);
	if (!sane)
		maybe_bad_queue(c, &x);
	x.add_flags = info.flags;
	/* valid, on an id known to be free: it must work */
	if (ak == A_GOOD && x.cmd.len >= sizeof(info) && x.cmd.queue_id == 0xffff &&
	    info.dev_id == id && id_free(c, id) && info.nr_hw_queues &&
	    info.nr_hw_queues <= UBLK_MAX_NR_QUEUES && info.queue_depth &&
	    info.queue_depth <= UBLK_MAX_QUEUE_DEPTH && !(info.flags & UBLK_F_ZONED))
		x.x = X_ADD;
	x.note = sane ? "(sane)" : NULL;
	{
		char note[160];

		snprintf(note, sizeof(note), "info{queues %u depth %u max_io %u flags 0x%llx id %d}%s",
			 info.nr_hw_queues, info.queue_depth, info.max_io_buf_bytes,
			 (unsigned long long)info.flags, (int)info.dev_id, sane ? " sane" : "");
		x.note = note;
		issue(c, &x, slot);
	}
	/* the template's device: the one just added, if it was */
	if (sane && c->cur < 0 && c->last_added >= 0)
		c->cur = c->last_added;
}

static void sane_params(struct cs *c, const struct dev *d, struct ublk_params *p)
{
	unsigned int lbs = fuzz_chance(&c->rng, 3, 4) ? 9 : 12;
	unsigned int max_io = d ? d->info.max_io_buf_bytes : 65536;

	memset(p, 0, sizeof(*p));
	p->len = sizeof(*p);
	p->types = UBLK_PARAM_TYPE_BASIC;
	p->basic.logical_bs_shift = lbs;
	p->basic.physical_bs_shift = lbs + fuzz_below(&c->rng, 13 - lbs);
	p->basic.io_min_shift = lbs;
	p->basic.io_opt_shift = 12;
	p->basic.max_sectors = max_io >> 9;
	p->basic.dev_sectors = 2048ULL << fuzz_below(&c->rng, 5);	/* 1..16 MiB */
	p->basic.attrs = (__u32)fuzz_below(&c->rng, 16);
	if (fuzz_chance(&c->rng, 1, 3)) {
		p->types |= UBLK_PARAM_TYPE_DISCARD;
		p->discard.discard_granularity = 4096;
		p->discard.max_discard_sectors = fuzz_below(&c->rng, 2) ? 2048 : 0;
		p->discard.max_write_zeroes_sectors = fuzz_below(&c->rng, 2) ? 2048 : 0;
		p->discard.max_discard_segments = 1;
	}
	if (fuzz_chance(&c->rng, 1, 3)) {
		p->types |= UBLK_PARAM_TYPE_DMA_ALIGN;
		p->dma.alignment = fuzz_chance(&c->rng, 1, 2) ? 511 : 4095;
	}
	if (fuzz_chance(&c->rng, 1, 3)) {
		p->types |= UBLK_PARAM_TYPE_SEGMENT;
		p->seg.seg_boundary_mask = fuzz_chance(&c->rng, 1, 2) ? 4095 : 65535;
		p->seg.max_segment_size = fuzz_chance(&c->rng, 1, 2) ? 4096 : 65536;
		p->seg.max_segments = 1 + fuzz_below(&c->rng, 128);
	}
}

/* valid parameters with a few fields set to edge values or noise */
static void mutate_params(struct cs *c, struct ublk_params *p)
{
	static const uint64_t shifts[] = { 0, 8, 9, 10, 12, 13, 16, 31, 32, 63, 255 };
	static const uint64_t sectors[] = { 0, 1, 7, 8, 9, 127, 128, 1024, 2048, 0xffffffff,
					    0x7fffffff };
	static const uint64_t masks[] = { 0, 1, 511, 4095, 4096, 65535, 0xffffffff,
					  0xffffffffffffffffULL, 0x7ff };
	unsigned int n = 1 + fuzz_below(&c->rng, 4);

	while (n--) {
		switch (fuzz_below(&c->rng, 22)) {
		case 0: p->types = (__u32)fuzz_below(&c->rng, 64); break;
		case 1: p->types |= 1U << fuzz_below(&c->rng, 32); break;
		case 2: p->basic.logical_bs_shift = fuzz_pick(&c->rng, shifts, 11); break;
		case 3: p->basic.physical_bs_shift = fuzz_pick(&c->rng, shifts, 11); break;
		case 4: p->basic.io_min_shift = fuzz_pick(&c->rng, shifts, 11); break;
		case 5: p->basic.io_opt_shift = fuzz_pick(&c->rng, shifts, 11); break;
		case 6: p->basic.max_sectors = fuzz_pick(&c->rng, sectors, 11); break;
		case 7: p->basic.chunk_sectors = fuzz_pick(&c->rng, sectors, 11); break;
		case 8: p->basic.dev_sectors = fuzz_chance(&c->rng, 1, 2) ?
				fuzz_pick(&c->rng, sectors, 11) : fuzz_next(&c->rng) >> fuzz_below(&c->rng, 64);
			break;
		case 9: p->basic.virt_boundary_mask = fuzz_pick(&c->rng, masks, 9); break;
		case 10: p->basic.attrs = (__u32)fuzz_next(&c->rng); break;
		case 11:
			p->types |= UBLK_PARAM_TYPE_DISCARD;
			p->discard.discard_granularity = fuzz_pick(&c->rng, sectors, 11);
			p->discard.max_discard_sectors = fuzz_pick(&c->rng, sectors, 11);
			p->discard.max_discard_segments = (__u16)fuzz_below(&c->rng, 4);
			p->discard.discard_alignment = fuzz_pick(&c->rng, sectors, 11);
			break;
		case 12: p->discard.max_write_zeroes_sectors = fuzz_pick(&c->rng, sectors, 11); break;
		case 13:
			p->types |= UBLK_PARAM_TYPE_DEVT;	/* read-only: refused */
			p->devt.disk_major = (__u32)fuzz_next(&c->rng);
			break;
		case 14:
			p->types |= UBLK_PARAM_TYPE_ZONED;
			p->zoned.max_open_zones = fuzz_pick(&c->rng, sectors, 11);
			p->zoned.max_active_zones = fuzz_pick(&c->rng, sectors, 11);
			p->zoned.max_zone_append_sectors = fuzz_pick(&c->rng, sectors, 11);
			break;
		case 15:
			p->types |= UBLK_PARAM_TYPE_DMA_ALIGN;
			p->dma.alignment = fuzz_pick(&c->rng, masks, 9);
			break;
		case 16:
			p->types |= UBLK_PARAM_TYPE_SEGMENT;
			p->seg.seg_boundary_mask = fuzz_pick(&c->rng, masks, 9);
			break;
		case 17:
			p->types |= UBLK_PARAM_TYPE_SEGMENT;
			p->seg.max_segment_size = fuzz_pick(&c->rng, sectors, 11);
			break;
		case 18:
			p->types |= UBLK_PARAM_TYPE_SEGMENT;
			p->seg.max_segments = (__u16)fuzz_pick(&c->rng, sectors, 11);
			break;
		case 19: {
			static const uint64_t lens[] = { 0, 4, 8, 9, 12, 40, 60, 76, 100, 108, 120, 135,
							 136, 137, 200, 0xffffffff };

			p->len = (__u32)fuzz_pick(&c->rng, lens, 16);
			break;
		}
		case 20:
			/* the combination the block layer refuses with a WARN
			 * unless the driver does first */
			p->types |= UBLK_PARAM_TYPE_SEGMENT;
			p->seg.seg_boundary_mask = 4095;
			p->seg.max_segment_size = 65536;
			p->seg.max_segments = 16;
			p->basic.virt_boundary_mask = 4095;
			break;
		default:
			((unsigned char *)p)[8 + fuzz_below(&c->rng, sizeof(*p) - 8)] =
				(unsigned char)fuzz_next(&c->rng);
			break;
		}
	}
}

static void do_set_params(struct cs *c, bool templ, bool sane)
{
	unsigned int slot = c->ncmd % 64;
	struct ublk_params p;
	enum addr_kind ak = A_GOOD;
	struct cmdx x;
	__u32 id = target_id(c, templ);

	sane_params(c, dev_by_id(c, (int)id), &p);
	if (!sane)
		mutate_params(c, &p);
	if (avoid_param_shift) {
		p.basic.logical_bs_shift &= 31;
		p.basic.physical_bs_shift &= 31;
		p.basic.io_min_shift &= 31;
		p.basic.io_opt_shift &= 31;
	}
	cmd_init(&x, UBLK_U_CMD_SET_PARAMS, id);
	x.cmd.len = sane ? sizeof(p) : pick_len(c, sizeof(p));
	x.cmd.addr = sane ? (memcpy(slots[slot], &p, sizeof(p)), (__u64)(uintptr_t)slots[slot]) :
		     pick_addr(c, slot, &p, sizeof(p), &ak);
	if (foreign_absent(c, id))
		x.x = X_ENODEV;
	{
		char note[240];

		snprintf(note, sizeof(note),
			 "params{len %u types 0x%x lbs %u pbs %u min %u opt %u max_sectors %u dev_sectors %llu vbm 0x%llx dma %u seg %llx/%u/%u}",
			 p.len, p.types, p.basic.logical_bs_shift, p.basic.physical_bs_shift,
			 p.basic.io_min_shift, p.basic.io_opt_shift,
			 p.basic.max_sectors, (unsigned long long)p.basic.dev_sectors,
			 (unsigned long long)p.basic.virt_boundary_mask, p.dma.alignment,
			 (unsigned long long)p.seg.seg_boundary_mask, p.seg.max_segment_size,
			 p.seg.max_segments);
		x.note = note;
		issue(c, &x, slot);
	}
}

static void do_get_params(struct cs *c, bool templ)
{
	static const uint64_t lens[] = { 0, 8, 9, 40, 76, 108, 136, 137, 4096 };
	unsigned int slot = c->ncmd % 64;
	struct ublk_params p;
	enum addr_kind ak;
	struct cmdx x;
	__u32 id = target_id(c, templ);

	memset(&p, 0, sizeof(p));
	p.len = fuzz_chance(&c->rng, 3, 4) ? sizeof(p) : (__u32)fuzz_pick(&c->rng, lens, 9);
	cmd_init(&x, UBLK_U_CMD_GET_PARAMS, id);
	x.cmd.len = pick_len(c, sizeof(p));
	x.cmd.addr = pick_addr(c, slot, &p, sizeof(p), &ak);
	if (foreign_absent(c, id))
		x.x = X_ENODEV;
	issue(c, &x, slot);
}

static bool srv_fetched_all(const struct dev *d)
{
	return d && d->srv && d->srv->mode != SRV_PARTIAL && atomic_load(&d->srv->state) == 1 &&
	       !d->srv->err;
}

/* START_DEV and END_USER_RECOVERY wait for every tag to be fetched */
static void do_start(struct cs *c, bool templ, __u32 op)
{
	struct cmdx x;
	__u32 id = target_id(c, templ);
	struct dev *d = dev_by_id(c, (int)id);

	if (avoid_stop_start && op == UBLK_U_CMD_START_DEV && d &&
	    (d->stopped_unstarted || d->fetch_lost ||
	     (!d->started && (d->deleted || d->del_pending)))) {
		ufz_log("  -- (no START_DEV of dev %d after its STOP_DEV: stop-then-start avoided)\n",
			d->id);
		return;
	}
	cmd_init(&x, op, id);
	x.cmd.data[0] = fuzz_chance(&c->rng, 9, 10) ? (__u64)getpid() :
			fuzz_chance(&c->rng, 1, 2) ? 0 : fuzz_next(&c->rng);
	maybe_bad_queue(c, &x);
	/* with a server that fetched everything and answers it may take the
	 * partition scan's time; else it waits: leave it pending soon (what
	 * fails, fails before it waits) */
	x.wait = srv_fetched_all(d) && d->srv->mode != SRV_STALL ? 10.0 : 0.05;
	if (foreign_absent(c, id))
		x.x = X_ENODEV;
	issue(c, &x, 0);
}

static void cancel_start_waits(struct cs *c, int id);

static void do_simple(struct cs *c, bool templ, __u32 op)
{
	struct cmdx x;
	__u32 id = target_id(c, templ);

	cmd_init(&x, op, id);
	maybe_bad_queue(c, &x);
	if (fuzz_chance(&c->rng, 1, 10))
		x.cmd.data[0] = fuzz_next(&c->rng);
	if (op == UBLK_U_CMD_DEL_DEV || op == UBLK_U_CMD_DEL_DEV_ASYNC) {
		struct dev *d = dev_by_id(c, (int)id);

		if (d && d->del_pending)
			return;		/* one at a time: it is still running */
		if (avoid_start_wait)
			cancel_start_waits(c, (int)id);
		/* a stalled server holds it until the cleanup kills it */
		x.wait = d && d->srv && d->srv->mode == SRV_STALL ? 0.3 : 0.5;
	}
	if (foreign_absent(c, id))
		x.x = X_ENODEV;
	issue(c, &x, 0);
}

static void do_info(struct cs *c, bool templ, bool v2)
{
	unsigned int slot = c->ncmd % 64;
	struct ublksrv_ctrl_dev_info info;
	enum addr_kind ak = A_GOOD;
	struct cmdx x;
	__u32 id = target_id(c, templ);
	struct dev *d = dev_by_id(c, (int)id);
	char path[64];
	size_t plen;

	memset(&info, 0, sizeof(info));
	cmd_init(&x, v2 ? UBLK_U_CMD_GET_DEV_INFO2 : UBLK_U_CMD_GET_DEV_INFO, id);
	if (!v2) {
		x.cmd.len = pick_len(c, sizeof(info));
		x.cmd.addr = pick_addr(c, slot, &info, sizeof(info), &ak);
		if (foreign_absent(c, id))
			x.x = X_ENODEV;
		else if (d && dev_alive(d) && !d->del_pending && ak == A_GOOD &&
			 x.cmd.len >= sizeof(info))
			x.x = X_INFO;
		issue(c, &x, slot);
		return;
	}
	/* GET_DEV_INFO2: the char device's path, then the info */
	switch (fuzz_below(&c->rng, 8)) {
	case 0: snprintf(path, sizeof(path), "/dev/ublkc%u", id + 1); break;
	case 1: snprintf(path, sizeof(path), "/dev/null"); break;
	case 2: snprintf(path, sizeof(path), "/nonexistent/ublkc%u", id); break;
	case 3: snprintf(path, sizeof(path), "/dev/ublk-control"); break;
	default: snprintf(path, sizeof(path), "/dev/ublkc%u", id); break;
	}
	plen = strlen(path) + 1;
	memset(slots[slot], 0, SLOT_SIZE);
	memcpy(slots[slot], path, plen);
	x.cmd.dev_path_len = fuzz_chance(&c->rng, 4, 5) ? (__u16)plen :
			     (__u16)fuzz_below(&c->rng, 2 * plen);
	if (fuzz_chance(&c->rng, 1, 30))
		x.cmd.dev_path_len = (__u16)(4096 + fuzz_below(&c->rng, 2));	/* PATH_MAX edge */
	x.cmd.len = fuzz_chance(&c->rng, 4, 5) ? (__u16)(plen + sizeof(info)) :
		    (__u16)fuzz_below(&c->rng, plen + sizeof(info) + 8);
	x.cmd.addr = fuzz_chance(&c->rng, 9, 10) ? (__u64)(uintptr_t)slots[slot] :
		     pick_addr(c, slot, NULL, plen, &ak);
	if (foreign_absent(c, id))
		x.x = X_ENODEV;
	x.note = path;
	issue(c, &x, slot);
}

static void do_features(struct cs *c)
{
	unsigned int slot = c->ncmd % 64;
	enum addr_kind ak;
	struct cmdx x;
	__u64 f = 0;

	cmd_init(&x, UBLK_U_CMD_GET_FEATURES, pick_id(c));
	x.cmd.len = fuzz_chance(&c->rng, 4, 5) ? 8 : pick_len(c, 8);
	x.cmd.addr = pick_addr(c, slot, &f, sizeof(f), &ak);
	if (ak == A_GOOD && x.cmd.len == 8)
		x.x = X_FEATURES;
	issue(c, &x, slot);
}

static void do_affinity(struct cs *c, bool templ)
{
	static const uint64_t lens[] = { 0, 1, 4, 7, 8, 9, 16, 64, 128, 512, 1024, 4096, 8192,
					 65535 };
	static const uint64_t queues[] = { 0, 0, 1, 2, 3, 4096, 0xffff, 0xffffffffffffffffULL };
	unsigned int slot = c->ncmd % 64;
	enum addr_kind ak;
	struct cmdx x;
	__u32 id = target_id(c, templ);

	cmd_init(&x, UBLK_U_CMD_GET_QUEUE_AFFINITY, id);
	x.cmd.len = fuzz_chance(&c->rng, 1, 2) ? 8 : (__u16)fuzz_pick(&c->rng, lens, 14);
	if (x.cmd.len > SLOT_SIZE)
		x.cmd.len = SLOT_SIZE;	/* a good buffer stays in its slot */
	x.cmd.addr = pick_addr(c, slot, NULL, x.cmd.len ? x.cmd.len : 1, &ak);
	x.cmd.data[0] = fuzz_pick(&c->rng, queues, 8);
	if (foreign_absent(c, id))
		x.x = X_ENODEV;
	issue(c, &x, slot);
}

/* command numbers the driver does not know, legacy ones, I/O ones */
static void do_unknown(struct cs *c, bool templ)
{
	static const __u32 legacy[] = { 0x01, 0x02, 0x06, 0x07, 0x09, 0x12, 0x13, 0x14 };
	unsigned int slot = c->ncmd % 64;
	struct cmdx x;
	__u32 id = target_id(c, templ), op;
	bool on_dev;

	switch (fuzz_below(&c->rng, 6)) {
	case 0:	/* 'u' with a number nobody uses */
		op = _IOWR('u', 0x15 + fuzz_below(&c->rng, 0xeb), struct ublksrv_ctrl_cmd);
		break;
	case 1:	/* the I/O commands, on the control device */
		op = _IOWR('u', 0x20 + fuzz_below(&c->rng, 5), struct ublksrv_io_cmd);
		break;
	case 2:	/* legacy numbers (CONFIG_BLKDEV_UBLK_LEGACY_OPCODES), read-only ones */
		op = legacy[fuzz_below(&c->rng, sizeof(legacy) / sizeof(legacy[0]))];
		break;
	case 3:	/* another ioctl type */
		op = _IOWR('v' + fuzz_below(&c->rng, 4), fuzz_below(&c->rng, 256),
			   struct ublksrv_ctrl_cmd);
		break;
	case 4:	/* a known number with another direction or size */
		op = _IOC(fuzz_below(&c->rng, 4), 'u', 0x02 + fuzz_below(&c->rng, 0x12),
			  fuzz_below(&c->rng, 64));
		break;
	default:
		op = (__u32)fuzz_next(&c->rng);
		break;
	}
	/* legacy ADD/DEL/START/SET/recovery numbers act like the real ones:
	 * keep to the read-only ones chosen above and to unknown numbers */
	switch (_IOC_NR(op)) {
	case UBLK_CMD_ADD_DEV: case UBLK_CMD_DEL_DEV: case UBLK_CMD_START_DEV:
	case UBLK_CMD_STOP_DEV: case UBLK_CMD_SET_PARAMS: case UBLK_CMD_START_USER_RECOVERY:
	case UBLK_CMD_END_USER_RECOVERY: case 0x14:
		if (_IOC_TYPE(op) == 'u' || _IOC_TYPE(op) == 0)
			op = _IOWR('u', 0xfe, struct ublksrv_ctrl_cmd);
		break;
	}
	cmd_init(&x, op, id);
	x.cmd.len = 64;
	memset(slots[slot], 0, 64);
	x.cmd.addr = (__u64)(uintptr_t)slots[slot];
	x.cmd.data[0] = fuzz_next(&c->rng);
	/* a type other than 'u' (and 0, legacy) is refused before the lookup;
	 * an unknown number on a device that does not exist is -ENODEV */
	on_dev = _IOC_TYPE(op) == 'u' || _IOC_TYPE(op) == 0;
	if (on_dev && foreign_absent(c, id) && op != UBLK_U_CMD_GET_FEATURES &&
	    _IOC_NR(op) != 0x13 && _IOC_NR(op) != UBLK_CMD_ADD_DEV)
		x.x = X_ENODEV;
	x.note = "(unknown or legacy)";
	issue(c, &x, slot);
}

/* a control command in a 64-byte SQE: refused (-EINVAL) whatever it is */
static void do_sqe64(struct cs *c)
{
	static const __u32 ops[] = { UBLK_U_CMD_GET_FEATURES, UBLK_U_CMD_GET_DEV_INFO,
				     UBLK_U_CMD_DEL_DEV, UBLK_U_CMD_ADD_DEV, UBLK_U_CMD_START_DEV };
	unsigned int slot = c->ncmd % 64;
	struct cmdx x;

	cmd_init(&x, ops[fuzz_below(&c->rng, 5)], pick_id(c));
	x.sqe64 = true;
	x.cmd.len = 64;
	x.cmd.addr = (__u64)(uintptr_t)slots[slot];
	memset(slots[slot], 0, 64);
	x.x = X_ANY;
	x.wait = 10;
	issue(c, &x, slot);
}

/* ------------------------------------------------------------------ */
/* servers, from the case's side                                      */

static void do_serve(struct cs *c, bool templ)
{
	__u32 id = target_id(c, templ);
	struct dev *d = dev_by_id(c, (int)id);
	struct srv *s;
	unsigned int total;
	unsigned int r;

	if (!d || !dev_alive(d) || d->srv)
		return;
	s = calloc(1, sizeof(*s));
	if (!s)
		return;
	s->id = d->id;
	s->nrq = d->info.nr_hw_queues;
	s->depth = d->info.queue_depth;
	s->flags = d->info.flags;
	s->char_fd = -1;
	total = s->nrq * s->depth;
	r = (unsigned int)fuzz_below(&c->rng, 100);
	s->mode = templ ? (r < 80 ? SRV_FULL : r < 90 ? SRV_PARTIAL : SRV_STALL) :
		  (r < 60 ? SRV_FULL : r < 80 ? SRV_PARTIAL : SRV_STALL);
	if (s->nrq > 2 || total > SRV_MAX_TAGS)
		s->mode = SRV_PARTIAL;
	if (avoid_recovery_start && s->mode == SRV_STALL && (s->flags & UBLK_F_USER_RECOVERY))
		s->mode = SRV_FULL;	/* recovery-start avoided */
	s->nfetch = s->mode == SRV_PARTIAL ?
		    (unsigned int)fuzz_below(&c->rng, total < SRV_MAX_TAGS ? total : SRV_MAX_TAGS) :
		    total;
	s->auto_bad_index = fuzz_chance(&c->rng, 1, 8);
	s->auto_fallback = fuzz_chance(&c->rng, 1, 2);
	ufz_log("  -- serve dev %d: %s, fetching %u of %u tags%s%s\n", s->id,
		srv_mode_name[s->mode], s->nfetch, total,
		(s->flags & UBLK_F_AUTO_BUF_REG) && s->auto_bad_index ? ", auto index 0xffff" : "",
		(s->flags & UBLK_F_AUTO_BUF_REG) && s->auto_fallback ? ", fallback" : "");
	if (pthread_create(&s->th, NULL, srv_thread, s)) {
		free(s);
		return;
	}
	d->srv = s;
	if (s->mode == SRV_STALL)
		d->had_stall = true;
	/* until its FETCHes are in (or it gave up): what follows expects them */
	for (int i = 0; i < 2000 && atomic_load(&s->state) == 0; i++)
		usleep(1000);
	if (atomic_load(&s->state) == 0)
		ufz_log("     (server still setting up after 2 s)\n");
	else if (s->err)
		ufz_log("     server: %s failed: %s\n", s->err_step, ufz_err(s->err));
}

static void srv_stop(struct dev *d, int how)
{
	if (d->srv && !atomic_load(&d->srv->stop))
		atomic_store(&d->srv->stop, how);
}

/* join the servers that ended */
static void reap_servers(struct cs *c)
{
	for (int i = 0; i < MAX_DEVS; i++) {
		struct dev *d = &c->devs[i];

		if (d->used && d->srv && atomic_load(&d->srv->state) == 2)
			dev_srv_gone(d);
	}
}

/* a START_DEV of @id that has not completed */
static bool start_pending(struct cs *c, int id)
{
	for (int i = 0; i < MAX_PEND; i++)
		if (c->pend[i].used && c->pend[i].op == UBLK_U_CMD_START_DEV &&
		    c->pend[i].dev_id == id)
			return true;
	return false;
}

static void do_kill(struct cs *c, bool templ)
{
	__u32 id = target_id(c, templ);
	struct dev *d = dev_by_id(c, (int)id);
	int how = 1 + (int)fuzz_below(&c->rng, 2);

	if (!d || !d->srv)
		return;
	if (avoid_partial_cancel && d->srv->mode == SRV_PARTIAL) {
		ufz_log("  -- (not killing the partial server of dev %d: partial-cancel avoided)\n",
			d->id);
		return;
	}
	if (avoid_recovery_start && (d->info.flags & UBLK_F_USER_RECOVERY) &&
	    start_pending(c, d->id)) {
		ufz_log("  -- (not killing the server of dev %d during START_DEV: recovery-start avoided)\n",
			d->id);
		return;
	}
	ufz_log("  -- kill server of dev %d (%s)\n", d->id,
		how == 1 ? "ring closed first" : "thread exits, ring closed later");
	srv_stop(d, how);
	for (int i = 0; i < 2000 && atomic_load(&d->srv->state) != 2; i++)
		usleep(1000);
	if (atomic_load(&d->srv->state) == 2) {
		dev_srv_gone(d);
	} else {
		ufz_log("     (server did not end within 2 s)\n");
	}
}

/* queue an ASYNC_CANCEL of @p's command (not submitted); false if the SQ is full */
static bool pend_cancel(struct pend *p)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ctl.ring);

	if (!sqe)
		return false;
	memset(sqe, 0, 128);
	io_uring_prep_cancel64(sqe, p->ud, 0);
	sqe->user_data = 1ULL << 62 | p->ud;
	p->cancelled = true;
	return true;
}

/* start-wait avoided: cancel what waits for FETCHes of @id (-1: any) */
static void cancel_start_waits(struct cs *c, int id)
{
	bool any = false;

	for (int i = 0; i < MAX_PEND; i++) {
		struct pend *p = &c->pend[i];

		if (!p->used || p->cancelled || (p->op != UBLK_U_CMD_START_DEV &&
						  p->op != UBLK_U_CMD_END_USER_RECOVERY) ||
		    (id != -1 && p->dev_id != id) || srv_fetched_all(dev_by_id(c, p->dev_id)))
			continue;
		if (!pend_cancel(p))
			break;
		any = true;
		ufz_log("  -- cancel #%u %s waiting for FETCHes (start-wait avoided)\n",
			(unsigned int)(p->ud & 0xffff), op_name(p->op));
	}
	if (any)
		io_uring_submit(&ctl.ring);
}

/* cancel pending commands (they wait in the driver, interruptibly) */
static void cancel_pending(struct cs *c, bool all)
{
	for (int i = 0; i < MAX_PEND; i++) {
		struct pend *p = &c->pend[i];

		if (!p->used || p->cancelled)
			continue;
		if (!pend_cancel(p))
			break;
		ufz_log("  -- cancel #%u %s\n", (unsigned int)(p->ud & 0xffff), op_name(p->op));
		if (!all)
			break;
	}
	io_uring_submit(&ctl.ring);
}

/* ------------------------------------------------------------------ */
/* a case                                                             */

enum op {
	O_ADD, O_SET_PARAMS, O_GET_PARAMS, O_START, O_STOP, O_DEL, O_DEL_ASYNC, O_INFO,
	O_INFO2, O_START_REC, O_END_REC, O_FEATURES, O_AFFINITY, O_UNKNOWN, O_SQE64,
	O_SERVE, O_KILL, O_CANCEL, O_NR
};

static const unsigned int op_weight[O_NR] = {
	[O_ADD] = 18, [O_SET_PARAMS] = 12, [O_GET_PARAMS] = 6, [O_START] = 5, [O_STOP] = 5,
	[O_DEL] = 6, [O_DEL_ASYNC] = 4, [O_INFO] = 6, [O_INFO2] = 4, [O_START_REC] = 4,
	[O_END_REC] = 2, [O_FEATURES] = 3, [O_AFFINITY] = 4, [O_UNKNOWN] = 5, [O_SQE64] = 1,
	[O_SERVE] = 4, [O_KILL] = 3, [O_CANCEL] = 1,
};

static void do_op(struct cs *c, enum op op, bool templ)
{
	switch (op) {
	case O_ADD: do_add(c, false); break;
	case O_SET_PARAMS: do_set_params(c, templ, fuzz_chance(&c->rng, 1, 3)); break;
	case O_GET_PARAMS: do_get_params(c, templ); break;
	case O_START: do_start(c, templ, UBLK_U_CMD_START_DEV); break;
	case O_STOP: do_simple(c, templ, UBLK_U_CMD_STOP_DEV); break;
	case O_DEL: do_simple(c, templ, UBLK_U_CMD_DEL_DEV); break;
	case O_DEL_ASYNC: do_simple(c, templ, UBLK_U_CMD_DEL_DEV_ASYNC); break;
	case O_INFO: do_info(c, templ, false); break;
	case O_INFO2: do_info(c, templ, true); break;
	case O_START_REC:
		if (avoid_recovery_cycle)
			ufz_log("  -- (no START_USER_RECOVERY: recovery-cycle avoided)\n");
		else
			do_simple(c, templ, UBLK_U_CMD_START_USER_RECOVERY);
		break;
	case O_END_REC: do_start(c, templ, UBLK_U_CMD_END_USER_RECOVERY); break;
	case O_FEATURES: do_features(c); break;
	case O_AFFINITY: do_affinity(c, templ); break;
	case O_UNKNOWN: do_unknown(c, templ); break;
	case O_SQE64: do_sqe64(c); break;
	case O_SERVE: do_serve(c, templ); break;
	case O_KILL: do_kill(c, templ); break;
	case O_CANCEL: cancel_pending(c, false); break;
	default: break;
	}
	reap_servers(c);
}

static enum op random_op(struct cs *c)
{
	unsigned int total = 0, r;

	for (int i = 0; i < O_NR; i++)
		total += op_weight[i];
	r = (unsigned int)fuzz_below(&c->rng, total);
	for (int i = 0; i < O_NR; i++) {
		if (r < op_weight[i])
			return (enum op)i;
		r -= op_weight[i];
	}
	return O_FEATURES;
}

/* a device's life, with random commands in between */
static void template_case(struct cs *c)
{
	static const enum op life[] = {
		O_SET_PARAMS, O_GET_PARAMS, O_SERVE, O_START, O_INFO, O_KILL, O_START_REC,
		O_SERVE, O_END_REC, O_STOP, O_DEL,
	};

	do_add(c, true);
	for (size_t i = 0; i < sizeof(life) / sizeof(life[0]) && c->ncmd < MAX_CMDS - 12; i++) {
		enum op op = life[i];

		if (fuzz_chance(&c->rng, 1, 4))
			do_op(c, random_op(c), true);
		/* some steps are skipped; set-params is then mostly valid */
		if (op != O_SET_PARAMS && op != O_SERVE && op != O_START && fuzz_chance(&c->rng, 1, 4))
			continue;
		if (op == O_SET_PARAMS)
			do_set_params(c, true, fuzz_chance(&c->rng, 4, 5));
		else
			do_op(c, op, true);
	}
}

static bool all_done(struct cs *c)
{
	for (int i = 0; i < MAX_PEND; i++)
		if (c->pend[i].used)
			return false;
	for (int i = 0; i < MAX_DEVS; i++)
		if (c->devs[i].used && (c->devs[i].srv || !c->devs[i].deleted))
			return false;
	return true;
}

static bool any_stall(struct cs *c)
{
	for (int i = 0; i < MAX_DEVS; i++)
		if (c->devs[i].used && c->devs[i].had_stall)
			return true;
	return false;
}

/*
 * Delete every device of the case. DEL_DEV must end everything by itself
 * (a server that holds a request for good excepted: it has to die); what
 * is still running after that is stopped, then cancelled, and a failure.
 */
static void cleanup(struct cs *c)
{
	double t0 = fuzz_now();
	int phase = 0;
	int res;

	ufz_log("  -- cleanup\n");
	ufz_watchdog_arm(60, "the case's cleanup (DEL_DEV of its devices)");
	if (avoid_start_wait)
		cancel_start_waits(c, -1);
	for (;;) {
		double el;

		reap_all(c);
		reap_servers(c);
		for (int i = 0; i < MAX_DEVS; i++) {
			struct dev *d = &c->devs[i];
			struct cmdx x;

			if (!dev_alive(d) || d->del_pending || c->ncmd >= 0xfff0)
				continue;
			cmd_init(&x, fuzz_chance(&c->rng, 1, 2) ? UBLK_U_CMD_DEL_DEV :
				 UBLK_U_CMD_DEL_DEV_ASYNC, (__u32)d->id);
			x.wait = 0.5;
			issue(c, &x, 0);
			if (!d->deleted && !d->del_pending && ++d->del_tries >= 20) {
				case_fail(c, "dev %d: DEL_DEV refused 20 times", d->id);
				d->deleted = true;
			} else if (!d->deleted && !d->del_pending) {
				ufz_log("     (DEL_DEV of dev %d refused, again)\n", d->id);
			}
		}
		if (all_done(c))
			break;
		el = fuzz_now() - t0;
		if (phase == 0 && (el > 4 || (el > 2.5 && any_stall(c)))) {
			phase = 1;
			ufz_log("  -- servers still running or commands pending after %.1f s: stopping servers\n",
				el);
			if (!any_stall(c)) {
				bool srv = false;

				for (int i = 0; i < MAX_DEVS; i++)
					srv |= c->devs[i].used && c->devs[i].srv;
				if (srv)
					case_fail(c, "a server that answers every request was still running 4 s after DEL_DEV");
			}
			for (int i = 0; i < MAX_DEVS; i++)
				if (c->devs[i].used)
					srv_stop(&c->devs[i], 1);
			c->stopped_servers = true;
		}
		if (phase == 1 && el > 12) {
			phase = 2;
			ufz_log("  -- still pending after 12 s (servers gone): cancelling\n");
			for (int i = 0; i < MAX_PEND; i++)
				if (c->pend[i].used)
					case_fail(c, "#%u %s (dev %d) still running after DEL_DEV and the servers' end",
						  (unsigned int)(c->pend[i].ud & 0xffff),
						  op_name(c->pend[i].op), c->pend[i].dev_id);
			cancel_pending(c, true);
			c->cancelled = true;
		}
		{
			struct __kernel_timespec ts = { .tv_nsec = 10 * 1000 * 1000 };
			struct io_uring_cqe *cqe;

			io_uring_wait_cqe_timeout(&ctl.ring, &cqe, &ts);
		}
	}
	/* every trace gone, every id free again */
	for (int i = 0; i < MAX_DEVS; i++) {
		struct dev *d = &c->devs[i];
		char left[128];

		if (d->used && ufz_dev_left(d->id, 10, left, sizeof(left)))
			case_fail(c, "dev %d: %s still there after its DEL_DEV", d->id, left);
	}
	/* (ids the case never made a device with need no look) */
	for (int k = 0; k < MAX_DEVS; k++) {
		int id = c->devs[k].id;
		struct ublksrv_ctrl_dev_info info;
		double end = fuzz_now() + 10;

		/* DEL_DEV returns once the id is free: only DEL_DEV_ASYNC's
		 * devices are looked at */
		if (!c->devs[k].used || c->devs[k].del_sync)
			continue;
		do
			res = ufz_ctrl_cmd(&ctl, UBLK_U_CMD_GET_DEV_INFO, id, 0, &info,
					   sizeof(info), 10);
		while (res != -ENODEV && fuzz_now() < end && !usleep(5000));
		if (res != -ENODEV)
			case_fail(c, "id %d: GET_DEV_INFO %s after the cleanup, want -ENODEV", id,
				  ufz_err(res));
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
	c.cur = -1;
	c.last_added = -1;
	ufz_case_begin(&run, seed);
	/* commands wait in the driver: each gets its bound in issue(), the
	 * watchdog catches one stuck in submission */
	ufz_watchdog_arm(120, "the case's commands");
	if (fuzz_chance(&c.rng, 1, 8)) {
		ufz_log("  (a device's life)\n");
		template_case(&c);
	} else {
		unsigned int n = 1 + (unsigned int)fuzz_below(&c.rng, 12);

		while (n-- && c.ncmd < MAX_CMDS - 12)
			do_op(&c, random_op(&c), false);
	}
	cleanup(&c);
	ufz_log("  (case took %.2f s)\n", fuzz_now() - t0);
	if (c.failed) {
		ufz_log_dump(NAME);
		fuzz_failed(&run, seed, "%s", c.why);
	}
}

/* nr_cpu_ids, which caps nr_hw_queues: the last possible CPU + 1 */
static long possible_cpus(void)
{
	char buf[128];
	long n = sysconf(_SC_NPROCESSORS_CONF);
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");

	if (f && fgets(buf, sizeof(buf), f)) {
		char *p = strrchr(buf, '-');

		n = strtol(p ? p + 1 : buf, NULL, 10) + 1;
	}
	if (f)
		fclose(f);
	return n;
}

static int pick_id_base(void)
{
	/* a fixed range, so that a replay adds the same ids; it must be free */
	for (int base = 100; base < 1000; base += 100) {
		bool busy = false;

		for (int id = base; id < base + NR_FIXED; id++)
			busy |= ufz_dev_trace(id) != NULL;
		if (!busy)
			return base;
	}
	return -1;
}

int main(int argc, char **argv)
{
	static const struct ufz_issue issues[] = {
		{ "start-wait", &avoid_start_wait },
		{ "partial-cancel", &avoid_partial_cancel },
		{ "stop-then-start", &avoid_stop_start },
		{ "recovery-start", &avoid_recovery_start },
		{ "param-shift", &avoid_param_shift },
		{ "recovery-cycle", &avoid_recovery_cycle },
	};
	uint64_t seed;
	int ret;

	ret = fuzz_init(&run, NAME, "commands", argc, argv);
	if (ret)
		return ret > 0 ? 0 : 2;
	ret = ufz_require_ublk(NAME);
	if (ret)
		return ret;
	ufz_avoid(NAME, issues, sizeof(issues) / sizeof(issues[0]));
	ufz_log_echo = run.verbose;
	signal(SIGPIPE, SIG_IGN);
	pagesz = sysconf(_SC_PAGESIZE);
	nr_cpus = possible_cpus();
	arena = mmap(NULL, 2 * pagesz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	slots = aligned_alloc(4096, 64 * SLOT_SIZE);
	srv_buf = aligned_alloc(4096, SRV_BUF_SIZE);
	if (arena == MAP_FAILED || !slots || !srv_buf ||
	    mprotect(arena + pagesz, pagesz, PROT_NONE)) {
		fprintf(stderr, "fuzz %s: memory: %s\n", NAME, strerror(errno));
		return 1;
	}
	ret = ufz_ctrl_open(&ctl, 64, IORING_SETUP_SQE128);
	if (!ret)
		ret = ufz_ctrl_open(&ctl64, 4, 0);
	if (ret) {
		fprintf(stderr, "fuzz %s: /dev/ublk-control: %s\n", NAME, strerror(-ret));
		return 1;
	}
	ret = ufz_get_features(&ctl, &features);
	if (ret) {
		fprintf(stderr, "fuzz %s: GET_FEATURES: %s\n", NAME, strerror(-ret));
		return 1;
	}
	id_base = pick_id_base();
	if (id_base < 0) {
		fprintf(stderr, "fuzz %s: no free range of %d ublk ids\n", NAME, NR_FIXED);
		return 1;
	}
	printf("fuzz %s: features 0x%llx, ids %d..%d, %ld CPUs\n", NAME,
	       (unsigned long long)features, id_base, id_base + NR_FIXED - 1, nr_cpus);
	ufz_watchdog_start(NAME, false);
	while (fuzz_next_case(&run, &seed))
		one_case(seed);
	ufz_ctrl_close(&ctl64);
	ufz_ctrl_close(&ctl);
	return fuzz_finish(&run);
}
