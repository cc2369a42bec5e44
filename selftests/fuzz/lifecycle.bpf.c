// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz/lifecycle: the policy whose attachment is raced. It sleeps, spins,
 * times out, keeps NOPs or a never-ending pipe read in flight, as user
 * space switches it (life_mode, in .bss, read at every step), and stops
 * when told to (life_stop).
 */
#include <iouring_bpf/ring.bpf.h>

char LICENSE[] SEC("license") = "GPL";

enum { LIFE_SLEEP, LIFE_TIMEOUT, LIFE_SPIN, LIFE_NOPS, LIFE_PIPE, LIFE_NR_MODES };

const volatile __s32 life_pipe_fd = -1;	/* read end of a pipe nobody writes */
const volatile __u64 life_buf;			/* where its data would go */

volatile __u32 life_mode, life_stop;
__u64 life_steps, life_cqes;
__s32 life_submit_err;
__u32 life_pipe_armed;

IOURING_BPF_STEP(life_step)
{
	struct iou_ring r;
	__u32 ready, i;
	int ret;

	life_steps++;
	if (life_stop || !iou_ring_open(&r, ring))
		return IOU_LOOP_STOP;
	ready = iou_cq_ready(&r);
	life_cqes += ready;
	iou_cq_advance(&r, ready);

	/* the last wait's IOU_LOOP_WAIT_TIMED_OUT stays in flags: an input
	 * the loop refuses with -EINVAL unless cleared */
	lp->flags = 0;
	lp->timeout_ns = 0;
	switch (life_mode) {
	case LIFE_SLEEP:	/* until detached, signalled or freed */
		iou_wait_cqes(&r, lp, 1);
		break;
	case LIFE_TIMEOUT:
		iou_wait_cqes(&r, lp, 1);
		lp->flags = IOU_LOOP_TIMEOUT;
		lp->timeout_ns = 1000000 + (bpf_ktime_get_ns() & 0x3fffff);
		break;
	case LIFE_SPIN:		/* never waits */
		lp->cq_wait_idx = iou_cq_tail(&r);
		break;
	case LIFE_NOPS:
		bpf_for(i, 0, 4)
			iou_prep_nop(iou_sqe_at(&r, i), i);
		ret = bpf_io_uring_submit_sqes(ring, 4);
		if (ret < 0)
			life_submit_err = ret;
		iou_wait_cqes(&r, lp, 4);
		lp->flags = IOU_LOOP_TIMEOUT;
		lp->timeout_ns = 2000000;
		break;
	default:		/* a read that never completes, then sleep */
		if (!life_pipe_armed) {
			iou_prep_read(iou_sqe_at(&r, 0), life_pipe_fd, life_buf, 8, 0, 99);
			ret = bpf_io_uring_submit_sqes(ring, 1);
			if (ret < 0)
				life_submit_err = ret;
			life_pipe_armed = 1;
		}
		iou_wait_cqes(&r, lp, 1);
		break;
	}
	return IOU_LOOP_CONTINUE;
}

SEC(".struct_ops.link")
struct io_uring_bpf_ops life_ops = {
	.loop_step = (void *)life_step,
};
