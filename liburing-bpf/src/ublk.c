// SPDX-License-Identifier: (LGPL-2.1 OR MIT)
/*
 * ublk device control: ADD/DEL/START/STOP/SET_PARAMS/... as io_uring
 * commands on /dev/ublk-control, through a four-entry SQE128 ring private to
 * the device handle; and the pieces a queue daemon needs (the descriptor
 * array of a queue, per-IO command SQEs).
 *
 * Each control command is submitted alone and waited for. The driver runs
 * them in an io-wq worker (it refuses non-blocking issue), so a command that
 * sleeps (START_DEV until every queue fetched, DEL_DEV until the server
 * closed the char device) can be interrupted by cancelling it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "liburing-bpf.h"
#include "ublk_server.h"

#define UBLK_CONTROL_PATH	"/dev/ublk-control"
#define CTRL_ENTRIES		4
/* how long open_char() waits for udev (or devtmpfs) to create /dev/ublkcN */
#define CHAR_WAIT_MS		5000
/* how often a command that may be aborted looks at its abort flag */
#define ABORT_POLL_MS		20

/* What the device handle's __private holds. */
struct ublk_priv {
	struct iouring_bpf_ring ctrl_ring;	/* SQE128 ring for control commands */
	__u64 ctrl_seq;
};

_Static_assert(sizeof(struct ublk_priv) <= sizeof(((struct iouring_bpf_ublk_dev *)0)->__private),
	       "struct ublk_priv outgrew iouring_bpf_ublk_dev.__private");
_Static_assert(_Alignof(struct ublk_priv) <= _Alignof(__u64), "__private is 8-byte aligned");

static struct ublk_priv *priv(struct iouring_bpf_ublk_dev *dev)
{
	return (struct ublk_priv *)dev->__private;
}

/* --- the control ring: one command at a time --- */

static unsigned int *ring_u32(const struct iouring_bpf_ring *r, __u32 off)
{
	return (unsigned int *)((char *)r->ring_mem + off);
}

/* Queue one SQE128 (zeroed) and return it. */
static struct io_uring_sqe *ctrl_sqe(struct iouring_bpf_ring *r)
{
	const struct io_uring_params *p = &r->params;
	unsigned int tail = *ring_u32(r, p->sq_off.tail);
	unsigned int idx = tail & *ring_u32(r, p->sq_off.ring_mask);
	struct io_uring_sqe *sqe = (struct io_uring_sqe *)((char *)r->sqes + (size_t)idx * 128);

	memset(sqe, 0, 128);
	ring_u32(r, p->sq_off.array)[idx] = idx;
	__atomic_store_n(ring_u32(r, p->sq_off.tail), tail + 1, __ATOMIC_RELEASE);
	return sqe;
}

/* Take back the SQE just queued, which the kernel did not consume. */
static void ctrl_unqueue(struct iouring_bpf_ring *r)
{
	const struct io_uring_params *p = &r->params;
	unsigned int tail = *ring_u32(r, p->sq_off.tail);

	if (__atomic_load_n(ring_u32(r, p->sq_off.head), __ATOMIC_ACQUIRE) != tail)
		__atomic_store_n(ring_u32(r, p->sq_off.tail), tail - 1, __ATOMIC_RELEASE);
}

/* Take one CQE if there is one: 1 and its fields, else 0. */
static int ctrl_reap(struct iouring_bpf_ring *r, __u64 *user_data, int *res)
{
	const struct io_uring_params *p = &r->params;
	unsigned int head = *ring_u32(r, p->cq_off.head);
	unsigned int tail = __atomic_load_n(ring_u32(r, p->cq_off.tail), __ATOMIC_ACQUIRE);
	const struct io_uring_cqe *cqe;

	if (head == tail)
		return 0;
	cqe = (const struct io_uring_cqe *)((char *)r->ring_mem + p->cq_off.cqes) +
	      (head & *ring_u32(r, p->cq_off.ring_mask));
	*user_data = cqe->user_data;
	*res = cqe->res;
	__atomic_store_n(ring_u32(r, p->cq_off.head), head + 1, __ATOMIC_RELEASE);
	return 1;
}

/* io_uring_enter(): submit the one queued SQE. */
static int ctrl_submit(struct iouring_bpf_ring *r)
{
	int ret;

	do
		ret = syscall(__NR_io_uring_enter, r->fd, 1, 0, 0, NULL, 0);
	while (ret < 0 && errno == EINTR);
	if (ret < 0)
		return -errno;
	return ret == 1 ? 0 : -EAGAIN;
}

/* Milliseconds from now to deadline (CLOCK_MONOTONIC), 0 if passed. */
static long long ms_left(const struct timespec *deadline)
{
	struct timespec now;
	long long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (deadline->tv_sec - now.tv_sec) * 1000LL + (deadline->tv_nsec - now.tv_nsec) / 1000000;
	return ms > 0 ? ms : 0;
}

/*
 * io_uring_enter(): wait for a CQE, up to the deadline if there is one
 * (-ETIME then); -EINTR when a signal handler ran.
 */
static int ctrl_wait(struct iouring_bpf_ring *r, const struct timespec *deadline)
{
	struct io_uring_getevents_arg arg = {};
	struct __kernel_timespec ts;
	unsigned int flags = IORING_ENTER_GETEVENTS;
	void *argp = NULL;
	size_t argsz = 0;
	int ret;

	if (deadline) {
		long long ms = ms_left(deadline);

		if (!ms)
			return -ETIME;
		ts.tv_sec = ms / 1000;
		ts.tv_nsec = (ms % 1000) * 1000000;
		arg.ts = (uintptr_t)&ts;
		flags |= IORING_ENTER_EXT_ARG;
		argp = &arg;
		argsz = sizeof(arg);
	}
	ret = syscall(__NR_io_uring_enter, r->fd, 0, 1, flags, argp, argsz);
	return ret < 0 ? -errno : 0;
}

#define CANCEL_BIT (1ULL << 63)

/* now + ms, CLOCK_MONOTONIC */
static void deadline_in(struct timespec *t, unsigned int ms)
{
	clock_gettime(CLOCK_MONOTONIC, t);
	t->tv_sec += ms / 1000;
	t->tv_nsec += (long)(ms % 1000) * 1000000;
	if (t->tv_nsec >= 1000000000) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000;
	}
}

/*
 * Run one control command and return its result. With timeout_ms, with
 * interruptible set and a signal handler running, or once *abort is set
 * (another thread's word, looked at every ABORT_POLL_MS), the command is
 * cancelled then (an io-wq cancel interrupts the driver's interruptible
 * sleeps); the result is -ETIMEDOUT, -EINTR or -ECANCELED unless the
 * command finished anyway. A command that sleeps uninterruptibly is waited
 * for to its end.
 */
static int ctrl_cmd(struct iouring_bpf_ublk_dev *dev, __u32 op, struct ublksrv_ctrl_cmd *cmd,
		    unsigned int timeout_ms, bool interruptible, atomic_bool *abort)
{
	struct iouring_bpf_ring *r = &priv(dev)->ctrl_ring;
	struct timespec deadline, tick, *dl = NULL;
	struct io_uring_sqe *sqe;
	__u64 seq, ud;
	int ret, res = 0, why = 0;
	bool done = false, cancelled = false;

	if (!r->ring_mem || dev->ctrl_fd < 0)
		return -EBADF;
	seq = ++priv(dev)->ctrl_seq & ~CANCEL_BIT;
	if (timeout_ms) {
		deadline_in(&deadline, timeout_ms);
		dl = &deadline;
	}

	sqe = ctrl_sqe(r);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = dev->ctrl_fd;
	sqe->cmd_op = op;
	sqe->user_data = seq;
	memcpy((char *)sqe + offsetof(struct io_uring_sqe, addr3), cmd, sizeof(*cmd));
	ret = ctrl_submit(r);
	if (ret) {
		ctrl_unqueue(r);
		return ret;
	}

	/* until the command's CQE, and the cancel's if one was sent */
	while (!done || cancelled) {
		while (ctrl_reap(r, &ud, &ret)) {
			if (ud == seq) {
				res = ret;
				done = true;
			} else if (ud == (seq | CANCEL_BIT)) {
				cancelled = false;
			}
		}
		if (done && !cancelled)
			break;
		if (abort && !why) {
			/* wake up to look at *abort, or at the deadline if that is sooner */
			deadline_in(&tick, ABORT_POLL_MS);
			if (dl && ms_left(dl) < ABORT_POLL_MS)
				tick = *dl;
			ret = ctrl_wait(r, &tick);
			if (ret == -ETIME && (!dl || ms_left(dl)))
				ret = atomic_load(abort) ? -ECANCELED : 0;
			else if (!ret && atomic_load(abort))
				ret = -ECANCELED;
		} else {
			ret = ctrl_wait(r, why ? NULL : dl);
		}
		if (!ret || (ret == -EINTR && (!interruptible || why)))
			continue;
		if (ret != -EINTR && ret != -ETIME && ret != -ECANCELED)
			return ret;	/* the ring itself failed */
		why = ret == -ETIME ? -ETIMEDOUT : ret;
		sqe = ctrl_sqe(r);
		sqe->opcode = IORING_OP_ASYNC_CANCEL;
		sqe->fd = -1;
		sqe->addr = seq;
		sqe->user_data = seq | CANCEL_BIT;
		cancelled = !ctrl_submit(r);
		if (!cancelled)
			ctrl_unqueue(r);
	}
	return why && res < 0 ? why : res;
}

static void ctrl_header(const struct iouring_bpf_ublk_dev *dev, struct ublksrv_ctrl_cmd *c,
			void *buf, __u16 len)
{
	memset(c, 0, sizeof(*c));
	c->dev_id = dev->info.dev_id;
	c->queue_id = (__u16)-1;
	c->addr = (uintptr_t)buf;
	c->len = len;
}

/* A closed handle: iouring_bpf_ublk_close() on it does nothing. */
static void dev_reset(struct iouring_bpf_ublk_dev *dev)
{
	memset(dev, 0, sizeof(*dev));
	dev->ctrl_fd = -1;
	dev->char_fd = -1;
	priv(dev)->ctrl_ring.fd = -1;
}

/* Open /dev/ublk-control and the control ring; dev is reset first. */
static int ctrl_open(struct iouring_bpf_ublk_dev *dev)
{
	int ret;

	dev_reset(dev);
	dev->ctrl_fd = open(UBLK_CONTROL_PATH, O_RDWR | O_CLOEXEC);
	if (dev->ctrl_fd < 0) {
		/* a node without its driver (module unloaded) gives ENXIO */
		ret = errno == ENXIO ? -ENODEV : -errno;
		return ret;
	}
	ret = iouring_bpf_ring_init(&priv(dev)->ctrl_ring, CTRL_ENTRIES, 0, IORING_SETUP_SQE128);
	if (ret) {
		close(dev->ctrl_fd);
		dev->ctrl_fd = -1;
		priv(dev)->ctrl_ring.fd = -1;
	}
	return ret;
}

void iouring_bpf_ublk_close(struct iouring_bpf_ublk_dev *dev)
{
	if (!dev)
		return;
	if (dev->char_fd >= 0)
		close(dev->char_fd);
	iouring_bpf_ring_exit(&priv(dev)->ctrl_ring);
	if (dev->ctrl_fd >= 0)
		close(dev->ctrl_fd);
	dev->char_fd = -1;
	dev->ctrl_fd = -1;
	priv(dev)->ctrl_ring.fd = -1;
}

int iouring_bpf_ublk_get_features(__u64 *features)
{
	struct iouring_bpf_ublk_dev dev;
	struct ublksrv_ctrl_cmd c;
	__u64 f = 0;
	int ret;

	if (!features)
		return -EINVAL;
	ret = ctrl_open(&dev);
	if (ret)
		return ret;
	dev.info.dev_id = UINT_MAX;	/* a kernel without GET_FEATURES looks this up */
	ctrl_header(&dev, &c, &f, UBLK_FEATURES_LEN);
	ret = ctrl_cmd(&dev, UBLK_U_CMD_GET_FEATURES, &c, 0, false, NULL);
	iouring_bpf_ublk_close(&dev);
	if (ret == -ENODEV)
		ret = -EOPNOTSUPP;
	if (!ret)
		*features = f;
	return ret;
}

int iouring_bpf_ublk_get_info(struct iouring_bpf_ublk_dev *dev)
{
	struct ublksrv_ctrl_dev_info info;
	struct ublksrv_ctrl_cmd c;
	int ret;

	if (!dev)
		return -EINVAL;
	ctrl_header(dev, &c, &info, sizeof(info));
	ret = ctrl_cmd(dev, UBLK_U_CMD_GET_DEV_INFO, &c, 0, false, NULL);
	if (!ret)
		dev->info = info;
	return ret;
}

int iouring_bpf_ublk_open(struct iouring_bpf_ublk_dev *dev, int dev_id)
{
	int ret;

	if (!dev)
		return -EINVAL;
	if (dev_id < 0) {
		dev_reset(dev);
		return -EINVAL;
	}
	ret = ctrl_open(dev);
	if (ret)
		return ret;
	dev->info.dev_id = dev_id;
	ret = iouring_bpf_ublk_get_info(dev);
	if (ret)
		iouring_bpf_ublk_close(dev);
	return ret;
}

int iouring_bpf_ublk_add(struct iouring_bpf_ublk_dev *dev, int dev_id, unsigned int nr_queues,
			 unsigned int depth, unsigned int max_io_bytes, __u64 flags)
{
	struct ublksrv_ctrl_dev_info info;
	struct ublksrv_ctrl_cmd c;
	long page = sysconf(_SC_PAGESIZE);
	__u64 dropped;
	int ret;

	if (!dev)
		return -EINVAL;
	dev_reset(dev);
	if (!nr_queues || nr_queues > UBLK_MAX_NR_QUEUES || !depth ||
	    depth > UBLK_MAX_QUEUE_DEPTH || max_io_bytes < (unsigned long)page)
		return -EINVAL;
	ret = ctrl_open(dev);
	if (ret)
		return ret;

	flags |= UBLK_F_CMD_IOCTL_ENCODE;
	memset(&info, 0, sizeof(info));
	info.nr_hw_queues = nr_queues;
	info.queue_depth = depth;
	info.max_io_buf_bytes = max_io_bytes;
	info.dev_id = dev_id < 0 ? UINT_MAX : (__u32)dev_id;
	info.flags = flags;
	dev->info.dev_id = info.dev_id;
	ctrl_header(dev, &c, &info, sizeof(info));
	ret = ctrl_cmd(dev, UBLK_U_CMD_ADD_DEV, &c, 0, false, NULL);
	if (ret) {
		iouring_bpf_ublk_close(dev);
		return ret;
	}
	dev->info = info;

	/* the driver drops flags it does not know instead of refusing them */
	dropped = flags & ~info.flags;
	if (dropped) {
		iouring_bpf_ublk_delete(dev, 0);
		iouring_bpf_ublk_close(dev);
		return -EOPNOTSUPP;
	}
	return 0;
}

int iouring_bpf_ublk_set_params(struct iouring_bpf_ublk_dev *dev, const struct ublk_params *params)
{
	struct ublk_params p;
	struct ublksrv_ctrl_cmd c;

	if (!dev || !params)
		return -EINVAL;
	p = *params;
	if (!p.len || p.len > sizeof(p))
		p.len = sizeof(p);
	ctrl_header(dev, &c, &p, sizeof(p));
	return ctrl_cmd(dev, UBLK_U_CMD_SET_PARAMS, &c, 0, false, NULL);
}

int iouring_bpf_ublk_get_params(struct iouring_bpf_ublk_dev *dev, struct ublk_params *params)
{
	struct ublksrv_ctrl_cmd c;

	if (!dev || !params)
		return -EINVAL;
	memset(params, 0, sizeof(*params));
	params->len = sizeof(*params);
	ctrl_header(dev, &c, params, sizeof(*params));
	return ctrl_cmd(dev, UBLK_U_CMD_GET_PARAMS, &c, 0, false, NULL);
}

int iouring_bpf_ublk_open_char(struct iouring_bpf_ublk_dev *dev)
{
	char path[64];
	int waited = 0, fd;

	if (!dev || dev->ctrl_fd < 0)
		return -EINVAL;
	if (dev->char_fd >= 0)
		return -EBUSY;
	snprintf(path, sizeof(path), "/dev/ublkc%u", dev->info.dev_id);
	for (;;) {
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd >= 0)
			break;
		if (errno != ENOENT || waited >= CHAR_WAIT_MS)
			return -errno;
		usleep(10000);
		waited += 10;
	}
	dev->char_fd = fd;
	return 0;
}

int iouring_bpf_ublk_start(struct iouring_bpf_ublk_dev *dev, pid_t daemon)
{
	struct ublksrv_ctrl_cmd c;
	int ret;

	if (!dev || daemon <= 0)
		return -EINVAL;
	ctrl_header(dev, &c, NULL, 0);
	c.data[0] = daemon;
	ret = ctrl_cmd(dev, UBLK_U_CMD_START_DEV, &c, 0, true, NULL);
	if (!ret)
		iouring_bpf_ublk_get_info(dev);
	return ret;
}

int iouring_bpf__ublk_start_abortable(struct iouring_bpf_ublk_dev *dev, pid_t daemon,
				      atomic_bool *abort)
{
	struct ublksrv_ctrl_cmd c;
	int ret;

	if (!dev || daemon <= 0 || !abort)
		return -EINVAL;
	ctrl_header(dev, &c, NULL, 0);
	c.data[0] = daemon;
	ret = ctrl_cmd(dev, UBLK_U_CMD_START_DEV, &c, 0, false, abort);
	if (!ret)
		iouring_bpf_ublk_get_info(dev);
	return ret;
}

int iouring_bpf_ublk_stop(struct iouring_bpf_ublk_dev *dev)
{
	struct ublksrv_ctrl_cmd c;
	int ret;

	if (!dev)
		return -EINVAL;
	ctrl_header(dev, &c, NULL, 0);
	ret = ctrl_cmd(dev, UBLK_U_CMD_STOP_DEV, &c, 0, false, NULL);
	if (!ret)
		iouring_bpf_ublk_get_info(dev);
	return ret;
}

int iouring_bpf_ublk_delete(struct iouring_bpf_ublk_dev *dev, unsigned int timeout_ms)
{
	struct ublksrv_ctrl_cmd c;

	if (!dev)
		return -EINVAL;
	ctrl_header(dev, &c, NULL, 0);
	return ctrl_cmd(dev, UBLK_U_CMD_DEL_DEV, &c, timeout_ms, true, NULL);
}

/* --- queues --- */

static size_t round_up_page(size_t n, size_t page)
{
	return (n + page - 1) / page * page;
}

int iouring_bpf_ublk_queue_init(struct iouring_bpf_ublk_queue *q,
				const struct iouring_bpf_ublk_dev *dev, unsigned int q_id)
{
	size_t page = sysconf(_SC_PAGESIZE), stride;
	void *m;

	if (!q || !dev)
		return -EINVAL;
	memset(q, 0, sizeof(*q));
	if (dev->char_fd < 0)
		return -EBADF;
	if (q_id >= dev->info.nr_hw_queues || !dev->info.queue_depth)
		return -EINVAL;
	q->q_id = q_id;
	q->depth = dev->info.queue_depth;
	q->descs_size = round_up_page((size_t)q->depth * sizeof(struct ublksrv_io_desc), page);
	/* every queue's array sits at a stride of the largest possible one */
	stride = round_up_page((size_t)UBLK_MAX_QUEUE_DEPTH * sizeof(struct ublksrv_io_desc), page);
	m = mmap(NULL, q->descs_size, PROT_READ, MAP_SHARED | MAP_POPULATE, dev->char_fd,
		 UBLKSRV_CMD_BUF_OFFSET + (off_t)q_id * stride);
	if (m == MAP_FAILED) {
		int ret = -errno;

		memset(q, 0, sizeof(*q));
		return ret;
	}
	q->descs = m;
	return 0;
}

void iouring_bpf_ublk_queue_exit(struct iouring_bpf_ublk_queue *q)
{
	if (!q || !q->descs)
		return;
	munmap((void *)q->descs, q->descs_size);
	q->descs = NULL;
}

int iouring_bpf_ublk_prep_io_cmd(struct io_uring_sqe *sqe, __u32 cmd_op, int fd,
				 unsigned int flags, __u16 q_id, __u16 tag, __s32 result,
				 __u64 addr)
{
	bool fetch = cmd_op == UBLK_U_IO_FETCH_REQ || cmd_op == UBLK_U_IO_COMMIT_AND_FETCH_REQ;
	bool auto_reg = flags & IOURING_BPF_UBLK_AUTO_BUF_REG;
	struct ublksrv_io_cmd cmd = {
		.q_id = q_id, .tag = tag, .result = result, .addr = auto_reg ? 0 : addr,
	};

	if (!sqe || (flags & ~(IOURING_BPF_UBLK_FIXED_FILE | IOURING_BPF_UBLK_AUTO_BUF_REG)))
		return -EINVAL;
	if (!fetch && cmd_op != UBLK_U_IO_NEED_GET_DATA && cmd_op != UBLK_U_IO_REGISTER_IO_BUF &&
	    cmd_op != UBLK_U_IO_UNREGISTER_IO_BUF)
		return -EINVAL;
	if (auto_reg && !fetch)
		return -EINVAL;
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	if (flags & IOURING_BPF_UBLK_FIXED_FILE)
		sqe->flags = IOSQE_FIXED_FILE;
	sqe->cmd_op = cmd_op;
	/* the auto-registration descriptor is the SQE's, not the command's */
	if (auto_reg)
		sqe->addr = addr;
	memcpy((char *)sqe + offsetof(struct io_uring_sqe, addr3), &cmd, sizeof(cmd));
	return 0;
}
