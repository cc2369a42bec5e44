// SPDX-License-Identifier: GPL-2.0
/*
 * filters/ tests of task restrictions (fd -1): the no_new_privs rule
 * (task-nnp), what children inherit (task-inherit), the task SQE and
 * register-op allowlists (task-allowlist, task-register-allowlist), and
 * filters kept across exec (task-exec, with its exec-check half).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include "filters.h"

static int nop_on_new_ring(uint64_t ud)
{
	struct io_uring ring;
	int ret;

	ret = io_uring_queue_init(8, &ring, 0);
	if (ret)
		return ret;
	ret = nop(&ring, ud);
	io_uring_queue_exit(&ring);
	return ret;
}

/*
 * Task filters need no_new_privs or CAP_SYS_ADMIN: as nobody (no
 * capabilities) -EACCES, then with no_new_privs 0.
 */
static int child_nnp_rule(void)
{
	if (!become_nobody())
		return KSFT_FAIL;
	struct task_restriction bad = { .flags = 1 };

	if (!CHECK(add_const(-1, IORING_OP_NOP, 0, 1) == -EACCES,
		   "task filter without no_new_privs or CAP_SYS_ADMIN") ||
	    /* the privilege is checked before the arguments, as in mainline */
	    !CHECK(sys_register(-1, REGISTER_BPF_FILTER, NULL, 0) == -EACCES,
		   "task filter with bad arguments, without no_new_privs") ||
	    !CHECK(sys_register(-1, REGISTER_RESTRICTIONS, &bad, 1) == -EACCES,
		   "task allowlist with bad flags, without no_new_privs"))
		return KSFT_FAIL;
	if (!CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "PR_SET_NO_NEW_PRIVS"))
		return KSFT_FAIL;
	if (!CHECK_OK(add_const(-1, IORING_OP_NOP, 0, 0), "task filter with no_new_privs") ||
	    !CHECK(nop_on_new_ring(1) == -EACCES, "NOP on a ring made afterwards not denied"))
		return KSFT_FAIL;
	return KSFT_PASS;
}

/*
 * task-nnp: Task filters need no_new_privs or CAP_SYS_ADMIN: nobody without
 * no_new_privs gets -EACCES, and succeeds once it is set.
 */
int test_task_nnp(void)
{
	return in_child(child_nnp_rule);
}

static int grandchild_sees_deny(void)
{
	/* a child's own filter runs before its parent's: both must allow */
	if (!CHECK_OK(add_const(-1, IORING_OP_NOP, 0, 1), "grandchild's allow") ||
	    !CHECK(nop_on_new_ring(3) == -EACCES, "grandchild's allow loosened the deny"))
		return KSFT_FAIL;
	return KSFT_PASS;
}

static int child_sees_deny(void)
{
	if (!CHECK(nop_on_new_ring(2) == -EACCES, "child's ring not filtered"))
		return KSFT_FAIL;
	return in_child(grandchild_sees_deny);
}

/* a filter reaches the rings of children and grandchildren, not older rings */
static int child_inherit(void)
{
	struct io_uring before;
	int ret;

	if (io_uring_queue_init(8, &before, 0))
		return KSFT_FAIL;
	if (!CHECK_OK(add_const(-1, IORING_OP_NOP, 0, 0), "task filter") ||
	    !CHECK(nop(&before, 1) == 0, "a ring made before the filter is filtered") ||
	    !CHECK(nop_on_new_ring(1) == -EACCES, "a ring made after it is not"))
		return KSFT_FAIL;
	io_uring_queue_exit(&before);
	ret = in_child(child_sees_deny);
	if (ret != KSFT_PASS)
		return ret;
	/* the grandchild's allow did not reach this task either */
	return CHECK(nop_on_new_ring(4) == -EACCES, "parent's deny lost") ? KSFT_PASS : KSFT_FAIL;
}

/*
 * task-inherit: A task's filters reach the rings of its children and grandchildren; what a
 * child adds stays with the child.
 */
int test_task_inherit(void)
{
	return in_child(child_inherit);
}

static int register_task_allowlist(const struct io_uring_restriction *res, unsigned int nr)
{
	struct task_restriction *tr = calloc(1, sizeof(*tr) + nr * sizeof(*res));
	int ret;

	if (!tr)
		return -ENOMEM;
	tr->nr_res = nr;
	memcpy(tr->res, res, nr * sizeof(*res));
	ret = sys_register(-1, REGISTER_RESTRICTIONS, tr, 1);
	free(tr);
	return ret;
}

static const struct io_uring_restriction nop_only = {
	.opcode = IORING_RESTRICTION_SQE_OP, .sqe_op = IORING_OP_NOP };

/* a ring made under the NOP-only task allowlist */
static int nop_only_ring(struct io_uring *ring)
{
	int fd = open("/dev/zero", O_RDONLY);

	if (!CHECK(nop(ring, 1) == 0, "NOP on an allowlisted ring") ||
	    !CHECK(read_op(ring, fd, 2) == -EACCES, "READ not denied by the allowlist") ||
	    /* an SQE-only allowlist leaves register ops alone (7.0's split) */
	    !CHECK(io_uring_register_files(ring, &fd, 1) == 0, "register files denied") ||
	    /* and the ring's own allowlist is taken */
	    !CHECK(sys_register(ring->ring_fd, IORING_REGISTER_RESTRICTIONS, (void *)&nop_only, 1) ==
		   -EBADFD, "ring allowlist on an enabled ring"))
		return KSFT_FAIL;
	return KSFT_PASS;
}

/* task allowlist: SQEs only, so register ops stay free; then -EPERM */
static int child_allowlist(void)
{
	struct task_restriction bad = { .flags = 1 };

	if (!CHECK(sys_register(-1, REGISTER_RESTRICTIONS, &bad, 1) == -EINVAL,
		   "task allowlist with flags 1") ||
	    !CHECK(sys_register(-1, REGISTER_RESTRICTIONS, &bad, 2) == -EINVAL,
		   "task allowlist with nr_args 2") ||
	    !CHECK(sys_register(-1, REGISTER_RESTRICTIONS, NULL, 1) == -EFAULT, "NULL allowlist") ||
	    !CHECK_OK(register_task_allowlist(&nop_only, 1), "allow only NOP") ||
	    !CHECK(register_task_allowlist(&nop_only, 1) == -EPERM, "second task allowlist") ||
	    /* -EPERM comes first, whatever else is wrong with the call */
	    !CHECK(sys_register(-1, REGISTER_RESTRICTIONS, &bad, 1) == -EPERM,
		   "second task allowlist with bad flags") ||
	    !CHECK(add_const(-1, IORING_OP_NOP, 0, 1) == 0, "a filter after the allowlist"))
		return KSFT_FAIL;
	return with_ring(nop_only_ring);
}

/*
 * task-allowlist: A task SQE allowlist (fd -1): refusals, a second one -EPERM, rings made
 * afterwards run only the listed opcodes, and register ops stay allowed
 * (7.0's split).
 */
int test_task_allowlist(void)
{
	return in_child(child_allowlist);
}

/* a ring made under the IORING_REGISTER_FILES-only task allowlist */
static int files_only_ring(struct io_uring *ring)
{
	struct iovec iov = { .iov_base = malloc(4096), .iov_len = 4096 };
	int fd = open("/dev/zero", O_RDONLY);

	if (!CHECK(io_uring_register_files(ring, &fd, 1) == 0, "register files") ||
	    !CHECK(io_uring_register_buffers(ring, &iov, 1) == -EACCES, "register buffers") ||
	    !CHECK(nop(ring, 1) == 0, "a register-only allowlist denied a NOP"))
		return KSFT_FAIL;
	return KSFT_PASS;
}

/* a register-op allowlist: files yes, buffers no */
static int child_register_allowlist(void)
{
	struct io_uring_restriction files = {
		.opcode = IORING_RESTRICTION_REGISTER_OP, .register_op = IORING_REGISTER_FILES };

	if (!CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "PR_SET_NO_NEW_PRIVS") ||
	    !CHECK_OK(register_task_allowlist(&files, 1), "allow only IORING_REGISTER_FILES"))
		return KSFT_FAIL;
	return with_ring(files_only_ring);
}

/*
 * task-register-allowlist: a task register-op allowlist: listed ops run on a
 * new ring, others -EACCES
 */
int test_task_register_allowlist(void)
{
	return in_child(child_register_allowlist);
}

/* keeps its filter across exec, after the task had used io_uring (7.0's loss) */
static int child_exec(void)
{
	if (!CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "PR_SET_NO_NEW_PRIVS") ||
	    !CHECK(nop_on_new_ring(1) == 0, "NOP before the filter") ||
	    !CHECK_OK(add_const(-1, IORING_OP_NOP, 0, 0), "task filter"))
		return KSFT_FAIL;
	execl(self_exe, self_exe, "exec-check", (char *)NULL);
	fprintf(stderr, "exec %s: %s\n", self_exe, strerror(errno));
	return KSFT_FAIL;
}

int exec_check(void)
{
	return CHECK(nop_on_new_ring(5) == -EACCES, "the filter did not survive exec") ?
		KSFT_PASS : KSFT_FAIL;
}

/*
 * task-exec: Task filters survive exec after the task has used io_uring (7.2's
 * behaviour; 7.0 and 7.1 dropped them).
 */
int test_task_exec(void)
{
	return in_child(child_exec);
}
