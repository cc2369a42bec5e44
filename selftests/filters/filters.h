/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The filters/ tests: io_uring's classic BPF filters and task restrictions
 * (IORING_REGISTER_BPF_FILTER, IORING_REGISTER_RESTRICTIONS on fd -1), as
 * mainline 7.0-7.2 defines them, on the patched kernel. What the topic
 * files share: registration and request helpers (common.c), the tests.
 *
 *   filters_test NAME     runs one test; exit 0 pass, 1 fail, 77 skip
 *
 * Written from the interface's description, not from mainline's tests.
 */
#ifndef FILTERS_TEST_H
#define FILTERS_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <linux/filter.h>
#include <linux/io_uring/bpf_filter.h>
#include <liburing.h>
#include <liburing-bpf.h>
#include "selftest.h"

#define REGISTER_BPF_FILTER	37
#define REGISTER_RESTRICTIONS	11

/* struct io_uring_task_restriction */
struct task_restriction {
	uint16_t flags;
	uint16_t nr_res;
	uint32_t resv[3];
	struct io_uring_restriction res[];
};

/* a program that returns @verdict for every request */
#define PROG_CONST(verdict) { BPF_STMT(BPF_RET | BPF_K, (verdict)) }

#define CTX_OFF(f)	((uint32_t)offsetof(struct io_uring_bpf_ctx, f))

#ifndef IO_URING_BPF_FILTER_MAX_INSNS
#define IO_URING_BPF_FILTER_MAX_INSNS	32768
#endif
#define FULL		BPF_MAXINSNS	/* 4096 */
/* 7 full filters count 7 * (4096 + 4); the 8th may have what is left: 4068 */
#define LAST_FIT	(IO_URING_BPF_FILTER_MAX_INSNS - 7 * (FULL + 4))

/* set by main() from the command line */
extern const char *self_exe;
extern const char *tool, *profile, *profile_dir;

int sys_register(int fd, unsigned int op, void *arg, unsigned int nr);
/*
 * Register @prog (@len instructions) for @opcode on @fd (-1: the task);
 * *pdu in: the payload size the filter expects, out: the kernel's.
 */
int add_filter(int fd, uint32_t opcode, uint32_t flags, struct sock_filter *prog,
	       uint32_t len, uint8_t *pdu);
int add_const(int fd, uint32_t opcode, uint32_t flags, uint32_t verdict);
/* deny when (word at @off & @mask) == @val, allow otherwise */
int add_deny_if(int fd, uint32_t opcode, uint32_t flags, uint32_t off, uint32_t mask,
		uint32_t val, uint8_t pdu);
/* @len (>= 2) allowing instructions for NOP; @n filters of FULL of them */
int add_long(int fd, uint32_t len);
int add_full(int fd, int n);

/* submit one prepared SQE and return its CQE's res (user_data checked) */
int run_one(struct io_uring *ring, struct io_uring_sqe *sqe, uint64_t ud);
int nop(struct io_uring *ring, uint64_t ud);
/* READ of 8 bytes from @fd: its CQE's res */
int read_op(struct io_uring *ring, int fd, uint64_t ud);
/* SOCKET, OPENAT/OPENAT2, CONNECT: 0 (a returned descriptor closed) or -errno */
int sock_op(struct io_uring *ring, int family, int type, uint64_t ud);
int open_op(struct io_uring *ring, int dfd, const char *name, int flags, uint64_t resolve,
	    bool two, uint64_t ud);
int connect_op(struct io_uring *ring, const void *addr, socklen_t len, int family,
	       uint64_t ud);

/* run @fn in a forked child; its exit status (KSFT_*) */
int in_child(int (*fn)(void));
/* setresgid/setresuid to 65534; false (reported) if refused */
bool become_nobody(void);
/* @body on a new 8-entry ring, torn down after: @body's KSFT_* verdict */
int with_ring(int (*body)(struct io_uring *ring));

struct bpf_object_skeleton;
struct bpf_map;
/*
 * An opened struct_ops skeleton: set its ring (@geom: its iou_geom global,
 * @ring_fd: its map's ring_fd) from @r, load it, attach @ops, run @r's loop,
 * detach. KSFT_PASS if the loop ended with 0.
 */
int run_skeleton(struct bpf_object_skeleton *s, struct bpf_map *ops,
		 struct iouring_bpf_geometry *geom, uint32_t *ring_fd,
		 struct iouring_bpf_ring *r);

/* the sub-commands a test execs this program with */
int exec_check(void);
int sandbox_check(void);
int net_profile_check(void);
int expect_requests(int argc, char **argv);

/* register.c */
int test_refusals(void);
int test_cap(void);
/* opcodes.c */
int test_deny_allow(void);
int test_stacking(void);
int test_link(void);
/* args.c */
int test_socket(void);
int test_open(void);
int test_connect(void);
int test_connect_port(void);
/* task.c */
int test_task_nnp(void);
int test_task_inherit(void);
int test_task_allowlist(void);
int test_task_register_allowlist(void);
int test_task_exec(void);
/* loop_cmd.c */
int test_loop_policy(void);
int test_uring_cmd(void);
/* kill_submitter.c */
int test_kill_submitter(void);
/* sandbox.c */
int test_sandbox(void);
int test_sandbox_profile(void);
/* sandbox_options.c */
int test_sandbox_options(void);

#endif
