// SPDX-License-Identifier: GPL-2.0
/*
 * ublk_null: the smallest ublk policy. Writes are accepted and dropped
 * (written to /dev/zero), reads return zeros (a zero-copy read from
 * /dev/zero into the request), no backing file at all. Run it with
 *
 *	iouring-bpf ublk add --target bpf --policy ublk_null.bpf.o --size 1G
 */
#include <iouring_bpf/ublk.bpf.h>

char LICENSE[] SEC("license") = "GPL";

static int iou_ublk_map(struct iou_ublk_tag *t, __u64 off, __u32 len)
{
	/* the whole request: an extent must cover every byte of it */
	return iou_ublk_add_extent(t, IOU_UBLK_ZERO_INDEX, 0, 0, len);
}

IOURING_BPF_STEP(ublk_null)
{
	return iou_ublk_step(ring, lp);
}
IOURING_BPF_OPS(ublk_null_ops, ublk_null);
/* the same map, served in the ublk driver (ublk add --path kernel) */
IOURING_BPF_UBLK_HOOK(ublk_null_hook);
