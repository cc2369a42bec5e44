/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * virtio-blk io_uring passthrough from a loop_step policy (kernel patches
 * 23-25): one VIRTBLK_URING_CMD_IO command per SQE on a disk's character
 * device /dev/vdXc0, as liburing-bpf's iouring_bpf_vblk_prep_*() write them
 * for a C program. Sectors are 512 bytes; buffers are addresses in the
 * address space of the task that runs the loop (its io_uring_enter()).
 *
 * Ring requirement: the command fills the cmd area of a 128-byte SQE, so
 * the ring must be set up with IORING_SETUP_SQE128 (IOURING_BPF_RING_FLAGS
 * | IORING_SETUP_SQE128); iou_sqe_at() then steps 128 bytes, as
 * iou_geom.sqe_size says. On any other ring every helper here returns
 * -EOPNOTSUPP and writes nothing: iou_geom is read-only data, so the
 * verifier sees that at load and never checks a 128-byte write into
 * 64-byte SQEs. (The kernel, too, refuses the command on such a ring with
 * -EOPNOTSUPP.) liburing-bpf and the loader refuse to give an SQE128 ring
 * to a policy built against headers older than this one (iou_geom without
 * sqe_size).
 *
 * The CQE's res is 0 or a negative errno (kernel/README.md lists them).
 */
#ifndef IOURING_BPF_VBLK_BPF_H
#define IOURING_BPF_VBLK_BPF_H

#include "ring.bpf.h"

/*
 * <linux/virtio_blk.h>'s values. vmlinux.h carries types, not macros, and
 * the kernel's struct virtblk_uring_cmd is in it only if a built-in
 * function's BTF uses it; so this header has its own copy of the layout
 * under another name (no clash if vmlinux.h gains the original).
 */
#ifndef VIRTIO_BLK_T_IN
#define VIRTIO_BLK_T_IN			0
#define VIRTIO_BLK_T_OUT		1
#define VIRTIO_BLK_T_FLUSH		4
#define VIRTIO_BLK_T_GET_ID		8
#endif
#ifndef VIRTIO_BLK_T_DISCARD
#define VIRTIO_BLK_T_DISCARD		11
#endif
#ifndef VIRTIO_BLK_T_WRITE_ZEROES
#define VIRTIO_BLK_T_WRITE_ZEROES	13
#endif
#ifndef VIRTIO_BLK_ID_BYTES
#define VIRTIO_BLK_ID_BYTES		20
#endif
#ifndef VIRTBLK_URING_CMD_F_VEC
#define VIRTBLK_URING_CMD_F_VEC		(1U << 0)
#define VIRTBLK_URING_CMD_F_UNMAP	(1U << 1)
#endif
/* _IOWR('V', 0x80, struct virtblk_uring_cmd): read-write, 32 bytes */
#ifndef VIRTBLK_URING_CMD_IO
#define VIRTBLK_URING_CMD_IO		0xc0205680U
#endif
#ifndef IORING_URING_CMD_FIXED
#define IORING_URING_CMD_FIXED		(1U << 0)
#endif

/* struct virtblk_uring_cmd: the SQE's cmd area, from byte 48 on. */
struct iou_vblk_cmd {
	__u32 type;		/* VIRTIO_BLK_T_* */
	__u32 ioprio;		/* as for ioprio_set() */
	__u64 sector;		/* first 512-byte sector */
	__u64 data;		/* buffer, iovec array (F_VEC) or registered address */
	__u32 data_len;		/* bytes, iovec count (F_VEC) or range bytes */
	__u32 flag;		/* VIRTBLK_URING_CMD_F_* */
};
_Static_assert(sizeof(struct iou_vblk_cmd) == 32, "struct virtblk_uring_cmd is 32 bytes");

#define IOU_VBLK_SQE_SIZE	128

/* Can this ring carry passthrough commands? A load-time constant. */
static __always_inline bool iou_vblk_ring_ok(void)
{
	return iou_geom.sqe_size == IOU_VBLK_SQE_SIZE;
}

/* The command area of an SQE, to set fields the helpers leave 0 (ioprio). */
static __always_inline struct iou_vblk_cmd *iou_vblk_cmd(struct io_uring_sqe *sqe)
{
	return (struct iou_vblk_cmd *)((__u8 *)sqe +
				       __builtin_offsetof(struct io_uring_sqe, cmd));
}

/*
 * Any command: zero the 128-byte SQE and fill it. 0, or -EOPNOTSUPP on a
 * ring without 128-byte SQEs (nothing written).
 */
static __always_inline int iou_vblk_prep_cmd(struct io_uring_sqe *sqe, int fd, __u32 type,
					     __u64 sector, __u64 data, __u32 data_len,
					     __u32 flag, __u64 user_data)
{
	struct iou_vblk_cmd *cmd;

	if (!iou_vblk_ring_ok())
		return -EOPNOTSUPP;
	__builtin_memset(sqe, 0, IOU_VBLK_SQE_SIZE);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = VIRTBLK_URING_CMD_IO;
	sqe->user_data = user_data;
	cmd = iou_vblk_cmd(sqe);
	cmd->type = type;
	cmd->sector = sector;
	cmd->data = data;
	cmd->data_len = data_len;
	cmd->flag = flag;
	return 0;
}

/* len bytes at sector into / from buf (a multiple of the logical block size). */
static __always_inline int iou_vblk_prep_read(struct io_uring_sqe *sqe, int fd, __u64 buf,
					      __u32 len, __u64 sector, __u64 user_data)
{
	return iou_vblk_prep_cmd(sqe, fd, VIRTIO_BLK_T_IN, sector, buf, len, 0, user_data);
}

static __always_inline int iou_vblk_prep_write(struct io_uring_sqe *sqe, int fd, __u64 buf,
					       __u32 len, __u64 sector, __u64 user_data)
{
	return iou_vblk_prep_cmd(sqe, fd, VIRTIO_BLK_T_OUT, sector, buf, len, 0, user_data);
}

/* iov: the address of nr_vecs struct iovec in user memory. */
static __always_inline int iou_vblk_prep_readv(struct io_uring_sqe *sqe, int fd, __u64 iov,
					       __u32 nr_vecs, __u64 sector, __u64 user_data)
{
	return iou_vblk_prep_cmd(sqe, fd, VIRTIO_BLK_T_IN, sector, iov, nr_vecs,
				 VIRTBLK_URING_CMD_F_VEC, user_data);
}

static __always_inline int iou_vblk_prep_writev(struct io_uring_sqe *sqe, int fd, __u64 iov,
						__u32 nr_vecs, __u64 sector, __u64 user_data)
{
	return iou_vblk_prep_cmd(sqe, fd, VIRTIO_BLK_T_OUT, sector, iov, nr_vecs,
				 VIRTBLK_URING_CMD_F_VEC, user_data);
}

/* buf: an address inside registered buffer buf_index (IORING_REGISTER_BUFFERS). */
static __always_inline int iou_vblk_prep_read_fixed(struct io_uring_sqe *sqe, int fd, __u64 buf,
						    __u32 len, __u64 sector, __u16 buf_index,
						    __u64 user_data)
{
	int ret = iou_vblk_prep_cmd(sqe, fd, VIRTIO_BLK_T_IN, sector, buf, len, 0, user_data);

	if (!ret) {
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
		sqe->buf_index = buf_index;
	}
	return ret;
}

static __always_inline int iou_vblk_prep_write_fixed(struct io_uring_sqe *sqe, int fd,
						     __u64 buf, __u32 len, __u64 sector,
						     __u16 buf_index, __u64 user_data)
{
	int ret = iou_vblk_prep_cmd(sqe, fd, VIRTIO_BLK_T_OUT, sector, buf, len, 0, user_data);

	if (!ret) {
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
		sqe->buf_index = buf_index;
	}
	return ret;
}

/* The device's volatile cache to stable storage (needs the fd open for writing). */
static __always_inline int iou_vblk_prep_flush(struct io_uring_sqe *sqe, int fd,
					       __u64 user_data)
{
	return iou_vblk_prep_cmd(sqe, fd, VIRTIO_BLK_T_FLUSH, 0, 0, 0, 0, user_data);
}

/* The device's serial (VIRTIO_BLK_ID_BYTES, not NUL-terminated if that long). */
static __always_inline int iou_vblk_prep_get_id(struct io_uring_sqe *sqe, int fd, __u64 buf,
						__u32 len, __u64 user_data)
{
	return iou_vblk_prep_cmd(sqe, fd, VIRTIO_BLK_T_GET_ID, 0, buf, len, 0, user_data);
}

/* len bytes from sector; -EOPNOTSUPP in the CQE if the device lacks the command. */
static __always_inline int iou_vblk_prep_discard(struct io_uring_sqe *sqe, int fd,
						 __u64 sector, __u32 len, __u64 user_data)
{
	return iou_vblk_prep_cmd(sqe, fd, VIRTIO_BLK_T_DISCARD, sector, 0, len, 0, user_data);
}

static __always_inline int iou_vblk_prep_write_zeroes(struct io_uring_sqe *sqe, int fd,
						      __u64 sector, __u32 len, bool unmap,
						      __u64 user_data)
{
	return iou_vblk_prep_cmd(sqe, fd, VIRTIO_BLK_T_WRITE_ZEROES, sector, 0, len,
				 unmap ? VIRTBLK_URING_CMD_F_UNMAP : 0, user_data);
}

#endif
