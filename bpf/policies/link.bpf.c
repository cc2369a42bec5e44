// SPDX-License-Identifier: GPL-2.0
/*
 * link: run a table of requests with IOSQE_IO_LINK / HARDLINK / DRAIN /
 * CQE_SKIP_SUCCESS semantics and result passing, inside one
 * io_uring_enter(). See iouring_bpf/link.h for the table and the log.
 */
#include <iouring_bpf/link.bpf.h>

char LICENSE[] SEC("license") = "GPL";

IOURING_BPF_STEP(link_step)
{
	return iou_link_step(ring, lp);
}
IOURING_BPF_OPS(link_ops, link_step);
