// SPDX-License-Identifier: GPL-2.0
/*
 * The filters/ tests: io_uring's classic BPF filters and task restrictions
 * (IORING_REGISTER_BPF_FILTER, IORING_REGISTER_RESTRICTIONS on fd -1), as
 * mainline 7.0-7.2 defines them, on the patched kernel.
 *
 *   filters_test NAME     runs one test; exit 0 pass, 1 fail, 77 skip
 *
 * Written from the interface's description, not from mainline's tests.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <linux/filter.h>
#include <linux/io_uring/bpf_filter.h>
#include <linux/ublk_cmd.h>
#include <liburing.h>
#include <liburing-bpf.h>
#include "selftest.h"
#include "nops.skel.h"

#define REGISTER_BPF_FILTER	37
#define REGISTER_RESTRICTIONS	11

/* struct io_uring_task_restriction */
struct task_restriction {
	uint16_t flags;
	uint16_t nr_res;
	uint32_t resv[3];
	struct io_uring_restriction res[];
};

static int sys_register(int fd, unsigned int op, void *arg, unsigned int nr)
{
	int ret = syscall(__NR_io_uring_register, fd, op, arg, nr);

	return ret < 0 ? -errno : ret;
}

/* a program that returns @verdict for every request */
#define PROG_CONST(verdict) { BPF_STMT(BPF_RET | BPF_K, (verdict)) }

/*
 * Register @prog (@len instructions) for @opcode on @fd (-1: the task);
 * *pdu in: the payload size the filter expects, out: the kernel's.
 */
static int add_filter(int fd, uint32_t opcode, uint32_t flags, struct sock_filter *prog,
		      uint32_t len, uint8_t *pdu)
{
	struct io_uring_bpf reg = {
		.cmd_type = IO_URING_BPF_CMD_FILTER,
		.filter = {
			.opcode = opcode,
			.flags = flags,
			.filter_len = len,
			.pdu_size = pdu ? *pdu : 0,
			.filter_ptr = (uint64_t)(uintptr_t)prog,
		},
	};
	int ret = sys_register(fd, REGISTER_BPF_FILTER, &reg, 1);

	if (pdu)
		*pdu = reg.filter.pdu_size;
	return ret;
}

static int add_const(int fd, uint32_t opcode, uint32_t flags, uint32_t verdict)
{
	struct sock_filter prog[] = PROG_CONST(verdict);

	return add_filter(fd, opcode, flags, prog, 1, NULL);
}

/* submit one prepared SQE and return its CQE's res (user_data checked) */
static int run_one(struct io_uring *ring, struct io_uring_sqe *sqe, uint64_t ud)
{
	struct io_uring_cqe *cqe;
	int ret;

	io_uring_sqe_set_data64(sqe, ud);
	ret = io_uring_submit(ring);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(ring, &cqe);
	if (ret)
		return ret;
	ret = cqe->res;
	if (cqe->user_data != ud) {
		fprintf(stderr, "CQE user_data %llu, want %llu\n",
			(unsigned long long)cqe->user_data, (unsigned long long)ud);
		ret = -ENOTRECOVERABLE;
	}
	io_uring_cqe_seen(ring, cqe);
	return ret;
}

static int nop(struct io_uring *ring, uint64_t ud)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	io_uring_prep_nop(sqe);
	return run_one(ring, sqe, ud);
}

static int probe(void)
{
	struct io_uring ring;
	int ret;

	if (io_uring_queue_init(8, &ring, 0))
		return KSFT_FAIL;
	ret = add_const(ring.ring_fd, IORING_OP_NOP, 0, 1);
	io_uring_queue_exit(&ring);
	if (ret == -EINVAL) {
		struct utsname u;

		/* this project's kernel has them: a regression, not a skip */
		if (!uname(&u) && strstr(u.release, "-iouring-bpf")) {
			printf("FAIL: %s refuses IORING_REGISTER_BPF_FILTER (-EINVAL)\n",
			       u.release);
			return KSFT_FAIL;
		}
		printf("SKIP: the kernel has no IORING_REGISTER_BPF_FILTER\n");
		return KSFT_SKIP;
	}
	return CHECK(ret == 0, "allow-all NOP filter: %d", ret) ? KSFT_PASS : KSFT_FAIL;
}

/* every refusal of a registration, with its errno */
static int test_refusals(void)
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

/* deny when (word at @off & @mask) == @val, allow otherwise */
static int add_deny_if(int fd, uint32_t opcode, uint32_t flags, uint32_t off, uint32_t mask,
		       uint32_t val, uint8_t pdu)
{
	struct sock_filter prog[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, off),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, mask),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, val, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, 0),
		BPF_STMT(BPF_RET | BPF_K, 1),
	};

	return add_filter(fd, opcode, flags, prog, 5, &pdu);
}

#define CTX_OFF(f)	((uint32_t)offsetof(struct io_uring_bpf_ctx, f))

/* a denied request fails with -EACCES and its user_data; others run */
static int test_deny_allow(void)
{
	struct io_uring ring;
	int fail = 1;

	if (io_uring_queue_init(8, &ring, 0))
		return KSFT_FAIL;
	if (!CHECK(nop(&ring, 1) == 0, "NOP before any filter") ||
	    !CHECK_OK(add_const(ring.ring_fd, IORING_OP_NOP, 0, 7), "allow NOP (returns 7)") ||
	    !CHECK(nop(&ring, 2) == 0, "NOP allowed by a filter returning 7") ||
	    /* the context: user_data's low word, and the opcode byte */
	    !CHECK_OK(add_deny_if(ring.ring_fd, IORING_OP_NOP, 0, CTX_OFF(user_data), ~0u, 42, 0),
		      "deny NOP with user_data 42") ||
	    !CHECK(nop(&ring, 42) == -EACCES, "NOP with user_data 42 not denied") ||
	    !CHECK(nop(&ring, 43) == 0, "NOP with user_data 43 denied") ||
	    !CHECK_OK(add_deny_if(ring.ring_fd, IORING_OP_NOP, 0, CTX_OFF(opcode), 0xff,
				  IORING_OP_NOP, 0), "deny by the opcode field") ||
	    !CHECK(nop(&ring, 44) == -EACCES, "NOP not denied by its opcode field"))
		goto out;
	fail = 0;
out:
	io_uring_queue_exit(&ring);
	return fail ? KSFT_FAIL : KSFT_PASS;
}

/* newest first, all must allow: an allow added later cannot loosen a deny */
static int test_stacking(void)
{
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	char buf[8];
	int fail = 1, fd = -1;

	if (io_uring_queue_init(8, &ring, 0))
		return KSFT_FAIL;
	fd = open("/dev/zero", O_RDONLY);
	if (!CHECK(fd >= 0, "open /dev/zero") ||
	    !CHECK_OK(add_const(ring.ring_fd, IORING_OP_NOP, 0, 0), "deny NOP") ||
	    !CHECK_OK(add_const(ring.ring_fd, IORING_OP_NOP, 0, 1), "allow NOP on top") ||
	    !CHECK(nop(&ring, 1) == -EACCES, "an allow on top loosened a deny") ||
	    /* DENY_REST: opcodes without a filter are denied, even later allowed ones */
	    !CHECK_OK(add_const(ring.ring_fd, IORING_OP_TIMEOUT, IO_URING_BPF_FILTER_DENY_REST, 1),
		      "allow TIMEOUT, DENY_REST"))
		goto out;
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read(sqe, fd, buf, sizeof(buf), 0);
	if (!CHECK(run_one(&ring, sqe, 2) == -EACCES, "READ not denied by DENY_REST") ||
	    !CHECK_OK(add_const(ring.ring_fd, IORING_OP_READ, 0, 1), "allow READ after DENY_REST"))
		goto out;
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read(sqe, fd, buf, sizeof(buf), 0);
	if (!CHECK(run_one(&ring, sqe, 3) == -EACCES, "an allow loosened DENY_REST"))
		goto out;
	fail = 0;
out:
	if (fd >= 0)
		close(fd);
	io_uring_queue_exit(&ring);
	return fail ? KSFT_FAIL : KSFT_PASS;
}

/* a denied request in a link: -EACCES, the rest of the chain -ECANCELED */
static int test_link(void)
{
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	int res[3] = { 1, 1, 1 }, fail = 1;

	if (io_uring_queue_init(8, &ring, 0))
		return KSFT_FAIL;
	if (!CHECK_OK(add_deny_if(ring.ring_fd, IORING_OP_NOP, 0, CTX_OFF(user_data), ~0u, 2, 0),
		      "deny NOP with user_data 2"))
		goto out;
	for (int i = 0; i < 3; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data64(sqe, i + 1);
		if (i < 2)
			sqe->flags |= IOSQE_IO_LINK;
	}
	io_uring_submit(&ring);
	for (int i = 0; i < 3; i++) {
		if (!CHECK_OK(io_uring_wait_cqe(&ring, &cqe), "wait"))
			goto out;
		if (cqe->user_data >= 1 && cqe->user_data <= 3)
			res[cqe->user_data - 1] = cqe->res;
		io_uring_cqe_seen(&ring, cqe);
	}
	/* the head ran before the denied one was seen; the denied one and the rest fail */
	if (!CHECK(res[1] == -EACCES, "denied NOP: %d", res[1]) ||
	    !CHECK(res[2] == -ECANCELED, "NOP linked after it: %d", res[2]) ||
	    !CHECK(res[0] == -ECANCELED, "head of the link: %d", res[0]))
		goto out;
	fail = 0;
out:
	io_uring_queue_exit(&ring);
	return fail ? KSFT_FAIL : KSFT_PASS;
}

static int sock_op(struct io_uring *ring, int family, int type, uint64_t ud)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	int ret;

	io_uring_prep_socket(sqe, family, type, 0, 0);
	ret = run_one(ring, sqe, ud);
	if (ret >= 0)
		close(ret);
	return ret < 0 ? ret : 0;
}

/* SOCKET: family and type, with SOCK_CLOEXEC kept in type */
static int test_socket(void)
{
	struct io_uring ring;
	int fail = 1;

	if (io_uring_queue_init(8, &ring, 0))
		return KSFT_FAIL;
	if (!CHECK_OK(add_deny_if(ring.ring_fd, IORING_OP_SOCKET, 0, CTX_OFF(socket.family), ~0u,
				  AF_INET6, 12), "deny AF_INET6 sockets") ||
	    !CHECK_OK(add_deny_if(ring.ring_fd, IORING_OP_SOCKET, 0, CTX_OFF(socket.type),
				  SOCK_CLOEXEC, SOCK_CLOEXEC, 12), "deny SOCK_CLOEXEC") ||
	    !CHECK(sock_op(&ring, AF_INET, SOCK_DGRAM, 1) == 0, "AF_INET socket denied") ||
	    !CHECK(sock_op(&ring, AF_INET6, SOCK_DGRAM, 2) == -EACCES, "AF_INET6 not denied") ||
	    !CHECK(sock_op(&ring, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 3) == -EACCES,
		   "SOCK_CLOEXEC not seen in type") ||
	    !CHECK(sock_op(&ring, AF_UNIX, SOCK_STREAM, 4) == 0, "AF_UNIX socket denied"))
		goto out;
	fail = 0;
out:
	io_uring_queue_exit(&ring);
	return fail ? KSFT_FAIL : KSFT_PASS;
}

/* OPENAT (two false) or OPENAT2 of NAME in directory DFD */
static int open_op(struct io_uring *ring, int dfd, const char *name, int flags, uint64_t resolve,
		   bool two, uint64_t ud)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	/* openat2 refuses a mode without O_CREAT or O_TMPFILE */
	struct open_how how = { .flags = flags, .mode = flags & O_CREAT ? 0600 : 0,
				.resolve = resolve };
	int ret;

	if (two)
		io_uring_prep_openat2(sqe, dfd, name, &how);
	else
		io_uring_prep_openat(sqe, dfd, name, flags, 0600);
	ret = run_one(ring, sqe, ud);
	if (ret >= 0)
		close(ret);
	return ret < 0 ? ret : 0;
}

/* OPENAT/OPENAT2: the open_how flags and resolve, as the open uses them */
static int test_open(void)
{
	char path[] = "/tmp/filters.XXXXXX";
	const char *name = path + strlen("/tmp/");
	struct io_uring ring;
	int fail = 1, fd, dfd, res;

	fd = mkstemp(path);
	if (!CHECK(fd >= 0, "mkstemp"))
		return KSFT_FAIL;
	close(fd);
	/* RESOLVE_IN_ROOT makes the directory the root: name the file in it */
	dfd = open("/tmp", O_RDONLY | O_DIRECTORY);
	if (!CHECK(dfd >= 0, "open /tmp: %s", strerror(errno)) ||
	    !CHECK_OK(io_uring_queue_init(8, &ring, 0), "ring setup"))
		return KSFT_FAIL;
	if (!CHECK_OK(add_deny_if(ring.ring_fd, IORING_OP_OPENAT, 0, CTX_OFF(open.flags), O_CREAT,
				  O_CREAT, 24), "deny OPENAT with O_CREAT") ||
	    !CHECK_OK(add_deny_if(ring.ring_fd, IORING_OP_OPENAT2, 0, CTX_OFF(open.resolve),
				  RESOLVE_IN_ROOT, 0, 24), "deny OPENAT2 without RESOLVE_IN_ROOT") ||
	    !CHECK((res = open_op(&ring, AT_FDCWD, path, O_RDONLY, 0, false, 1)) == 0,
		   "plain OPENAT: %d, want 0", res) ||
	    !CHECK((res = open_op(&ring, AT_FDCWD, path, O_RDWR | O_CREAT, 0, false, 2)) ==
		   -EACCES, "OPENAT with O_CREAT: %d, want -EACCES", res) ||
	    !CHECK((res = open_op(&ring, dfd, name, O_RDONLY, 0, true, 3)) == -EACCES,
		   "OPENAT2 without RESOLVE_IN_ROOT: %d, want -EACCES", res) ||
	    !CHECK((res = open_op(&ring, dfd, name, O_RDONLY, RESOLVE_IN_ROOT, true, 4)) == 0,
		   "OPENAT2 with RESOLVE_IN_ROOT: %d, want 0", res))
		goto out;
	/* O_TMPFILE holds O_DIRECTORY: denying it must not deny directories */
	io_uring_queue_exit(&ring);
	if (!CHECK_OK(io_uring_queue_init(8, &ring, 0), "ring setup") ||
	    !CHECK_OK(iouring_bpf_filter_open(ring.ring_fd, O_TMPFILE, 0), "deny O_TMPFILE") ||
	    !CHECK((res = open_op(&ring, AT_FDCWD, "/tmp", O_RDONLY | O_DIRECTORY, 0, false, 5)) ==
		   0, "OPENAT of a directory under an O_TMPFILE deny: %d, want 0", res) ||
	    !CHECK((res = open_op(&ring, AT_FDCWD, "/tmp", O_RDWR | O_TMPFILE, 0, false, 6)) ==
		   -EACCES, "OPENAT with O_TMPFILE: %d, want -EACCES", res))
		goto out;
	fail = 0;
out:
	io_uring_queue_exit(&ring);
	close(dfd);
	unlink(path);
	return fail ? KSFT_FAIL : KSFT_PASS;
}

static int connect_op(struct io_uring *ring, const void *addr, socklen_t len, int family,
		      uint64_t ud)
{
	int s = socket(family, SOCK_STREAM, 0), ret;
	struct io_uring_sqe *sqe;

	if (s < 0)
		return -errno;
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_connect(sqe, s, addr, len);
	ret = run_one(ring, sqe, ud);
	close(s);
	return ret;
}

/* CONNECT: family, port and address in network byte order */
static int test_connect(void)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(9),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(9),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct io_uring ring;
	int fail = 1, ret;

	if (io_uring_queue_init(8, &ring, 0))
		return KSFT_FAIL;
	/* port 9 on 127.0.0.1 is denied; 127.0.0.2 port 9 and port 10 are not */
	if (!CHECK_OK(add_deny_if(ring.ring_fd, IORING_OP_CONNECT, 0, CTX_OFF(connect.v4_addr),
				  ~0u, htonl(INADDR_LOOPBACK), 24), "deny 127.0.0.1") ||
	    !CHECK_OK(add_deny_if(ring.ring_fd, IORING_OP_CONNECT, 0, CTX_OFF(connect.v6_addr) + 12,
				  ~0u, htonl(1), 24), "deny ::1") ||
	    !CHECK_OK(add_deny_if(ring.ring_fd, IORING_OP_CONNECT, 0, CTX_OFF(connect.family),
				  0xffff, AF_UNIX, 24), "deny AF_UNIX"))
		goto out;
	ret = connect_op(&ring, &a4, sizeof(a4), AF_INET, 1);
	if (!CHECK(ret == -EACCES, "connect to 127.0.0.1:9: %d", ret))
		goto out;
	a4.sin_addr.s_addr = htonl(INADDR_LOOPBACK + 1);
	ret = connect_op(&ring, &a4, sizeof(a4), AF_INET, 2);
	if (!CHECK(ret == -ECONNREFUSED, "connect to 127.0.0.2:9: %d (ECONNREFUSED)", ret))
		goto out;
	ret = connect_op(&ring, &a6, sizeof(a6), AF_INET6, 3);
	if (!CHECK(ret == -EACCES, "connect to [::1]:9: %d", ret))
		goto out;
	/* a short address: the family only; connect() itself refuses it */
	a4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ret = connect_op(&ring, &a4, 4, AF_INET, 4);
	if (!CHECK(ret == -EINVAL, "4-byte AF_INET address: %d (EINVAL from connect)", ret))
		goto out;
	fail = 0;
out:
	io_uring_queue_exit(&ring);
	return fail ? KSFT_FAIL : KSFT_PASS;
}

/* CONNECT: a filter on the port denies exactly that port, compared in network byte order */
static int test_connect_port(void)
{
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(9),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct io_uring ring;
	int fail = 1, ret;

	if (io_uring_queue_init(8, &ring, 0))
		return KSFT_FAIL;
	if (!CHECK_OK(add_deny_if(ring.ring_fd, IORING_OP_CONNECT, 0, CTX_OFF(connect.family) + 4,
				  0xffff, htons(9), 24), "deny port 9"))
		goto out;
	ret = connect_op(&ring, &a4, sizeof(a4), AF_INET, 1);
	if (!CHECK(ret == -EACCES, "connect to port 9: %d", ret))
		goto out;
	a4.sin_port = htons(2304);	/* 9 << 8: the same bytes swapped */
	ret = connect_op(&ring, &a4, sizeof(a4), AF_INET, 2);
	if (!CHECK(ret == -ECONNREFUSED, "connect to port 2304: %d", ret))
		goto out;
	fail = 0;
out:
	io_uring_queue_exit(&ring);
	return fail ? KSFT_FAIL : KSFT_PASS;
}

/* run @fn in a forked child; its exit status (KSFT_*) */
static int in_child(int (*fn)(void))
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return KSFT_FAIL;
	if (!pid)
		_exit(fn());
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return KSFT_FAIL;
	return WEXITSTATUS(status);
}

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
	if (!CHECK(setresgid(65534, 65534, 65534) == 0 && setresuid(65534, 65534, 65534) == 0,
		   "become nobody: %s", strerror(errno)))
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
 * Task filters need no_new_privs or CAP_SYS_ADMIN: nobody without
 * no_new_privs gets -EACCES, and succeeds once it is set.
 */
static int test_task_nnp(void)
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
 * A task's filters reach the rings of its children and grandchildren; what a
 * child adds stays with the child.
 */
static int test_task_inherit(void)
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

/* task allowlist: SQEs only, so register ops stay free; then -EPERM */
static int child_allowlist(void)
{
	struct io_uring_restriction nop_only = {
		.opcode = IORING_RESTRICTION_SQE_OP, .sqe_op = IORING_OP_NOP };
	struct task_restriction bad = { .flags = 1 };
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	char buf[8];
	int fd = open("/dev/zero", O_RDONLY);

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
	if (io_uring_queue_init(8, &ring, 0))
		return KSFT_FAIL;
	if (!CHECK(nop(&ring, 1) == 0, "NOP on an allowlisted ring"))
		return KSFT_FAIL;
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read(sqe, fd, buf, sizeof(buf), 0);
	if (!CHECK(run_one(&ring, sqe, 2) == -EACCES, "READ not denied by the allowlist") ||
	    /* an SQE-only allowlist leaves register ops alone (7.0's split) */
	    !CHECK(io_uring_register_files(&ring, &fd, 1) == 0, "register files denied") ||
	    /* and the ring's own allowlist is taken */
	    !CHECK(sys_register(ring.ring_fd, IORING_REGISTER_RESTRICTIONS, (void *)&nop_only, 1) ==
		   -EBADFD, "ring allowlist on an enabled ring"))
		return KSFT_FAIL;
	io_uring_queue_exit(&ring);
	return KSFT_PASS;
}

/*
 * A task SQE allowlist (fd -1): refusals, a second one -EPERM, rings made
 * afterwards run only the listed opcodes, and register ops stay allowed
 * (7.0's split).
 */
static int test_task_allowlist(void)
{
	return in_child(child_allowlist);
}

/* a register-op allowlist: files yes, buffers no */
static int child_register_allowlist(void)
{
	struct io_uring_restriction files = {
		.opcode = IORING_RESTRICTION_REGISTER_OP, .register_op = IORING_REGISTER_FILES };
	struct iovec iov = { .iov_base = malloc(4096), .iov_len = 4096 };
	struct io_uring ring;
	int fd = open("/dev/zero", O_RDONLY);

	if (!CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "PR_SET_NO_NEW_PRIVS") ||
	    !CHECK_OK(register_task_allowlist(&files, 1), "allow only IORING_REGISTER_FILES") ||
	    io_uring_queue_init(8, &ring, 0))
		return KSFT_FAIL;
	if (!CHECK(io_uring_register_files(&ring, &fd, 1) == 0, "register files") ||
	    !CHECK(io_uring_register_buffers(&ring, &iov, 1) == -EACCES, "register buffers") ||
	    !CHECK(nop(&ring, 1) == 0, "a register-only allowlist denied a NOP"))
		return KSFT_FAIL;
	io_uring_queue_exit(&ring);
	return KSFT_PASS;
}

/* a task register-op allowlist: listed ops run on a new ring, others -EACCES */
static int test_task_register_allowlist(void)
{
	return in_child(child_register_allowlist);
}

static const char *self_exe;

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

static int exec_check(void)
{
	return CHECK(nop_on_new_ring(5) == -EACCES, "the filter did not survive exec") ?
		KSFT_PASS : KSFT_FAIL;
}

/*
 * Task filters survive exec after the task has used io_uring (7.2's
 * behaviour; 7.0 and 7.1 dropped them).
 */
static int test_task_exec(void)
{
	return in_child(child_exec);
}

/* a loop policy's submissions pass the ring's filters as user space's do */
static int test_loop_policy(void)
{
	const uint32_t total = 16;
	struct iouring_bpf_ring r = { .fd = -1 };
	struct bpf_link *link = NULL;
	struct nops *skel = NULL;
	int ret, status = KSFT_FAIL;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 16, 0, IOURING_BPF_RING_FLAGS), "ring setup"))
		goto out;
	/* NOPs with an odd user_data are denied */
	if (!CHECK_OK(add_deny_if(r.fd, IORING_OP_NOP, 0, CTX_OFF(user_data), 1, 1, 0),
		      "deny NOPs with an odd user_data"))
		goto out;
	skel = nops__open();
	if (!CHECK(skel, "nops__open: %s", strerror(errno)))
		goto out;
	skel->rodata->iou_geom = r.geom;
	skel->rodata->nop_total = total;
	skel->rodata->nop_inflight = 4;
	skel->struct_ops.nops_ops->ring_fd = r.fd;
	if (!CHECK_OK(nops__load(skel), "nops__load"))
		goto out;
	link = bpf_map__attach_struct_ops(skel->maps.nops_ops);
	if (!CHECK(link, "attach: %s", strerror(errno)))
		goto out;
	ret = iouring_bpf_ring_run(&r);
	/* the policy counts a CQE with res != 0 as bad: the denied half */
	if (!CHECK(ret == 0, "enter: %d", ret) ||
	    !CHECK(skel->bss->nop_completed == total, "completed %llu of %u",
		   (unsigned long long)skel->bss->nop_completed, total) ||
	    !CHECK(skel->bss->nop_bad_cqes == total / 2, "%llu failed CQEs, want %u (the odd ones)",
		   (unsigned long long)skel->bss->nop_bad_cqes, total / 2))
		goto out;
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
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
 * A driver's uring_cmd is filtered by its opcode like any other request: a
 * ring that denies URING_CMD gets -EACCES for a ublk control command, and the
 * driver never sees it (the features word stays as it was).
 */
static int test_uring_cmd(void)
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

/* what a sandboxed program expects of one request */
struct expect {
	const char *what;
	uint8_t opcode;		/* NOP, READ (of /dev/zero) or SOCKET */
	int family, type;	/* SOCKET's */
	int res;		/* 0 (for READ: its byte count) or -EACCES */
};

static int check_requests(const struct expect *e, size_t n)
{
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	char buf[8];
	int fd, res, fail = 0;

	fd = open("/dev/zero", O_RDONLY);
	if (!CHECK(fd >= 0, "open /dev/zero: %s", strerror(errno)) ||
	    !CHECK_OK(io_uring_queue_init(8, &ring, 0), "ring setup"))
		return KSFT_FAIL;
	for (size_t i = 0; i < n; i++) {
		switch (e[i].opcode) {
		case IORING_OP_NOP:
			res = nop(&ring, i);
			break;
		case IORING_OP_READ:
			sqe = io_uring_get_sqe(&ring);
			io_uring_prep_read(sqe, fd, buf, sizeof(buf), 0);
			res = run_one(&ring, sqe, i);
			break;
		default:
			res = sock_op(&ring, e[i].family, e[i].type, i);
			break;
		}
		if (!CHECK(res == e[i].res, "%s: res %d, want %d", e[i].what, res, e[i].res))
			fail = 1;
	}
	io_uring_queue_exit(&ring);
	close(fd);
	return fail ? KSFT_FAIL : KSFT_PASS;
}

/* under sandbox --socket-family unix,inet --allow nop,socket --deny-rest */
static int sandbox_check(void)
{
	static const struct expect e[] = {
		{ "NOP", IORING_OP_NOP, 0, 0, 0 },
		{ "READ", IORING_OP_READ, 0, 0, -EACCES },
		{ "AF_INET6 socket", IORING_OP_SOCKET, AF_INET6, SOCK_DGRAM, -EACCES },
		{ "AF_UNIX socket", IORING_OP_SOCKET, AF_UNIX, SOCK_DGRAM, 0 },
	};

	if (!CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1, "no_new_privs not set") ||
	    !CHECK(getuid() == 65534, "not running as nobody"))
		return KSFT_FAIL;
	return check_requests(e, sizeof(e) / sizeof(e[0]));
}

static const char *tool;

/* iouring-bpf sandbox, run by an unprivileged user */
static int child_sandbox(void)
{
	if (!CHECK(setresgid(65534, 65534, 65534) == 0 && setresuid(65534, 65534, 65534) == 0,
		   "become nobody: %s", strerror(errno)))
		return KSFT_FAIL;
	execl(tool, tool, "sandbox", "--socket-family", "unix,inet", "--allow", "nop,socket",
	      "--deny-rest", "--", self_exe, "sandbox-check", (char *)NULL);
	fprintf(stderr, "exec %s: %s\n", tool, strerror(errno));
	return KSFT_FAIL;
}

/*
 * Checks `inspect --pid --json` on stdin against examples/sandbox/net-server.json
 * for PID's one ring FD: the profile's opcodes are filtered (each allowed by
 * a filter; socket's checks the family), every other opcode is denied.
 */
static const char inspect_checker[] =
	"import json, sys\n"
	"j = json.load(sys.stdin)\n"
	"pid, fd = int(sys.argv[1]), int(sys.argv[2])\n"
	"assert j[\"pid\"] == pid, j[\"pid\"]\n"
	"assert j[\"no_new_privs\"] is True\n"
	"assert [r[\"ring_fd\"] for r in j[\"rings\"]] == [fd], j[\"rings\"]\n"
	"r = j[\"rings\"][0]\n"
	"assert r[\"reported\"] is True and r[\"sqe_allowlist\"] is False\n"
	"allowed = {\"accept\", \"recv\", \"send\", \"recvmsg\", \"sendmsg\", \"close\", \"socket\",\n"
	"           \"bind\", \"listen\", \"poll_add\", \"poll_remove\", \"async_cancel\",\n"
	"           \"timeout\", \"link_timeout\"}\n"
	"f = r[\"filters\"]\n"
	"for op in allowed:\n"
	"    assert f.get(op) == \"filtered\", (op, f.get(op))\n"
	"for op in (\"read\", \"nop\", \"openat\", \"connect\", \"uring_cmd\"):\n"
	"    assert f.get(op) == \"denied\", (op, f.get(op))\n"
	"for op, v in f.items():\n"
	"    assert op in allowed or v == \"denied\", (op, v)\n"
	"assert len(f) > 40, len(f)\n";

/* under examples/sandbox/net-server.json: inet sockets yes, unix and READ no */
static int net_profile_check(void)
{
	static const struct expect e[] = {
		{ "AF_INET6 socket", IORING_OP_SOCKET, AF_INET6, SOCK_STREAM, 0 },
		{ "AF_UNIX socket", IORING_OP_SOCKET, AF_UNIX, SOCK_STREAM, -EACCES },
		{ "READ", IORING_OP_READ, 0, 0, -EACCES },
		{ "NOP", IORING_OP_NOP, 0, 0, -EACCES },
	};

	struct io_uring ring;
	char cmd[2048], out[8192];
	size_t n = 0;
	FILE *f;
	int ret;

	ret = check_requests(e, sizeof(e) / sizeof(e[0]));
	if (ret != KSFT_PASS)
		return ret;
	/* what iouring-bpf inspect --pid reports of this process and a ring of it */
	if (!CHECK_OK(io_uring_queue_init(4, &ring, 0), "ring setup"))
		return KSFT_FAIL;
	snprintf(cmd, sizeof(cmd), "%s --json inspect --pid %d", tool, (int)getpid());
	f = popen(cmd, "r");
	if (f) {
		n = fread(out, 1, sizeof(out) - 1, f);
		ret = pclose(f);
	}
	out[n] = '\0';
	io_uring_queue_exit(&ring);
	if (!CHECK(f && ret == 0, "%s: exit %d", cmd, ret))
		return KSFT_FAIL;
	/* the report parsed: this process, one ring, each opcode as the profile says */
	snprintf(cmd, sizeof(cmd), "python3 -c '%s' %d %d", inspect_checker, (int)getpid(),
		 ring.ring_fd);
	f = popen(cmd, "w");
	if (!CHECK(f, "popen python3: %s", strerror(errno)))
		return KSFT_FAIL;
	fputs(out, f);
	ret = pclose(f);
	if (!CHECK(ret == 0, "inspect --pid --json does not show the profile (checker exit %d): %s",
		   ret, out))
		return KSFT_FAIL;
	return KSFT_PASS;
}

static const char *profile, *profile_dir;

static int child_profile(void)
{
	execl(tool, tool, "sandbox", "--profile", profile, "--", self_exe, "net-profile-check", tool,
	      (char *)NULL);
	fprintf(stderr, "exec %s: %s\n", tool, strerror(errno));
	return KSFT_FAIL;
}

/*
 * iouring-bpf sandbox --profile examples/sandbox/net-server.json: inet sockets
 * only, no file I/O; iouring-bpf inspect --pid shows it on the program's ring.
 */
static int test_sandbox_profile(void)
{
	if (!tool || !profile) {
		fprintf(stderr, "usage: filters_test sandbox-profile TOOL PROFILE\n");
		return KSFT_FAIL;
	}
	return in_child(child_profile);
}

/*
 * A ring created before the sandbox and open without FD_CLOEXEC: the
 * program would inherit it with no filter, so the sandbox refuses (EBUSY,
 * naming the descriptor) and does not run the program.
 */
static int child_inherited_ring(void)
{
	char out[2048], want[96];
	struct io_uring ring;
	size_t n = 0;
	ssize_t r;
	int pipefd[2], status;
	pid_t pid;

	if (!CHECK_OK(io_uring_queue_init(4, &ring, 0), "ring setup") ||
	    !CHECK(fcntl(ring.ring_fd, F_SETFD, 0) == 0, "clear FD_CLOEXEC: %s", strerror(errno)) ||
	    !CHECK(pipe(pipefd) == 0, "pipe: %s", strerror(errno)))
		return KSFT_FAIL;
	pid = fork();
	if (pid == 0) {
		dup2(pipefd[1], STDOUT_FILENO);
		dup2(pipefd[1], STDERR_FILENO);
		execl(tool, tool, "sandbox", "--allow", "nop", "--", "/bin/echo", "program ran",
		      (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	while (pid > 0 && n < sizeof(out) - 1 &&
	       (r = read(pipefd[0], out + n, sizeof(out) - 1 - n)) > 0)
		n += r;
	out[n] = '\0';
	close(pipefd[0]);
	if (!CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "run %s: %s", tool, strerror(errno)))
		return KSFT_FAIL;
	io_uring_queue_exit(&ring);
	snprintf(want, sizeof(want), "descriptor %d is an io_uring created before the sandbox",
		 ring.ring_fd);
	if (!CHECK(WIFEXITED(status) && WEXITSTATUS(status) != 0 && strstr(out, want) &&
		   !strstr(out, "program ran"),
		   "sandbox with an inherited ring (fd %d): status %#x, output: %s",
		   ring.ring_fd, status, out))
		return KSFT_FAIL;
	return KSFT_PASS;
}

/*
 * iouring-bpf sandbox run by nobody: no_new_privs set, the allowlist and
 * socket families in force in the program it execs; and refused when the
 * program would inherit a ring the rules do not bind.
 */
static int test_sandbox(void)
{
	if (!tool) {
		fprintf(stderr, "usage: filters_test sandbox PATH-OF-iouring-bpf\n");
		return KSFT_FAIL;
	}
	if (in_child(child_inherited_ring) != KSFT_PASS)
		return KSFT_FAIL;
	return in_child(child_sandbox);
}

#ifndef IO_URING_BPF_FILTER_MAX_INSNS
#define IO_URING_BPF_FILTER_MAX_INSNS	32768
#endif
#define FULL		BPF_MAXINSNS	/* 4096 */
/* 7 full filters count 7 * (4096 + 4); the 8th may have what is left: 4068 */
#define LAST_FIT	(IO_URING_BPF_FILTER_MAX_INSNS - 7 * (FULL + 4))

/* @len (>= 2) instructions that allow: A = ~0, then A /= 1 until the return */
static struct sock_filter *long_prog(uint32_t len)
{
	static struct sock_filter p[BPF_MAXINSNS];

	p[0] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_IMM, 0xffffffff);
	for (uint32_t i = 1; i < len - 1; i++)
		p[i] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_DIV | BPF_K, 1);
	p[len - 1] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 1);
	return p;
}

static int add_long(int fd, uint32_t len)
{
	return add_filter(fd, IORING_OP_NOP, 0, long_prog(len), len, NULL);
}

static int add_full(int fd, int n)
{
	int ret = 0;

	for (int i = 0; i < n && !ret; i++)
		ret = add_long(fd, FULL);
	return ret;
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

/*
 * a registration past IO_URING_BPF_FILTER_MAX_INSNS (32768 instructions,
 * each filter already there counting 4 more, as seccomp counts) fails with
 * -ENOMEM: on a ring, on a task, and on a ring over its task's filters.
 */
static int test_cap(void)
{
	struct io_uring ring;
	int ret = KSFT_FAIL;

	if (io_uring_queue_init(8, &ring, 0))
		return KSFT_FAIL;
	if (CHECK_OK(add_full(ring.ring_fd, 7), "7 filters of 4096") &&
	    fill_to_cap(ring.ring_fd, "ring") &&
	    CHECK(nop(&ring, 1) == 0, "NOP after the refusals"))
		ret = in_child(child_cap);
	io_uring_queue_exit(&ring);
	return ret;
}

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
 * a submitter SIGKILLed in one io_uring_enter() of about 12 s of NOPs
 * through a full chain of filters exits within 2 s (KILL_WITHIN_MS): the
 * submission stops at the signal.
 */
static int test_kill_submitter(void)
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


/*
 * One request of a kind named on the command line: its result, with a
 * descriptor it returns closed and counted as 0. /tmp is the directory
 * OPENAT2's RESOLVE_IN_ROOT makes the root; a listener on 127.0.0.1 takes
 * the inet connects.
 */
static int kind_op(struct io_uring *ring, const char *kind, uint64_t ud)
{
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(9),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_un au = { .sun_family = AF_UNIX, .sun_path = "/nonexistent" };
	socklen_t len = sizeof(a4);
	struct io_uring_sqe *sqe;
	int fd, dfd, ret, l;
	char buf[8];

	if (!strcmp(kind, "nop"))
		return nop(ring, ud);
	if (!strcmp(kind, "read")) {
		fd = open("/dev/zero", O_RDONLY);
		sqe = io_uring_get_sqe(ring);
		io_uring_prep_read(sqe, fd, buf, sizeof(buf), 0);
		ret = run_one(ring, sqe, ud);
		close(fd);
		return ret < 0 ? ret : 0;
	}
	if (!strcmp(kind, "socket-unix"))
		return sock_op(ring, AF_UNIX, SOCK_STREAM, ud);
	if (!strcmp(kind, "socket-inet"))
		return sock_op(ring, AF_INET, SOCK_STREAM, ud);
	if (!strcmp(kind, "socket-inet6"))
		return sock_op(ring, AF_INET6, SOCK_STREAM, ud);
	if (!strcmp(kind, "connect-inet")) {
		l = socket(AF_INET, SOCK_STREAM, 0);
		if (l < 0 || bind(l, (struct sockaddr *)&a4, sizeof(a4)) || listen(l, 1) ||
		    getsockname(l, (struct sockaddr *)&a4, &len))
			return -ENOTRECOVERABLE;
		ret = connect_op(ring, &a4, sizeof(a4), AF_INET, ud);
		close(l);
		return ret;
	}
	if (!strcmp(kind, "connect-inet6"))
		return connect_op(ring, &a6, sizeof(a6), AF_INET6, ud);
	if (!strcmp(kind, "connect-unix"))
		return connect_op(ring, &au, sizeof(au), AF_UNIX, ud);
	if (!strcmp(kind, "open"))
		return open_op(ring, AT_FDCWD, "/dev/null", O_RDONLY, 0, false, ud);
	if (!strcmp(kind, "open-creat"))
		return open_op(ring, AT_FDCWD, "/tmp/filters-creat", O_RDWR | O_CREAT, 0, false, ud);
	if (!strcmp(kind, "open-dir"))
		return open_op(ring, AT_FDCWD, "/tmp", O_RDONLY | O_DIRECTORY, 0, false, ud);
	if (!strcmp(kind, "open-tmpfile"))
		return open_op(ring, AT_FDCWD, "/tmp", O_RDWR | O_TMPFILE, 0, false, ud);
	dfd = open("/tmp", O_RDONLY | O_DIRECTORY);
	ret = -ENOTRECOVERABLE;
	if (!strcmp(kind, "open2"))
		ret = open_op(ring, dfd, ".", O_RDONLY | O_DIRECTORY, 0, true, ud);
	else if (!strcmp(kind, "open2-in-root"))
		ret = open_op(ring, dfd, ".", O_RDONLY | O_DIRECTORY, RESOLVE_IN_ROOT, true, ud);
	else if (!strcmp(kind, "open2-in-root-creat"))
		ret = open_op(ring, dfd, "filters-creat2", O_RDWR | O_CREAT, RESOLVE_IN_ROOT, true, ud);
	else
		fprintf(stderr, "no request kind %s\n", kind);
	close(dfd);
	return ret;
}

/*
 * filters_test expect KIND=RES...: each request on a new ring of this
 * (sandboxed) process gets RES: a number (0: done; -13: -EACCES), or
 * "!-13": anything but -EACCES (a connect the filters let through may
 * still be refused by the peer).
 */
static int expect_requests(int argc, char **argv)
{
	struct io_uring ring;
	int fail = 0, res;

	if (!CHECK_OK(io_uring_queue_init(8, &ring, 0), "ring setup"))
		return KSFT_FAIL;
	for (int i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		bool not;
		int want;

		if (!eq) {
			fprintf(stderr, "expect: %s is not KIND=RES\n", argv[i]);
			return KSFT_FAIL;
		}
		*eq = '\0';
		not = eq[1] == '!';
		want = atoi(eq + 1 + not);
		res = kind_op(&ring, argv[i], i + 1);
		if (!CHECK(not ? res != want : res == want, "%s: %d, want %s%d", argv[i], res,
			   not ? "anything but " : "", want))
			fail = 1;
		else
			printf("%s: %d\n", argv[i], res);
	}
	io_uring_queue_exit(&ring);
	unlink("/tmp/filters-creat");
	unlink("/tmp/filters-creat2");
	return fail ? KSFT_FAIL : KSFT_PASS;
}

/*
 * TOOL sandbox OPTIONS -- filters_test expect CHECKS..., as nobody: 0 if
 * the sandboxed program's checks all passed
 */
static int sandboxed(const char *const *opts, const char *const *checks)
{
	const char *argv[48];
	int n = 0, status;
	pid_t pid;

	argv[n++] = tool;
	argv[n++] = "sandbox";
	while (*opts)
		argv[n++] = *opts++;
	argv[n++] = "--";
	argv[n++] = self_exe;
	argv[n++] = "expect";
	while (*checks && n < 47)
		argv[n++] = *checks++;
	argv[n] = NULL;
	pid = fork();
	if (pid == 0) {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(KSFT_FAIL);
		execv(tool, (char *const *)argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return KSFT_FAIL;
	return WIFEXITED(status) ? WEXITSTATUS(status) : KSFT_FAIL;
}

#define LIST(...) ((const char *const []){ __VA_ARGS__, NULL })

/*
 * each option of iouring-bpf sandbox and both example profiles, as nobody:
 * what each allows and denies (AF_INET included), checked by the program
 * it runs.
 */
static int test_sandbox_options(void)
{
	char storage[PATH_MAX], net[PATH_MAX];
	int fail = 0;
	const struct {
		const char *what;
		const char *const *opts, *const *checks;
	} cases[] = {
		{ "--deny read", LIST("--deny", "read"), LIST("read=-13", "nop=0") },
		{ "--open-deny creat,tmpfile", LIST("--open-deny", "creat,tmpfile"),
		  LIST("open=0", "open-creat=-13", "open-dir=0", "open-tmpfile=-13", "nop=0") },
		{ "--open-resolve in_root", LIST("--open-resolve", "in_root"),
		  LIST("open=-13", "open2=-13", "open2-in-root=0") },
		{ "--connect-family inet", LIST("--connect-family", "inet"),
		  LIST("connect-inet=!-13", "connect-inet6=-13", "connect-unix=-13") },
		{ "--socket-family inet6", LIST("--socket-family", "inet6"),
		  LIST("socket-inet6=0", "socket-inet=-13", "socket-unix=-13") },
		{ "--allow nop --deny-rest", LIST("--allow", "nop", "--deny-rest"),
		  LIST("nop=0", "read=-13", "open=-13", "socket-inet=-13") },
	};

	if (!tool || !profile_dir) {
		fprintf(stderr, "usage: filters_test sandbox-options TOOL PROFILE-DIR\n");
		return KSFT_FAIL;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (!CHECK(sandboxed(cases[i].opts, cases[i].checks) == KSFT_PASS,
			   "sandbox %s: the program's checks failed (above)", cases[i].what))
			fail = 1;
		else
			printf("ok: sandbox %s\n", cases[i].what);
	}
	snprintf(storage, sizeof(storage), "%s/storage.json", profile_dir);
	snprintf(net, sizeof(net), "%s/net-server.json", profile_dir);
	if (!CHECK(sandboxed(LIST("--profile", storage),
			     LIST("read=0", "open2-in-root=0", "open2=-13", "open=-13",
				  "open2-in-root-creat=-13", "socket-inet=-13", "nop=-13")) == KSFT_PASS,
		   "sandbox --profile storage.json"))
		fail = 1;
	if (!CHECK(sandboxed(LIST("--profile", net),
			     LIST("socket-inet=0", "socket-inet6=0", "socket-unix=-13", "read=-13",
				  "open2-in-root=-13", "connect-inet=-13")) == KSFT_PASS,
		   "sandbox --profile net-server.json"))
		fail = 1;
	return fail ? KSFT_FAIL : KSFT_PASS;
}

static const struct {
	const char *name;
	int (*fn)(void);
} tests[] = {
	{ "refusals", test_refusals },
	{ "deny-allow", test_deny_allow },
	{ "stacking", test_stacking },
	{ "link", test_link },
	{ "socket", test_socket },
	{ "open", test_open },
	{ "connect", test_connect },
	{ "connect-port", test_connect_port },
	{ "task-nnp", test_task_nnp },
	{ "task-inherit", test_task_inherit },
	{ "task-allowlist", test_task_allowlist },
	{ "task-register-allowlist", test_task_register_allowlist },
	{ "task-exec", test_task_exec },
	{ "loop-policy", test_loop_policy },
	{ "uring-cmd", test_uring_cmd },
	{ "cap", test_cap },
	{ "kill-submitter", test_kill_submitter },
	{ "sandbox", test_sandbox },
	{ "sandbox-profile", test_sandbox_profile },
	{ "sandbox-options", test_sandbox_options },
};

int main(int argc, char **argv)
{
	int ret;

	self_exe = argv[0];
	if (argc == 2 && !strcmp(argv[1], "exec-check"))
		return exec_check();
	if (argc == 2 && !strcmp(argv[1], "sandbox-check"))
		return sandbox_check();
	if (argc >= 2 && !strcmp(argv[1], "expect"))
		return expect_requests(argc - 2, argv + 2);
	if (argc == 3 && !strcmp(argv[1], "net-profile-check")) {
		tool = argv[2];
		return net_profile_check();
	}
	if (argc == 3 && !strcmp(argv[1], "sandbox"))
		tool = argv[2], argc = 2;
	if (argc == 4 && !strcmp(argv[1], "sandbox-profile"))
		tool = argv[2], profile = argv[3], argc = 2;
	if (argc == 4 && !strcmp(argv[1], "sandbox-options"))
		tool = argv[2], profile_dir = argv[3], argc = 2;
	if (argc != 2 || !strcmp(argv[1], "--help")) {
		fprintf(stderr, "usage: %s TEST\ntests:", argv[0]);
		for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
			fprintf(stderr, " %s", tests[i].name);
		fprintf(stderr, "\n");
		return argc == 2 ? 0 : 2;
	}
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if (strcmp(argv[1], tests[i].name))
			continue;
		ret = probe();
		if (ret != KSFT_PASS)
			return ret;
		return tests[i].fn();
	}
	fprintf(stderr, "%s: no test %s\n", argv[0], argv[1]);
	return 2;
}
