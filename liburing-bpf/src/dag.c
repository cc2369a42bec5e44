// SPDX-License-Identifier: (LGPL-2.1 OR MIT)
/*
 * DAG builder: collects nodes and edges, checks them, and lays them out the
 * way the BPF scheduler (bpf/policies/dag) reads them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "liburing-bpf.h"

struct dag_edge_in {
	__u32 parent, child, cond;
};

struct iouring_bpf_dag {
	struct iouring_bpf_dag_node *nodes;
	__u32 (*parents)[IOU_DAG_MAX_IN_EDGES];	/* per node: duplicate check */
	unsigned int nr_nodes, cap_nodes, cap_parents;
	struct dag_edge_in *edges;
	unsigned int nr_edges, cap_edges;
	char err[256];
};

static int dag_fail(struct iouring_bpf_dag *dag, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dag->err, sizeof(dag->err), fmt, ap);
	va_end(ap);
	return err;
}

static int grow(void **arr, unsigned int *cap, unsigned int need, size_t elem)
{
	unsigned int ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	while (ncap < need)
		ncap *= 2;
	p = realloc(*arr, (size_t)ncap * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

struct iouring_bpf_dag *iouring_bpf_dag_new(void)
{
	return calloc(1, sizeof(struct iouring_bpf_dag));
}

void iouring_bpf_dag_free(struct iouring_bpf_dag *dag)
{
	if (!dag)
		return;
	free(dag->nodes);
	free(dag->parents);
	free(dag->edges);
	free(dag);
}

const char *iouring_bpf_dag_strerror(const struct iouring_bpf_dag *dag)
{
	return dag && dag->err[0] ? dag->err : "no error";
}

int iouring_bpf_dag_add_node(struct iouring_bpf_dag *dag, const struct iouring_bpf_dag_node *tmpl)
{
	struct iouring_bpf_dag_node *n;

	if (!dag || !tmpl)
		return -EINVAL;
	if (dag->nr_nodes >= IOU_DAG_MAX_NODES)
		return dag_fail(dag, -EINVAL,
				"too many nodes: the scheduler takes at most %d",
				IOU_DAG_MAX_NODES);
	if (grow((void **)&dag->nodes, &dag->cap_nodes, dag->nr_nodes + 1, sizeof(*n)) ||
	    grow((void **)&dag->parents, &dag->cap_parents, dag->nr_nodes + 1,
		 sizeof(*dag->parents)))
		return dag_fail(dag, -ENOMEM, "out of memory for node %u", dag->nr_nodes);
	n = &dag->nodes[dag->nr_nodes];
	*n = *tmpl;
	n->first_out = n->nr_out = n->nr_in = 0;
	return dag->nr_nodes++;
}

int iouring_bpf_dag_add_edge(struct iouring_bpf_dag *dag, unsigned int parent,
			     unsigned int child, enum iouring_bpf_dag_cond cond)
{
	if (!dag)
		return -EINVAL;
	if (parent >= dag->nr_nodes || child >= dag->nr_nodes)
		return dag_fail(dag, -EINVAL,
				"edge %u->%u names node %u, which does not exist (%u nodes)",
				parent, child, parent >= dag->nr_nodes ? parent : child,
				dag->nr_nodes);
	if (parent == child)
		return dag_fail(dag, -EINVAL, "edge %u->%u: a node cannot depend on itself",
				parent, child);
	if (cond != IOU_DAG_ON_SUCCESS && cond != IOU_DAG_ON_FAILURE && cond != IOU_DAG_ALWAYS)
		return dag_fail(dag, -EINVAL, "edge %u->%u: unknown condition %d", parent, child,
				(int)cond);
	if (dag->nodes[child].nr_in >= IOU_DAG_MAX_IN_EDGES)
		return dag_fail(dag, -EINVAL,
				"node %u already has %d in-edges, the most the scheduler takes",
				child, IOU_DAG_MAX_IN_EDGES);
	for (unsigned int i = 0; i < dag->nodes[child].nr_in; i++)
		if (dag->parents[child][i] == parent)
			return dag_fail(dag, -EINVAL, "edge %u->%u added twice", parent, child);
	if (grow((void **)&dag->edges, &dag->cap_edges, dag->nr_edges + 1, sizeof(*dag->edges)))
		return dag_fail(dag, -ENOMEM, "out of memory for edge %u->%u", parent, child);
	dag->edges[dag->nr_edges++] = (struct dag_edge_in){ parent, child, cond };
	dag->parents[child][dag->nodes[child].nr_in++] = parent;
	dag->nodes[parent].nr_out++;
	return 0;
}

/*
 * Kahn's algorithm over the scratch layout: -EINVAL naming a node on a
 * cycle, if there is one. Nodes Kahn leaves unfinished are on a cycle or
 * downstream of one; each still has an unfinished parent, so walking
 * unfinished parents from any of them for n steps ends on a cycle. The
 * cycle is named from its lowest-numbered node, in edge direction.
 */
static int dag_check_acyclic(struct iouring_bpf_dag *dag, const struct iouring_bpf_dag_node *nodes,
			     const struct iouring_bpf_dag_edge *out)
{
	unsigned int n = dag->nr_nodes, head = 0, tail = 0, seen = 0;
	__u32 *pending = malloc(sizeof(*pending) * (n ? n : 1));
	__u32 *queue = malloc(sizeof(*queue) * (n ? n : 1));
	int ret = 0;

	if (!pending || !queue) {
		ret = dag_fail(dag, -ENOMEM, "out of memory checking for cycles");
		goto out;
	}
	for (unsigned int i = 0; i < n; i++) {
		pending[i] = nodes[i].nr_in;
		if (!pending[i])
			queue[tail++] = i;
	}
	while (head < tail) {
		__u32 v = queue[head++];
		const struct iouring_bpf_dag_node *node = &nodes[v];

		seen++;
		for (__u32 e = node->first_out; e < node->first_out + node->nr_out; e++)
			if (--pending[out[e].child] == 0)
				queue[tail++] = out[e].child;
	}
	if (seen != n) {
		__u32 v = 0, low, len = 0;
		char path[160];
		int at = 0;

		while (!pending[v])
			v++;
		/* back along unfinished parents: after n steps v is on a cycle */
		for (unsigned int step = 0; step < n; step++) {
			for (unsigned int i = 0; i < nodes[v].nr_in; i++) {
				if (pending[dag->parents[v][i]]) {
					v = dag->parents[v][i];
					break;
				}
			}
		}
		/* the cycle through v, walked backwards: find its lowest node */
		low = v;
		queue[len++] = v;	/* queue is free now: the cycle, reversed */
		for (__u32 u = v;;) {
			for (unsigned int i = 0; i < nodes[u].nr_in; i++) {
				if (pending[dag->parents[u][i]]) {
					u = dag->parents[u][i];
					break;
				}
			}
			if (u == v)
				break;
			queue[len++] = u;
			if (u < low)
				low = u;
		}
		/* print it forwards from the lowest node: low -> ... -> low */
		unsigned int li = 0;

		while (queue[li] != low)
			li++;
		for (unsigned int k = 0; k <= len; k++) {
			__u32 u = queue[(li + len - k % len) % len];

			if (at >= (int)sizeof(path) - 16) {
				snprintf(path + at, sizeof(path) - at, " -> ...");
				break;
			}
			at += snprintf(path + at, sizeof(path) - at, k ? " -> %u" : "%u", u);
		}
		ret = dag_fail(dag, -EINVAL,
			       "the graph has a cycle: node %u depends on itself (%s)", low, path);
	}
out:
	free(pending);
	free(queue);
	return ret;
}

int iouring_bpf_dag_export(struct iouring_bpf_dag *dag, struct iouring_bpf_dag_node *nodes,
			   unsigned int max_nodes, struct iouring_bpf_dag_edge *edges,
			   unsigned int max_edges, __u32 *nr_nodes)
{
	struct iouring_bpf_dag_node *snodes;
	struct iouring_bpf_dag_edge *sedges;
	__u32 *fill;
	int ret;

	if (!dag || !nodes || !edges || !nr_nodes)
		return -EINVAL;
	if (dag->nr_nodes > max_nodes || dag->nr_edges > max_edges)
		return dag_fail(dag, -ENOSPC, "%u nodes and %u edges do not fit (%u, %u)",
				dag->nr_nodes, dag->nr_edges, max_nodes, max_edges);

	/*
	 * Lay the graph out and check it in scratch copies: the tables given
	 * may be a loaded policy's, still holding the last good graph, and a
	 * refused graph must leave them as they were.
	 */
	snodes = malloc(sizeof(*snodes) * (dag->nr_nodes ? dag->nr_nodes : 1));
	sedges = malloc(sizeof(*sedges) * (dag->nr_edges ? dag->nr_edges : 1));
	fill = calloc(dag->nr_nodes ? dag->nr_nodes : 1, sizeof(*fill));
	if (!snodes || !sedges || !fill) {
		ret = dag_fail(dag, -ENOMEM, "out of memory exporting the graph");
		goto out;
	}
	/* out-edges grouped by parent, in the order they were added */
	for (unsigned int i = 0, at = 0; i < dag->nr_nodes; i++) {
		snodes[i] = dag->nodes[i];
		snodes[i].first_out = at;
		fill[i] = at;
		at += dag->nodes[i].nr_out;
	}
	for (unsigned int i = 0; i < dag->nr_edges; i++) {
		const struct dag_edge_in *e = &dag->edges[i];

		sedges[fill[e->parent]++] = (struct iouring_bpf_dag_edge){ e->child, e->cond };
	}

	ret = dag_check_acyclic(dag, snodes, sedges);
	if (ret)
		goto out;

	memcpy(edges, sedges, sizeof(*edges) * dag->nr_edges);
	memcpy(nodes, snodes, sizeof(*nodes) * dag->nr_nodes);
	*nr_nodes = dag->nr_nodes;
out:
	free(snodes);
	free(sedges);
	free(fill);
	return ret;
}

/* A global of the dag policy, live (loaded) memory of at least size bytes. */
static void *dag_global(struct iouring_bpf_dag *dag, struct iouring_bpf_policy *policy,
			const char *name, size_t size)
{
	size_t have = 0;
	void *ptr = iouring_bpf_policy_global_ptr(policy, name, &have);

	if (!ptr || have < size) {
		dag_fail(dag, -EINVAL, "the policy has no usable global '%s': is it bpf/policies/dag, loaded?",
			 name);
		return NULL;
	}
	return ptr;
}

int iouring_bpf_dag_run(struct iouring_bpf_dag *dag, struct iouring_bpf_policy *policy,
			struct iouring_bpf_ring *ring, unsigned int max_inflight, __s32 *res,
			unsigned int nr_res)
{
	struct iouring_bpf_dag_node *nodes;
	struct iouring_bpf_dag_edge *edges;
	__u32 *nr_nodes, *inflight, *generation;
	__s32 *out;
	int ret, status;

	if (!dag || !policy || !ring || !max_inflight || (nr_res && !res))
		return -EINVAL;
	nodes = dag_global(dag, policy, "iou_dag_nodes", sizeof(*nodes) * IOU_DAG_MAX_NODES);
	edges = dag_global(dag, policy, "iou_dag_edges", sizeof(*edges) * IOU_DAG_MAX_EDGES);
	nr_nodes = dag_global(dag, policy, "iou_dag_nr_nodes", sizeof(*nr_nodes));
	inflight = dag_global(dag, policy, "iou_dag_max_inflight", sizeof(*inflight));
	generation = dag_global(dag, policy, "iou_dag_generation", sizeof(*generation));
	out = dag_global(dag, policy, "iou_dag_res", sizeof(*out) * IOU_DAG_MAX_NODES);
	if (!nodes || !edges || !nr_nodes || !inflight || !generation || !out)
		return -EINVAL;

	ret = iouring_bpf_dag_export(dag, nodes, IOU_DAG_MAX_NODES, edges, IOU_DAG_MAX_EDGES,
				     nr_nodes);
	if (ret)
		return ret;
	*inflight = max_inflight;
	++*generation;		/* the policy starts a fresh run */
	ret = iouring_bpf_policy_run(policy, ring, &status);
	if (ret)
		return dag_fail(dag, ret, "%s", iouring_bpf_policy_strerror(policy));
	if (status)
		return dag_fail(dag, status < 0 ? status : -EIO, "the DAG policy stopped with %d",
				status);
	if (nr_res)
		memcpy(res, out, sizeof(*res) * (nr_res < dag->nr_nodes ? nr_res : dag->nr_nodes));
	return 0;
}
