// SPDX-License-Identifier: GPL-2.0
/*
 * A policy as built against liburing-bpf 0.1's headers: iou_geom has layout
 * 1 (48 bytes, no size/version). For lib/abi (BTF only; never loaded).
 */
#include <iouring_bpf/common.bpf.h>

char LICENSE[] SEC("license") = "GPL";

struct iouring_bpf_geometry_v1 {
	__u32 sq_entries, cq_entries, cq_head, cq_tail, cq_cqes, cq_overflow;
	__u64 cq_region_size, sq_region_size, mem_region_size;
};
const volatile struct iouring_bpf_geometry_v1 iou_geom;

IOURING_BPF_STEP(v1_step)
{
	return iou_geom.sq_entries ? IOU_LOOP_STOP : IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(v1_ops, v1_step);
