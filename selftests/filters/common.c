// SPDX-License-Identifier: GPL-2.0
/*
 * filters/ tests: registering filters, one request of each kind on a ring,
 * children, the shared ring and policy sequences; main() runs the test
 * named by argv[1] (or a sub-command a test execs this program with).
 *
 * usage: filters_test NAME [ARGS]; filters_test --help lists the tests
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <bpf/libbpf.h>
#include "filters.h"

const char *self_exe;
const char *tool, *profile, *profile_dir;

int sys_register(int fd, unsigned int op, void *arg, unsigned int nr)
{
	int ret = syscall(__NR_io_uring_register, fd, op, arg, nr);

	return ret < 0 ? -errno : ret;
}

int add_filter(int fd, uint32_t opcode, uint32_t flags, struct sock_filter *prog,
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

int add_const(int fd, uint32_t opcode, uint32_t flags, uint32_t verdict)
{
	struct sock_filter prog[] = PROG_CONST(verdict);

	return add_filter(fd, opcode, flags, prog, 1, NULL);
}

int add_deny_if(int fd, uint32_t opcode, uint32_t flags, uint32_t off, uint32_t mask,
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

int add_long(int fd, uint32_t len)
{
	return add_filter(fd, IORING_OP_NOP, 0, long_prog(len), len, NULL);
}

int add_full(int fd, int n)
{
	int ret = 0;

	for (int i = 0; i < n && !ret; i++)
		ret = add_long(fd, FULL);
	return ret;
}

int run_one(struct io_uring *ring, struct io_uring_sqe *sqe, uint64_t ud)
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

int nop(struct io_uring *ring, uint64_t ud)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	io_uring_prep_nop(sqe);
	return run_one(ring, sqe, ud);
}

/* the READ several tests send (of /dev/zero); run_one() waits, so buf may be ours */
int read_op(struct io_uring *ring, int fd, uint64_t ud)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	char buf[8];

	io_uring_prep_read(sqe, fd, buf, sizeof(buf), 0);
	return run_one(ring, sqe, ud);
}

int sock_op(struct io_uring *ring, int family, int type, uint64_t ud)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	int ret;

	io_uring_prep_socket(sqe, family, type, 0, 0);
	ret = run_one(ring, sqe, ud);
	if (ret >= 0)
		close(ret);
	return ret < 0 ? ret : 0;
}

/* OPENAT (two false) or OPENAT2 of NAME in directory DFD */
int open_op(struct io_uring *ring, int dfd, const char *name, int flags, uint64_t resolve,
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

int connect_op(struct io_uring *ring, const void *addr, socklen_t len, int family,
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

int in_child(int (*fn)(void))
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

/* nobody: a user with no capabilities, for what needs no_new_privs instead */
bool become_nobody(void)
{
	return CHECK(setresgid(65534, 65534, 65534) == 0 && setresuid(65534, 65534, 65534) == 0,
		     "become nobody: %s", strerror(errno));
}

/*
 * Most ring tests need one plain ring for their whole body: setting it up
 * and tearing it down here keeps that out of each of them.
 */
int with_ring(int (*body)(struct io_uring *ring))
{
	struct io_uring ring;
	int ret;

	if (io_uring_queue_init(8, &ring, 0))
		return KSFT_FAIL;
	ret = body(&ring);
	io_uring_queue_exit(&ring);
	return ret;
}

/*
 * Everything between opening a struct_ops policy's skeleton (and setting its
 * own globals) and reading its results is the same for any policy; taking
 * the skeleton's parts by pointer keeps this one copy free of its type. The
 * link goes once the loop has ended: the results stay in the skeleton.
 */
int run_skeleton(struct bpf_object_skeleton *s, struct bpf_map *ops,
		 struct iouring_bpf_geometry *geom, uint32_t *ring_fd,
		 struct iouring_bpf_ring *r)
{
	struct bpf_link *link;
	char what[64];
	int ret;

	*geom = r->geom;
	*ring_fd = r->fd;
	/* the message NAME__load() would have had */
	snprintf(what, sizeof(what), "%s__load", s->name);
	if (!CHECK_OK(bpf_object__load_skeleton(s), what))
		return KSFT_FAIL;
	link = bpf_map__attach_struct_ops(ops);
	if (!CHECK(link, "attach: %s", strerror(errno)))
		return KSFT_FAIL;
	ret = iouring_bpf_ring_run(r);
	bpf_link__destroy(link);
	return CHECK(ret == 0, "enter: %d", ret) ? KSFT_PASS : KSFT_FAIL;
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

/*
 * The comment above each test's function starts with its name ("refusals:
 * ..."): selftests/catalogue finds README.md's description by it, the
 * function being in another file than this table.
 */
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
