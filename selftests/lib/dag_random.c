// SPDX-License-Identifier: GPL-2.0
/*
 * lib/dag-random (VM): seeded random DAGs of several shapes, up to the
 * scheduler's limits (4096 nodes, 16 in-edges per node), run by the BPF
 * DAG policy on real file I/O. Every node writes its own 16-byte record at
 * offset 16 * node; some write to a bad fd (failure injection) and edges
 * carry random conditions. Checked against a reference simulation:
 * each node ends exactly once, never before its parents, with exactly the
 * result the rules give (written, -EBADF or -ECANCELED), the file holds
 * the records of the nodes that ran, and in-flight never passed the bound.
 */
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <liburing-bpf.h>
#include "dag.skel.h"
#include "selftest.h"

#define REC 16
#define BAD_FD 1023

struct shape {
	const char *name;
	unsigned int nodes;
	unsigned int max_parents;	/* per node, from earlier nodes */
	unsigned int window;		/* parents come from the last `window` nodes; 0: any */
	unsigned int fail_permille;	/* nodes writing to a bad fd */
	unsigned int cond_mix;		/* 0: all ON_SUCCESS; 1: random conditions */
	unsigned int max_inflight;
};

static const struct shape shapes[] = {
	{ "chain", 300, 1, 1, 0, 0, 8 },
	{ "chain with failure", 300, 1, 1, 5, 0, 8 },
	{ "wide fan-out/fan-in", 1000, 16, 0, 0, 0, 64 },
	{ "random layered", 2000, 4, 64, 20, 1, 16 },
	{ "maximum", IOU_DAG_MAX_NODES, IOU_DAG_MAX_IN_EDGES, 256, 10, 1, 32 },
	{ "maximum, all run", IOU_DAG_MAX_NODES, IOU_DAG_MAX_IN_EDGES, 256, 0, 0, 32 },
};

static unsigned int rnd(unsigned int *seed, unsigned int n)
{
	return n ? (unsigned int)(rand_r(seed) % n) : 0;
}

struct graph {
	unsigned int n;
	unsigned char bad[IOU_DAG_MAX_NODES];
	unsigned int nr_par[IOU_DAG_MAX_NODES];
	unsigned int par[IOU_DAG_MAX_NODES][IOU_DAG_MAX_IN_EDGES];
	unsigned int cond[IOU_DAG_MAX_NODES][IOU_DAG_MAX_IN_EDGES];
	int want[IOU_DAG_MAX_NODES];
};

static void generate(struct graph *g, const struct shape *s, unsigned int seed)
{
	g->n = s->nodes;
	for (unsigned int i = 0; i < g->n; i++) {
		unsigned int lo, want;

		g->bad[i] = rnd(&seed, 1000) < s->fail_permille;
		g->nr_par[i] = 0;
		if (!i)
			continue;
		lo = s->window && i > s->window ? i - s->window : 0;
		if (s->max_parents == 16 && !s->window)	/* fan-out then fan-in */
			want = i < 16 ? 1 : i >= g->n - 8 ? 16 : 1;
		else
			want = 1 + rnd(&seed, s->max_parents);
		for (unsigned int k = 0; k < want && g->nr_par[i] < IOU_DAG_MAX_IN_EDGES; k++) {
			unsigned int p = (s->max_parents == 16 && !s->window) ?
				(i < 16 ? 0 : i >= g->n - 8 ? 16 + rnd(&seed, g->n - 24) : rnd(&seed, 16))
				: lo + rnd(&seed, i - lo);
			int dup = 0;

			for (unsigned int q = 0; q < g->nr_par[i]; q++)
				dup |= g->par[i][q] == p;
			if (dup)
				continue;
			g->par[i][g->nr_par[i]] = p;
			g->cond[i][g->nr_par[i]] = !s->cond_mix ? IOU_DAG_ON_SUCCESS :
				(rnd(&seed, 10) < 7 ? IOU_DAG_ON_SUCCESS :
				 rnd(&seed, 2) ? IOU_DAG_ALWAYS : IOU_DAG_ON_FAILURE);
			g->nr_par[i]++;
		}
	}
	/* reference: parents always have smaller ids, so one pass in id order */
	for (unsigned int i = 0; i < g->n; i++) {
		int cancelled = 0;

		for (unsigned int q = 0; q < g->nr_par[i]; q++) {
			int pres = g->want[g->par[i][q]];
			unsigned int c = g->cond[i][q];

			if (!(c == IOU_DAG_ALWAYS || (c == IOU_DAG_ON_SUCCESS && pres >= 0) ||
			      (c == IOU_DAG_ON_FAILURE && pres < 0)))
				cancelled = 1;
		}
		g->want[i] = cancelled ? -ECANCELED : g->bad[i] ? -EBADF : REC;
	}
}

static int run_shape(struct dag *skel, struct iouring_bpf_ring *ring, const struct shape *s,
		     unsigned int seed, struct graph *g, unsigned char *records)
{
	char path[] = "/tmp/dag-out-XXXXXX";
	int fd, status = KSFT_FAIL, ret;
	struct iouring_bpf_dag *dag;
	unsigned int *pos;
	unsigned char got[REC];
	unsigned int ran = 0, failed = 0, cancelled = 0;

	generate(g, s, seed);
	fd = mkstemp(path);
	dag = iouring_bpf_dag_new();
	pos = calloc(g->n + 1, sizeof(*pos));
	if (!CHECK(fd >= 0 && dag && pos, "setup: %s", strerror(errno)))
		goto out;
	unlink(path);
	for (unsigned int i = 0; i < g->n; i++) {
		struct iouring_bpf_dag_node node = {
			.opcode = IORING_OP_WRITE, .fd = g->bad[i] ? BAD_FD : fd,
			.addr = (uintptr_t)(records + (size_t)i * REC), .len = REC,
			.off = (__u64)i * REC,
		};

		if (!CHECK(iouring_bpf_dag_add_node(dag, &node) == (int)i, "%s",
			   iouring_bpf_dag_strerror(dag)))
			goto out;
		for (unsigned int q = 0; q < g->nr_par[i]; q++) {
			ret = iouring_bpf_dag_add_edge(dag, g->par[i][q], i, g->cond[i][q]);
			if (!CHECK_OK(ret, iouring_bpf_dag_strerror(dag)))
				goto out;
		}
	}
	ret = iouring_bpf_dag_export(dag, skel->bss->iou_dag_nodes, IOU_DAG_MAX_NODES,
				     skel->bss->iou_dag_edges, IOU_DAG_MAX_EDGES,
				     &skel->bss->iou_dag_nr_nodes);
	if (!CHECK_OK(ret, iouring_bpf_dag_strerror(dag)))
		goto out;
	skel->data->iou_dag_max_inflight = s->max_inflight;
	skel->bss->iou_dag_generation++;

	ret = iouring_bpf_ring_run(ring);
	if (!CHECK(ret == 0 && skel->bss->iou_exit_status == 0, "%s: run %d, status %d", s->name,
		   ret, skel->bss->iou_exit_status) ||
	    !CHECK(skel->bss->iou_dag_nr_done == g->n, "%s: %u of %u nodes ended", s->name,
		   skel->bss->iou_dag_nr_done, g->n))
		goto out;

	/* each node exactly once; remember where */
	for (unsigned int k = 0; k < g->n; k++) {
		unsigned int v = skel->bss->iou_dag_order[k];

		if (!CHECK(v < g->n && !pos[v], "%s: node %u ended twice or is unknown (at %u)",
			   s->name, v, k)) {
			for (unsigned int j = 0; j < 24 && j < g->n; j++)
				fprintf(stderr, " %u:%d", skel->bss->iou_dag_order[j],
					skel->bss->iou_dag_res[skel->bss->iou_dag_order[j] % g->n]);
			fprintf(stderr, "\n");
			goto out;
		}
		pos[v] = k + 1;
	}
	for (unsigned int i = 0; i < g->n; i++) {
		int res = skel->bss->iou_dag_res[i];

		for (unsigned int q = 0; q < g->nr_par[i]; q++)
			if (!CHECK(pos[g->par[i][q]] < pos[i], "%s: node %u ended before parent %u",
				   s->name, i, g->par[i][q]))
				goto out;
		if (!CHECK(res == g->want[i], "%s: node %u res %d, want %d", s->name, i, res,
			   g->want[i]))
			goto out;
		if (pread(fd, got, REC, (off_t)i * REC) < 0)
			memset(got, 0, REC);
		if (res == REC) {
			ran++;
			if (!CHECK(!memcmp(got, records + (size_t)i * REC, REC),
				   "%s: record of node %u wrong", s->name, i))
				goto out;
		} else {
			res == -ECANCELED ? cancelled++ : failed++;
			static const unsigned char zero[REC];
			struct stat st;

			fstat(fd, &st);
			if ((off_t)(i + 1) * REC <= st.st_size &&
			    !CHECK(!memcmp(got, zero, REC), "%s: node %u did not run but wrote",
				   s->name, i))
				goto out;
		}
	}
	if (!CHECK(skel->bss->iou_dag_peak_inflight <= s->max_inflight,
		   "%s: %u in flight, bound %u", s->name, skel->bss->iou_dag_peak_inflight,
		   s->max_inflight))
		goto out;
	printf("%-20s seed %u: %4u nodes, %4u ran, %3u failed, %4u cancelled, peak in flight %u/%u\n",
	       s->name, seed, g->n, ran, failed, cancelled, skel->bss->iou_dag_peak_inflight,
	       s->max_inflight);
	status = KSFT_PASS;
out:
	iouring_bpf_dag_free(dag);
	free(pos);
	if (fd >= 0)
		close(fd);
	return status;
}

int main(void)
{
	static struct graph g;
	struct iouring_bpf_ring ring;
	struct dag *skel = NULL;
	struct bpf_link *link = NULL;
	unsigned char *records = malloc((size_t)IOU_DAG_MAX_NODES * REC);
	int status = KSFT_FAIL;

	setvbuf(stdout, NULL, _IONBF, 0);
	for (size_t i = 0; i < (size_t)IOU_DAG_MAX_NODES * REC; i++)
		records[i] = (unsigned char)(i / REC * 7 + i % REC + 1);
	if (!CHECK_OK(iouring_bpf_ring_init(&ring, 64, 256, IOURING_BPF_RING_FLAGS), "ring"))
		goto out;
	skel = dag__open();
	if (!CHECK(skel, "dag__open: %s", strerror(errno)))
		goto out;
	skel->rodata->iou_geom = ring.geom;
	skel->struct_ops.dag_ops->ring_fd = ring.fd;
	if (!CHECK_OK(dag__load(skel), "dag__load"))
		goto out;
	link = bpf_map__attach_struct_ops(skel->maps.dag_ops);
	if (!CHECK(link, "attach: %s", strerror(errno)))
		goto out;

	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
		for (unsigned int seed = 1; seed <= 2; seed++)
			if (run_shape(skel, &ring, &shapes[s], seed * 7919 + s, &g, records))
				goto out;
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	dag__destroy(skel);
	iouring_bpf_ring_exit(&ring);
	free(records);
	return status;
}
