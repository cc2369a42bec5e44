// SPDX-License-Identifier: GPL-2.0
/* A policy the verifier must refuse (loader/errors): it reads past the end
 * of struct iou_loop_params. */
#include <iouring_bpf/ring.bpf.h>

char LICENSE[] SEC("license") = "GPL";

IOURING_BPF_STEP(bad_step)
{
	return *(int *)((char *)lp + 4096) ? IOU_LOOP_STOP : IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(bad_ops, bad_step);
