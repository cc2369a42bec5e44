// SPDX-License-Identifier: GPL-2.0
/*
 * dag: a fan-out/fan-in pipeline, K input files interleaved into one output
 * (stripe s of the output is block s of file 0, of file 1, ... of file K-1):
 *
 *   read(s, 0) ... read(s, K-1)     K reads into the stripe's buffer
 *          \      |      /          fan-in: the write needs all K reads
 *            write(s)
 *          /      |      \          fan-out: the buffer is free again, so
 *   read(s+W, 0) ... read(s+W, K-1)   stripe s+W may read into it
 *
 * W stripe buffers, at most Q requests in flight. The same graph (built once
 * with liburing-bpf's DAG builder) runs two ways:
 *
 *   bpf    bpf/policies/dag.bpf.o through iouring_bpf_dag_run(): one
 *          io_uring_enter() for the whole graph
 *   user   a liburing loop that schedules the exported graph in user space:
 *          one io_uring_submit_and_wait(1) per loop turn
 *
 * Every run's output is compared with the inputs. Interleaved rounds,
 * medians. Prints a table; -j writes JSON with time and io_uring_enter calls
 * for each block size and variant.
 *
 * -B DEV uses the block device DEV, O_DIRECT, for every input and the output
 * instead of tmpfs files: on null_blk without memory backing no byte moves,
 * and what is left is the per-request cost. Such a device keeps no data, so
 * then only every request's byte count is checked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <liburing-bpf.h>
#include <liburing.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../bench.h"

#define MAX_FILES 15	/* a write's in-edges: K reads (IOU_DAG_MAX_IN_EDGES) */

struct pipeline {
	int in[MAX_FILES], out;
	unsigned int files, window, stripes, inflight;
	__u32 block;
	char *buf;		/* window stripe buffers of files * block bytes */
	struct iouring_bpf_dag *dag;
	unsigned int nr_nodes;
	unsigned long enters;	/* io_uring_enter calls of the last run */
};

static unsigned int read_node(const struct pipeline *p, unsigned int s, unsigned int f)
{
	return s * (p->files + 1) + f;
}

static unsigned int write_node(const struct pipeline *p, unsigned int s)
{
	return s * (p->files + 1) + p->files;
}

/* The graph: node ids follow read_node()/write_node(). */
static int build(struct pipeline *p)
{
	size_t stripe = (size_t)p->files * p->block;
	int ret = 0;

	p->dag = iouring_bpf_dag_new();
	if (!p->dag)
		return -ENOMEM;
	for (unsigned int s = 0; s < p->stripes && ret >= 0; s++) {
		char *sbuf = p->buf + (s % p->window) * stripe;

		for (unsigned int f = 0; f < p->files && ret >= 0; f++) {
			struct iouring_bpf_dag_node rd = {
				.opcode = IORING_OP_READ, .fd = p->in[f],
				.addr = (uintptr_t)(sbuf + (size_t)f * p->block),
				.len = p->block, .off = (__u64)s * p->block,
			};

			ret = iouring_bpf_dag_add_node(p->dag, &rd);
		}
		struct iouring_bpf_dag_node wr = {
			.opcode = IORING_OP_WRITE, .fd = p->out, .addr = (uintptr_t)sbuf,
			.len = stripe, .off = (__u64)s * stripe,
		};
		if (ret >= 0)
			ret = iouring_bpf_dag_add_node(p->dag, &wr);
		for (unsigned int f = 0; f < p->files && ret >= 0; f++) {
			ret = iouring_bpf_dag_add_edge(p->dag, read_node(p, s, f),
						       write_node(p, s), IOU_DAG_ON_SUCCESS);
			/* the buffer is reused: wait for the write of stripe s - W */
			if (!ret && s >= p->window)
				ret = iouring_bpf_dag_add_edge(p->dag, write_node(p, s - p->window),
							       read_node(p, s, f),
							       IOU_DAG_ON_SUCCESS);
		}
	}
	if (ret < 0) {
		fprintf(stderr, "dag: building the graph: %s\n", iouring_bpf_dag_strerror(p->dag));
		return ret;
	}
	p->nr_nodes = p->stripes * (p->files + 1);
	return 0;
}

/* ---- bpf: the dag policy through the generic loader */

struct bpf_side {
	struct iouring_bpf_ring ring;
	struct iouring_bpf_policy *policy;
	__s32 *res;
};

static int bpf_open(struct bpf_side *b, const char *path, unsigned int nodes)
{
	int ret = iouring_bpf_ring_init(&b->ring, 64, 256, IOURING_BPF_RING_FLAGS);

	if (ret)
		return ret;
	b->res = calloc(nodes, sizeof(*b->res));
	ret = b->res ? iouring_bpf_policy_open(path, &b->policy) : -ENOMEM;
	if (!ret)
		ret = iouring_bpf_policy_set_ring(b->policy, &b->ring);
	if (!ret)
		ret = iouring_bpf_policy_load(b->policy);
	if (!ret)
		ret = iouring_bpf_policy_attach(b->policy);
	if (ret)
		fprintf(stderr, "dag: %s: %s\n", path, iouring_bpf_policy_strerror(b->policy));
	return ret;
}

static int bpf_run(struct bpf_side *b, struct pipeline *p)
{
	int ret = iouring_bpf_dag_run(p->dag, b->policy, &b->ring, p->inflight, b->res,
				      p->nr_nodes);

	p->enters = 1;
	if (ret) {
		fprintf(stderr, "dag: bpf: %s\n", iouring_bpf_dag_strerror(p->dag));
		return ret;
	}
	for (unsigned int i = 0; i < p->nr_nodes; i++)
		if (b->res[i] < 0)
			return b->res[i];
	return 0;
}

static void bpf_close(struct bpf_side *b)
{
	iouring_bpf_policy_close(b->policy);
	iouring_bpf_ring_exit(&b->ring);
	free(b->res);
}

/* ---- user: the exported graph scheduled by a liburing loop */

struct user_side {
	struct io_uring ring;
	struct iouring_bpf_dag_node *nodes;
	struct iouring_bpf_dag_edge *edges;
	__u32 nr_nodes;
	__u16 *pending;		/* in-edges not yet resolved */
	__u8 *blocked;		/* an in-edge was not satisfied */
	__u32 *ready, *done_fifo;
	__s32 *res;
};

static int user_open(struct user_side *u, struct pipeline *p)
{
	u->nodes = calloc(IOU_DAG_MAX_NODES, sizeof(*u->nodes));
	u->edges = calloc(IOU_DAG_MAX_EDGES, sizeof(*u->edges));
	u->pending = calloc(IOU_DAG_MAX_NODES, sizeof(*u->pending));
	u->blocked = calloc(IOU_DAG_MAX_NODES, sizeof(*u->blocked));
	u->ready = calloc(IOU_DAG_MAX_NODES, sizeof(*u->ready));
	u->done_fifo = calloc(IOU_DAG_MAX_NODES, sizeof(*u->done_fifo));
	u->res = calloc(IOU_DAG_MAX_NODES, sizeof(*u->res));
	if (!u->nodes || !u->edges || !u->pending || !u->blocked || !u->ready ||
	    !u->done_fifo || !u->res)
		return -ENOMEM;
	int ret = iouring_bpf_dag_export(p->dag, u->nodes, IOU_DAG_MAX_NODES, u->edges,
					 IOU_DAG_MAX_EDGES, &u->nr_nodes);
	if (ret)
		return ret;
	return io_uring_queue_init(64, &u->ring,
				   IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
}

/*
 * Node k ended with res: resolve its out-edges, queueing children that may
 * start and ending (cancelling) children that may not, transitively.
 * Returns how many nodes ended: k and those it cancelled.
 */
static __u32 user_finish(struct user_side *u, __u32 k, int res, __u32 *ready_tail)
{
	__u32 head = 0, tail = 0;

	u->done_fifo[tail++] = k;
	u->res[k] = res;
	while (head < tail) {
		__u32 n = u->done_fifo[head++];
		bool failed = u->res[n] < 0;

		for (__u32 e = 0; e < u->nodes[n].nr_out; e++) {
			const struct iouring_bpf_dag_edge *edge = &u->edges[u->nodes[n].first_out + e];
			__u32 c = edge->child;

			if (!(edge->cond == IOU_DAG_ALWAYS ||
			      (edge->cond == IOU_DAG_ON_SUCCESS && !failed) ||
			      (edge->cond == IOU_DAG_ON_FAILURE && failed)))
				u->blocked[c] = 1;
			if (--u->pending[c])
				continue;
			if (u->blocked[c]) {
				u->res[c] = IOU_DAG_RES_CANCELLED;
				u->done_fifo[tail++] = c;
			} else {
				u->ready[(*ready_tail)++] = c;
			}
		}
	}
	return tail;
}

static int user_run(struct user_side *u, struct pipeline *p)
{
	__u32 ready_head = 0, ready_tail = 0, ended = 0, inflight = 0;
	struct io_uring_cqe *cqe;
	unsigned int head, seen;

	p->enters = 0;
	for (__u32 k = 0; k < u->nr_nodes; k++) {
		u->pending[k] = u->nodes[k].nr_in;
		u->blocked[k] = 0;
		u->res[k] = 0;
		if (!u->pending[k])
			u->ready[ready_tail++] = k;
	}
	while (ended < u->nr_nodes) {
		if (ready_head == ready_tail && !inflight)
			return -EDEADLK;	/* the builder refuses cycles: cannot happen */
		while (ready_head < ready_tail && inflight < p->inflight) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
			const struct iouring_bpf_dag_node *n;
			__u32 k;

			if (!sqe)
				break;
			k = u->ready[ready_head++];
			n = &u->nodes[k];
			io_uring_prep_rw(n->opcode, sqe, n->fd, (void *)(uintptr_t)n->addr, n->len,
					 n->off);
			sqe->rw_flags = n->op_flags;
			io_uring_sqe_set_data64(sqe, k);
			inflight++;
		}
		int ret = io_uring_submit_and_wait(&u->ring, 1);

		p->enters++;
		if (ret < 0)
			return ret;
		seen = 0;
		io_uring_for_each_cqe(&u->ring, head, cqe) {
			seen++;
			inflight--;
			ended += user_finish(u, (__u32)cqe->user_data, cqe->res, &ready_tail);
		}
		io_uring_cq_advance(&u->ring, seen);
	}
	for (__u32 k = 0; k < u->nr_nodes; k++)
		if (u->res[k] < 0)
			return u->res[k];
	return 0;
}

static void user_close(struct user_side *u)
{
	if (u->ring.ring_fd > 0)
		io_uring_queue_exit(&u->ring);
	free(u->nodes);
	free(u->edges);
	free(u->pending);
	free(u->blocked);
	free(u->ready);
	free(u->done_fifo);
	free(u->res);
}

/* The output, stripe by stripe, against the inputs; then empty it. */
static int verify(struct pipeline *p, size_t file_size, bool data)
{
	size_t out_size = file_size * p->files;
	char *out, *in;
	int ret = 0;

	if (!data)
		return 0;	/* a device that keeps nothing: the counts were checked */
	out = malloc(out_size);
	in = malloc(file_size);

	if (!out || !in) {
		ret = -ENOMEM;
		goto done;
	}
	if (pread(p->out, out, out_size, 0) != (ssize_t)out_size) {
		ret = -EIO;
		goto done;
	}
	for (unsigned int f = 0; f < p->files && !ret; f++) {
		if (pread(p->in[f], in, file_size, 0) != (ssize_t)file_size) {
			ret = -EIO;
			break;
		}
		for (unsigned int s = 0; s < p->stripes; s++) {
			if (memcmp(out + ((size_t)s * p->files + f) * p->block,
				   in + (size_t)s * p->block, p->block)) {
				fprintf(stderr, "dag: output stripe %u, file %u differs\n", s, f);
				ret = -EIO;
				break;
			}
		}
	}
	if (!ret && ftruncate(p->out, 0))
		ret = -errno;
done:
	free(out);
	free(in);
	return ret;
}

static int temp_file(const char *dir, const char *what)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/dag-%s-XXXXXX", dir, what);
	fd = mkstemp(path);
	if (fd >= 0)
		unlink(path);
	return fd;
}

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"usage: %s [-d DIR | -B DEV] [-s MIB] [-k FILES] [-w STRIPES] [-q INFLIGHT]\n"
		"          [-r ROUNDS] [-p DAG.bpf.o] [-j FILE.json]\n"
		"  -d DIR      where the files live (default /tmp)\n"
		"  -B DEV      every input and the output on DEV, O_DIRECT (null_blk: no data\n"
		"              is kept, so only byte counts are checked)\n"
		"  -s MIB      size of the combined output (default 8)\n"
		"  -k FILES    input files, at most %d (default 8)\n"
		"  -w STRIPES  stripe buffers: stripes being read or written (default 4)\n"
		"  -q N        requests in flight (default 16)\n"
		"  -r ROUNDS   interleaved rounds, median reported (default 5)\n"
		"  -p PATH     the dag policy object (default %s)\n"
		"  -j FILE     also write the results as JSON\n"
		"  -h, --help  this text\n"
		"Block sizes: 4 KiB and 128 KiB; the graph has (FILES + 1) nodes per stripe\n"
		"and at most %d nodes.\n",
		argv0, MAX_FILES, DAG_POLICY_PATH, IOU_DAG_MAX_NODES);
}

int main(int argc, char **argv)
{
	struct pipeline p = { .files = 8, .window = 4, .inflight = 16 };
	unsigned int mib = 8;
	int rounds = 5, opt, status = 1;
	const char *json = NULL, *dir = "/tmp", *policy = DAG_POLICY_PATH, *dev = NULL;
	static const __u32 blocks[] = { 4096, 131072 };
	FILE *jf = NULL;

	while ((opt = getopt_long(argc, argv, "d:B:s:k:w:q:r:p:j:h", bench_long_options(), NULL)) != -1) {
		switch (opt) {
		case 'd': dir = optarg; break;
		case 'B': dev = optarg; break;
		case 's': mib = atoi(optarg); break;
		case 'k': p.files = atoi(optarg); break;
		case 'w': p.window = atoi(optarg); break;
		case 'q': p.inflight = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 'p': policy = optarg; break;
		case 'j': json = optarg; break;
		case 'h': usage(stdout, argv[0]); return 0;
		default: usage(stderr, argv[0]); return 2;
		}
	}
	size_t file_size = ((size_t)mib << 20) / (p.files ? p.files : 1);

	if (!mib || mib > 256 || !p.files || p.files > MAX_FILES || !p.window || !p.inflight ||
	    p.inflight > 64 || rounds < 1 || rounds > 50 || file_size % blocks[1]) {
		usage(stderr, argv[0]);
		return 2;
	}
	if (file_size / blocks[0] * (p.files + 1) > IOU_DAG_MAX_NODES) {
		fprintf(stderr, "dag: %u MiB in %u files is %zu nodes at 4 KiB, more than %d\n",
			mib, p.files, file_size / blocks[0] * (p.files + 1), IOU_DAG_MAX_NODES);
		return 2;
	}

	p.out = dev ? open(dev, O_WRONLY | O_DIRECT) : temp_file(dir, "out");
	for (unsigned int f = 0; f < p.files; f++) {
		p.in[f] = dev ? open(dev, O_RDONLY | O_DIRECT) : temp_file(dir, "in");
		if (p.in[f] < 0) {
			fprintf(stderr, "dag: %s: %s\n", dev ? dev : dir, strerror(errno));
			return 1;
		}
		for (size_t off = 0; !dev && off < file_size; off += 4096) {
			char page[4096];

			for (int i = 0; i < 4096; i++)
				page[i] = (char)(f * 97 + off / 4096 * 31 + i);
			if (pwrite(p.in[f], page, sizeof(page), off) != sizeof(page)) {
				perror("dag: writing an input");
				return 1;
			}
		}
	}
	if (p.out < 0) {
		fprintf(stderr, "dag: %s: %s\n", dev ? dev : dir, strerror(errno));
		return 1;
	}
	p.buf = aligned_alloc(4096, (size_t)p.window * p.files * blocks[1]);
	if (!p.buf)
		return 1;
	if (json && !(jf = fopen(json, "w"))) {
		fprintf(stderr, "dag: %s: %s\n", json, strerror(errno));
		return 1;
	}
	if (jf)
		fprintf(jf, "{\"backing\": \"%s\", \"output_mib\": %u, \"files\": %u, "
			    "\"window\": %u, \"inflight\": %u, \"rounds\": %d, \"results\": [",
			dev ? dev : "tmpfs", mib, p.files, p.window, p.inflight, rounds);

	printf("dag: %u files interleaved into %u MiB on %s, %u stripe buffers, %u in flight, "
	       "%d interleaved rounds, medians\n", p.files, mib, dev ? dev : dir, p.window,
	       p.inflight, rounds);
	printf("  %-8s %-6s %6s %10s %8s %9s %9s\n", "block", "method", "nodes", "ms", "MB/s",
	       "enters", "vs user");
	for (size_t bi = 0; bi < sizeof(blocks) / sizeof(blocks[0]); bi++) {
		struct bpf_side b = {};
		struct user_side u = {};
		unsigned long enters[2] = { 0 };
		double t[2][50];
		int ret;

		p.block = blocks[bi];
		p.stripes = file_size / p.block;
		ret = build(&p);
		if (!ret)
			ret = bpf_open(&b, policy, p.nr_nodes);
		if (!ret)
			ret = user_open(&u, &p);
		for (int r = 0; r < rounds && !ret; r++) {
			for (int m = 0; m < 2 && !ret; m++) {
				double start = bench_now_ms();

				ret = m == 0 ? bpf_run(&b, &p) : user_run(&u, &p);
				t[m][r] = bench_now_ms() - start;
				enters[m] = p.enters;
				if (!ret)
					ret = verify(&p, file_size, !dev);
				if (ret)
					fprintf(stderr, "dag: %s, block %u: %s\n", m ? "user" : "bpf",
						p.block, strerror(-ret));
			}
		}
		user_close(&u);
		bpf_close(&b);
		iouring_bpf_dag_free(p.dag);
		p.dag = NULL;
		if (ret)
			goto out;

		static const char *const names[] = { "bpf", "user" };
		double ms[2];

		for (int m = 0; m < 2; m++)
			ms[m] = bench_median(t[m], rounds);
		for (int m = 0; m < 2; m++)
			printf("  %-8u %-6s %6u %10.2f %8.1f %9lu %8.2fx\n", p.block, names[m],
			       p.nr_nodes, ms[m], (double)file_size * p.files / 1e3 / ms[m],
			       enters[m], ms[1] / ms[m]);
		if (jf)
			fprintf(jf, "%s{\"block\": %u, \"nodes\": %u, \"bpf_ms\": %.3f, "
				    "\"user_ms\": %.3f, \"bpf_enters\": %lu, \"user_enters\": %lu, "
				    "\"speedup\": %.3f}",
				bi ? ", " : "", p.block, p.nr_nodes, ms[0], ms[1], enters[0],
				enters[1], ms[1] / ms[0]);
	}
	if (jf)
		fprintf(jf, "]}\n");
	status = 0;
out:
	if (jf)
		fclose(jf);
	free(p.buf);
	for (unsigned int f = 0; f < p.files; f++)
		close(p.in[f]);
	close(p.out);
	return status;
}
