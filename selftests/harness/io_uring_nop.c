// SPDX-License-Identifier: GPL-2.0
/*
 * harness/io_uring-nop: one NOP submitted and completed with liburing, on a
 * plain ring and on a DEFER_TASKRUN ring (the mode the BPF loop requires).
 */
#include <liburing.h>
#include <stdint.h>
#include "selftest.h"

static int nop_round_trip(unsigned int flags, const char *what)
{
	const uint64_t tag = 0x10ba5eedcafe0001ULL ^ flags;
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	int ret, status = KSFT_FAIL;

	ret = io_uring_queue_init(8, &ring, flags);
	if (!CHECK_OK(ret, "io_uring_queue_init"))
		return KSFT_FAIL;

	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	if (!CHECK(sqe, "no SQE on a fresh ring"))
		goto out;
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data64(sqe, tag);

	ret = io_uring_submit_and_wait(&ring, 1);
	if (!CHECK(ret == 1, "submitted %d, want 1", ret))
		goto out;
	ret = io_uring_peek_cqe(&ring, &cqe);
	if (!CHECK_OK(ret, "io_uring_peek_cqe"))
		goto out;
	if (!CHECK(cqe->res == 0, "NOP res %d", cqe->res) ||
	    !CHECK(cqe->user_data == tag, "user_data %#llx, want %#llx",
		   (unsigned long long)cqe->user_data, (unsigned long long)tag))
		goto out;
	printf("io_uring NOP (%s): submitted 1, completed 1, res %d, user_data %#llx\n",
	       what, cqe->res, (unsigned long long)cqe->user_data);
	io_uring_cqe_seen(&ring, cqe);

	ret = io_uring_peek_cqe(&ring, &cqe);
	if (!CHECK(ret == -EAGAIN, "a second CQE appeared (ret %d)", ret))
		goto out;
	status = KSFT_PASS;
out:
	io_uring_queue_exit(&ring);
	return status;
}

int main(void)
{
	if (nop_round_trip(0, "default ring"))
		return KSFT_FAIL;
	if (nop_round_trip(IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
			   "DEFER_TASKRUN ring"))
		return KSFT_FAIL;
	return KSFT_PASS;
}
