// SPDX-License-Identifier: GPL-2.0
/*
 * The waitloop tests of how the loop's waits end: a signal, a relative or
 * absolute timeout, a timeout too far away to be one, a deadline overdue
 * while the loop never sleeps; and a program that never waits, which must
 * not keep the ring's lock.
 */
#define _GNU_SOURCE
#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "waitloop.h"
#include "waitloop.skel.h"
#include "review.skel.h"

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

int test_signal(void)
{
	struct fixture f;
	struct bpf_link *link = NULL;
	struct delayed d = { .delay_ms = 300, .target = pthread_self() };
	struct sigaction sa = { .sa_handler = on_usr1 };	/* no SA_RESTART */
	int ret, status = KSFT_FAIL;

	if (fixture_open(&f, 8, 0, LOOP_FLAGS) ||
	    !(link = load_and_attach(f.skel->skeleton, f.skel->maps.sleeper_ops)))
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

static int run_timeout(__u32 mode, const char *what)
{
	struct fixture f;
	struct bpf_link *link = NULL;
	int ret, status = KSFT_FAIL;

	if (fixture_open(&f, 8, 0, LOOP_FLAGS))
		goto out;
	f.skel->rodata->sleep_mode = mode;
	f.skel->rodata->sleep_timeout_ns = 20 * 1000 * 1000;
	link = load_and_attach(f.skel->skeleton, f.skel->maps.sleeper_ops);
	if (!link)
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

int test_timeout(void)
{
	if (run_timeout(1, "relative"))
		return KSFT_FAIL;
	return run_timeout(2, "absolute");
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
int test_never_waits(void)
{
	struct iouring_bpf_ring r;
	struct review *skel = NULL;
	struct lock_probe p = { 0 };
	int ret, status = KSFT_FAIL;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	skel = review_load(&r);
	if (!skel || !(p.link = load_and_attach(skel->skeleton, skel->maps.spin_ops)))
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
	link = load_and_attach(skel->skeleton, skel->maps.far_ops);
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

int test_far_timeout(void)
{
	if (run_far_timeout(0, "relative timeout_ns ~0") != KSFT_PASS ||
	    run_far_timeout(1, "absolute timeout_ns ~0") != KSFT_PASS ||
	    run_far_timeout(2, "absolute timeout_ns 2^63") != KSFT_PASS)
		return KSFT_FAIL;
	return KSFT_PASS;
}

/* IOU_LOOP_WAIT_TIMED_OUT is output only: handed back as input, -EINVAL. */
int test_output_flag_refused(void)
{
	struct iouring_bpf_ring r;
	struct review *skel = NULL;
	struct bpf_link *link = NULL;
	int ret, status = KSFT_FAIL;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	skel = review_load(&r);
	if (!skel || !(link = load_and_attach(skel->skeleton, skel->maps.echo_ops)))
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

/*
 * A deadline that passes while the loop never gets to sleep (a full CQ with
 * overflow pending returns to the program every round) must still end the
 * wait with IOU_LOOP_WAIT_TIMED_OUT.
 */
int test_timeout_overdue(void)
{
	struct iouring_bpf_ring r;
	struct review *skel = NULL;
	struct bpf_link *link = NULL;
	int ret, status = KSFT_FAIL;
	double after;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 4, 4, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	skel = review_load(&r);
	if (!skel || !(link = load_and_attach(skel->skeleton, skel->maps.overdue_ops)))
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
