// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz/vblk: random virtio-blk passthrough commands (kernel patches 23-25)
 * on the scratch disk with serial vblk1, /dev/vdXc0.
 *
 * Each case opens the char device read-only or read-write, sets up a ring
 * (128- or 64-byte SQEs, sometimes IOPOLL unless --no-iopoll), maybe registers a buffer and
 * the file, and submits 1-16 commands whose every field is drawn from the
 * case seed: cmd_op (mostly VIRTBLK_URING_CMD_IO), type (every VIRTIO_BLK_T_*
 * we know and any u32), ioprio, sector (0, the last, past the end, huge),
 * data (inside the buffer at any offset, unaligned, NULL, a kernel address,
 * noise), data_len (0, 1, 511, 512, 4 KiB, 1 MiB, huge, iovec counts), flag
 * bits, SQE flags, IORING_URING_CMD_FIXED with any buffer index.
 *
 * Checks per case: every command completes within 30 s; each CQE's res is 0
 * or a negative errno; afterwards the disk still works: a pattern written
 * through passthrough at a random sector reads back the same through
 * passthrough and through /dev/vdX with O_DIRECT. Units are commands.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <liburing-bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fuzz.h"

#define BUF_LEN		(2u << 20)	/* the case's data buffer */
#define MAX_CMDS	16
#define REGION_LEN	(8192 + BUF_LEN + (8ull << 30))

static char blk_path[300], chr_path[320];
/* IOPOLL rings unless --no-iopoll (--iopoll is accepted and changes nothing):
 * cases drawn with IOPOLL off replay the same with either */
static bool with_iopoll = true;
static uint64_t disk_sectors;

/* the scratch disk by serial, as the VM runner attaches it */
static int find_disk(const char *serial)
{
	DIR *d = opendir("/sys/block");
	struct dirent *de;
	int found = -ENODEV;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char path[300], line[64] = "";
		FILE *f;

		if (strncmp(de->d_name, "vd", 2))
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/serial", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(line, sizeof(line), f))
			line[strcspn(line, "\n")] = 0;
		fclose(f);
		if (strcmp(line, serial))
			continue;
		snprintf(blk_path, sizeof(blk_path), "/dev/%s", de->d_name);
		snprintf(path, sizeof(path), "/sys/block/%s/size", de->d_name);
		f = fopen(path, "r");
		if (f && fscanf(f, "%llu", (unsigned long long *)&disk_sectors) == 1)
			found = 0;
		if (f)
			fclose(f);
		break;
	}
	closedir(d);
	if (!found)
		found = iouring_bpf_vblk_char_path(blk_path, chr_path, sizeof(chr_path));
	return found;
}

static const uint64_t sector_edges[] = { 0, 1, 7, 8, 2048 };
static const uint64_t len_edges[] = { 0, 1, 20, 511, 512, 513, 4096, 65536, 1u << 20,
				      BUF_LEN, BUF_LEN + 4096, 0xffffffffu };
static const uint64_t type_edges[] = { 0, 1, 4, 8, 11, 13, 2, 3, 5, 0x80000000u, 0xffffffffu };

struct cmd_desc {
	uint32_t cmd_op, type, ioprio, data_len, flag;
	uint64_t sector, data;
	uint8_t sqe_flags;
	uint16_t buf_index;
	bool fixed;
};

static void describe(const struct cmd_desc *c, int i, FILE *f)
{
	fprintf(f, "  cmd %d: op=%#x type=%#x ioprio=%#x sector=%#llx data=%#llx len=%#x "
		"flag=%#x sqe_flags=%#x fixed=%d buf_index=%u\n", i, c->cmd_op, c->type,
		c->ioprio, (unsigned long long)c->sector, (unsigned long long)c->data,
		c->data_len, c->flag, c->sqe_flags, c->fixed, c->buf_index);
}

/* after the case: the disk still reads what passthrough wrote */
static int health_check(struct fuzz_rng *r, char *buf, char *back)
{
	uint64_t sector = fuzz_below(r, disk_sectors - 8) & ~7ull;
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	int fd, bfd, ret;

	for (int i = 0; i < 4096; i++)
		buf[i] = (char)fuzz_next(r);
	fd = open(chr_path, O_RDWR);
	bfd = open(blk_path, O_RDONLY | O_DIRECT);
	ret = fd < 0 || bfd < 0 ? -errno : io_uring_queue_init(4, &ring, IORING_SETUP_SQE128);
	if (ret)
		goto out;
	iouring_bpf_vblk_prep_write(io_uring_get_sqe(&ring), fd, buf, 4096, sector);
	iouring_bpf_vblk_prep_read(io_uring_get_sqe(&ring), fd, back, 4096, sector);
	io_uring_sqe_set_flags(ring.sq.sqes, IOSQE_IO_LINK);
	io_uring_submit(&ring);
	for (int i = 0; i < 2 && !ret; i++) {
		struct __kernel_timespec ts = { .tv_sec = 30 };

		ret = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
		if (!ret) {
			ret = cqe->res;
			io_uring_cqe_seen(&ring, cqe);
		}
	}
	io_uring_queue_exit(&ring);
	if (ret) {
		fprintf(stderr, "health: passthrough write+read at sector %llu: %s\n",
			(unsigned long long)sector, strerror(-ret));
		goto out;
	}
	if (memcmp(buf, back, 4096)) {
		fprintf(stderr, "health: passthrough read back differs at sector %llu\n",
			(unsigned long long)sector);
		ret = -EIO;
		goto out;
	}
	if (pread(bfd, back, 4096, (off_t)(sector * 512)) != 4096 || memcmp(buf, back, 4096)) {
		fprintf(stderr, "health: %s O_DIRECT read at sector %llu differs\n", blk_path,
			(unsigned long long)sector);
		ret = -EIO;
	}
out:
	if (fd >= 0)
		close(fd);
	if (bfd >= 0)
		close(bfd);
	return ret;
}

static int run_case(struct fuzz_run *run, uint64_t seed, struct iovec *iov, char *data,
		    char *scratch, char *back)
{
	struct fuzz_rng r = { seed };
	struct cmd_desc cmds[MAX_CMDS];
	struct io_uring ring;
	struct io_uring_params p = { 0 };
	unsigned int n = 1 + fuzz_below(&r, MAX_CMDS), got = 0;
	bool rw = fuzz_chance(&r, 3, 4), sqe128 = fuzz_chance(&r, 7, 8);
	bool iopoll = fuzz_chance(&r, 1, 6) && with_iopoll, reg_buf = fuzz_chance(&r, 1, 2);
	bool reg_file = fuzz_chance(&r, 1, 3);
	int fd, ret, bad = 0;
	double deadline;
	bool done[MAX_CMDS] = { false };

	fd = open(chr_path, rw ? O_RDWR : O_RDONLY);
	if (fd < 0) {
		fuzz_failed(run, seed, "open %s: %s", chr_path, strerror(errno));
		return -1;
	}
	p.flags = (sqe128 ? IORING_SETUP_SQE128 : 0) | (iopoll ? IORING_SETUP_IOPOLL : 0);
	ret = io_uring_queue_init_params(32, &ring, &p);
	if (ret) {
		fuzz_failed(run, seed, "io_uring_queue_init(flags %#x): %s", p.flags, strerror(-ret));
		close(fd);
		return -1;
	}
	for (int i = 0; i < 4; i++) {
		iov[i].iov_base = data + fuzz_below(&r, BUF_LEN / 2);
		iov[i].iov_len = fuzz_pick(&r, len_edges, 8);
	}
	if (reg_buf) {
		struct iovec rb = { data, 512u << fuzz_below(&r, 13) };

		ret = io_uring_register_buffers(&ring, &rb, 1);
		if (ret)
			reg_buf = false;
	}
	if (reg_file && io_uring_register_files(&ring, &fd, 1))
		reg_file = false;

	for (unsigned int i = 0; i < n; i++) {
		struct cmd_desc *c = &cmds[i];
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		struct virtblk_uring_cmd *vc;

		memset(c, 0, sizeof(*c));
		c->cmd_op = fuzz_chance(&r, 15, 16) ? VIRTBLK_URING_CMD_IO : (uint32_t)fuzz_next(&r);
		c->type = fuzz_pick(&r, type_edges, sizeof(type_edges) / 8);
		c->ioprio = fuzz_chance(&r, 3, 4) ? 0 : (uint32_t)fuzz_next(&r);
		switch (fuzz_below(&r, 4)) {
		case 0: c->sector = fuzz_pick(&r, sector_edges, 5); break;
		case 1: c->sector = disk_sectors - fuzz_below(&r, 16); break;
		case 2: c->sector = disk_sectors + fuzz_below(&r, 16); break;
		default: c->sector = fuzz_below(&r, disk_sectors); break;
		}
		switch (fuzz_below(&r, 8)) {
		case 0: c->data = 0; break;
		case 1: c->data = 0xffff888000000000ull + fuzz_below(&r, 1u << 30); break;
		case 2: c->data = fuzz_next(&r); break;
		case 3: c->data = (uintptr_t)iov; break;
		default: c->data = (uintptr_t)data + fuzz_below(&r, BUF_LEN); break;
		}
		c->data_len = fuzz_chance(&r, 1, 4) ? (uint32_t)fuzz_below(&r, 6) :
			      (uint32_t)fuzz_pick(&r, len_edges, sizeof(len_edges) / 8);
		c->flag = fuzz_chance(&r, 2, 3) ? (uint32_t)fuzz_below(&r, 4) : (uint32_t)fuzz_next(&r);
		if (c->data == (uintptr_t)iov && fuzz_chance(&r, 3, 4))
			c->flag |= VIRTBLK_URING_CMD_F_VEC;
		/* no IOSQE_BUFFER_SELECT / CQE_SKIP: their misuse is io_uring's,
		 * not ours, and a skipped CQE would look like a hang */
		c->sqe_flags = (uint8_t)(fuzz_next(&r) & (IOSQE_FIXED_FILE | IOSQE_IO_LINK |
							   IOSQE_IO_HARDLINK | IOSQE_ASYNC |
							   IOSQE_IO_DRAIN));
		if (!fuzz_chance(&r, 1, 4))
			c->sqe_flags &= ~IOSQE_FIXED_FILE;
		c->fixed = fuzz_chance(&r, 1, 4);
		c->buf_index = fuzz_chance(&r, 3, 4) ? 0 : (uint16_t)fuzz_next(&r);
		if (i == n - 1)	/* a dangling link is io_uring's business */
			c->sqe_flags &= ~(IOSQE_IO_LINK | IOSQE_IO_HARDLINK);

		io_uring_prep_rw(IORING_OP_URING_CMD, sqe,
				 (c->sqe_flags & IOSQE_FIXED_FILE) ? (reg_file ? 0 : 3) : fd,
				 NULL, 0, 0);
		sqe->cmd_op = c->cmd_op;
		sqe->flags = c->sqe_flags;
		sqe->user_data = i;
		if (c->fixed) {
			sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
			sqe->buf_index = c->buf_index;
		}
		vc = iouring_bpf_vblk_cmd(sqe);
		/* on a 64-byte SQE ring only 16 bytes of cmd exist: the rest
		 * would land in the next SQE, which the kernel must refuse
		 * before reading (the driver needs SQE128) */
		if (sqe128) {
			vc->type = c->type;
			vc->ioprio = c->ioprio;
			vc->sector = c->sector;
			vc->data = c->data;
			vc->data_len = c->data_len;
			vc->flag = c->flag;
		} else {
			memcpy(sqe->cmd, c, 16);
		}
		if (run->verbose)
			describe(c, i, stdout);
	}
	/* An SQE the kernel refuses at submission gets its CQE and ends that
	 * io_uring_enter(); the SQEs behind it wait in the SQ: submit again
	 * until every SQE went in or the kernel takes none. */
	for (unsigned int sent = 0; sent < n;) {
		ret = io_uring_submit(&ring);
		if (ret <= 0) {
			/* those never submitted have no CQE to wait for */
			n = sent;
			break;
		}
		sent += ret;
	}
	deadline = fuzz_now() + 30;
	while (got < n) {
		struct __kernel_timespec ts = { .tv_sec = 1 };
		struct io_uring_cqe *cqe;

		ret = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
		/* an IOPOLL ring's wait returns -ETIME early whenever the
		 * kernel's poll loop yields the CPU: only the deadline counts */
		if (ret == -ETIME && fuzz_now() < deadline)
			continue;
		if (ret == -ETIME) {
			fuzz_failed(run, seed, "%u of %u commands never completed (30 s); ring flags %#x, "
				    "fd %s, registered buffer %d, registered file %d", n - got, n,
				    p.flags, rw ? "O_RDWR" : "O_RDONLY", reg_buf, reg_file);
			for (unsigned int i = 0; i < n; i++) {
				if (!done[i])
					fprintf(stderr, "  never completed:");
				describe(&cmds[i], i, stderr);
			}
			bad = 1;
			break;
		}
		if (ret == -EINTR)
			continue;
		if (ret) {
			/* an SQE the kernel refused at submit time has no CQE
			 * when io_uring_submit() returned short; stop waiting */
			break;
		}
		if (cqe->res > 0 || cqe->res < -4095) {
			fuzz_failed(run, seed, "command %llu: impossible res %d",
				    (unsigned long long)cqe->user_data, cqe->res);
			if (cqe->user_data < n)
				describe(&cmds[cqe->user_data], (int)cqe->user_data, stderr);
			bad = 1;
		}
		if (cqe->user_data < n)
			done[cqe->user_data] = true;
		io_uring_cqe_seen(&ring, cqe);
		got++;
	}
	run->units += n;
	io_uring_queue_exit(&ring);
	close(fd);
	if (bad)
		return -1;
	ret = health_check(&r, scratch, back);
	if (ret) {
		fuzz_failed(run, seed, "the disk misbehaves after the case (%s)", strerror(-ret));
		for (unsigned int i = 0; i < n; i++)
			describe(&cmds[i], i, stderr);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct fuzz_run run;
	char *region, *data, *scratch, *back;
	struct iovec *iov;
	uint64_t seed;
	int ret;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--iopoll") || !strcmp(argv[i], "--no-iopoll")) {
			with_iopoll = !strcmp(argv[i], "--iopoll");
			memmove(&argv[i], &argv[i + 1], (argc - i) * sizeof(*argv));
			argc--;
			break;
		}
	ret = fuzz_init(&run, "vblk", "commands", argc, argv);
	if (ret)
		return ret > 0 ? 0 : 2;
	ret = find_disk("vblk1");
	if (ret) {
		/* the VM runner always attaches it; on our kernel the char
		 * device exists, so its absence is a failure, not a skip */
		fprintf(stderr, "fuzz vblk: no passthrough device for the disk with serial vblk1: %s\n",
			strerror(-ret));
		return 1;
	}
	printf("fuzz vblk: %s (%s), %llu sectors\n", chr_path, blk_path,
	       (unsigned long long)disk_sectors);
	/* A read the kernel accepts lands wherever data points, for up to
	 * 4 GiB: the iovec page and the buffer sit between a guard page and
	 * 8 GiB of PROT_NONE, so a bad length faults instead of overwriting
	 * this process's own memory. */
	region = mmap(NULL, REGION_LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		      -1, 0);
	if (region == MAP_FAILED || mprotect(region + 4096, 4096 + BUF_LEN, PROT_READ | PROT_WRITE) ||
	    posix_memalign((void **)&scratch, 4096, 4096) ||
	    posix_memalign((void **)&back, 4096, 4096)) {
		perror("fuzz vblk: buffers");
		return 1;
	}
	iov = (struct iovec *)(region + 4096);
	data = region + 8192;
	memset(data, 0x5a, BUF_LEN);
	while (fuzz_next_case(&run, &seed))
		if (run_case(&run, seed, iov, data, scratch, back) && run.failures >= 3)
			break;
	return fuzz_finish(&run);
}
