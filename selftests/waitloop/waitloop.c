// SPDX-License-Identifier: GPL-2.0
/*
 * The waitloop/ selftests: io_uring_bpf_ops on the patched 6.12 kernel.
 * Usage: waitloop TEST (see the table at the end).
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <liburing-bpf.h>
#include "selftest.h"
#include "../../bench/bench.h"
#include "waitloop.skel.h"
#include "verifier_reject.skel.h"
#include "mainline_nops.skel.h"
#include "mainline72_batch.skel.h"
#include "nops.skel.h"
#include "copy.skel.h"
#include "printk.skel.h"
#include "review.skel.h"
#include "kfunc_filter.skel.h"
#include "direct.skel.h"
#include "step_trampoline.skel.h"

#define LOOP_FLAGS IOURING_BPF_RING_FLAGS

static unsigned int *cq_word(struct iouring_bpf_ring *r, __u32 off)
{
	return (unsigned int *)((char *)r->ring_mem + off);
}

/* A ring for the loop plus a loaded waitloop skeleton. */
struct fixture {
	struct iouring_bpf_ring r;
	struct waitloop *skel;
};

static int fixture_open(struct fixture *f, unsigned int entries, unsigned int cq_entries,
			unsigned int flags)
{
	int ret;

	memset(f, 0, sizeof(*f));
	ret = iouring_bpf_ring_init(&f->r, entries, cq_entries, flags);
	if (!CHECK_OK(ret, "io_uring_setup"))
		return ret;
	f->skel = waitloop__open();
	if (!CHECK(f->skel, "waitloop__open: %s", strerror(errno)))
		return -errno;
	f->skel->rodata->iou_geom = f->r.geom;
	return 0;
}

/*
 * The kernel copies ring_fd when the struct_ops map is loaded, so every map
 * points at the fixture's ring before load; attaching only picks the map.
 */
static int fixture_load(struct fixture *f)
{
	struct waitloop *k = f->skel;
	int ret;

	k->struct_ops.stop_ops->ring_fd = f->r.fd;
	k->struct_ops.stop_ops2->ring_fd = f->r.fd;
	k->struct_ops.sleeper_ops->ring_fd = f->r.fd;
	k->struct_ops.overflow_ops->ring_fd = f->r.fd;
	k->struct_ops.param_ops->ring_fd = f->r.fd;
	ret = waitloop__load(k);

	CHECK_OK(ret, "waitloop__load");
	return ret;
}

static void fixture_close(struct fixture *f)
{
	waitloop__destroy(f->skel);
	iouring_bpf_ring_exit(&f->r);
}

static int check_exit(struct fixture *f)
{
	if (!CHECK(f->skel->bss->exit_error == 0, "program stopped with %d at line %d",
		   f->skel->bss->exit_error, f->skel->bss->exit_line))
		return KSFT_FAIL;
	return KSFT_PASS;
}

/* ---- tests */

static int test_attach_detach(void)
{
	struct fixture f;
	struct bpf_link *link = NULL;
	int ret, status = KSFT_FAIL;

	if (fixture_open(&f, 8, 0, LOOP_FLAGS) || fixture_load(&f))
		goto out;
	link = bpf_map__attach_struct_ops(f.skel->maps.stop_ops);
	if (!CHECK(link, "attach: %s", strerror(errno)))
		goto out;

	for (int i = 0; i < 3; i++) {
		ret = iouring_bpf_ring_run(&f.r);
		if (!CHECK(ret == 0, "enter with program: %d", ret))
			goto out;
	}
	if (!CHECK(f.skel->bss->stop_runs == 3, "program ran %llu times, want 3",
		   (unsigned long long)f.skel->bss->stop_runs))
		goto out;

	ret = bpf_link__destroy(link);
	link = NULL;
	if (!CHECK_OK(ret, "bpf_link__destroy"))
		goto out;
	/* detached: enter is the plain syscall again, the program stays idle */
	ret = iouring_bpf_ring_run(&f.r);
	if (!CHECK(ret == 0, "enter after detach: %d", ret) ||
	    !CHECK(f.skel->bss->stop_runs == 3, "program ran after detach"))
		goto out;

	/* and the ring takes a program again */
	link = bpf_map__attach_struct_ops(f.skel->maps.stop_ops);
	if (!CHECK(link, "re-attach: %s", strerror(errno)))
		goto out;
	ret = iouring_bpf_ring_run(&f.r);
	if (!CHECK(ret == 0 && f.skel->bss->stop_runs == 4, "re-attached program did not run"))
		goto out;
	printf("attached, ran 3 steps, detached, re-attached\n");
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	fixture_close(&f);
	return status;
}

static int run_nops(__u32 total, __u32 inflight)
{
	struct iouring_bpf_ring r;
	struct nops *skel = NULL;
	struct bpf_link *link = NULL;
	int ret, status = KSFT_FAIL;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 16, 0, LOOP_FLAGS), "ring setup"))
		goto out;
	skel = nops__open();
	if (!CHECK(skel, "nops__open: %s", strerror(errno)))
		goto out;
	skel->rodata->iou_geom = r.geom;
	skel->rodata->nop_total = total;
	skel->rodata->nop_inflight = inflight;
	skel->struct_ops.nops_ops->ring_fd = r.fd;
	if (!CHECK_OK(nops__load(skel), "nops__load"))
		goto out;
	link = bpf_map__attach_struct_ops(skel->maps.nops_ops);
	if (!CHECK(link, "attach: %s", strerror(errno)))
		goto out;

	ret = iouring_bpf_ring_run(&r);
	struct nops__bss *b = skel->bss;
	if (!CHECK(ret == 0, "enter: %d", ret) ||
	    !CHECK(b->iou_exit_status == 0, "policy stopped with %d", b->iou_exit_status) ||
	    !CHECK(b->nop_submitted == total && b->nop_completed == total,
		   "submitted %llu completed %llu, want %u",
		   (unsigned long long)b->nop_submitted,
		   (unsigned long long)b->nop_completed, total) ||
	    !CHECK(b->nop_bad_cqes == 0, "%llu bad CQEs", (unsigned long long)b->nop_bad_cqes))
		goto out;
	/* the policy consumed everything it was given */
	if (!CHECK(*cq_word(&r, r.params.cq_off.head) == *cq_word(&r, r.params.cq_off.tail),
		   "CQEs left in the ring"))
		goto out;
	printf("%u NOPs, %u in flight: all completed in one io_uring_enter, %llu steps\n",
	       total, inflight, (unsigned long long)b->nop_steps);
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	nops__destroy(skel);
	iouring_bpf_ring_exit(&r);
	return status;
}

static int test_nops(void)
{
	return run_nops(1000, 8);
}

static int fill_random(int fd, size_t size)
{
	char buf[4096];
	unsigned int seed = 12345;

	for (size_t done = 0; done < size; done += sizeof(buf)) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = rand_r(&seed);
		size_t n = size - done < sizeof(buf) ? size - done : sizeof(buf);
		if (pwrite(fd, buf, n, done) != (ssize_t)n)
			return -errno;
	}
	return 0;
}

static int files_equal(int a, int b, size_t size)
{
	char ba[65536], bb[65536];

	for (size_t off = 0; off < size; off += sizeof(ba)) {
		size_t n = size - off < sizeof(ba) ? size - off : sizeof(ba);
		if (pread(a, ba, n, off) != (ssize_t)n || pread(b, bb, n, off) != (ssize_t)n)
			return 0;
		if (memcmp(ba, bb, n))
			return 0;
	}
	return 1;
}

static int test_copy(void)
{
	/* not a multiple of the block: the last read is short */
	const size_t size = 3 * 1024 * 1024 + 12345;
	const __u32 block = 65536, nslots = 4;
	char src_path[] = "/tmp/waitloop-src-XXXXXX", dst_path[] = "/tmp/waitloop-dst-XXXXXX";
	int src = mkstemp(src_path), dst = mkstemp(dst_path);
	struct iouring_bpf_ring r = { .fd = -1 };
	struct copy *skel = NULL;
	struct bpf_link *link = NULL;
	void *buf = NULL;
	int ret, status = KSFT_FAIL;
	struct stat st;

	if (!CHECK(src >= 0 && dst >= 0, "mkstemp: %s", strerror(errno)))
		goto out;
	unlink(src_path);
	unlink(dst_path);
	if (!CHECK_OK(fill_random(src, size), "fill source"))
		goto out;
	buf = aligned_alloc(4096, (size_t)block * nslots);

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 16, 0, LOOP_FLAGS), "ring setup"))
		goto out;
	skel = copy__open();	/* bpf/policies/copy.bpf.c */
	if (!CHECK(skel, "copy__open: %s", strerror(errno)))
		goto out;
	skel->rodata->iou_geom = r.geom;
	skel->rodata->copy_src_fd = src;
	skel->rodata->copy_dst_fd = dst;
	skel->rodata->copy_size = size;
	skel->rodata->copy_buf = (uintptr_t)buf;
	skel->rodata->copy_block = block;
	skel->rodata->copy_slots = nslots;
	skel->struct_ops.copy_ops->ring_fd = r.fd;
	if (!CHECK_OK(copy__load(skel), "copy__load"))
		goto out;
	link = bpf_map__attach_struct_ops(skel->maps.copy_ops);
	if (!CHECK(link, "attach: %s", strerror(errno)))
		goto out;

	ret = iouring_bpf_ring_run(&r);
	if (!CHECK(ret == 0, "enter: %d", ret) ||
	    !CHECK(skel->bss->iou_exit_status == 0, "policy stopped with %d", skel->bss->iou_exit_status))
		goto out;
	if (!CHECK(fstat(dst, &st) == 0 && (size_t)st.st_size == size,
		   "destination is %lld bytes, want %zu", (long long)st.st_size, size) ||
	    !CHECK(files_equal(src, dst, size), "destination differs from source"))
		goto out;
	printf("copied %zu bytes: %llu reads, %llu writes, byte-for-byte equal\n", size,
	       (unsigned long long)skel->bss->copy_reads,
	       (unsigned long long)skel->bss->copy_writes);
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	copy__destroy(skel);
	iouring_bpf_ring_exit(&r);
	free(buf);
	if (src >= 0)
		close(src);
	if (dst >= 0)
		close(dst);
	return status;
}

/* Attaching to a ring with these setup flags must fail with want_err. */
static int expect_refusal(unsigned int flags, int want_err, const char *what)
{
	struct fixture f;
	struct bpf_link *link;
	int status = KSFT_FAIL;

	if (fixture_open(&f, 8, 0, flags) || fixture_load(&f))
		goto out;
	link = bpf_map__attach_struct_ops(f.skel->maps.stop_ops);
	if (!CHECK(!link, "%s: attach succeeded", what)) {
		bpf_link__destroy(link);
		goto out;
	}
	if (!CHECK(errno == want_err, "%s: errno %d (%s), want %d (%s)", what, errno,
		   strerror(errno), want_err, strerror(want_err)))
		goto out;
	printf("%s: refused with %s\n", what, strerror(want_err));
	status = KSFT_PASS;
out:
	fixture_close(&f);
	return status;
}

static int test_refuse_no_defer(void)
{
	return expect_refusal(IORING_SETUP_NO_SQARRAY | IORING_SETUP_SQ_REWIND, EOPNOTSUPP,
			      "ring without DEFER_TASKRUN");
}

static int test_refuse_sqpoll(void)
{
	return expect_refusal(IORING_SETUP_SQPOLL | IORING_SETUP_NO_SQARRAY, EOPNOTSUPP,
			      "SQPOLL ring");
}

static int test_refuse_iopoll(void)
{
	return expect_refusal(LOOP_FLAGS | IORING_SETUP_IOPOLL, EOPNOTSUPP, "IOPOLL ring");
}

static int test_refuse_second(void)
{
	struct fixture f;
	struct iouring_bpf_ring other = { .fd = -1 };
	struct bpf_link *first = NULL, *second = NULL;
	int first_dup = -1, status = KSFT_FAIL;

	if (fixture_open(&f, 8, 0, LOOP_FLAGS) || fixture_load(&f))
		goto out;
	first = bpf_map__attach_struct_ops(f.skel->maps.stop_ops);
	if (!CHECK(first, "first attach: %s", strerror(errno)))
		goto out;
	second = bpf_map__attach_struct_ops(f.skel->maps.stop_ops2);
	if (!CHECK(!second && errno == EBUSY, "second program: %s, want EBUSY",
		   second ? "attached" : strerror(errno)))
		goto out;

	/*
	 * The same map cannot drive a second ring either. Its ring_fd is
	 * fixed at load, so put the second ring behind that fd number (the
	 * first stays open through a duplicate).
	 */
	if (!CHECK_OK(iouring_bpf_ring_init(&other, 8, 0, LOOP_FLAGS), "second ring"))
		goto out;
	first_dup = dup(f.r.fd);
	if (!CHECK(first_dup >= 0 && dup2(other.fd, f.r.fd) == f.r.fd, "dup: %s",
		   strerror(errno)))
		goto out;
	second = bpf_map__attach_struct_ops(f.skel->maps.stop_ops);
	if (!CHECK(!second && errno == EBUSY, "one map on two rings: %s, want EBUSY",
		   second ? "attached" : strerror(errno)))
		goto out;
	/* and back: the first ring at its number again */
	if (!CHECK(dup2(first_dup, f.r.fd) == f.r.fd, "dup2 back: %s", strerror(errno)))
		goto out;

	/* the first program still runs */
	if (!CHECK(iouring_bpf_ring_run(&f.r) == 0 && f.skel->bss->stop_runs == 1,
		   "first program no longer runs"))
		goto out;
	printf("second program and second ring refused with EBUSY; first still runs\n");
	status = KSFT_PASS;
out:
	bpf_link__destroy(second);
	bpf_link__destroy(first);
	if (first_dup >= 0)
		close(first_dup);
	iouring_bpf_ring_exit(&other);
	fixture_close(&f);
	return status;
}

static void *enter_thread(void *arg)
{
	return (void *)(intptr_t)iouring_bpf_ring_run(arg);
}

static int test_refuse_thread(void)
{
	struct fixture f;
	struct bpf_link *link = NULL;
	pthread_t t;
	void *res;
	int status = KSFT_FAIL;

	if (fixture_open(&f, 8, 0, LOOP_FLAGS) || fixture_load(&f))
		goto out;
	link = bpf_map__attach_struct_ops(f.skel->maps.stop_ops);
	if (!CHECK(link, "attach: %s", strerror(errno)))
		goto out;
	pthread_create(&t, NULL, enter_thread, &f.r);
	pthread_join(t, &res);
	if (!CHECK((intptr_t)res == -EEXIST, "enter from another thread: %d, want -EEXIST",
		   (int)(intptr_t)res) ||
	    !CHECK(f.skel->bss->stop_runs == 0, "program ran for a non-submitter"))
		goto out;
	printf("non-submitter thread refused with EEXIST\n");
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	fixture_close(&f);
	return status;
}

static int test_ring_closed(void)
{
	struct fixture f;
	struct bpf_link *old_link = NULL, *new_link = NULL;
	struct iouring_bpf_ring fresh = { .fd = -1 };
	int ret, tries, status = KSFT_FAIL;

	if (fixture_open(&f, 8, 0, LOOP_FLAGS) || fixture_load(&f))
		goto out;
	old_link = bpf_map__attach_struct_ops(f.skel->maps.stop_ops);
	if (!CHECK(old_link, "attach: %s", strerror(errno)))
		goto out;
	if (!CHECK(iouring_bpf_ring_run(&f.r) == 0, "enter"))
		goto out;

	/*
	 * Close the ring with the program attached. Its teardown runs
	 * asynchronously and detaches the program; until then the map is
	 * still bound to it and a new ring gets EBUSY.
	 */
	int old_fd = f.r.fd;

	iouring_bpf_ring_exit(&f.r);
	if (!CHECK_OK(iouring_bpf_ring_init(&fresh, 8, 0, LOOP_FLAGS), "new ring"))
		goto out;
	/* the map's ring_fd was fixed at load: give the new ring that number */
	if (fresh.fd != old_fd) {
		if (!CHECK(dup2(fresh.fd, old_fd) == old_fd, "dup2: %s", strerror(errno)))
			goto out;
		close(fresh.fd);
		fresh.fd = old_fd;
	}
	for (tries = 0; tries < 200; tries++) {
		new_link = bpf_map__attach_struct_ops(f.skel->maps.stop_ops);
		if (new_link || errno != EBUSY)
			break;
		usleep(50 * 1000);
	}
	if (!CHECK(new_link, "map still bound to the closed ring after 10 s: %s",
		   strerror(errno)))
		goto out;

	/* the stale link goes; it must not take the new ring's program */
	ret = bpf_link__destroy(old_link);
	old_link = NULL;
	if (!CHECK_OK(ret, "destroying the link of the freed ring"))
		goto out;
	ret = iouring_bpf_ring_run(&fresh);
	if (!CHECK(ret == 0 && f.skel->bss->stop_runs == 2,
		   "new ring lost its program when the stale link went (%d, runs %llu)", ret,
		   (unsigned long long)f.skel->bss->stop_runs))
		goto out;
	printf("ring closed while attached: detached by teardown; stale link destroyed safely\n");
	status = KSFT_PASS;
out:
	bpf_link__destroy(new_link);
	bpf_link__destroy(old_link);
	iouring_bpf_ring_exit(&fresh);
	fixture_close(&f);
	return status;
}

struct delayed {
	struct bpf_link *link;
	pthread_t target;
	int delay_ms;
	int destroy_ret;
};

static void *destroy_later(void *arg)
{
	struct delayed *d = arg;

	usleep(d->delay_ms * 1000);
	d->destroy_ret = bpf_link__destroy(d->link);
	return NULL;
}

/* A hang here would be the bug; the alarm turns it into a failure. */
static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "FAIL: io_uring_enter still blocked at the test's time bound\n";
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(KSFT_FAIL);
}

/*
 * Run the loop on @r, bounded by a SIGALRM after @secs, with @helper (if
 * any) on a thread beside it that is joined before returning.
 */
static int run_bounded(struct iouring_bpf_ring *r, unsigned int secs,
		       void *(*helper)(void *), void *arg)
{
	pthread_t t;
	int ret;

	signal(SIGALRM, on_alarm);
	alarm(secs);
	if (helper)
		pthread_create(&t, NULL, helper, arg);
	ret = iouring_bpf_ring_run(r);
	alarm(0);
	if (helper)
		pthread_join(t, NULL);
	return ret;
}

static int test_detach_sleeping(void)
{
	struct fixture f;
	struct delayed d = { .delay_ms = 300 };
	int ret, status = KSFT_FAIL;

	if (fixture_open(&f, 8, 0, LOOP_FLAGS))
		goto out;
	f.skel->rodata->sleep_mode = 0;
	if (fixture_load(&f))
		goto out;
	d.link = bpf_map__attach_struct_ops(f.skel->maps.sleeper_ops);
	if (!CHECK(d.link, "attach: %s", strerror(errno)))
		goto out;
	ret = run_bounded(&f.r, 60, destroy_later, &d);	/* sleeps until the link goes */
	if (!CHECK_OK(d.destroy_ret, "bpf_link__destroy") ||
	    !CHECK(ret == -EFAULT, "enter returned %d, want -EFAULT (program detached)", ret) ||
	    !CHECK(f.skel->bss->sleep_steps >= 1, "program never ran"))
		goto out;
	/* the ring works without the program */
	if (!CHECK(iouring_bpf_ring_run(&f.r) == 0, "enter after detach"))
		goto out;
	printf("link destroyed from another thread: sleeping loop returned EFAULT after %llu steps\n",
	       (unsigned long long)f.skel->bss->sleep_steps);
	status = KSFT_PASS;
out:
	fixture_close(&f);
	return status;
}

static void on_usr1(int sig)
{
	(void)sig;
}

static void *signal_later(void *arg)
{
	struct delayed *d = arg;

	usleep(d->delay_ms * 1000);
	pthread_kill(d->target, SIGUSR1);
	return NULL;
}

static int test_signal(void)
{
	struct fixture f;
	struct bpf_link *link = NULL;
	struct delayed d = { .delay_ms = 300, .target = pthread_self() };
	struct sigaction sa = { .sa_handler = on_usr1 };	/* no SA_RESTART */
	int ret, status = KSFT_FAIL;

	if (fixture_open(&f, 8, 0, LOOP_FLAGS) || fixture_load(&f))
		goto out;
	link = bpf_map__attach_struct_ops(f.skel->maps.sleeper_ops);
	if (!CHECK(link, "attach: %s", strerror(errno)))
		goto out;
	sigaction(SIGUSR1, &sa, NULL);
	ret = run_bounded(&f.r, 60, signal_later, &d);
	if (!CHECK(ret == -EINTR, "enter returned %d, want -EINTR", ret) ||
	    !CHECK(f.skel->bss->sleep_timed_out == 0, "a wait without timeout timed out") ||
	    check_exit(&f))
		goto out;
	printf("signal interrupted the sleeping loop: EINTR after %llu steps\n",
	       (unsigned long long)f.skel->bss->sleep_steps);
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	fixture_close(&f);
	return status;
}

static int test_cq_overflow(void)
{
	struct fixture f;
	struct bpf_link *link = NULL;
	int ret, status = KSFT_FAIL;
	const __u32 total = 20;

	/* 4 SQEs, 4 CQEs: 20 NOPs overflow the CQ five times over */
	if (fixture_open(&f, 4, 4, LOOP_FLAGS))
		goto out;
	f.skel->rodata->ovf_total = total;
	if (fixture_load(&f))
		goto out;
	link = bpf_map__attach_struct_ops(f.skel->maps.overflow_ops);
	if (!CHECK(link, "attach: %s", strerror(errno)))
		goto out;
	ret = iouring_bpf_ring_run(&f.r);
	struct waitloop__bss *b = f.skel->bss;
	if (!CHECK(ret == 0, "enter: %d", ret) || check_exit(&f) ||
	    !CHECK(b->ovf_completed == total, "received %llu CQEs, want %u",
		   (unsigned long long)b->ovf_completed, total) ||
	    !CHECK(b->ovf_bad_cqes == 0, "%llu CQEs out of order or failed",
		   (unsigned long long)b->ovf_bad_cqes) ||
	    !CHECK(b->ovf_max_ready == f.r.params.cq_entries, "CQ never filled (max %llu of %u)",
		   (unsigned long long)b->ovf_max_ready, f.r.params.cq_entries) ||
	    !CHECK(*cq_word(&f.r, f.r.params.cq_off.overflow) == 0, "%u CQEs dropped",
		   *cq_word(&f.r, f.r.params.cq_off.overflow)))
		goto out;
	printf("%u CQEs through a %u-entry CQ: overflow flushed in order, none lost\n", total,
	       f.r.params.cq_entries);
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	fixture_close(&f);
	return status;
}

static int run_timeout(__u32 mode, const char *what)
{
	struct fixture f;
	struct bpf_link *link = NULL;
	int ret, status = KSFT_FAIL;

	if (fixture_open(&f, 8, 0, LOOP_FLAGS))
		goto out;
	f.skel->rodata->sleep_mode = mode;
	f.skel->rodata->sleep_timeout_ns = 20 * 1000 * 1000;
	if (fixture_load(&f))
		goto out;
	link = bpf_map__attach_struct_ops(f.skel->maps.sleeper_ops);
	if (!CHECK(link, "attach: %s", strerror(errno)))
		goto out;
	ret = run_bounded(&f.r, 60, NULL, NULL);
	if (!CHECK(ret == 0, "%s: enter returned %d", what, ret) || check_exit(&f) ||
	    !CHECK(f.skel->bss->sleep_timed_out == 1, "%s: IOU_LOOP_WAIT_TIMED_OUT not reported",
		   what) ||
	    !CHECK(f.skel->bss->sleep_first_step_seen == 1, "lp->step was 0 %llu times, want 1",
		   (unsigned long long)f.skel->bss->sleep_first_step_seen))
		goto out;
	printf("%s timeout fired and reported IOU_LOOP_WAIT_TIMED_OUT after %llu steps\n", what,
	       (unsigned long long)f.skel->bss->sleep_steps);
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	fixture_close(&f);
	return status;
}

static int test_timeout(void)
{
	if (run_timeout(1, "relative"))
		return KSFT_FAIL;
	return run_timeout(2, "absolute");
}

static int register_region(int fd, void *addr, __u64 size, __u32 rd_flags, __u64 reg_flags)
{
	struct io_uring_region_desc rd = {
		.user_addr = (uintptr_t)addr, .size = size, .flags = rd_flags,
	};
	struct io_uring_mem_region_reg reg = {
		.region_uptr = (uintptr_t)&rd, .flags = reg_flags,
	};
	int ret = syscall(__NR_io_uring_register, fd, IORING_REGISTER_MEM_REGION, &reg, 1);

	return ret < 0 ? -errno : ret;
}

static int test_param_region(void)
{
	struct fixture f;
	struct bpf_link *link = NULL;
	long page = sysconf(_SC_PAGESIZE);
	__u64 *area = aligned_alloc(page, 2 * page);
	int ret, status = KSFT_FAIL;

	memset(area, 0, 2 * page);
	if (fixture_open(&f, 8, 0, LOOP_FLAGS) || fixture_load(&f))
		goto out;
	link = bpf_map__attach_struct_ops(f.skel->maps.param_ops);
	if (!CHECK(link, "attach: %s", strerror(errno)))
		goto out;

	/* no region yet: the kfunc returns NULL and the program says so */
	if (!CHECK(iouring_bpf_ring_run(&f.r) == 0 && f.skel->bss->exit_error == -ENOENT,
		   "program found a region before one was registered"))
		goto out;
	f.skel->bss->exit_error = 0;

	struct { int rd_flags, reg_flags; void *addr; __u64 size; int err; const char *what; }
	bad[] = {
		{ 1, 0, (char *)area + 1, page, -EINVAL, "unaligned address" },
		{ 1, 0, area, page / 2, -EINVAL, "unaligned size" },
		{ 1, 0, area, 0, -EINVAL, "zero size" },
		{ 1, 0, NULL, page, -EFAULT, "NULL user memory" },
		{ 0, 0, NULL, page, -EOPNOTSUPP, "kernel-allocated region" },
		{ 1, 1, area, page, -EOPNOTSUPP, "registered wait arguments" },
		{ 3, 0, area, page, -EINVAL, "unknown region flag" },
		{ 1, 4, area, page, -EINVAL, "unknown register flag" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ret = register_region(f.r.fd, bad[i].addr, bad[i].size, bad[i].rd_flags,
				      bad[i].reg_flags);
		if (!CHECK(ret == bad[i].err, "%s: %d, want %d", bad[i].what, ret, bad[i].err))
			goto out;
	}

	ret = register_region(f.r.fd, area, 2 * page, IORING_MEM_REGION_TYPE_USER, 0);
	if (!CHECK_OK(ret, "register region"))
		goto out;
	ret = register_region(f.r.fd, area, page, IORING_MEM_REGION_TYPE_USER, 0);
	if (!CHECK(ret == -EBUSY, "second region: %d, want -EBUSY", ret))
		goto out;

	area[0] = 41;
	ret = iouring_bpf_ring_run(&f.r);
	if (!CHECK(ret == 0, "enter: %d", ret) || check_exit(&f) ||
	    !CHECK(area[1] == 124, "program wrote %llu, want 124", (unsigned long long)area[1]))
		goto out;
	printf("parameter region: 8 bad registrations refused, program read 41 and wrote 124\n");
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	fixture_close(&f);
	free(area);
	return status;
}

static int test_sq_rewind(void)
{
	struct iouring_bpf_ring r = { .fd = -1 };
	int ret, status = KSFT_FAIL;
	struct io_uring_params p = { .flags = IORING_SETUP_SQ_REWIND };

	ret = syscall(__NR_io_uring_setup, 8, &p);
	if (!CHECK(ret < 0 && errno == EINVAL, "SQ_REWIND without NO_SQARRAY: %d", ret))
		goto out;
	p = (struct io_uring_params){ .flags = IORING_SETUP_SQ_REWIND | IORING_SETUP_NO_SQARRAY |
						IORING_SETUP_SQPOLL };
	ret = syscall(__NR_io_uring_setup, 8, &p);
	if (!CHECK(ret < 0 && errno == EINVAL, "SQ_REWIND with SQPOLL: %d", ret))
		goto out;

	/* user space submits twice from index 0, never moving head or tail */
	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, IORING_SETUP_SQ_REWIND | IORING_SETUP_NO_SQARRAY),
		      "setup"))
		goto out;
	struct io_uring_sqe *sqes = r.sqes;
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 3; i++) {
			memset(&sqes[i], 0, sizeof(sqes[i]));
			sqes[i].opcode = IORING_OP_NOP;
			sqes[i].user_data = round * 10 + i;
		}
		ret = syscall(__NR_io_uring_enter, r.fd, 3, 0, 0, NULL, 0);
		if (!CHECK(ret == 3, "round %d submitted %d, want 3", round, ret))
			goto out;
	}
	struct io_uring_cqe *cqes = (void *)((char *)r.ring_mem + r.params.cq_off.cqes);
	unsigned int tail = *cq_word(&r, r.params.cq_off.tail);
	if (!CHECK(tail == 6, "%u CQEs, want 6", tail) ||
	    !CHECK(cqes[3].user_data == 10 && cqes[5].user_data == 12,
		   "second round did not re-read SQEs 0-2") ||
	    !CHECK(*cq_word(&r, r.params.sq_off.head) == 0 && *cq_word(&r, r.params.sq_off.tail) == 0,
		   "SQ head/tail moved"))
		goto out;
	printf("SQ_REWIND: flag checks hold, two submissions both read SQEs 0-2\n");
	status = KSFT_PASS;
out:
	iouring_bpf_ring_exit(&r);
	return status;
}

/* Load one program of verifier_reject.bpf.o; it must fail naming `want`. */
static int expect_verifier_reject(const char *prog_name, const char *want)
{
	static char log[64 * 1024];
	struct verifier_reject *skel = verifier_reject__open();
	struct bpf_program *prog, *target = NULL;
	struct bpf_map *map;
	int ret, status = KSFT_FAIL;

	if (!CHECK(skel, "open: %s", strerror(errno)))
		return KSFT_FAIL;
	bpf_object__for_each_program(prog, skel->obj) {
		int mine = !strcmp(bpf_program__name(prog), prog_name);

		bpf_program__set_autoload(prog, mine);
		if (mine)
			target = prog;
	}
	/* each program has its map, named after it */
	bpf_object__for_each_map(map, skel->obj) {
		if (bpf_map__type(map) == BPF_MAP_TYPE_STRUCT_OPS)
			bpf_map__set_autocreate(map, !strncmp(bpf_map__name(map), prog_name,
							      strlen(prog_name)) &&
						!strcmp(bpf_map__name(map) + strlen(prog_name), "_ops"));
	}
	if (!CHECK(target, "no program %s", prog_name))
		goto out;
	log[0] = 0;
	bpf_program__set_log_buf(target, log, sizeof(log));
	ret = verifier_reject__load(skel);
	if (!CHECK(ret < 0, "%s loaded, but the verifier must reject it", prog_name))
		goto out;
	if (!CHECK(strstr(log, want), "%s: verifier log lacks \"%s\"; log:\n%s", prog_name,
		   want, log))
		goto out;
	printf("%s rejected: \"%s\"\n", prog_name, want);
	status = KSFT_PASS;
out:
	verifier_reject__destroy(skel);
	return status;
}

static int test_verifier_write_ctx(void)
{
	return expect_verifier_reject("write_ctx", "io_uring_bpf_ops: iou_ctx is read-only");
}

/* mainline 7.2's opaque ring: nothing of it can be read either */
static int test_verifier_read_ctx(void)
{
	return expect_verifier_reject("read_ctx", "access beyond struct iou_ctx at off 0");
}

static int test_verifier_write_step(void)
{
	return expect_verifier_reject("write_step",
				      "iou_loop_params offset 16 size 8 is read-only");
}

static int test_verifier_region_past_size(void)
{
	return expect_verifier_reject("region_past_size",
				      "invalid access to memory, mem_size=64 off=64 size=1");
}

static int test_verifier_region_nonconst(void)
{
	return expect_verifier_reject("region_nonconst", "R3 is not a const");
}

/*
 * The mainline-style programs know nothing of liburing-bpf's geometry
 * global: they take the CQ's offsets and the regions' sizes one by one.
 */
#define MAINLINE_RING_GLOBALS(skel, r)						\
	do {									\
		(skel)->rodata->cq_head_off = (r)->params.cq_off.head;		\
		(skel)->rodata->cq_tail_off = (r)->params.cq_off.tail;		\
		(skel)->rodata->cqes_off = (r)->params.cq_off.cqes;		\
		(skel)->rodata->cq_mask = (r)->params.cq_entries - 1;		\
		(skel)->rodata->cq_size = (r)->geom.cq_region_size;		\
		(skel)->rodata->sq_size = (r)->geom.sq_region_size;		\
	} while (0)

static int test_mainline_only(void)
{
	struct iouring_bpf_ring r;
	struct mainline_nops *skel = NULL;
	struct bpf_link *link = NULL;
	int ret, status = KSFT_FAIL;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, LOOP_FLAGS), "setup"))
		goto out;
	skel = mainline_nops__open();
	if (!CHECK(skel, "open: %s", strerror(errno)))
		goto out;
	MAINLINE_RING_GLOBALS(skel, &r);
	skel->rodata->total = 100;
	skel->struct_ops.mainline_ops->ring_fd = r.fd;
	if (!CHECK_OK(mainline_nops__load(skel), "load"))
		goto out;
	link = bpf_map__attach_struct_ops(skel->maps.mainline_ops);
	if (!CHECK(link, "attach: %s", strerror(errno)))
		goto out;
	ret = iouring_bpf_ring_run(&r);
	if (!CHECK(ret == 0, "enter: %d", ret) ||
	    !CHECK(skel->bss->done == 100 && skel->bss->bad == 0, "done %u bad %u",
		   skel->bss->done, skel->bss->bad))
		goto out;
	printf("mainline-only program ran 100 NOPs unchanged\n");
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	mainline_nops__destroy(skel);
	iouring_bpf_ring_exit(&r);
	return status;
}

/* a policy written for mainline 7.2 (struct iou_ctx, vmlinux.h) loads and runs */
static int test_mainline72(void)
{
	struct iouring_bpf_ring r;
	struct mainline72_batch *skel = NULL;
	struct bpf_link *link = NULL;
	int ret, status = KSFT_FAIL;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, LOOP_FLAGS), "setup"))
		goto out;
	skel = mainline72_batch__open();
	if (!CHECK(skel, "open: %s", strerror(errno)))
		goto out;
	MAINLINE_RING_GLOBALS(skel, &r);
	skel->rodata->batch = 4;
	skel->rodata->rounds = 25;
	skel->struct_ops.mainline72_ops->ring_fd = r.fd;
	if (!CHECK_OK(mainline72_batch__load(skel), "load"))
		goto out;
	link = bpf_map__attach_struct_ops(skel->maps.mainline72_ops);
	if (!CHECK(link, "attach: %s", strerror(errno)))
		goto out;
	ret = iouring_bpf_ring_run(&r);
	if (!CHECK(ret == 0, "enter: %d", ret) ||
	    !CHECK(skel->bss->rounds_done == 25 && skel->bss->cqes_seen == 100 &&
		   skel->bss->cqes_bad == 0, "rounds %u cqes %u bad %u",
		   skel->bss->rounds_done, skel->bss->cqes_seen, skel->bss->cqes_bad))
		goto out;
	printf("7.2-style program (struct iou_ctx) ran 25 rounds of 4 NOPs unchanged\n");
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	mainline72_batch__destroy(skel);
	iouring_bpf_ring_exit(&r);
	return status;
}

static int write_str(const char *path, const char *val);

/* tracefs, mounted if the guest has not done it yet */
static const char *tracefs(void)
{
	static const char dir[] = "/sys/kernel/tracing";

	if (access("/sys/kernel/tracing/trace", F_OK) &&
	    mount("tracefs", dir, "tracefs", 0, NULL)) {
		fprintf(stderr, "mount tracefs on %s: %s\n", dir, strerror(errno));
		return NULL;
	}
	return dir;
}

/* the tracing state that decides whether an event is recorded, to stderr */
static void dump_tracing_state(const char *dir)
{
	static const char *const files[] = {
		"tracing_on", "buffer_size_kb", "options/pause-on-trace", "set_event",
		"set_event_pid", "tracing_cpumask", "events/bpf_trace/bpf_trace_printk/enable",
		"events/bpf_trace/bpf_trace_printk/filter", "per_cpu/cpu0/stats",
		"per_cpu/cpu1/stats",
	};
	char path[160], buf[1024];
	unsigned int i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		int fd;
		ssize_t n;

		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		fd = open(path, O_RDONLY);
		n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		buf[n > 0 ? n : 0] = 0;
		if (fd >= 0)
			close(fd);
		fprintf(stderr, "  %s: %s%s", files[i], n >= 0 ? buf : strerror(errno),
			n > 0 && buf[n - 1] == '\n' ? "" : "\n");
	}
}

/* the first character of FILE ('?' if unreadable) */
static char read_char(const char *file)
{
	char c = '?';
	int fd = open(file, O_RDONLY);

	if (fd >= 0) {
		if (read(fd, &c, 1) != 1)
			c = '?';
		close(fd);
	}
	return c;
}

/*
 * bpf_printk() from loop_step reaches the trace buffer, line by line, from
 * the first step on. The kernel enables the bpf_trace_printk event for a
 * program that calls it from a work item queued at verification, which may
 * run after the program's first steps on a busy machine; so the test, as a
 * developer who wants every line, enables the event itself before loading
 * (after switching it off, as a user may have left it).
 */
static int test_printk(void)
{
	char enable[160];
	struct iouring_bpf_ring r;
	struct printk *skel = NULL;
	struct bpf_link *link = NULL;
	const char *dir = tracefs();
	char path[128], want[96], *buf = NULL;
	int ret, fd, status = KSFT_FAIL;
	unsigned int step, found = 0;
	__u32 token = (__u32)getpid() * 2654435761u ^ (__u32)time(NULL);
	size_t len = 0, cap = 1 << 16;
	ssize_t n;

	if (!dir || !CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	snprintf(enable, sizeof(enable), "%s/events/bpf_trace/bpf_trace_printk/enable", dir);
	if (!CHECK_OK(write_str(enable, "0"), "switch the bpf_trace_printk event off") ||
	    !CHECK(read_char(enable) == '0', "the bpf_trace_printk event is not off") ||
	    !CHECK_OK(write_str(enable, "1"), "enable the bpf_trace_printk event") ||
	    !CHECK(read_char(enable) == '1', "the bpf_trace_printk event is not on"))
		goto out;
	/*
	 * Record into the buffer (as a developer would make sure of; an earlier
	 * user may have stopped it), and start from an empty one: only this
	 * run's lines count.
	 */
	snprintf(path, sizeof(path), "%s/tracing_on", dir);
	if (!CHECK_OK(write_str(path, "1"), "enable tracing_on"))
		goto out;
	snprintf(path, sizeof(path), "%s/trace", dir);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (!CHECK(fd >= 0, "open %s for writing: %s", path, strerror(errno)))
		goto out;
	close(fd);

	skel = printk__open();
	if (!CHECK(skel, "open: %s", strerror(errno)))
		goto out;
	skel->rodata->token = token;
	skel->struct_ops.printk_ops->ring_fd = r.fd;
	/* the verifier refuses bpf_trace_printk without CONFIG_BPF_EVENTS */
	ret = printk__load(skel);
	if (!ret) {
		link = bpf_map__attach_struct_ops(skel->maps.printk_ops);
		if (link)
			ret = iouring_bpf_ring_run(&r);
	}
	if (!CHECK_OK(ret, "load and run of a policy calling bpf_printk") ||
	    !CHECK(link, "attach: %s", strerror(errno)))
		goto out;
	if (!CHECK(skel->bss->steps == 3, "the loop stopped after %u steps, not 3",
		   skel->bss->steps))
		goto out;

	buf = malloc(cap);
	fd = open(path, O_RDONLY);
	if (!CHECK(buf && fd >= 0, "open %s: %s", path, strerror(errno)))
		goto out;
	while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += n;
		if (len + 1 == cap) {
			char *bigger = realloc(buf, cap * 2);

			if (!bigger)
				break;
			buf = bigger;
			cap *= 2;
		}
	}
	close(fd);
	buf[len] = 0;
	for (step = 1; step <= 3; step++) {
		snprintf(want, sizeof(want), "iouring-bpf printk token=%u step=%u\n",
			 token, step);
		found += strstr(buf, want) != NULL;
	}
	if (found != 3) {
		CHECK(0, "%u of 3 bpf_printk lines with token %u; bpf_printk returned %ld %ld %ld on CPUs %u %u %u; trace holds:\n%.2000s",
		      found, token, skel->bss->printk_ret[1], skel->bss->printk_ret[2],
		      skel->bss->printk_ret[3], skel->bss->printk_cpu[1],
		      skel->bss->printk_cpu[2], skel->bss->printk_cpu[3], buf);
		dump_tracing_state(dir);
		goto out;
	}
	printf("3 bpf_printk lines from loop_step in %s (token %u)\n", path, token);
	status = KSFT_PASS;
out:
	free(buf);
	bpf_link__destroy(link);
	printk__destroy(skel);
	iouring_bpf_ring_exit(&r);
	return status;
}

/* ---- reproducers for loop defects a review found */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct review *review_load(struct iouring_bpf_ring *r)
{
	struct review *skel = review__open();

	if (!CHECK(skel, "review__open: %s", strerror(errno)))
		return NULL;
	skel->rodata->iou_geom = r->geom;
	skel->struct_ops.spin_ops->ring_fd = r->fd;
	skel->struct_ops.far_ops->ring_fd = r->fd;
	skel->struct_ops.echo_ops->ring_fd = r->fd;
	skel->struct_ops.first_ops->ring_fd = r->fd;
	skel->struct_ops.second_ops->ring_fd = r->fd;
	skel->struct_ops.flood_ops->ring_fd = r->fd;
	skel->struct_ops.overdue_ops->ring_fd = r->fd;
	skel->struct_ops.async_ops->ring_fd = r->fd;
	skel->rodata->workers_tgid = getpid();
	return skel;
}

/* Load the review programs and attach the one in struct_ops map @ops. */
static struct bpf_link *review_attach(struct review *skel, struct bpf_map *ops)
{
	struct bpf_link *link;

	if (!CHECK_OK(review__load(skel), "load"))
		return NULL;
	link = bpf_map__attach_struct_ops(ops);
	CHECK(link, "attach %s: %s", bpf_map__name(ops), strerror(errno));
	return link;
}

struct lock_probe {
	struct bpf_link *link;
	int ring_fd;
	double register_s, detach_s;
	int register_ret, detach_ret;
};

/* Wants the ring's lock twice while the loop spins: register, then detach. */
static void *want_lock(void *arg)
{
	struct lock_probe *p = arg;
	struct io_uring_probe *probe = calloc(1, sizeof(*probe) + 256 * sizeof(probe->ops[0]));
	double t;

	usleep(300 * 1000);
	t = now_s();
	p->register_ret = syscall(__NR_io_uring_register, p->ring_fd, IORING_REGISTER_PROBE,
				  probe, 256) < 0 ? -errno : 0;
	p->register_s = now_s() - t;
	t = now_s();
	p->detach_ret = bpf_link__destroy(p->link);
	p->detach_s = now_s() - t;
	free(probe);
	return NULL;
}

/*
 * A program that never waits must not keep the ring's lock: another thread's
 * io_uring_register() and the detach get it between steps, and the loop
 * then ends with EFAULT.
 */
static int test_never_waits(void)
{
	struct iouring_bpf_ring r;
	struct review *skel = NULL;
	struct lock_probe p = { 0 };
	int ret, status = KSFT_FAIL;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	skel = review_load(&r);
	if (!skel || !(p.link = review_attach(skel, skel->maps.spin_ops)))
		goto out;
	p.ring_fd = r.fd;
	ret = run_bounded(&r, 60, want_lock, &p);
	if (!CHECK(ret == -EFAULT, "enter returned %d, want -EFAULT (detached)", ret) ||
	    !CHECK(p.detach_ret == 0, "bpf_link__destroy: %d", p.detach_ret) ||
	    !CHECK(p.register_s < 5 && p.detach_s < 5,
		   "io_uring_register waited %.1f s, detach %.1f s for the ring's lock",
		   p.register_s, p.detach_s) ||
	    !CHECK(skel->bss->spin_steps > 1, "program ran %llu steps",
		   (unsigned long long)skel->bss->spin_steps))
		goto out;
	printf("never-waiting program: register got the lock after %.3f s (ret %d), detach after %.3f s, %llu steps\n",
	       p.register_s, p.register_ret, p.detach_s,
	       (unsigned long long)skel->bss->spin_steps);
	status = KSFT_PASS;
out:
	review__destroy(skel);
	iouring_bpf_ring_exit(&r);
	return status;
}

#define GP_ROUNDS 9

/* ms one tracepoint detach takes: an RCU tasks-trace grace period */
static double tasks_trace_gp_ms(struct bpf_program *prog)
{
	struct bpf_link *link = bpf_program__attach(prog);
	double t;

	if (!link)
		return -1;
	t = now_s();
	bpf_link__destroy(link);
	return (now_s() - t) * 1e3;
}

struct gp_probe {
	struct review *skel;
	double ms[GP_ROUNDS];
	__u64 steps_before, steps_after;
	int failed;
};

/* While the loop spins: grace periods, then stop the program. */
static void *measure_gp(void *arg)
{
	struct gp_probe *g = arg;
	volatile __u64 *steps = &g->skel->bss->spin_steps;

	while (*steps < 1000)
		usleep(1000);
	g->steps_before = *steps;
	for (int i = 0; i < GP_ROUNDS && !g->failed; i++) {
		g->ms[i] = tasks_trace_gp_ms(g->skel->progs.gp_probe);
		g->failed = g->ms[i] < 0;
	}
	g->steps_after = *steps;
	g->skel->bss->spin_stop = 1;
	return NULL;
}

/*
 * A sleepable program runs inside an RCU tasks-trace read section, and the
 * loop keeps that section across a few steps (kernel patches 38 and 40).
 * Bounded as it is, a grace period waits at most a few steps for a loop that
 * never sleeps: synchronize_rcu_tasks_trace() takes no more than twice as
 * long while such a loop spins as when nothing runs, in the same boot.
 */
static int test_tasks_trace_latency(void)
{
	struct iouring_bpf_ring r;
	struct bpf_link *link = NULL;
	struct gp_probe g = { 0 };
	double idle[GP_ROUNDS], idle_ms, busy_ms;
	int ret, status = KSFT_FAIL;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	g.skel = review_load(&r);
	if (!g.skel || !CHECK_OK(review__load(g.skel), "load"))
		goto out;
	for (int i = 0; i < GP_ROUNDS; i++) {
		idle[i] = tasks_trace_gp_ms(g.skel->progs.gp_probe);
		if (!CHECK(idle[i] >= 0, "attach to sys_enter_getppid: %s", strerror(errno)))
			goto out;
	}
	idle_ms = bench_median(idle, GP_ROUNDS);
	link = bpf_map__attach_struct_ops(g.skel->maps.spin_ops);
	if (!CHECK(link, "attach spin_ops: %s", strerror(errno)))
		goto out;
	ret = run_bounded(&r, 60, measure_gp, &g);
	if (!CHECK(ret == 0, "enter returned %d, want 0 (the program stopped)", ret) ||
	    !CHECK(!g.failed, "attach to sys_enter_getppid while the loop spun: %s",
		   strerror(errno)) ||
	    !CHECK(g.steps_after > g.steps_before,
		   "the loop did not run while the grace periods were measured"))
		goto out;
	busy_ms = bench_median(g.ms, GP_ROUNDS);
	printf("synchronize_rcu_tasks_trace(), median of %d: %.2f ms idle, %.2f ms while the loop "
	       "spun (%.2fx, %llu steps meanwhile; TCG)\n", GP_ROUNDS, idle_ms, busy_ms,
	       busy_ms / idle_ms, (unsigned long long)(g.steps_after - g.steps_before));
	if (!CHECK(busy_ms <= 2 * idle_ms,
		   "a grace period took %.2f ms while the loop spun, more than twice the idle %.2f ms",
		   busy_ms, idle_ms))
		goto out;
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	review__destroy(g.skel);
	iouring_bpf_ring_exit(&r);
	return status;
}

struct pipe_writer {
	int fd;
	int delay_ms;
};

static void *write_later(void *arg)
{
	struct pipe_writer *w = arg;

	usleep(w->delay_ms * 1000);
	(void)!write(w->fd, "12345678", 8);
	return NULL;
}

/*
 * Timeouts too far away to express in ktime_t (relative ~0, absolute ~0 or
 * 2^63) mean "no timeout": the wait ends with the CQE, not at once.
 */
static int run_far_timeout(__u32 mode, const char *what)
{
	struct iouring_bpf_ring r;
	struct review *skel = NULL;
	struct bpf_link *link = NULL;
	struct pipe_writer w = { .delay_ms = 200 };
	static char buf[8];
	int fds[2] = { -1, -1 }, ret, status = KSFT_FAIL;
	double waited;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	if (!CHECK(pipe(fds) == 0, "pipe: %s", strerror(errno)))
		goto out;
	skel = review_load(&r);
	if (!skel)
		goto out;
	skel->rodata->far_mode = mode;
	skel->rodata->far_fd = fds[0];
	skel->rodata->far_buf = (uintptr_t)buf;
	link = review_attach(skel, skel->maps.far_ops);
	if (!link)
		goto out;
	w.fd = fds[1];
	ret = run_bounded(&r, 60, write_later, &w);
	struct review__bss *b = skel->bss;

	waited = (b->far_end_ns - b->far_start_ns) / 1e9;
	if (!CHECK(ret == 0 && b->exit_error == 0, "%s: enter %d, program error %d", what, ret,
		   b->exit_error) ||
	    !CHECK(!b->far_timed_out, "%s: the wait timed out after %.3f s", what, waited) ||
	    !CHECK(b->far_res_seen && b->far_res == 8, "%s: read CQE %s, res %d", what,
		   b->far_res_seen ? "seen" : "missing", b->far_res) ||
	    !CHECK(waited >= 0.15, "%s: the wait ended after %.3f s, before the data came", what,
		   waited))
		goto out;
	printf("%s: no timeout, the wait ended with the read's CQE after %.3f s\n", what, waited);
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	review__destroy(skel);
	if (fds[0] >= 0) {
		close(fds[0]);
		close(fds[1]);
	}
	iouring_bpf_ring_exit(&r);
	return status;
}

static int test_far_timeout(void)
{
	if (run_far_timeout(0, "relative timeout_ns ~0") != KSFT_PASS ||
	    run_far_timeout(1, "absolute timeout_ns ~0") != KSFT_PASS ||
	    run_far_timeout(2, "absolute timeout_ns 2^63") != KSFT_PASS)
		return KSFT_FAIL;
	return KSFT_PASS;
}

/* IOU_LOOP_WAIT_TIMED_OUT is output only: handed back as input, -EINVAL. */
static int test_output_flag_refused(void)
{
	struct iouring_bpf_ring r;
	struct review *skel = NULL;
	struct bpf_link *link = NULL;
	int ret, status = KSFT_FAIL;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	skel = review_load(&r);
	if (!skel || !(link = review_attach(skel, skel->maps.echo_ops)))
		goto out;
	ret = iouring_bpf_ring_run(&r);
	if (!CHECK(ret == -EINVAL, "enter returned %d, want -EINVAL for the output flag as input",
		   ret) ||
	    !CHECK(skel->bss->echo_steps == 1, "program ran %u steps, want 1",
		   skel->bss->echo_steps))
		goto out;
	printf("IOU_LOOP_WAIT_TIMED_OUT as an input flag: -EINVAL\n");
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	review__destroy(skel);
	iouring_bpf_ring_exit(&r);
	return status;
}

struct swapper {
	struct review *skel;
	struct bpf_link *first, *second;
	int destroy_ret;
	int rt;
};

static void pin_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/*
 * On the looping thread's CPU and at real-time priority, so the woken loop
 * cannot run between the detach and the new attach.
 */
static void *swap_programs(void *arg)
{
	struct swapper *s = arg;
	struct sched_param sp = { .sched_priority = 50 };

	pin_cpu0();
	s->rt = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
	usleep(300 * 1000);
	s->destroy_ret = bpf_link__destroy(s->first);
	s->second = bpf_map__attach_struct_ops(s->skel->maps.second_ops);
	return NULL;
}

/*
 * A program attached while the loop of another one slept must not be run
 * by that loop (with the other program's state): the loop ends with EFAULT.
 */
static int test_reattach_while_sleeping(void)
{
	struct iouring_bpf_ring r;
	struct swapper s = { 0 };
	int ret, status = KSFT_FAIL;

	pin_cpu0();
	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	s.skel = review_load(&r);
	if (!s.skel || !(s.first = review_attach(s.skel, s.skel->maps.first_ops)))
		goto out;
	ret = run_bounded(&r, 60, swap_programs, &s);
	if (!CHECK(s.rt, "could not make the swapping thread SCHED_FIFO") ||
	    !CHECK(s.destroy_ret == 0 && s.second, "detach %d, second attach %s", s.destroy_ret,
		   s.second ? "ok" : strerror(errno)) ||
	    !CHECK(ret == -EFAULT, "enter returned %d, want -EFAULT", ret) ||
	    !CHECK(s.skel->bss->second_steps == 0,
		   "the loop of the first program ran the second one %llu times",
		   (unsigned long long)s.skel->bss->second_steps))
		goto out;
	/* the second program runs in an enter of its own */
	ret = iouring_bpf_ring_run(&r);
	if (!CHECK(ret == 0 && s.skel->bss->second_steps == 1, "own enter: %d, %llu steps", ret,
		   (unsigned long long)s.skel->bss->second_steps))
		goto out;
	printf("program attached while another's loop slept: that loop returned EFAULT; the new one ran in its own enter\n");
	status = KSFT_PASS;
out:
	bpf_link__destroy(s.second);
	review__destroy(s.skel);
	iouring_bpf_ring_exit(&r);
	return status;
}

/* The ublk kfunc is for io_uring loops only, not for other struct_ops. */
static int test_kfunc_filter(void)
{
	static char log[64 * 1024];
	struct kfunc_filter *skel = kfunc_filter__open();
	const char *want = "calling kernel function bpf_ublk_get_io_desc is not allowed";
	int ret, status = KSFT_FAIL;

	if (!CHECK(skel, "open: %s", strerror(errno)))
		return KSFT_FAIL;
	log[0] = 0;
	bpf_program__set_log_buf(skel->progs.not_a_loop, log, sizeof(log));
	ret = kfunc_filter__load(skel);
	if (!CHECK(ret < 0, "a bpf_dummy_ops program calling bpf_ublk_get_io_desc loaded") ||
	    !CHECK(strstr(log, want), "verifier log lacks \"%s\"; log:\n%s", want, log))
		goto out;
	printf("bpf_dummy_ops program refused: \"%s\"\n", want);
	status = KSFT_PASS;
out:
	kfunc_filter__destroy(skel);
	return status;
}

static int write_str(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * failslab, limited to tasks that ask for it: GFP_ATOMIC allocations of the
 * calling thread fail while `on`, the allocation of an overflow CQE among
 * them.
 */
static int failslab_set(bool on)
{
	static const char dir[] = "/sys/kernel/debug/failslab";
	static const struct {
		const char *file, *on, *off;
	} knobs[] = {
		{ "task-filter", "Y", "N" },
		{ "ignore-gfp-wait", "Y", "Y" },
		{ "interval", "1", "1" },
		{ "times", "-1", "0" },
		{ "verbose", "0", "0" },
		{ "probability", "100", "0" },
	};
	char path[128];
	size_t i;
	int ret;

	if (access(dir, F_OK) && mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL) &&
	    errno != EBUSY) {
		fprintf(stderr, "mount debugfs: %s\n", strerror(errno));
		return -errno;
	}
	for (i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, knobs[i].file);
		ret = write_str(path, on ? knobs[i].on : knobs[i].off);
		if (ret) {
			fprintf(stderr, "%s: %s\n", path, strerror(-ret));
			return ret;
		}
	}
	return write_str("/proc/thread-self/make-it-fail", on ? "1" : "0");
}

/*
 * A CQE lost because its overflow entry could not be allocated: the loop
 * must report it once (-EBADR, as GETEVENTS does), not spin for good with
 * the lost-CQE bit set.
 */
static int test_cq_dropped(void)
{
	struct iouring_bpf_ring r;
	struct review *skel = NULL;
	struct bpf_link *link = NULL;
	int ret, status = KSFT_FAIL;
	unsigned int dropped;

	/* 4 SQEs, 4 CQEs: half of 8 NOPs need overflow entries */
	if (!CHECK_OK(iouring_bpf_ring_init(&r, 4, 4, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	skel = review_load(&r);
	if (!skel || !(link = review_attach(skel, skel->maps.flood_ops)))
		goto out;
	if (!CHECK_OK(failslab_set(true), "failslab on (CONFIG_FAILSLAB, debugfs)"))
		goto out;
	ret = run_bounded(&r, 30, NULL, NULL);
	failslab_set(false);
	dropped = *cq_word(&r, r.params.cq_off.overflow);
	if (!CHECK(skel->bss->flood_submitted == 8, "submitted %u NOPs",
		   skel->bss->flood_submitted) ||
	    !CHECK(dropped > 0, "no CQE was dropped: the overflow allocation did not fail") ||
	    !CHECK(ret == -EBADR, "enter returned %d, want -EBADR (%u CQEs dropped)", ret, dropped))
		goto out;
	/* reported once: the next enter runs the program normally */
	skel->bss->flood_phase = 1;
	ret = iouring_bpf_ring_run(&r);
	if (!CHECK(ret == 0, "enter after -EBADR: %d", ret) ||
	    !CHECK(skel->bss->flood_reaped + dropped == 8, "reaped %u + dropped %u of 8",
		   skel->bss->flood_reaped, dropped))
		goto out;
	printf("%u of 8 CQEs dropped: enter returned -EBADR once, then %u CQEs reaped normally\n",
	       dropped, skel->bss->flood_reaped);
	status = KSFT_PASS;
out:
	failslab_set(false);
	bpf_link__destroy(link);
	review__destroy(skel);
	iouring_bpf_ring_exit(&r);
	return status;
}

/*
 * A deadline that passes while the loop never gets to sleep (a full CQ with
 * overflow pending returns to the program every round) must still end the
 * wait with IOU_LOOP_WAIT_TIMED_OUT.
 */
static int test_timeout_overdue(void)
{
	struct iouring_bpf_ring r;
	struct review *skel = NULL;
	struct bpf_link *link = NULL;
	int ret, status = KSFT_FAIL;
	double after;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 4, 4, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	skel = review_load(&r);
	if (!skel || !(link = review_attach(skel, skel->maps.overdue_ops)))
		goto out;
	ret = run_bounded(&r, 60, NULL, NULL);
	struct review__bss *b = skel->bss;

	after = (b->overdue_seen_ns - b->overdue_start_ns) / 1e9;
	if (!CHECK(ret == 0 && b->exit_error == 0, "enter %d, program error %d", ret,
		   b->exit_error) ||
	    !CHECK(b->overdue_submitted == 8, "submitted %u NOPs", b->overdue_submitted) ||
	    !CHECK(b->overdue_timed_out, "no IOU_LOOP_WAIT_TIMED_OUT %.3f s after a 0.05 s deadline (%llu steps)",
		   after, (unsigned long long)b->overdue_steps) ||
	    !CHECK(after >= 0.05, "timed out after %.3f s, before the deadline", after))
		goto out;
	printf("deadline honoured with overflow pending: timed out after %.3f s, %llu steps\n", after,
	       (unsigned long long)b->overdue_steps);
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	review__destroy(skel);
	iouring_bpf_ring_exit(&r);
	return status;
}

/*
 * io-wq creates its workers from inside the program (IOSQE_ASYNC NOPs), and
 * the program runs with migration disabled. A worker must not inherit that:
 * it never runs the matching migrate_enable(), so the scheduler would later
 * move a task it believes pinned (a set_task_cpu WARNING, seen in fio runs).
 */
static int test_worker_from_program(void)
{
	struct iouring_bpf_ring r;
	struct review *skel = NULL;
	struct bpf_link *link = NULL, *iter = NULL;
	int ret, iter_fd = -1, status = KSFT_FAIL, workers = 0, bad = 0;
	char buf[4096];
	ssize_t len = 0, n;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 16, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	skel = review_load(&r);
	if (!skel || !(link = review_attach(skel, skel->maps.async_ops)))
		goto out;
	ret = run_bounded(&r, 30, NULL, NULL);
	if (!CHECK(ret == 0 && skel->bss->exit_error == 0, "enter %d, program error %d", ret,
		   skel->bss->exit_error) ||
	    !CHECK(skel->bss->async_reaped == 4 && skel->bss->async_bad_res == 0,
		   "reaped %u of 4 async NOPs (a result %d)", skel->bss->async_reaped,
		   skel->bss->async_bad_res))
		goto out;
	/* let the workers go idle: a running one could be inside a program */
	usleep(100 * 1000);
	iter = bpf_program__attach_iter(skel->progs.worker_state, NULL);
	if (!CHECK(iter, "attach the task iterator: %s", strerror(errno)))
		goto out;
	iter_fd = bpf_iter_create(bpf_link__fd(iter));
	if (!CHECK(iter_fd >= 0, "bpf_iter_create: %s", strerror(errno)))
		goto out;
	while (len < (ssize_t)sizeof(buf) - 1 &&
	       (n = read(iter_fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	buf[len] = 0;
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		int tid, own_mask;
		unsigned int disabled;

		if (sscanf(line, "%d %u %d", &tid, &disabled, &own_mask) != 3)
			continue;
		workers++;
		printf("io-wq worker %d: migration_disabled %u, %s CPU mask\n", tid, disabled,
		       own_mask ? "own" : "a borrowed one-CPU");
		if (disabled || !own_mask)
			bad++;
	}
	if (!CHECK(workers > 0, "no io-wq worker found: the IOSQE_ASYNC NOPs did not reach io-wq") ||
	    !CHECK(bad == 0, "%d of %d workers inherited the program's migrate_disable()", bad,
		   workers))
		goto out;
	status = KSFT_PASS;
out:
	if (iter_fd >= 0)
		close(iter_fd);
	bpf_link__destroy(iter);
	bpf_link__destroy(link);
	review__destroy(skel);
	iouring_bpf_ring_exit(&r);
	return status;
}

/* voluntary context switches of the calling thread, or -1 */
static long voluntary_switches(void)
{
	char line[128];
	long n = -1;
	FILE *f = fopen("/proc/thread-self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

#define STRAY_ROUNDS 100

struct stray_probe {
	struct review *skel;
	int done_fd;
	int attached;
};

/* Attach and detach a program STRAY_ROUNDS times, then wake the submitter. */
static void *attach_detach_rounds(void *arg)
{
	struct stray_probe *p = arg;

	for (int i = 0; i < STRAY_ROUNDS; i++) {
		struct bpf_link *link = bpf_map__attach_struct_ops(p->skel->maps.echo_ops);

		if (!link)
			break;
		p->attached++;
		bpf_link__destroy(link);
	}
	if (write(p->done_fd, "x", 1) != 1)
		perror("write");
	return NULL;
}

/*
 * Detach wakes the submitter only when its loop sleeps. The submitter here
 * sleeps somewhere else entirely (a pipe read) while another thread
 * attaches and detaches 100 times; a stray wake-up per detach shows up as a
 * voluntary context switch (the read wakes, finds no data, sleeps); about
 * half of them land while the reader is still asleep, well above 25.
 */
static int test_detach_no_stray_wakeup(void)
{
	struct iouring_bpf_ring r;
	struct stray_probe p = { 0 };
	int pipefd[2] = { -1, -1 }, status = KSFT_FAIL;
	long before, after;
	pthread_t t;
	char c;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	p.skel = review_load(&r);
	if (!p.skel || !CHECK_OK(review__load(p.skel), "load") ||
	    !CHECK(pipe(pipefd) == 0, "pipe: %s", strerror(errno)))
		goto out;
	p.done_fd = pipefd[1];
	signal(SIGALRM, on_alarm);
	alarm(60);
	before = voluntary_switches();
	pthread_create(&t, NULL, attach_detach_rounds, &p);
	if (read(pipefd[0], &c, 1) != 1)
		perror("read");
	after = voluntary_switches();
	pthread_join(t, NULL);
	alarm(0);
	if (!CHECK(before >= 0 && after >= 0, "no voluntary_ctxt_switches in /proc/thread-self/status") ||
	    !CHECK(p.attached == STRAY_ROUNDS, "only %d of %d attaches worked", p.attached,
		   STRAY_ROUNDS) ||
	    !CHECK(after - before < STRAY_ROUNDS / 4,
		   "the submitter woke %ld times in a pipe read during %d detaches",
		   after - before, STRAY_ROUNDS))
		goto out;
	printf("%d attach/detach rounds, the submitter (in a pipe read) switched %ld times\n",
	       STRAY_ROUNDS, after - before);
	status = KSFT_PASS;
out:
	if (pipefd[0] >= 0) {
		close(pipefd[0]);
		close(pipefd[1]);
	}
	review__destroy(p.skel);
	iouring_bpf_ring_exit(&r);
	return status;
}

/* selftests/waitloop/direct.bpf.c, loaded for @r, @total steps a run */
static struct direct *direct_load(struct iouring_bpf_ring *r, __u32 total)
{
	struct direct *skel = direct__open();

	if (!CHECK(skel, "direct__open: %s", strerror(errno)))
		return NULL;
	skel->rodata->iou_geom = r->geom;
	skel->rodata->step_total = total;
	skel->struct_ops.counted_ops->ring_fd = r->fd;
	if (!CHECK_OK(direct__load(skel), "load direct.bpf.o")) {
		direct__destroy(skel);
		return NULL;
	}
	return skel;
}

static int prog_stats(struct bpf_program *prog, __u64 *run_cnt, __u64 *run_time_ns)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (bpf_prog_get_info_by_fd(bpf_program__fd(prog), &info, &len))
		return -errno;
	*run_cnt = info.run_cnt;
	*run_time_ns = info.run_time_ns;
	return 0;
}

/*
 * The loop runs a sleepable program itself, not through its trampoline;
 * what the trampoline did for each call must still happen. BPF statistics
 * count every step while on and nothing while off, and a hash map, whose
 * elements a sleepable program reaches under RCU tasks-trace, counts every
 * step too.
 */
static int test_direct_stats(void)
{
	const __u32 total = 1000;
	struct iouring_bpf_ring r;
	struct direct *skel = NULL;
	struct bpf_link *link = NULL;
	__u64 cnt0, ns0, cnt1, ns1, cnt2, ns2, sum = 0;
	int stats_fd = -1, status = KSFT_FAIL, map_fd;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	skel = direct_load(&r, total);
	if (!skel)
		goto out;
	link = bpf_map__attach_struct_ops(skel->maps.counted_ops);
	if (!CHECK(link, "attach counted_ops: %s", strerror(errno)))
		goto out;
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (!CHECK(stats_fd >= 0, "BPF_ENABLE_STATS: %s", strerror(errno)) ||
	    !CHECK_OK(prog_stats(skel->progs.counted, &cnt0, &ns0), "prog info") ||
	    !CHECK_OK(iouring_bpf_ring_run(&r), "run with statistics on") ||
	    !CHECK_OK(prog_stats(skel->progs.counted, &cnt1, &ns1), "prog info"))
		goto out;
	close(stats_fd);
	stats_fd = -1;
	if (!CHECK(skel->bss->sleepable_steps == total, "first run took %llu steps, want %u",
		   (unsigned long long)skel->bss->sleepable_steps, total))
		goto out;
	skel->bss->sleepable_steps = 0;
	if (!CHECK_OK(iouring_bpf_ring_run(&r), "run with statistics off") ||
	    !CHECK_OK(prog_stats(skel->progs.counted, &cnt2, &ns2), "prog info"))
		goto out;
	map_fd = bpf_map__fd(skel->maps.step_counts);
	for (__u32 key = 0; key < 64; key++) {
		__u64 v = 0;

		if (!bpf_map_lookup_elem(map_fd, &key, &v))
			sum += v;
	}
	if (!CHECK(cnt1 - cnt0 == total, "statistics on: run_cnt grew by %llu in %u steps",
		   (unsigned long long)(cnt1 - cnt0), total) ||
	    !CHECK(ns1 > ns0, "statistics on: run_time_ns stayed at %llu",
		   (unsigned long long)ns1) ||
	    !CHECK(cnt2 == cnt1 && ns2 == ns1,
		   "statistics off: run_cnt grew by %llu, run_time_ns by %llu",
		   (unsigned long long)(cnt2 - cnt1), (unsigned long long)(ns2 - ns1)) ||
	    !CHECK(skel->bss->sleepable_steps == total, "second run took %llu steps, want %u",
		   (unsigned long long)skel->bss->sleepable_steps, total) ||
	    !CHECK(!skel->bss->map_misses && sum == 2 * total,
		   "hash map counted %llu steps of %u (%llu updates failed)",
		   (unsigned long long)sum, 2 * total,
		   (unsigned long long)skel->bss->map_misses))
		goto out;
	printf("%u steps with statistics on: run_cnt +%llu, run_time_ns +%llu; off: +0; hash map %llu\n",
	       total, (unsigned long long)(cnt1 - cnt0), (unsigned long long)(ns1 - ns0),
	       (unsigned long long)sum);
	status = KSFT_PASS;
out:
	if (stats_fd >= 0)
		close(stats_fd);
	bpf_link__destroy(link);
	direct__destroy(skel);
	iouring_bpf_ring_exit(&r);
	return status;
}

/*
 * A program without BPF_F_SLEEPABLE still runs, through its trampoline: the
 * empty step nop_chain measures that way (examples/nop_chain).
 */
static int test_non_sleepable_step(void)
{
	const __u32 total = 1000;
	struct iouring_bpf_ring r;
	struct step_trampoline *skel = NULL;
	struct bpf_link *link = NULL;
	int ret, status = KSFT_FAIL;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	skel = step_trampoline__open();
	if (!CHECK(skel, "step_trampoline__open: %s", strerror(errno)))
		goto out;
	skel->rodata->step_total = total;
	skel->struct_ops.trampoline_ops->ring_fd = r.fd;
	if (!CHECK_OK(step_trampoline__load(skel), "load step_trampoline.bpf.o") ||
	    !CHECK(!(bpf_program__flags(skel->progs.trampoline_step) & BPF_F_SLEEPABLE),
		   "trampoline_step was loaded sleepable"))
		goto out;
	link = bpf_map__attach_struct_ops(skel->maps.trampoline_ops);
	if (!CHECK(link, "attach trampoline_ops: %s", strerror(errno)))
		goto out;
	ret = iouring_bpf_ring_run(&r);
	if (!CHECK(ret == 0, "run: %d", ret) ||
	    !CHECK(skel->bss->steps == total, "took %llu steps, want %u",
		   (unsigned long long)skel->bss->steps, total))
		goto out;
	printf("non-sleepable loop_step: %u steps\n", total);
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	step_trampoline__destroy(skel);
	iouring_bpf_ring_exit(&r);
	return status;
}

static const struct {
	const char *name;
	int (*fn)(void);
} tests[] = {
	{ "attach-detach", test_attach_detach },
	{ "nop-loop", test_nops },
	{ "copy", test_copy },
	{ "refuse-no-defer-taskrun", test_refuse_no_defer },
	{ "refuse-sqpoll", test_refuse_sqpoll },
	{ "refuse-iopoll", test_refuse_iopoll },
	{ "refuse-second-program", test_refuse_second },
	{ "refuse-non-submitter", test_refuse_thread },
	{ "ring-closed-attached", test_ring_closed },
	{ "detach-while-sleeping", test_detach_sleeping },
	{ "signal-eintr", test_signal },
	{ "cq-overflow", test_cq_overflow },
	{ "timeout", test_timeout },
	{ "param-region", test_param_region },
	{ "sq-rewind", test_sq_rewind },
	{ "verifier-write-ctx", test_verifier_write_ctx },
	{ "verifier-read-ctx", test_verifier_read_ctx },
	{ "verifier-write-readonly-param", test_verifier_write_step },
	{ "verifier-region-past-size", test_verifier_region_past_size },
	{ "verifier-region-nonconst-size", test_verifier_region_nonconst },
	{ "mainline-only", test_mainline_only },
	{ "mainline-7.2-ctx", test_mainline72 },
	{ "printk", test_printk },
	{ "never-waits-lock", test_never_waits },
	{ "timeout-far", test_far_timeout },
	{ "timeout-output-flag", test_output_flag_refused },
	{ "reattach-while-sleeping", test_reattach_while_sleeping },
	{ "kfunc-filter", test_kfunc_filter },
	{ "cq-dropped", test_cq_dropped },
	{ "timeout-overdue", test_timeout_overdue },
	{ "worker-from-program", test_worker_from_program },
	{ "detach-no-stray-wakeup", test_detach_no_stray_wakeup },
	{ "direct-stats", test_direct_stats },
	{ "non-sleepable-step", test_non_sleepable_step },
	{ "tasks-trace-latency", test_tasks_trace_latency },
};

/* Quiet libbpf unless a test fails; the verifier tests expect errors. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG || getenv("WAITLOOP_QUIET_LIBBPF"))
		return 0;
	return vfprintf(stderr, fmt, args);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
			printf("%s\n", tests[i].name);
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: %s TEST | --list\n", argv[0]);
		return KSFT_FAIL;
	}
	libbpf_set_print(libbpf_print);
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!strcmp(argv[1], tests[i].name))
			return tests[i].fn();
	fprintf(stderr, "unknown test %s\n", argv[1]);
	return KSFT_FAIL;
}
