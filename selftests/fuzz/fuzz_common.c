// SPDX-License-Identifier: GPL-2.0
/*
 * What every fuzz/ program shares (declared in fuzz.h): the options, the
 * sequence of cases and the summary; the watchdog of cases that run in
 * timed phases; and the kernel reports logged during a case.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "fuzz.h"

/* ------------------------------------------------------------------ */
/* the run                                                            */

void fuzz_usage(const char *prog, FILE *f)
{
	fprintf(f,
		"usage: %s [--seconds N] [--seed S] [--cases N] [--replay CASE_SEED] [-v]\n"
		"  --seconds N   time budget (default $IOURING_BPF_FUZZ_SECONDS, else 20)\n"
		"  --seed S      seed of the run (default: from the clock)\n"
		"  --cases N     stop after N cases\n"
		"  --replay S    run only the case with seed S (printed by a failing run)\n"
		"  -v            describe every case\n", prog);
}

int fuzz_init(struct fuzz_run *run, const char *name, const char *unit, int argc, char **argv)
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

double fuzz_elapsed(const struct fuzz_run *run)
{
	return fuzz_now() - (run->t0.tv_sec + run->t0.tv_nsec / 1e9);
}

bool fuzz_next_case(struct fuzz_run *run, uint64_t *case_seed)
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

void fuzz_failed(struct fuzz_run *run, uint64_t case_seed, const char *fmt, ...)
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

int fuzz_finish(struct fuzz_run *run)
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

/* ------------------------------------------------------------------ */
/* cases in timed phases                                              */

static const char *wd_name;
static void (*wd_describe)(FILE *f);
static _Atomic double wd_deadline;
static const char *_Atomic wd_phase = "setup";
static _Atomic uint64_t wd_seed;

static void *watchdog(void *arg)
{
	(void)arg;
	for (;;) {
		double d = atomic_load(&wd_deadline);

		usleep(200 * 1000);
		if (d > 0 && fuzz_now() > d) {
			uint64_t s = atomic_load(&wd_seed);

			fprintf(stderr, "fuzz %s: FAIL case seed=%#" PRIx64 ": still in '%s' after its time bound\n"
				"fuzz %s: replay with: --replay %#" PRIx64 "\n",
				wd_name, s, atomic_load(&wd_phase), wd_name, s);
			wd_describe(stderr);
			_exit(1);
		}
	}
	return NULL;
}

void fuzz_watchdog_start(const struct fuzz_run *run, void (*describe)(FILE *f), int sig)
{
	pthread_t th;
	sigset_t block;

	wd_name = run->name;
	wd_describe = describe;
	/* the thread inherits the blocked signal */
	sigemptyset(&block);
	sigaddset(&block, sig);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	pthread_create(&th, NULL, watchdog, NULL);
	pthread_sigmask(SIG_UNBLOCK, &block, NULL);
}

void fuzz_watchdog_case(uint64_t case_seed)
{
	atomic_store(&wd_seed, case_seed);
}

void fuzz_phase(const char *what, double secs)
{
	atomic_store(&wd_phase, what);
	atomic_store(&wd_deadline, secs > 0 ? fuzz_now() + secs : 0);
}

void fuzz_case_fail(struct fuzz_run *run, uint64_t case_seed, bool *case_failed,
		    void (*describe)(FILE *f), const char *msg)
{
	if (!*case_failed) {
		fuzz_failed(run, case_seed, "%s", msg);
		describe(stderr);
	} else {
		fprintf(stderr, "fuzz %s: and: %s\n", run->name, msg);
	}
	fflush(stderr);
	*case_failed = true;
}

/* ------------------------------------------------------------------ */
/* kernel reports                                                     */

/* the phrases of scripts/kernel-report.re */
static const char *const kmsg_report_words[] = {
	"WARNING:", "BUG:", "Oops", "KASAN", "UBSAN:", "Kernel panic",
	"general protection fault", "blocked for more than", "detected stalls",
	"lockdep is turned off", "DEBUG_LOCKS_WARN_ON", "possible circular locking",
	"possible recursive locking", "inconsistent lock state", "suspicious RCU usage",
	"lockdep_assert",
};

static int kmsg_fd = -1;

/* Start watching from now on; false if /dev/kmsg cannot be read. */
bool kmsg_watch_start(void)
{
	kmsg_fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kmsg_fd < 0)
		return false;
	lseek(kmsg_fd, 0, SEEK_END);
	return true;
}

/*
 * The first report logged since the last call, copied to line (empty if
 * none). Reads everything logged meanwhile.
 */
static bool kmsg_watch_report(char *line, size_t size)
{
	char rec[2048];
	bool found = false;

	line[0] = 0;
	if (kmsg_fd < 0)
		return false;
	for (;;) {
		ssize_t n = read(kmsg_fd, rec, sizeof(rec) - 1);

		if (n < 0) {
			if (errno == EPIPE)	/* overwritten records: go on */
				continue;
			break;
		}
		rec[n] = 0;
		if (found)
			continue;
		/* "prio,seq,time,flags;message" */
		char *msg = strchr(rec, ';');

		msg = msg ? msg + 1 : rec;
		for (size_t i = 0; i < sizeof(kmsg_report_words) / sizeof(kmsg_report_words[0]); i++) {
			if (strstr(msg, kmsg_report_words[i])) {
				size_t len = strcspn(msg, "\n");

				if (len >= size)
					len = size - 1;
				memcpy(line, msg, len);
				line[len] = 0;
				found = true;
				break;
			}
		}
	}
	return found;
}

void kmsg_watch_case(uint64_t case_seed, void (*fail)(const char *fmt, ...))
{
	static uint64_t prev_seed;
	char line[512];

	if (kmsg_watch_report(line, sizeof(line)))
		fail("kernel report during this case (or the one before, seed %#" PRIx64 "): %s",
		     prev_seed, line);
	prev_seed = case_seed;
}
