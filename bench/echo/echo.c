// SPDX-License-Identifier: GPL-2.0
/*
 * echo: a TCP echo server on 127.0.0.1, two ways, under the same load:
 *
 *   bpf    the echo policy (bpf/policies/echo.bpf.c): multishot accept,
 *          then recv -> send -> recv per connection, all inside one
 *          io_uring_enter() per run
 *   user   the same state machine in user space on a liburing ring
 *          (SINGLE_ISSUER | DEFER_TASKRUN): one io_uring_submit_and_wait
 *          (bounded by a timeout) per loop turn
 *
 * The load: a client thread with its own io_uring ring opens C connections
 * and plays ping-pong on each, one message of -m bytes outstanding per
 * connection, -n messages per connection; every echoed byte is compared
 * with what was sent (a wrong byte fails the run). The server stops when
 * the client has closed every connection.
 *
 * Requests (echoed messages) per second and io_uring_enter calls per
 * request, for each connection count; interleaved rounds, medians. Prints
 * a table; -j writes JSON:
 *   {"connections": [...], "msg_bytes", "messages_per_conn", "rounds",
 *    "results": [{"connections", "requests", "bpf_rps", "user_rps",
 *                 "bpf_enters_per_req", "user_enters_per_req",
 *                 "bpf_steps_per_req", "speedup"}, ...]}
 * speedup is bpf_rps / user_rps. On one CPU the server and the client take
 * turns; both servers sleep in the kernel while they wait.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <getopt.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <liburing-bpf.h>
#include "../bench.h"
#include "echo.skel.h"

#define MAX_CONNS	256		/* the policy's ECHO_MAX_CONNS */
#define MAX_COUNTS	16
#define MAX_ROUNDS	50
#define MAX_MSG		65536
#define RING_SQ		256
#define RING_CQ		1024
#define WAIT_NS		100000000LL	/* one bounded wait: 100 ms */

static unsigned int idle_sec = 10;	/* no progress this long: the run fails */
static unsigned long long corrupt_at;	/* -F: flip a byte of this echoed message */

/* ---- the client: C connections, ping-pong, content checked */

struct client {
	/* in */
	unsigned int conns, msgs, msg_bytes;
	uint16_t port;
	pthread_barrier_t *connected;	/* passed once every connect() is done */
	__u32 *server_stop;		/* set on failure: the server gives up */
	/* out */
	int status;			/* 0 or -errno */
	int connect_status;		/* -errno if the connections could not be made */
	char err[256];
	unsigned long long verified;	/* messages echoed back intact */
};

struct cconn {
	int fd;
	unsigned int seq;	/* message number */
	unsigned int sent, got;
	bool send_done, closed;
	unsigned char *sbuf, *rbuf;
};

enum { C_SEND = 1, C_RECV = 2 };

static void client_fail(struct client *cl, int err, const char *fmt, ...)
{
	va_list ap;

	if (cl->status)
		return;
	cl->status = err;
	va_start(ap, fmt);
	vsnprintf(cl->err, sizeof(cl->err), fmt, ap);
	va_end(ap);
	__atomic_store_n(cl->server_stop, 1, __ATOMIC_RELEASE);
}

/* what message seq of connection c holds: differs per connection, message, byte */
static void fill_msg(unsigned char *p, unsigned int len, unsigned int c, unsigned int seq)
{
	uint32_t x = (c + 1) * 0x9e3779b1u ^ (seq + 1) * 0x85ebca6bu;

	for (unsigned int i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (unsigned char)x;
	}
}

static int client_prep(struct io_uring *ring, struct cconn *k, unsigned int c, int what,
		       unsigned int msg_bytes)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe) {
		io_uring_submit(ring);
		sqe = io_uring_get_sqe(ring);
		if (!sqe)
			return -EBUSY;
	}
	if (what == C_SEND)
		io_uring_prep_send(sqe, k->fd, k->sbuf + k->sent, msg_bytes - k->sent,
				   MSG_NOSIGNAL);
	else
		io_uring_prep_recv(sqe, k->fd, k->rbuf + k->got, msg_bytes - k->got, 0);
	io_uring_sqe_set_data64(sqe, (__u64)what << 32 | c);
	return 0;
}

static int client_start_msg(struct io_uring *ring, struct cconn *k, unsigned int c,
			    unsigned int msg_bytes)
{
	fill_msg(k->sbuf, msg_bytes, c, k->seq);
	memset(k->rbuf, 0, msg_bytes);
	k->sent = k->got = 0;
	k->send_done = false;
	int ret = client_prep(ring, k, c, C_SEND, msg_bytes);

	return ret ? ret : client_prep(ring, k, c, C_RECV, msg_bytes);
}

/* one CQE of connection c; 0 or -errno (message in cl->err) */
static int client_cqe(struct client *cl, struct io_uring *ring, struct cconn *k, unsigned int c,
		      int what, int res, unsigned int *open)
{
	unsigned int m = cl->msg_bytes;

	if (what == C_SEND) {
		if (res <= 0) {
			client_fail(cl, res ? res : -EIO, "client: connection %u, message %u: send: %s",
				    c, k->seq, res ? strerror(-res) : "sent nothing");
			return cl->status;
		}
		k->sent += res;
		if (k->sent < m)
			return client_prep(ring, k, c, C_SEND, m);
		k->send_done = true;
	} else {
		if (res <= 0) {
			client_fail(cl, res ? res : -ECONNRESET,
				    "client: connection %u, message %u: recv: %s", c, k->seq,
				    res ? strerror(-res) : "the server closed the connection");
			return cl->status;
		}
		k->got += res;
		if (k->got < m)
			return client_prep(ring, k, c, C_RECV, m);
		if (corrupt_at && cl->verified + 1 == corrupt_at)
			k->rbuf[m / 2] ^= 0x5a;	/* -F: as if the server got it wrong */
	}
	if (!k->send_done || k->got < m)
		return 0;
	if (memcmp(k->sbuf, k->rbuf, m)) {
		unsigned int i = 0;

		while (k->sbuf[i] == k->rbuf[i])
			i++;
		client_fail(cl, -EBADMSG, "client: connection %u, message %u: echoed byte %u is "
			    "0x%02x, sent 0x%02x", c, k->seq, i, k->rbuf[i], k->sbuf[i]);
		return cl->status;
	}
	cl->verified++;
	if (++k->seq < cl->msgs)
		return client_start_msg(ring, k, c, m);
	close(k->fd);		/* done: the server sees the end and closes its side */
	k->fd = -1;
	k->closed = true;
	(*open)--;
	return 0;
}

static void *client_main(void *arg)
{
	struct client *cl = arg;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(cl->port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct cconn *k = calloc(cl->conns, sizeof(*k));
	unsigned char *bufs = malloc((size_t)cl->conns * cl->msg_bytes * 2);
	unsigned int open = 0;
	bool have_ring = false;
	int ret;

	if (!k || !bufs) {
		cl->connect_status = -ENOMEM;
		client_fail(cl, -ENOMEM, "client: out of memory");
	}
	for (unsigned int c = 0; k && c < cl->conns; c++)
		k[c].fd = -1;
	struct io_uring ring;

	/* made here: a SINGLE_ISSUER ring belongs to the thread that makes it */
	if (!cl->status) {
		struct io_uring_params p = { .flags = IORING_SETUP_SINGLE_ISSUER |
						      IORING_SETUP_DEFER_TASKRUN |
						      IORING_SETUP_CQSIZE,
					     .cq_entries = RING_CQ };

		ret = io_uring_queue_init_params(RING_SQ, &ring, &p);
		if (ret) {
			cl->connect_status = ret;
			client_fail(cl, ret, "client: io_uring_queue_init: %s", strerror(-ret));
		} else {
			have_ring = true;
		}
	}
	for (unsigned int c = 0; !cl->status && c < cl->conns; c++) {
		int one = 1;

		k[c].sbuf = bufs + (size_t)c * 2 * cl->msg_bytes;
		k[c].rbuf = k[c].sbuf + cl->msg_bytes;
		k[c].fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (k[c].fd < 0 ||
		    setsockopt(k[c].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
		    connect(k[c].fd, (struct sockaddr *)&sa, sizeof(sa))) {
			cl->connect_status = -errno;
			client_fail(cl, -errno, "client: connection %u to 127.0.0.1:%u: %s", c,
				    cl->port, strerror(errno));
			break;
		}
		open++;
	}
	pthread_barrier_wait(cl->connected);

	for (unsigned int c = 0; !cl->status && c < cl->conns; c++) {
		ret = client_start_msg(&ring, &k[c], c, cl->msg_bytes);
		if (ret)
			client_fail(cl, ret, "client: queueing: %s", strerror(-ret));
	}

	double last = bench_now_ms();

	while (!cl->status && open) {
		struct __kernel_timespec ts = { .tv_nsec = WAIT_NS };
		struct io_uring_cqe *cqe;
		unsigned int head, seen = 0;

		ret = io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &ts, NULL);
		if (ret < 0 && ret != -ETIME && ret != -EINTR) {
			client_fail(cl, ret, "client: io_uring_submit_and_wait: %s", strerror(-ret));
			break;
		}
		io_uring_for_each_cqe(&ring, head, cqe) {
			unsigned int c = (__u32)cqe->user_data;
			int what = cqe->user_data >> 32;

			seen++;
			if (c >= cl->conns || k[c].closed) {
				client_fail(cl, -EPROTO, "client: unexpected completion 0x%llx",
					    (unsigned long long)cqe->user_data);
				break;
			}
			if (client_cqe(cl, &ring, &k[c], c, what, cqe->res, &open))
				break;
		}
		io_uring_cq_advance(&ring, seen);
		if (seen) {
			last = bench_now_ms();
		} else if (bench_now_ms() - last > idle_sec * 1e3) {
			client_fail(cl, -ETIMEDOUT, "client: no echo for %u s (%llu of %llu messages "
				    "verified)", idle_sec, cl->verified,
				    (unsigned long long)cl->conns * cl->msgs);
		}
	}
	/* on failure, closing every connection also lets the server end */
	for (unsigned int c = 0; k && c < cl->conns; c++)
		if (k[c].fd >= 0)
			close(k[c].fd);
	if (have_ring)
		io_uring_queue_exit(&ring);
	free(bufs);
	free(k);
	return NULL;
}

/* ---- the servers */

struct server_result {
	int status;			/* 0 or -errno */
	char err[256];
	unsigned long long bytes, sends, enters, steps;
	unsigned int accepted, closed;
};

static int listen_socket(uint16_t *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	/* accepted sockets inherit TCP_NODELAY: no Nagle delay on echoes */
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, MAX_CONNS) ||
	    getsockname(fd, (struct sockaddr *)&sa, &len)) {
		int err = -errno;

		close(fd);
		return err;
	}
	*port = ntohs(sa.sin_port);
	return fd;
}

/* bpf: the echo policy, loaded once, one io_uring_enter() per run */
struct bpf_server {
	struct iouring_bpf_ring ring;
	struct echo *skel;
	struct bpf_link *link;
};

static int bpf_open(struct bpf_server *b, char *buf, unsigned int msg_bytes)
{
	int ret = iouring_bpf_ring_init(&b->ring, RING_SQ, RING_CQ, IOURING_BPF_RING_FLAGS);

	if (ret) {
		fprintf(stderr, "echo: BPF ring setup: %s\n", strerror(-ret));
		return ret;
	}
	b->skel = echo__open();
	if (!b->skel) {
		ret = -errno;
		fprintf(stderr, "echo: opening the echo policy: %s\n", strerror(-ret));
		return ret;
	}
	b->skel->rodata->iou_geom = b->ring.geom;
	b->skel->rodata->echo_buf = (uintptr_t)buf;
	b->skel->rodata->echo_buf_bytes = msg_bytes;
	b->skel->rodata->echo_wait_ns = WAIT_NS;
	b->skel->rodata->echo_idle_ns = idle_sec * 1000000000ULL;
	b->skel->struct_ops.echo_ops->ring_fd = b->ring.fd;
	ret = echo__load(b->skel);
	if (ret) {
		fprintf(stderr, "echo: loading the echo policy: %s\n", strerror(-ret));
		return ret;
	}
	b->link = bpf_map__attach_struct_ops(b->skel->maps.echo_ops);
	if (!b->link) {
		ret = -errno;
		fprintf(stderr, "echo: attaching the echo policy: %s\n", strerror(-ret));
		return ret;
	}
	return 0;
}

static void bpf_close(struct bpf_server *b)
{
	bpf_link__destroy(b->link);
	echo__destroy(b->skel);
	if (b->ring.ring_mem)
		iouring_bpf_ring_exit(&b->ring);
}

static void bpf_serve(struct bpf_server *b, int lfd, unsigned int conns,
		      struct server_result *res)
{
	struct echo__bss *s = b->skel->bss;
	int ret;

	b->skel->data->echo_listen_fd = lfd;
	b->skel->data->echo_conns = conns;
	s->echo_generation++;		/* the policy starts afresh */
	ret = iouring_bpf_ring_run(&b->ring);
	res->enters = 1;
	res->steps = s->echo_steps;
	res->bytes = s->echo_bytes;
	res->sends = s->echo_sends;
	res->accepted = s->echo_accepted;
	res->closed = s->echo_closed;
	if (ret) {
		res->status = ret;
		snprintf(res->err, sizeof(res->err), "io_uring_enter: %s", strerror(-ret));
	} else if (s->iou_exit_status) {
		res->status = s->iou_exit_status;
		snprintf(res->err, sizeof(res->err), "the policy stopped: %s",
			 strerror(-s->iou_exit_status));
	}
}

/* user: the same state machine on a liburing ring */
enum { U_ACCEPT = 1, U_RECV, U_SEND, U_CLOSE, U_CANCEL };
enum { UST_FREE, UST_RECV, UST_SEND, UST_CLOSING };

struct uconn {
	int fd;
	unsigned int len, sent, state;
};

struct user_server {
	struct io_uring ring;
	bool have_ring;
	char *buf;
	unsigned int msg_bytes;
	__u32 stop;		/* set by the client on failure */
	struct uconn c[MAX_CONNS];
};

static struct io_uring_sqe *user_sqe(struct user_server *u, struct server_result *res)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);

	if (!sqe) {	/* SQ full: push what is queued (counts as a call) */
		io_uring_submit(&u->ring);
		res->enters++;
		sqe = io_uring_get_sqe(&u->ring);
	}
	return sqe;
}

static int user_recv(struct user_server *u, unsigned int slot, struct server_result *res)
{
	struct io_uring_sqe *sqe = user_sqe(u, res);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_recv(sqe, u->c[slot].fd, u->buf + (size_t)slot * u->msg_bytes,
			   u->msg_bytes, 0);
	io_uring_sqe_set_data64(sqe, (__u64)U_RECV << 32 | slot);
	u->c[slot].state = UST_RECV;
	return 0;
}

static int user_send(struct user_server *u, unsigned int slot, struct server_result *res)
{
	struct io_uring_sqe *sqe = user_sqe(u, res);
	struct uconn *c = &u->c[slot];

	if (!sqe)
		return -EBUSY;
	io_uring_prep_send(sqe, c->fd, u->buf + (size_t)slot * u->msg_bytes + c->sent,
			   c->len - c->sent, MSG_NOSIGNAL);
	io_uring_sqe_set_data64(sqe, (__u64)U_SEND << 32 | slot);
	c->state = UST_SEND;
	return 0;
}

static int user_close(struct user_server *u, unsigned int slot, struct server_result *res)
{
	struct io_uring_sqe *sqe = user_sqe(u, res);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_close(sqe, u->c[slot].fd);
	io_uring_sqe_set_data64(sqe, (__u64)U_CLOSE << 32 | slot);
	u->c[slot].state = UST_CLOSING;
	return 0;
}

struct user_run {
	int lfd;
	unsigned int conns;
	bool accept_armed, cancel_sent, cancel_done;
};

static int user_cqe(struct user_server *u, struct user_run *run, struct io_uring_cqe *cqe,
		    struct server_result *res)
{
	unsigned int op = cqe->user_data >> 32, slot = (__u32)cqe->user_data;
	int r = cqe->res;
	struct uconn *c;

	if (op == U_ACCEPT) {
		if (!(cqe->flags & IORING_CQE_F_MORE))
			run->accept_armed = false;
		if (r < 0)
			return r == -ECANCELED && run->cancel_sent ? 0 : r;
		if (res->accepted >= run->conns)
			return -EPROTO;
		slot = res->accepted++;
		u->c[slot] = (struct uconn){ .fd = r };
		return user_recv(u, slot, res);
	}
	if (op == U_CANCEL) {
		if (r < 0 && r != -ENOENT && r != -EALREADY)
			return r;
		run->cancel_done = true;
		return 0;
	}
	if (slot >= res->accepted)
		return -EPROTO;
	c = &u->c[slot];
	switch (op) {
	case U_RECV:
		if (c->state != UST_RECV)
			return -EPROTO;
		if (r > 0) {
			res->bytes += r;
			c->len = r;
			c->sent = 0;
			return user_send(u, slot, res);
		}
		if (r == 0 || r == -ECONNRESET)
			return user_close(u, slot, res);
		return r;
	case U_SEND:
		if (c->state != UST_SEND)
			return -EPROTO;
		if (r == -EPIPE || r == -ECONNRESET)
			return user_close(u, slot, res);
		if (r < 0)
			return r;
		if (r == 0 || (unsigned int)r > c->len - c->sent)
			return -EIO;
		c->sent += r;
		if (c->sent < c->len)
			return user_send(u, slot, res);
		res->sends++;
		return user_recv(u, slot, res);
	case U_CLOSE:
		if (c->state != UST_CLOSING)
			return -EPROTO;
		if (r < 0)
			return r;
		c->state = UST_FREE;
		res->closed++;
		return 0;
	}
	return -EPROTO;
}

static void user_serve(struct user_server *u, int lfd, unsigned int conns,
		       struct server_result *res)
{
	struct user_run run = { .lfd = lfd, .conns = conns };
	double last = bench_now_ms();
	int ret = 0;

	res->enters = 0;
	u->stop = 0;
	while (!ret) {
		struct __kernel_timespec ts = { .tv_nsec = WAIT_NS };
		struct io_uring_sqe *sqe;
		struct io_uring_cqe *cqe;
		unsigned int head, seen = 0;

		if (!run.accept_armed && res->accepted < conns) {
			sqe = user_sqe(u, res);
			if (!sqe) {
				ret = -EBUSY;
				break;
			}
			io_uring_prep_multishot_accept(sqe, lfd, NULL, NULL, SOCK_CLOEXEC);
			io_uring_sqe_set_data64(sqe, (__u64)U_ACCEPT << 32);
			run.accept_armed = true;
		} else if (run.accept_armed && res->accepted >= conns && !run.cancel_sent) {
			sqe = user_sqe(u, res);
			if (!sqe) {
				ret = -EBUSY;
				break;
			}
			io_uring_prep_cancel64(sqe, (__u64)U_ACCEPT << 32, 0);
			io_uring_sqe_set_data64(sqe, (__u64)U_CANCEL << 32);
			run.cancel_sent = true;
		}
		if (res->closed >= conns && !run.accept_armed &&
		    (!run.cancel_sent || run.cancel_done))
			break;
		if (__atomic_load_n(&u->stop, __ATOMIC_ACQUIRE)) {
			ret = -ECANCELED;
			break;
		}

		ret = io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, &ts, NULL);
		res->enters++;
		if (ret == -ETIME || ret == -EINTR || ret >= 0)
			ret = 0;
		else
			break;
		io_uring_for_each_cqe(&u->ring, head, cqe) {
			seen++;
			ret = user_cqe(u, &run, cqe, res);
			if (ret)
				break;
		}
		io_uring_cq_advance(&u->ring, seen);
		if (seen)
			last = bench_now_ms();
		else if (bench_now_ms() - last > idle_sec * 1e3)
			ret = -ETIMEDOUT;
	}
	res->steps = res->enters;
	if (ret) {
		res->status = ret;
		snprintf(res->err, sizeof(res->err), "the liburing server stopped: %s",
			 strerror(-ret));
	}
}

/* ---- one run: a fresh listening socket, the client thread, one server */

enum { M_BPF, M_USER };
static const char *const method_names[] = { "bpf", "user" };

static int run_once(int method, struct bpf_server *b, struct user_server *u, unsigned int conns,
		    unsigned int msgs, unsigned int msg_bytes, double *ms,
		    struct server_result *res)
{
	pthread_barrier_t connected;
	struct client cl = { .conns = conns, .msgs = msgs, .msg_bytes = msg_bytes,
			     .connected = &connected };
	unsigned long long want = (unsigned long long)conns * msgs;
	pthread_t tid;
	uint16_t port = 0;
	int lfd, ret;
	double start;

	memset(res, 0, sizeof(*res));
	lfd = listen_socket(&port);
	if (lfd < 0) {
		fprintf(stderr, "echo: listening on 127.0.0.1: %s%s\n", strerror(-lfd),
			lfd == -EADDRNOTAVAIL ? " (is the loopback interface up? "
						"ip link set lo up)" : "");
		return lfd;
	}
	cl.port = port;
	if (method == M_BPF) {
		b->skel->bss->echo_stop = 0;
		cl.server_stop = &b->skel->bss->echo_stop;
	} else {
		cl.server_stop = &u->stop;
	}
	pthread_barrier_init(&connected, NULL, 2);
	ret = pthread_create(&tid, NULL, client_main, &cl);
	if (ret) {
		fprintf(stderr, "echo: starting the client thread: %s\n", strerror(ret));
		pthread_barrier_destroy(&connected);
		close(lfd);
		return -ret;
	}
	pthread_barrier_wait(&connected);
	if (cl.connect_status) {
		pthread_join(tid, NULL);
		pthread_barrier_destroy(&connected);
		close(lfd);
		fprintf(stderr, "echo: %s%s\n", cl.err,
			cl.connect_status == -ENETUNREACH || cl.connect_status == -EADDRNOTAVAIL ?
			" (is the loopback interface up? ip link set lo up)" : "");
		return cl.connect_status;
	}
	start = bench_now_ms();
	if (method == M_BPF)
		bpf_serve(b, lfd, conns, res);
	else
		user_serve(u, lfd, conns, res);
	*ms = bench_now_ms() - start;
	if (res->status)	/* wake a client still waiting for echoes */
		__atomic_store_n(cl.server_stop, 1, __ATOMIC_RELEASE);
	pthread_join(tid, NULL);
	pthread_barrier_destroy(&connected);
	close(lfd);

	const char *m = method_names[method];

	if (cl.status) {
		fprintf(stderr, "echo: %s server, %u connections: %s\n", m, conns, cl.err);
		if (res->status)
			fprintf(stderr, "echo: %s server, %u connections: %s\n", m, conns, res->err);
		return cl.status;
	}
	if (res->status) {
		fprintf(stderr, "echo: %s server, %u connections: %s\n", m, conns, res->err);
		return res->status;
	}
	if (cl.verified != want || res->sends < want ||
	    res->bytes != want * msg_bytes || res->accepted != conns || res->closed != conns) {
		fprintf(stderr, "echo: %s server, %u connections: client verified %llu of %llu "
			"messages; server echoed %llu bytes (want %llu) in %llu sends, accepted %u, "
			"closed %u\n", m, conns, cl.verified, want, res->bytes, want * msg_bytes,
			res->sends, res->accepted, res->closed);
		return -EIO;
	}
	return 0;
}

/* ---- options, the table, JSON */

static void usage(FILE *f, const char *argv0)
{
	fprintf(f, "usage: %s [-c LIST] [-n MSGS] [-m BYTES] [-r ROUNDS] [-M bpf|user] [-T SEC]\n"
		   "       [-j FILE.json]\n"
		   "TCP echo on 127.0.0.1: the echo BPF policy (one io_uring_enter per run) vs\n"
		   "the same server on liburing (one io_uring_submit_and_wait per turn), loaded\n"
		   "by a client thread playing ping-pong on every connection; every echoed byte\n"
		   "is checked.\n"
		   "  -c LIST     connection counts, comma-separated, 1..%d each (default 1,16,64)\n"
		   "  -n MSGS     messages per connection per run (default 1000)\n"
		   "  -m BYTES    message size, 1..%d (default 64)\n"
		   "  -r ROUNDS   interleaved rounds, median reported, 1..%d (default 5)\n"
		   "  -M METHOD   run only bpf or only user (default both; JSON has null for\n"
		   "              the other and for speedup)\n"
		   "  -T SEC      a run fails after SEC seconds without progress (default 10)\n"
		   "  -j FILE     also write the results as JSON\n"
		   "  -F N        testing: damage the Nth echoed message of the first run on\n"
		   "              arrival; the run must fail, naming the byte\n"
		   "  -h, --help  this text\n", argv0, MAX_CONNS, MAX_MSG, MAX_ROUNDS);
}

/* "1,16,64" -> counts; 0 or -EINVAL */
static int parse_counts(const char *s, unsigned int *counts, int *n)
{
	*n = 0;
	while (*s) {
		char *end;
		unsigned long v;

		if (*n == MAX_COUNTS || *s < '0' || *s > '9')
			return -EINVAL;
		errno = 0;
		v = strtoul(s, &end, 10);
		if (errno || v < 1 || v > MAX_CONNS || (*end && *end != ','))
			return -EINVAL;
		counts[(*n)++] = v;
		s = *end ? end + 1 : end;
		if (*end && !*s)
			return -EINVAL;
	}
	return *n ? 0 : -EINVAL;
}

static int parse_uint(const char *s, unsigned long min, unsigned long max, unsigned int *out)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* -OPT VALUE within [min, max], or -EINVAL after saying what was wanted */
static int option_uint(int opt, const char *s, unsigned long min, unsigned long max,
		       const char *what, unsigned int *out)
{
	int ret = parse_uint(s, min, max, out);

	if (ret)
		fprintf(stderr, "echo: -%c %s: want %lu..%lu %s\n", opt, s, min, max, what);
	return ret;
}

int main(int argc, char **argv)
{
	unsigned int counts[MAX_COUNTS] = { 1, 16, 64 }, msgs = 1000, msg_bytes = 64, rounds = 5;
	unsigned int max_conns = 0;
	int ncounts = 3, opt, status = 1, only = -1;	/* -M: M_BPF or M_USER */
	const char *json = NULL;
	FILE *jf = NULL;

	while ((opt = getopt_long(argc, argv, "c:n:m:r:M:T:j:F:h", bench_long_options(), NULL)) != -1) {
		int bad = 0;

		switch (opt) {
		case 'c':
			bad = parse_counts(optarg, counts, &ncounts);
			if (bad)
				fprintf(stderr, "echo: -c %s: want connection counts 1..%d, comma-"
					"separated, at most %d\n", optarg, MAX_CONNS, MAX_COUNTS);
			break;
		case 'n':
			bad = option_uint(opt, optarg, 1, 100000000, "messages", &msgs);
			break;
		case 'm':
			bad = option_uint(opt, optarg, 1, MAX_MSG, "bytes", &msg_bytes);
			break;
		case 'r':
			bad = option_uint(opt, optarg, 1, MAX_ROUNDS, "rounds", &rounds);
			break;
		case 'T':
			bad = option_uint(opt, optarg, 1, 3600, "seconds", &idle_sec);
			break;
		case 'F': {
			unsigned int v;

			bad = option_uint(opt, optarg, 1, 4000000000UL, "(a message number)", &v);
			corrupt_at = v;
			break;
		}
		case 'M':
			only = !strcmp(optarg, "bpf") ? M_BPF : !strcmp(optarg, "user") ? M_USER : -2;
			bad = only == -2;
			if (bad)
				fprintf(stderr, "echo: -M %s: want bpf or user\n", optarg);
			break;
		case 'j': json = optarg; break;
		case 'h': usage(stdout, argv[0]); return 0;
		default: usage(stderr, argv[0]); return 2;
		}
		if (bad) {
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "echo: unexpected argument '%s'\n", argv[optind]);
		usage(stderr, argv[0]);
		return 2;
	}
	for (int i = 0; i < ncounts; i++)
		if (counts[i] > max_conns)
			max_conns = counts[i];

	struct bpf_server b = {};
	struct user_server *u = calloc(1, sizeof(*u));
	/* one buffer slot per connection, shared by both servers (never at once) */
	char *buf = aligned_alloc(4096, ((size_t)MAX_CONNS * msg_bytes + 4095) / 4096 * 4096);
	int ret;

	if (!u || !buf) {
		fprintf(stderr, "echo: out of memory\n");
		goto out;
	}
	if (json && !(jf = fopen(json, "w"))) {
		fprintf(stderr, "echo: %s: %s\n", json, strerror(errno));
		goto out;
	}
	ret = only == M_USER ? 0 : bpf_open(&b, buf, msg_bytes);
	if (ret)
		goto out;
	u->buf = buf;
	u->msg_bytes = msg_bytes;
	ret = io_uring_queue_init_params(RING_SQ, &u->ring, &(struct io_uring_params){
		.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
			 IORING_SETUP_CQSIZE, .cq_entries = RING_CQ });
	if (ret) {
		fprintf(stderr, "echo: liburing ring setup: %s\n", strerror(-ret));
		goto out;
	}
	u->have_ring = true;

	if (jf) {
		fprintf(jf, "{\"connections\": [");
		for (int i = 0; i < ncounts; i++)
			fprintf(jf, "%s%u", i ? ", " : "", counts[i]);
		fprintf(jf, "], \"msg_bytes\": %u, \"messages_per_conn\": %u, \"rounds\": %u, "
			    "\"results\": [", msg_bytes, msgs, rounds);
	}
	printf("echo: TCP echo on 127.0.0.1, %u-byte messages, %u per connection, "
	       "%u interleaved rounds, medians\n", msg_bytes, msgs, rounds);
	printf("  %-6s %-6s %12s %14s %12s %8s\n", "conns", "method", "requests/s",
	       "enters/request", "steps/req", "vs user");
	fflush(stdout);
	for (int ci = 0; ci < ncounts; ci++) {
		double t[2][MAX_ROUNDS];
		struct server_result last[2];
		unsigned long long reqs = (unsigned long long)counts[ci] * msgs;

		for (unsigned int r = 0; r < rounds; r++) {
			for (int m = 0; m < 2; m++) {
				if (only >= 0 && m != only)
					continue;
				ret = run_once(m, &b, u, counts[ci], msgs, msg_bytes, &t[m][r],
					       &last[m]);
				if (ret)
					goto out;
			}
		}

		double rps[2];
		char vs[2][16], js[5][32];

		for (int m = 0; m < 2; m++) {
			if (only >= 0 && m != only)
				continue;
			rps[m] = reqs / (bench_median(t[m], rounds) / 1e3);
		}
		for (int m = 0; m < 2; m++) {
			if (only >= 0 && m != only)
				continue;
			if (only < 0)
				snprintf(vs[m], sizeof(vs[m]), "%7.2fx", rps[m] / rps[M_USER]);
			else
				snprintf(vs[m], sizeof(vs[m]), "%8s", "-");
			printf("  %-6u %-6s %12.0f %14.4f %12.3f %s\n", counts[ci], method_names[m],
			       rps[m], (double)last[m].enters / reqs, (double)last[m].steps / reqs,
			       vs[m]);
		}
		fflush(stdout);
		/* JSON numbers, or null for a method -M left out */
		for (int i = 0; i < 5; i++)
			strcpy(js[i], "null");
		if (only != M_USER) {
			snprintf(js[0], sizeof(js[0]), "%.1f", rps[M_BPF]);
			snprintf(js[2], sizeof(js[2]), "%.6f", (double)last[M_BPF].enters / reqs);
			snprintf(js[4], sizeof(js[4]), "%.4f", (double)last[M_BPF].steps / reqs);
		}
		if (only != M_BPF) {
			snprintf(js[1], sizeof(js[1]), "%.1f", rps[M_USER]);
			snprintf(js[3], sizeof(js[3]), "%.6f", (double)last[M_USER].enters / reqs);
		}
		if (jf)
			fprintf(jf, "%s{\"connections\": %u, \"requests\": %llu, \"bpf_rps\": %s, "
				    "\"user_rps\": %s, \"bpf_enters_per_req\": %s, "
				    "\"user_enters_per_req\": %s, \"bpf_steps_per_req\": %s, "
				    "\"speedup\": ",
				ci ? ", " : "", counts[ci], reqs, js[0], js[1], js[2], js[3], js[4]);
		if (jf && only < 0)
			fprintf(jf, "%.4f}", rps[M_BPF] / rps[M_USER]);
		else if (jf)
			fprintf(jf, "null}");
	}
	if (jf) {
		fprintf(jf, "]}\n");
		if (fclose(jf)) {
			jf = NULL;
			fprintf(stderr, "echo: %s: %s\n", json, strerror(errno));
			goto out;
		}
		jf = NULL;
	}
	status = 0;
out:
	if (jf)
		fclose(jf);
	if (u && u->have_ring)
		io_uring_queue_exit(&u->ring);
	bpf_close(&b);
	free(u);
	free(buf);
	return status;
}
