/* SPDX-License-Identifier: GPL-2.0 */
/* Timing helpers shared by the benchmarks (bench/) and the examples that time themselves. */
#ifndef IOURING_BPF_BENCH_H
#define IOURING_BPF_BENCH_H

#include <getopt.h>
#include <stdlib.h>
#include <time.h>

/* getopt_long() options of a benchmark with short options only: --help */
static inline const struct option *bench_long_options(void)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};

	return opts;
}

static inline double bench_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of v[0..n); sorts v. */
static inline double bench_median(double *v, int n)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
