// SPDX-License-Identifier: GPL-2.0
/*
 * nop_chain: the benchmark of the io_uring BPF loop RFC, side by side.
 *
 *   2-LINK  pairs of NOPs, the first with IOSQE_IO_LINK, one
 *           io_uring_submit_and_wait(2) per pair (liburing, no BPF)
 *   BPF-1   the nops policy, one NOP in flight, all inside one io_uring_enter()
 *   BPF-8   the same with 8 NOPs in flight
 *   (BPF-0  the same policy taking N steps with no I/O: the loop's own cost,
 *           and the same step in a non-sleepable program, which the loop
 *           calls through its struct_ops trampoline every step)
 *
 * Same N for each, interleaved rounds, medians. Prints a table and writes
 * JSON: {"n", "rounds", "link2_ms", "bpf1_ms", "bpf8_ms", "speedup_bpf1",
 * "speedup_bpf8", "step_ns" (BPF-0's cost of one empty loop step),
 * "link2_ns", "bpf1_ns", "bpf8_ns" (per NOP), "link2_enters_per_nop",
 * "bpf_enters_per_nop", "step_ns_trampoline" (the empty step through the
 * trampoline)}. Run it on one CPU (make bench does, in the VM).
 */
#define _GNU_SOURCE
#include <bpf/libbpf.h>
#include <errno.h>
#include <getopt.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <liburing-bpf.h>
#include "../bench.h"
#include "nops.skel.h"
#include "step_trampoline.skel.h"

/* 2-LINK: returns elapsed ms, or a negative errno. */
static double run_link2(struct io_uring *ring, unsigned long n)
{
	double start = bench_now_ms();

	for (unsigned long i = 0; i < n; i += 2) {
		struct io_uring_sqe *a = io_uring_get_sqe(ring), *b = io_uring_get_sqe(ring);
		struct io_uring_cqe *cqe;
		unsigned int head, seen = 0;
		int ret;

		io_uring_prep_nop(a);
		a->flags |= IOSQE_IO_LINK;
		io_uring_prep_nop(b);
		ret = io_uring_submit_and_wait(ring, 2);
		if (ret != 2)
			return ret < 0 ? ret : -EIO;
		io_uring_for_each_cqe(ring, head, cqe) {
			if (cqe->res < 0)
				return cqe->res;
			seen++;
		}
		io_uring_cq_advance(ring, seen);
	}
	return bench_now_ms() - start;
}

struct bpf_variant {
	struct iouring_bpf_ring ring;
	struct nops *skel;
	struct bpf_link *link;
};

static int bpf_variant_setup(struct bpf_variant *v, unsigned long n, unsigned int inflight)
{
	int ret = iouring_bpf_ring_init(&v->ring, 16, 0, IOURING_BPF_RING_FLAGS);

	if (ret) {
		fprintf(stderr, "nop_chain: ring setup: %s\n", strerror(-ret));
		return ret;
	}
	v->skel = nops__open();
	if (!v->skel)
		return -errno;
	v->skel->rodata->iou_geom = v->ring.geom;
	v->skel->rodata->nop_total = n;
	v->skel->rodata->nop_inflight = inflight;
	v->skel->struct_ops.nops_ops->ring_fd = v->ring.fd;	/* read at load */
	ret = nops__load(v->skel);
	if (ret) {
		fprintf(stderr, "nop_chain: loading the nops policy: %s\n", strerror(-ret));
		return ret;
	}
	v->link = bpf_map__attach_struct_ops(v->skel->maps.nops_ops);
	if (!v->link) {
		ret = -errno;
		fprintf(stderr, "nop_chain: attaching the nops policy: %s\n", strerror(-ret));
		return ret;
	}
	return 0;
}

static double run_bpf(struct bpf_variant *v, unsigned long n)
{
	struct nops__bss *b = v->skel->bss;
	double start;
	int ret;

	b->nop_submitted = b->nop_completed = b->nop_bad_cqes = b->nop_steps = 0;
	start = bench_now_ms();
	ret = iouring_bpf_ring_run(&v->ring);
	if (ret)
		return ret;
	if (b->iou_exit_status || b->nop_bad_cqes ||
	    (v->skel->rodata->nop_inflight ? b->nop_completed != n : b->nop_steps != n))
		return -EIO;
	return bench_now_ms() - start;
}

/* BPF-0 through the trampoline (step_trampoline.bpf.c): patch 40's before */
struct trampoline_variant {
	struct iouring_bpf_ring ring;
	struct step_trampoline *skel;
	struct bpf_link *link;
};

static int trampoline_setup(struct trampoline_variant *v, unsigned long n)
{
	int ret = iouring_bpf_ring_init(&v->ring, 16, 0, IOURING_BPF_RING_FLAGS);

	if (ret) {
		fprintf(stderr, "nop_chain: ring setup: %s\n", strerror(-ret));
		return ret;
	}
	v->skel = step_trampoline__open();
	if (!v->skel)
		return -errno;
	v->skel->rodata->step_total = n;
	v->skel->struct_ops.trampoline_ops->ring_fd = v->ring.fd;
	ret = step_trampoline__load(v->skel);
	if (!ret && !(v->link = bpf_map__attach_struct_ops(v->skel->maps.trampoline_ops)))
		ret = -errno;
	if (ret)
		fprintf(stderr, "nop_chain: the non-sleepable empty step: %s\n", strerror(-ret));
	return ret;
}

static double run_trampoline(struct trampoline_variant *v, unsigned long n)
{
	double start;
	int ret;

	v->skel->bss->steps = 0;
	start = bench_now_ms();
	ret = iouring_bpf_ring_run(&v->ring);
	if (ret)
		return ret;
	if (v->skel->bss->steps != n)
		return -EIO;
	return bench_now_ms() - start;
}

static void trampoline_free(struct trampoline_variant *v)
{
	bpf_link__destroy(v->link);
	step_trampoline__destroy(v->skel);
	iouring_bpf_ring_exit(&v->ring);
}

static void bpf_variant_free(struct bpf_variant *v)
{
	bpf_link__destroy(v->link);
	nops__destroy(v->skel);
	iouring_bpf_ring_exit(&v->ring);
}

/* -p: one variant alone, so a profile holds nothing else */
static int run_only(const char *name, unsigned long n, int rounds)
{
	static const struct { const char *name; int inflight; } bpf[] = {
		{ "BPF-0", 0 }, { "BPF-1", 1 }, { "BPF-8", 8 },
	};
	struct bpf_variant v = {};
	struct io_uring ring;
	double total = 0, t;
	int inflight = -1, ret;

	for (size_t i = 0; i < sizeof(bpf) / sizeof(bpf[0]); i++)
		if (!strcmp(name, bpf[i].name))
			inflight = bpf[i].inflight;
	if (!strcmp(name, "2-LINK")) {
		ret = io_uring_queue_init(16, &ring, IORING_SETUP_SINGLE_ISSUER |
						 IORING_SETUP_DEFER_TASKRUN);
		if (ret) {
			fprintf(stderr, "nop_chain: io_uring_queue_init: %s\n", strerror(-ret));
			return 1;
		}
		for (int r = 0; r < rounds && total >= 0; r++)
			total = (t = run_link2(&ring, n)) < 0 ? t : total + t;
		io_uring_queue_exit(&ring);
	} else if (inflight >= 0) {
		if (bpf_variant_setup(&v, n, inflight))
			total = -1;
		for (int r = 0; r < rounds && total >= 0; r++)
			total = (t = run_bpf(&v, n)) < 0 ? t : total + t;
		bpf_variant_free(&v);
	} else {
		fprintf(stderr, "nop_chain: -p %s: not 2-LINK, BPF-0, BPF-1 or BPF-8\n", name);
		return 2;
	}
	if (total < 0) {
		fprintf(stderr, "nop_chain: %s failed\n", name);
		return 1;
	}
	printf("%s: %.1f ns per NOP (%lu x %d)\n", name, total * 1e6 / n / rounds, n, rounds);
	return 0;
}

static void usage(FILE *f, const char *argv0)
{
	fprintf(f, "usage: %s [-n NOPS] [-r ROUNDS] [-j FILE.json] [-p VARIANT]\n"
		   "  -n NOPS     NOPs per run, even (default 200000)\n"
		   "  -r ROUNDS   interleaved rounds, median reported (default 5)\n"
		   "  -j FILE     also write the results as JSON\n"
		   "  -p VARIANT  run only 2-LINK, BPF-0, BPF-1 or BPF-8, N NOPs x ROUNDS, and\n"
		   "              print its ns per NOP: a profiler's workload (no table, no JSON)\n"
		   "  -h, --help  this text\n", argv0);
}

int main(int argc, char **argv)
{
	unsigned long n = 200000;
	int rounds = 5, opt, status = 1;
	const char *json = NULL;
	struct bpf_variant bpf0 = {}, bpf1 = {}, bpf8 = {};
	struct trampoline_variant bpf0t = {};
	struct io_uring link_ring;
	bool link_ring_ok = false;

	const char *only = NULL;

	while ((opt = getopt_long(argc, argv, "n:r:j:p:h", bench_long_options(), NULL)) != -1) {
		switch (opt) {
		case 'n': n = strtoul(optarg, NULL, 0); break;
		case 'r': rounds = atoi(optarg); break;
		case 'j': json = optarg; break;
		case 'p': only = optarg; break;
		case 'h': usage(stdout, argv[0]); return 0;
		default: usage(stderr, argv[0]); return 2;
		}
	}
	if (n < 2 || n % 2 || rounds < 1 || rounds > 100) {
		usage(stderr, argv[0]);
		return 2;
	}
	if (only)
		return run_only(only, n, rounds);

	double t_link[100], t_b0[100], t_b1[100], t_b8[100];
	double t_b0t[100];
	int ret = io_uring_queue_init(16, &link_ring, IORING_SETUP_SINGLE_ISSUER |
							IORING_SETUP_DEFER_TASKRUN);
	if (ret) {
		fprintf(stderr, "nop_chain: io_uring_queue_init: %s\n", strerror(-ret));
		goto out;
	}
	link_ring_ok = true;
	if (bpf_variant_setup(&bpf0, n, 0) || bpf_variant_setup(&bpf1, n, 1) ||
	    bpf_variant_setup(&bpf8, n, 8) || trampoline_setup(&bpf0t, n))
		goto out;

	for (int r = 0; r < rounds; r++) {
		t_link[r] = run_link2(&link_ring, n);
		t_b0[r] = run_bpf(&bpf0, n);
		t_b1[r] = run_bpf(&bpf1, n);
		t_b8[r] = run_bpf(&bpf8, n);
		t_b0t[r] = run_trampoline(&bpf0t, n);
		if (t_link[r] < 0 || t_b0[r] < 0 || t_b1[r] < 0 || t_b8[r] < 0 || t_b0t[r] < 0) {
			fprintf(stderr, "nop_chain: round %d failed (%.0f %.0f %.0f)\n", r,
				t_link[r], t_b1[r], t_b8[r]);
			goto out;
		}
	}
	double link2 = bench_median(t_link, rounds), b0 = bench_median(t_b0, rounds);
	double b1 = bench_median(t_b1, rounds), b8 = bench_median(t_b8, rounds);
	double b0t = bench_median(t_b0t, rounds);

	printf("nop_chain: %lu NOPs per run, %d interleaved rounds, medians\n", n, rounds);
	printf("  %-8s %12s %14s %9s\n", "variant", "time (ms)", "ns per NOP", "speedup");
	printf("  %-8s %12.1f %14.1f %8.2fx\n", "2-LINK", link2, link2 * 1e6 / n, 1.0);
	printf("  %-8s %12.1f %14.1f %8.2fx\n", "BPF-1", b1, b1 * 1e6 / n, link2 / b1);
	printf("  %-8s %12.1f %14.1f %8.2fx\n", "BPF-8", b8, b8 * 1e6 / n, link2 / b8);
	printf("  (BPF-0: %lu empty loop steps, no I/O: %.1f ns per step)\n", n, b0 * 1e6 / n);
	printf("  (BPF-0 non-sleepable, through its trampoline every step: %.1f ns, %.2fx)\n",
	       b0t * 1e6 / n, b0t / b0);

	if (json) {
		FILE *f = fopen(json, "w");

		if (!f) {
			fprintf(stderr, "nop_chain: %s: %s\n", json, strerror(errno));
			goto out;
		}
		fprintf(f, "{\"n\": %lu, \"rounds\": %d, \"link2_ms\": %.3f, \"bpf1_ms\": %.3f, "
			   "\"bpf8_ms\": %.3f, \"speedup_bpf1\": %.3f, \"speedup_bpf8\": %.3f, "
			   "\"step_ns\": %.2f, \"link2_ns\": %.2f, \"bpf1_ns\": %.2f, "
			   "\"bpf8_ns\": %.2f, \"link2_enters_per_nop\": 0.5, "
			   "\"bpf_enters_per_nop\": %.8f, \"step_ns_trampoline\": %.2f",
			n, rounds, link2, b1, b8, link2 / b1, link2 / b8, b0 * 1e6 / n,
			link2 * 1e6 / n, b1 * 1e6 / n, b8 * 1e6 / n, 1.0 / n, b0t * 1e6 / n);
		fprintf(f, "}\n");
		fclose(f);
	}
	status = 0;
out:
	trampoline_free(&bpf0t);
	bpf_variant_free(&bpf8);
	bpf_variant_free(&bpf1);
	bpf_variant_free(&bpf0);
	if (link_ring_ok)
		io_uring_queue_exit(&link_ring);
	return status;
}
