// SPDX-License-Identifier: GPL-2.0
/*
 * A process that owns a ring, for the loader tests: prints "PID:FD" and
 * then obeys commands on stdin, one per line:
 *
 *   enter   io_uring_enter(GETEVENTS): runs an attached policy to its end;
 *           prints "enter RET cq N" (N: CQEs left in the CQ ring)
 *   nop     submit a NOP (user_data 42) the ordinary way and wait for it;
 *           prints "nop RET res R user_data U"
 *   quit    exit (so does end of input)
 *
 * usage: ring_owner [loop|no-defer|sqpoll|iopoll|cqe32|sqe128|liburing]
 *
 * liburing: a plain liburing ring (io_uring_queue_init_params() with
 * SINGLE_ISSUER and DEFER_TASKRUN: an SQ array, no SQ_REWIND), as most
 * programs have; cqe32, sqe128: the loop's flags plus 32-byte CQEs or
 * 128-byte SQEs.
 */
#include <errno.h>
#include <liburing-bpf.h>
#include <liburing.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static unsigned int cq_ready(struct iouring_bpf_ring *r)
{
	char *m = r->ring_mem;

	return __atomic_load_n((unsigned int *)(m + r->params.cq_off.tail), __ATOMIC_ACQUIRE) -
	       *(unsigned int *)(m + r->params.cq_off.head);
}

/* The same commands on a ring liburing set up and drives. */
static int liburing_owner(void)
{
	struct io_uring_params p = { .flags = IORING_SETUP_SINGLE_ISSUER |
					      IORING_SETUP_DEFER_TASKRUN };
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	char line[64];
	int ret;

	ret = io_uring_queue_init_params(16, &ring, &p);
	if (ret) {
		fprintf(stderr, "ring_owner: io_uring_queue_init_params: %s\n", strerror(-ret));
		return 1;
	}
	printf("%d:%d\n", getpid(), ring.ring_fd);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "enter", 5)) {
			ret = io_uring_get_events(&ring);
			printf("enter %d cq %u\n", ret, io_uring_cq_ready(&ring));
		} else if (!strncmp(line, "nop", 3)) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

			io_uring_prep_nop(sqe);
			sqe->user_data = 42;
			ret = io_uring_submit_and_wait(&ring, 1);
			if (io_uring_peek_cqe(&ring, &cqe)) {
				printf("nop %d no-cqe\n", ret);
			} else {
				printf("nop %d res %d user_data %llu\n", ret, cqe->res,
				       (unsigned long long)cqe->user_data);
				io_uring_cqe_seen(&ring, cqe);
			}
		} else if (!strncmp(line, "quit", 4)) {
			break;
		} else {
			printf("unknown command\n");
		}
		fflush(stdout);
	}
	io_uring_queue_exit(&ring);
	return 0;
}

int main(int argc, char **argv)
{
	const char *kind = argc > 1 ? argv[1] : "loop";
	unsigned int flags = IOURING_BPF_RING_FLAGS;
	struct iouring_bpf_ring r;
	char line[64];
	int ret;

	if (!strcmp(kind, "no-defer"))
		flags = 0;
	else if (!strcmp(kind, "sqpoll"))
		flags = IORING_SETUP_SQPOLL;
	else if (!strcmp(kind, "iopoll"))
		flags = IORING_SETUP_IOPOLL | IORING_SETUP_SINGLE_ISSUER |
			IORING_SETUP_DEFER_TASKRUN;
	else if (!strcmp(kind, "cqe32"))
		flags |= IORING_SETUP_CQE32;
	else if (!strcmp(kind, "sqe128"))
		flags |= IORING_SETUP_SQE128;
	else if (!strcmp(kind, "liburing"))
		return liburing_owner();
	else if (strcmp(kind, "loop")) {
		fprintf(stderr, "usage: %s [loop|no-defer|sqpoll|iopoll|cqe32|sqe128|liburing]\n",
			argv[0]);
		return 2;
	}
	ret = iouring_bpf_ring_init(&r, 16, 64, flags);
	if (ret) {
		fprintf(stderr, "ring_owner: ring: %s\n", strerror(-ret));
		return 1;
	}
	printf("%d:%d\n", getpid(), r.fd);
	fflush(stdout);

	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "enter", 5)) {
			ret = syscall(__NR_io_uring_enter, r.fd, 0, 0, IORING_ENTER_GETEVENTS, NULL, 0);
			printf("enter %d cq %u\n", ret < 0 ? -errno : ret, cq_ready(&r));
		} else if (!strncmp(line, "nop", 3)) {
			char *m = r.ring_mem;
			unsigned int head = *(unsigned int *)(m + r.params.cq_off.head);
			unsigned int tail, idx = 0;
			struct io_uring_cqe *cqe;

			/* SQ_REWIND rings read SQEs from index 0; others use the tail */
			if (!(flags & IORING_SETUP_SQ_REWIND)) {
				unsigned int *sq_tail = (unsigned int *)(m + r.params.sq_off.tail);
				unsigned int *array = (unsigned int *)(m + r.params.sq_off.array);

				idx = *sq_tail & (r.params.sq_entries - 1);
				array[idx] = idx;
				__atomic_store_n(sq_tail, *sq_tail + 1, __ATOMIC_RELEASE);
			}
			memset(&r.sqes[idx], 0, sizeof(r.sqes[idx]));
			r.sqes[idx].opcode = IORING_OP_NOP;
			r.sqes[idx].user_data = 42;
			ret = syscall(__NR_io_uring_enter, r.fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0);
			tail = __atomic_load_n((unsigned int *)(m + r.params.cq_off.tail), __ATOMIC_ACQUIRE);
			if (tail == head) {
				printf("nop %d no-cqe\n", ret < 0 ? -errno : ret);
			} else {
				cqe = (struct io_uring_cqe *)(m + r.params.cq_off.cqes) +
				      (head & (r.params.cq_entries - 1));
				printf("nop %d res %d user_data %llu\n", ret < 0 ? -errno : ret,
				       cqe->res, (unsigned long long)cqe->user_data);
				__atomic_store_n((unsigned int *)(m + r.params.cq_off.head), head + 1,
						 __ATOMIC_RELEASE);
			}
		} else if (!strncmp(line, "quit", 4)) {
			break;
		} else {
			printf("unknown command\n");
		}
		fflush(stdout);
	}
	iouring_bpf_ring_exit(&r);
	return 0;
}
