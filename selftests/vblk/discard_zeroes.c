// SPDX-License-Identifier: GPL-2.0
/*
 * vblk/discard-zeroes (VM): DISCARD, WRITE_ZEROES and WRITE_ZEROES with
 * VIRTBLK_URING_CMD_F_UNMAP make their range read back as zeros, and
 * nothing outside the range changes, on both disks:
 * - a pattern is written (O_DIRECT) over the range and 64 KiB on each side;
 * - the command runs through /dev/vdXc0;
 * - the range reads back as zeros, and the sides as the pattern, through
 *   the block device (O_DIRECT) and through a passthrough read.
 * Ranges: one block at an odd sector, random lengths, 8 MiB, and the disk's
 * last blocks. The scratch disks are QEMU raw files with discard=unmap
 * (scripts/vm), so a DISCARD punches a hole and reads back as zeros; with
 * QEMU's default (discard=ignore) a DISCARD would leave the data.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "vblk.h"

#define SIDE	(64 * 1024)
#define MAX_RANGE (8u << 20)
#define PIECE	(256 * 1024)

enum op { DISCARD, WZ, WZ_UNMAP, NR_OPS };
static const char *const op_name[] = { "DISCARD", "WRITE_ZEROES", "WRITE_ZEROES|F_UNMAP" };

struct ctx {
	struct disk *d;
	struct io_uring ring;
	int chr, blk;
	char *pat, *got;	/* SIDE + MAX_RANGE + SIDE each */
	uint64_t rnd;
	unsigned int done;
};

static bool one_range(struct ctx *c, enum op op, uint64_t off, uint32_t len)
{
	uint64_t lo = off >= SIDE ? off - SIDE : 0;
	uint64_t hi = off + len + SIDE <= c->d->sectors * 512 ? off + len + SIDE : c->d->sectors * 512;
	size_t span = (size_t)(hi - lo), before = (size_t)(off - lo);
	struct io_uring_sqe *sqe;
	char what[128];
	bool ok = true;
	int res, ret, pass;
	ssize_t at;

	snprintf(what, sizeof(what), "%s: %s of %u bytes at sector %llu", c->d->serial,
		 op_name[op], len, (unsigned long long)off / 512);
	fill_pattern(c->pat, span, lo, (uint32_t)rnd64(&c->rnd));
	ret = blk_pwrite(c->blk, c->pat, span, lo);
	if (!CHECK(!ret, "%s: writing the pattern: %s", what, strerror(-ret)))
		return false;

	sqe = sqe_get(&c->ring);
	if (!sqe)
		return false;
	if (op == DISCARD)
		iouring_bpf_vblk_prep_discard(sqe, c->chr, off / 512, len);
	else
		iouring_bpf_vblk_prep_write_zeroes(sqe, c->chr, off / 512, len, op == WZ_UNMAP);
	res = run_sqe(&c->ring);
	if (!CHECK(res == 0, "%s: res %d", what, res))
		return false;

	/* pass 0: the block device; pass 1: a passthrough read */
	for (pass = 0; pass < 2; pass++) {
		const char *via = pass ? "passthrough read" : "O_DIRECT read";

		memset(c->got, 0xcc, span);
		if (pass) {
			/* in pieces a request can carry (see vblk/data) */
			for (size_t at0 = 0; at0 < span; at0 += PIECE) {
				uint32_t n = span - at0 < PIECE ? (uint32_t)(span - at0) : PIECE;

				res = vblk_read(&c->ring, c->chr, c->got + at0, n, (lo + at0) / 512);
				ok &= CHECK(res == 0, "%s: %s of %u at byte %zu: res %d", what, via,
					    n, at0, res);
			}
		} else {
			ret = blk_pread(c->blk, c->got, span, lo);
			ok &= CHECK(!ret, "%s: %s: %s", what, via, strerror(-ret));
		}
		at = find_not(c->got + before, len, 0);
		ok &= CHECK(at < 0, "%s: %s: byte %zd of the range is %#x, not 0", what, via, at,
			    (unsigned char)c->got[before + (at < 0 ? 0 : at)]);
		ok &= same(c->got, c->pat, before, "the bytes before the range");
		ok &= same(c->got + before + len, c->pat + before + len, span - before - len,
			   "the bytes after the range");
	}
	if (ok)
		c->done++;
	return ok;
}

static bool run_disk(struct disk *d, uint64_t seed)
{
	struct ctx c = { .d = d, .chr = -1, .blk = -1, .rnd = seed | 1 };
	size_t buf_len = 2 * SIDE + MAX_RANGE;
	uint64_t size = d->sectors * 512, off;
	uint32_t len, blocks;
	bool ok = true;
	unsigned int op, i, want = 0;

	if (!CHECK(d->discard_max >= MAX_RANGE && d->wz_max >= MAX_RANGE,
		   "%s: discard_max_hw_bytes %llu, write_zeroes_max_bytes %llu: the disk should "
		   "take both, at least %u bytes", d->serial, (unsigned long long)d->discard_max,
		   (unsigned long long)d->wz_max, MAX_RANGE))
		return false;
	if (ring_init(&c.ring, 8, 0))
		return false;
	c.pat = alloc_buf(buf_len);
	c.got = alloc_buf(buf_len);
	c.chr = open(d->chr, O_RDWR | O_CLOEXEC);
	c.blk = blk_open(d, O_RDWR);
	if (!c.pat || !c.got || !CHECK(c.chr >= 0, "open %s: %s", d->chr, strerror(errno)) ||
	    c.blk < 0) {
		ok = false;
		goto out;
	}
	for (op = 0; op < NR_OPS; op++) {
		/* one block at an odd sector */
		off = (1 + 2 * (uint64_t)rnd_below(&c.rnd, (uint32_t)(size / 1024 - 64))) * 512;
		off = off / d->lbs * d->lbs;
		ok &= one_range(&c, op, off, d->lbs);
		/* random lengths at random places */
		for (i = 0; i < 4; i++) {
			blocks = MAX_RANGE / d->lbs;
			len = (1 + rnd_below(&c.rnd, i < 2 ? 64 : blocks)) * d->lbs;
			off = (uint64_t)rnd_below(&c.rnd, (uint32_t)((size - len) / d->lbs)) * d->lbs;
			ok &= one_range(&c, op, off, len);
		}
		/* 8 MiB, aligned */
		off = (uint64_t)rnd_below(&c.rnd, (uint32_t)(size / MAX_RANGE)) * MAX_RANGE;
		ok &= one_range(&c, op, off, MAX_RANGE);
		/* the last 3 blocks of the disk (nothing after them) */
		ok &= one_range(&c, op, size - 3 * d->lbs, 3 * d->lbs);
		want += 7;
	}
	ok &= CHECK(c.done == want, "%s: %u of %u ranges checked out", d->serial, c.done, want);
	printf("%s: %u ranges zeroed (DISCARD, WRITE_ZEROES, WRITE_ZEROES|F_UNMAP), "
	       "their sides unchanged\n", d->serial, c.done);
out:
	if (c.chr >= 0)
		close(c.chr);
	if (c.blk >= 0)
		close(c.blk);
	io_uring_queue_exit(&c.ring);
	free_buf(c.pat, buf_len);
	free_buf(c.got, buf_len);
	return ok;
}

int test_discard_zeroes(void)
{
	struct disk d[2];
	bool ok = true;
	uint64_t seed;

	arm_alarm(280, "vblk/discard-zeroes");
	seed = test_seed();
	if (disk_find(SERIAL_POLL, &d[0]) || disk_find(SERIAL_NOPOLL, &d[1]))
		return KSFT_FAIL;
	ok &= run_disk(&d[0], seed);
	ok &= run_disk(&d[1], seed ^ 0x1234567);
	return ok ? KSFT_PASS : KSFT_FAIL;
}
