// SPDX-License-Identifier: GPL-2.0
/*
 * vblk_chain: follow a linked list of blocks on a virtio-blk disk through
 * its passthrough device /dev/vdXc0, in one io_uring_enter(). A block's
 * first 8 bytes are the sector of the next one (CHAIN_END: the last).
 * Block i is read into slot i of the ring's parameter region, where the
 * policy finds the next sector when the read completes. The ring needs
 * IORING_SETUP_SQE128. To walk again, zero chain_nr.
 */
#include <iouring_bpf/vblk.bpf.h>

char LICENSE[] SEC("license") = "GPL";

#define CHAIN_END	(~0ULL)

const volatile int chain_fd = -1;	/* /dev/vdXc0, open for reading */
const volatile __u64 chain_buf;		/* the region's address in user space */
const volatile __u32 chain_block = 4096;	/* bytes per block and slot */
const volatile __u64 chain_head;	/* sector of the first block */
__u64 chain_sector;			/* the block in flight, or the next */
__u32 chain_nr, chain_enters;		/* blocks read; io_uring_enter() calls */
bool chain_inflight;

IOURING_BPF_STEP(vblk_chain)
{
	__u64 off = (__u64)chain_nr * chain_block;	/* slot of block chain_nr */
	struct iou_ring r;
	__u8 *mem;
	int ret;

	if (lp->step == 0)		/* the first step of an io_uring_enter() */
		chain_enters++;
	if (iou_geom.mem_region_size < chain_block)
		return iou_stop(-EINVAL);	/* no region registered */
	mem = bpf_io_uring_get_region(ring, IOU_REGION_MEM, iou_geom.mem_region_size);
	if (!mem || !iou_ring_open(&r, ring))
		return iou_stop(-EFAULT);

	if (!chain_inflight) {		/* the first step of a walk */
		chain_sector = chain_head;
	} else {
		if (!iou_cq_ready(&r)) {	/* woken early: sleep on */
			iou_wait_cqes(&r, lp, 1);
			return IOU_LOOP_CONTINUE;
		}
		ret = iou_cqe_at(&r, iou_cq_head(&r))->res;
		iou_cq_advance(&r, 1);
		chain_inflight = false;
		if (ret < 0)
			return iou_stop(ret);
		if (off > iou_geom.mem_region_size - 8)
			return iou_stop(-EFAULT);
		chain_sector = *(__u64 *)(mem + off);	/* the block just read links on */
		chain_nr++;
		off += chain_block;
		if (chain_sector == CHAIN_END)
			return iou_stop(0);
	}
	if (off + chain_block > iou_geom.mem_region_size)
		return iou_stop(-ELOOP);	/* no slot left: a longer list, or a cycle */

	ret = iou_vblk_prep_read(iou_sqe_at(&r, 0), chain_fd, chain_buf + off, chain_block,
				 chain_sector, chain_nr);
	if (ret)
		return iou_stop(ret);	/* -EOPNOTSUPP: not an SQE128 ring */
	if (bpf_io_uring_submit_sqes(ring, 1) != 1)
		return iou_stop(-EIO);
	chain_inflight = true;
	iou_wait_cqes(&r, lp, 1);
	return IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(vblk_chain_ops, vblk_chain);
