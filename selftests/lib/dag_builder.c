// SPDX-License-Identifier: GPL-2.0
/*
 * lib/dag-builder (host): the DAG builder refuses bad graphs with -EINVAL
 * and a message that names the problem, and lays good ones out as the BPF
 * scheduler reads them. A cycle is reported by a node on it (not one
 * merely downstream of it), and a refused graph leaves the tables it was
 * to be exported into (a loaded policy's, holding the last good graph)
 * exactly as they were.
 */
#include <stdlib.h>
#include <liburing-bpf.h>
#include "selftest.h"

static struct iouring_bpf_dag_node nodes[IOU_DAG_MAX_NODES];
static struct iouring_bpf_dag_edge edges[IOU_DAG_MAX_EDGES];

static struct iouring_bpf_dag *dag_with(unsigned int n)
{
	struct iouring_bpf_dag *dag = iouring_bpf_dag_new();
	struct iouring_bpf_dag_node nop = { .opcode = IORING_OP_NOP, .fd = -1 };

	for (unsigned int i = 0; dag && i < n; i++)
		if (iouring_bpf_dag_add_node(dag, &nop) != (int)i)
			return NULL;
	return dag;
}

/* ret must be err, and the message must contain want. */
static int expect(struct iouring_bpf_dag *dag, int ret, int err, const char *want,
		  const char *what)
{
	const char *msg = iouring_bpf_dag_strerror(dag);

	if (!CHECK(ret == err, "%s: returned %d, want %d", what, ret, err) ||
	    !CHECK(strstr(msg, want), "%s: message \"%s\" lacks \"%s\"", what, msg, want))
		return 0;
	printf("%-22s %d: %s\n", what, ret, msg);
	return 1;
}

int main(void)
{
	struct iouring_bpf_dag *dag;
	__u32 nr = 0;
	int ok = 1;

	/* a diamond exports as CSR: 0 -> {1, 2} -> 3 */
	dag = dag_with(4);
	ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, 0, 1, IOU_DAG_ON_SUCCESS), "edge 0-1");
	ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, 0, 2, IOU_DAG_ALWAYS), "edge 0-2");
	ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, 1, 3, IOU_DAG_ON_SUCCESS), "edge 1-3");
	ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, 2, 3, IOU_DAG_ON_FAILURE), "edge 2-3");
	ok &= CHECK_OK(iouring_bpf_dag_export(dag, nodes, IOU_DAG_MAX_NODES, edges,
					      IOU_DAG_MAX_EDGES, &nr), "export");
	ok &= CHECK(nr == 4 && nodes[0].nr_out == 2 && nodes[0].nr_in == 0 &&
		    nodes[3].nr_in == 2 && nodes[3].nr_out == 0, "diamond counts");
	ok &= CHECK(edges[nodes[0].first_out].child == 1 &&
		    edges[nodes[0].first_out + 1].child == 2 &&
		    edges[nodes[0].first_out + 1].cond == IOU_DAG_ALWAYS &&
		    edges[nodes[2].first_out].child == 3 &&
		    edges[nodes[2].first_out].cond == IOU_DAG_ON_FAILURE, "diamond edges");
	/* errors */
	ok &= expect(dag, iouring_bpf_dag_add_edge(dag, 1, 7, IOU_DAG_ON_SUCCESS), -EINVAL,
		     "names node 7, which does not exist", "dangling edge");
	ok &= expect(dag, iouring_bpf_dag_add_edge(dag, 2, 2, IOU_DAG_ALWAYS), -EINVAL,
		     "cannot depend on itself", "self edge");
	ok &= expect(dag, iouring_bpf_dag_add_edge(dag, 0, 1, IOU_DAG_ALWAYS), -EINVAL,
		     "added twice", "duplicate edge");
	ok &= expect(dag, iouring_bpf_dag_add_edge(dag, 1, 2, 9), -EINVAL,
		     "unknown condition 9", "bad condition");
	ok &= expect(dag, iouring_bpf_dag_export(dag, nodes, 3, edges, IOU_DAG_MAX_EDGES, &nr),
		     -ENOSPC, "do not fit", "export too small");
	/* 3 -> 0 closes a cycle through the diamond */
	ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, 3, 0, IOU_DAG_ALWAYS), "edge 3-0");
	ok &= expect(dag, iouring_bpf_dag_export(dag, nodes, IOU_DAG_MAX_NODES, edges,
						 IOU_DAG_MAX_EDGES, &nr),
		     -EINVAL, "has a cycle", "cycle");
	iouring_bpf_dag_free(dag);

	/* in-edge limit */
	dag = dag_with(IOU_DAG_MAX_IN_EDGES + 2);
	for (unsigned int i = 1; i <= IOU_DAG_MAX_IN_EDGES; i++)
		ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, i, 0, IOU_DAG_ALWAYS), "in-edge");
	ok &= expect(dag, iouring_bpf_dag_add_edge(dag, IOU_DAG_MAX_IN_EDGES + 1, 0,
						   IOU_DAG_ALWAYS),
		     -EINVAL, "already has 16 in-edges", "17th in-edge");
	iouring_bpf_dag_free(dag);

	/*
	 * Cycle 1 -> 2 -> 1, with 0 (the lowest pending node) only its child
	 * (2 -> 0) and 3 a root: 0 is not on the cycle, 1 is.
	 */
	dag = dag_with(4);
	ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, 2, 0, IOU_DAG_ALWAYS), "edge 2-0");
	ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, 3, 1, IOU_DAG_ALWAYS), "edge 3-1");
	ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, 1, 2, IOU_DAG_ALWAYS), "edge 1-2");
	ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, 2, 1, IOU_DAG_ALWAYS), "edge 2-1");
	ok &= expect(dag, iouring_bpf_dag_export(dag, nodes, IOU_DAG_MAX_NODES, edges,
						 IOU_DAG_MAX_EDGES, &nr),
		     -EINVAL, "node 1 depends on itself (1 -> 2 -> 1)", "cycle past node 0");
	iouring_bpf_dag_free(dag);

	/* a longer cycle entered from below: 0 -> 5 -> 3 -> 4 -> 5, 4 -> 1, 2 root */
	dag = dag_with(6);
	ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, 0, 5, IOU_DAG_ALWAYS), "edge 0-5");
	ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, 5, 3, IOU_DAG_ALWAYS), "edge 5-3");
	ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, 3, 4, IOU_DAG_ALWAYS), "edge 3-4");
	ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, 4, 5, IOU_DAG_ALWAYS), "edge 4-5");
	ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, 4, 1, IOU_DAG_ALWAYS), "edge 4-1");
	ok &= expect(dag, iouring_bpf_dag_export(dag, nodes, IOU_DAG_MAX_NODES, edges,
						 IOU_DAG_MAX_EDGES, &nr),
		     -EINVAL, "node 3 depends on itself (3 -> 4 -> 5 -> 3)", "cycle of three");
	iouring_bpf_dag_free(dag);

	/*
	 * A refused graph leaves the tables alone: export a good chain
	 * 0 -> 1 -> 2, then a graph with a cycle into the same tables; they
	 * (and the node count) must still be the chain's, byte for byte.
	 */
	static struct iouring_bpf_dag_node nodes_before[8];
	static struct iouring_bpf_dag_edge edges_before[8];
	__u32 nr_before;

	memset(nodes, 0, sizeof(nodes));
	memset(edges, 0, sizeof(edges));
	dag = dag_with(3);
	ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, 0, 1, IOU_DAG_ON_SUCCESS), "chain 0-1");
	ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, 1, 2, IOU_DAG_ON_SUCCESS), "chain 1-2");
	ok &= CHECK_OK(iouring_bpf_dag_export(dag, nodes, IOU_DAG_MAX_NODES, edges,
					      IOU_DAG_MAX_EDGES, &nr), "export chain");
	iouring_bpf_dag_free(dag);
	memcpy(nodes_before, nodes, sizeof(nodes_before));
	memcpy(edges_before, edges, sizeof(edges_before));
	nr_before = nr;
	/* 4 nodes, edges laid out differently: 0 -> 3, 1 -> 2 -> 1 */
	dag = dag_with(4);
	ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, 0, 3, IOU_DAG_ALWAYS), "edge 0-3");
	ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, 2, 1, IOU_DAG_ON_FAILURE), "edge 2-1");
	ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, 1, 2, IOU_DAG_ALWAYS), "edge 1-2");
	ok &= expect(dag, iouring_bpf_dag_export(dag, nodes, IOU_DAG_MAX_NODES, edges,
						 IOU_DAG_MAX_EDGES, &nr),
		     -EINVAL, "node 1 depends on itself (1 -> 2 -> 1)", "refused graph");
	ok &= CHECK(nr == nr_before, "node count changed by a refused graph: %u, was %u", nr,
		    nr_before);
	ok &= CHECK(!memcmp(nodes, nodes_before, sizeof(nodes_before)),
		    "node table changed by a refused graph");
	ok &= CHECK(!memcmp(edges, edges_before, sizeof(edges_before)),
		    "edge table changed by a refused graph (edge 0: child %u cond %u, was %u %u)",
		    edges[0].child, edges[0].cond, edges_before[0].child, edges_before[0].cond);
	/* the chain still reads right: 0 -> 1 -> 2, on success */
	ok &= CHECK(nodes[0].nr_out == 1 && edges[nodes[0].first_out].child == 1 &&
		    nodes[1].nr_out == 1 && edges[nodes[1].first_out].child == 2 &&
		    edges[nodes[1].first_out].cond == IOU_DAG_ON_SUCCESS && nodes[2].nr_in == 1,
		    "the last good graph is intact");
	/* and the builder's own state is usable: break the cycle, export again */
	iouring_bpf_dag_free(dag);
	dag = dag_with(4);
	ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, 0, 3, IOU_DAG_ALWAYS), "edge 0-3");
	ok &= CHECK_OK(iouring_bpf_dag_add_edge(dag, 1, 2, IOU_DAG_ALWAYS), "edge 1-2");
	ok &= CHECK_OK(iouring_bpf_dag_export(dag, nodes, IOU_DAG_MAX_NODES, edges,
					      IOU_DAG_MAX_EDGES, &nr), "export after refusal");
	ok &= CHECK(nr == 4 && edges[nodes[0].first_out].child == 3 &&
		    edges[nodes[1].first_out].child == 2, "new graph exported");
	iouring_bpf_dag_free(dag);

	/* node limit */
	dag = dag_with(IOU_DAG_MAX_NODES);
	struct iouring_bpf_dag_node nop = { .opcode = IORING_OP_NOP, .fd = -1 };
	ok &= CHECK(dag, "4096 nodes accepted");
	ok &= expect(dag, iouring_bpf_dag_add_node(dag, &nop), -EINVAL, "at most 4096",
		     "node 4097");
	iouring_bpf_dag_free(dag);

	return ok ? KSFT_PASS : KSFT_FAIL;
}
