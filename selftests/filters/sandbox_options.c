// SPDX-License-Identifier: GPL-2.0
/*
 * filters/ test of each option of iouring-bpf sandbox and both example
 * profiles, as nobody (sandbox-options): the sandboxed program is this one
 * again, `filters_test expect KIND=RES...`, checking its own requests.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>
#include <sys/wait.h>
#include "filters.h"

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
	int fd, dfd, ret, l;

	if (!strcmp(kind, "nop"))
		return nop(ring, ud);
	if (!strcmp(kind, "read")) {
		fd = open("/dev/zero", O_RDONLY);
		ret = read_op(ring, fd, ud);
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
int expect_requests(int argc, char **argv)
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
 * sandbox-options: each option of iouring-bpf sandbox and both example profiles, as nobody:
 * what each allows and denies (AF_INET included), checked by the program
 * it runs.
 */
int test_sandbox_options(void)
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
