// SPDX-License-Identifier: GPL-2.0
/*
 * Part of vblk/uapi-fallback: prints struct virtblk_uring_cmd's layout and
 * the passthrough constants as liburing-bpf.h sees them, and whether the
 * UAPI header or liburing-bpf.h's fallback defined them.
 */
#include <linux/virtio_blk.h>
#ifdef VIRTBLK_URING_CMD_IO
#define FROM "uapi"
#else
#define FROM "fallback"
#endif
#include <stddef.h>
#include <stdio.h>
#include <liburing-bpf.h>

#define F(m) offsetof(struct virtblk_uring_cmd, m), sizeof(((struct virtblk_uring_cmd *)0)->m)

int main(void)
{
	printf("from %s\n", FROM);
	printf("size %zu align %zu\n", sizeof(struct virtblk_uring_cmd),
	       _Alignof(struct virtblk_uring_cmd));
	printf("type %zu+%zu ioprio %zu+%zu sector %zu+%zu data %zu+%zu data_len %zu+%zu "
	       "flag %zu+%zu\n", F(type), F(ioprio), F(sector), F(data), F(data_len), F(flag));
	printf("VIRTBLK_URING_CMD_IO %#lx F_VEC %#x F_UNMAP %#x IORING_URING_CMD_FIXED %#x\n",
	       (unsigned long)VIRTBLK_URING_CMD_IO, VIRTBLK_URING_CMD_F_VEC,
	       VIRTBLK_URING_CMD_F_UNMAP, IORING_URING_CMD_FIXED);
	printf("T_IN %d T_OUT %d T_FLUSH %d T_GET_ID %d T_DISCARD %d T_WRITE_ZEROES %d "
	       "ID_BYTES %d\n", VIRTIO_BLK_T_IN, VIRTIO_BLK_T_OUT, VIRTIO_BLK_T_FLUSH,
	       VIRTIO_BLK_T_GET_ID, VIRTIO_BLK_T_DISCARD, VIRTIO_BLK_T_WRITE_ZEROES,
	       VIRTIO_BLK_ID_BYTES);
	return 0;
}
