// SPDX-License-Identifier: GPL-2.0
/*
 * filters/ tests of the iouring-bpf sandbox command: run by nobody with an
 * allowlist and socket families, and refused over an inherited ring
 * (sandbox, with its sandbox-check half); a profile, as the program and
 * iouring-bpf inspect --pid see it (sandbox-profile, net-profile-check).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include "filters.h"

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
			res = read_op(&ring, fd, i);
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
int sandbox_check(void)
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

/* iouring-bpf sandbox, run by an unprivileged user */
static int child_sandbox(void)
{
	if (!become_nobody())
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
int net_profile_check(void)
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

static int child_profile(void)
{
	execl(tool, tool, "sandbox", "--profile", profile, "--", self_exe, "net-profile-check", tool,
	      (char *)NULL);
	fprintf(stderr, "exec %s: %s\n", tool, strerror(errno));
	return KSFT_FAIL;
}

/*
 * sandbox-profile: iouring-bpf sandbox --profile examples/sandbox/net-server.json: inet sockets
 * only, no file I/O; iouring-bpf inspect --pid shows it on the program's ring.
 */
int test_sandbox_profile(void)
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
 * sandbox: iouring-bpf sandbox run by nobody: no_new_privs set, the allowlist and
 * socket families in force in the program it execs; and refused when the
 * program would inherit a ring the rules do not bind.
 */
int test_sandbox(void)
{
	if (!tool) {
		fprintf(stderr, "usage: filters_test sandbox PATH-OF-iouring-bpf\n");
		return KSFT_FAIL;
	}
	if (in_child(child_inherited_ring) != KSFT_PASS)
		return KSFT_FAIL;
	return in_child(child_sandbox);
}
