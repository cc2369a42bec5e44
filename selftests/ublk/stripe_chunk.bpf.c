// SPDX-License-Identifier: GPL-2.0
/*
 * Test policy for ublk/stripe-chunk: the device is STRIPE_CHUNK-byte chunks
 * taken in turn from two files: chunk k is bytes [(k / 2) * chunk, +chunk)
 * of file k % 2. The map cuts a request at every chunk boundary, so a 512
 * KiB request over 64 KiB chunks would need up to 9 extents: it works only
 * because the policy declares its chunk and the block layer then never
 * sends a request across a boundary.
 *
 * Built several ways (selftests/CMakeLists.txt): STRIPE_CHUNK sets the
 * chunk, STRIPE_UNDECLARED leaves the declaration out (the same map, which
 * then fails large requests at run time with -E2BIG).
 */
#include <iouring_bpf/ublk.bpf.h>

char LICENSE[] SEC("license") = "GPL";

#ifndef STRIPE_CHUNK
#define STRIPE_CHUNK (64 << 10)
#endif

#ifdef STRIPE_UNDECLARED
static const __u64 stripe_chunk = STRIPE_CHUNK;
#else
IOU_UBLK_CHUNK_BYTES(STRIPE_CHUNK);
/* the declared value, as loaded: one number for the map and the device */
#define stripe_chunk ((__u64)iou_ublk_chunk_bytes)
#endif

static int iou_ublk_map(struct iou_ublk_tag *t, __u64 off, __u32 len)
{
	__u64 chunk = stripe_chunk, pos, k, in;
	__u32 done = 0, n, i;
	int ret;

	if (!chunk)
		return -EINVAL;
	/* one more round than extents fit: a fifth piece gets -E2BIG */
	bpf_for(i, 0, IOU_UBLK_MAX_EXTENTS + 1) {
		if (done >= len)
			break;
		pos = off + done;
		k = pos / chunk;
		in = pos - k * chunk;
		n = chunk - in < len - done ? chunk - in : len - done;
		ret = iou_ublk_add_extent(t, IOU_UBLK_FILE_INDEX(k & 1), (k >> 1) * chunk + in,
					  done, n);
		if (ret)
			return ret;
		done += n;
	}
	return 0;
}

IOURING_BPF_STEP(stripe_chunk_step)
{
	return iou_ublk_step(ring, lp);
}
IOURING_BPF_OPS(stripe_chunk_ops, stripe_chunk_step);
/* the same map, served in the ublk driver (ublk add --path kernel) */
IOURING_BPF_UBLK_HOOK(stripe_chunk_hook);
