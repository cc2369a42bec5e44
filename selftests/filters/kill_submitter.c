// SPDX-License-Identifier: GPL-2.0
/*
 * filters/ test of a submitter killed while its one io_uring_enter() runs
 * thousands of NOPs through a full chain of filters (kill-submitter).
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "filters.h"

#define KILL_WITHIN_MS	2000	/* the fix stops within one SQE's chain */
#define UNFIXED_MS	12000	/* the killed submission's length without it (< RCU stall 21 s) */

struct submitter {
	struct io_uring ring;
	unsigned int n;
	int fd;
	pthread_t th;
};

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* a ring of @n entries with the whole cap on NOP, and @n NOPs queued */
static int capped_ring(struct io_uring *ring, unsigned int n)
{
	int ret = io_uring_queue_init(n, ring, 0);

	if (!ret)
		ret = add_full(ring->ring_fd, 7);
	if (!ret)
		ret = add_long(ring->ring_fd, LAST_FIT);
	for (unsigned int i = 0; !ret && i < n; i++)
		io_uring_prep_nop(io_uring_get_sqe(ring));
	return ret;
}

static void *submit_all(void *arg)
{
	struct submitter *s = arg;

	if (write(s->fd, "r", 1) != 1)
		return NULL;
	io_uring_submit(&s->ring);	/* one io_uring_enter() for all n */
	(void)!write(s->fd, "d", 1);	/* only if the kill came late */
	return NULL;
}

static int kill_child(int fd)
{
	static struct submitter s[1];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct io_uring_cqe *cqe;
	unsigned int n, k;
	int64_t t, c;
	char ch;

	/*
	 * The cost of one SQE through the full chain, from the second batch
	 * of 256: the first pays for translating the filters' code once,
	 * which under emulation (TCG) costs more than running it.
	 */
	if (capped_ring(&s[0].ring, 256) || io_uring_submit(&s[0].ring) != 256 ||
	    io_uring_wait_cqes(&s[0].ring, &cqe, 256, NULL, NULL))
		return KSFT_FAIL;
	io_uring_cq_advance(&s[0].ring, 256);
	for (unsigned int i = 0; i < 256; i++)
		io_uring_prep_nop(io_uring_get_sqe(&s[0].ring));
	t = now_us();
	if (io_uring_submit(&s[0].ring) != 256)
		return KSFT_FAIL;
	c = (now_us() - t) / 256 + 1;
	io_uring_queue_exit(&s[0].ring);
	/*
	 * One submitter: a kernel without preemption (as the test kernels
	 * are) gives a CPU in a long submission to nobody else, so more
	 * submitters than CPUs would keep the parent from sending the kill.
	 * One ring of n SQEs takes about UNFIXED_MS without the check.
	 */
	n = UNFIXED_MS * 1000LL / c < 32768 ? UNFIXED_MS * 1000LL / c : 32768;
	k = 1;
	fprintf(stderr, "%lld us per SQE: %u SQEs (%lld ms) on %ld CPUs\n", (long long)c, n,
		(long long)(n * c / 1000), ncpu);
	if (n * c < 3 * KILL_WITHIN_MS * 1000LL)
		return KSFT_SKIP;	/* too fast a machine to tell */
	for (unsigned int i = 0; i < k; i++) {
		s[i].n = n;
		s[i].fd = fd;
		if (capped_ring(&s[i].ring, n))
			return KSFT_FAIL;
	}
	ch = (char)k;
	if (write(fd, &ch, 1) != 1)
		return KSFT_FAIL;
	for (unsigned int i = 0; i < k; i++)
		pthread_create(&s[i].th, NULL, submit_all, &s[i]);
	pthread_join(s[0].th, NULL);
	return KSFT_FAIL;	/* the parent kills us before any submission ends */
}

/*
 * kill-submitter: a submitter SIGKILLed in one io_uring_enter() of about 12 s of NOPs
 * through a full chain of filters exits within 2 s (KILL_WITHIN_MS): the
 * submission stops at the signal.
 */
int test_kill_submitter(void)
{
	int p[2], pidfd, status, k = 0, ready = 0;
	struct pollfd pfd;
	int64_t t0, ms;
	char ch;
	pid_t pid;

	if (pipe(p))
		return KSFT_FAIL;
	pid = fork();
	if (!pid) {
		close(p[0]);
		_exit(kill_child(p[1]));
	}
	close(p[1]);
	pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (!CHECK(pid > 0 && pidfd >= 0, "fork/pidfd_open"))
		return KSFT_FAIL;
	/* k threads, then an "r" from each as it enters io_uring_enter() */
	if (read(p[0], &ch, 1) == 1)
		k = ch;
	while (ready < k && read(p[0], &ch, 1) == 1 && ch == 'r')
		ready++;
	if (!k) {			/* setup failed, or skipped: its verdict */
		waitpid(pid, &status, 0);
		return WIFEXITED(status) ? WEXITSTATUS(status) : KSFT_FAIL;
	}
	if (!CHECK(ready == k, "%d of %d threads entered before one finished", ready, k)) {
		kill(pid, SIGKILL);
		return KSFT_FAIL;
	}
	usleep(300 * 1000);		/* all of them deep in their chains */
	pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
	if (!CHECK(poll(&pfd, 1, 0) == 0, "a submission ended before the kill: "
		   "the calibration is off"))
		return KSFT_FAIL;
	t0 = now_us();
	kill(pid, SIGKILL);
	pfd = (struct pollfd){ .fd = pidfd, .events = POLLIN };
	poll(&pfd, 1, KILL_WITHIN_MS + 1000);
	ms = (now_us() - t0) / 1000;
	if (!CHECK(pfd.revents & POLLIN && ms <= KILL_WITHIN_MS,
		   "killed submitter still running after %lld ms (limit %d ms)",
		   (long long)ms, KILL_WITHIN_MS))
		return KSFT_FAIL;	/* it ends by itself within UNFIXED_MS */
	fprintf(stderr, "exited %lld ms after SIGKILL\n", (long long)ms);
	return CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) &&
		     WTERMSIG(status) == SIGKILL, "status %#x", status) ? KSFT_PASS : KSFT_FAIL;
}
