/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Ring geometry, shared by BPF policies and user space. User space fills it
 * from io_uring_setup()'s results (liburing-bpf does this) into the
 * policy's read-only global `iou_geom` before load; the verifier then
 * knows every offset and size as a constant, and policies never type one.
 *
 * The layout only ever grows at the end: a policy built against an older
 * header has a smaller iou_geom, and liburing-bpf fills the part it has
 * (any size from IOURING_BPF_GEOMETRY_SIZE_V1 up to the library's own).
 * `size` and `version` (from layout 2 on) say what user space filled.
 */
#ifndef IOURING_BPF_GEOMETRY_H
#define IOURING_BPF_GEOMETRY_H

#ifndef __BPF__
#include <linux/types.h>
#endif

struct iouring_bpf_geometry {
	__u32 sq_entries;	/* SQEs in IOU_REGION_SQ (power of two) */
	__u32 cq_entries;	/* CQEs in the CQ ring (power of two) */
	__u32 cq_head;		/* io_uring_params.cq_off.head */
	__u32 cq_tail;		/* io_uring_params.cq_off.tail */
	__u32 cq_cqes;		/* io_uring_params.cq_off.cqes */
	__u32 cq_overflow;	/* io_uring_params.cq_off.overflow */
	__u64 cq_region_size;	/* bytes of IOU_REGION_CQ a policy may touch */
	__u64 sq_region_size;	/* bytes of IOU_REGION_SQ a policy may touch */
	__u64 mem_region_size;	/* bytes of IOU_REGION_MEM, 0 if none */
	/* layout 2 */
	__u32 size;		/* bytes filled: sizeof(struct iouring_bpf_geometry) */
	__u32 version;		/* IOURING_BPF_GEOMETRY_VERSION */
	/* layout 3 */
	__u32 sqe_size;		/* bytes per SQE: 64, or 128 (IORING_SETUP_SQE128) */
	__u32 __pad3;		/* 0; keeps the size a multiple of 8 */
};

#define IOURING_BPF_GEOMETRY_VERSION	3
/* layout 1 (liburing-bpf 0.1, 0.2): up to mem_region_size, no size/version */
#define IOURING_BPF_GEOMETRY_SIZE_V1	48
/* layout 2: up to version; no sqe_size, so 64-byte SQEs only */
#define IOURING_BPF_GEOMETRY_SIZE_V2	56
/* layout 3: up to sqe_size (and its padding) */
#define IOURING_BPF_GEOMETRY_SIZE_V3	64

#endif
