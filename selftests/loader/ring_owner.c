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
 * usage: ring_owner [loop|no-defer|sqpoll|iopoll]
 */
#include <errno.h>
#include <liburing-bpf.h>
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
	else if (strcmp(kind, "loop")) {
		fprintf(stderr, "usage: %s [loop|no-defer|sqpoll|iopoll]\n", argv[0]);
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
