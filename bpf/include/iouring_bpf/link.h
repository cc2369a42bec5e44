/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Link emulation, shared by the BPF engine (link.bpf.h) and user space:
 * a table of requests, each optionally linked to the next like
 * IOSQE_IO_LINK / IOSQE_IO_HARDLINK, with the kernel's failure rules, run
 * by a BPF policy inside one io_uring_enter(); the completions it would
 * post are written to a log user space reads afterwards.
 */
#ifndef IOURING_BPF_LINK_H
#define IOURING_BPF_LINK_H

#ifndef __BPF__
#include <linux/types.h>
#endif

#define IOU_LINK_MAX_REQS 64

enum iou_link_flags {
	IOU_LINK_SOFT		= 1 << 0, /* next runs if this succeeds (IOSQE_IO_LINK) */
	IOU_LINK_HARD		= 1 << 1, /* next runs anyway (IOSQE_IO_HARDLINK) */
	IOU_LINK_DRAIN		= 1 << 2, /* starts after all earlier ones (IOSQE_IO_DRAIN) */
	IOU_LINK_SKIP_SUCCESS	= 1 << 3, /* no log entry on success (IOSQE_CQE_SKIP_SUCCESS) */
	IOU_LINK_LEN_FROM_PREV	= 1 << 4, /* len = previous request's result (ours) */
};

/* One request: the SQE fields a chain needs. */
struct iou_link_req {
	__u8 opcode;
	__u8 flags;		/* enum iou_link_flags */
	__u16 __pad;
	__s32 fd;
	__u64 addr;
	__u32 len;
	__u32 op_flags;		/* rw_flags, timeout_flags, nop_flags, ... */
	__u64 off;
	__u64 user_data;	/* reported in the log (the SQE carries IOU_LINK_UD()) */
};

/* One completion the kernel's own links would have posted. */
struct iou_link_cqe {
	__u64 user_data;
	__s32 res;
	__u32 __pad;
};

/* IORING_TIMEOUT_ETIME_SUCCESS (UAPI macros do not reach vmlinux.h) */
#define IOU_TIMEOUT_ETIME_SUCCESS (1U << 5)

/*
 * An SQE's user_data: the run (iou_link_generation) and the request's
 * index; the log carries the request's own user_data. INTERNAL marks the
 * engine's own requests (cancels of an earlier run's leftovers).
 */
#define IOU_LINK_UD(gen, idx)	(((__u64)(__u32)(gen) << 32) | (__u32)(idx))
#define IOU_LINK_UD_IDX_MASK	0xffffULL
#define IOU_LINK_UD_INTERNAL	(1ULL << 16)

/* iou_link_status values besides -errno */
#define IOU_LINK_RUNNING 1

#endif
