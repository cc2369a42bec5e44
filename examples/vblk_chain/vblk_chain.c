// SPDX-License-Identifier: GPL-2.0
/*
 * vblk_chain: a linked list of blocks on a virtio-blk disk, walked through
 * the disk's passthrough character device (/dev/vdXc0) two ways:
 *
 *   bpf    vblk_chain.bpf.c: the policy reads the head, then each next
 *          block as the previous read completes: one io_uring_enter()
 *   user   the same reads from user space on a plain SQE128 ring: one
 *          io_uring_enter() per block (each read needs the one before)
 *
 * The list is written first, through the block device with O_DIRECT: N
 * blocks at random distinct sectors, block i starting with the sector of
 * block i+1 (CHAIN_END for the last), followed by its index, its own sector
 * and a pattern. Each walk is checked: the sectors visited in list order,
 * every block's bytes, and the number of io_uring_enter() calls.
 *
 * It overwrites N blocks of the disk: use a scratch disk (the block device
 * is opened with O_EXCL, so a mounted one is refused).
 */
#define _GNU_SOURCE
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <liburing-bpf.h>
#include <linux/fs.h>
#include <linux/virtio_blk.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../../bench/bench.h"
#include "vblk_chain.skel.h"

#define CHAIN_END	(~0ULL)
#define CHAIN_MAX	256	/* the longest list here */
#define MAX_ROUNDS	50

/* For UAPI headers from before kernel patches 23-25. */
#ifndef VIRTBLK_URING_CMD_IO
struct virtblk_uring_cmd {
	__u32 type, ioprio;
	__u64 sector, data;
	__u32 data_len, flag;
};
#define VIRTBLK_URING_CMD_IO	_IOWR('V', 0x80, struct virtblk_uring_cmd)
#endif

struct chain {
	const char *disk;
	char cdev[64];
	int bfd, cfd;			/* block device (O_DIRECT), char device */
	__u32 n, block;
	__u64 seed, disk_bytes;
	__u64 sectors[CHAIN_MAX];	/* the list, in order */
	char *mem;			/* n slots of block bytes: the ring's parameter region */
	size_t mem_size;
};

/* xorshift64*: the same list for the same seed */
static __u64 rnd(__u64 *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

/* Block i's expected contents. */
static void fill_block(const struct chain *c, __u32 i, unsigned char *b)
{
	__u64 hdr[3] = { i + 1 < c->n ? c->sectors[i + 1] : CHAIN_END, i, c->sectors[i] };

	for (__u32 k = 0; k < c->block; k++)
		b[k] = (unsigned char)(c->seed * 131 + i * 7 + k);
	memcpy(b, hdr, sizeof(hdr));
}

/*
 * /dev/vdXc0 for the disk: the kernel's name of the block device (its
 * /sys/dev/block link) with "c0", if the driver registered that name in
 * its class (a whole virtio-blk disk on a kernel with patches 23-25).
 */
static int find_cdev(struct chain *c)
{
	char sys[64], link[4096], path[4352];
	const char *name;
	struct stat st;
	ssize_t len;

	if (stat(c->disk, &st))
		return -errno;
	if (!S_ISBLK(st.st_mode))
		return -ENOTBLK;
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(st.st_rdev), minor(st.st_rdev));
	len = readlink(sys, link, sizeof(link) - 1);
	if (len < 0)
		return -errno;
	link[len] = 0;
	name = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
	snprintf(path, sizeof(path), "/sys/class/virtblk-generic/%sc0", name);
	if (access(path, F_OK))
		return -ENODEV;
	if ((size_t)snprintf(c->cdev, sizeof(c->cdev), "/dev/%sc0", name) >= sizeof(c->cdev))
		return -ENAMETOOLONG;
	return 0;
}

/* N random distinct block-aligned sectors, then the blocks, O_DIRECT. */
static int write_chain(struct chain *c)
{
	__u64 slots = c->disk_bytes / c->block, s = c->seed ? c->seed : 1;
	unsigned char *b;
	int ret = 0;

	for (__u32 i = 0; i < c->n; i++) {
		__u64 sector;
		bool dup;

		do {
			sector = rnd(&s) % slots * (c->block / 512);
			dup = false;
			for (__u32 j = 0; j < i; j++)
				dup |= c->sectors[j] == sector;
		} while (dup);
		c->sectors[i] = sector;
	}
	if (posix_memalign((void **)&b, 4096, c->block))
		return -ENOMEM;
	for (__u32 i = 0; i < c->n && !ret; i++) {
		fill_block(c, i, b);
		if (pwrite(c->bfd, b, c->block, c->sectors[i] * 512) != (ssize_t)c->block)
			ret = errno ? -errno : -EIO;
	}
	free(b);
	if (!ret && fsync(c->bfd))
		ret = -errno;
	return ret;
}

/* Every slot holds its block; *visited are the sectors in list order. */
static int check_walk(const struct chain *c, const __u64 *visited, __u32 nr, const char *how)
{
	unsigned char *want = malloc(c->block);
	int ret = 0;

	if (!want)
		return -ENOMEM;
	if (nr != c->n) {
		fprintf(stderr, "vblk_chain: %s: visited %u blocks, the list has %u\n", how, nr, c->n);
		ret = -EIO;
	}
	for (__u32 i = 0; i < nr && i < c->n && !ret; i++) {
		if (visited[i] != c->sectors[i]) {
			fprintf(stderr, "vblk_chain: %s: block %u: visited sector %llu, the list "
				"says %llu\n", how, i, (unsigned long long)visited[i],
				(unsigned long long)c->sectors[i]);
			ret = -EIO;
			break;
		}
		fill_block(c, i, want);
		if (memcmp(c->mem + (size_t)i * c->block, want, c->block)) {
			fprintf(stderr, "vblk_chain: %s: block %u (sector %llu): data differs\n",
				how, i, (unsigned long long)c->sectors[i]);
			ret = -EIO;
		}
	}
	free(want);
	return ret;
}

/* ---- bpf: the policy walks the list in one io_uring_enter() */

struct bpf_walk {
	struct iouring_bpf_ring ring;
	struct vblk_chain *skel;
	struct bpf_link *link;
};

static int bpf_open(struct bpf_walk *w, struct chain *c)
{
	int ret;

	/* 128-byte SQEs: a passthrough command fills the SQE's cmd area */
	ret = iouring_bpf_ring_init(&w->ring, 4, 0, IOURING_BPF_RING_FLAGS | IORING_SETUP_SQE128);
	if (ret)
		return ret;
	ret = iouring_bpf_ring_register_mem(&w->ring, c->mem, c->mem_size);
	if (ret)
		return ret;
	w->skel = vblk_chain__open();
	if (!w->skel)
		return -errno;
	w->skel->rodata->iou_geom = w->ring.geom;	/* sqe_size 128, the region's size */
	w->skel->rodata->chain_fd = c->cfd;
	w->skel->rodata->chain_buf = (uintptr_t)c->mem;
	w->skel->rodata->chain_block = c->block;
	w->skel->rodata->chain_head = c->sectors[0];
	w->skel->struct_ops.vblk_chain_ops->ring_fd = w->ring.fd;
	ret = vblk_chain__load(w->skel);
	if (ret)
		return ret;
	w->link = bpf_map__attach_struct_ops(w->skel->maps.vblk_chain_ops);
	return w->link ? 0 : -errno;
}

static int bpf_walk(struct bpf_walk *w, struct chain *c, unsigned int *enters)
{
	struct vblk_chain__bss *b = w->skel->bss;
	__u64 visited[CHAIN_MAX];
	int ret;

	memset(c->mem, 0xa5, c->mem_size);	/* nothing left from the last walk */
	b->chain_nr = b->chain_enters = 0;
	b->chain_inflight = false;
	ret = iouring_bpf_ring_run(&w->ring);	/* the whole walk */
	*enters = b->chain_enters;
	if (ret)
		return ret;
	if (b->iou_exit_status)
		return b->iou_exit_status;
	/* the order of the visits: slot i holds the block read i-th, and each
	 * block carries its own sector (fill_block()) */
	for (__u32 i = 0; i < b->chain_nr && i < CHAIN_MAX; i++)
		memcpy(&visited[i], c->mem + (size_t)i * c->block + 16, sizeof(visited[i]));
	return check_walk(c, visited, b->chain_nr, "bpf");
}

static void bpf_close(struct bpf_walk *w)
{
	bpf_link__destroy(w->link);
	vblk_chain__destroy(w->skel);
	iouring_bpf_ring_exit(&w->ring);
}

/* ---- user: one read per io_uring_enter() on a plain SQE128 ring */

static int user_walk(struct chain *c, unsigned int *enters)
{
	struct iouring_bpf_ring ring;
	__u64 visited[CHAIN_MAX], sector = c->sectors[0];
	__u32 nr = 0;
	int ret;

	*enters = 0;
	memset(c->mem, 0xa5, c->mem_size);
	/* SQ_REWIND: SQE 0 every time, no SQ array to fill */
	ret = iouring_bpf_ring_init(&ring, 4, 0, IOURING_BPF_RING_FLAGS | IORING_SETUP_SQE128);
	if (ret)
		return ret;
	while (sector != CHAIN_END) {
		struct io_uring_sqe *sqe = ring.sqes;
		struct virtblk_uring_cmd *cmd = (void *)sqe->cmd;
		char *m = ring.ring_mem;
		unsigned int head = *(unsigned int *)(m + ring.params.cq_off.head);
		struct io_uring_cqe *cqe;

		if (nr == c->n) {
			ret = -ELOOP;
			break;
		}
		memset(sqe, 0, 2 * sizeof(*sqe));
		sqe->opcode = IORING_OP_URING_CMD;
		sqe->fd = c->cfd;
		sqe->cmd_op = VIRTBLK_URING_CMD_IO;
		cmd->type = VIRTIO_BLK_T_IN;
		cmd->sector = sector;
		cmd->data = (uintptr_t)(c->mem + (size_t)nr * c->block);
		cmd->data_len = c->block;
		ret = syscall(__NR_io_uring_enter, ring.fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0);
		++*enters;
		if (ret < 0) {
			ret = -errno;
			break;
		}
		cqe = (void *)(m + ring.params.cq_off.cqes +
			       (head & (ring.params.cq_entries - 1)) * sizeof(*cqe));
		ret = cqe->res;
		__atomic_store_n((unsigned int *)(m + ring.params.cq_off.head), head + 1,
				 __ATOMIC_RELEASE);
		if (ret < 0)
			break;
		visited[nr] = sector;
		memcpy(&sector, c->mem + (size_t)nr * c->block, sizeof(sector));
		nr++;
	}
	iouring_bpf_ring_exit(&ring);
	return ret < 0 ? ret : check_walk(c, visited, nr, "user");
}

static void usage(FILE *f, const char *argv0)
{
	fprintf(f, "usage: %s [-n BLOCKS] [-b BYTES] [-s SEED] [-r ROUNDS] [-j FILE.json] DISK\n"
		   "Writes a linked list of BLOCKS blocks at random sectors of DISK (a virtio-blk\n"
		   "block device such as /dev/vdb; its data there is lost), then walks it through\n"
		   "the disk's passthrough device /dev/vdXc0: with a BPF policy in one\n"
		   "io_uring_enter(), and from user space with one io_uring_enter() per block.\n"
		   "Checks the sectors visited, the data and the enter calls of every walk.\n"
		   "  -n BLOCKS   blocks in the list, 1 to %d (default 32)\n"
		   "  -b BYTES    block size, a multiple of 4096 up to 65536 (default 4096)\n"
		   "  -s SEED     seed of the random sectors and the data (default 1)\n"
		   "  -r ROUNDS   interleaved rounds, median reported (default 3)\n"
		   "  -j FILE     also write the results as JSON\n", argv0, CHAIN_MAX);
}

int main(int argc, char **argv)
{
	struct chain c = { .n = 32, .block = 4096, .seed = 1, .bfd = -1, .cfd = -1 };
	const char *json = NULL;
	struct bpf_walk w = { .ring.fd = -1 };
	double t[2][MAX_ROUNDS];
	unsigned int enters[2] = { 0 };
	int rounds = 3, opt, ret, status = 1;
	char *end = "";
	FILE *jf;

	static const struct option longopts[] = { { "help", no_argument, NULL, 'h' }, {} };

	while ((opt = getopt_long(argc, argv, "n:b:s:r:j:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'n': c.n = strtoul(optarg, &end, 0); break;
		case 'b': c.block = strtoul(optarg, &end, 0); break;
		case 's': c.seed = strtoull(optarg, &end, 0); break;
		case 'r': rounds = atoi(optarg); break;
		case 'j': json = optarg; break;
		case 'h': usage(stdout, argv[0]); return 0;
		default: usage(stderr, argv[0]); return 2;
		}
		if (*end) {	/* -n, -b, -s take numbers only */
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (optind != argc - 1 || !c.n || c.n > CHAIN_MAX || !c.block || c.block % 4096 ||
	    c.block > 65536 || rounds < 1 || rounds > MAX_ROUNDS) {
		usage(stderr, argv[0]);
		return 2;
	}
	c.disk = argv[optind];

	ret = find_cdev(&c);
	if (ret) {
		fprintf(stderr, "vblk_chain: %s: %s\n", c.disk,
			ret == -ENODEV ? "no passthrough character device (not a whole virtio-blk "
					 "disk, or a kernel without patches 23-25)" : strerror(-ret));
		return 1;
	}
	c.bfd = open(c.disk, O_RDWR | O_DIRECT | O_EXCL);
	c.cfd = open(c.cdev, O_RDONLY);	/* reads only: IN needs read access */
	if (c.bfd < 0 || c.cfd < 0) {
		fprintf(stderr, "vblk_chain: %s: %s\n", c.bfd < 0 ? c.disk : c.cdev,
			strerror(errno));
		goto out;
	}
	if (ioctl(c.bfd, BLKGETSIZE64, &c.disk_bytes) || c.disk_bytes / c.block < c.n) {
		fprintf(stderr, "vblk_chain: %s: too small for %u blocks of %u bytes\n", c.disk,
			c.n, c.block);
		goto out;
	}
	c.mem_size = ((size_t)c.n * c.block + 4095) & ~(size_t)4095;
	if (posix_memalign((void **)&c.mem, 4096, c.mem_size)) {
		fprintf(stderr, "vblk_chain: out of memory\n");
		goto out;
	}
	ret = write_chain(&c);
	if (ret) {
		fprintf(stderr, "vblk_chain: writing the list to %s: %s\n", c.disk, strerror(-ret));
		goto out;
	}
	ret = bpf_open(&w, &c);
	if (ret) {
		fprintf(stderr, "vblk_chain: setting up the policy: %s\n", strerror(-ret));
		goto out;
	}

	for (int r = 0; r < rounds; r++) {
		for (int m = 0; m < 2; m++) {
			double start = bench_now_ms();

			ret = m == 0 ? bpf_walk(&w, &c, &enters[0]) : user_walk(&c, &enters[1]);
			t[m][r] = bench_now_ms() - start;
			if (ret) {
				fprintf(stderr, "vblk_chain: %s walk: %s\n", m ? "user" : "bpf",
					strerror(-ret));
				goto out;
			}
		}
		if (enters[0] != 1 || enters[1] != c.n) {
			fprintf(stderr, "vblk_chain: io_uring_enter calls: bpf %u (want 1), user %u "
				"(want %u)\n", enters[0], enters[1], c.n);
			goto out;
		}
	}

	double ms[2] = { bench_median(t[0], rounds), bench_median(t[1], rounds) };

	printf("vblk_chain: %s through %s, %u blocks of %u bytes at random sectors "
	       "(seed %" PRIu64 "), %d rounds, medians\n", c.disk, c.cdev, c.n, c.block,
	       (uint64_t)c.seed, rounds);
	printf("  %-6s %12s %16s %22s\n", "method", "us/block", "io_uring_enter", "sectors and data");
	for (int m = 0; m < 2; m++)
		printf("  %-6s %12.1f %16u %22s\n", m ? "user" : "bpf", ms[m] * 1e3 / c.n,
		       enters[m], "in list order, match");
	if (json) {
		jf = fopen(json, "w");
		if (!jf) {
			fprintf(stderr, "vblk_chain: %s: %s\n", json, strerror(errno));
			goto out;
		}
		fprintf(jf, "{\"disk\": \"%s\", \"char_device\": \"%s\", \"blocks\": %u, "
			    "\"block_bytes\": %u, \"seed\": %" PRIu64 ", \"rounds\": %d, "
			    "\"bpf_us_per_block\": %.3f, \"user_us_per_block\": %.3f, "
			    "\"bpf_enters\": %u, \"user_enters\": %u, "
			    "\"visited_in_order\": true, \"data_ok\": true, \"sectors\": [",
			c.disk, c.cdev, c.n, c.block, (uint64_t)c.seed, rounds,
			ms[0] * 1e3 / c.n, ms[1] * 1e3 / c.n, enters[0], enters[1]);
		for (__u32 i = 0; i < c.n; i++)
			fprintf(jf, "%s%llu", i ? ", " : "", (unsigned long long)c.sectors[i]);
		fprintf(jf, "]}\n");
		if (fclose(jf)) {
			fprintf(stderr, "vblk_chain: %s: %s\n", json, strerror(errno));
			goto out;
		}
	}
	status = 0;
out:
	bpf_close(&w);
	free(c.mem);
	if (c.bfd >= 0)
		close(c.bfd);
	if (c.cfd >= 0)
		close(c.cfd);
	return status;
}
