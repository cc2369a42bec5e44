/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A ublk queue served by a loop_step policy, inside the queue daemon's
 * io_uring_enter(), with zero copy. The policy only says where a request's
 * bytes live: it defines
 *
 *	static int iou_ublk_map(struct iou_ublk_tag *t, __u64 off, __u32 len);
 *
 * which describes device bytes [off, off + len) as extents (fixed file,
 * file offset, offset in the request) with iou_ublk_add_extent(), and
 * returns 0 or -errno (the request then fails with that error). The engine
 * below does the rest, per request:
 *
 *   READ/WRITE	  REGISTER_IO_BUF(tag) + READ_FIXED/WRITE_FIXED per extent;
 *		  short transfers are resumed, a read that meets end of file
 *		  is zero-filled from /dev/zero; then UNREGISTER + COMMIT.
 *		  The extents must cover the request exactly (no hole, no
 *		  overlap), else -EIO: a hole would hand a reader whatever
 *		  the pages held. IOU_UBLK_ZERO_INDEX is /dev/zero: zeros for
 *		  a read, a sink for a write.
 *   FLUSH	  fsync of every backing file.
 *   DISCARD,
 *   WRITE_ZEROES fallocate(PUNCH_HOLE | KEEP_SIZE) per extent: the range
 *		  reads back as zeros (NOUNMAP is not honoured). The extents
 *		  of a WRITE_ZEROES must cover it as a write's do.
 *   others	  -EOPNOTSUPP.
 *
 * A request may need at most IOU_UBLK_MAX_EXTENTS extents (more: -E2BIG,
 * and the request fails). Requests are up to 512 KiB (`iouring-bpf ublk
 * add`), so a map that changes file or offset every N bytes (a stripe)
 * declares that with
 *
 *	IOU_UBLK_CHUNK_BYTES(64 << 10);
 *
 * and `ublk add` sets the device's chunk_sectors to N: the block layer then
 * never sends a read, write or write-zeroes that crosses a multiple of N
 * (one extent per request), and discards of at most N bytes (two extents
 * at most). N must be a multiple of 4096 and at most 512 KiB (not
 * necessarily a power of two), else `ublk add` refuses the policy before
 * the device exists. The map may use the value: iou_ublk_chunk_bytes.
 * Without the declaration the device has no chunk_sectors.
 *
 * Errors reach the block layer as the request's status. The loop stops
 * with iou_exit_status 0 when every tag's command came back aborted (the
 * device was stopped), or with -errno on a broken command stream.
 * Set-up contract (ring, fixed files and buffers, iou_ublk): ublk.h.
 */
#ifndef IOURING_BPF_UBLK_BPF_H
#define IOURING_BPF_UBLK_BPF_H

#include "ring.bpf.h"
#include "ublk.h"

/* extension kfuncs (kernel/patches: ublk BPF support, ublk_bpf_ops) */
extern int bpf_ublk_get_io_desc(__u32 dev_id, __u32 q_id, __u32 tag, void *desc,
				__u32 desc__sz) __ksym __weak;
extern int bpf_ublk_io_add_extent(struct ublk_bpf_io *io, __u32 file, __u64 file_off,
				  __u32 buf_off, __u32 len) __ksym __weak;

#define UBLK_IO_OP_READ		0
#define UBLK_IO_OP_WRITE	1
#define UBLK_IO_OP_FLUSH	2
#define UBLK_IO_OP_DISCARD	3
#define UBLK_IO_OP_WRITE_ZEROES	5
#define UBLK_IO_RES_ABORT	(-ENODEV)
#define IOU_UBLK_F_NEED_REG_BUF	(1U << 17)	/* UBLK_IO_F_NEED_REG_BUF */

/* _IOWR('u', nr, struct ublksrv_io_cmd) */
#define IOU_UBLK_CMD(nr)	(0xc0107500u | (nr))
#define IOU_UBLK_FETCH		IOU_UBLK_CMD(0x20)
#define IOU_UBLK_COMMIT		IOU_UBLK_CMD(0x21)
#define IOU_UBLK_REGISTER	IOU_UBLK_CMD(0x23)
#define IOU_UBLK_UNREGISTER	IOU_UBLK_CMD(0x24)

#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE	0x01
#define FALLOC_FL_PUNCH_HOLE	0x02
#endif

const volatile struct iouring_bpf_ublk_geometry iou_ublk;
/*
 * Set by the daemon when the device has UBLK_F_AUTO_BUF_REG: the driver
 * registers a request's buffer (index = tag, passed in the FETCH and
 * COMMIT_AND_FETCH SQEs' addr field) before handing it over and
 * unregisters it at COMMIT_AND_FETCH, so the engine sends neither
 * REGISTER_IO_BUF nor UNREGISTER_IO_BUF. Its presence in an object tells
 * the daemon the policy can run so (IOU_UBLK_AUTO_BUF_REG_GLOBAL).
 */
const volatile __u32 iou_ublk_auto_buf_reg;

#define IOU_UBLK_MAX_EXTENTS	4
#define IOU_UBLK_MAX_EMIT	8

/*
 * IOU_UBLK_CHUNK_BYTES(n): the map changes file or offset only at multiples
 * of n device bytes (see the top of this file). A const volatile global,
 * IOU_UBLK_CHUNK_GLOBAL, so user space finds it in .rodata by name and the
 * verifier knows its value once the policy is loaded.
 */
#define IOU_UBLK_CHUNK_BYTES(n)						\
	const volatile __u32 iou_ublk_chunk_bytes __attribute__((used)) = (n)

struct iou_ublk_extent {
	__u64 file_off;
	__u32 file;		/* fixed file index */
	__u32 buf_off;		/* offset in the request's buffer */
	__u32 len;		/* bytes still to move */
	__u32 zero;		/* end of file met: zero-fill len bytes */
};

enum iou_ublk_kind {
	IOU_UBLK_K_CMD,		/* FETCH or COMMIT_AND_FETCH */
	IOU_UBLK_K_REG,
	IOU_UBLK_K_IO,		/* READ_FIXED/WRITE_FIXED of an extent */
	IOU_UBLK_K_ZERO,	/* READ_FIXED from /dev/zero */
	IOU_UBLK_K_FSYNC,
	IOU_UBLK_K_FALLOC,
	IOU_UBLK_K_UNREG,
	IOU_UBLK_K_FETCH,	/* first FETCH (emitted as K_CMD) */
};

struct iou_ublk_tag {
	struct iou_ublk_extent ext[IOU_UBLK_MAX_EXTENTS];
	__u8 emit_kind[IOU_UBLK_MAX_EMIT];
	__u8 emit_arg[IOU_UBLK_MAX_EMIT];
	__u32 nr_emit;
	__u32 nr_ext;
	__u32 op;
	__u32 len;		/* request bytes */
	__u32 pending;		/* CQEs the request still waits for */
	__s32 res;		/* first error, else 0 */
	__s32 commit_res;
	__u32 registered;
	__u32 queued;		/* on the to-submit list */
	__u32 aborted;
};

static struct iou_ublk_tag iou_ublk_tags[IOU_UBLK_MAX_DEPTH];
static __u32 iou_ublk_todo[IOU_UBLK_MAX_DEPTH];
__u32 iou_ublk_nr_todo;
__u32 iou_ublk_started;
__u32 iou_ublk_nr_aborted;

/* counters */
__u64 ublk_requests, ublk_read_bytes, ublk_write_bytes, ublk_zero_filled;
__u64 ublk_flushes, ublk_discards, ublk_errors;

#define IOU_UBLK_UD(tag, kind, arg) \
	((__u64)(tag) | ((__u64)(kind) << 16) | ((__u64)(arg) << 24))

static __always_inline struct iou_ublk_tag *iou_ublk_tag(__u32 tag)
{
	return &iou_ublk_tags[tag & (IOU_UBLK_MAX_DEPTH - 1)];
}

/* The extents cover [0, t->len) of the request exactly. */
static __always_inline bool iou_ublk_covers(const struct iou_ublk_tag *t)
{
	__u32 i, j, sum = 0;

	bpf_for(i, 0, IOU_UBLK_MAX_EXTENTS) {
		const struct iou_ublk_extent *a = &t->ext[i & (IOU_UBLK_MAX_EXTENTS - 1)];

		if (i >= t->nr_ext)
			break;
		bpf_for(j, 0, IOU_UBLK_MAX_EXTENTS) {
			const struct iou_ublk_extent *b = &t->ext[j & (IOU_UBLK_MAX_EXTENTS - 1)];

			if (j >= i)
				break;
			if (a->buf_off < b->buf_off + b->len && b->buf_off < a->buf_off + a->len)
				return false;
		}
		sum += a->len;
	}
	return sum == t->len;
}

/* For iou_ublk_map(): one more extent; -E2BIG past IOU_UBLK_MAX_EXTENTS. */
static __always_inline int iou_ublk_add_extent(struct iou_ublk_tag *t, __u32 file,
					       __u64 file_off, __u32 buf_off,
					       __u32 len)
{
	struct iou_ublk_extent *e;

	if (t->nr_ext >= IOU_UBLK_MAX_EXTENTS)
		return -E2BIG;
	e = &t->ext[t->nr_ext & (IOU_UBLK_MAX_EXTENTS - 1)];
	e->file = file;
	e->file_off = file_off;
	e->buf_off = buf_off;
	e->len = len;
	e->zero = 0;
	t->nr_ext++;
	return 0;
}

static int iou_ublk_map(struct iou_ublk_tag *t, __u64 off, __u32 len);

static __always_inline int iou_ublk_emit(struct iou_ublk_tag *t, __u32 tag,
					 __u32 kind, __u32 arg)
{
	if (t->nr_emit >= IOU_UBLK_MAX_EMIT)
		return -E2BIG;
	t->emit_kind[t->nr_emit & (IOU_UBLK_MAX_EMIT - 1)] = kind;
	t->emit_arg[t->nr_emit & (IOU_UBLK_MAX_EMIT - 1)] = arg;
	t->nr_emit++;
	if (kind != IOU_UBLK_K_UNREG && kind != IOU_UBLK_K_CMD &&
	    kind != IOU_UBLK_K_FETCH)
		t->pending++;
	if (!t->queued) {
		t->queued = 1;
		iou_ublk_todo[iou_ublk_nr_todo & (IOU_UBLK_MAX_DEPTH - 1)] = tag;
		iou_ublk_nr_todo++;
	}
	return 0;
}

/* Done with the request: give back the buffer, commit, fetch the next. */
static __always_inline int iou_ublk_finish(struct iou_ublk_tag *t, __u32 tag,
					   int res)
{
	if (res < 0)
		ublk_errors++;
	if (t->registered) {
		t->registered = 0;
		if (iou_ublk_emit(t, tag, IOU_UBLK_K_UNREG, 0))
			return -E2BIG;
	}
	t->commit_res = res;
	return iou_ublk_emit(t, tag, IOU_UBLK_K_CMD, 0);
}

/* A request arrived on tag: plan its operations. */
__noinline int iou_ublk_start(__u32 tag)
{
	struct iou_ublk_tag *t = iou_ublk_tag(tag);
	struct ublksrv_io_desc d = {};
	__u64 off;
	__u32 i;
	int ret;

	ret = bpf_ublk_get_io_desc(iou_ublk.dev_id, iou_ublk.q_id, tag, &d, sizeof(d));
	if (ret)
		return ret;
	ublk_requests++;
	t->op = d.op_flags & 0xff;
	t->len = d.nr_sectors << 9;
	t->res = 0;
	t->nr_ext = 0;
	t->pending = 0;
	off = d.start_sector << 9;
	/* a flush carries no range (its sector is not meaningful) */
	if (t->op != UBLK_IO_OP_FLUSH && off + t->len > iou_ublk.dev_sectors << 9)
		return iou_ublk_finish(t, tag, -EIO);

	switch (t->op) {
	case UBLK_IO_OP_READ:
	case UBLK_IO_OP_WRITE:
		ret = iou_ublk_map(t, off, t->len);
		if (ret)
			return iou_ublk_finish(t, tag, ret);
		if (!iou_ublk_covers(t))
			return iou_ublk_finish(t, tag, -EIO);
		/* the driver registered it already, unless it says otherwise */
		if (!iou_ublk_auto_buf_reg || (d.op_flags & IOU_UBLK_F_NEED_REG_BUF)) {
			t->registered = 1;
			if (iou_ublk_emit(t, tag, IOU_UBLK_K_REG, 0))
				return -E2BIG;
		}
		bpf_for(i, 0, t->nr_ext)
			if (iou_ublk_emit(t, tag, IOU_UBLK_K_IO, i))
				return -E2BIG;
		return 0;
	case UBLK_IO_OP_FLUSH:
		ublk_flushes++;
		bpf_for(i, 0, iou_ublk.nr_files)
			if (iou_ublk_emit(t, tag, IOU_UBLK_K_FSYNC, i))
				return -E2BIG;
		return t->pending ? 0 : iou_ublk_finish(t, tag, 0);
	case UBLK_IO_OP_DISCARD:
	case UBLK_IO_OP_WRITE_ZEROES:
		ublk_discards++;
		ret = iou_ublk_map(t, off, t->len);
		if (ret)
			return iou_ublk_finish(t, tag, ret);
		if (t->op == UBLK_IO_OP_WRITE_ZEROES && !iou_ublk_covers(t))
			return iou_ublk_finish(t, tag, -EIO);
		bpf_for(i, 0, t->nr_ext)
			if (iou_ublk_emit(t, tag, IOU_UBLK_K_FALLOC, i))
				return -E2BIG;
		return t->pending ? 0 : iou_ublk_finish(t, tag, 0);
	default:
		return iou_ublk_finish(t, tag, -EOPNOTSUPP);
	}
}

/* All of a request's operations completed: zero-fill, or finish. */
static __always_inline int iou_ublk_settle(struct iou_ublk_tag *t, __u32 tag)
{
	__u32 i;

	if (t->res < 0)
		return iou_ublk_finish(t, tag, t->res);
	if (t->op != UBLK_IO_OP_READ)
		return iou_ublk_finish(t, tag, t->op == UBLK_IO_OP_WRITE ? t->len : 0);
	bpf_for(i, 0, IOU_UBLK_MAX_EXTENTS) {
		struct iou_ublk_extent *e = &t->ext[i & (IOU_UBLK_MAX_EXTENTS - 1)];

		if (i >= t->nr_ext || !e->zero)
			continue;
		e->zero = 0;
		ublk_zero_filled += e->len;
		if (iou_ublk_emit(t, tag, IOU_UBLK_K_ZERO, i))
			return -E2BIG;
	}
	if (t->pending)
		return 0;
	ublk_read_bytes += t->len;
	return iou_ublk_finish(t, tag, t->len);
}

/* One CQE: 0, or -errno to stop the loop. */
__noinline int iou_ublk_cqe(__u64 user_data, int res)
{
	__u32 tag = user_data & 0xffff, kind = (user_data >> 16) & 0xff;
	__u32 arg = (user_data >> 24) & 0xff;
	struct iou_ublk_tag *t = iou_ublk_tag(tag);
	struct iou_ublk_extent *e;

	if (tag >= iou_ublk.depth)
		return -EINVAL;
	switch (kind) {
	case IOU_UBLK_K_CMD:
		if (res == UBLK_IO_RES_ABORT) {
			if (!t->aborted) {
				t->aborted = 1;
				iou_ublk_nr_aborted++;
			}
			return 0;
		}
		if (res < 0)
			return res;
		return iou_ublk_start(tag);
	case IOU_UBLK_K_UNREG:
		if (res < 0)
			ublk_errors++;
		return 0;
	case IOU_UBLK_K_REG:
	case IOU_UBLK_K_FSYNC:
	case IOU_UBLK_K_FALLOC:
	case IOU_UBLK_K_ZERO:
		if (res < 0 && !t->res)
			t->res = res;
		break;
	case IOU_UBLK_K_IO:
		e = &t->ext[arg & (IOU_UBLK_MAX_EXTENTS - 1)];
		if (res < 0) {
			if (!t->res)
				t->res = res;
		} else if ((__u32)res < e->len) {
			if (res == 0 && t->op == UBLK_IO_OP_READ) {
				e->zero = 1;	/* end of file */
			} else if (res == 0) {
				if (!t->res)
					t->res = -EIO;
			} else {	/* short: move the rest */
				e->file_off += res;
				e->buf_off += res;
				e->len -= res;
				t->pending--;
				return iou_ublk_emit(t, tag, IOU_UBLK_K_IO, arg);
			}
		} else if (t->op == UBLK_IO_OP_WRITE) {
			ublk_write_bytes += res;
		}
		break;
	default:
		return -EINVAL;
	}
	if (t->pending)
		t->pending--;
	if (t->pending)
		return 0;
	return iou_ublk_settle(t, tag);
}

static __always_inline void iou_ublk_prep_cmd(struct io_uring_sqe *sqe, __u32 op,
					      __u32 tag, int res, __u64 addr,
					      __u64 user_data)
{
	struct ublksrv_io_cmd *cmd = (void *)&sqe->addr3;

	__builtin_memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->flags = 1 << IOSQE_FIXED_FILE_BIT;
	sqe->fd = IOU_UBLK_CHAR_INDEX;
	sqe->cmd_op = op;
	sqe->user_data = user_data;
	cmd->q_id = iou_ublk.q_id;
	cmd->tag = tag;
	cmd->result = res;
	cmd->addr = addr;
	/*
	 * auto registration: struct ublk_auto_buf_reg { index = tag } goes in
	 * the fetches' own SQE addr field, where the driver reads it
	 */
	if (iou_ublk_auto_buf_reg && (op == IOU_UBLK_FETCH || op == IOU_UBLK_COMMIT))
		sqe->addr = tag;
}

/* Write SQE number k of tag's pending operations: 1, or 0 if none left. */
__noinline int iou_ublk_prep(struct io_uring_sqe *sqe, __u32 tag, __u32 k)
{
	struct iou_ublk_tag *t = iou_ublk_tag(tag);
	__u32 kind, arg, i;
	struct iou_ublk_extent *e;

	if (!sqe || k >= t->nr_emit || k >= IOU_UBLK_MAX_EMIT)
		return 0;
	kind = t->emit_kind[k & (IOU_UBLK_MAX_EMIT - 1)];
	arg = t->emit_arg[k & (IOU_UBLK_MAX_EMIT - 1)];
	i = arg & (IOU_UBLK_MAX_EXTENTS - 1);
	e = &t->ext[i];
	switch (kind) {
	case IOU_UBLK_K_FETCH:
		iou_ublk_prep_cmd(sqe, IOU_UBLK_FETCH, tag, 0, 0,
				  IOU_UBLK_UD(tag, IOU_UBLK_K_CMD, 0));
		break;
	case IOU_UBLK_K_CMD:
		iou_ublk_prep_cmd(sqe, IOU_UBLK_COMMIT, tag, t->commit_res, 0,
				  IOU_UBLK_UD(tag, IOU_UBLK_K_CMD, 0));
		break;
	case IOU_UBLK_K_REG:
		iou_ublk_prep_cmd(sqe, IOU_UBLK_REGISTER, tag, 0, tag,
				  IOU_UBLK_UD(tag, kind, 0));
		break;
	case IOU_UBLK_K_UNREG:
		iou_ublk_prep_cmd(sqe, IOU_UBLK_UNREGISTER, tag, 0, tag,
				  IOU_UBLK_UD(tag, kind, 0));
		break;
	case IOU_UBLK_K_IO:
	case IOU_UBLK_K_ZERO:
		iou_prep_rw(sqe, kind == IOU_UBLK_K_ZERO || t->op == UBLK_IO_OP_READ ?
			    IORING_OP_READ_FIXED : IORING_OP_WRITE_FIXED,
			    kind == IOU_UBLK_K_ZERO ? IOU_UBLK_ZERO_INDEX : e->file,
			    e->buf_off, e->len,
			    kind == IOU_UBLK_K_ZERO ? 0 : e->file_off,
			    IOU_UBLK_UD(tag, kind, i));
		sqe->flags = 1 << IOSQE_FIXED_FILE_BIT;
		sqe->buf_index = tag;
		break;
	case IOU_UBLK_K_FSYNC:
		iou_prep_rw(sqe, IORING_OP_FSYNC, IOU_UBLK_FILE_INDEX(arg), 0, 0, 0,
			    IOU_UBLK_UD(tag, kind, arg));
		sqe->flags = 1 << IOSQE_FIXED_FILE_BIT;
		break;
	case IOU_UBLK_K_FALLOC:
		/* fallocate: addr = length, len = mode */
		iou_prep_rw(sqe, IORING_OP_FALLOCATE, e->file, e->len,
			    FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, e->file_off,
			    IOU_UBLK_UD(tag, kind, i));
		sqe->flags = 1 << IOSQE_FIXED_FILE_BIT;
		break;
	default:
		return 0;
	}
	return 1;
}

__u32 iou_ublk_todo_pos, iou_ublk_emit_pos;

/*
 * Write the next SQE any tag has pending into sqe: 1, or 0 when all were
 * written (the to-submit list is then empty again).
 */
__noinline int iou_ublk_next_sqe(struct io_uring_sqe *sqe)
{
	struct iou_ublk_tag *t;
	__u32 tag, j;

	if (!sqe)
		return 0;
	bpf_for(j, 0, IOU_UBLK_MAX_DEPTH) {
		if (iou_ublk_todo_pos >= iou_ublk_nr_todo ||
		    iou_ublk_todo_pos >= IOU_UBLK_MAX_DEPTH)
			break;
		tag = iou_ublk_todo[iou_ublk_todo_pos & (IOU_UBLK_MAX_DEPTH - 1)];
		if (iou_ublk_prep(sqe, tag, iou_ublk_emit_pos)) {
			iou_ublk_emit_pos++;
			return 1;
		}
		t = iou_ublk_tag(tag);
		t->nr_emit = 0;
		t->queued = 0;
		iou_ublk_emit_pos = 0;
		iou_ublk_todo_pos++;
	}
	iou_ublk_todo_pos = iou_ublk_emit_pos = 0;
	iou_ublk_nr_todo = 0;
	return 0;
}

/*
 * The whole step. A policy's loop_step is
 *	IOURING_BPF_STEP(my_step) { return iou_ublk_step(ring, lp); }
 */
static __always_inline int iou_ublk_step(struct iou_ctx *ctx,
					 struct iou_loop_params *lp)
{
	struct iou_ring r;
	__u32 head, ready, i, n = 0;
	int ret;

	if (!bpf_ksym_exists(bpf_ublk_get_io_desc))
		return iou_stop(-EOPNOTSUPP);
	if (!iou_ring_open(&r, ctx))
		return iou_stop(-EFAULT);
	if (!iou_ublk.depth || iou_ublk.depth > IOU_UBLK_MAX_DEPTH ||
	    iou_geom.sq_entries < iou_ublk.depth * IOU_UBLK_SQES_PER_TAG)
		return iou_stop(-EINVAL);

	if (!iou_ublk_started) {
		iou_ublk_started = 1;
		bpf_for(i, 0, iou_ublk.depth)
			if (iou_ublk_emit(iou_ublk_tag(i), i, IOU_UBLK_K_FETCH, 0))
				return iou_stop(-E2BIG);
	}

	head = iou_cq_head(&r);
	ready = iou_cq_tail(&r) - head;
	bpf_for(i, 0, ready) {
		struct io_uring_cqe *cqe = iou_cqe_at(&r, head + i);

		ret = iou_ublk_cqe(cqe->user_data, cqe->res);
		if (ret) {
			iou_cq_advance(&r, i + 1);
			return iou_stop(ret);
		}
	}
	iou_cq_advance(&r, ready);

	/* n grows by a global function's result, which the verifier cannot
	 * see through: an exact n would make every iteration a new state */
	bpf_for(i, 0, iou_geom.sq_entries) {
		int wrote = iou_ublk_next_sqe(iou_sqe_at(&r, n));

		barrier_var(wrote);
		if (wrote <= 0)
			break;
		n += wrote;
	}
	if (n) {
		ret = bpf_io_uring_submit_sqes(ctx, n);
		if (ret != (int)n)
			return iou_stop(ret < 0 ? ret : -EAGAIN);
	}
	if (iou_ublk_nr_aborted >= iou_ublk.depth)
		return iou_stop(0);
	iou_wait_cqes(&r, lp, 1);
	return IOU_LOOP_CONTINUE;
}

/*
 * The kernel path (kernel/patches: ublk_bpf_ops). A policy that also says
 *
 *	IOURING_BPF_UBLK_HOOK(my_hook);
 *
 * carries a ublk_bpf_ops struct_ops map, my_hook, whose queue_rq program
 * runs in the ublk driver when a request arrives and serves it there with
 * the same iou_ublk_map(): the driver moves the extents between the
 * request's pages and the files (IOU_UBLK_FILE_INDEX(i): the attachment's
 * file i; IOU_UBLK_ZERO_INDEX: zeros, or a sink for writes), flushes sync
 * every file, discards and write-zeroes punch, from workers of each queue
 * of the device (a read or write of one extent on an O_DIRECT block device
 * is cloned onto its queue instead); extents that do not cover a read,
 * write or write-zeroes exactly fail it with EIO there too. Nothing
 * reaches the daemon, whose queues stay armed for requests after a
 * detach. `iouring-bpf ublk add --path kernel` attaches it
 * (iouring_bpf_ublk_hook_attach()). What the map returns as an error
 * fails the request with that error.
 */
__u64 ublk_hook_requests, ublk_hook_errors;

static __always_inline int iou_ublk_hook(struct ublk_bpf_io *io)
{
	struct iou_ublk_tag t = {};
	__u64 off = io->start_sector << 9;
	__u32 len = io->nr_sectors << 9, i;
	int ret;

	__sync_fetch_and_add(&ublk_hook_requests, 1);
	t.op = io->op;
	t.len = len;
	switch (io->op) {
	case UBLK_IO_OP_FLUSH:
		return UBLK_BPF_SERVE_KERNEL;
	case UBLK_IO_OP_READ:
	case UBLK_IO_OP_WRITE:
	case UBLK_IO_OP_DISCARD:
	case UBLK_IO_OP_WRITE_ZEROES:
		break;
	default:
		__sync_fetch_and_add(&ublk_hook_errors, 1);
		return -EOPNOTSUPP;
	}
	if (off + len > iou_ublk.dev_sectors << 9) {
		__sync_fetch_and_add(&ublk_hook_errors, 1);
		return -EIO;
	}
	ret = iou_ublk_map(&t, off, len);
	if (ret)
		goto fail;
	bpf_for(i, 0, IOU_UBLK_MAX_EXTENTS) {
		struct iou_ublk_extent *e = &t.ext[i & (IOU_UBLK_MAX_EXTENTS - 1)];
		__u32 file;

		if (i >= t.nr_ext)
			break;
		if (e->file == IOU_UBLK_ZERO_INDEX)
			file = UBLK_BPF_FILE_ZERO;
		else if (e->file >= IOU_UBLK_FILE_INDEX(0))
			file = e->file - IOU_UBLK_FILE_INDEX(0);
		else
			file = UBLK_BPF_FILE_ZERO - 1;	/* not a file: -EBADF */
		ret = bpf_ublk_io_add_extent(io, file, e->file_off, e->buf_off, e->len);
		if (ret)
			goto fail;
	}
	return UBLK_BPF_SERVE_KERNEL;
fail:
	__sync_fetch_and_add(&ublk_hook_errors, 1);
	return ret < 0 ? ret : -EIO;
}

#define IOURING_BPF_UBLK_HOOK(name)						\
SEC("struct_ops/queue_rq")							\
int BPF_PROG(name##_queue_rq, struct ublk_bpf_io *io)				\
{										\
	return iou_ublk_hook(io);						\
}										\
SEC(".struct_ops.link")								\
struct ublk_bpf_ops name = {							\
	.queue_rq = (void *)name##_queue_rq,					\
}

#endif
