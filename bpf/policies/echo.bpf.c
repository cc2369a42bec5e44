// SPDX-License-Identifier: GPL-2.0
/*
 * echo: a TCP echo server inside one io_uring_enter(). A multishot accept
 * on echo_listen_fd takes echo_conns connections; each connection then runs
 * recv -> send -> recv ... on its own buffer slot (echo_buf + slot *
 * echo_buf_bytes, user memory): a recv of n > 0 bytes sends those n bytes
 * back (a short send sends the rest), a completed send re-arms the recv. A
 * recv of 0 (the peer closed) or -ECONNRESET closes the connection
 * (IORING_OP_CLOSE). Once echo_conns connections were accepted the accept
 * is cancelled; the loop stops when every connection is closed and the
 * accept has ended, so nothing is left in flight between runs.
 *
 * Per run (set by user space before it enters): echo_listen_fd, echo_conns
 * (1..ECHO_MAX_CONNS), and echo_generation++ to start afresh. echo_stop = 1
 * (from any thread, through the mmapped .bss) stops the loop at its next
 * step with -ECANCELED. Every wait is bounded by echo_wait_ns (timeout
 * extension); no CQE for echo_idle_ns stops with -ETIMEDOUT.
 *
 * Counters (read after the run): echo_accepted, echo_closed, echo_recvs,
 * echo_sends (completed echoes), echo_bytes, echo_steps; iou_exit_status
 * says why the loop stopped early (0: every connection closed normally).
 */
#include <iouring_bpf/ring.bpf.h>

char LICENSE[] SEC("license") = "GPL";

#define ECHO_MAX_CONNS		256	/* power of two: slot masks */
/* UAPI #defines that vmlinux.h does not carry */
#define IORING_ACCEPT_MULTISHOT	(1U << 0)
#define IORING_CQE_F_MORE	(1U << 1)
#define ECHO_MSG_NOSIGNAL	0x4000
#define ECHO_SOCK_CLOEXEC	02000000

enum { ECHO_OP_ACCEPT = 1, ECHO_OP_RECV, ECHO_OP_SEND, ECHO_OP_CLOSE, ECHO_OP_CANCEL };
#define ECHO_UD(op, slot)	((__u64)(op) << 32 | (__u32)(slot))

const volatile __u64 echo_buf;			/* ECHO_MAX_CONNS * echo_buf_bytes */
const volatile __u32 echo_buf_bytes = 64;
const volatile __u64 echo_wait_ns = 100000000ULL;	/* one wait, at most */
const volatile __u64 echo_idle_ns = 10000000000ULL;	/* no CQE this long: give up */
IOURING_BPF_GLOBAL_RANGE(echo_buf_bytes, 1, 1 << 20);

/* per run */
__u32 echo_generation, echo_seen_generation;
int echo_listen_fd = -1;
__u32 echo_conns = 1;
__u32 echo_stop;

/* counters and run state */
__u64 echo_recvs, echo_sends, echo_bytes, echo_steps;
__u32 echo_accepted, echo_closed;
__u32 echo_accept_armed, echo_cancel_sent, echo_cancel_done;
__u64 echo_progress_ns;	/* when the last CQE was seen */

enum { ST_FREE, ST_RECV, ST_SEND, ST_CLOSING };
struct echo_conn {
	int fd;
	__u32 len;	/* bytes received, to be sent back */
	__u32 sent;	/* of those, sent so far */
	__u32 state;
};
static struct echo_conn conns[ECHO_MAX_CONNS];	/* BPF-private */

static __always_inline int echo_fail(int err)
{
	iou_exit_status = err;
	return IOU_LOOP_STOP;
}

static __always_inline void prep_recv(struct io_uring_sqe *sqe, struct echo_conn *c,
				      __u32 slot)
{
	iou_prep_rw(sqe, IORING_OP_RECV, c->fd, echo_buf + (__u64)slot * echo_buf_bytes,
		    echo_buf_bytes, 0, ECHO_UD(ECHO_OP_RECV, slot));
	c->state = ST_RECV;
}

/* send what is left of the received bytes */
static __always_inline void prep_send(struct io_uring_sqe *sqe, struct echo_conn *c,
				      __u32 slot)
{
	iou_prep_rw(sqe, IORING_OP_SEND, c->fd,
		    echo_buf + (__u64)slot * echo_buf_bytes + c->sent, c->len - c->sent, 0,
		    ECHO_UD(ECHO_OP_SEND, slot));
	sqe->msg_flags = ECHO_MSG_NOSIGNAL;
	c->state = ST_SEND;
}

static __always_inline void prep_close(struct io_uring_sqe *sqe, struct echo_conn *c,
				       __u32 slot)
{
	iou_prep_rw(sqe, IORING_OP_CLOSE, c->fd, 0, 0, 0, ECHO_UD(ECHO_OP_CLOSE, slot));
	c->state = ST_CLOSING;
}

/*
 * One CQE: update the connection and write its next request into sqe.
 * Returns 1 if sqe was filled, 0 if not, or -errno to stop. A global
 * function: the verifier checks it once, not once per loop iteration.
 */
__noinline int echo_complete(__u64 user_data, int res, __u32 cqe_flags,
			     struct io_uring_sqe *sqe)
{
	__u32 op = user_data >> 32, slot = (__u32)user_data;
	struct echo_conn *c;

	if (!sqe)
		return -EFAULT;
	if (op == ECHO_OP_ACCEPT) {
		if (!(cqe_flags & IORING_CQE_F_MORE))
			echo_accept_armed = 0;	/* ended: re-armed if still needed */
		if (res < 0)
			return res == -ECANCELED && echo_cancel_sent ? 0 : res;
		if (echo_accepted >= echo_conns || echo_accepted >= ECHO_MAX_CONNS)
			return -EPROTO;		/* more connections than asked for */
		slot = echo_accepted++;
		c = &conns[slot & (ECHO_MAX_CONNS - 1)];
		c->fd = res;
		c->len = c->sent = 0;
		prep_recv(sqe, c, slot & (ECHO_MAX_CONNS - 1));
		return 1;
	}
	if (op == ECHO_OP_CANCEL) {
		/* -ENOENT/-EALREADY: the accept had ended or was ending anyway */
		if (res < 0 && res != -ENOENT && res != -EALREADY)
			return res;
		echo_cancel_done = 1;
		return 0;
	}
	if (slot >= ECHO_MAX_CONNS || slot >= echo_accepted)
		return -EPROTO;
	c = &conns[slot & (ECHO_MAX_CONNS - 1)];
	slot &= ECHO_MAX_CONNS - 1;

	switch (op) {
	case ECHO_OP_RECV:
		if (c->state != ST_RECV)
			return -EPROTO;
		if (res > 0) {
			if ((__u32)res > echo_buf_bytes)
				return -EIO;
			echo_recvs++;
			echo_bytes += res;
			c->len = res;
			c->sent = 0;
			prep_send(sqe, c, slot);
			return 1;
		}
		if (res == 0 || res == -ECONNRESET) {	/* the peer is gone */
			prep_close(sqe, c, slot);
			return 1;
		}
		return res;
	case ECHO_OP_SEND:
		if (c->state != ST_SEND)
			return -EPROTO;
		if (res == -EPIPE || res == -ECONNRESET) {
			prep_close(sqe, c, slot);
			return 1;
		}
		if (res < 0)
			return res;
		if (res == 0 || (__u32)res > c->len - c->sent)
			return -EIO;
		c->sent += res;
		if (c->sent < c->len) {		/* short send: the rest */
			prep_send(sqe, c, slot);
			return 1;
		}
		echo_sends++;
		prep_recv(sqe, c, slot);
		return 1;
	case ECHO_OP_CLOSE:
		if (c->state != ST_CLOSING)
			return -EPROTO;
		if (res < 0)
			return res;
		c->state = ST_FREE;
		echo_closed++;
		return 0;
	}
	return -EPROTO;
}

IOURING_BPF_STEP(echo_step)
{
	struct iou_ring r;
	__u32 head, ready, i, n = 0;
	__u64 now = bpf_ktime_get_ns();
	int ret;

	if (echo_seen_generation != echo_generation) {
		/* a new run: forget the last one */
		bpf_for(i, 0, ECHO_MAX_CONNS)
			conns[i & (ECHO_MAX_CONNS - 1)].state = ST_FREE;
		echo_recvs = echo_sends = echo_bytes = echo_steps = 0;
		echo_accepted = echo_closed = 0;
		echo_accept_armed = echo_cancel_sent = echo_cancel_done = 0;
		echo_progress_ns = now;
		iou_exit_status = 0;
		echo_seen_generation = echo_generation;
		if (echo_conns < 1 || echo_conns > ECHO_MAX_CONNS)
			return echo_fail(-EINVAL);
		if (echo_listen_fd < 0)
			return echo_fail(-EBADF);
		/* each CQE of a step may need an SQE, plus accept or cancel */
		if (iou_geom.sq_entries < 8)
			return echo_fail(-EINVAL);
	}
	if (echo_stop)
		return echo_fail(-ECANCELED);
	if (!iou_ring_open(&r, ring))
		return echo_fail(-EFAULT);
	echo_steps++;

	head = iou_cq_head(&r);
	ready = iou_cq_tail(&r) - head;
	if (ready > iou_geom.sq_entries - 2)
		ready = iou_geom.sq_entries - 2;	/* the rest next step */
	bpf_for(i, 0, ready) {
		struct io_uring_cqe *cqe = iou_cqe_at(&r, head + i);

		ret = echo_complete(cqe->user_data, cqe->res, cqe->flags, iou_sqe_at(&r, n));
		if (ret < 0) {
			iou_cq_advance(&r, i + 1);
			return echo_fail(ret);
		}
		n += ret;
	}
	iou_cq_advance(&r, ready);
	if (ready)
		echo_progress_ns = now;

	if (!echo_accept_armed && echo_accepted < echo_conns) {
		struct io_uring_sqe *sqe = iou_sqe_at(&r, n++);

		iou_prep_rw(sqe, IORING_OP_ACCEPT, echo_listen_fd, 0, 0, 0,
			    ECHO_UD(ECHO_OP_ACCEPT, 0));
		sqe->ioprio = IORING_ACCEPT_MULTISHOT;
		sqe->accept_flags = ECHO_SOCK_CLOEXEC;
		echo_accept_armed = 1;
	} else if (echo_accept_armed && echo_accepted >= echo_conns && !echo_cancel_sent) {
		/* every connection is in: no more accepts */
		struct io_uring_sqe *sqe = iou_sqe_at(&r, n++);

		iou_prep_rw(sqe, IORING_OP_ASYNC_CANCEL, -1, ECHO_UD(ECHO_OP_ACCEPT, 0), 0, 0,
			    ECHO_UD(ECHO_OP_CANCEL, 0));
		echo_cancel_sent = 1;
	}
	if (n) {
		ret = bpf_io_uring_submit_sqes(ring, n);
		if (ret != (int)n)
			return echo_fail(ret < 0 ? ret : -EAGAIN);
	}
	if (echo_closed >= echo_conns && !echo_accept_armed &&
	    (!echo_cancel_sent || echo_cancel_done))
		return IOU_LOOP_STOP;
	if (now - echo_progress_ns > echo_idle_ns)
		return echo_fail(-ETIMEDOUT);

	iou_wait_cqes(&r, lp, 1);
	if (iou_loop_has_timeouts(lp)) {
		lp->flags = IOU_LOOP_TIMEOUT;
		lp->timeout_ns = echo_wait_ns;
	}
	return IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(echo_ops, echo_step);
