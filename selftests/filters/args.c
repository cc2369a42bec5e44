// SPDX-License-Identifier: GPL-2.0
/*
 * filters/ tests of filters on a request's arguments, from the payload the
 * kernel passes them: SOCKET's family and type (socket), OPENAT/OPENAT2's
 * flags and resolve (open), CONNECT's family, address and port (connect,
 * connect-port).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "filters.h"

static int socket_args(struct io_uring *ring)
{
	if (!CHECK_OK(add_deny_if(ring->ring_fd, IORING_OP_SOCKET, 0, CTX_OFF(socket.family), ~0u,
				  AF_INET6, 12), "deny AF_INET6 sockets") ||
	    !CHECK_OK(add_deny_if(ring->ring_fd, IORING_OP_SOCKET, 0, CTX_OFF(socket.type),
				  SOCK_CLOEXEC, SOCK_CLOEXEC, 12), "deny SOCK_CLOEXEC") ||
	    !CHECK(sock_op(ring, AF_INET, SOCK_DGRAM, 1) == 0, "AF_INET socket denied") ||
	    !CHECK(sock_op(ring, AF_INET6, SOCK_DGRAM, 2) == -EACCES, "AF_INET6 not denied") ||
	    !CHECK(sock_op(ring, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 3) == -EACCES,
		   "SOCK_CLOEXEC not seen in type") ||
	    !CHECK(sock_op(ring, AF_UNIX, SOCK_STREAM, 4) == 0, "AF_UNIX socket denied"))
		return KSFT_FAIL;
	return KSFT_PASS;
}

/* socket: SOCKET: family and type, with SOCK_CLOEXEC kept in type */
int test_socket(void)
{
	return with_ring(socket_args);
}

/* open: OPENAT/OPENAT2: the open_how flags and resolve, as the open uses them */
int test_open(void)
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

static int connect_args(struct io_uring *ring)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(9),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(9),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int ret;

	/* port 9 on 127.0.0.1 is denied; 127.0.0.2 port 9 and port 10 are not */
	if (!CHECK_OK(add_deny_if(ring->ring_fd, IORING_OP_CONNECT, 0, CTX_OFF(connect.v4_addr),
				  ~0u, htonl(INADDR_LOOPBACK), 24), "deny 127.0.0.1") ||
	    !CHECK_OK(add_deny_if(ring->ring_fd, IORING_OP_CONNECT, 0, CTX_OFF(connect.v6_addr) + 12,
				  ~0u, htonl(1), 24), "deny ::1") ||
	    !CHECK_OK(add_deny_if(ring->ring_fd, IORING_OP_CONNECT, 0, CTX_OFF(connect.family),
				  0xffff, AF_UNIX, 24), "deny AF_UNIX"))
		return KSFT_FAIL;
	ret = connect_op(ring, &a4, sizeof(a4), AF_INET, 1);
	if (!CHECK(ret == -EACCES, "connect to 127.0.0.1:9: %d", ret))
		return KSFT_FAIL;
	a4.sin_addr.s_addr = htonl(INADDR_LOOPBACK + 1);
	ret = connect_op(ring, &a4, sizeof(a4), AF_INET, 2);
	if (!CHECK(ret == -ECONNREFUSED, "connect to 127.0.0.2:9: %d (ECONNREFUSED)", ret))
		return KSFT_FAIL;
	ret = connect_op(ring, &a6, sizeof(a6), AF_INET6, 3);
	if (!CHECK(ret == -EACCES, "connect to [::1]:9: %d", ret))
		return KSFT_FAIL;
	/* a short address: the family only; connect() itself refuses it */
	a4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ret = connect_op(ring, &a4, 4, AF_INET, 4);
	if (!CHECK(ret == -EINVAL, "4-byte AF_INET address: %d (EINVAL from connect)", ret))
		return KSFT_FAIL;
	return KSFT_PASS;
}

/* connect: CONNECT: family, port and address in network byte order */
int test_connect(void)
{
	return with_ring(connect_args);
}

static int connect_port(struct io_uring *ring)
{
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(9),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int ret;

	if (!CHECK_OK(add_deny_if(ring->ring_fd, IORING_OP_CONNECT, 0, CTX_OFF(connect.family) + 4,
				  0xffff, htons(9), 24), "deny port 9"))
		return KSFT_FAIL;
	ret = connect_op(ring, &a4, sizeof(a4), AF_INET, 1);
	if (!CHECK(ret == -EACCES, "connect to port 9: %d", ret))
		return KSFT_FAIL;
	a4.sin_port = htons(2304);	/* 9 << 8: the same bytes swapped */
	ret = connect_op(ring, &a4, sizeof(a4), AF_INET, 2);
	if (!CHECK(ret == -ECONNREFUSED, "connect to port 2304: %d", ret))
		return KSFT_FAIL;
	return KSFT_PASS;
}

/*
 * connect-port: CONNECT: a filter on the port denies exactly that port,
 * compared in network byte order
 */
int test_connect_port(void)
{
	return with_ring(connect_port);
}
