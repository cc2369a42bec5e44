/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared frame of the fuzz/ tests (fuzz_common.c): a seeded, reproducible
 * case generator, a time budget, one way to report, a watchdog for cases
 * in timed phases, and the kernel's reports.
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

/* ------------------------------------------------------------------ */
/* the run                                                            */

void fuzz_usage(const char *prog, FILE *f);

/* Parses the common options; returns 0, 1 for --help (caller exits 0), or
 * -1 on a bad argument (message printed). */
int fuzz_init(struct fuzz_run *run, const char *name, const char *unit, int argc, char **argv);

double fuzz_elapsed(const struct fuzz_run *run);

/* Next case: false when the budget is spent. *case_seed is the seed to
 * give the case's PRNG and to print if it fails. */
bool fuzz_next_case(struct fuzz_run *run, uint64_t *case_seed);

/* A failing case: the input is described by the caller (stderr)
 * before or after; this prints how to replay it. */
__attribute__((format(printf, 3, 4)))
void fuzz_failed(struct fuzz_run *run, uint64_t case_seed, const char *fmt, ...);

/* Ends the run: prints the summary line (and the stats line); returns the
 * exit status for the test runner. */
int fuzz_finish(struct fuzz_run *run);

/* ------------------------------------------------------------------ */
/* cases in timed phases (fuzz/sqe, fuzz/lifecycle)                   */

/*
 * A case that stays in one phase past its bound is a hang: the watchdog
 * names the case seed, describes the case and exits 1. @sig is the
 * signal the fuzzer interrupts its own waits with: the watchdog thread
 * never takes it.
 */
void fuzz_watchdog_start(const struct fuzz_run *run, void (*describe)(FILE *f), int sig);

/* the case the watchdog names from now on */
void fuzz_watchdog_case(uint64_t case_seed);

/* entering phase @what, allowed @secs (0: no bound) */
void fuzz_phase(const char *what, double secs);

/*
 * One of the case's failures: the first names the case seed (fuzz_failed())
 * and describes the case, the later ones only add their message.
 */
void fuzz_case_fail(struct fuzz_run *run, uint64_t case_seed, bool *case_failed,
		    void (*describe)(FILE *f), const char *msg);

/* ------------------------------------------------------------------ */
/* kernel reports                                                     */

/*
 * Kernel reports (WARN, BUG, KASAN, lockdep...) seen while a fuzz case
 * ran. The test runner fails a test on any report in dmesg, but only a
 * fuzzer knows which case it was in: after each case it reads what the
 * kernel logged meanwhile (from /dev/kmsg, without blocking) and names
 * the case seed. A report can trail its cause a little, so the previous
 * case is named too.
 */

/* Start watching from now on; false if /dev/kmsg cannot be read. */
bool kmsg_watch_start(void);

/* after the case @case_seed: a report logged meanwhile fails it through @fail,
 * which also names the case before */
void kmsg_watch_case(uint64_t case_seed, void (*fail)(const char *fmt, ...));

#endif
