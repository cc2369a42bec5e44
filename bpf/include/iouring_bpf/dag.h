/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * DAG scheduling, shared by the BPF engine (dag.bpf.h) and liburing-bpf's
 * builder. Nodes are SQE templates; an edge parent -> child carries a
 * condition. A node starts when all its in-edges are resolved and
 * satisfied; if one is resolved unsatisfied the node is cancelled
 * (-ECANCELED), which counts as a failure for its own children.
 *
 * Limits: IOU_DAG_MAX_NODES nodes, IOU_DAG_MAX_IN_EDGES in-edges per node,
 * IOU_DAG_MAX_EDGES edges in all.
 */
#ifndef IOURING_BPF_DAG_H
#define IOURING_BPF_DAG_H

#ifndef __BPF__
#include <linux/types.h>
/*
 * In user space the node and edge are the C API's types, spelled as the
 * rest of it (struct iouring_bpf_dag_node); the BPF side keeps the iou_
 * names of the engine. One layout, two spellings: the old user-space
 * spelling still compiles, through these.
 */
#define iou_dag_node iouring_bpf_dag_node
#define iou_dag_edge iouring_bpf_dag_edge
#define iou_dag_cond iouring_bpf_dag_cond
#endif

#define IOU_DAG_MAX_NODES	4096
#define IOU_DAG_MAX_IN_EDGES	16
#define IOU_DAG_MAX_EDGES	(IOU_DAG_MAX_NODES * IOU_DAG_MAX_IN_EDGES)

enum iou_dag_cond {
	IOU_DAG_ON_SUCCESS	= 0,	/* parent's res >= 0 */
	IOU_DAG_ON_FAILURE	= 1,	/* parent's res < 0 (or cancelled) */
	IOU_DAG_ALWAYS		= 2,	/* parent ended, whatever the result */
};

/* One node: the SQE fields it needs. */
struct iou_dag_node {
	__u8 opcode;
	__u8 __pad[3];
	__s32 fd;
	__u64 addr;
	__u32 len;
	__u32 op_flags;		/* rw_flags, nop_flags, ... */
	__u64 off;
	__u32 first_out;	/* out-edges: edges[first_out .. first_out + nr_out) */
	__u16 nr_out;
	__u16 nr_in;
};

/* An out-edge: the child, and when it is satisfied. */
struct iou_dag_edge {
	__u32 child;
	__u32 cond;		/* enum iou_dag_cond */
};

/*
 * A node's SQE user_data: the run (iou_dag_generation) and the node; a CQE
 * of an earlier run is recognised and ignored. INTERNAL marks the engine's
 * own requests (cancels of what an earlier, failed run left in flight).
 */
#define IOU_DAG_UD(gen, node)	(((__u64)(__u32)(gen) << 32) | (__u32)(node))
#define IOU_DAG_UD_NODE_MASK	0xffffULL
#define IOU_DAG_UD_INTERNAL	(1ULL << 16)

/* iou_exit_status: 0 done, IOU_DAG_RUNNING, or -errno */
#define IOU_DAG_RUNNING 1
/* iou_dag_res[] of a node that never ran because a parent did not allow it */
#define IOU_DAG_RES_CANCELLED (-125)	/* -ECANCELED */

#endif
