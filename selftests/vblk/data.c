// SPDX-License-Identifier: GPL-2.0
/*
 * vblk/data (VM): data written through /dev/vdXc0 reads back identically
 * through /dev/vdX (O_DIRECT, so the page cache hides nothing), and data
 * written through /dev/vdX reads back identically through /dev/vdXc0, on
 * both disks:
 * - at random sector offsets with random lengths (multiples of the logical
 *   block size, up to what one request can carry, see io_limit());
 * - from flat buffers, iovec arrays (random pieces with gaps between them)
 *   and registered buffers (two of them, so buf_index must be honoured);
 *   memory addresses aligned or not (the kernel then bounces through its
 *   own pages and copies back at completion);
 * - one command in flight, and 32 at once.
 * Reads land exactly in the bytes they were given: the guard bytes around
 * each buffer and the gaps between iovecs keep their poison.
 *
 * The seed is printed; VBLK_SEED=N repeats a run.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "vblk.h"

#define DEPTH_MAX	32
#define MAX_VECS	16
#define GUARD		4096	/* poisoned bytes before and after each buffer */
#define POISON		0xee

enum kind { FLAT, VEC, FIXED, NR_KINDS };
static const char *const kind_name[] = { "flat", "vectored", "registered" };

struct io {
	uint64_t off;		/* bytes on the disk */
	uint32_t len;
	char *mem;		/* the buffer: slot + GUARD + misalignment */
	struct iovec iov[MAX_VECS];
	unsigned int nvec;
	int buf_index;		/* FIXED: which registered buffer */
	unsigned int arena;	/* arena[] the buffer is in */
};

struct ctx {
	struct disk *d;
	struct io_uring ring;
	int chr, blk;
	uint32_t io_max;	/* longest command */
	size_t slot;		/* arena bytes per command */
	char *arena[2];		/* slot i of arena a is registered buffer a * DEPTH_MAX + i */
	size_t arena_len;
	char *check;		/* the block device side */
	uint64_t rnd;
	unsigned long commands;
	unsigned long long bytes;
};

/*
 * The longest command the tests send. The queue's max_hw_sectors_kb is
 * the byte limit, but the user pages of one request must also fit in
 * max_segments segments: pages of a user buffer are rarely contiguous, so
 * a buffer spanning more pages than that is refused. Keep clear of it
 * with MAX_VECS misaligned pieces (each may start a page of its own).
 */
static uint32_t io_limit(const struct disk *d)
{
	uint64_t lim = (uint64_t)(d->max_segments > MAX_VECS + 2 ?
				  d->max_segments - MAX_VECS - 2 : 1) * 4096;

	if (lim > d->max_hw_bytes)
		lim = d->max_hw_bytes;
	return (uint32_t)(lim / d->lbs * d->lbs);
}

static uint32_t rnd_len(struct ctx *c, uint32_t max)
{
	uint32_t blocks = max / c->d->lbs;

	/* half of them short: many small commands, a few long ones */
	if (rnd_below(&c->rnd, 2) && blocks > 128)
		blocks = 128;
	return (1 + rnd_below(&c->rnd, blocks)) * c->d->lbs;
}

/* memory misalignment: none, a block, or odd bytes (bounced by the kernel) */
static unsigned int rnd_misalign(struct ctx *c)
{
	static const unsigned int choice[] = { 0, 0, 512, 8, 3 };

	return choice[rnd_below(&c->rnd, 5)];
}

/* Place the command: disk range in its own part of the disk, buffer in its slot. */
static void setup_io(struct ctx *c, struct io *io, unsigned int i, unsigned int depth,
		     enum kind kind)
{
	uint64_t part = c->d->sectors * 512 / depth / c->d->lbs * c->d->lbs;
	uint32_t max = c->io_max;
	unsigned int a = kind == FIXED ? (unsigned int)rnd_below(&c->rnd, 2) : 0;
	uint32_t left, piece;
	char *p;

	if (part < max)
		max = (uint32_t)part;
	io->len = rnd_len(c, max);
	io->off = part * i + (uint64_t)rnd_below(&c->rnd, (uint32_t)((part - io->len) / c->d->lbs + 1)) *
		  c->d->lbs;
	io->arena = a;
	io->buf_index = (int)(a * DEPTH_MAX + i);
	io->mem = c->arena[a] + (size_t)i * c->slot + GUARD + rnd_misalign(c);
	memset(c->arena[a] + (size_t)i * c->slot, POISON, c->slot);
	io->nvec = 0;
	if (kind != VEC)
		return;
	/* random pieces (multiples of 512 bytes), a random gap after each */
	left = io->len;
	p = io->mem;
	while (left) {
		piece = io->nvec == MAX_VECS - 1 ? left : (1 + rnd_below(&c->rnd, left / 512)) * 512;
		if (piece > left)
			piece = left;
		io->iov[io->nvec].iov_base = p;
		io->iov[io->nvec].iov_len = piece;
		io->nvec++;
		left -= piece;
		p += piece + (rnd_below(&c->rnd, 3) ? 0 : 512 + rnd_misalign(c));
	}
}

/* bytes of the buffer, wherever the iovecs put them */
static void copy_io(struct io *io, void *flat, bool to_io)
{
	size_t done = 0;
	unsigned int v;

	if (!io->nvec) {
		if (to_io)
			memcpy(io->mem, flat, io->len);
		else
			memcpy(flat, io->mem, io->len);
		return;
	}
	for (v = 0; v < io->nvec; v++) {
		if (to_io)
			memcpy(io->iov[v].iov_base, (char *)flat + done, io->iov[v].iov_len);
		else
			memcpy((char *)flat + done, io->iov[v].iov_base, io->iov[v].iov_len);
		done += io->iov[v].iov_len;
	}
}

/* everything in the command's slot outside its bytes is still poison */
static bool check_poison(struct ctx *c, struct io *io, unsigned int i)
{
	char *slot = c->arena[io->arena] + (size_t)i * c->slot;
	char *save = malloc(c->slot);
	bool ok;
	ssize_t at;

	if (!CHECK(save, "malloc"))
		return false;
	/* blank the command's own bytes, then the whole slot must be poison */
	memcpy(save, slot, c->slot);
	if (io->nvec) {
		for (unsigned int v = 0; v < io->nvec; v++)
			memset(io->iov[v].iov_base, POISON, io->iov[v].iov_len);
	} else {
		memset(io->mem, POISON, io->len);
	}
	at = find_not(slot, c->slot, POISON);
	ok = CHECK(at < 0, "a read changed memory outside its buffer: slot byte %zd "
		   "(buffer at slot byte %zu, %u bytes, %u iovecs)", at,
		   (size_t)(io->mem - slot), io->len, io->nvec);
	memcpy(slot, save, c->slot);
	free(save);
	return ok;
}

static void prep_io(struct ctx *c, struct io *io, enum kind kind, bool write, unsigned int i)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&c->ring);
	uint64_t sector = io->off / 512;

	switch (kind) {
	case FLAT:
		if (write)
			iouring_bpf_vblk_prep_write(sqe, c->chr, io->mem, io->len, sector);
		else
			iouring_bpf_vblk_prep_read(sqe, c->chr, io->mem, io->len, sector);
		break;
	case VEC:
		if (write)
			iouring_bpf_vblk_prep_writev(sqe, c->chr, io->iov, io->nvec, sector);
		else
			iouring_bpf_vblk_prep_readv(sqe, c->chr, io->iov, io->nvec, sector);
		break;
	default:
		if (write)
			iouring_bpf_vblk_prep_write_fixed(sqe, c->chr, io->mem, io->len, sector,
							  io->buf_index);
		else
			iouring_bpf_vblk_prep_read_fixed(sqe, c->chr, io->mem, io->len, sector,
							 io->buf_index);
		break;
	}
	io_uring_sqe_set_data64(sqe, i);
}

/*
 * One round: depth commands at once, in one direction.
 * write: pattern -> passthrough write -> O_DIRECT read -> compare.
 * read:  pattern -> O_DIRECT write -> passthrough read -> compare.
 */
static bool round_trip(struct ctx *c, enum kind kind, bool write, unsigned int depth)
{
	struct io io[DEPTH_MAX];
	int res[DEPTH_MAX];
	uint32_t seed = (uint32_t)rnd64(&c->rnd);
	char what[160];
	unsigned int i;
	bool ok = true;
	int ret;

	for (i = 0; i < depth; i++) {
		setup_io(c, &io[i], i, depth, kind);
		fill_pattern(c->check, io[i].len, io[i].off, seed + i);
		if (write) {
			copy_io(&io[i], c->check, true);
		} else {
			ret = blk_pwrite(c->blk, c->check, io[i].len, io[i].off);
			if (!CHECK(!ret, "O_DIRECT write of %u at %llu: %s", io[i].len,
				   (unsigned long long)io[i].off, strerror(-ret)))
				return false;
		}
		prep_io(c, &io[i], kind, write, i);
	}
	for (i = 0; i < depth; i++)
		res[i] = 1;
	if (ring_submit_wait(&c->ring, depth, res))
		return false;
	for (i = 0; i < depth; i++) {
		snprintf(what, sizeof(what), "%s: %s %s of %u bytes at sector %llu (%u iovecs, "
			 "memory +%lu, buffer %d), %u in flight", c->d->serial, kind_name[kind],
			 write ? "write" : "read", io[i].len,
			 (unsigned long long)io[i].off / 512, io[i].nvec,
			 (unsigned long)((uintptr_t)io[i].mem % 4096), io[i].buf_index, depth);
		if (!CHECK(res[i] == 0, "%s: res %d", what, res[i])) {
			ok = false;
			continue;
		}
		c->commands++;
		c->bytes += io[i].len;
		fill_pattern(c->check, io[i].len, io[i].off, seed + i);
		if (write) {
			/* the block device side, read past any cache */
			char *back = c->check + c->io_max;

			ret = blk_pread(c->blk, back, io[i].len, io[i].off);
			ok &= CHECK(!ret, "%s: O_DIRECT read back: %s", what, strerror(-ret)) &&
			      same(back, c->check, io[i].len, what);
		} else {
			char *got = c->check + c->io_max;

			copy_io(&io[i], got, false);
			ok &= same(got, c->check, io[i].len, what);
			ok &= check_poison(c, &io[i], i);
		}
	}
	return ok;
}

static bool run_disk(struct disk *d, uint64_t seed)
{
	struct iovec reg[2 * DEPTH_MAX];
	struct ctx c = { .d = d, .chr = -1, .blk = -1, .rnd = seed | 1 };
	bool ok = true;
	unsigned int k, rep;
	int ret;

	c.io_max = io_limit(d);
	/* room for MAX_VECS gaps of up to 515 bytes, misalignment and guards */
	c.slot = ((size_t)c.io_max + MAX_VECS * 1024 + 2 * GUARD + 4095) / 4096 * 4096;
	c.arena_len = c.slot * DEPTH_MAX;
	printf("%s: commands of %u..%u bytes\n", d->serial, d->lbs, c.io_max);
	if (ring_init(&c.ring, DEPTH_MAX, 0))
		return false;
	c.arena[0] = alloc_buf(c.arena_len);
	c.arena[1] = alloc_buf(c.arena_len);
	c.check = alloc_buf(2 * (size_t)c.io_max);
	c.chr = open(d->chr, O_RDWR | O_CLOEXEC);
	c.blk = blk_open(d, O_RDWR);
	if (!c.arena[0] || !c.arena[1] || !c.check ||
	    !CHECK(c.chr >= 0, "open %s: %s", d->chr, strerror(errno)) || c.blk < 0) {
		ok = false;
		goto out;
	}
	/*
	 * One registered buffer per slot: a misaligned address in a registered
	 * buffer is bounced, and the bounce path takes at most UIO_MAXIOV
	 * pages from the address to the buffer's end (-ENOMEM beyond).
	 */
	for (k = 0; k < 2 * DEPTH_MAX; k++)
		reg[k] = (struct iovec){ c.arena[k / DEPTH_MAX] + (k % DEPTH_MAX) * c.slot, c.slot };
	ret = io_uring_register_buffers(&c.ring, reg, 2 * DEPTH_MAX);
	if (!CHECK_OK(ret, "io_uring_register_buffers")) {
		ok = false;
		goto out;
	}
	for (k = 0; k < NR_KINDS; k++) {
		for (rep = 0; rep < 6; rep++) {
			ok &= round_trip(&c, k, true, 1);
			ok &= round_trip(&c, k, false, 1);
		}
		ok &= round_trip(&c, k, true, DEPTH_MAX);
		ok &= round_trip(&c, k, false, DEPTH_MAX);
	}
	printf("%s: %lu commands, %llu bytes, all read back identically\n", d->serial,
	       c.commands, c.bytes);
	ok &= CHECK(c.commands == NR_KINDS * (12 + 2 * DEPTH_MAX), "%lu commands succeeded",
		    c.commands);
out:
	if (c.chr >= 0)
		close(c.chr);
	if (c.blk >= 0)
		close(c.blk);
	io_uring_queue_exit(&c.ring);
	free_buf(c.arena[0], c.arena_len);
	free_buf(c.arena[1], c.arena_len);
	free_buf(c.check, 2 * (size_t)c.io_max);
	return ok;
}

int test_data(void)
{
	struct disk d[2];
	bool ok = true;
	uint64_t seed;

	arm_alarm(560, "vblk/data");
	seed = test_seed();
	if (disk_find(SERIAL_POLL, &d[0]) || disk_find(SERIAL_NOPOLL, &d[1]))
		return KSFT_FAIL;
	ok &= run_disk(&d[0], seed);
	ok &= run_disk(&d[1], seed ^ 0xabcdef);
	return ok ? KSFT_PASS : KSFT_FAIL;
}
