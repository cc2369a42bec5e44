// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring/found-drain: a request with IOSQE_IO_DRAIN never completed when
 * a link submitted after it failed at submission (fuzz/vblk found it with
 * passthrough commands that fail at prep). NOPs only; each case must give
 * every CQE within 2 s, and the drained request's CQE after those of every
 * request submitted before it. Patch "io_uring: let a link that failed at
 * submission wait behind an active drain".
 */
#include <errno.h>
#include <liburing.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

#define BAD	0x100	/* NOP with an unknown nop_flags bit: -EINVAL at prep */
#define TMO	0x200	/* 200 ms IORING_OP_TIMEOUT instead of a NOP */
#define SPLIT	0x400	/* submit everything before this SQE first */

struct step { unsigned int flags; };	/* low byte: IOSQE_* flags */

static int run(const char *name, unsigned int ring_flags, const struct step *s, int n)
{
	struct __kernel_timespec tmo = { .tv_nsec = 200 * 1000 * 1000 };
	struct io_uring ring;
	bool seen[16] = { false };
	int ret, got = 0, stalled = 0, order[16];

	ret = io_uring_queue_init(16, &ring, ring_flags);
	if (ret) {
		fprintf(stderr, "%s: queue_init(%#x): %s\n", name, ring_flags, strerror(-ret));
		return 0;
	}
	for (int i = 0; i < n; i++) {
		struct io_uring_sqe *sqe;

		if (s[i].flags & SPLIT)
			io_uring_submit(&ring);
		sqe = io_uring_get_sqe(&ring);
		if (s[i].flags & TMO)
			io_uring_prep_timeout(sqe, &tmo, 0, 0);
		else
			io_uring_prep_nop(sqe);
		if (s[i].flags & BAD)
			sqe->rw_flags = (int)0x80000000u; /* nop_flags */
		sqe->flags = s[i].flags & 0xff;
		sqe->user_data = i;
	}
	/* an SQE failing at submission ends that io_uring_enter(): go on */
	while (io_uring_sq_ready(&ring) && io_uring_submit(&ring) > 0)
		;
	double deadline = now() + 2;

	while (got < n) {
		struct __kernel_timespec ts = { .tv_sec = 1 };
		struct io_uring_cqe *cqe;

		ret = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
		/* an IOPOLL ring's wait may return -ETIME early */
		if (ret == -EINTR || (ret == -ETIME && now() < deadline))
			continue;
		if (ret)
			break;
		printf("  %s: cqe user_data=%llu res=%d\n", name,
		       (unsigned long long)cqe->user_data, cqe->res);
		if (cqe->user_data < 16) {
			seen[cqe->user_data] = true;
			order[got] = (int)cqe->user_data;
		}
		io_uring_cqe_seen(&ring, cqe);
		got++;
	}
	if (got < n) {
		stalled = 1;
		printf("%s: STALL, %d of %d CQEs after 2 s; missing:", name, got, n);
		for (int i = 0; i < n; i++)
			if (!seen[i])
				printf(" %d", i);
		printf("\n");
	} else {
		/* a drained request completes after everything submitted before it */
		for (int i = 0; i < n && !stalled; i++) {
			int d = order[i];

			if (!(s[d].flags & IOSQE_IO_DRAIN))
				continue;
			for (int j = i + 1; j < n; j++)
				if (order[j] < d) {
					printf("%s: FAIL: drained %d completed before %d\n",
					       name, d, order[j]);
					stalled = 1;
					break;
				}
		}
		if (!stalled)
			printf("%s: ok\n", name);
	}
	io_uring_queue_exit(&ring);
	return stalled;
}

int main(void)
{
	/* control: all valid */
	static const struct step ctl[] = { {0}, {IOSQE_IO_DRAIN}, {0} };
	/* minimal: NOP, NOP|DRAIN, failing NOP */
	static const struct step min[] = { {0}, {IOSQE_IO_DRAIN}, {BAD} };
	/* failed link after the drained request (fuzz case shape) */
	static const struct step lnk[] = { {0}, {IOSQE_IO_DRAIN}, {IOSQE_IO_LINK}, {BAD} };
	/* fuzz case 1 shape: drain in the middle of a failing link, then DRAIN */
	static const struct step fz1[] = {
		{BAD}, {IOSQE_IO_LINK}, {IOSQE_IO_DRAIN | IOSQE_IO_LINK},
		{BAD | IOSQE_IO_LINK | IOSQE_ASYNC}, {IOSQE_IO_DRAIN | IOSQE_ASYNC},
		{IOSQE_IO_DRAIN}, {IOSQE_IO_DRAIN | IOSQE_IO_LINK},
		{BAD | IOSQE_IO_LINK}, {BAD} };
	/* fuzz case 2 shape (replay 0x4e7624c1aa2c3452, IOPOLL ring) */
	static const struct step fz2[] = {
		{IOSQE_IO_DRAIN | IOSQE_IO_LINK | IOSQE_ASYNC}, {IOSQE_ASYNC},
		{IOSQE_IO_HARDLINK}, {IOSQE_IO_DRAIN | IOSQE_ASYNC},
		{IOSQE_IO_DRAIN | IOSQE_IO_HARDLINK | IOSQE_ASYNC}, {IOSQE_IO_LINK},
		{BAD | IOSQE_IO_LINK | IOSQE_IO_HARDLINK | IOSQE_ASYNC},
		{IOSQE_IO_DRAIN | IOSQE_IO_LINK | IOSQE_IO_HARDLINK | IOSQE_ASYNC},
		{BAD | IOSQE_ASYNC} };
	/* the earlier request is really in flight; the bad SQE in a later enter */
	static const struct step tmo[] = { {TMO}, {IOSQE_IO_DRAIN}, {BAD | SPLIT} };
	int bad = 0;

	bad += run("control", 0, ctl, 3);
	bad += run("nop-drain-badnop", 0, min, 3);
	bad += run("nop-drain-badnop/iopoll", IORING_SETUP_IOPOLL, min, 3);
	bad += run("nop-drain-badnop/defer_taskrun",
		   IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, min, 3);
	bad += run("nop-drain-failedlink", 0, lnk, 4);
	bad += run("fuzz-case1-shape", 0, fz1, 9);
	bad += run("fuzz-case2-shape/iopoll", IORING_SETUP_IOPOLL, fz2, 9);
	/* the timeout is in flight when the bad SQE comes: order 0, 1, 2 */
	bad += run("timeout-drain-then-badnop", 0, tmo, 3);
	printf("%d case(s) failed\n", bad);
	return bad ? 1 : 0;
}
