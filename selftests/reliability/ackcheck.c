// SPDX-License-Identifier: GPL-2.0
/*
 * ackcheck: did every acknowledged write survive?
 *
 *   ackcheck write DEV STATE [--blocks N] [--bs B] [--threads T] [--seconds S]
 *                            [--seed S] [--max-errors N] [--bad FIRST:COUNT]...
 *                            [--make-it-fail]
 *   ackcheck verify DEV STATE [--bad FIRST:COUNT]...
 *
 * `write` overwrites random blocks of DEV (O_DIRECT, one pwrite per block;
 * thread t owns the blocks b with b % T == t, so each block's writes are
 * ordered) with contents that name the block and a generation. It keeps,
 * per block, the last generation the kernel acknowledged and the last one it
 * issued, and saves both to STATE at the end. A write error is counted and
 * the block's in-flight generation stays possible; after --max-errors
 * consecutive errors a thread stops (the device is gone). It prints
 * "acked=N errors=N errors_outside_bad=N first_errno=E".
 *
 * `verify` reads every block that was ever issued and checks its contents
 * hold a generation between the last acknowledged and the last issued one:
 * an acknowledged write may be overtaken only by a later write of ours. A
 * block never acknowledged may hold one of its issued generations or
 * anything that is not this run's (what it held before). Blocks carry the
 * run's --seed, so an earlier run's contents never pass for this run's.
 *
 * --make-it-fail marks the writer threads for the kernel's fault injection
 * (failslab/fail_page_alloc with task-filter) while they write.
 *
 * --bad FIRST:COUNT names blocks that are expected to fail (a backing with
 * bad blocks): `write` counts errors outside them separately, and `verify`
 * accepts a read error there.
 *
 * Exit 0 when every check holds, 1 otherwise, 2 on a usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAGIC 0x61636b636865636bULL	/* "ackcheck" */
#define MAX_BAD 16

struct block_state {
	uint32_t acked;		/* last acknowledged generation, 0: none */
	uint32_t issued;	/* last generation written or tried */
};

static struct {
	const char *dev;
	const char *state;
	uint64_t blocks;
	uint32_t bs;
	unsigned int threads;
	double seconds;
	uint64_t seed;
	unsigned int max_errors;
	int make_it_fail;
	uint64_t bad_first[MAX_BAD], bad_count[MAX_BAD];
	unsigned int nbad;
} opt = {
	.blocks = 4096, .bs = 4096, .threads = 4, .seconds = 10, .max_errors = 50,
};

static struct block_state *blk;
static int dev_fd;
static double t_end;

struct worker {
	pthread_t tid;
	unsigned int idx;
	uint64_t rng;
	uint64_t acked, errors, errors_outside_bad;
	int first_errno;
};

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int is_bad(uint64_t b)
{
	for (unsigned int i = 0; i < opt.nbad; i++)
		if (b >= opt.bad_first[i] && b < opt.bad_first[i] + opt.bad_count[i])
			return 1;
	return 0;
}

/* A run's blocks carry its seed, so what an earlier run left on the device
 * reads as "not ours" rather than as one of our generations. */
static uint64_t run_tag(void)
{
	return MAGIC ^ mix(opt.seed);
}

/* block b at generation g: a header, then words derived from both */
static void fill(uint64_t *buf, uint64_t b, uint32_t g)
{
	buf[0] = run_tag();
	buf[1] = b << 32 | g;
	for (size_t i = 2; i < opt.bs / 8; i++)
		buf[i] = mix(b * 0x100000001b3ULL ^ (uint64_t)g << 20 ^ i);
}

/* the generation the block holds, 0 if its contents are not ours or torn */
static uint32_t generation_of(const uint64_t *buf, uint64_t b)
{
	uint32_t g;

	if (buf[0] != run_tag() || buf[1] >> 32 != b)
		return 0;
	g = (uint32_t)buf[1];
	for (size_t i = 2; i < opt.bs / 8; i++)
		if (buf[i] != mix(b * 0x100000001b3ULL ^ (uint64_t)g << 20 ^ i))
			return 0;
	return g;
}

static void *writer(void *arg)
{
	struct worker *w = arg;
	uint64_t per = (opt.blocks + opt.threads - 1) / opt.threads;
	unsigned int consecutive = 0;
	uint64_t *buf;

	if (posix_memalign((void **)&buf, 4096, opt.bs))
		return NULL;
	/* fault injection with task-filter: only these threads' allocations
	 * may fail, not the ones that set the run up or save the state */
	if (opt.make_it_fail) {
		char path[64];
		int fd;

		snprintf(path, sizeof(path), "/proc/self/task/%d/make-it-fail", gettid());
		fd = open(path, O_WRONLY);
		if (fd < 0 || write(fd, "1", 1) != 1)
			fprintf(stderr, "ackcheck: %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	while (now() < t_end && consecutive < opt.max_errors) {
		uint64_t b;
		uint32_t g;
		ssize_t n;

		w->rng = mix(w->rng + 0x9e3779b97f4a7c15ULL);
		b = (w->rng % per) * opt.threads + w->idx;
		if (b >= opt.blocks)
			continue;
		g = ++blk[b].issued;
		fill(buf, b, g);
		n = pwrite(dev_fd, buf, opt.bs, (off_t)(b * opt.bs));
		if (n == (ssize_t)opt.bs) {
			blk[b].acked = g;
			w->acked++;
			consecutive = 0;
			continue;
		}
		if (!w->first_errno)
			w->first_errno = n < 0 ? errno : EIO;
		w->errors++;
		if (!is_bad(b))
			w->errors_outside_bad++;
		consecutive++;
	}
	if (opt.make_it_fail) {
		char path[64];
		int fd;

		snprintf(path, sizeof(path), "/proc/self/task/%d/make-it-fail", gettid());
		fd = open(path, O_WRONLY);
		if (fd >= 0) {
			if (write(fd, "0", 1) != 1)
				fprintf(stderr, "ackcheck: cannot clear %s\n", path);
			close(fd);
		}
	}
	free(buf);
	return NULL;
}

static int save_state(void)
{
	FILE *f = fopen(opt.state, "w");
	int ok;

	if (!f) {
		fprintf(stderr, "ackcheck: %s: %s\n", opt.state, strerror(errno));
		return -1;
	}
	ok = fwrite(&opt.seed, sizeof(opt.seed), 1, f) == 1 &&
	     fwrite(&opt.blocks, sizeof(opt.blocks), 1, f) == 1 &&
	     fwrite(&opt.bs, sizeof(opt.bs), 1, f) == 1 &&
	     fwrite(blk, sizeof(*blk), opt.blocks, f) == opt.blocks;
	if (fclose(f) || !ok) {
		fprintf(stderr, "ackcheck: writing %s failed\n", opt.state);
		return -1;
	}
	return 0;
}

static int load_state(void)
{
	FILE *f = fopen(opt.state, "r");
	int ok;

	if (!f) {
		fprintf(stderr, "ackcheck: %s: %s\n", opt.state, strerror(errno));
		return -1;
	}
	ok = fread(&opt.seed, sizeof(opt.seed), 1, f) == 1 &&
	     fread(&opt.blocks, sizeof(opt.blocks), 1, f) == 1 &&
	     fread(&opt.bs, sizeof(opt.bs), 1, f) == 1 &&
	     opt.blocks && opt.blocks < (1ULL << 32) && opt.bs >= 512 && !(opt.bs % 512);
	if (ok) {
		blk = calloc(opt.blocks, sizeof(*blk));
		ok = blk && fread(blk, sizeof(*blk), opt.blocks, f) == opt.blocks;
	}
	fclose(f);
	if (!ok)
		fprintf(stderr, "ackcheck: %s is not a state file of ackcheck write\n", opt.state);
	return ok ? 0 : -1;
}

static int do_write(void)
{
	struct worker *w = calloc(opt.threads, sizeof(*w));
	uint64_t acked = 0, errors = 0, outside = 0;
	int first_errno = 0;

	blk = calloc(opt.blocks, sizeof(*blk));
	if (!w || !blk)
		return 1;
	dev_fd = open(opt.dev, O_WRONLY | O_DIRECT);
	if (dev_fd < 0) {
		fprintf(stderr, "ackcheck: open %s: %s\n", opt.dev, strerror(errno));
		return 1;
	}
	t_end = now() + opt.seconds;
	for (unsigned int i = 0; i < opt.threads; i++) {
		w[i].idx = i;
		w[i].rng = mix(opt.seed + i);
		if (pthread_create(&w[i].tid, NULL, writer, &w[i])) {
			fprintf(stderr, "ackcheck: pthread_create failed\n");
			return 1;
		}
	}
	for (unsigned int i = 0; i < opt.threads; i++) {
		pthread_join(w[i].tid, NULL);
		acked += w[i].acked;
		errors += w[i].errors;
		outside += w[i].errors_outside_bad;
		if (!first_errno)
			first_errno = w[i].first_errno;
	}
	close(dev_fd);
	printf("acked=%" PRIu64 " errors=%" PRIu64 " errors_outside_bad=%" PRIu64
	       " first_errno=%s\n", acked, errors, outside,
	       first_errno ? strerrorname_np(first_errno) : "none");
	return save_state() ? 1 : 0;
}

static int do_verify(void)
{
	uint64_t checked = 0, lost = 0, unreadable = 0, bad_unreadable = 0, never = 0;
	uint64_t *buf;
	int fd;

	if (load_state())
		return 1;
	fd = open(opt.dev, O_RDONLY | O_DIRECT);
	if (fd < 0) {
		fprintf(stderr, "ackcheck: open %s: %s\n", opt.dev, strerror(errno));
		return 1;
	}
	if (posix_memalign((void **)&buf, 4096, opt.bs))
		return 1;
	for (uint64_t b = 0; b < opt.blocks; b++) {
		struct block_state s = blk[b];
		uint32_t g;

		if (!s.issued) {
			never++;
			continue;
		}
		if (pread(fd, buf, opt.bs, (off_t)(b * opt.bs)) != (ssize_t)opt.bs) {
			if (is_bad(b)) {
				bad_unreadable++;
				continue;
			}
			unreadable++;
			if (unreadable <= 5)
				fprintf(stderr, "ackcheck: block %" PRIu64 " unreadable: %s\n",
					b, strerror(errno));
			continue;
		}
		checked++;
		g = generation_of(buf, b);
		/* acknowledged: must hold that write or a later one of ours;
		 * never acknowledged: ours (any issued one) or what was there */
		if (s.acked ? (g < s.acked || g > s.issued) : (g > s.issued)) {
			lost++;
			if (lost <= 5)
				fprintf(stderr, "ackcheck: block %" PRIu64 ": holds generation %u, "
					"acknowledged %u, issued %u\n", b, g, s.acked, s.issued);
		}
	}
	close(fd);
	free(buf);
	printf("checked=%" PRIu64 " lost=%" PRIu64 " unreadable=%" PRIu64
	       " unreadable_bad=%" PRIu64 " never_written=%" PRIu64 "\n",
	       checked, lost, unreadable, bad_unreadable, never);
	return lost || unreadable ? 1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ackcheck write DEV STATE [--blocks N] [--bs B] [--threads T] [--seconds S]\n"
		"                        [--seed S] [--max-errors N] [--bad FIRST:COUNT]... [--make-it-fail]\n"
		"       ackcheck verify DEV STATE [--bad FIRST:COUNT]...\n"
		"Writes blocks that name their generation, remembers which writes were\n"
		"acknowledged, and later checks that every acknowledged write reads back.\n");
}

int main(int argc, char **argv)
{
	int verify;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc < 4 || (strcmp(argv[1], "write") && strcmp(argv[1], "verify"))) {
		usage(stderr);
		return 2;
	}
	verify = !strcmp(argv[1], "verify");
	opt.dev = argv[2];
	opt.state = argv[3];
	for (int i = 4; i < argc; i++) {
		if (!strcmp(argv[i], "--make-it-fail")) {
			opt.make_it_fail = 1;
			continue;
		}
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v) {
			fprintf(stderr, "ackcheck: %s needs a value\n", argv[i]);
			return 2;
		}
		if (!strcmp(argv[i], "--blocks"))
			opt.blocks = strtoull(v, NULL, 0);
		else if (!strcmp(argv[i], "--bs"))
			opt.bs = strtoul(v, NULL, 0);
		else if (!strcmp(argv[i], "--threads"))
			opt.threads = strtoul(v, NULL, 0);
		else if (!strcmp(argv[i], "--seconds"))
			opt.seconds = strtod(v, NULL);
		else if (!strcmp(argv[i], "--seed"))
			opt.seed = strtoull(v, NULL, 0);
		else if (!strcmp(argv[i], "--max-errors"))
			opt.max_errors = strtoul(v, NULL, 0);
		else if (!strcmp(argv[i], "--bad") && opt.nbad < MAX_BAD &&
			 sscanf(v, "%" SCNu64 ":%" SCNu64, &opt.bad_first[opt.nbad],
				&opt.bad_count[opt.nbad]) == 2)
			opt.nbad++;
		else {
			fprintf(stderr, "ackcheck: bad argument %s %s\n", argv[i], v);
			return 2;
		}
		i++;
	}
	if (!opt.blocks || opt.blocks >= (1ULL << 32) || opt.bs < 512 || opt.bs % 512 ||
	    !opt.threads || opt.threads > 64) {
		fprintf(stderr, "ackcheck: --blocks 1..2^32-1, --bs a multiple of 512, --threads 1..64\n");
		return 2;
	}
	return verify ? do_verify() : do_write();
}
