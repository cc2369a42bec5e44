// SPDX-License-Identifier: GPL-2.0
/*
 * The waitloop tests of attaching and detaching: a program attached,
 * detached and attached again; the rings and callers the kernel refuses;
 * a ring closed, or a link destroyed or replaced, while the loop runs.
 */
#define _GNU_SOURCE
#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "waitloop.h"
#include "waitloop.skel.h"
#include "review.skel.h"

int test_attach_detach(void)
{
	struct fixture f;
	struct bpf_link *link = NULL;
	int ret, status = KSFT_FAIL;

	if (fixture_open(&f, 8, 0, LOOP_FLAGS) ||
	    !(link = load_and_attach(f.skel->skeleton, f.skel->maps.stop_ops)))
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

int test_refuse_no_defer(void)
{
	return expect_refusal(IORING_SETUP_NO_SQARRAY | IORING_SETUP_SQ_REWIND, EOPNOTSUPP,
			      "ring without DEFER_TASKRUN");
}

int test_refuse_sqpoll(void)
{
	return expect_refusal(IORING_SETUP_SQPOLL | IORING_SETUP_NO_SQARRAY, EOPNOTSUPP,
			      "SQPOLL ring");
}

int test_refuse_iopoll(void)
{
	return expect_refusal(LOOP_FLAGS | IORING_SETUP_IOPOLL, EOPNOTSUPP, "IOPOLL ring");
}

int test_refuse_second(void)
{
	struct fixture f;
	struct iouring_bpf_ring other = { .fd = -1 };
	struct bpf_link *first = NULL, *second = NULL;
	int first_dup = -1, status = KSFT_FAIL;

	if (fixture_open(&f, 8, 0, LOOP_FLAGS) ||
	    !(first = load_and_attach(f.skel->skeleton, f.skel->maps.stop_ops)))
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

int test_refuse_thread(void)
{
	struct fixture f;
	struct bpf_link *link = NULL;
	pthread_t t;
	void *res;
	int status = KSFT_FAIL;

	if (fixture_open(&f, 8, 0, LOOP_FLAGS) ||
	    !(link = load_and_attach(f.skel->skeleton, f.skel->maps.stop_ops)))
		goto out;
	if (!CHECK(pthread_create(&t, NULL, enter_thread, &f.r) == 0, "pthread_create failed"))
		goto out;
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

int test_ring_closed(void)
{
	struct fixture f;
	struct bpf_link *old_link = NULL, *new_link = NULL;
	struct iouring_bpf_ring fresh = { .fd = -1 };
	int ret, tries, status = KSFT_FAIL;

	if (fixture_open(&f, 8, 0, LOOP_FLAGS) ||
	    !(old_link = load_and_attach(f.skel->skeleton, f.skel->maps.stop_ops)))
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

static void *destroy_later(void *arg)
{
	struct delayed *d = arg;

	usleep(d->delay_ms * 1000);
	d->destroy_ret = bpf_link__destroy(d->link);
	return NULL;
}

int test_detach_sleeping(void)
{
	struct fixture f;
	struct delayed d = { .delay_ms = 300 };
	int ret, status = KSFT_FAIL;

	if (fixture_open(&f, 8, 0, LOOP_FLAGS))
		goto out;
	f.skel->rodata->sleep_mode = 0;
	d.link = load_and_attach(f.skel->skeleton, f.skel->maps.sleeper_ops);
	if (!d.link)
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
int test_reattach_while_sleeping(void)
{
	struct iouring_bpf_ring r;
	struct swapper s = { 0 };
	int ret, status = KSFT_FAIL;

	pin_cpu0();
	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	s.skel = review_load(&r);
	if (!s.skel || !(s.first = load_and_attach(s.skel->skeleton, s.skel->maps.first_ops)))
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
int test_detach_no_stray_wakeup(void)
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
	if (!CHECK(pthread_create(&t, NULL, attach_detach_rounds, &p) == 0, "pthread_create failed")) {
		alarm(0);
		goto out;
	}
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
