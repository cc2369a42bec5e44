// SPDX-License-Identifier: GPL-2.0
/*
 * vblk/ tests: disk lookup by serial, rings, one-command helpers, O_DIRECT
 * block device I/O, patterns; main() runs the test named by argv[1].
 *
 * usage: vblk_test chardev|data|discard-zeroes|refusals|bounce-efault|permissions|iopoll|remove
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "vblk.h"

int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int ret = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		ret = ferror(f) ? -EIO : -ENODATA;
	fclose(f);
	if (!ret)
		buf[strcspn(buf, "\n")] = '\0';
	return ret;
}

int read_u64(const char *name, const char *rel, uint64_t *v)
{
	char path[256], line[64], *end;
	int ret;

	snprintf(path, sizeof(path), "/sys/block/%s/%s", name, rel);
	ret = read_line(path, line, sizeof(line));
	if (ret)
		return ret;
	errno = 0;
	*v = strtoull(line, &end, 10);
	if (errno || end == line)
		return -EINVAL;
	return 0;
}

static int lookup(const char *serial, struct disk *d, bool report)
{
	char path[320], line[64];
	struct dirent *de;
	uint64_t v;
	DIR *dir;
	int found = 0, ret;

	memset(d, 0, sizeof(*d));
	dir = opendir("/sys/block");
	if (!CHECK(dir, "opendir /sys/block: %s", strerror(errno)))
		return -errno;
	while ((de = readdir(dir))) {
		if (strncmp(de->d_name, "vd", 2))
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/serial", de->d_name);
		if (read_line(path, line, sizeof(line)) || strcmp(line, serial))
			continue;
		if (!CHECK(!found, "two disks with serial %s: %s and %s", serial, d->name,
			   de->d_name)) {
			closedir(dir);
			return -EEXIST;
		}
		found = 1;
		snprintf(d->name, sizeof(d->name), "%.31s", de->d_name);
	}
	closedir(dir);
	if (!found && !report)
		return -ENODEV;
	if (!CHECK(found, "no disk with serial %s in /sys/block/vd*/serial", serial))
		return -ENODEV;
	snprintf(d->serial, sizeof(d->serial), "%s", serial);
	snprintf(d->blk, sizeof(d->blk), "/dev/%s", d->name);
	ret = iouring_bpf_vblk_char_path(d->blk, d->chr, sizeof(d->chr));
	if (ret && !report)
		return ret;
	if (!CHECK_OK(ret, "iouring_bpf_vblk_char_path"))
		return ret;
	if ((ret = read_u64(d->name, "size", &d->sectors)) ||
	    (ret = read_u64(d->name, "queue/logical_block_size", &v)))
		goto bad;
	d->lbs = (unsigned int)v;
	if ((ret = read_u64(d->name, "queue/max_segments", &v)))
		goto bad;
	d->max_segments = (unsigned int)v;
	if ((ret = read_u64(d->name, "queue/max_hw_sectors_kb", &v)))
		goto bad;
	d->max_hw_bytes = v * 1024;
	if ((ret = read_u64(d->name, "queue/discard_max_hw_bytes", &d->discard_max)) ||
	    (ret = read_u64(d->name, "queue/write_zeroes_max_bytes", &d->wz_max)))
		goto bad;
	if (!report)
		return 0;
	printf("%s: %s, %s, %llu sectors, lbs %u, max_segments %u, max_hw_bytes %llu, "
	       "discard_max %llu, write_zeroes_max %llu\n", serial, d->blk, d->chr,
	       (unsigned long long)d->sectors, d->lbs, d->max_segments,
	       (unsigned long long)d->max_hw_bytes, (unsigned long long)d->discard_max,
	       (unsigned long long)d->wz_max);
	return 0;
bad:
	if (report)
		CHECK(0, "reading /sys/block/%s/queue: %s", d->name, strerror(-ret));
	return ret;
}

int disk_find(const char *serial, struct disk *d)
{
	return lookup(serial, d, true);
}

int disk_wait(const char *serial, struct disk *d, unsigned int secs)
{
	struct stat st;
	unsigned int i;

	for (i = 0; i < secs * 10; i++) {
		if (!lookup(serial, d, false) && !stat(d->chr, &st) && S_ISCHR(st.st_mode) &&
		    !stat(d->blk, &st) && S_ISBLK(st.st_mode))
			return 0;
		usleep(100 * 1000);
	}
	return lookup(serial, d, true) ?: -ETIMEDOUT;
}

int ring_init(struct io_uring *ring, unsigned int entries, unsigned int flags)
{
	int ret = io_uring_queue_init(entries, ring, IORING_SETUP_SQE128 | flags);

	CHECK_OK(ret, "io_uring_queue_init(SQE128)");
	return ret;
}

struct io_uring_sqe *sqe_get(struct io_uring *ring)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	CHECK(sqe, "no free SQE");
	return sqe;
}

int ring_wait(struct io_uring *ring, unsigned int n, int *res)
{
	struct __kernel_timespec ts = { .tv_sec = CMD_TIMEOUT_S };
	struct io_uring_cqe *cqe;
	struct timespec deadline;
	unsigned int i;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += CMD_TIMEOUT_S;
	for (i = 0; i < n; i++) {
		ret = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
		/* On an IOPOLL ring the kernel's poll loop returns early when
		 * the task should reschedule, and liburing then reports -ETIME
		 * at once (seen on the KASAN kernel with an unbind thread
		 * running): only our own deadline is a timeout. */
		while (ret == -ETIME) {
			struct timespec now;

			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec > deadline.tv_sec ||
			    (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec))
				break;
			ret = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
		}
		if (!CHECK(!ret, "waiting for CQE %u of %u: %s", i + 1, n, strerror(-ret)))
			return ret;
		if (!CHECK(cqe->user_data < n, "CQE with user_data %llu, want < %u",
			   (unsigned long long)cqe->user_data, n)) {
			io_uring_cqe_seen(ring, cqe);
			return -EBADMSG;
		}
		res[cqe->user_data] = cqe->res;
		io_uring_cqe_seen(ring, cqe);
	}
	return 0;
}

int ring_submit_wait(struct io_uring *ring, unsigned int n, int *res)
{
	int ret = io_uring_submit(ring);

	if (!CHECK(ret == (int)n, "submitted %d of %u", ret, n))
		return ret < 0 ? ret : -EAGAIN;
	return ring_wait(ring, n, res);
}

int ring_submit_one(struct io_uring *ring, int *res)
{
	return ring_submit_wait(ring, 1, res);
}

int run_sqe(struct io_uring *ring)
{
	int res = 0, ret = ring_submit_one(ring, &res);

	return ret ? 10000 - ret : res;
}

int vblk_read(struct io_uring *ring, int fd, void *buf, uint32_t len, uint64_t sector)
{
	struct io_uring_sqe *sqe = sqe_get(ring);

	if (!sqe)
		return 10000 + EBUSY;
	iouring_bpf_vblk_prep_read(sqe, fd, buf, len, sector);
	return run_sqe(ring);
}

int vblk_write(struct io_uring *ring, int fd, const void *buf, uint32_t len, uint64_t sector)
{
	struct io_uring_sqe *sqe = sqe_get(ring);

	if (!sqe)
		return 10000 + EBUSY;
	iouring_bpf_vblk_prep_write(sqe, fd, buf, len, sector);
	return run_sqe(ring);
}

int vblk_flush(struct io_uring *ring, int fd)
{
	struct io_uring_sqe *sqe = sqe_get(ring);

	if (!sqe)
		return 10000 + EBUSY;
	iouring_bpf_vblk_prep_flush(sqe, fd);
	return run_sqe(ring);
}

int vblk_get_id(struct io_uring *ring, int fd, void *buf, uint32_t len)
{
	struct io_uring_sqe *sqe = sqe_get(ring);

	if (!sqe)
		return 10000 + EBUSY;
	iouring_bpf_vblk_prep_get_id(sqe, fd, buf, len);
	return run_sqe(ring);
}

int blk_open(const struct disk *d, int flags)
{
	int fd = open(d->blk, flags | O_DIRECT | O_CLOEXEC);

	if (!CHECK(fd >= 0, "open %s: %s", d->blk, strerror(errno)))
		return -errno;
	return fd;
}

int blk_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

int blk_pread(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

void *alloc_buf(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (!CHECK(p != MAP_FAILED, "mmap %zu bytes: %s", len, strerror(errno)))
		return NULL;
	return p;
}

void free_buf(void *p, size_t len)
{
	if (p)
		munmap(p, len);
}

void fill_pattern(void *buf, size_t len, uint64_t off, uint32_t seed)
{
	uint64_t *w = buf;
	size_t i;

	/* 8-byte words naming their disk offset and the seed */
	for (i = 0; i < len / 8; i++)
		w[i] = ((off + i * 8) << 16) ^ ((uint64_t)seed * 0x9e3779b97f4a7c15ULL) ^ 0x5aa5;
}

ssize_t find_not(const void *buf, size_t len, unsigned char val)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != val)
			return (ssize_t)i;
	return -1;
}

bool same(const void *got, const void *want, size_t len, const char *what)
{
	const unsigned char *g = got, *w = want;
	size_t i;

	if (!memcmp(got, want, len))
		return true;
	for (i = 0; i < len && g[i] == w[i]; i++)
		;
	CHECK(0, "%s: byte %zu of %zu is %#x, want %#x", what, i, len, g[i], w[i]);
	return false;
}

uint64_t rnd64(uint64_t *s)
{
	/* xorshift64* */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

uint32_t rnd_below(uint64_t *s, uint32_t n)
{
	return n ? (uint32_t)(rnd64(s) % n) : 0;
}

static const char *alarm_what = "";

static void on_alarm(int sig)
{
	char msg[256];
	int n;

	(void)sig;
	n = snprintf(msg, sizeof(msg), "FAIL: timed out: %s\n", alarm_what);
	if (n > 0 && write(2, msg, (size_t)n) < 0)
		_exit(1);
	_exit(1);
}

uint64_t test_seed(void)
{
	const char *env = getenv("VBLK_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) :
			      (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);

	printf("seed %llu (VBLK_SEED=%llu repeats this run)\n", (unsigned long long)seed,
	       (unsigned long long)seed);
	return seed;
}

void arm_alarm(unsigned int s, const char *what)
{
	alarm_what = what;
	signal(SIGALRM, on_alarm);
	alarm(s);
}

static const struct {
	const char *name;
	int (*fn)(void);
} tests[] = {
	{ "chardev", test_chardev },
	{ "data", test_data },
	{ "discard-zeroes", test_discard_zeroes },
	{ "refusals", test_refusals },
	{ "bounce-efault", test_bounce_efault },
	{ "permissions", test_permissions },
	{ "iopoll", test_iopoll },
	{ "remove", test_remove },
};

int main(int argc, char **argv)
{
	size_t i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 0; argc == 2 && i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!strcmp(argv[1], tests[i].name))
			return tests[i].fn();
	fprintf(stderr, "usage: %s TEST (chardev, data, discard-zeroes, refusals, bounce-efault, "
		"permissions, iopoll, remove)\n", argv[0]);
	return KSFT_FAIL;
}
