// SPDX-License-Identifier: GPL-2.0
/*
 * A policy built against a newer liburing-bpf whose geometry grew past
 * this one's: iou_geom has a field this library cannot fill. For lib/abi
 * (BTF only; never loaded).
 */
#include <iouring_bpf/common.bpf.h>
#include <iouring_bpf/geometry.h>

char LICENSE[] SEC("license") = "GPL";

struct iouring_bpf_geometry_future {
	struct iouring_bpf_geometry now;
	__u64 something_new;
};
const volatile struct iouring_bpf_geometry_future iou_geom;

IOURING_BPF_STEP(future_step)
{
	return iou_geom.something_new ? IOU_LOOP_STOP : IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(future_ops, future_step);
