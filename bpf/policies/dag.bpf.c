// SPDX-License-Identifier: GPL-2.0
/*
 * dag: run a graph of requests (iouring_bpf/dag.h) inside one
 * io_uring_enter(): each node starts when its parents allow it, at most
 * iou_dag_max_inflight at a time; failures cancel what depends on them.
 */
#include <iouring_bpf/dag.bpf.h>

char LICENSE[] SEC("license") = "GPL";

IOURING_BPF_STEP(dag_step)
{
	return iou_dag_step(ring, lp);
}
IOURING_BPF_OPS(dag_ops, dag_step);
