// SPDX-License-Identifier: GPL-2.0
/*
 * vblk_bench: random reads on a virtio-blk disk at a fixed queue depth, in
 * the spirit of fio's t/io_uring, two ways:
 *
 *   block        io_uring READ (READ_FIXED with -B) on /dev/vdX, O_DIRECT
 *                (-P: through the page cache, as the proposal's -O0 runs)
 *   passthrough  IORING_OP_URING_CMD VIRTBLK_URING_CMD_IO (type IN) on
 *                /dev/vdXc0, 128-byte SQEs
 *
 * The kind of file picks the way. -p sets the ring up with IORING_SETUP_IOPOLL
 * (the disk's poll queue if it has one: virtio_blk.poll_queues), -B registers
 * the buffers, -F the file. The loop keeps DEPTH reads in flight, submits at
 * most BATCH new ones per io_uring_enter() and, once the queue is full, waits
 * for COMPLETE of them in that same call; it calls io_uring_enter() itself, so
 * the count of calls it prints is exact. Prints IOPS, MB/s and IOs per call;
 * -j writes them as JSON; -V checks the data of a disk filled with one byte.
 * A benchmark tool: it never judges a timing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <liburing.h>
#include <linux/fs.h>
#include <linux/ioctl.h>
#include <linux/virtio_blk.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../bench.h"

/* The patched kernel's UAPI (include/uapi/linux/virtio_blk.h); system headers lack it. */
#ifndef VIRTBLK_URING_CMD_IO
struct virtblk_uring_cmd {
	__u32 type;
	__u32 ioprio;
	__u64 sector;
	__u64 data;
	__u32 data_len;
	__u32 flag;
};
#define VIRTBLK_URING_CMD_IO _IOWR('V', 0x80, struct virtblk_uring_cmd)
#endif

#define MAX_DEPTH 1024

struct opts {
	const char *path, *json;
	unsigned int depth, submit_batch, complete_batch, bs;
	bool iopoll, fixed, regfile, buffered;
	double seconds;
	unsigned long long count, range_mib;
	uint64_t seed;
	int verify;		/* -1, or the byte every read must return */
};

struct bench {
	const struct opts *o;
	int fd;
	bool passthrough;
	char disk[64];		/* vdX: sysfs name of the disk */
	uint64_t disk_bytes, range_blocks;
	unsigned int lbs;
	int poll_queue;		/* /sys/block/vdX/queue/io_poll: 1, 0, -1 unknown */
	struct io_uring ring;
	char *bufs;		/* depth * bs */
	unsigned int free_slots[MAX_DEPTH], nfree;
	uint64_t rng;
	unsigned int inflight, pending;	/* submitted; prepared, not yet submitted */
	unsigned long long issued, ios, enters;
};

static const char *prog = "vblk_bench";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [options] DEVICE\n"
		"Random reads on a virtio-blk disk: DEVICE is the block device (/dev/vdX:\n"
		"io_uring READ, O_DIRECT) or its character device (/dev/vdXc0: passthrough\n"
		"IORING_OP_URING_CMD VIRTBLK_URING_CMD_IO).\n"
		"  -d DEPTH     reads in flight (default 8, at most %d)\n"
		"  -s BATCH     at most BATCH new reads per io_uring_enter() (default DEPTH)\n"
		"  -c COMPLETE  when the queue is full, wait for COMPLETE reads in the same\n"
		"               call (default 1, at most DEPTH)\n"
		"  -b BYTES     read size, a multiple of the logical block size (default 4096)\n"
		"  -p           polled: a ring with IORING_SETUP_IOPOLL\n"
		"  -B           registered (fixed) buffers\n"
		"  -F           registered file\n"
		"  -P           block device through the page cache, not O_DIRECT (its\n"
		"               pages are dropped first: each run starts cold)\n"
		"  -t SECONDS   run this long (default 5; 0: only -n limits)\n"
		"  -n COUNT     stop after COUNT reads (default: no limit)\n"
		"  -r MIB       read only the first MIB MiB of the disk (default: all of it)\n"
		"  -S SEED      random offsets from this seed (default 1)\n"
		"  -V BYTE      check that every read returned BYTE in each byte (a disk\n"
		"               filled with it); a mismatch fails the run\n"
		"  -j FILE      also write the result as JSON to FILE ('-': stdout)\n"
		"  -h, --help   this text\n"
		"Prints IOPS, MB/s (10^6 bytes) and reads per io_uring_enter() call.\n"
		"Example: %s -d 8 -s 4 -c 4 -p -B -F -t 10 /dev/vdac0\n",
		prog, MAX_DEPTH, prog);
}

static uint64_t next_rand(struct bench *b)
{
	/* xorshift64* */
	b->rng ^= b->rng >> 12;
	b->rng ^= b->rng << 25;
	b->rng ^= b->rng >> 27;
	return b->rng * 0x2545f4914f6cdd1dULL;
}

/* Reads a number from a sysfs file; -1 if it cannot. */
static long long sysfs_num(const char *fmt, const char *name)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), fmt, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* DEVNAME of a device number, from /sys/dev/{block,char}/MAJ:MIN/uevent. */
static int devname_of(bool chr, dev_t rdev, char *name, size_t len)
{
	char path[128], line[256];
	int ret = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/dev/%s/%u:%u/uevent", chr ? "char" : "block",
		 major(rdev), minor(rdev));
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "DEVNAME=", 8))
			continue;
		size_t n = strcspn(line + 8, "\n");

		if (n >= len) {
			ret = -ENAMETOOLONG;
			break;
		}
		memcpy(name, line + 8, n);
		name[n] = 0;
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

/*
 * Opens the device and finds its disk: its size, logical block size and
 * whether it has a poll queue. Errors name the file.
 */
static int open_device(struct bench *b)
{
	const struct opts *o = b->o;
	struct stat st;
	char name[64];
	long long v;
	int ret;

	if (stat(o->path, &st)) {
		ret = -errno;
		fprintf(stderr, "%s: %s: %s\n", prog, o->path, strerror(errno));
		return ret;
	}
	if (S_ISCHR(st.st_mode)) {
		b->passthrough = true;
	} else if (!S_ISBLK(st.st_mode)) {
		fprintf(stderr, "%s: %s: neither a block device nor a character device\n", prog,
			o->path);
		return -ENODEV;
	}
	if (b->passthrough && o->buffered) {
		fprintf(stderr, "%s: %s: -P is for a block device (passthrough has no page "
				"cache)\n", prog, o->path);
		return -EINVAL;
	}
	b->fd = open(o->path, b->passthrough || o->buffered ? O_RDONLY : O_RDONLY | O_DIRECT);
	if (b->fd < 0) {
		ret = -errno;
		fprintf(stderr, "%s: open %s: %s\n", prog, o->path, strerror(errno));
		return ret;
	}
	if (o->buffered) {
		ret = posix_fadvise(b->fd, 0, 0, POSIX_FADV_DONTNEED);
		if (ret) {
			fprintf(stderr, "%s: %s: dropping its cached pages: %s\n", prog, o->path,
				strerror(ret));
			return -ret;
		}
	}
	ret = devname_of(b->passthrough, st.st_rdev, name, sizeof(name));
	if (ret) {
		fprintf(stderr, "%s: %s: no device name in /sys/dev/%s/%u:%u/uevent: %s\n", prog,
			o->path, b->passthrough ? "char" : "block", major(st.st_rdev),
			minor(st.st_rdev), strerror(-ret));
		return ret;
	}
	if (b->passthrough) {
		/* vdXc0 belongs to vdX */
		size_t n = strlen(name);

		if (n < 3 || strcmp(name + n - 2, "c0")) {
			fprintf(stderr, "%s: %s: '%s' is not a virtio-blk character device "
					"(vdXc0)\n", prog, o->path, name);
			return -ENODEV;
		}
		name[n - 2] = 0;
	}
	snprintf(b->disk, sizeof(b->disk), "%s", name);
	v = sysfs_num("/sys/block/%s/size", b->disk);
	if (v <= 0) {
		fprintf(stderr, "%s: %s: cannot read /sys/block/%s/size\n", prog, o->path,
			b->disk);
		return -ENODEV;
	}
	b->disk_bytes = (uint64_t)v * 512;
	v = sysfs_num("/sys/block/%s/queue/logical_block_size", b->disk);
	b->lbs = v > 0 ? (unsigned int)v : 512;
	b->poll_queue = (int)sysfs_num("/sys/block/%s/queue/io_poll", b->disk);
	if (b->poll_queue > 1)
		b->poll_queue = 1;
	return 0;
}

static int setup(struct bench *b)
{
	const struct opts *o = b->o;
	struct io_uring_params p = { 0 };
	uint64_t range = b->disk_bytes;
	int ret;

	if (o->bs % b->lbs) {
		fprintf(stderr, "%s: %s: -b %u is not a multiple of the logical block size %u\n",
			prog, o->path, o->bs, b->lbs);
		return -EINVAL;
	}
	if (o->range_mib && o->range_mib << 20 < range)
		range = o->range_mib << 20;
	b->range_blocks = range / o->bs;
	if (!b->range_blocks) {
		fprintf(stderr, "%s: %s: the disk (%" PRIu64 " bytes) holds no %u-byte block\n",
			prog, o->path, b->disk_bytes, o->bs);
		return -EINVAL;
	}
	if (o->iopoll && b->poll_queue != 1)
		fprintf(stderr, "%s: warning: %s has no poll queue (/sys/block/%s/queue/io_poll "
				"is not 1): -p polls requests that complete by interrupt\n",
			prog, b->disk, b->disk);

	if (b->passthrough)
		p.flags |= IORING_SETUP_SQE128;
	if (o->iopoll)
		p.flags |= IORING_SETUP_IOPOLL;
	p.flags |= IORING_SETUP_CQSIZE;
	p.cq_entries = 2 * o->depth;	/* never overflows: at most depth in flight */
	ret = io_uring_queue_init_params(o->depth, &b->ring, &p);
	if (ret) {
		fprintf(stderr, "%s: io_uring_setup (depth %u%s%s): %s\n", prog, o->depth,
			b->passthrough ? ", SQE128" : "", o->iopoll ? ", IOPOLL" : "",
			strerror(-ret));
		return ret;
	}
	if (posix_memalign((void **)&b->bufs, 4096, (size_t)o->depth * o->bs)) {
		fprintf(stderr, "%s: %u buffers of %u bytes: %s\n", prog, o->depth, o->bs,
			strerror(ENOMEM));
		return -ENOMEM;
	}
	memset(b->bufs, o->verify >= 0 ? ~o->verify & 0xff : 0, (size_t)o->depth * o->bs);
	if (o->fixed) {
		struct iovec *iov = calloc(o->depth, sizeof(*iov));

		if (!iov)
			return -ENOMEM;
		for (unsigned int i = 0; i < o->depth; i++) {
			iov[i].iov_base = b->bufs + (size_t)i * o->bs;
			iov[i].iov_len = o->bs;
		}
		ret = io_uring_register_buffers(&b->ring, iov, o->depth);
		free(iov);
		if (ret) {
			fprintf(stderr, "%s: io_uring_register_buffers (%u of %u bytes): %s\n",
				prog, o->depth, o->bs, strerror(-ret));
			return ret;
		}
	}
	if (o->regfile) {
		ret = io_uring_register_files(&b->ring, &b->fd, 1);
		if (ret) {
			fprintf(stderr, "%s: io_uring_register_files (%s): %s\n", prog, o->path,
				strerror(-ret));
			return ret;
		}
	}
	for (unsigned int i = 0; i < o->depth; i++)
		b->free_slots[b->nfree++] = o->depth - 1 - i;
	b->rng = o->seed ? o->seed : 1;
	return 0;
}

/* Queues one random read into a free slot (there is one: inflight+pending < depth). */
static void prep_read(struct bench *b)
{
	const struct opts *o = b->o;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);	/* SQ holds depth */
	unsigned int slot = b->free_slots[--b->nfree];
	uint64_t off = next_rand(b) % b->range_blocks * o->bs;
	char *buf = b->bufs + (size_t)slot * o->bs;
	int fd = o->regfile ? 0 : b->fd;

	if (b->passthrough) {
		struct virtblk_uring_cmd cmd = {
			.type = VIRTIO_BLK_T_IN,
			.sector = off >> 9,
			.data = (uintptr_t)buf,
			.data_len = o->bs,
		};

		memset(sqe, 0, 2 * sizeof(*sqe));	/* a 128-byte SQE */
		sqe->opcode = IORING_OP_URING_CMD;
		sqe->fd = fd;
		sqe->cmd_op = VIRTBLK_URING_CMD_IO;
		if (o->fixed) {
			sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
			sqe->buf_index = slot;
		}
		memcpy(sqe->cmd, &cmd, sizeof(cmd));
	} else if (o->fixed) {
		io_uring_prep_read_fixed(sqe, fd, buf, o->bs, off, slot);
	} else {
		io_uring_prep_read(sqe, fd, buf, o->bs, off);
	}
	if (o->regfile)
		sqe->flags |= IOSQE_FIXED_FILE;
	sqe->user_data = slot;
	b->pending++;
	b->issued++;
}

/*
 * Makes the prepared SQEs visible to the kernel (what liburing's submit does
 * before its io_uring_enter()); this tool calls io_uring_enter() itself so
 * that every call is counted.
 */
static void publish_sqes(struct io_uring *ring)
{
	struct io_uring_sq *sq = &ring->sq;

	if (sq->sqe_head != sq->sqe_tail) {
		sq->sqe_head = sq->sqe_tail;
		io_uring_smp_store_release(sq->ktail, sq->sqe_tail);
	}
}

/* Takes every CQE there is, without a system call. */
static int reap(struct bench *b)
{
	struct io_uring_cqe *cqe;
	unsigned int head, n = 0;
	int ret = 0;

	io_uring_for_each_cqe(&b->ring, head, cqe) {
		int want = b->passthrough ? 0 : (int)b->o->bs;

		if (cqe->res != want && !ret) {
			ret = cqe->res < 0 ? cqe->res : -EIO;
			if (cqe->res < 0)
				fprintf(stderr, "%s: read on %s: %s (res %d)\n", prog, b->o->path,
					strerror(-cqe->res), cqe->res);
			else
				fprintf(stderr, "%s: read on %s: res %d, expected %d\n", prog,
					b->o->path, cqe->res, want);
		}
		if (b->o->verify >= 0 && cqe->res == want && !ret) {
			const unsigned char *p = (const unsigned char *)b->bufs +
						 cqe->user_data * b->o->bs;

			for (unsigned int i = 0; i < b->o->bs; i++) {
				if (p[i] != b->o->verify) {
					fprintf(stderr, "%s: read on %s: byte %u is 0x%02x, not "
							"0x%02x\n", prog, b->o->path, i, p[i],
						b->o->verify);
					ret = -EIO;
					break;
				}
			}
			memset((void *)p, ~b->o->verify & 0xff, b->o->bs);	/* not left over */
		}
		b->free_slots[b->nfree++] = (unsigned int)cqe->user_data;
		n++;
	}
	io_uring_cq_advance(&b->ring, n);
	b->inflight -= n;
	b->ios += n;
	return ret;
}

static int run(struct bench *b, double *elapsed_ms)
{
	const struct opts *o = b->o;
	double start = bench_now_ms(), now = start;
	int ret = 0;

	for (;;) {
		bool stop = ret || (o->count && b->issued >= o->count) ||
			    (o->seconds > 0 && now - start >= o->seconds * 1e3);
		unsigned int to_wait, flags = 0;

		if (stop && !b->inflight && !b->pending)
			break;
		if (!stop) {
			unsigned int room = o->depth - b->inflight - b->pending;
			unsigned long long n = room < o->submit_batch ? room : o->submit_batch;

			if (o->count && n > o->count - b->issued)
				n = o->count - b->issued;
			while (n--)
				prep_read(b);
		}
		if (stop)	/* drain */
			to_wait = b->inflight + b->pending;
		else if (!b->pending || b->inflight + b->pending == o->depth)
			to_wait = b->inflight + b->pending < o->complete_batch ?
				  b->inflight + b->pending : o->complete_batch;
		else
			to_wait = 0;
		if (to_wait || o->iopoll)
			flags |= IORING_ENTER_GETEVENTS;
		publish_sqes(&b->ring);
		int sub = io_uring_enter(b->ring.ring_fd, b->pending, to_wait, flags, NULL);

		b->enters++;
		if (sub < 0) {
			if (sub != -EINTR && sub != -EAGAIN && sub != -EBUSY) {
				fprintf(stderr, "%s: io_uring_enter on %s: %s\n", prog, o->path,
					strerror(-sub));
				/* nothing more is submitted; what is in flight completes */
				b->pending = 0;
				ret = ret ? ret : sub;
				if (!b->inflight)
					break;
			}
		} else {
			b->pending -= (unsigned int)sub;
			b->inflight += (unsigned int)sub;
		}
		int r = reap(b);

		if (r && !ret)
			ret = r;
		now = bench_now_ms();
	}
	*elapsed_ms = bench_now_ms() - start;
	return ret;
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static const char *mode_name(const struct bench *b)
{
	return b->passthrough ? "passthrough" : "block";
}

int main(int argc, char **argv)
{
	struct opts o = { .depth = 8, .complete_batch = 1, .bs = 4096, .seconds = 5,
			  .seed = 1, .verify = -1 };
	struct bench b = { .o = &o, .fd = -1, .poll_queue = -1 };
	double ms;
	char *end;
	int opt, ret;

	static const struct option longopts[] = { { "help", no_argument, NULL, 'h' }, { 0 } };

	while ((opt = getopt_long(argc, argv, "d:s:c:b:pBFPt:n:r:S:V:j:h", longopts, NULL)) != -1) {
		unsigned long long v = 0;

		if (strchr("dscbnrSV", opt)) {
			errno = 0;
			v = strtoull(optarg, &end, 0);
			if (errno || end == optarg || *end || optarg[0] == '-') {
				fprintf(stderr, "%s: -%c %s: not a number\n", prog, opt, optarg);
				return 2;
			}
		}
		switch (opt) {
		case 'd': o.depth = v > MAX_DEPTH ? MAX_DEPTH + 1 : (unsigned int)v; break;
		case 's': o.submit_batch = v > MAX_DEPTH ? MAX_DEPTH + 1 : (unsigned int)v; break;
		case 'c': o.complete_batch = v > MAX_DEPTH ? MAX_DEPTH + 1 : (unsigned int)v; break;
		case 'b': o.bs = v > (1U << 24) ? 0 : (unsigned int)v; break;
		case 'p': o.iopoll = true; break;
		case 'B': o.fixed = true; break;
		case 'F': o.regfile = true; break;
		case 'P': o.buffered = true; break;
		case 't':
			errno = 0;
			o.seconds = strtod(optarg, &end);
			if (errno || end == optarg || *end || o.seconds < 0) {
				fprintf(stderr, "%s: -t %s: not a number of seconds\n", prog, optarg);
				return 2;
			}
			break;
		case 'n': o.count = v; break;
		case 'r': o.range_mib = v > (1ULL << 40) ? 1ULL << 40 : v; break;
		case 'S': o.seed = v; break;
		case 'V':
			if (v > 255) {
				fprintf(stderr, "%s: -V %s: a byte is 0 to 255\n", prog, optarg);
				return 2;
			}
			o.verify = (int)v;
			break;
		case 'j': o.json = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!o.submit_batch)
		o.submit_batch = o.depth;
	if (o.buffered && o.iopoll) {
		fprintf(stderr, "%s: -P and -p: IOPOLL needs O_DIRECT\n", prog);
		return 2;
	}
	if (optind != argc - 1 || !o.depth || o.depth > MAX_DEPTH || !o.submit_batch ||
	    o.submit_batch > o.depth || !o.complete_batch || o.complete_batch > o.depth ||
	    !o.bs || (o.seconds == 0 && !o.count)) {
		if (optind == argc)
			fprintf(stderr, "%s: no DEVICE given\n", prog);
		else if (optind < argc - 1)
			fprintf(stderr, "%s: one DEVICE only\n", prog);
		else
			fprintf(stderr, "%s: need 1 <= -d <= %d, 1 <= -s <= -d, 1 <= -c <= -d, "
					"-b > 0, and -t or -n\n", prog, MAX_DEPTH);
		usage(stderr);
		return 2;
	}
	o.path = argv[optind];

	ret = open_device(&b);
	if (!ret)
		ret = setup(&b);
	if (!ret)
		ret = run(&b, &ms);
	if (ret) {
		if (b.ring.ring_fd > 0)
			io_uring_queue_exit(&b.ring);
		return 1;
	}

	double secs = ms / 1e3;
	double iops = b.ios / secs, mbs = b.ios * (double)o.bs / 1e6 / secs;
	double per_call = b.enters ? (double)b.ios / b.enters : 0;

	printf("%s: %s %s%s%s%s%s, depth %u, batch %u/%u, %u B: %.0f IOPS, %.1f MB/s, "
	       "%.2f IOs/call (%llu IOs, %llu calls, %.2f s)\n",
	       prog, o.path, mode_name(&b), o.buffered ? " buffered" : "",
	       o.iopoll ? " iopoll" : "", o.fixed ? " fixed" : "",
	       o.regfile ? " regfile" : "", o.depth, o.submit_batch, o.complete_batch, o.bs,
	       iops, mbs, per_call, b.ios, b.enters, secs);
	if (o.json) {
		FILE *f = strcmp(o.json, "-") ? fopen(o.json, "w") : stdout;

		if (!f) {
			fprintf(stderr, "%s: %s: %s\n", prog, o.json, strerror(errno));
			return 1;
		}
		fputs("{\"device\": ", f);
		json_str(f, o.path);
		fprintf(f, ", \"disk\": \"%s\", \"mode\": \"%s\", "
			   "\"page_cache\": %s, \"iopoll\": %s, \"fixed\": %s, \"regfile\": %s, "
			   "\"poll_queue\": %s, \"depth\": %u, \"submit_batch\": %u, "
			   "\"complete_batch\": %u, \"bs\": %u, \"range_bytes\": %" PRIu64 ", "
			   "\"seconds\": %.3f, \"ios\": %llu, \"enters\": %llu, "
			   "\"iops\": %.1f, \"mb_s\": %.2f, \"ios_per_enter\": %.3f, ",
			b.disk, mode_name(&b), o.buffered ? "true" : "false",
			o.iopoll ? "true" : "false",
			o.fixed ? "true" : "false", o.regfile ? "true" : "false",
			b.poll_queue < 0 ? "null" : b.poll_queue ? "true" : "false", o.depth,
			o.submit_batch, o.complete_batch, o.bs, b.range_blocks * o.bs, secs, b.ios,
			b.enters, iops, mbs, per_call);
		if (o.verify >= 0)
			fprintf(f, "\"verified_byte\": %d}\n", o.verify);
		else
			fprintf(f, "\"verified_byte\": null}\n");
		if (f != stdout && fclose(f)) {
			fprintf(stderr, "%s: %s: %s\n", prog, o.json, strerror(errno));
			return 1;
		}
	}
	io_uring_queue_exit(&b.ring);
	free(b.bufs);
	close(b.fd);
	return 0;
}
