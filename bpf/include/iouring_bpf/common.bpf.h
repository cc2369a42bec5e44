/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What every io_uring BPF policy includes: kfunc declarations and the
 * struct_ops macros. Mainline kfuncs are strong (__ksym); extension kfuncs
 * of this project are __ksym __weak, to be checked with bpf_ksym_exists().
 */
#ifndef IOURING_BPF_COMMON_BPF_H
#define IOURING_BPF_COMMON_BPF_H

#ifndef __BPF__
#error "iouring_bpf/*.bpf.h are for BPF programs; user space uses liburing-bpf.h"
#endif

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <asm-generic/errno.h>

/*
 * Mainline (Linux 7.1, with 7.2's opaque struct iou_ctx for the ring: a
 * program can only pass it on). Declared as mainline declares them, so a
 * policy that declares them itself, or a vmlinux.h that carries kfunc
 * prototypes, agrees with these. Programs written for 7.1 name the ring
 * struct io_ring_ctx; they load too (the kernel types the argument).
 */
extern int bpf_io_uring_submit_sqes(struct iou_ctx *loop_ctx, __u32 nr) __ksym;
extern __u8 *bpf_io_uring_get_region(struct iou_ctx *loop_ctx, __u32 region_id,
				     const size_t rdwr_buf_size) __ksym;

/*
 * IOURING_BPF_STEP(name) { ... }: a sleepable loop_step program with
 * arguments (struct iou_ctx *ring, struct iou_loop_params *lp).
 * (BPF_PROG keeps the name `ctx` for the raw argument array.)
 */
#define IOURING_BPF_STEP(name)						\
	SEC("struct_ops.s/loop_step")					\
	int BPF_PROG(name, struct iou_ctx *ring, struct iou_loop_params *lp)

/* IOURING_BPF_OPS(ops_name, step_prog): the struct_ops map, link-attached. */
#define IOURING_BPF_OPS(ops_name, step_prog)				\
	SEC(".struct_ops.link")						\
	struct io_uring_bpf_ops ops_name = {				\
		.loop_step = (void *)step_prog,				\
	}

/*
 * The policy's exit status: 0, or -errno saying why it stopped. User space
 * reads it after the loop stops (iouring_bpf_policy_run(), the loader's
 * self-hosted run). Other scalar globals in .data/.bss are its counters.
 */
int iou_exit_status;

/* Stop the loop with a status. */
#define iou_stop(status) ({ iou_exit_status = (status); IOU_LOOP_STOP; })

/*
 * IOURING_BPF_GLOBAL_RANGE(var, min, max): the integer global var takes
 * values in [min, max] only. liburing-bpf (iouring_bpf_policy_set_global*(),
 * and iouring_bpf_policy_load() for the value it would load) refuses others
 * with -EINVAL and a message, so does the loader's --set; the record is a
 * const global __iou_range__<var> that policy listings leave out.
 * Skeleton users bypass it: check the value in the program too.
 */
#define IOURING_BPF_GLOBAL_RANGE(var, min, max)				\
	const __s64 __iou_range__##var[2] __attribute__((used)) = { (min), (max) }

/* Timeout extension (not in mainline): does this kernel have it? */
#define iou_loop_has_timeouts(lp) bpf_core_field_exists((lp)->timeout_ns)

#endif
