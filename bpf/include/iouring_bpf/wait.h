/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Multi-step min-wait state, shared by wait.bpf.h and user space. */
#ifndef IOURING_BPF_WAIT_H
#define IOURING_BPF_WAIT_H

#ifndef __BPF__
#include <linux/types.h>
#endif

struct iou_minwait {
	/* configuration */
	__u32 batch;		/* CQEs worth waking up for */
	__u32 backoff;		/* non-zero: double min_wait on expiry */
	__u64 min_wait_ns;	/* first phase's time limit */
	__u64 max_wait_ns;	/* second phase's limit and back-off cap; 0: none */
	/* state */
	__u32 phase;		/* 0: waiting for a batch, 1: for any */
	__u32 __pad;
	__u64 cur_wait_ns;
	__u64 deadline_ns;	/* of the current phase (CLOCK_MONOTONIC), 0: none */
	/* statistics */
	__u64 batches, expiries;
};

#endif
