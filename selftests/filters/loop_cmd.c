// SPDX-License-Identifier: GPL-2.0
/*
 * filters/ tests of requests that do not come from a plain user SQE: what a
 * struct_ops loop policy submits (loop-policy) and a driver's uring_cmd
 * (uring-cmd) pass the ring's filters like any other request.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <linux/ublk_cmd.h>
#include "filters.h"
#include "nops.skel.h"

/* loop-policy: a loop policy's submissions pass the ring's filters as user space's do */
int test_loop_policy(void)
{
	const uint32_t total = 16;
	struct iouring_bpf_ring r = { .fd = -1 };
	struct nops *skel = NULL;
	int status = KSFT_FAIL;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 16, 0, IOURING_BPF_RING_FLAGS), "ring setup"))
		goto out;
	/* NOPs with an odd user_data are denied */
	if (!CHECK_OK(add_deny_if(r.fd, IORING_OP_NOP, 0, CTX_OFF(user_data), 1, 1, 0),
		      "deny NOPs with an odd user_data"))
		goto out;
	skel = nops__open();
	if (!CHECK(skel, "nops__open: %s", strerror(errno)))
		goto out;
	skel->rodata->nop_total = total;
	skel->rodata->nop_inflight = 4;
	/* the policy counts a CQE with res != 0 as bad: the denied half */
	if (run_skeleton(skel->skeleton, skel->maps.nops_ops, &skel->rodata->iou_geom,
			 &skel->struct_ops.nops_ops->ring_fd, &r) != KSFT_PASS ||
	    !CHECK(skel->bss->nop_completed == total, "completed %llu of %u",
		   (unsigned long long)skel->bss->nop_completed, total) ||
	    !CHECK(skel->bss->nop_bad_cqes == total / 2, "%llu failed CQEs, want %u (the odd ones)",
		   (unsigned long long)skel->bss->nop_bad_cqes, total / 2))
		goto out;
	status = KSFT_PASS;
out:
	nops__destroy(skel);
	iouring_bpf_ring_exit(&r);
	return status;
}

/* UBLK_U_CMD_GET_FEATURES on /dev/ublk-control: its result, or -errno */
static int ublk_get_features(struct io_uring *ring, int ctl, uint64_t *features)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct ublksrv_ctrl_cmd *cmd;

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = ctl;
	sqe->cmd_op = UBLK_U_CMD_GET_FEATURES;
	cmd = (struct ublksrv_ctrl_cmd *)sqe->cmd;
	cmd->dev_id = (uint32_t)-1;
	cmd->queue_id = (uint16_t)-1;
	cmd->addr = (uintptr_t)features;
	cmd->len = sizeof(*features);
	return run_one(ring, sqe, 1);
}

/*
 * uring-cmd: A driver's uring_cmd is filtered by its opcode like any other request: a
 * ring that denies URING_CMD gets -EACCES for a ublk control command, and the
 * driver never sees it (the features word stays as it was).
 */
int test_uring_cmd(void)
{
	struct io_uring open_ring, denied_ring;
	uint64_t features = 0;
	int ctl, ret, status = KSFT_FAIL;

	ctl = open("/dev/ublk-control", O_RDWR);
	if (ctl < 0) {
		fprintf(stderr, "SKIP: /dev/ublk-control: %s\n", strerror(errno));
		return KSFT_SKIP;
	}
	if (!CHECK_OK(io_uring_queue_init(4, &open_ring, IORING_SETUP_SQE128), "ring setup"))
		goto out_ctl;
	if (!CHECK_OK(io_uring_queue_init(4, &denied_ring, IORING_SETUP_SQE128), "ring setup"))
		goto out_open;
	ret = ublk_get_features(&open_ring, ctl, &features);
	if (!CHECK(ret == 0 && features, "GET_FEATURES with no filter: %d, features %#llx", ret,
		   (unsigned long long)features))
		goto out;
	if (!CHECK_OK(add_const(denied_ring.ring_fd, IORING_OP_URING_CMD, 0, 0),
		      "deny URING_CMD"))
		goto out;
	features = 0;
	ret = ublk_get_features(&denied_ring, ctl, &features);
	if (!CHECK(ret == -EACCES, "GET_FEATURES under a URING_CMD deny: %d, want -EACCES", ret) ||
	    !CHECK(features == 0, "the driver ran a denied command: features %#llx",
		   (unsigned long long)features) ||
	    !CHECK(nop(&denied_ring, 2) == 0, "NOP denied by a URING_CMD filter") ||
	    !CHECK(ublk_get_features(&open_ring, ctl, &features) == 0,
		   "the other ring's GET_FEATURES failed"))
		goto out;
	status = KSFT_PASS;
out:
	io_uring_queue_exit(&denied_ring);
out_open:
	io_uring_queue_exit(&open_ring);
out_ctl:
	close(ctl);
	return status;
}
