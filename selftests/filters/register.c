// SPDX-License-Identifier: GPL-2.0
/*
 * filters/ tests of registration itself: every refusal with its errno, the
 * payload sizes written back (refusals), and the cap on instructions held by
 * a ring, a task and a ring over its task's filters (cap).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include "filters.h"

/* refusals: every refusal of a registration, with its errno */
int test_refusals(void)
{
	struct sock_filter ok[] = PROG_CONST(1);
	struct sock_filter byte_load[] = {
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 8),
		BPF_STMT(BPF_RET | BPF_K, 1),
	};
	struct sock_filter unaligned[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 2),
		BPF_STMT(BPF_RET | BPF_K, 1),
	};
	struct sock_filter past_end[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, sizeof(struct io_uring_bpf_ctx)),
		BPF_STMT(BPF_RET | BPF_K, 1),
	};
	struct sock_filter mod[] = {
		BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, 3),
		BPF_STMT(BPF_RET | BPF_K, 1),
	};
	static struct sock_filter big[BPF_MAXINSNS + 1];
	struct io_uring_probe *probe_ops;
	struct io_uring_bpf reg;
	struct io_uring ring;
	int fd, fail = 0, op_last;
	uint8_t pdu;

	/* the kernel's IORING_OP_LAST: liburing's header may be older */
	probe_ops = io_uring_get_probe();
	if (!CHECK(probe_ops, "io_uring_get_probe"))
		return KSFT_FAIL;
	op_last = probe_ops->last_op + 1;
	io_uring_free_probe(probe_ops);
	if (io_uring_queue_init(8, &ring, 0))
		return KSFT_FAIL;
	fd = ring.ring_fd;
#define EXPECT(call, want, what)                                                    \
	do {                                                                        \
		int __r = (call);                                                   \
		if (!CHECK(__r == (want), "%s: %d, want %d", what, __r, want))       \
			fail = 1;                                                   \
	} while (0)
#define REG(field_init) ({                                                          \
		memset(&reg, 0, sizeof(reg));                                       \
		reg.cmd_type = IO_URING_BPF_CMD_FILTER;                             \
		reg.filter.opcode = IORING_OP_NOP;                                  \
		reg.filter.filter_len = 1;                                          \
		reg.filter.filter_ptr = (uint64_t)(uintptr_t)ok;                    \
		field_init;                                                         \
		sys_register(fd, REGISTER_BPF_FILTER, &reg, 1); })

	EXPECT(REG(reg.cmd_type = 2), -EINVAL, "cmd_type 2");
	EXPECT(REG(reg.cmd_flags = 1), -EINVAL, "cmd_flags 1");
	EXPECT(REG(reg.resv = 1), -EINVAL, "resv 1");
	EXPECT(REG(reg.filter.opcode = op_last), -EINVAL, "opcode IORING_OP_LAST");
	EXPECT(REG(reg.filter.opcode = 255), -EINVAL, "opcode 255");
	EXPECT(REG(reg.filter.flags = 4), -EINVAL, "unknown flag 4");
	EXPECT(REG(reg.filter.resv[1] = 1), -EINVAL, "filter.resv");
	EXPECT(REG(reg.filter.resv2[4] = 1), -EINVAL, "filter.resv2");
	EXPECT(REG(reg.filter.filter_len = 0), -EINVAL, "filter_len 0");
	for (int i = 0; i <= BPF_MAXINSNS; i++)
		big[i] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 1);
	EXPECT(REG(reg.filter.filter_len = BPF_MAXINSNS + 1; reg.filter.filter_ptr =
		       (uint64_t)(uintptr_t)big), -EINVAL, "4097 instructions");
	EXPECT(REG(reg.filter.filter_ptr = 8), -EFAULT, "program at address 8");
	EXPECT(sys_register(fd, REGISTER_BPF_FILTER, (void *)8, 1), -EFAULT,
	       "struct io_uring_bpf at address 8");
	memset(&reg, 0, sizeof(reg));
	reg.cmd_type = IO_URING_BPF_CMD_FILTER;
	reg.filter.filter_len = 1;
	reg.filter.filter_ptr = (uint64_t)(uintptr_t)ok;
	EXPECT(sys_register(fd, REGISTER_BPF_FILTER, &reg, 0), -EINVAL, "nr_args 0");
	EXPECT(sys_register(fd, REGISTER_BPF_FILTER, &reg, 2), -EINVAL, "nr_args 2");

	/* instructions outside the subset */
	EXPECT(add_filter(fd, IORING_OP_NOP, 0, byte_load, 2, NULL), -EINVAL, "byte load");
	EXPECT(add_filter(fd, IORING_OP_NOP, 0, unaligned, 2, NULL), -EINVAL,
	       "word load at offset 2");
	EXPECT(add_filter(fd, IORING_OP_NOP, 0, past_end, 2, NULL), -EINVAL,
	       "word load past the context");
	EXPECT(add_filter(fd, IORING_OP_NOP, 0, mod, 2, NULL), -EINVAL, "BPF_MOD");

	/* payload sizes: the kernel's is written back in every case */
	pdu = 24;
	EXPECT(add_filter(fd, IORING_OP_SOCKET, 0, ok, 1, &pdu), -EMSGSIZE,
	       "SOCKET filter expecting 24 bytes");
	EXPECT(pdu, 12, "SOCKET payload size written back after -EMSGSIZE");
	pdu = 8;
	EXPECT(add_filter(fd, IORING_OP_SOCKET, IO_URING_BPF_FILTER_SZ_STRICT, ok, 1, &pdu),
	       -EMSGSIZE, "SOCKET filter expecting 8 bytes, SZ_STRICT");
	EXPECT(pdu, 12, "SOCKET payload size written back (SZ_STRICT)");
	pdu = 8;
	EXPECT(add_filter(fd, IORING_OP_SOCKET, 0, ok, 1, &pdu), 0,
	       "SOCKET filter expecting 8 bytes");
	EXPECT(pdu, 12, "SOCKET payload size written back on success");
	pdu = 0;
	EXPECT(add_filter(fd, IORING_OP_OPENAT2, 0, ok, 1, &pdu), 0, "OPENAT2 filter");
	EXPECT(pdu, 24, "OPENAT2 payload size");
	pdu = 0;
	EXPECT(add_filter(fd, IORING_OP_CONNECT, 0, ok, 1, &pdu), 0, "CONNECT filter");
	EXPECT(pdu, 24, "CONNECT payload size");
	pdu = 1;
	EXPECT(add_filter(fd, IORING_OP_NOP, 0, ok, 1, &pdu), -EMSGSIZE,
	       "NOP filter expecting a payload");
	EXPECT(pdu, 0, "NOP payload size");

	/* fd -1 takes only what a task may register */
	EXPECT(sys_register(-1, IORING_REGISTER_PROBE, NULL, 0), -EINVAL,
	       "IORING_REGISTER_PROBE on fd -1");
	io_uring_queue_exit(&ring);
	return fail ? KSFT_FAIL : KSFT_PASS;
}

/* @fd holds 7 * (4096 + 4) already: one more instruction than fits, then exactly */
static bool fill_to_cap(int fd, const char *who)
{
	return CHECK(add_long(fd, FULL) == -ENOMEM, "%s: 8th 4096 (fits without the penalty)", who) &&
	       CHECK(add_long(fd, LAST_FIT + 1) == -ENOMEM, "%s: 1 past the cap", who) &&
	       CHECK(add_long(fd, LAST_FIT) == 0, "%s: exactly at the cap", who) &&
	       CHECK(add_const(fd, IORING_OP_READ, 0, 1) == -ENOMEM, "%s: other opcode", who) &&
	       CHECK(add_const(fd, IORING_OP_READ, IO_URING_BPF_FILTER_DENY_REST, 1) == -ENOMEM,
		     "%s: DENY_REST past the cap", who);
}

static int child_cap(void)
{
	struct io_uring a, b;

	if (!CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "PR_SET_NO_NEW_PRIVS") ||
	    !CHECK_OK(add_full(-1, 3), "3 task filters") ||
	    !CHECK_OK(io_uring_queue_init(8, &a, 0), "ring a"))
		return KSFT_FAIL;
	/* ring a starts with the task's 3: 4 of its own reach 7 */
	if (!CHECK_OK(add_full(a.ring_fd, 4), "4 ring filters over 3 inherited") ||
	    !fill_to_cap(a.ring_fd, "ring over task filters") ||
	    !CHECK(nop(&a, 1) == 0, "NOP through 8 allowing filters") ||
	    /* the task's own table: 3 + 4 = 7, then the same boundary */
	    !CHECK_OK(add_full(-1, 4), "4 more task filters") || !fill_to_cap(-1, "task") ||
	    !CHECK_OK(io_uring_queue_init(8, &b, 0), "ring b") ||
	    !CHECK(add_const(b.ring_fd, IORING_OP_NOP, 0, 1) == -ENOMEM, "ring b starts full"))
		return KSFT_FAIL;
	io_uring_queue_exit(&a);
	io_uring_queue_exit(&b);
	return KSFT_PASS;
}

static int cap_on_ring(struct io_uring *ring)
{
	if (CHECK_OK(add_full(ring->ring_fd, 7), "7 filters of 4096") &&
	    fill_to_cap(ring->ring_fd, "ring") &&
	    CHECK(nop(ring, 1) == 0, "NOP after the refusals"))
		return in_child(child_cap);
	return KSFT_FAIL;
}

/*
 * cap: a registration past IO_URING_BPF_FILTER_MAX_INSNS (32768 instructions,
 * each filter already there counting 4 more, as seccomp counts) fails with
 * -ENOMEM: on a ring, on a task, and on a ring over its task's filters.
 */
int test_cap(void)
{
	return with_ring(cap_on_ring);
}
