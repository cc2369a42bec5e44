// SPDX-License-Identifier: (LGPL-2.1 OR MIT)
/*
 * io_uring request filters (IORING_REGISTER_BPF_FILTER) and task
 * restrictions (IORING_REGISTER_RESTRICTIONS on fd -1): rules compiled to
 * classic BPF here, so that nobody writes a filter by hand.
 */
#define _GNU_SOURCE	/* O_TMPFILE */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/filter.h>

#include "liburing-bpf.h"

_Static_assert(sizeof(struct io_uring_bpf_ctx) == 40, "io_uring_bpf_ctx layout");
_Static_assert(sizeof(struct io_uring_bpf_filter) == 64, "io_uring_bpf_filter layout");
_Static_assert(sizeof(struct io_uring_bpf) == 72, "io_uring_bpf layout");
_Static_assert(sizeof(struct iouring_bpf_task_restriction) == 16,
	       "io_uring_task_restriction layout");

#define CTX_OFF(f)	((uint32_t)offsetof(struct io_uring_bpf_ctx, f))

static int register_call(int fd, unsigned int op, void *arg, unsigned int nr)
{
	long ret = syscall(__NR_io_uring_register, fd, op, arg, nr);

	return ret < 0 ? -errno : (int)ret;
}

int iouring_bpf_filter_add(int fd, unsigned int opcode, unsigned int flags,
			   const struct sock_filter *insns, unsigned int nr_insns,
			   unsigned int *pdu_size)
{
	struct io_uring_bpf reg;
	int ret;

	if (!insns || !nr_insns || opcode > 255 || (pdu_size && *pdu_size > 255))
		return -EINVAL;
	memset(&reg, 0, sizeof(reg));
	reg.cmd_type = IO_URING_BPF_CMD_FILTER;
	reg.filter.opcode = opcode;
	reg.filter.flags = flags;
	reg.filter.filter_len = nr_insns;
	reg.filter.pdu_size = pdu_size ? (uint8_t)*pdu_size : 0;
	reg.filter.filter_ptr = (uint64_t)(uintptr_t)insns;
	ret = register_call(fd, IOURING_BPF_REGISTER_BPF_FILTER, &reg, 1);
	if (pdu_size)
		*pdu_size = reg.filter.pdu_size;
	return ret;
}

static int add_verdict(int fd, unsigned int opcode, unsigned int flags, unsigned int verdict)
{
	struct sock_filter insn = BPF_STMT(BPF_RET | BPF_K, verdict);

	return iouring_bpf_filter_add(fd, opcode, flags, &insn, 1, NULL);
}

int iouring_bpf_filter_allow(int fd, const unsigned int *opcodes, unsigned int nr,
			     bool deny_rest)
{
	unsigned int i;
	int ret;

	if (!opcodes || !nr)
		return -EINVAL;
	/*
	 * DENY_REST goes with the last one, when every other listed opcode has
	 * its filter: it fills the slots that are empty at registration, and
	 * an allow added after would stack on the denial.
	 */
	for (i = 0; i < nr; i++) {
		ret = add_verdict(fd, opcodes[i],
				  deny_rest && i == nr - 1 ? IO_URING_BPF_FILTER_DENY_REST : 0, 1);
		if (ret)
			return ret;
	}
	return 0;
}

int iouring_bpf_filter_deny(int fd, unsigned int opcode)
{
	return add_verdict(fd, opcode, 0, 0);
}

/* allow when the 32-bit word at @off is one of @vals[nr], else deny */
static int add_one_of(int fd, unsigned int opcode, uint32_t off, const uint32_t *vals,
		      unsigned int nr, unsigned int pdu)
{
	struct sock_filter *p;
	unsigned int i, n = 0;
	int ret;

	if (!nr || nr > 250)
		return -EINVAL;
	p = calloc(nr + 3, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, off);
	/* the jump to "allow" from compare i skips the remaining compares and the deny */
	for (i = 0; i < nr; i++)
		p[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, vals[i],
						      nr - i, 0);
	p[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0);
	p[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 1);
	ret = iouring_bpf_filter_add(fd, opcode, IO_URING_BPF_FILTER_SZ_STRICT, p, n, &pdu);
	free(p);
	return ret;
}

/* @opcode only for these address families (the payload's family word) */
static int add_families(int fd, unsigned int opcode, uint32_t off, unsigned int pdu,
			const int *families, unsigned int nr)
{
	uint32_t vals[250];
	unsigned int i;

	if (!families || !nr || nr > 250)
		return -EINVAL;
	for (i = 0; i < nr; i++)
		vals[i] = (uint32_t)families[i];
	return add_one_of(fd, opcode, off, vals, nr, pdu);
}

int iouring_bpf_filter_socket_families(int fd, const int *families, unsigned int nr)
{
	return add_families(fd, IORING_OP_SOCKET, CTX_OFF(socket.family),
			    sizeof(((struct io_uring_bpf_ctx *)0)->socket), families, nr);
}

int iouring_bpf_filter_connect_families(int fd, const int *families, unsigned int nr)
{
	return add_families(fd, IORING_OP_CONNECT, CTX_OFF(connect.family),
			    sizeof(((struct io_uring_bpf_ctx *)0)->connect), families, nr);
}

/*
 * OPENAT and OPENAT2: deny any of @deny_flags (O_* bits, 64-bit: both
 * words), and unless all of @need_resolve (RESOLVE_* bits) are set. OPENAT
 * has no resolve: with @need_resolve, every OPENAT is denied.
 */
int iouring_bpf_filter_open(int fd, __u64 deny_flags, __u64 need_resolve)
{
	/*
	 * O_TMPFILE is its own bit plus O_DIRECTORY: tested bit by bit it
	 * would deny every O_DIRECTORY open too. Its own bit marks a tmpfile.
	 */
	const __u64 deny = (deny_flags & O_TMPFILE) == O_TMPFILE ?
			   deny_flags & ~(__u64)O_DIRECTORY : deny_flags;
	const uint32_t flags_lo = CTX_OFF(open.flags), flags_hi = flags_lo + 4;
	const uint32_t res_lo = CTX_OFF(open.resolve), res_hi = res_lo + 4;
	unsigned int pdu = sizeof(((struct io_uring_bpf_ctx *)0)->open);
	struct sock_filter p[] = {
		/* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, flags_lo),
		/* 1 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, (uint32_t)deny, 9, 0),
		/* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, flags_hi),
		/* 3 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, (uint32_t)(deny >> 32), 7, 0),
		/* 4 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, res_lo),
		/* 5 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, (uint32_t)need_resolve),
		/* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)need_resolve, 0, 4),
		/* 7 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, res_hi),
		/* 8 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, (uint32_t)(need_resolve >> 32)),
		/* 9 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(need_resolve >> 32), 0, 1),
		/* 10 */ BPF_STMT(BPF_RET | BPF_K, 1),
		/* 11 */ BPF_STMT(BPF_RET | BPF_K, 0),
	};
	unsigned int ops[] = { IORING_OP_OPENAT, IORING_OP_OPENAT2 };
	unsigned int i;
	int ret;

	for (i = 0; i < 2; i++) {
		ret = iouring_bpf_filter_add(fd, ops[i], IO_URING_BPF_FILTER_SZ_STRICT, p,
					     sizeof(p) / sizeof(p[0]), &pdu);
		if (ret)
			return ret;
	}
	return 0;
}

int iouring_bpf_task_restrict(const struct io_uring_restriction *res, unsigned int nr)
{
	struct iouring_bpf_task_restriction *tr;
	int ret;

	if ((nr && !res) || nr > 0xffff)
		return -EINVAL;
	tr = calloc(1, sizeof(*tr) + (size_t)nr * sizeof(*res));
	if (!tr)
		return -ENOMEM;
	tr->nr_res = (__u16)nr;
	if (nr)
		memcpy(tr->restrictions, res, (size_t)nr * sizeof(*res));
	ret = register_call(-1, IORING_REGISTER_RESTRICTIONS, tr, 1);
	free(tr);
	return ret;
}

int iouring_bpf_no_new_privs(void)
{
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ? -errno : 0;
}

static const char *const opcode_names[] = {
	[IORING_OP_NOP] = "nop", [IORING_OP_READV] = "readv", [IORING_OP_WRITEV] = "writev",
	[IORING_OP_FSYNC] = "fsync", [IORING_OP_READ_FIXED] = "read_fixed",
	[IORING_OP_WRITE_FIXED] = "write_fixed", [IORING_OP_POLL_ADD] = "poll_add",
	[IORING_OP_POLL_REMOVE] = "poll_remove", [IORING_OP_SYNC_FILE_RANGE] = "sync_file_range",
	[IORING_OP_SENDMSG] = "sendmsg", [IORING_OP_RECVMSG] = "recvmsg",
	[IORING_OP_TIMEOUT] = "timeout", [IORING_OP_TIMEOUT_REMOVE] = "timeout_remove",
	[IORING_OP_ACCEPT] = "accept", [IORING_OP_ASYNC_CANCEL] = "async_cancel",
	[IORING_OP_LINK_TIMEOUT] = "link_timeout", [IORING_OP_CONNECT] = "connect",
	[IORING_OP_FALLOCATE] = "fallocate", [IORING_OP_OPENAT] = "openat",
	[IORING_OP_CLOSE] = "close", [IORING_OP_FILES_UPDATE] = "files_update",
	[IORING_OP_STATX] = "statx", [IORING_OP_READ] = "read", [IORING_OP_WRITE] = "write",
	[IORING_OP_FADVISE] = "fadvise", [IORING_OP_MADVISE] = "madvise",
	[IORING_OP_SEND] = "send", [IORING_OP_RECV] = "recv", [IORING_OP_OPENAT2] = "openat2",
	[IORING_OP_EPOLL_CTL] = "epoll_ctl", [IORING_OP_SPLICE] = "splice",
	[IORING_OP_PROVIDE_BUFFERS] = "provide_buffers",
	[IORING_OP_REMOVE_BUFFERS] = "remove_buffers", [IORING_OP_TEE] = "tee",
	[IORING_OP_SHUTDOWN] = "shutdown", [IORING_OP_RENAMEAT] = "renameat",
	[IORING_OP_UNLINKAT] = "unlinkat", [IORING_OP_MKDIRAT] = "mkdirat",
	[IORING_OP_SYMLINKAT] = "symlinkat", [IORING_OP_LINKAT] = "linkat",
	[IORING_OP_MSG_RING] = "msg_ring", [IORING_OP_FSETXATTR] = "fsetxattr",
	[IORING_OP_SETXATTR] = "setxattr", [IORING_OP_FGETXATTR] = "fgetxattr",
	[IORING_OP_GETXATTR] = "getxattr", [IORING_OP_SOCKET] = "socket",
	[IORING_OP_URING_CMD] = "uring_cmd", [IORING_OP_SEND_ZC] = "send_zc",
	[IORING_OP_SENDMSG_ZC] = "sendmsg_zc", [IORING_OP_READ_MULTISHOT] = "read_multishot",
	[IORING_OP_WAITID] = "waitid", [IORING_OP_FUTEX_WAIT] = "futex_wait",
	[IORING_OP_FUTEX_WAKE] = "futex_wake", [IORING_OP_FUTEX_WAITV] = "futex_waitv",
	[IORING_OP_FIXED_FD_INSTALL] = "fixed_fd_install", [IORING_OP_FTRUNCATE] = "ftruncate",
	[IORING_OP_BIND] = "bind", [IORING_OP_LISTEN] = "listen",
	[IORING_OP_RECV_ZC] = "recv_zc", [IORING_OP_EPOLL_WAIT] = "epoll_wait",
	[IORING_OP_READV_FIXED] = "readv_fixed", [IORING_OP_WRITEV_FIXED] = "writev_fixed",
};

const char *iouring_bpf_opcode_name(unsigned int opcode)
{
	if (opcode < sizeof(opcode_names) / sizeof(opcode_names[0]) && opcode_names[opcode])
		return opcode_names[opcode];
	return NULL;
}

int iouring_bpf_opcode_from_name(const char *name)
{
	unsigned int i;

	if (!name)
		return -EINVAL;
	for (i = 0; i < sizeof(opcode_names) / sizeof(opcode_names[0]); i++)
		if (opcode_names[i] && !strcasecmp(opcode_names[i], name))
			return (int)i;
	return -ENOENT;
}

int iouring_bpf_ring_filters_read(pid_t pid, int fd, struct iouring_bpf_ring_filters *out)
{
	char path[64], line[4096];
	bool ring = false;
	FILE *f;

	if (!out || fd < 0)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", pid > 0 ? (int)pid : (int)getpid(),
		 fd);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		int sqe, reg;

		if (!strncmp(line, "SqMask:", 7))
			ring = true;
		if (sscanf(line, "Restricted:\t%d %d", &sqe, &reg) == 2) {
			out->sqe_restricted = sqe;
			out->reg_restricted = reg;
			out->reported = true;
		} else if (!strncmp(line, "BpfFilters:", 11)) {
			char *save = NULL;

			for (char *tok = strtok_r(line + 11, " \t\n", &save); tok;
			     tok = strtok_r(NULL, " \t\n", &save)) {
				unsigned int op, n;

				if (sscanf(tok, "%u:%u", &op, &n) != 2 || op > 255)
					continue;
				out->nr_filters[op] = n > 255 ? 255 : (unsigned char)n;
				out->deny_rest[op] = strstr(tok, "+deny") != NULL;
			}
		}
	}
	fclose(f);
	return ring ? 0 : -EBADF;
}
