// SPDX-License-Identifier: GPL-2.0
/*
 * Test policies for ublk/hook-*: each is a whole ublk policy (the ublk_loop
 * map: device byte N is byte N of file 0, served from the daemon's ring by
 * IOURING_BPF_OPS) plus, except for HOOK_KFUNC_IN_LOOP, a ublk_bpf_ops hook
 * whose queue_rq is not just IOURING_BPF_UBLK_HOOK()'s:
 *
 *   HOOK_WRITE_ERRNO=E  writes return E (a negative errno: the request fails
 *                       with that status), everything else is iou_ublk_hook()
 *   HOOK_BAD_RETURN=R   reads return R (neither SERVE_DAEMON, SERVE_KERNEL
 *                       nor an errno: the driver fails them with EIO)
 *   HOOK_UNCOVERED      reads of more than 4 KiB get an extent for their
 *                       first half only, smaller reads and write-zeroes
 *                       none: the driver must fail them with EIO
 *   HOOK_SLEEPABLE      the hook's queue_rq is sleepable (struct_ops.s):
 *                       attaching must be refused
 *   HOOK_KFUNC_IN_LOOP  no hook; the io_uring loop program calls
 *                       bpf_ublk_io_add_extent() behind a branch on a
 *                       global the verifier cannot know, so the call is
 *                       verified: the kfunc filter must refuse the load.
 *
 * Built several ways by selftests/CMakeLists.txt (DEFINES).
 */
#include <iouring_bpf/ublk.bpf.h>

char LICENSE[] SEC("license") = "GPL";

static int iou_ublk_map(struct iou_ublk_tag *t, __u64 off, __u32 len)
{
	return iou_ublk_add_extent(t, IOU_UBLK_FILE_INDEX(0), off, 0, len);
}

#ifdef HOOK_KFUNC_IN_LOOP
/* never set: the verifier sees an unknown value, both branches are live */
__u64 hook_test_trigger;

IOURING_BPF_STEP(hook_test_step)
{
	if (hook_test_trigger == 0x5eed)
		return bpf_ublk_io_add_extent((struct ublk_bpf_io *)(long)hook_test_trigger, 0,
					      0, 0, 512);
	return iou_ublk_step(ring, lp);
}
IOURING_BPF_OPS(hook_test_ops, hook_test_step);
#else
IOURING_BPF_STEP(hook_test_step)
{
	return iou_ublk_step(ring, lp);
}
IOURING_BPF_OPS(hook_test_ops, hook_test_step);

#ifdef HOOK_SLEEPABLE
SEC("struct_ops.s/queue_rq")
#else
SEC("struct_ops/queue_rq")
#endif
int BPF_PROG(hook_test_queue_rq, struct ublk_bpf_io *io)
{
#ifdef HOOK_WRITE_ERRNO
	if (io->op == UBLK_IO_OP_WRITE) {
		__sync_fetch_and_add(&ublk_hook_requests, 1);
		__sync_fetch_and_add(&ublk_hook_errors, 1);
		return HOOK_WRITE_ERRNO;
	}
#endif
#ifdef HOOK_UNCOVERED
	if (io->op == UBLK_IO_OP_READ || io->op == UBLK_IO_OP_WRITE_ZEROES) {
		__sync_fetch_and_add(&ublk_hook_requests, 1);
		if (io->op == UBLK_IO_OP_READ && io->nr_sectors > 8)
			bpf_ublk_io_add_extent(io, 0, io->start_sector << 9, 0,
					       (io->nr_sectors / 2) << 9);
		return UBLK_BPF_SERVE_KERNEL;
	}
#endif
#ifdef HOOK_BAD_RETURN
	if (io->op == UBLK_IO_OP_READ) {
		__sync_fetch_and_add(&ublk_hook_requests, 1);
		__sync_fetch_and_add(&ublk_hook_errors, 1);
		return HOOK_BAD_RETURN;
	}
#endif
	return iou_ublk_hook(io);
}

SEC(".struct_ops.link")
struct ublk_bpf_ops hook_test_hook = {
	.queue_rq = (void *)hook_test_queue_rq,
};
#endif
