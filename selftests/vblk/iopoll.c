// SPDX-License-Identifier: GPL-2.0
/*
 * vblk/iopoll (VM): passthrough on a ring set up with IORING_SETUP_IOPOLL.
 * - vblk0 has a poll queue: debugfs shows one hctx of type "poll"; the
 *   commands (flat, vectored, registered; 8 in flight) write and read
 *   correctly, and they went to the poll queue: a kretprobe on
 *   virtblk_poll() (the poll queue's completion reaping, which never runs
 *   for interrupt queues) counts completions found, and they add up to
 *   exactly the number of commands sent. Poll queues have no interrupt, so
 *   nothing else could have completed them.
 * - vblk1 has no poll queue (no "poll" hctx): the same commands still
 *   complete correctly, through its interrupt queue, and virtblk_poll()
 *   finds nothing.
 * Data is checked against the block device (O_DIRECT) both ways.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include "vblk.h"

#define TRACE		"/sys/kernel/tracing"
#define INSTANCE	TRACE "/instances/vblk_iopoll"
#define EVENT		"vblk_iopoll_found"
#define DEPTH		8
#define ROUNDS		4
#define CHUNK		(64 * 1024)

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_APPEND), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		ret = -errno;
	close(fd);
	return ret;
}

static void probe_remove(void)
{
	write_file(INSTANCE "/events/kprobes/" EVENT "/enable", "0");
	rmdir(INSTANCE);
	write_file(TRACE "/kprobe_events", "-:kprobes/" EVENT "\n");
}

/* a kretprobe on virtblk_poll() recording calls that found completions */
static bool probe_add(void)
{
	int ret;

	if (access(TRACE "/kprobe_events", F_OK) && mount("tracefs", TRACE, "tracefs", 0, NULL)) {
		CHECK(0, "mount tracefs: %s", strerror(errno));
		return false;
	}
	probe_remove();
	ret = write_file(TRACE "/kprobe_events",
			 "r:kprobes/" EVENT " virtblk_poll found=$retval:s32\n");
	if (!CHECK(!ret, "adding a kretprobe on virtblk_poll: %s", strerror(-ret)))
		return false;
	if (!CHECK(!mkdir(INSTANCE, 0755) || errno == EEXIST, "mkdir %s: %s", INSTANCE,
		   strerror(errno)))
		return false;
	ret = write_file(INSTANCE "/events/kprobes/" EVENT "/filter", "found > 0");
	return CHECK(!ret, "event filter: %s", strerror(-ret));
}

static bool probe_enable(bool on)
{
	int ret, fd;

	if (on) {
		/* opening the trace with O_TRUNC empties the instance's buffer */
		fd = open(INSTANCE "/trace", O_WRONLY | O_TRUNC | O_CLOEXEC);
		if (!CHECK(fd >= 0, "clearing %s: %s", INSTANCE "/trace", strerror(errno)))
			return false;
		close(fd);
	}
	ret = write_file(INSTANCE "/events/kprobes/" EVENT "/enable", on ? "1" : "0");
	return CHECK(!ret, "enabling the event: %s", strerror(-ret));
}

/* completions virtblk_poll() found while the event was on (-1: unreadable) */
static long probe_found(void)
{
	FILE *f = fopen(INSTANCE "/trace", "re");
	char line[512];
	long sum = 0;
	char *p;

	if (!CHECK(f, "open %s: %s", INSTANCE "/trace", strerror(errno)))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#' || !strstr(line, EVENT))
			continue;
		p = strstr(line, "found=");
		if (p)
			sum += strtol(p + 6, NULL, 0);
	}
	fclose(f);
	return sum;
}

/* hctx types of the disk in debugfs: how many are "poll" (-1: unreadable) */
static int poll_hctxs(const char *name, int *total)
{
	char path[320], type[32];
	struct dirent *de;
	int polls = 0;
	DIR *dir;

	if (access("/sys/kernel/debug/block", F_OK) &&
	    mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL)) {
		CHECK(0, "mount debugfs: %s", strerror(errno));
		return -1;
	}
	snprintf(path, sizeof(path), "/sys/kernel/debug/block/%s", name);
	dir = opendir(path);
	if (!CHECK(dir, "opendir %s: %s", path, strerror(errno)))
		return -1;
	*total = 0;
	while ((de = readdir(dir))) {
		if (strncmp(de->d_name, "hctx", 4))
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/debug/block/%s/%.32s/type", name,
			 de->d_name);
		if (read_line(path, type, sizeof(type)))
			continue;
		(*total)++;
		polls += !strcmp(type, "poll");
	}
	closedir(dir);
	return polls;
}

/* DEPTH commands at once, ROUNDS times, each way; returns commands sent (-1: failed) */
static int io_rounds(const struct disk *d, struct io_uring *ring, int chr, int blk, char *arena)
{
	char *check = alloc_buf(CHUNK);
	struct iovec iov[DEPTH][2];
	int res[DEPTH], sent = 0, r, i, ret;
	bool ok = true;

	if (!check)
		return -1;
	for (r = 0; r < ROUNDS && ok; r++) {
		bool write = r % 2 == 0;

		for (i = 0; i < DEPTH; i++) {
			struct io_uring_sqe *sqe = sqe_get(ring);
			char *buf = arena + (size_t)i * CHUNK;
			uint64_t off = (16ULL << 20) + ((uint64_t)r * DEPTH + i) * CHUNK;

			fill_pattern(buf, CHUNK, off, 0x1000 + (uint32_t)r);
			if (!write) {
				ret = blk_pwrite(blk, buf, CHUNK, off);
				ok &= CHECK(!ret, "O_DIRECT write: %s", strerror(-ret));
				memset(buf, 0, CHUNK);
			}
			iov[i][0] = (struct iovec){ buf, CHUNK / 2 };
			iov[i][1] = (struct iovec){ buf + CHUNK / 2, CHUNK / 2 };
			switch (i % 3) {
			case 0:
				if (write)
					iouring_bpf_vblk_prep_write(sqe, chr, buf, CHUNK, off / 512);
				else
					iouring_bpf_vblk_prep_read(sqe, chr, buf, CHUNK, off / 512);
				break;
			case 1:
				if (write)
					iouring_bpf_vblk_prep_writev(sqe, chr, iov[i], 2, off / 512);
				else
					iouring_bpf_vblk_prep_readv(sqe, chr, iov[i], 2, off / 512);
				break;
			default:
				if (write)
					iouring_bpf_vblk_prep_write_fixed(sqe, chr, buf, CHUNK,
									  off / 512, 0);
				else
					iouring_bpf_vblk_prep_read_fixed(sqe, chr, buf, CHUNK,
									 off / 512, 0);
				break;
			}
			io_uring_sqe_set_data64(sqe, (unsigned int)i);
		}
		if (ring_submit_wait(ring, DEPTH, res))
			break;
		for (i = 0; i < DEPTH; i++) {
			char *buf = arena + (size_t)i * CHUNK;
			uint64_t off = (16ULL << 20) + ((uint64_t)r * DEPTH + i) * CHUNK;

			if (!CHECK(res[i] == 0, "%s: IOPOLL %s %d: res %d", d->serial,
				   write ? "write" : "read", i, res[i])) {
				ok = false;
				continue;
			}
			sent++;
			fill_pattern(check, CHUNK, off, 0x1000 + (uint32_t)r);
			if (write) {
				ret = blk_pread(blk, buf, CHUNK, off);
				ok &= CHECK(!ret, "O_DIRECT read: %s", strerror(-ret));
			}
			ok &= same(buf, check, CHUNK, write ? "IOPOLL write, read back O_DIRECT" :
					 "IOPOLL read of an O_DIRECT write");
		}
	}
	free_buf(check, CHUNK);
	return ok ? sent : -1;
}

static bool run_disk(const struct disk *d, bool has_poll)
{
	struct io_uring ring;
	struct iovec reg;
	char *arena = alloc_buf(DEPTH * CHUNK);
	int chr, blk, polls, total = 0, sent, ret;
	long found;
	bool ok = true;

	polls = poll_hctxs(d->name, &total);
	if (polls < 0 || !arena)
		return false;
	ok &= CHECK(polls == (has_poll ? 1 : 0), "%s: %d poll hctx of %d, want %d", d->serial,
		    polls, total, has_poll ? 1 : 0);
	printf("%s: %d hctx, %d of type poll\n", d->serial, total, polls);
	if (ring_init(&ring, DEPTH, IORING_SETUP_IOPOLL))
		return false;
	reg = (struct iovec){ arena, DEPTH * CHUNK };
	ret = io_uring_register_buffers(&ring, &reg, 1);
	chr = open(d->chr, O_RDWR | O_CLOEXEC);
	blk = blk_open(d, O_RDWR);
	if (!CHECK_OK(ret, "io_uring_register_buffers") ||
	    !CHECK(chr >= 0, "open %s: %s", d->chr, strerror(errno)) || blk < 0)
		return false;
	if (!probe_enable(true))
		return false;
	sent = io_rounds(d, &ring, chr, blk, arena);
	probe_enable(false);
	found = probe_found();
	ok &= CHECK(sent == DEPTH * ROUNDS, "%s: %d of %d IOPOLL commands succeeded", d->serial,
		    sent, DEPTH * ROUNDS);
	if (has_poll)
		ok &= CHECK(found == sent, "%s: virtblk_poll() found %ld completions for %d "
			    "IOPOLL commands: not all went to the poll queue", d->serial, found, sent);
	else
		ok &= CHECK(found == 0, "%s: virtblk_poll() found %ld completions on a disk "
			    "without a poll queue", d->serial, found);
	printf("%s: %d IOPOLL commands (flat, vectored, registered; %d in flight) correct; "
	       "virtblk_poll() found %ld completions\n", d->serial, sent, DEPTH, found);
	close(chr);
	close(blk);
	io_uring_queue_exit(&ring);
	free_buf(arena, DEPTH * CHUNK);
	return ok;
}

int test_iopoll(void)
{
	struct disk d[2];
	bool ok = true;

	arm_alarm(280, "vblk/iopoll");
	if (disk_find(SERIAL_POLL, &d[0]) || disk_find(SERIAL_NOPOLL, &d[1]))
		return KSFT_FAIL;
	if (!probe_add()) {
		probe_remove();
		return KSFT_FAIL;
	}
	ok &= run_disk(&d[0], true);
	ok &= run_disk(&d[1], false);
	probe_remove();
	return ok ? KSFT_PASS : KSFT_FAIL;
}
