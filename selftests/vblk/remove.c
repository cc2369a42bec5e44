// SPDX-License-Identifier: GPL-2.0
/*
 * vblk/remove (VM): a disk removed while a ring holds its character device
 * open, with commands in flight: the virtio device is unbound from the
 * virtio_blk driver, then bound again. For each disk:
 * - vblk0, IOPOLL ring: 32 commands (half reads of an old pattern, half
 *   writes of a new one) are submitted and nobody reaps them: all 32 hold
 *   their tags when the unbind (another thread) begins, the unbind must
 *   still be waiting a second later (removal waits for commands in flight)
 *   and returns once they are reaped; all complete with 0, the reads with
 *   the right data;
 * - vblk1, interrupt ring: batches of 8 commands stream while another
 *   thread unbinds: each completes with 0 (reads with the right data) or
 *   -ENODEV, nothing else; after the unbind returned, only -ENODEV. How many
 *   overlap the removal is up to timing (the log counts them);
 * - the disk, its character device's sysfs entry and /dev node are gone;
 *   every command on the still-open files (O_RDWR, O_RDONLY, and one the
 *   ring holds as a registered file after close()) fails with -ENODEV;
 *   reopening the file through /proc/self/fd fails; close() works;
 * - after binding, the disk and /dev/vdXc0 come back (found by serial:
 *   the name may change), GET_ID still says the serial, the old pattern is
 *   intact and the last write that completed to each area is there, read
 *   through both the block device and the new character device;
 * - the ring (and with it the last reference to the old file) goes away
 *   only after the disk came back.
 * alarm() bounds the whole test: a hang fails it.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "vblk.h"

#define NCMD		32
#define CHUNK		(512 * 1024)
#define OLD_OFF		(32ULL << 20)	/* the old pattern, read while removing */
#define NEW_OFF		(64ULL << 20)	/* the new pattern, written while removing */
#define DRIVER		"/sys/bus/virtio/drivers/virtio_blk"

struct unbind {
	char virtio[32];
	char disk[32];
	atomic_int started, done;
	int ret;
	int busy;		/* tags in use when the unbind began (-1: unknown) */
};

static int sysfs_write(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* tags in use on all the disk's hctxs (debugfs), or -1 */
static int busy_tags(const char *disk)
{
	char path[256], line[128];
	int h, sum = -1;
	FILE *f;

	for (h = 0; h < 16; h++) {
		snprintf(path, sizeof(path), "/sys/kernel/debug/block/%s/hctx%d/tags", disk, h);
		f = fopen(path, "re");
		if (!f)
			break;
		/* the first busy= is the normal tags' (the second the reserved ones') */
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "busy=", 5)) {
				sum = (sum < 0 ? 0 : sum) + atoi(line + 5);
				break;
			}
		fclose(f);
	}
	return sum;
}

static void *unbind_thread(void *arg)
{
	struct unbind *u = arg;

	u->busy = busy_tags(u->disk);
	atomic_store(&u->started, 1);
	u->ret = sysfs_write(DRIVER "/unbind", u->virtio);
	atomic_store(&u->done, 1);
	return NULL;
}

/*
 * Submit what is queued without reaping anything: liburing's submit on an
 * IOPOLL ring asks for events, and the kernel then polls once. Publish the
 * SQ tail as io_uring_submit() does, then enter without GETEVENTS.
 */
static int submit_no_poll(struct io_uring *ring)
{
	unsigned int n = ring->sq.sqe_tail - ring->sq.sqe_head;

	ring->sq.sqe_head = ring->sq.sqe_tail;
	__atomic_store_n(ring->sq.ktail, ring->sq.sqe_tail, __ATOMIC_RELEASE);
	return io_uring_enter(ring->ring_fd, n, 0, 0, NULL);
}

/* virtioN of the disk: the last part of /sys/block/X/device */
static bool virtio_name(const struct disk *d, char *out, size_t len)
{
	char path[128], link[PATH_MAX];
	ssize_t n;
	const char *base;

	snprintf(path, sizeof(path), "/sys/block/%s/device", d->name);
	n = readlink(path, link, sizeof(link) - 1);
	if (!CHECK(n > 0, "readlink %s: %s", path, strerror(errno)))
		return false;
	link[n] = '\0';
	base = strrchr(link, '/');
	base = base ? base + 1 : link;
	snprintf(out, len, "%.31s", base);
	return CHECK(!strncmp(out, "virtio", 6), "%s -> %s is not a virtio device", path, link);
}

static bool gone(const char *path)
{
	struct stat st;

	return CHECK(stat(path, &st) && errno == ENOENT, "%s still exists after the unbind",
		     path);
}

/* every kind of command on a removed disk's file: -ENODEV */
static bool all_enodev(struct io_uring *ring, int fd, bool fixed_file, char *buf,
		       const char *which)
{
	static const char *const names[] = { "IN", "OUT", "IN vectored", "IN registered",
					     "FLUSH", "GET_ID", "DISCARD", "WRITE_ZEROES" };
	struct iovec iov = { buf, 4096 };
	bool ok = true;
	unsigned int k;
	int res;

	for (k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		struct io_uring_sqe *sqe = sqe_get(ring);

		if (!sqe)
			return false;
		switch (k) {
		case 0: iouring_bpf_vblk_prep_read(sqe, fd, buf, 4096, 0); break;
		case 1: iouring_bpf_vblk_prep_write(sqe, fd, buf, 4096, 0); break;
		case 2: iouring_bpf_vblk_prep_readv(sqe, fd, &iov, 1, 0); break;
		case 3: iouring_bpf_vblk_prep_read_fixed(sqe, fd, buf, 4096, 0, 0); break;
		case 4: iouring_bpf_vblk_prep_flush(sqe, fd); break;
		case 5: iouring_bpf_vblk_prep_get_id(sqe, fd, buf, 20); break;
		case 6: iouring_bpf_vblk_prep_discard(sqe, fd, 0, 4096); break;
		default: iouring_bpf_vblk_prep_write_zeroes(sqe, fd, 0, 4096, true); break;
		}
		if (fixed_file)
			sqe->flags |= IOSQE_FIXED_FILE;
		res = run_sqe(ring);
		ok &= CHECK(res == -ENODEV, "%s after removal, %s: res %d, want -ENODEV", names[k],
			    which, res);
	}
	return ok;
}

/* what the disk must hold after bind: seed's pattern over [off, off + len) */
struct expect {
	uint64_t off;
	uint32_t len, seed;
};

#define OLD_SEED	0x01d
#define NEW_SEED	0x2e0
#define SLOTS		64		/* stream: 64 KiB slots of the new area */
#define SCHUNK		(64 * 1024)
#define BATCH		8

struct run {
	const char *serial;
	struct io_uring ring;
	int fd;
	char *arena, *check;
	struct unbind u;
	struct expect exp[NCMD + SLOTS];
	int nexp;
	bool ok;
};

static void expect(struct run *r, uint64_t off, uint32_t len, uint32_t seed)
{
	r->exp[r->nexp++] = (struct expect){ off, len, seed };
}

/*
 * IOPOLL ring: NCMD commands submitted, nobody reaps them; the unbind (in a
 * thread) begins with all of them holding tags and must still be waiting a
 * second later; then they are reaped and complete with 0.
 */
static void unreaped_iopoll(struct run *r)
{
	int res[NCMD], ret, i, n;
	struct timespec t0, t1;
	pthread_t thr;

	for (i = 0; i < NCMD; i++) {
		struct io_uring_sqe *sqe = sqe_get(&r->ring);
		char *buf = r->arena + (size_t)i * CHUNK;
		uint64_t old = OLD_OFF + (uint64_t)(i / 2) * CHUNK, new = NEW_OFF + (uint64_t)(i / 2) * CHUNK;

		if (!sqe) {
			r->ok = false;
			return;
		}
		if (i % 2) {
			memset(buf, 0, CHUNK);
			iouring_bpf_vblk_prep_read(sqe, r->fd, buf, CHUNK, old / 512);
		} else {
			fill_pattern(buf, CHUNK, new, NEW_SEED + 1);
			iouring_bpf_vblk_prep_write_fixed(sqe, r->fd, buf, CHUNK, new / 512, 0);
		}
		io_uring_sqe_set_data64(sqe, (unsigned int)i);
	}
	n = submit_no_poll(&r->ring);
	if (!CHECK(n == NCMD, "submitted %d of %d", n, NCMD)) {
		r->ok = false;
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!CHECK(!pthread_create(&thr, NULL, unbind_thread, &r->u), "pthread_create")) {
		r->ok = false;
		return;
	}
	while (!atomic_load(&r->u.started))
		usleep(1000);
	sleep(1);
	r->ok &= CHECK(!atomic_load(&r->u.done), "%s: the unbind finished (%d) while %d polled "
		       "commands were not yet reaped", r->serial, r->u.ret, NCMD);
	r->ok &= CHECK(r->u.busy == NCMD, "%s: %d requests in flight when the unbind began, "
		       "want all %d (nothing reaped them)", r->serial, r->u.busy, NCMD);
	printf("%s: %d requests in flight when the unbind began; still waiting 1 s later: %s\n",
	       r->serial, r->u.busy, atomic_load(&r->u.done) ? "no" : "yes");
	for (i = 0; i < NCMD; i++)
		res[i] = 1;
	ret = ring_wait(&r->ring, NCMD, res);
	pthread_join(thr, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%s: unbind returned %d after %ld ms, once the commands were reaped\n", r->serial,
	       r->u.ret, (long)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000));
	r->ok &= CHECK(!r->u.ret, "unbind %s: %s", r->u.virtio, strerror(-r->u.ret));
	if (!CHECK(!ret, "reaping the %d commands in flight", NCMD)) {
		r->ok = false;
		return;
	}
	for (i = 0; i < NCMD; i++) {
		uint64_t old = OLD_OFF + (uint64_t)(i / 2) * CHUNK, new = NEW_OFF + (uint64_t)(i / 2) * CHUNK;

		r->ok &= CHECK(res[i] == 0, "%s: command %d (%s) in flight during removal: res %d",
			       r->serial, i, i % 2 ? "read" : "write", res[i]);
		if (i % 2 && !res[i]) {
			fill_pattern(r->check, CHUNK, old, OLD_SEED);
			r->ok &= same(r->arena + (size_t)i * CHUNK, r->check, CHUNK,
				      "a read in flight during removal");
		} else if (!res[i]) {
			expect(r, new, CHUNK, NEW_SEED + 1);
		}
	}
}

/*
 * Interrupt ring: batches of BATCH commands (reads of the old pattern,
 * writes of new data into SLOTS slots) one after the other while another
 * thread unbinds the disk, until the unbind has returned. Each command
 * completes with 0 (a read with the right data; a write's data must be
 * there after bind) or with -ENODEV; after the unbind returned, only with
 * -ENODEV. Whether commands overlap the removal is up to timing: the log
 * counts those submitted after the unbind began that still completed.
 */
static void stream_interrupt(struct run *r)
{
	uint32_t slot_seed[SLOTS];
	unsigned long seq = 0, overlapped = 0, enodev = 0, good = 0;
	int res[BATCH], ret, i;
	bool last = false;
	pthread_t thr;

	for (i = 0; i < SLOTS; i++)
		slot_seed[i] = NEW_SEED;	/* run_disk wrote it there */
	if (!CHECK(!pthread_create(&thr, NULL, unbind_thread, &r->u), "pthread_create")) {
		r->ok = false;
		return;
	}
	while (r->ok) {
		bool started = atomic_load(&r->u.started), done = atomic_load(&r->u.done);

		for (i = 0; i < BATCH; i++) {
			struct io_uring_sqe *sqe = sqe_get(&r->ring);
			unsigned long k = seq + (unsigned long)i;
			char *buf = r->arena + (size_t)i * SCHUNK;
			uint64_t off = k % 2 ? OLD_OFF + (k / 2 % 128) * SCHUNK :
					       NEW_OFF + (k / 2 % SLOTS) * SCHUNK;

			if (k % 2) {
				memset(buf, 0, SCHUNK);
				iouring_bpf_vblk_prep_read(sqe, r->fd, buf, SCHUNK, off / 512);
			} else {
				fill_pattern(buf, SCHUNK, off, (uint32_t)(1000 + k));
				iouring_bpf_vblk_prep_write(sqe, r->fd, buf, SCHUNK, off / 512);
			}
			io_uring_sqe_set_data64(sqe, (unsigned int)i);
			res[i] = 1;
		}
		ret = ring_submit_wait(&r->ring, BATCH, res);
		if (ret) {
			r->ok = false;
			break;
		}
		for (i = 0; i < BATCH; i++) {
			unsigned long k = seq + (unsigned long)i;
			uint64_t off = k % 2 ? OLD_OFF + (k / 2 % 128) * SCHUNK :
					       NEW_OFF + (k / 2 % SLOTS) * SCHUNK;

			if (res[i] == -ENODEV) {
				enodev++;
				continue;
			}
			r->ok &= CHECK(res[i] == 0 && !done, "%s: command %lu (%s) %s the unbind: "
				       "res %d, want %s", r->serial, k, k % 2 ? "read" : "write",
				       done ? "after" : "during", res[i], done ? "-ENODEV" : "0 or -ENODEV");
			if (res[i])
				continue;
			good++;
			overlapped += started;
			if (k % 2) {
				fill_pattern(r->check, SCHUNK, off, OLD_SEED);
				r->ok &= same(r->arena + (size_t)i * SCHUNK, r->check, SCHUNK,
					      "a read during removal");
			} else {
				slot_seed[k / 2 % SLOTS] = (uint32_t)(1000 + k);
			}
		}
		seq += BATCH;
		if (last)
			break;
		last = done;		/* one more batch after the unbind returned */
		if (!CHECK(seq < 1000000, "the unbind does not return"))
			r->ok = false;
	}
	pthread_join(thr, NULL);
	r->ok &= CHECK(!r->u.ret, "unbind %s: %s", r->u.virtio, strerror(-r->u.ret));
	printf("%s: %lu commands streamed through the removal: %lu completed (%lu of them "
	       "submitted after the unbind began, %d requests in flight as it began), %lu -ENODEV\n",
	       r->serial, seq, good, overlapped, r->u.busy, enodev);
	r->ok &= CHECK(enodev >= BATCH, "%s: the batch after the unbind returned did not all get "
		       "-ENODEV", r->serial);
	for (i = 0; i < SLOTS; i++)
		expect(r, NEW_OFF + (uint64_t)i * SCHUNK, SCHUNK, slot_seed[i]);
}

static bool run_disk(const char *serial, bool iopoll)
{
	struct run *r = calloc(1, sizeof(*r));
	struct disk d, back;
	struct iovec reg;
	char proc[64];
	int ro = -1, blk = -1, ret, i;
	bool ok;

	if (!CHECK(r, "calloc"))
		return false;
	r->serial = serial;
	r->fd = -1;
	r->ok = true;
	if (disk_find(serial, &d) || !virtio_name(&d, r->u.virtio, sizeof(r->u.virtio)))
		return false;
	snprintf(r->u.disk, sizeof(r->u.disk), "%s", d.name);
	r->arena = alloc_buf((size_t)NCMD * CHUNK);
	r->check = alloc_buf(CHUNK);
	if (!r->arena || !r->check || ring_init(&r->ring, 64, iopoll ? IORING_SETUP_IOPOLL : 0))
		return false;
	reg = (struct iovec){ r->arena, (size_t)NCMD * CHUNK };
	r->fd = open(d.chr, O_RDWR | O_CLOEXEC);
	ro = open(d.chr, O_RDONLY | O_CLOEXEC);
	blk = blk_open(&d, O_RDWR);
	if (!CHECK(r->fd >= 0 && ro >= 0, "open %s: %s", d.chr, strerror(errno)) || blk < 0 ||
	    !CHECK_OK(io_uring_register_buffers(&r->ring, &reg, 1), "register_buffers") ||
	    !CHECK_OK(io_uring_register_files(&r->ring, &r->fd, 1), "register_files")) {
		r->ok = false;
		goto out;
	}
	/* the old pattern, read during the removal; the new area's first state */
	for (i = 0; i < NCMD / 2; i++) {
		uint64_t old = OLD_OFF + (uint64_t)i * CHUNK, new = NEW_OFF + (uint64_t)i * CHUNK;

		fill_pattern(r->check, CHUNK, old, OLD_SEED);
		ret = blk_pwrite(blk, r->check, CHUNK, old);
		fill_pattern(r->check, CHUNK, new, NEW_SEED);
		ret = ret ?: blk_pwrite(blk, r->check, CHUNK, new);
		if (!CHECK(!ret, "writing the patterns: %s", strerror(-ret))) {
			r->ok = false;
			goto out;
		}
		expect(r, old, CHUNK, OLD_SEED);
	}
	close(blk);
	blk = -1;
	printf("%s (%s, %s, %s): unbinding %s with commands in flight (%s ring)\n", serial,
	       d.blk, d.chr, d.name, r->u.virtio, iopoll ? "IOPOLL" : "interrupt");
	if (iopoll)
		unreaped_iopoll(r);
	else
		stream_interrupt(r);
	if (!r->ok)
		goto out;

	/* gone: the disk, the class entry, the node */
	snprintf(proc, sizeof(proc), "/sys/block/%s", d.name);
	r->ok &= gone(proc);
	snprintf(proc, sizeof(proc), "/sys/class/virtblk-generic/%sc0", d.name);
	r->ok &= gone(proc);
	r->ok &= gone(d.chr);
	r->ok &= gone(d.blk);
	/* the open files: every command -ENODEV */
	r->ok &= all_enodev(&r->ring, r->fd, false, r->check, "O_RDWR file");
	r->ok &= all_enodev(&r->ring, ro, false, r->check, "O_RDONLY file");
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", r->fd);
	ret = open(proc, O_RDWR | O_CLOEXEC);
	r->ok &= CHECK(ret < 0 && (errno == ENXIO || errno == ENODEV),
		       "reopening the removed device through %s: %d (%s)", proc, ret,
		       ret < 0 ? strerror(errno) : "opened");
	if (ret >= 0)
		close(ret);
	r->ok &= CHECK(!close(r->fd), "close: %s", strerror(errno));
	r->ok &= CHECK(!close(ro), "close O_RDONLY: %s", strerror(errno));
	r->fd = ro = -1;
	/* the ring still holds the O_RDWR file as registered file 0 */
	r->ok &= all_enodev(&r->ring, 0, true, r->check, "registered file, its fd closed");

	/* back again */
	ret = sysfs_write(DRIVER "/bind", r->u.virtio);
	r->ok &= CHECK(!ret, "bind %s: %s", r->u.virtio, strerror(-ret));
	if (!CHECK(!disk_wait(serial, &back, 30), "%s did not come back after bind", serial)) {
		r->ok = false;
		goto out;
	}
	r->ok &= disk_find(serial, &back) == 0;
	printf("%s: back as %s, %s\n", serial, back.blk, back.chr);
	{
		struct io_uring r2;
		unsigned char id[20] = "";
		int nfd = open(back.chr, O_RDWR | O_CLOEXEC), pass, e;

		blk = blk_open(&back, O_RDONLY);
		if (!CHECK(nfd >= 0, "open %s: %s", back.chr, strerror(errno)) || blk < 0 ||
		    ring_init(&r2, 4, 0)) {
			r->ok = false;
			goto out;
		}
		r->ok &= CHECK(vblk_get_id(&r2, nfd, id, 20) == 0 && !strncmp((char *)id, serial, 20),
			       "GET_ID after bind: '%.20s'", id);
		for (e = 0; e < r->nexp; e++) {
			const struct expect *x = &r->exp[e];

			fill_pattern(r->check, x->len, x->off, x->seed);
			for (pass = 0; pass < 2; pass++) {
				char *got = r->arena;

				memset(got, 0, x->len);
				if (pass)
					r->ok &= CHECK(vblk_read(&r2, nfd, got, x->len, x->off / 512) == 0,
						       "passthrough read after bind");
				else
					r->ok &= CHECK(!blk_pread(blk, got, x->len, x->off),
						       "O_DIRECT read after bind");
				r->ok &= same(got, r->check, x->len, x->seed == OLD_SEED ?
					      "the old pattern after bind" :
					      "the last write that completed, after bind");
			}
		}
		close(nfd);
		io_uring_queue_exit(&r2);
	}
	printf("%s: -ENODEV after the removal; after bind, %d areas hold what they must\n",
	       serial, r->nexp);
out:
	if (r->fd >= 0)
		close(r->fd);
	if (ro >= 0)
		close(ro);
	if (blk >= 0)
		close(blk);
	/* the last reference to the removed disk's file goes with the ring */
	io_uring_queue_exit(&r->ring);
	free_buf(r->arena, (size_t)NCMD * CHUNK);
	free_buf(r->check, CHUNK);
	ok = r->ok;
	free(r);
	return ok;
}

int test_remove(void)
{
	bool ok = true;

	arm_alarm(280, "vblk/remove (an unbind, bind or command hangs)");
	ok &= run_disk(SERIAL_NOPOLL, false);
	ok &= run_disk(SERIAL_POLL, true);
	return ok ? KSFT_PASS : KSFT_FAIL;
}
