// SPDX-License-Identifier: GPL-2.0
/*
 * lib/dag-rerun, lib/link-rerun (VM): one failed run does not poison the
 * runs after it ("run it again as often as you like", README.md).
 *
 * A run fails midway: an SQE the kernel refuses at submission (an unknown
 * opcode) comes back from the submit short, while a read of an empty pipe
 * is still in flight and the refused request's CQE is still to be reaped.
 * Then several good runs on the same ring and policy must produce exactly
 * the right results (each node's res / the link log), the orphaned pipe
 * read must have been cancelled (data written to the pipe later is still
 * there), and, for links, a run that finds 70 foreign CQEs ahead of its 64
 * requests' must neither trip over them nor lose its own.
 *
 * usage: rerun dag DAG.bpf.o | rerun link LINK.bpf.o
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <liburing.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <liburing-bpf.h>
#include <iouring_bpf/link.h>
#include "selftest.h"

#define BAD_OPCODE 250	/* refused by io_init_req(): the submit comes back short */
#define RUNS 5

static char buf[8][256];
static int pipefd[2] = { -1, -1 }, memfd = -1;

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "timed out: a run hangs (its CQEs were lost)\n";
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

static int setup_files(void)
{
	char data[4096];

	for (unsigned int i = 0; i < sizeof(data); i++)
		data[i] = (char)i;
	memfd = memfd_create("rerun", 0);
	return CHECK(memfd >= 0 && write(memfd, data, sizeof(data)) == sizeof(data),
		     "memfd") &&
	       CHECK(pipe2(pipefd, O_NONBLOCK) == 0, "pipe");
}

/* The pipe read a failed run left behind was cancelled: data stays in the pipe. */
static int pipe_read_cancelled(void)
{
	char got[8] = "";

	if (!CHECK(write(pipefd[1], "hello", 5) == 5, "write to the pipe"))
		return 0;
	usleep(100000);
	return CHECK(read(pipefd[0], got, sizeof(got)) == 5 && !memcmp(got, "hello", 5),
		     "the failed run's pipe read was not cancelled: it took the data");
}

static int load(const char *path, struct iouring_bpf_ring *ring, struct iouring_bpf_policy **p)
{
	int ret = iouring_bpf_policy_open(path, p);

	if (!ret)
		ret = iouring_bpf_policy_set_ring(*p, ring);
	if (!ret)
		ret = iouring_bpf_policy_load(*p);
	if (!ret)
		ret = iouring_bpf_policy_attach(*p);
	return CHECK_OK(ret, iouring_bpf_policy_strerror(*p));
}

static struct iouring_bpf_dag_node rd_node(int fd, int b, __u32 len, __u64 off)
{
	return (struct iouring_bpf_dag_node){ .opcode = IORING_OP_READ, .fd = fd,
				      .addr = (uintptr_t)buf[b], .len = len, .off = off };
}

static int dag_test(const char *path)
{
	struct iouring_bpf_ring ring = { .fd = -1 };
	struct iouring_bpf_policy *pol = NULL;
	struct iouring_bpf_dag *fail = NULL, *good = NULL, *cyc = NULL;
	struct iouring_bpf_dag_node nop = { .opcode = IORING_OP_NOP, .fd = -1 };
	struct iouring_bpf_dag_node bad = { .opcode = BAD_OPCODE, .fd = -1 };
	const __s32 want[5] = { 100, 200, 0, -EBADF, -ECANCELED };
	__s32 res[5];
	int ok = 0, ret;

	if (!setup_files() ||
	    !CHECK_OK(iouring_bpf_ring_init(&ring, 8, 64, IOURING_BPF_RING_FLAGS), "ring") ||
	    !load(path, &ring, &pol))
		goto out;

	/* 0: read of the empty pipe (stays in flight); 1: nop -> {2: refused, 3: nop} */
	fail = iouring_bpf_dag_new();
	struct iouring_bpf_dag_node pr = rd_node(pipefd[0], 0, 16, 0);
	if (!CHECK(fail, "dag") || !CHECK(iouring_bpf_dag_add_node(fail, &pr) == 0, "f0") ||
	    !CHECK(iouring_bpf_dag_add_node(fail, &nop) == 1, "f1") ||
	    !CHECK(iouring_bpf_dag_add_node(fail, &bad) == 2, "f2") ||
	    !CHECK(iouring_bpf_dag_add_node(fail, &nop) == 3, "f3") ||
	    !CHECK_OK(iouring_bpf_dag_add_edge(fail, 1, 2, IOU_DAG_ALWAYS), "f1-2") ||
	    !CHECK_OK(iouring_bpf_dag_add_edge(fail, 1, 3, IOU_DAG_ALWAYS), "f1-3"))
		goto out;
	ret = iouring_bpf_dag_run(fail, pol, &ring, 8, NULL, 0);
	if (!CHECK(ret < 0, "the failing run succeeded"))
		goto out;
	printf("failing run: %d (%s)\n", ret, iouring_bpf_dag_strerror(fail));

	/* 0: read 100 -> 1: read 200 (on success), 0 -> 2: nop (always);
	 * 3: read of a bad fd -> 4: nop (on success: cancelled) */
	good = iouring_bpf_dag_new();
	struct iouring_bpf_dag_node r0 = rd_node(memfd, 1, 100, 0), r1 = rd_node(memfd, 2, 200, 100);
	struct iouring_bpf_dag_node r3 = rd_node(999, 3, 16, 0);
	if (!CHECK(good, "dag") || !CHECK(iouring_bpf_dag_add_node(good, &r0) == 0, "g0") ||
	    !CHECK(iouring_bpf_dag_add_node(good, &r1) == 1, "g1") ||
	    !CHECK(iouring_bpf_dag_add_node(good, &nop) == 2, "g2") ||
	    !CHECK(iouring_bpf_dag_add_node(good, &r3) == 3, "g3") ||
	    !CHECK(iouring_bpf_dag_add_node(good, &nop) == 4, "g4") ||
	    !CHECK_OK(iouring_bpf_dag_add_edge(good, 0, 1, IOU_DAG_ON_SUCCESS), "g0-1") ||
	    !CHECK_OK(iouring_bpf_dag_add_edge(good, 0, 2, IOU_DAG_ALWAYS), "g0-2") ||
	    !CHECK_OK(iouring_bpf_dag_add_edge(good, 3, 4, IOU_DAG_ON_SUCCESS), "g3-4"))
		goto out;
	/* a graph the builder refuses, between good runs */
	cyc = iouring_bpf_dag_new();
	if (!CHECK(cyc, "dag") || !CHECK(iouring_bpf_dag_add_node(cyc, &nop) == 0, "c0") ||
	    !CHECK(iouring_bpf_dag_add_node(cyc, &nop) == 1, "c1") ||
	    !CHECK_OK(iouring_bpf_dag_add_edge(cyc, 0, 1, IOU_DAG_ALWAYS), "c0-1") ||
	    !CHECK_OK(iouring_bpf_dag_add_edge(cyc, 1, 0, IOU_DAG_ALWAYS), "c1-0"))
		goto out;

	for (int run = 0; run < RUNS; run++) {
		memset(res, 0x55, sizeof(res));
		memset(buf[1], 0, sizeof(buf[1]));
		memset(buf[2], 0, sizeof(buf[2]));
		ret = iouring_bpf_dag_run(good, pol, &ring, 8, res, 5);
		if (!CHECK_OK(ret, iouring_bpf_dag_strerror(good)))
			goto out;
		for (int i = 0; i < 5; i++)
			if (!CHECK(res[i] == want[i], "run %d: node %d: res %d, want %d", run, i,
				   res[i], want[i]))
				goto out;
		if (!CHECK(buf[1][99] == 99 && buf[2][0] == 100 && buf[2][199] == (char)299,
			   "run %d: the reads did not bring the file's bytes", run))
			goto out;
		printf("good run %d: res 100 200 0 -EBADF -ECANCELED\n", run);
		if (run == 1 && !CHECK(iouring_bpf_dag_run(cyc, pol, &ring, 8, NULL, 0) == -EINVAL,
				       "the cycle was not refused"))
			goto out;
	}
	ok = pipe_read_cancelled();
out:
	iouring_bpf_dag_free(fail);
	iouring_bpf_dag_free(good);
	iouring_bpf_dag_free(cyc);
	iouring_bpf_policy_close(pol);
	iouring_bpf_ring_exit(&ring);
	return ok ? KSFT_PASS : KSFT_FAIL;
}

struct link_globals {
	struct iou_link_req *reqs;
	struct iou_link_cqe *log;
	__u32 *nr_reqs, *generation, *nr_log;
	int *status;
};

static int link_run(struct iouring_bpf_policy *pol, struct iouring_bpf_ring *ring,
		    struct link_globals *g, const struct iou_link_req *reqs, unsigned int n)
{
	int ret;

	memcpy(g->reqs, reqs, sizeof(*reqs) * n);
	*g->nr_reqs = n;
	++*g->generation;
	ret = iouring_bpf_policy_run(pol, ring, NULL);
	return ret ? ret : *g->status;
}

static struct iou_link_req lreq(__u8 op, __u8 flags, int fd, int b, __u32 len, __u64 off,
				__u64 ud)
{
	return (struct iou_link_req){ .opcode = op, .flags = flags, .fd = fd,
				      .addr = b >= 0 ? (uintptr_t)buf[b] : 0, .len = len,
				      .off = off, .user_data = ud };
}

/* The log holds exactly these (user_data, res) pairs, in some order. */
static int log_is(const struct link_globals *g, const __u64 *ud, const int *res, unsigned int n,
		  int run)
{
	if (!CHECK(*g->nr_log == n, "run %d: %u log entries, want %u", run, *g->nr_log, n))
		return 0;
	for (unsigned int i = 0; i < n; i++) {
		unsigned int j;

		for (j = 0; j < n; j++)
			if (g->log[j].user_data == ud[i])
				break;
		if (!CHECK(j < n, "run %d: no log entry for %llu", run, (unsigned long long)ud[i]) ||
		    !CHECK(g->log[j].res == res[i], "run %d: %llu: res %d, want %d", run,
			   (unsigned long long)ud[i], g->log[j].res, res[i]))
			return 0;
	}
	return 1;
}

static int link_test(const char *path)
{
	struct iouring_bpf_ring ring = { .fd = -1 };
	struct iouring_bpf_policy *pol = NULL;
	struct io_uring src;
	struct link_globals g;
	struct iou_link_req reqs[IOU_LINK_MAX_REQS];
	int ok = 0, ret, have_src = 0;

	if (!setup_files() ||
	    !CHECK_OK(iouring_bpf_ring_init(&ring, 64, 256, IOURING_BPF_RING_FLAGS), "ring") ||
	    !load(path, &ring, &pol))
		goto out;
	g.reqs = iouring_bpf_policy_global_ptr(pol, "iou_link_reqs", NULL);
	g.log = iouring_bpf_policy_global_ptr(pol, "iou_link_log", NULL);
	g.nr_reqs = iouring_bpf_policy_global_ptr(pol, "iou_link_nr_reqs", NULL);
	g.generation = iouring_bpf_policy_global_ptr(pol, "iou_link_generation", NULL);
	g.nr_log = iouring_bpf_policy_global_ptr(pol, "iou_link_nr_log", NULL);
	g.status = iouring_bpf_policy_global_ptr(pol, "iou_link_status", NULL);
	if (!CHECK(g.reqs && g.log && g.nr_reqs && g.generation && g.nr_log && g.status,
		   "link globals"))
		goto out;

	/* three chain heads in one submission: pipe read, refused, nop */
	reqs[0] = lreq(IORING_OP_READ, 0, pipefd[0], 0, 16, 0, 10);
	reqs[1] = lreq(BAD_OPCODE, 0, -1, -1, 0, 0, 11);
	reqs[2] = lreq(IORING_OP_NOP, 0, -1, -1, 0, 0, 12);
	ret = link_run(pol, &ring, &g, reqs, 3);
	if (!CHECK(ret < 0, "the failing run succeeded (%d)", ret))
		goto out;
	printf("failing run: %d\n", ret);

	/* read 100 -> nop (soft link); read of a bad fd -> nop (cancelled) */
	const __u64 ud[4] = { 20, 21, 22, 23 };
	const int want[4] = { 100, 0, -EBADF, -ECANCELED };

	for (int run = 0; run < RUNS; run++) {
		reqs[0] = lreq(IORING_OP_READ, IOU_LINK_SOFT, memfd, 1, 100, 0, 20);
		reqs[1] = lreq(IORING_OP_NOP, 0, -1, -1, 0, 0, 21);
		reqs[2] = lreq(IORING_OP_READ, IOU_LINK_SOFT, 999, 2, 16, 0, 22);
		reqs[3] = lreq(IORING_OP_NOP, 0, -1, -1, 0, 0, 23);
		memset(buf[1], 0, sizeof(buf[1]));
		ret = link_run(pol, &ring, &g, reqs, 4);
		if (!CHECK_OK(ret, "good run") || !log_is(&g, ud, want, 4, run) ||
		    !CHECK(buf[1][99] == 99, "run %d: the read did not bring the file's bytes", run))
			goto out;
		printf("good run %d: 20:100 21:0 22:-EBADF 23:-ECANCELED\n", run);
	}
	if (!pipe_read_cancelled())
		goto out;

	/* 70 foreign CQEs (another generation's) ahead of a run of 64 NOPs */
	if (!CHECK_OK(io_uring_queue_init(128, &src, 0), "source ring"))
		goto out;
	have_src = 1;
	for (int i = 0; i < 70; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&src);

		io_uring_prep_msg_ring(sqe, ring.fd, 0, IOU_LINK_UD(*g.generation + 7, i % 64), 0);
	}
	if (!CHECK(io_uring_submit_and_wait(&src, 70) == 70, "70 MSG_RING"))
		goto out;
	__u64 nud[IOU_LINK_MAX_REQS];
	int nres[IOU_LINK_MAX_REQS];

	for (int i = 0; i < IOU_LINK_MAX_REQS; i++) {
		reqs[i] = lreq(IORING_OP_NOP, 0, -1, -1, 0, 0, 1000 + i);
		nud[i] = 1000 + i;
		nres[i] = 0;
	}
	ret = link_run(pol, &ring, &g, reqs, IOU_LINK_MAX_REQS);
	if (!CHECK_OK(ret, "64 NOPs behind 70 foreign CQEs") ||
	    !log_is(&g, nud, nres, IOU_LINK_MAX_REQS, RUNS))
		goto out;
	printf("64 NOPs behind 70 foreign CQEs: 64 log entries, all 0\n");
	ok = 1;
out:
	if (have_src)
		io_uring_queue_exit(&src);
	iouring_bpf_policy_close(pol);
	iouring_bpf_ring_exit(&ring);
	return ok ? KSFT_PASS : KSFT_FAIL;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	signal(SIGALRM, on_alarm);
	alarm(60);
	if (argc == 3 && !strcmp(argv[1], "dag"))
		return dag_test(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "link"))
		return link_test(argv[2]);
	fprintf(stderr, "usage: %s dag|link POLICY.bpf.o\n", argv[0]);
	return KSFT_FAIL;
}
