// SPDX-License-Identifier: GPL-2.0
/*
 * copy: a file copied as read -> write chains, K blocks in flight, three ways:
 *
 *   bpf    the copy policy (bpf/policies/copy.bpf.c): one io_uring_enter()
 *   user   a liburing loop in user space: a write is queued when its read
 *          completes; one io_uring_submit_and_wait(1) per loop turn
 *   link   IOSQE_IO_LINK read+write pairs, K pairs in flight; one
 *          io_uring_submit_and_wait(1) per loop turn
 *
 * Every run's output is compared with the input. Interleaved rounds,
 * medians. Prints a table; -j writes JSON with MB/s and io_uring_enter
 * calls per MiB for each block size and variant.
 *
 * -B DEV copies DEV's first MiBs onto themselves with O_DIRECT instead of
 * between tmpfs files: on null_blk without memory backing no byte is
 * copied, so what is left is the per-request cost the loop removes. Such a
 * device keeps no data, so then only every request's byte count is checked.
 */
#define _GNU_SOURCE
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <liburing-bpf.h>
#include "../bench.h"
#include <liburing.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "copy.skel.h"

#define MAX_SLOTS 8

struct job {
	int src, dst;
	size_t size;
	__u32 block, slots;
	char *buf;		/* slots * block */
	unsigned long enters;	/* io_uring_enter calls of the last run */
};

/* ---- bpf: the copy policy, loaded once per block size, run per round */

struct bpf_copy {
	struct iouring_bpf_ring ring;
	struct copy *skel;
	struct bpf_link *link;
};

static int bpf_open(struct bpf_copy *b, struct job *j)
{
	int ret = iouring_bpf_ring_init(&b->ring, 16, 0, IOURING_BPF_RING_FLAGS);

	if (ret)
		return ret;
	b->skel = copy__open();
	if (!b->skel)
		return -errno;
	b->skel->rodata->iou_geom = b->ring.geom;
	b->skel->rodata->copy_src_fd = j->src;
	b->skel->rodata->copy_dst_fd = j->dst;
	b->skel->rodata->copy_size = j->size;
	b->skel->rodata->copy_buf = (uintptr_t)j->buf;
	b->skel->rodata->copy_block = j->block;
	b->skel->rodata->copy_slots = j->slots;
	b->skel->struct_ops.copy_ops->ring_fd = b->ring.fd;
	ret = copy__load(b->skel);
	if (ret)
		return ret;
	b->link = bpf_map__attach_struct_ops(b->skel->maps.copy_ops);
	return b->link ? 0 : -errno;
}

static int bpf_run(struct bpf_copy *b, struct job *j)
{
	struct copy__bss *s = b->skel->bss;
	int ret;

	s->copy_generation++;	/* the policy starts a fresh copy */
	ret = iouring_bpf_ring_run(&b->ring);
	j->enters = 1;
	return ret ? ret : s->iou_exit_status;
}

static void bpf_close(struct bpf_copy *b)
{
	bpf_link__destroy(b->link);
	copy__destroy(b->skel);
	iouring_bpf_ring_exit(&b->ring);
}

/* ---- user and link: liburing loops */

static int prep_read(struct io_uring *ring, struct job *j, __u32 slot, __u64 off, __u32 len,
		     unsigned int flags)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_read(sqe, j->src, j->buf + (size_t)slot * j->block, len, off);
	sqe->flags |= flags;
	io_uring_sqe_set_data64(sqe, slot);
	return 0;
}

static int prep_write(struct io_uring *ring, struct job *j, __u32 slot, __u64 off, __u32 len)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_write(sqe, j->dst, j->buf + (size_t)slot * j->block, len, off);
	io_uring_sqe_set_data64(sqe, slot | 1ULL << 32);
	return 0;
}

/* linked: each slot's read and write go out together as a linked pair */
static int liburing_run(struct io_uring *ring, struct job *j, bool linked)
{
	__u64 slot_off[MAX_SLOTS], next = 0, done = 0;
	__u32 slot_len[MAX_SLOTS];
	unsigned int head, seen;
	struct io_uring_cqe *cqe;
	int ret;

	j->enters = 0;
	for (__u32 s = 0; s < j->slots && next < j->size; s++) {
		slot_off[s] = next;
		slot_len[s] = j->size - next < j->block ? j->size - next : j->block;
		next += slot_len[s];
		ret = prep_read(ring, j, s, slot_off[s], slot_len[s], linked ? IOSQE_IO_LINK : 0);
		if (!ret && linked)
			ret = prep_write(ring, j, s, slot_off[s], slot_len[s]);
		if (ret)
			return ret;
	}
	while (done < j->size) {
		ret = io_uring_submit_and_wait(ring, 1);
		j->enters++;
		if (ret < 0)
			return ret;
		seen = 0;
		io_uring_for_each_cqe(ring, head, cqe) {
			__u32 s = cqe->user_data & 0xffffffff;
			bool is_write = cqe->user_data >> 32;

			seen++;
			if (cqe->res < 0)
				return cqe->res;
			if (!is_write) {
				if ((__u32)cqe->res != slot_len[s])
					return -EIO;	/* short read: regular files don't */
				if (!linked && prep_write(ring, j, s, slot_off[s], slot_len[s]))
					return -EBUSY;
				continue;
			}
			if ((__u32)cqe->res != slot_len[s])
				return -EIO;
			done += cqe->res;
			if (next >= j->size)
				continue;
			slot_off[s] = next;
			slot_len[s] = j->size - next < j->block ? j->size - next : j->block;
			next += slot_len[s];
			ret = prep_read(ring, j, s, slot_off[s], slot_len[s],
					linked ? IOSQE_IO_LINK : 0);
			if (!ret && linked)
				ret = prep_write(ring, j, s, slot_off[s], slot_len[s]);
			if (ret)
				return ret;
		}
		io_uring_cq_advance(ring, seen);
	}
	return 0;
}

static int verify(struct job *j, bool data)
{
	static char a[1 << 16], b[1 << 16];

	if (!data)
		return 0;	/* a device that keeps nothing: the counts were checked */

	for (size_t off = 0; off < j->size; off += sizeof(a)) {
		size_t n = j->size - off < sizeof(a) ? j->size - off : sizeof(a);

		if (pread(j->src, a, n, off) != (ssize_t)n || pread(j->dst, b, n, off) != (ssize_t)n ||
		    memcmp(a, b, n))
			return -EIO;
	}
	return ftruncate(j->dst, 0) ? -errno : 0;
}

static void usage(FILE *f, const char *argv0)
{
	fprintf(f, "usage: %s [-d DIR | -B DEV] [-s MIB] [-k INFLIGHT] [-r ROUNDS] [-j FILE.json]\n"
		   "  -d DIR      where the source and destination files live (default /tmp)\n"
		   "  -B DEV      copy DEV's first MIB onto itself, O_DIRECT (null_blk: no data\n"
		   "              is kept, so only byte counts are checked)\n"
		   "  -s MIB      file size (default 16)\n"
		   "  -k N        blocks in flight, at most %d (default 4)\n"
		   "  -r ROUNDS   interleaved rounds, median reported (default 5)\n"
		   "  -j FILE     also write the results as JSON\n"
		   "  -h, --help  this text\n"
		   "Block sizes: 4 KiB and 256 KiB.\n", argv0, MAX_SLOTS);
}

int main(int argc, char **argv)
{
	unsigned int mib = 16, slots = 4;
	int rounds = 5, opt, status = 1;
	const char *json = NULL, *dir = "/tmp", *dev = NULL;
	static const __u32 blocks[] = { 4096, 262144 };
	FILE *jf = NULL;

	while ((opt = getopt_long(argc, argv, "d:B:s:k:r:j:h", bench_long_options(), NULL)) != -1) {
		switch (opt) {
		case 'd': dir = optarg; break;
		case 'B': dev = optarg; break;
		case 's': mib = atoi(optarg); break;
		case 'k': slots = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 'j': json = optarg; break;
		case 'h': usage(stdout, argv[0]); return 0;
		default: usage(stderr, argv[0]); return 2;
		}
	}
	if (!mib || mib > 1024 || !slots || slots > MAX_SLOTS || rounds < 1 || rounds > 50) {
		usage(stderr, argv[0]);
		return 2;
	}

	char src_path[4096], dst_path[4096];
	struct job j = { .size = (size_t)mib << 20, .slots = slots };

	if (dev) {
		j.src = open(dev, O_RDONLY | O_DIRECT);
		j.dst = open(dev, O_WRONLY | O_DIRECT);
		if (j.src < 0 || j.dst < 0) {
			fprintf(stderr, "copy: %s: %s\n", dev, strerror(errno));
			return 1;
		}
	} else {
		snprintf(src_path, sizeof(src_path), "%s/copy-src-XXXXXX", dir);
		snprintf(dst_path, sizeof(dst_path), "%s/copy-dst-XXXXXX", dir);
		j.src = mkstemp(src_path);
		j.dst = mkstemp(dst_path);
		if (j.src < 0 || j.dst < 0) {
			perror("copy: mkstemp");
			return 1;
		}
		unlink(src_path);
		unlink(dst_path);
	}
	j.buf = aligned_alloc(4096, (size_t)MAX_SLOTS * blocks[1]);
	if (!j.buf)
		return 1;
	for (size_t off = 0; !dev && off < j.size; off += 4096) {
		char page[4096];

		for (int i = 0; i < 4096; i++)
			page[i] = (char)(off / 4096 * 31 + i);
		if (pwrite(j.src, page, sizeof(page), off) != sizeof(page)) {
			perror("copy: writing the source");
			return 1;
		}
	}
	if (json && !(jf = fopen(json, "w"))) {
		fprintf(stderr, "copy: %s: %s\n", json, strerror(errno));
		return 1;
	}
	if (jf)
		fprintf(jf, "{\"backing\": \"%s\", \"file_mib\": %u, \"inflight\": %u, "
			    "\"rounds\": %d, \"results\": [", dev ? dev : "tmpfs", mib, slots, rounds);

	printf("copy: %u MiB on %s, %u blocks in flight, %d interleaved rounds, medians\n", mib,
	       dev ? dev : dir, slots, rounds);
	printf("  %-8s %-6s %10s %16s %9s\n", "block", "method", "MB/s", "enters per MiB",
	       "vs user");
	for (size_t bi = 0; bi < sizeof(blocks) / sizeof(blocks[0]); bi++) {
		double t[3][50];
		unsigned long enters[3] = { 0 };
		struct bpf_copy b = {};
		struct io_uring ring;
		int ret;

		j.block = blocks[bi];
		ret = bpf_open(&b, &j);
		if (!ret)
			ret = io_uring_queue_init(64, &ring, IORING_SETUP_SINGLE_ISSUER |
							      IORING_SETUP_DEFER_TASKRUN);
		if (ret) {
			fprintf(stderr, "copy: setup: %s\n", strerror(-ret));
			bpf_close(&b);
			goto out;
		}
		for (int r = 0; r < rounds; r++) {
			for (int m = 0; m < 3; m++) {
				double start = bench_now_ms();

				ret = m == 0 ? bpf_run(&b, &j) : liburing_run(&ring, &j, m == 2);
				t[m][r] = bench_now_ms() - start;
				enters[m] = j.enters;
				if (!ret)
					ret = verify(&j, !dev);
				if (ret) {
					fprintf(stderr, "copy: %s, block %u: %s\n",
						m == 0 ? "bpf" : m == 1 ? "user" : "link", j.block,
						strerror(-ret));
					io_uring_queue_exit(&ring);
					bpf_close(&b);
					goto out;
				}
			}
		}
		io_uring_queue_exit(&ring);
		bpf_close(&b);

		static const char *const names[] = { "bpf", "user", "link" };
		double mbps[3];

		for (int m = 0; m < 3; m++)
			mbps[m] = (double)j.size / 1e6 / (bench_median(t[m], rounds) / 1e3);
		for (int m = 0; m < 3; m++)
			printf("  %-8u %-6s %10.1f %16.1f %8.2fx\n", j.block, names[m], mbps[m],
			       (double)enters[m] / mib, mbps[m] / mbps[1]);
		if (jf)
			fprintf(jf, "%s{\"block\": %u, \"bpf_mbps\": %.2f, \"user_mbps\": %.2f, "
				    "\"link_mbps\": %.2f, \"bpf_enters_per_mib\": %.3f, "
				    "\"user_enters_per_mib\": %.3f, \"link_enters_per_mib\": %.3f}",
				bi ? ", " : "", j.block, mbps[0], mbps[1], mbps[2],
				(double)enters[0] / mib, (double)enters[1] / mib,
				(double)enters[2] / mib);
	}
	if (jf)
		fprintf(jf, "]}\n");
	status = 0;
out:
	if (jf)
		fclose(jf);
	free(j.buf);
	close(j.src);
	close(j.dst);
	return status;
}
