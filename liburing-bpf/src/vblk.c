// SPDX-License-Identifier: (LGPL-2.1 OR MIT)
/*
 * virtio-blk io_uring passthrough (kernel patches 23-25): SQEs for
 * VIRTBLK_URING_CMD_IO on a disk's character device /dev/vdXc0, and the way
 * from a disk's block device to that character device.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "liburing-bpf.h"

/* The class directory the driver registers its character devices under. */
#define VBLK_CLASS_DIR	"/sys/class/virtblk-generic"

int iouring_bpf_vblk_char_path(const char *blockdev, char *buf, size_t len)
{
	char sys[64], link[4096], path[4352];
	const char *name;
	struct stat st;
	ssize_t n;
	int ret;

	if (!blockdev || !buf)
		return -EINVAL;
	if (stat(blockdev, &st))
		return -errno;
	if (!S_ISBLK(st.st_mode))
		return -ENODEV;
	/* the kernel's name of the device: the last part of its sysfs path */
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(st.st_rdev), minor(st.st_rdev));
	n = readlink(sys, link, sizeof(link) - 1);
	if (n < 0)
		return errno == ENOENT ? -ENODEV : -errno;
	link[n] = '\0';
	name = strrchr(link, '/');
	name = name ? name + 1 : link;
	if (!*name)
		return -ENODEV;
	/* a whole virtio-blk disk has a passthrough device named after it
	 * (a partition has none, nor has any other kind of disk) */
	ret = snprintf(path, sizeof(path), VBLK_CLASS_DIR "/%sc0", name);
	if (ret < 0 || (size_t)ret >= sizeof(path))
		return -ENODEV;
	if (access(path, F_OK))
		return -ENODEV;
	ret = snprintf(buf, len, "/dev/%sc0", name);
	if (ret < 0)
		return -EINVAL;
	if ((size_t)ret >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* One command in a zeroed 128-byte SQE. */
static int prep(struct io_uring_sqe *sqe, int fd, __u32 type, __u64 sector, __u64 data,
		__u32 data_len, __u32 flag)
{
	struct virtblk_uring_cmd *cmd;

	if (!sqe)
		return -EINVAL;
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = VIRTBLK_URING_CMD_IO;
	cmd = iouring_bpf_vblk_cmd(sqe);
	cmd->type = type;
	cmd->sector = sector;
	cmd->data = data;
	cmd->data_len = data_len;
	cmd->flag = flag;
	return 0;
}

static int prep_fixed(struct io_uring_sqe *sqe, int fd, __u32 type, const void *buf, __u32 len,
		      __u64 sector, int buf_index)
{
	int ret;

	if (buf_index < 0 || buf_index > UINT16_MAX)
		return -EINVAL;
	ret = prep(sqe, fd, type, sector, (__u64)(uintptr_t)buf, len, 0);
	if (ret)
		return ret;
	sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
	sqe->buf_index = buf_index;
	return 0;
}

int iouring_bpf_vblk_prep_read(struct io_uring_sqe *sqe, int fd, void *buf, __u32 len,
			       __u64 sector)
{
	return prep(sqe, fd, VIRTIO_BLK_T_IN, sector, (__u64)(uintptr_t)buf, len, 0);
}

int iouring_bpf_vblk_prep_write(struct io_uring_sqe *sqe, int fd, const void *buf, __u32 len,
				__u64 sector)
{
	return prep(sqe, fd, VIRTIO_BLK_T_OUT, sector, (__u64)(uintptr_t)buf, len, 0);
}

int iouring_bpf_vblk_prep_readv(struct io_uring_sqe *sqe, int fd, const struct iovec *iov,
				unsigned int nr_vecs, __u64 sector)
{
	return prep(sqe, fd, VIRTIO_BLK_T_IN, sector, (__u64)(uintptr_t)iov, nr_vecs,
		    VIRTBLK_URING_CMD_F_VEC);
}

int iouring_bpf_vblk_prep_writev(struct io_uring_sqe *sqe, int fd, const struct iovec *iov,
				 unsigned int nr_vecs, __u64 sector)
{
	return prep(sqe, fd, VIRTIO_BLK_T_OUT, sector, (__u64)(uintptr_t)iov, nr_vecs,
		    VIRTBLK_URING_CMD_F_VEC);
}

int iouring_bpf_vblk_prep_read_fixed(struct io_uring_sqe *sqe, int fd, void *buf, __u32 len,
				     __u64 sector, int buf_index)
{
	return prep_fixed(sqe, fd, VIRTIO_BLK_T_IN, buf, len, sector, buf_index);
}

int iouring_bpf_vblk_prep_write_fixed(struct io_uring_sqe *sqe, int fd, const void *buf,
				      __u32 len, __u64 sector, int buf_index)
{
	return prep_fixed(sqe, fd, VIRTIO_BLK_T_OUT, buf, len, sector, buf_index);
}

int iouring_bpf_vblk_prep_flush(struct io_uring_sqe *sqe, int fd)
{
	return prep(sqe, fd, VIRTIO_BLK_T_FLUSH, 0, 0, 0, 0);
}

int iouring_bpf_vblk_prep_get_id(struct io_uring_sqe *sqe, int fd, void *buf, __u32 len)
{
	return prep(sqe, fd, VIRTIO_BLK_T_GET_ID, 0, (__u64)(uintptr_t)buf, len, 0);
}

int iouring_bpf_vblk_prep_discard(struct io_uring_sqe *sqe, int fd, __u64 sector, __u32 len)
{
	return prep(sqe, fd, VIRTIO_BLK_T_DISCARD, sector, 0, len, 0);
}

int iouring_bpf_vblk_prep_write_zeroes(struct io_uring_sqe *sqe, int fd, __u64 sector,
				       __u32 len, bool unmap)
{
	return prep(sqe, fd, VIRTIO_BLK_T_WRITE_ZEROES, sector, 0, len,
		    unmap ? VIRTBLK_URING_CMD_F_UNMAP : 0);
}
