// SPDX-License-Identifier: GPL-2.0
/*
 * ublk_loop: a ublk block device backed by one file, served inside the
 * kernel with zero copy: device byte N is byte N of the file. Run by
 * `iouring-bpf ublk add --target loop --file IMG`; the engine and the
 * set-up contract are in iouring_bpf/ublk.bpf.h.
 */
#include <iouring_bpf/ublk.bpf.h>

char LICENSE[] SEC("license") = "GPL";

static int iou_ublk_map(struct iou_ublk_tag *t, __u64 off, __u32 len)
{
	return iou_ublk_add_extent(t, IOU_UBLK_FILE_INDEX(0), off, 0, len);
}

IOURING_BPF_STEP(ublk_loop)
{
	return iou_ublk_step(ring, lp);
}
IOURING_BPF_OPS(ublk_loop_ops, ublk_loop);
/* the same map, served in the ublk driver (ublk add --path kernel) */
IOURING_BPF_UBLK_HOOK(ublk_loop_hook);
