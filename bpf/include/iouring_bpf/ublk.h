/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The contract between a ublk BPF policy and the daemon that runs it
 * (iouring-bpf ublk add, or any program using liburing-bpf). One policy
 * instance serves one ublk queue from that queue's io_uring ring.
 *
 * The daemon, per device: if the policy declares a chunk
 * (IOU_UBLK_CHUNK_BYTES(), below), sets the basic parameter chunk_sectors
 * to it and caps max_discard_sectors at one chunk (the block layer cuts
 * reads, writes and write-zeroes at chunk boundaries, discards not).
 *
 * The daemon, per queue, before loading the policy:
 *  - sets up the ring with iouring_bpf_ring_init() (DEFER_TASKRUN, SQ_REWIND)
 *    with at least IOU_UBLK_SQES_PER_TAG * depth SQ entries;
 *  - registers fixed files: index IOU_UBLK_CHAR_INDEX is /dev/ublkcN,
 *    IOU_UBLK_ZERO_INDEX is /dev/zero (to zero-fill short reads), backing
 *    files from IOU_UBLK_FILE_INDEX(0) on;
 *  - registers a sparse fixed-buffer table of `depth` entries: the request
 *    with tag T is registered at buffer index T (UBLK_U_IO_REGISTER_IO_BUF);
 *  - fills the policy's read-only global `iou_ublk` (below) and iou_geom.
 * The policy submits the FETCH commands itself, serves requests and stops
 * (iou_exit_status 0) once every tag's command came back aborted, which
 * happens when the device is stopped or deleted.
 */
#ifndef IOURING_BPF_UBLK_H
#define IOURING_BPF_UBLK_H

#ifndef __BPF__
#include <linux/types.h>
#endif

#define IOU_UBLK_MAX_FILES	4
#define IOU_UBLK_MAX_DEPTH	128
#define IOU_UBLK_SQES_PER_TAG	8

/*
 * A policy whose map changes file or file offset only at multiples of N
 * bytes of the device says so with IOU_UBLK_CHUNK_BYTES(N) (ublk.bpf.h),
 * which defines this global (const volatile __u32, .rodata). The daemon
 * reads it from the object before creating the device
 * (iouring_bpf_ublk_policy_chunk()) and sets chunk_sectors = N >> 9. N is
 * a multiple of IOU_UBLK_CHUNK_ALIGN and at most the largest request.
 */
#define IOU_UBLK_CHUNK_GLOBAL	"iou_ublk_chunk_bytes"
#define IOU_UBLK_CHUNK_ALIGN	4096

#define IOU_UBLK_CHAR_INDEX	0
#define IOU_UBLK_ZERO_INDEX	1
#define IOU_UBLK_FILE_INDEX(i)	(2 + (i))

struct iouring_bpf_ublk_geometry {
	__u32 dev_id;
	__u32 q_id;
	__u32 depth;		/* tags 0..depth-1, <= IOU_UBLK_MAX_DEPTH */
	__u32 nr_files;		/* backing files, <= IOU_UBLK_MAX_FILES */
	__u32 max_io_bytes;	/* ublksrv_ctrl_dev_info.max_io_buf_bytes */
	__u32 pad;
	__u64 dev_sectors;	/* device size in 512-byte sectors */
	/* backing file i: size in 512-byte sectors (rounded down) */
	__u64 file_sectors[IOU_UBLK_MAX_FILES];
};

#endif
