// SPDX-License-Identifier: (LGPL-2.1 OR MIT)
/*
 * IOURING_BPF_UBLK_SERVE_USER_COPY (iouring-bpf ublk add --target
 * loop-user): the copying baseline, served in user space. One
 * io_uring per queue thread carries both the ublk commands and the backing
 * file's I/O. The device has UBLK_F_NEED_GET_DATA: the driver copies a
 * WRITE's data into our buffer only after we ask for it.
 *
 * Per tag (one buffer of max_io_bytes each):
 *   FETCH -> res 0: a request in descs[tag]; res NEED_GET_DATA: a WRITE,
 *            so NEED_GET_DATA(buffer) first, whose res 0 brings its data
 *   READ          read the file into the buffer; end of file is zero-filled
 *   WRITE         write the buffer to the file
 *   FLUSH         fsync
 *   DISCARD       fallocate(PUNCH_HOLE | KEEP_SIZE)
 *   WRITE_ZEROES  fallocate(ZERO_RANGE | KEEP_SIZE) when NOUNMAP asks to keep
 *                 the blocks, else PUNCH_HOLE | KEEP_SIZE; where the file
 *                 system has neither (tmpfs has no ZERO_RANGE), zeros are
 *                 written
 *   -> COMMIT_AND_FETCH(result: bytes, 0 or -errno)
 * The thread ends when every tag's command came back UBLK_IO_RES_ABORT.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ublk_server.h"

enum { UD_CMD = 1, UD_IO = 2 };
#define UD(kind, tag)	(((__u64)(kind) << 32) | (tag))

struct user_tag {
	char *buf;
	__u64 off;		/* device byte offset = file offset */
	__u32 len, done;
	__u8 op;
	bool zero_write;	/* WRITE_ZEROES done as a write of zeros */
	bool aborted;
};

struct user_queue {
	struct ublk_server_queue *qt;
	struct iouring_bpf_ublk_queue q;
	struct iouring_bpf_ring ring;
	unsigned int *sq_head, *sq_tail, sq_mask;
	unsigned int *cq_head, *cq_tail, cq_mask;
	struct io_uring_cqe *cqes;
	unsigned int queued;	/* SQEs written since the last enter */
	int fd;			/* backing file */
	int char_fd;
	char *bufs;
	size_t bufs_size;
	unsigned int buf_bytes;
	struct user_tag *tags;
	unsigned int nr_aborted;
	unsigned int io_inflight;
};

static unsigned int *ring_u32(struct user_queue *u, __u32 off)
{
	return (unsigned int *)((char *)u->ring.ring_mem + off);
}

static int enter(struct user_queue *u, unsigned int min_complete)
{
	unsigned int flags = min_complete ? IORING_ENTER_GETEVENTS : 0;
	int ret;

	ret = syscall(__NR_io_uring_enter, u->ring.fd, u->queued, min_complete, flags, NULL, 0);
	if (ret < 0)
		return -errno;
	u->queued -= ret < (int)u->queued ? (unsigned int)ret : u->queued;
	return 0;
}

/* The next SQE, zeroed; submits first if the SQ is full. */
static struct io_uring_sqe *get_sqe(struct user_queue *u)
{
	unsigned int tail = *u->sq_tail;
	struct io_uring_sqe *sqe;

	while (tail - __atomic_load_n(u->sq_head, __ATOMIC_ACQUIRE) > u->sq_mask) {
		int ret = enter(u, 0);

		if (ret && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
			return NULL;
	}
	sqe = &u->ring.sqes[tail & u->sq_mask];
	memset(sqe, 0, sizeof(*sqe));
	__atomic_store_n(u->sq_tail, tail + 1, __ATOMIC_RELEASE);
	u->queued++;
	return sqe;
}

static int queue_cmd(struct user_queue *u, __u32 op, unsigned int tag, __s32 result)
{
	struct io_uring_sqe *sqe = get_sqe(u);

	if (!sqe)
		return -EBUSY;
	iouring_bpf_ublk_prep_io_cmd(sqe, op, u->char_fd, 0, u->q.q_id, tag, result,
				     (uintptr_t)u->tags[tag].buf);
	sqe->user_data = UD(UD_CMD, tag);
	return 0;
}

/* Backing file operation for tag: opcode with off/len/addr as io_uring wants them. */
static int queue_io(struct user_queue *u, unsigned int tag, __u8 opcode, __u64 addr, __u32 len,
		    __u64 off, __u32 rw_flags)
{
	struct io_uring_sqe *sqe = get_sqe(u);

	if (!sqe)
		return -EBUSY;
	sqe->opcode = opcode;
	sqe->fd = u->fd;
	sqe->addr = addr;
	sqe->len = len;
	sqe->off = off;
	sqe->rw_flags = rw_flags;
	sqe->user_data = UD(UD_IO, tag);
	u->io_inflight++;
	return 0;
}

static int commit(struct user_queue *u, unsigned int tag, int result)
{
	return queue_cmd(u, UBLK_U_IO_COMMIT_AND_FETCH_REQ, tag, result);
}

/* Issue (or continue) the transfer of tag's request. */
static int transfer(struct user_queue *u, unsigned int tag)
{
	struct user_tag *t = &u->tags[tag];
	bool write = t->op == UBLK_IO_OP_WRITE || t->zero_write;

	return queue_io(u, tag, write ? IORING_OP_WRITE : IORING_OP_READ,
			(uintptr_t)t->buf + t->done, t->len - t->done, t->off + t->done, 0);
}

/* A request arrived on tag (its FETCH or NEED_GET_DATA completed with 0). */
static int start_request(struct user_queue *u, unsigned int tag)
{
	const struct ublksrv_io_desc *iod = &u->q.descs[tag];
	struct user_tag *t = &u->tags[tag];
	__u32 op_flags = __atomic_load_n(&iod->op_flags, __ATOMIC_ACQUIRE);
	__u64 len = (__u64)iod->nr_sectors << 9;
	int mode;

	t->op = op_flags & 0xff;
	t->off = iod->start_sector << 9;
	t->len = len;
	t->done = 0;
	t->zero_write = false;
	/* a FLUSH has no range: its start sector is (sector_t)-1 */
	if (t->op != UBLK_IO_OP_FLUSH && t->off + len > u->qt->s->dev_bytes)
		return commit(u, tag, -EIO);

	switch (t->op) {
	case UBLK_IO_OP_READ:
	case UBLK_IO_OP_WRITE:
		if (len > u->buf_bytes)
			return commit(u, tag, -EIO);
		if (!len)
			return commit(u, tag, 0);
		return transfer(u, tag);
	case UBLK_IO_OP_FLUSH:
		return queue_io(u, tag, IORING_OP_FSYNC, 0, 0, 0, 0);
	case UBLK_IO_OP_DISCARD:
	case UBLK_IO_OP_WRITE_ZEROES:
		if (!len)
			return commit(u, tag, 0);
		mode = FALLOC_FL_KEEP_SIZE;
		if (t->op == UBLK_IO_OP_WRITE_ZEROES && ((op_flags >> 8) & (UBLK_IO_F_NOUNMAP >> 8)))
			mode |= FALLOC_FL_ZERO_RANGE;
		else
			mode |= FALLOC_FL_PUNCH_HOLE;
		/* fallocate: len is the mode, addr the length */
		return queue_io(u, tag, IORING_OP_FALLOCATE, len, mode, t->off, 0);
	default:
		return commit(u, tag, -EOPNOTSUPP);
	}
}

/* The backing file operation of tag completed with res. */
static int io_done(struct user_queue *u, unsigned int tag, int res)
{
	struct user_tag *t = &u->tags[tag];

	u->io_inflight--;
	switch (t->op) {
	case UBLK_IO_OP_READ:
		if (res < 0)
			return commit(u, tag, res);
		if (res == 0) {		/* end of file: the rest reads as zeros */
			memset(t->buf + t->done, 0, t->len - t->done);
			return commit(u, tag, t->len);
		}
		t->done += res;
		return t->done < t->len ? transfer(u, tag) : commit(u, tag, t->len);
	case UBLK_IO_OP_WRITE_ZEROES:
		if (t->zero_write)
			goto write;
		if (res == -EOPNOTSUPP || res == -EINVAL) {
			/* no such fallocate mode here: write zeros instead */
			if (t->len > u->buf_bytes)
				return commit(u, tag, res);
			t->zero_write = true;
			memset(t->buf, 0, t->len);
			return transfer(u, tag);
		}
		return commit(u, tag, res < 0 ? res : 0);
	case UBLK_IO_OP_WRITE:
write:
		if (res < 0)
			return commit(u, tag, res);
		if (res == 0)
			return commit(u, tag, -EIO);
		t->done += res;
		if (t->done < t->len)
			return transfer(u, tag);
		return commit(u, tag, t->zero_write ? 0 : (int)t->len);
	default:	/* FLUSH, DISCARD */
		return commit(u, tag, res < 0 ? res : 0);
	}
}

/* A ublk command of tag completed with res. */
static int cmd_done(struct user_queue *u, unsigned int tag, int res)
{
	if (res == UBLK_IO_RES_ABORT) {
		if (!u->tags[tag].aborted) {
			u->tags[tag].aborted = true;
			u->nr_aborted++;
		}
		return 0;
	}
	if (res == UBLK_IO_RES_NEED_GET_DATA)
		return queue_cmd(u, UBLK_U_IO_NEED_GET_DATA, tag, 0);
	if (res == UBLK_IO_RES_OK)
		return start_request(u, tag);
	ublk_qfail(u->qt, res, "ublk command for tag %u failed: %s", tag, strerror(-res));
	return res;
}

static int setup(struct user_queue *u)
{
	struct ublk_server_queue *qt = u->qt;
	struct iouring_bpf_ublk_server *d = qt->s;
	const struct io_uring_params *p;
	unsigned int depth = d->dev.info.queue_depth, entries = 1;
	int ret;

	u->fd = d->file_fds[0];
	u->char_fd = d->dev.char_fd;
	u->buf_bytes = d->dev.info.max_io_buf_bytes;
	ret = iouring_bpf_ublk_queue_init(&u->q, &d->dev, qt->q_id);
	if (ret) {
		ublk_qfail(qt, ret, "mapping the request descriptors of queue %u: %s", qt->q_id,
			   strerror(-ret));
		return ret;
	}
	while (entries < depth)
		entries <<= 1;
	/* the queue's own task runs the driver's task work: DEFER_TASKRUN */
	ret = iouring_bpf_ring_init(&u->ring, entries, 2 * entries,
				    IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
				    IORING_SETUP_NO_SQARRAY);
	if (ret) {
		ublk_qfail(qt, ret, "creating the queue's io_uring: %s", strerror(-ret));
		return ret;
	}
	p = &u->ring.params;
	u->sq_head = ring_u32(u, p->sq_off.head);
	u->sq_tail = ring_u32(u, p->sq_off.tail);
	u->sq_mask = *ring_u32(u, p->sq_off.ring_mask);
	u->cq_head = ring_u32(u, p->cq_off.head);
	u->cq_tail = ring_u32(u, p->cq_off.tail);
	u->cq_mask = *ring_u32(u, p->cq_off.ring_mask);
	u->cqes = (struct io_uring_cqe *)((char *)u->ring.ring_mem + p->cq_off.cqes);

	u->tags = calloc(depth, sizeof(*u->tags));
	u->bufs_size = (size_t)depth * u->buf_bytes;
	u->bufs = mmap(NULL, u->bufs_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (!u->tags || u->bufs == MAP_FAILED) {
		u->bufs = NULL;
		ublk_qfail(qt, -ENOMEM, "no memory for %u buffers of %u bytes", depth, u->buf_bytes);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < depth; i++)
		u->tags[i].buf = u->bufs + (size_t)i * u->buf_bytes;
	return 0;
}

static void teardown(struct user_queue *u)
{
	iouring_bpf_ring_exit(&u->ring);
	iouring_bpf_ublk_queue_exit(&u->q);
	if (u->bufs)
		munmap(u->bufs, u->bufs_size);
	free(u->tags);
}

void ublk_serve_user(struct ublk_server_queue *qt)
{
	struct user_queue u = { .qt = qt, .ring = { .fd = -1 } };
	unsigned int depth = qt->s->dev.info.queue_depth;
	int ret;

	if (setup(&u))
		goto out;
	if (!ublk_may_fetch(qt))
		goto out;
	for (unsigned int tag = 0; tag < depth; tag++) {
		ret = queue_cmd(&u, UBLK_U_IO_FETCH_REQ, tag, 0);
		if (ret) {
			ublk_qfail(qt, ret, "queueing FETCH_REQ: %s", strerror(-ret));
			goto out;
		}
	}

	while (u.nr_aborted < depth || u.io_inflight) {
		unsigned int head, tail;

		ret = enter(&u, 1);
		if (ret == -EINTR && !ublk_may_fetch(qt)) {
			ublk_qfail(qt, ret, "the daemon gave up on the device");
			goto out;
		}
		if (ret == -EINTR || ret == -EAGAIN || ret == -EBUSY)
			continue;
		if (ret) {
			ublk_qfail(qt, ret, "io_uring_enter: %s", strerror(-ret));
			goto out;
		}
		head = *u.cq_head;
		tail = __atomic_load_n(u.cq_tail, __ATOMIC_ACQUIRE);
		for (; head != tail; head++) {
			const struct io_uring_cqe *cqe = &u.cqes[head & u.cq_mask];
			unsigned int tag = cqe->user_data & 0xffff;
			unsigned int kind = cqe->user_data >> 32;

			if (tag >= depth) {
				ublk_qfail(qt, -EPROTO, "completion for unknown tag %u", tag);
				goto out;
			}
			ret = kind == UD_CMD ? cmd_done(&u, tag, cqe->res) :
					       io_done(&u, tag, cqe->res);
			if (ret) {
				if (!qt->ret)
					ublk_qfail(qt, ret, "tag %u: %s", tag, strerror(-ret));
				goto out;
			}
		}
		__atomic_store_n(u.cq_head, head, __ATOMIC_RELEASE);
	}
out:
	/* closing the ring cancels what the driver still holds: it stops the device */
	teardown(&u);
}
