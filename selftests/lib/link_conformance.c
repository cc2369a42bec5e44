// SPDX-License-Identifier: GPL-2.0
/*
 * lib/link-conformance (VM): each scenario of the table below runs twice on
 * the same requests: once through the kernel's own IOSQE_IO_LINK machinery
 * (liburing), once through the BPF link emulation (bpf/policies/link). The
 * completions (user_data, res), their order and the -ECANCELED set must be
 * identical.
 *
 * lib/link-result-passing (VM, `--result-passing`): a read's byte count
 * becomes the following write's length, something kernel links cannot do.
 */
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <signal.h>
#include <liburing-bpf.h>
#include <liburing.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <iouring_bpf/link.h>
#include "link.skel.h"
#include "selftest.h"

#define MAX_STEPS 8

/* Symbolic operands, resolved at run time. */
enum { FD_NONE = -1, FD_IN = -1000, FD_OUT = -1001, FD_BAD = -1002 };
enum { A_NONE, A_BUF, A_TS_SHORT, A_TS_LONG, A_UD };	/* A_UD: addr = `ud_arg` */

struct step {
	__u8 op;
	__u8 flags;		/* IOU_LINK_* */
	int fd;
	int addr;
	__u32 len;
	__u32 op_flags;
	__u64 off;
	__u64 user_data;
	__u64 ud_arg;
};

struct scenario {
	const char *name;
	int nr;
	struct step s[MAX_STEPS];
};

#define NOP(ud, fl) { IORING_OP_NOP, fl, FD_NONE, A_NONE, 0, 0, 0, ud, 0 }
#define NOP_FAIL(ud, fl, err) \
	{ IORING_OP_NOP, fl, FD_NONE, A_NONE, (__u32)(err), IORING_NOP_INJECT_RESULT, 0, ud, 0 }
#define READ(ud, fl, fd, len) { IORING_OP_READ, fl, fd, A_BUF, len, 0, 0, ud, 0 }
#define WRITE(ud, fl, fd, len) { IORING_OP_WRITE, fl, fd, A_BUF, len, 0, 0, ud, 0 }
#define TIMEOUT(ud, fl, ts) { IORING_OP_TIMEOUT, fl, FD_NONE, ts, 1, 0, 0, ud, 0 }
#define TIMEOUT_REMOVE(ud, fl, target) \
	{ IORING_OP_TIMEOUT_REMOVE, fl, FD_NONE, A_UD, 0, 0, 0, ud, target }

#define IN_SIZE 6000	/* the input file; reads of 8192 are short */
#define L IOU_LINK_SOFT
#define H IOU_LINK_HARD
#define D IOU_LINK_DRAIN
#define S IOU_LINK_SKIP_SUCCESS

static const struct scenario scenarios[] = {
	{ "success chain", 4, { NOP(1, L), READ(2, L, FD_IN, 4096), WRITE(3, L, FD_OUT, 4096),
				NOP(4, 0) } },
	{ "failure in the middle", 4, { NOP(1, L), NOP_FAIL(2, L, -EIO), NOP(3, L), NOP(4, 0) } },
	{ "bad fd in the middle", 3, { NOP(1, L), READ(2, L, FD_BAD, 512), NOP(3, 0) } },
	{ "short read", 3, { READ(1, L, FD_IN, 8192), WRITE(2, L, FD_OUT, 8192), NOP(3, 0) } },
	{ "hard link past failure", 3, { NOP_FAIL(1, H, -EINVAL), NOP(2, H), NOP(3, 0) } },
	{ "soft after hard", 4, { NOP_FAIL(1, H, -EINVAL), NOP_FAIL(2, L, -EPERM), NOP(3, H),
				  NOP(4, 0) } },
	{ "two chains", 5, { NOP(1, L), NOP_FAIL(2, 0, -EIO), NOP_FAIL(3, L, -EBUSY), NOP(4, L),
			     NOP(5, 0) } },
	{ "drain", 3, { TIMEOUT(1, 0, A_TS_SHORT), NOP(2, 0), NOP(3, D) } },
	{ "skip success", 3, { NOP(1, S | L), NOP(2, S), NOP(3, 0) } },
	{ "skip success, failing", 3, { NOP(1, L), NOP_FAIL(2, S | L, -EIO), NOP(3, L | S) } },
	{ "cancellation", 3, { TIMEOUT(1, L, A_TS_LONG), NOP(2, 0), TIMEOUT_REMOVE(3, 0, 1) } },
};

#define LOG_MAX 64

struct run_env {
	int fd_in, fd_out;
	void *buf;
	struct __kernel_timespec ts_short, ts_long;
};

static void resolve(const struct run_env *env, const struct step *st, struct iou_link_req *r)
{
	memset(r, 0, sizeof(*r));
	r->opcode = st->op;
	r->flags = st->flags;
	r->fd = st->fd == FD_IN ? env->fd_in : st->fd == FD_OUT ? env->fd_out :
		st->fd == FD_BAD ? 1023 : st->fd;
	switch (st->addr) {
	case A_BUF: r->addr = (uintptr_t)env->buf; break;
	case A_TS_SHORT: r->addr = (uintptr_t)&env->ts_short; break;
	case A_TS_LONG: r->addr = (uintptr_t)&env->ts_long; break;
	case A_UD: r->addr = st->ud_arg; break;
	}
	r->len = st->len;
	r->op_flags = st->op_flags;
	r->off = st->off;
	r->user_data = st->user_data;
}

/* The kernel's own links: same SQE fields, IOSQE_* flags. */
static int run_kernel(const struct run_env *env, const struct scenario *sc,
		      struct iou_link_cqe *log, int *nr_log)
{
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	struct __kernel_timespec idle = { .tv_nsec = 300 * 1000 * 1000 };
	int ret;

	ret = io_uring_queue_init(16, &ring, IORING_SETUP_SINGLE_ISSUER |
					      IORING_SETUP_DEFER_TASKRUN);
	if (ret)
		return ret;
	for (int i = 0; i < sc->nr; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		struct iou_link_req r;

		resolve(env, &sc->s[i], &r);
		memset(sqe, 0, sizeof(*sqe));
		sqe->opcode = r.opcode;
		sqe->fd = r.fd;
		sqe->addr = r.addr;
		sqe->len = r.len;
		sqe->off = r.off;
		sqe->rw_flags = r.op_flags;
		sqe->user_data = r.user_data;
		sqe->flags = (r.flags & IOU_LINK_SOFT ? IOSQE_IO_LINK : 0) |
			     (r.flags & IOU_LINK_HARD ? IOSQE_IO_HARDLINK : 0) |
			     (r.flags & IOU_LINK_DRAIN ? IOSQE_IO_DRAIN : 0) |
			     (r.flags & IOU_LINK_SKIP_SUCCESS ? IOSQE_CQE_SKIP_SUCCESS : 0);
	}
	ret = io_uring_submit(&ring);
	if (ret != sc->nr) {
		io_uring_queue_exit(&ring);
		return ret < 0 ? ret : -EIO;
	}
	/* collect until the ring stays quiet; the slowest request takes 50 ms */
	*nr_log = 0;
	while (!io_uring_wait_cqe_timeout(&ring, &cqe, &idle)) {
		if (*nr_log < LOG_MAX) {
			log[*nr_log].user_data = cqe->user_data;
			log[*nr_log].res = cqe->res;
			(*nr_log)++;
		}
		io_uring_cqe_seen(&ring, cqe);
	}
	io_uring_queue_exit(&ring);
	return 0;
}

struct emulator {
	struct iouring_bpf_ring ring;
	struct link *skel;
	struct bpf_link *link;
};

/* For the watchdog: a hang must end as a failure that says where. */
static struct link *watched;
static const char *watched_scenario = "(setup)";

static void on_alarm(int sig)
{
	(void)sig;
	fprintf(stderr, "FAIL: scenario '%s' still running after 30 s\n", watched_scenario);
	if (watched) {
		struct link__bss *b = watched->bss;

		fprintf(stderr, "  emulator: status %d, %u log entries, %u requests\n",
			b->iou_link_status, b->iou_link_nr_log, b->iou_link_nr_reqs);
	}
	_exit(KSFT_FAIL);
}

static int emulator_open(struct emulator *e)
{
	int ret = iouring_bpf_ring_init(&e->ring, 16, 0, IOURING_BPF_RING_FLAGS);

	if (!CHECK_OK(ret, "ring setup"))
		return ret;
	e->skel = link__open();
	if (!CHECK(e->skel, "link__open: %s", strerror(errno)))
		return -errno;
	e->skel->rodata->iou_geom = e->ring.geom;
	e->skel->struct_ops.link_ops->ring_fd = e->ring.fd;
	ret = link__load(e->skel);
	if (!CHECK_OK(ret, "link__load"))
		return ret;
	e->link = bpf_map__attach_struct_ops(e->skel->maps.link_ops);
	if (!CHECK(e->link, "attach: %s", strerror(errno)))
		return -errno;
	watched = e->skel;
	return 0;
}

static void emulator_close(struct emulator *e)
{
	bpf_link__destroy(e->link);
	link__destroy(e->skel);
	iouring_bpf_ring_exit(&e->ring);
}

static int run_bpf(struct emulator *e, const struct run_env *env, const struct scenario *sc,
		   struct iou_link_cqe *log, int *nr_log)
{
	struct link__bss *b = e->skel->bss;
	int ret;

	for (int i = 0; i < sc->nr; i++)
		resolve(env, &sc->s[i], &b->iou_link_reqs[i]);
	b->iou_link_nr_reqs = sc->nr;
	b->iou_link_generation++;
	ret = iouring_bpf_ring_run(&e->ring);
	if (ret)
		return ret;
	if (b->iou_link_status)
		return b->iou_link_status;
	*nr_log = b->iou_link_nr_log;
	memcpy(log, b->iou_link_log, sizeof(*log) * *nr_log);
	return 0;
}

static void print_log(const char *who, const struct iou_link_cqe *log, int n)
{
	fprintf(stderr, "  %-6s", who);
	for (int i = 0; i < n; i++)
		fprintf(stderr, " %llu:%d", (unsigned long long)log[i].user_data, log[i].res);
	fprintf(stderr, "\n");
}

static int env_open(struct run_env *env)
{
	char in[] = "/tmp/link-in-XXXXXX", out[] = "/tmp/link-out-XXXXXX";
	char data[IN_SIZE];

	env->fd_in = mkstemp(in);
	env->fd_out = mkstemp(out);
	if (env->fd_in < 0 || env->fd_out < 0)
		return -errno;
	unlink(in);
	unlink(out);
	for (int i = 0; i < IN_SIZE; i++)
		data[i] = 'a' + i % 26;
	if (pwrite(env->fd_in, data, IN_SIZE, 0) != IN_SIZE)
		return -EIO;
	env->buf = aligned_alloc(4096, 16384);
	env->ts_short = (struct __kernel_timespec){ .tv_nsec = 50 * 1000 * 1000 };
	env->ts_long = (struct __kernel_timespec){ .tv_sec = 30 };
	return env->buf ? 0 : -ENOMEM;
}

static int conformance(void)
{
	struct run_env env = {};
	struct emulator e = {};
	int failures = 0;

	if (!CHECK_OK(env_open(&env), "test files") || emulator_open(&e))
		goto out;
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
		const struct scenario *sc = &scenarios[i];
		struct iou_link_cqe klog[LOG_MAX], blog[LOG_MAX];
		int kn = 0, bn = 0, ret;

		watched_scenario = sc->name;
		alarm(30);
		ret = run_kernel(&env, sc, klog, &kn);
		if (!CHECK_OK(ret, sc->name)) {
			failures++;
			continue;
		}
		ret = run_bpf(&e, &env, sc, blog, &bn);
		if (!CHECK_OK(ret, sc->name)) {
			failures++;
			continue;
		}
		bool same = kn == bn;
		for (int j = 0; same && j < kn; j++)
			same = klog[j].user_data == blog[j].user_data && klog[j].res == blog[j].res;
		printf("%-24s %s (%d completions)\n", sc->name, same ? "same" : "DIFFERENT", kn);
		if (!same) {
			fprintf(stderr, "scenario '%s' differs (user_data:res):\n", sc->name);
			print_log("kernel", klog, kn);
			print_log("bpf", blog, bn);
			failures++;
		}
	}
out:
	emulator_close(&e);
	free(env.buf);
	return failures || !e.skel ? KSFT_FAIL : KSFT_PASS;
}

/* read(IN, 8192) is short (IN_SIZE); the write takes its length from it. */
static int result_passing(void)
{
	struct run_env env = {};
	struct emulator e = {};
	struct scenario sc = { "result passing", 3, {
		/* short (IN_SIZE of 8192): a hard link carries on past it */
		READ(1, H, FD_IN, 8192),
		{ IORING_OP_WRITE, IOU_LINK_LEN_FROM_PREV | L, FD_OUT, A_BUF, 0, 0, 0, 2, 0 },
		NOP(3, 0),
	} };
	struct iou_link_cqe log[LOG_MAX];
	int n = 0, ret, status = KSFT_FAIL;
	struct stat st;
	char got[IN_SIZE], want[IN_SIZE];

	if (!CHECK_OK(env_open(&env), "test files") || emulator_open(&e))
		goto out;
	ret = run_bpf(&e, &env, &sc, log, &n);
	if (!CHECK_OK(ret, "run") ||
	    !CHECK(n == 3 && log[0].res == IN_SIZE && log[1].res == IN_SIZE && log[2].res == 0,
		   "log: %d entries, res %d %d %d", n, log[0].res, log[1].res, log[2].res))
		goto out;
	if (!CHECK(fstat(env.fd_out, &st) == 0 && st.st_size == IN_SIZE, "output is %lld bytes",
		   (long long)st.st_size) ||
	    !CHECK(pread(env.fd_out, got, IN_SIZE, 0) == IN_SIZE &&
		   pread(env.fd_in, want, IN_SIZE, 0) == IN_SIZE && !memcmp(got, want, IN_SIZE),
		   "output differs from input"))
		goto out;
	printf("read %d bytes; the linked write took its length from the read\n", IN_SIZE);
	status = KSFT_PASS;
out:
	emulator_close(&e);
	free(env.buf);
	return status;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	signal(SIGALRM, on_alarm);
	alarm(30);
	if (argc > 1 && !strcmp(argv[1], "--result-passing"))
		return result_passing();
	return conformance();
}
