/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared frame of the fuzz/ tests: a seeded, reproducible case generator,
 * a time budget, and one way to report.
 *
 * A run is a sequence of cases. Case i gets its own seed, derived from the
 * run's seed, and everything the case does is drawn from a PRNG seeded with
 * it, so `PROG --replay CASE_SEED` repeats exactly that case. Options:
 *
 *   --seconds N   time budget (default $IOURING_BPF_FUZZ_SECONDS, else 20)
 *   --seed S      the run's seed (default: from the clock; always printed)
 *   --cases N     stop after N cases (default: only the time budget)
 *   --replay S    run the one case whose seed is S, then stop
 *   -v            describe every case, not only the failing one
 *
 * The last line of a run is "fuzz NAME: cases=N UNIT=M failures=F seconds=T
 * seed=S"; with $IOURING_BPF_FUZZ_STATS set, the same fields are appended to
 * that file as one tab-separated line (make fuzz collects them for README).
 */
#ifndef IOURING_BPF_FUZZ_H
#define IOURING_BPF_FUZZ_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct fuzz_rng {
	uint64_t s;
};

/* splitmix64: small, fast, and every seed (including 0) is a good one */
static inline uint64_t fuzz_next(struct fuzz_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* uniform in [0, n); n == 0 gives 0 */
static inline uint64_t fuzz_below(struct fuzz_rng *r, uint64_t n)
{
	return n ? fuzz_next(r) % n : 0;
}

/* true with probability num/den */
static inline bool fuzz_chance(struct fuzz_rng *r, unsigned int num, unsigned int den)
{
	return fuzz_below(r, den) < num;
}

/* one of the values in a table, or (1 in 8) any 64-bit value: fuzzers mix
 * values near the interesting edges with plain noise */
static inline uint64_t fuzz_pick(struct fuzz_rng *r, const uint64_t *edges, size_t n)
{
	if (!n || fuzz_chance(r, 1, 8))
		return fuzz_next(r);
	return edges[fuzz_below(r, n)];
}

struct fuzz_run {
	const char *name;	/* e.g. "sqe" */
	const char *unit;	/* what units count, e.g. "sqes" */
	uint64_t seed;
	double seconds;
	uint64_t max_cases;
	bool replay;
	bool verbose;
	uint64_t cases;
	uint64_t units;
	uint64_t failures;
	struct timespec t0;
};

static inline double fuzz_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline void fuzz_usage(const char *prog, FILE *f)
{
	fprintf(f,
		"usage: %s [--seconds N] [--seed S] [--cases N] [--replay CASE_SEED] [-v]\n"
		"  --seconds N   time budget (default $IOURING_BPF_FUZZ_SECONDS, else 20)\n"
		"  --seed S      seed of the run (default: from the clock)\n"
		"  --cases N     stop after N cases\n"
		"  --replay S    run only the case with seed S (printed by a failing run)\n"
		"  -v            describe every case\n", prog);
}

/* Parses the common options; returns 0, 1 for --help (caller exits 0), or
 * -1 on a bad argument (message printed). */
static inline int fuzz_init(struct fuzz_run *run, const char *name, const char *unit,
			    int argc, char **argv)
{
	const char *env = getenv("IOURING_BPF_FUZZ_SECONDS");

	memset(run, 0, sizeof(*run));
	run->name = name;
	run->unit = unit;
	run->seconds = env && *env ? strtod(env, NULL) : 20;
	run->seed = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fuzz_usage(argv[0], stdout);
			return 1;
		} else if (!strcmp(a, "-v")) {
			run->verbose = true;
		} else if (v && !strcmp(a, "--seconds")) {
			run->seconds = strtod(v, NULL);
			i++;
		} else if (v && !strcmp(a, "--seed")) {
			run->seed = strtoull(v, NULL, 0);
			i++;
		} else if (v && !strcmp(a, "--cases")) {
			run->max_cases = strtoull(v, NULL, 0);
			i++;
		} else if (v && !strcmp(a, "--replay")) {
			run->seed = strtoull(v, NULL, 0);
			run->replay = true;
			run->verbose = true;
			i++;
		} else {
			fprintf(stderr, "%s: unknown or incomplete argument '%s'\n", argv[0], a);
			fuzz_usage(argv[0], stderr);
			return -1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &run->t0);
	if (run->replay)
		printf("fuzz %s: replaying case seed=%#" PRIx64 "\n", name, run->seed);
	else
		printf("fuzz %s: seed=%#" PRIx64 " seconds=%.0f (replay a run with --seed %#" PRIx64 ")\n",
		       name, run->seed, run->seconds, run->seed);
	fflush(stdout);
	return 0;
}

static inline double fuzz_elapsed(const struct fuzz_run *run)
{
	return fuzz_now() - (run->t0.tv_sec + run->t0.tv_nsec / 1e9);
}

/* Next case: false when the budget is spent. *case_seed is the seed to
 * give the case's PRNG and to print if it fails. */
static inline bool fuzz_next_case(struct fuzz_run *run, uint64_t *case_seed)
{
	if (run->replay) {
		if (run->cases)
			return false;
		*case_seed = run->seed;
	} else {
		struct fuzz_rng r = { run->seed ^ (run->cases * 0xd1b54a32d192ed03ULL) };

		if (run->max_cases && run->cases >= run->max_cases)
			return false;
		if (!run->max_cases && run->cases && fuzz_elapsed(run) >= run->seconds)
			return false;
		*case_seed = fuzz_next(&r);
	}
	run->cases++;
	return true;
}

/* A failing case: the input is described by the caller with fuzz_say()
 * before or after; this prints how to replay it. */
static inline void fuzz_failed(struct fuzz_run *run, uint64_t case_seed, const char *fmt, ...)
{
	va_list ap;

	run->failures++;
	fprintf(stderr, "fuzz %s: FAIL case seed=%#" PRIx64 ": ", run->name, case_seed);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nfuzz %s: replay with: --replay %#" PRIx64 "\n", run->name, case_seed);
	fflush(stderr);
}

/* Ends the run: prints the summary line (and the stats line); returns the
 * exit status for the test runner. */
static inline int fuzz_finish(struct fuzz_run *run)
{
	const char *stats = getenv("IOURING_BPF_FUZZ_STATS");
	double secs = fuzz_elapsed(run);

	printf("fuzz %s: cases=%" PRIu64 " %s=%" PRIu64 " failures=%" PRIu64
	       " seconds=%.1f seed=%#" PRIx64 "\n", run->name, run->cases, run->unit,
	       run->units, run->failures, secs, run->seed);
	fflush(stdout);
	if (stats && *stats && !run->replay) {
		FILE *f = fopen(stats, "a");

		if (f) {
			fprintf(f, "%s\t%" PRIu64 "\t%s\t%" PRIu64 "\t%" PRIu64 "\t%.1f\t%#" PRIx64 "\n",
				run->name, run->cases, run->unit, run->units, run->failures,
				secs, run->seed);
			fclose(f);
		}
	}
	if (!run->failures && !run->cases) {
		fprintf(stderr, "fuzz %s: no case ran\n", run->name);
		return 1;
	}
	return run->failures ? 1 : 0;
}

#endif
