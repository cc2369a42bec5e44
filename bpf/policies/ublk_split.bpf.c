// SPDX-License-Identifier: GPL-2.0
/*
 * ublk_split: one ublk block device made of two files, the first file's
 * bytes then the second's; a request that straddles the boundary becomes
 * one transfer into each file, on the same zero-copy buffer. Run by
 * `iouring-bpf ublk add --target split --file A --file B`.
 */
#include <iouring_bpf/ublk.bpf.h>

char LICENSE[] SEC("license") = "GPL";

static int iou_ublk_map(struct iou_ublk_tag *t, __u64 off, __u32 len)
{
	__u64 boundary = iou_ublk.file_sectors[0] << 9;
	__u32 first;
	int ret;

	if (off >= boundary)
		return iou_ublk_add_extent(t, IOU_UBLK_FILE_INDEX(1), off - boundary, 0, len);
	if (off + len <= boundary)
		return iou_ublk_add_extent(t, IOU_UBLK_FILE_INDEX(0), off, 0, len);
	first = boundary - off;
	ret = iou_ublk_add_extent(t, IOU_UBLK_FILE_INDEX(0), off, 0, first);
	if (ret)
		return ret;
	return iou_ublk_add_extent(t, IOU_UBLK_FILE_INDEX(1), 0, first, len - first);
}

IOURING_BPF_STEP(ublk_split)
{
	return iou_ublk_step(ring, lp);
}
IOURING_BPF_OPS(ublk_split_ops, ublk_split);
/* the same map, served in the ublk driver (ublk add --path kernel) */
IOURING_BPF_UBLK_HOOK(ublk_split_hook);
