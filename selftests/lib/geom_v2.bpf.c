// SPDX-License-Identifier: GPL-2.0
/*
 * A policy as built against headers with geometry layout 2 (56 bytes: size
 * and version, no sqe_size): its SQEs are 64 bytes, so it must not get a
 * ring with 128-byte SQEs. For lib/abi and lib/sqe-size (set_ring refuses
 * it before load; never loaded).
 */
#include <iouring_bpf/common.bpf.h>

char LICENSE[] SEC("license") = "GPL";

struct iouring_bpf_geometry_v2 {
	__u32 sq_entries, cq_entries, cq_head, cq_tail, cq_cqes, cq_overflow;
	__u64 cq_region_size, sq_region_size, mem_region_size;
	__u32 size, version;
};
const volatile struct iouring_bpf_geometry_v2 iou_geom;

IOURING_BPF_STEP(v2_step)
{
	return iou_geom.sq_entries ? IOU_LOOP_STOP : IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(v2_ops, v2_step);
