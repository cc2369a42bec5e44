// SPDX-License-Identifier: GPL-2.0
/*
 * filters/ tests of filters by opcode on one ring: a deny and an allow and
 * what the context holds (deny-allow), how filters stack and DENY_REST
 * (stacking), and a denied request inside a link (link).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include "filters.h"

static int deny_allow(struct io_uring *ring)
{
	if (!CHECK(nop(ring, 1) == 0, "NOP before any filter") ||
	    !CHECK_OK(add_const(ring->ring_fd, IORING_OP_NOP, 0, 7), "allow NOP (returns 7)") ||
	    !CHECK(nop(ring, 2) == 0, "NOP allowed by a filter returning 7") ||
	    /* the context: user_data's low word, and the opcode byte */
	    !CHECK_OK(add_deny_if(ring->ring_fd, IORING_OP_NOP, 0, CTX_OFF(user_data), ~0u, 42, 0),
		      "deny NOP with user_data 42") ||
	    !CHECK(nop(ring, 42) == -EACCES, "NOP with user_data 42 not denied") ||
	    !CHECK(nop(ring, 43) == 0, "NOP with user_data 43 denied") ||
	    !CHECK_OK(add_deny_if(ring->ring_fd, IORING_OP_NOP, 0, CTX_OFF(opcode), 0xff,
				  IORING_OP_NOP, 0), "deny by the opcode field") ||
	    !CHECK(nop(ring, 44) == -EACCES, "NOP not denied by its opcode field"))
		return KSFT_FAIL;
	return KSFT_PASS;
}

/* deny-allow: a denied request fails with -EACCES and its user_data; others run */
int test_deny_allow(void)
{
	return with_ring(deny_allow);
}

static int stacking(struct io_uring *ring)
{
	int fail = 1, fd = open("/dev/zero", O_RDONLY);

	if (!CHECK(fd >= 0, "open /dev/zero") ||
	    !CHECK_OK(add_const(ring->ring_fd, IORING_OP_NOP, 0, 0), "deny NOP") ||
	    !CHECK_OK(add_const(ring->ring_fd, IORING_OP_NOP, 0, 1), "allow NOP on top") ||
	    !CHECK(nop(ring, 1) == -EACCES, "an allow on top loosened a deny") ||
	    /* DENY_REST: opcodes without a filter are denied, even later allowed ones */
	    !CHECK_OK(add_const(ring->ring_fd, IORING_OP_TIMEOUT, IO_URING_BPF_FILTER_DENY_REST, 1),
		      "allow TIMEOUT, DENY_REST") ||
	    !CHECK(read_op(ring, fd, 2) == -EACCES, "READ not denied by DENY_REST") ||
	    !CHECK_OK(add_const(ring->ring_fd, IORING_OP_READ, 0, 1), "allow READ after DENY_REST") ||
	    !CHECK(read_op(ring, fd, 3) == -EACCES, "an allow loosened DENY_REST"))
		goto out;
	fail = 0;
out:
	if (fd >= 0)
		close(fd);
	return fail ? KSFT_FAIL : KSFT_PASS;
}

/* stacking: newest first, all must allow: an allow added later cannot loosen a deny */
int test_stacking(void)
{
	return with_ring(stacking);
}

static int link_chain(struct io_uring *ring)
{
	struct io_uring_cqe *cqe;
	int res[3] = { 1, 1, 1 };

	if (!CHECK_OK(add_deny_if(ring->ring_fd, IORING_OP_NOP, 0, CTX_OFF(user_data), ~0u, 2, 0),
		      "deny NOP with user_data 2"))
		return KSFT_FAIL;
	for (int i = 0; i < 3; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data64(sqe, i + 1);
		if (i < 2)
			sqe->flags |= IOSQE_IO_LINK;
	}
	io_uring_submit(ring);
	for (int i = 0; i < 3; i++) {
		if (!CHECK_OK(io_uring_wait_cqe(ring, &cqe), "wait"))
			return KSFT_FAIL;
		if (cqe->user_data >= 1 && cqe->user_data <= 3)
			res[cqe->user_data - 1] = cqe->res;
		io_uring_cqe_seen(ring, cqe);
	}
	/* the head ran before the denied one was seen; the denied one and the rest fail */
	if (!CHECK(res[1] == -EACCES, "denied NOP: %d", res[1]) ||
	    !CHECK(res[2] == -ECANCELED, "NOP linked after it: %d", res[2]) ||
	    !CHECK(res[0] == -ECANCELED, "head of the link: %d", res[0]))
		return KSFT_FAIL;
	return KSFT_PASS;
}

/* link: a denied request in a link: -EACCES, the rest of the chain -ECANCELED */
int test_link(void)
{
	return with_ring(link_chain);
}
