// SPDX-License-Identifier: GPL-2.0
/*
 * vblk/refusals (VM): every refusal of kernel/README.md's errno table, with
 * its exact errno, on both disks; next to each, the nearest command that is
 * accepted (so a check cannot pass by refusing everything):
 * - -EBADRQC unknown types; -EOPNOTSUPP unknown flags, flags that do not
 *   apply to the type, F_VEC with a registered buffer, a 64-byte-SQE ring;
 *   -ENOTTY any other cmd_op;
 * - -EINVAL lengths that are not a multiple of the logical block size, zero
 *   lengths (flat, zero iovecs, zero-length iovecs, DISCARD, WRITE_ZEROES),
 *   fields that must be 0 (FLUSH's, DISCARD's data, a registered buffer for
 *   FLUSH or DISCARD), GET_ID with fewer than 20 bytes or a sector, an
 *   invalid I/O priority class; a sector that is not a multiple of the
 *   logical block size when the disk's blocks are bigger than 512 bytes;
 * - -ERANGE past the end (one block after the last, a range straddling the
 *   end, sector 2^64-1), while the last block itself is accepted;
 * - -E2BIG max_segments + 1 iovecs (max_segments is accepted);
 * - -EOVERFLOW DISCARD / WRITE_ZEROES longer than their limits, IN of a
 *   buffer touching max_segments + 1 pages (max_segments is accepted), and
 *   IN/OUT longer than max_hw_sectors_kb when a 32-bit length can express it;
 * - -EFAULT bad buffer and iovec pointers, kernel addresses, ranges outside
 *   the registered buffer, a read into read-only memory (reads the kernel
 *   bounces are vblk/bounce-efault's);
 * - -EACCES OUT, FLUSH, DISCARD, WRITE_ZEROES on an O_RDONLY file (IN and
 *   GET_ID work there), IN and GET_ID on an O_WRONLY file (writes work);
 * - -EROFS OUT, DISCARD, WRITE_ZEROES on a disk set read-only (BLKROSET;
 *   FLUSH and IN still work), undone afterwards.
 * A refused write changes nothing: the area the refused writes aimed at
 * still holds its pattern at the end.
 *
 * vblk/bounce-efault (VM): reads whose buffer the kernel bounces (an
 * address or length not aligned to the queue's dma_alignment: GET_ID's 20
 * bytes always) are copied to the user's memory only at completion. When
 * that memory cannot be written (unmapped, PROT_NONE, read-only), the
 * command must complete with -EFAULT, as the aligned reads do, not 0 with
 * the data dropped.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/ioprio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>
#include "vblk.h"

#define AREA		(64 * 1024)	/* where refused writes aim: sectors 0..127 */

struct ctx {
	struct disk *d;
	struct io_uring ring;
	int rw, ro, wo;		/* /dev/vdXc0 opened O_RDWR, O_RDONLY, O_WRONLY */
	char *buf;		/* 1 MiB, registered as buffer 0 */
	char *pat;		/* AREA bytes of pattern, on the disk at sector 0 */
	unsigned int checks;
	bool ok;
};

#define BUF_LEN		(1u << 20)

/*
 * Run the SQE the caller prepared (and edited) and compare its res with
 * want. prep is a statement that fills `sqe` (a struct io_uring_sqe *).
 */
#define EXPECT(c, want, what, prep)						\
	do {									\
		struct io_uring_sqe *sqe = sqe_get(&(c)->ring);			\
		int __res;							\
		if (!sqe) {							\
			(c)->ok = false;					\
			break;							\
		}								\
		prep;								\
		__res = run_sqe(&(c)->ring);					\
		(c)->ok &= CHECK(__res == (want), "%s: %s: res %d (%s), want %d (%s)",	\
				 (c)->d->serial, what, __res,			\
				 strerror(__res < 0 ? -__res : 0), (want),	\
				 strerror((want) < 0 ? -(want) : 0));		\
		(c)->checks++;							\
	} while (0)

static struct virtblk_uring_cmd *cmd(struct io_uring_sqe *sqe)
{
	return iouring_bpf_vblk_cmd(sqe);
}

static void types_flags_ops(struct ctx *c)
{
	static const __u32 bad_types[] = { 2, 3, 5, 6, 7, 9, 10, 12, 14, 15, 16, 0x80, 0xffffffff };
	static const __u32 bad_flags[] = { 1u << 2, 1u << 8, 1u << 31 };
	unsigned int i;
	char what[96];
	int fd = c->rw;

	for (i = 0; i < sizeof(bad_types) / sizeof(bad_types[0]); i++) {
		snprintf(what, sizeof(what), "type %#x", bad_types[i]);
		EXPECT(c, -EBADRQC, what,
		       (iouring_bpf_vblk_prep_read(sqe, fd, c->buf, 4096, 0),
			cmd(sqe)->type = bad_types[i]));
	}
	EXPECT(c, 0, "IN (type 0)", iouring_bpf_vblk_prep_read(sqe, fd, c->buf, 4096, 0));

	/* unknown flags, on every type */
	for (i = 0; i < sizeof(bad_flags) / sizeof(bad_flags[0]); i++) {
		snprintf(what, sizeof(what), "IN with flag %#x", bad_flags[i]);
		EXPECT(c, -EOPNOTSUPP, what,
		       (iouring_bpf_vblk_prep_read(sqe, fd, c->buf, 4096, 0),
			cmd(sqe)->flag = bad_flags[i]));
		snprintf(what, sizeof(what), "WRITE_ZEROES with flag %#x", bad_flags[i]);
		EXPECT(c, -EOPNOTSUPP, what,
		       (iouring_bpf_vblk_prep_write_zeroes(sqe, fd, 0, 4096, true),
			cmd(sqe)->flag |= bad_flags[i]));
	}
	/* known flags where they do not apply */
	EXPECT(c, -EOPNOTSUPP, "IN with F_UNMAP",
	       (iouring_bpf_vblk_prep_read(sqe, fd, c->buf, 4096, 0),
		cmd(sqe)->flag = VIRTBLK_URING_CMD_F_UNMAP));
	EXPECT(c, -EOPNOTSUPP, "OUT with F_UNMAP",
	       (iouring_bpf_vblk_prep_write(sqe, fd, c->pat, 4096, 0),
		cmd(sqe)->flag = VIRTBLK_URING_CMD_F_UNMAP));
	EXPECT(c, -EOPNOTSUPP, "DISCARD with F_UNMAP",
	       (iouring_bpf_vblk_prep_discard(sqe, fd, 0, 4096),
		cmd(sqe)->flag = VIRTBLK_URING_CMD_F_UNMAP));
	EXPECT(c, -EOPNOTSUPP, "WRITE_ZEROES with F_VEC",
	       (iouring_bpf_vblk_prep_write_zeroes(sqe, fd, 0, 4096, false),
		cmd(sqe)->flag = VIRTBLK_URING_CMD_F_VEC));
	EXPECT(c, -EOPNOTSUPP, "DISCARD with F_VEC",
	       (iouring_bpf_vblk_prep_discard(sqe, fd, 0, 4096),
		cmd(sqe)->flag = VIRTBLK_URING_CMD_F_VEC));
	EXPECT(c, -EOPNOTSUPP, "FLUSH with F_VEC",
	       (iouring_bpf_vblk_prep_flush(sqe, fd), cmd(sqe)->flag = VIRTBLK_URING_CMD_F_VEC));
	EXPECT(c, -EOPNOTSUPP, "GET_ID with F_VEC",
	       (iouring_bpf_vblk_prep_get_id(sqe, fd, c->buf, 20),
		cmd(sqe)->flag = VIRTBLK_URING_CMD_F_VEC));
	EXPECT(c, -EOPNOTSUPP, "GET_ID with F_UNMAP",
	       (iouring_bpf_vblk_prep_get_id(sqe, fd, c->buf, 20),
		cmd(sqe)->flag = VIRTBLK_URING_CMD_F_UNMAP));
	/* F_VEC with a registered buffer */
	EXPECT(c, -EOPNOTSUPP, "IN with F_VEC and IORING_URING_CMD_FIXED",
	       (iouring_bpf_vblk_prep_read_fixed(sqe, fd, c->buf, 4096, 0, 0),
		cmd(sqe)->flag = VIRTBLK_URING_CMD_F_VEC));
	EXPECT(c, -EOPNOTSUPP, "OUT with F_VEC and IORING_URING_CMD_FIXED",
	       (iouring_bpf_vblk_prep_write_fixed(sqe, fd, c->pat, 4096, 0, 0),
		cmd(sqe)->flag = VIRTBLK_URING_CMD_F_VEC));
	EXPECT(c, 0, "IN from a registered buffer",
	       iouring_bpf_vblk_prep_read_fixed(sqe, fd, c->buf, 4096, 0, 0));

	/* cmd_op */
	EXPECT(c, -ENOTTY, "cmd_op 0",
	       (iouring_bpf_vblk_prep_read(sqe, fd, c->buf, 4096, 0), sqe->cmd_op = 0));
	EXPECT(c, -ENOTTY, "cmd_op VIRTBLK_URING_CMD_IO + 1",
	       (iouring_bpf_vblk_prep_read(sqe, fd, c->buf, 4096, 0),
		sqe->cmd_op = VIRTBLK_URING_CMD_IO + 1));
	EXPECT(c, -ENOTTY, "cmd_op _IOWR('V', 0x81, struct virtblk_uring_cmd)",
	       (iouring_bpf_vblk_prep_read(sqe, fd, c->buf, 4096, 0),
		sqe->cmd_op = _IOWR('V', 0x81, struct virtblk_uring_cmd)));
	EXPECT(c, -ENOTTY, "cmd_op _IOR('V', 0x80, struct virtblk_uring_cmd)",
	       (iouring_bpf_vblk_prep_read(sqe, fd, c->buf, 4096, 0),
		sqe->cmd_op = _IOR('V', 0x80, struct virtblk_uring_cmd)));
	EXPECT(c, -ENOTTY, "cmd_op UBLK_U_IO_FETCH_REQ",
	       (iouring_bpf_vblk_prep_read(sqe, fd, c->buf, 4096, 0),
		sqe->cmd_op = UBLK_U_IO_FETCH_REQ));
}

static void lengths_fields(struct ctx *c)
{
	struct iovec iov[4] = { { c->buf, 0 }, { c->buf + 4096, 0 } };
	unsigned int lbs = c->d->lbs;
	int fd = c->rw;

	EXPECT(c, -EINVAL, "IN of 0 bytes", iouring_bpf_vblk_prep_read(sqe, fd, c->buf, 0, 0));
	EXPECT(c, -EINVAL, "OUT of 0 bytes", iouring_bpf_vblk_prep_write(sqe, fd, c->pat, 0, 0));
	EXPECT(c, -EINVAL, "IN of 0 iovecs", iouring_bpf_vblk_prep_readv(sqe, fd, iov, 0, 0));
	EXPECT(c, -EINVAL, "IN of 2 empty iovecs", iouring_bpf_vblk_prep_readv(sqe, fd, iov, 2, 0));
	EXPECT(c, -EINVAL, "IN of 0 bytes, registered",
	       iouring_bpf_vblk_prep_read_fixed(sqe, fd, c->buf, 0, 0, 0));
	EXPECT(c, -EINVAL, "IN of lbs - 1 bytes",
	       iouring_bpf_vblk_prep_read(sqe, fd, c->buf, lbs - 1, 0));
	EXPECT(c, -EINVAL, "IN of lbs + 1 bytes",
	       iouring_bpf_vblk_prep_read(sqe, fd, c->buf, lbs + 1, 0));
	EXPECT(c, -EINVAL, "OUT of 100 bytes", iouring_bpf_vblk_prep_write(sqe, fd, c->pat, 100, 0));
	EXPECT(c, -EINVAL, "IN of 4095 bytes, registered",
	       iouring_bpf_vblk_prep_read_fixed(sqe, fd, c->buf, 4095, 0, 0));
	iov[0].iov_len = 512;
	iov[1].iov_len = 100;
	EXPECT(c, -EINVAL, "IN of iovecs totalling 612 bytes",
	       iouring_bpf_vblk_prep_readv(sqe, fd, iov, 2, 0));
	/* iovec pieces need not be whole blocks; the total must */
	iov[0].iov_len = 100;
	iov[1].iov_len = lbs - 100;
	EXPECT(c, 0, "IN of iovecs of 100 + (lbs - 100) bytes",
	       iouring_bpf_vblk_prep_readv(sqe, fd, iov, 2, 0));
	EXPECT(c, -EINVAL, "DISCARD of 0 bytes", iouring_bpf_vblk_prep_discard(sqe, fd, 0, 0));
	EXPECT(c, -EINVAL, "DISCARD of 100 bytes", iouring_bpf_vblk_prep_discard(sqe, fd, 0, 100));
	EXPECT(c, -EINVAL, "WRITE_ZEROES of 0 bytes",
	       iouring_bpf_vblk_prep_write_zeroes(sqe, fd, 0, 0, false));
	EXPECT(c, -EINVAL, "WRITE_ZEROES of lbs + 1 bytes",
	       iouring_bpf_vblk_prep_write_zeroes(sqe, fd, 0, lbs + 1, true));
	if (lbs > 512) {
		EXPECT(c, -EINVAL, "IN at sector 1 (inside the first block)",
		       iouring_bpf_vblk_prep_read(sqe, fd, c->buf, lbs, 1));
		EXPECT(c, -EINVAL, "DISCARD at sector 1",
		       iouring_bpf_vblk_prep_discard(sqe, fd, 1, lbs));
	} else {
		printf("%s: logical block size 512: every sector is aligned, the "
		       "misaligned-sector refusal cannot occur\n", c->d->serial);
	}
	/* fields that must be 0 */
	EXPECT(c, -EINVAL, "FLUSH with a sector",
	       (iouring_bpf_vblk_prep_flush(sqe, fd), cmd(sqe)->sector = 8));
	EXPECT(c, -EINVAL, "FLUSH with data",
	       (iouring_bpf_vblk_prep_flush(sqe, fd), cmd(sqe)->data = (uintptr_t)c->buf));
	EXPECT(c, -EINVAL, "FLUSH with a length",
	       (iouring_bpf_vblk_prep_flush(sqe, fd), cmd(sqe)->data_len = 512));
	EXPECT(c, -EINVAL, "FLUSH with a registered buffer",
	       (iouring_bpf_vblk_prep_flush(sqe, fd),
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED));
	EXPECT(c, 0, "FLUSH", iouring_bpf_vblk_prep_flush(sqe, fd));
	EXPECT(c, -EINVAL, "DISCARD with data",
	       (iouring_bpf_vblk_prep_discard(sqe, fd, 0, 4096),
		cmd(sqe)->data = (uintptr_t)c->buf));
	EXPECT(c, -EINVAL, "WRITE_ZEROES with data",
	       (iouring_bpf_vblk_prep_write_zeroes(sqe, fd, 0, 4096, false),
		cmd(sqe)->data = (uintptr_t)c->buf));
	EXPECT(c, -EINVAL, "DISCARD with a registered buffer",
	       (iouring_bpf_vblk_prep_discard(sqe, fd, 0, 4096),
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED));
	EXPECT(c, -EINVAL, "GET_ID into 19 bytes",
	       iouring_bpf_vblk_prep_get_id(sqe, fd, c->buf, VIRTIO_BLK_ID_BYTES - 1));
	EXPECT(c, -EINVAL, "GET_ID with a sector",
	       (iouring_bpf_vblk_prep_get_id(sqe, fd, c->buf, 20), cmd(sqe)->sector = 1));
	EXPECT(c, 0, "GET_ID into 20 bytes, registered",
	       (iouring_bpf_vblk_prep_get_id(sqe, fd, c->buf, 20),
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED, sqe->buf_index = 0));
	EXPECT(c, -EINVAL, "IN with I/O priority class 7",
	       (iouring_bpf_vblk_prep_read(sqe, fd, c->buf, 4096, 0),
		cmd(sqe)->ioprio = IOPRIO_PRIO_VALUE(7, 0)));
	EXPECT(c, 0, "IN with I/O priority best-effort 3",
	       (iouring_bpf_vblk_prep_read(sqe, fd, c->buf, 4096, 0),
		cmd(sqe)->ioprio = IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 3)));
}

static void ranges_sizes(struct ctx *c)
{
	uint64_t last = c->d->sectors - c->d->lbs / 512;	/* the last block */
	unsigned int lbs = c->d->lbs, nseg = c->d->max_segments, i;
	struct iovec *iov;
	char what[128];
	int fd = c->rw;

	EXPECT(c, 0, "IN of the last block", iouring_bpf_vblk_prep_read(sqe, fd, c->buf, lbs, last));
	EXPECT(c, -ERANGE, "IN of the block after the last",
	       iouring_bpf_vblk_prep_read(sqe, fd, c->buf, lbs, c->d->sectors));
	EXPECT(c, -ERANGE, "IN of the last block and the one after",
	       iouring_bpf_vblk_prep_read(sqe, fd, c->buf, 2 * lbs, last));
	EXPECT(c, -ERANGE, "IN at sector 2^64 - 8",
	       iouring_bpf_vblk_prep_read(sqe, fd, c->buf, lbs, UINT64_MAX - 7));
	EXPECT(c, -ERANGE, "IN at sector 2^63",
	       iouring_bpf_vblk_prep_read(sqe, fd, c->buf, lbs, 1ULL << 63));
	EXPECT(c, -ERANGE, "OUT straddling the end",
	       iouring_bpf_vblk_prep_write(sqe, fd, c->pat, 8 * lbs, last - 3 * (lbs / 512)));
	EXPECT(c, -ERANGE, "IN registered, straddling the end",
	       iouring_bpf_vblk_prep_read_fixed(sqe, fd, c->buf, 8 * lbs, last - 3 * (lbs / 512), 0));
	EXPECT(c, -ERANGE, "DISCARD straddling the end",
	       iouring_bpf_vblk_prep_discard(sqe, fd, last, 2 * lbs));
	EXPECT(c, -ERANGE, "WRITE_ZEROES past the end",
	       iouring_bpf_vblk_prep_write_zeroes(sqe, fd, c->d->sectors, lbs, false));
	EXPECT(c, -ERANGE, "WRITE_ZEROES at sector 2^64 - 8",
	       iouring_bpf_vblk_prep_write_zeroes(sqe, fd, UINT64_MAX - 7, lbs, false));

	/* iovec count: max_segments works, one more does not */
	iov = calloc(nseg + 1100, sizeof(*iov));
	if (!CHECK(iov, "calloc")) {
		c->ok = false;
		return;
	}
	for (i = 0; i < nseg + 1100; i++)
		iov[i] = (struct iovec){ c->buf + (size_t)i * 2048 % (BUF_LEN - 512), 512 };
	snprintf(what, sizeof(what), "IN of max_segments (%u) iovecs", nseg);
	EXPECT(c, 0, what, iouring_bpf_vblk_prep_readv(sqe, fd, iov, nseg, 0));
	snprintf(what, sizeof(what), "IN of max_segments + 1 (%u) iovecs", nseg + 1);
	EXPECT(c, -E2BIG, what, iouring_bpf_vblk_prep_readv(sqe, fd, iov, nseg + 1, 0));
	snprintf(what, sizeof(what), "OUT of max_segments + 1 (%u) iovecs", nseg + 1);
	EXPECT(c, -E2BIG, what, iouring_bpf_vblk_prep_writev(sqe, fd, iov, nseg + 1, 0));
	EXPECT(c, -E2BIG, "IN of 1025 (UIO_MAXIOV + 1) iovecs",
	       iouring_bpf_vblk_prep_readv(sqe, fd, iov, 1025, 0));
	free(iov);

	/* byte limits: DISCARD and WRITE_ZEROES have their own */
	if (c->d->discard_max + lbs <= UINT32_MAX) {
		uint32_t n = (uint32_t)(c->d->discard_max / lbs * lbs);

		snprintf(what, sizeof(what), "DISCARD of discard_max_hw_bytes + lbs (%u)", n + lbs);
		EXPECT(c, -EOVERFLOW, what, iouring_bpf_vblk_prep_discard(sqe, fd, 0, n + lbs));
	} else {
		printf("%s: discard_max_hw_bytes %llu: no 32-bit length exceeds it\n",
		       c->d->serial, (unsigned long long)c->d->discard_max);
	}
	if (c->d->wz_max + lbs <= UINT32_MAX) {
		uint32_t n = (uint32_t)(c->d->wz_max / lbs * lbs);

		snprintf(what, sizeof(what), "WRITE_ZEROES of write_zeroes_max_bytes + lbs (%u)",
			 n + lbs);
		EXPECT(c, -EOVERFLOW, what,
		       iouring_bpf_vblk_prep_write_zeroes(sqe, fd, 0, n + lbs, true));
	} else {
		printf("%s: write_zeroes_max_bytes %llu: no 32-bit length exceeds it\n",
		       c->d->serial, (unsigned long long)c->d->wz_max);
	}
	/* a flat buffer touching one page more than the queue has segments */
	{
		size_t n = (size_t)(nseg + 1) * 4096;
		void *big = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				 -1, 0);

		if (CHECK(big != MAP_FAILED, "mmap %zu", n)) {
			snprintf(what, sizeof(what), "IN of max_segments + 1 (%u) pages", nseg + 1);
			EXPECT(c, -EOVERFLOW, what,
			       iouring_bpf_vblk_prep_read(sqe, fd, big, (uint32_t)n, 0));
			snprintf(what, sizeof(what), "IN of max_segments (%u) pages", nseg);
			EXPECT(c, 0, what,
			       iouring_bpf_vblk_prep_read(sqe, fd, big, (uint32_t)(n - 4096), 0));
			munmap(big, n);
		} else {
			c->ok = false;
		}
	}
	/* IN/OUT: max_hw_sectors_kb, if a 32-bit length can say more */
	if (c->d->max_hw_bytes + lbs <= UINT32_MAX) {
		uint32_t n = (uint32_t)c->d->max_hw_bytes + lbs;
		/* address space only: the length is refused before any page is touched */
		void *big = mmap(NULL, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				 -1, 0);

		if (CHECK(big != MAP_FAILED, "mmap %u", n)) {
			snprintf(what, sizeof(what), "IN of max_hw_sectors_kb + lbs (%u)", n);
			EXPECT(c, -EOVERFLOW, what, iouring_bpf_vblk_prep_read(sqe, fd, big, n, 0));
			munmap(big, n);
		}
	} else {
		printf("%s: max_hw_sectors_kb is %llu KiB: no 32-bit length exceeds it, IN/OUT "
		       "-EOVERFLOW cannot occur on this disk\n", c->d->serial,
		       (unsigned long long)c->d->max_hw_bytes / 1024);
	}
}

static void faults(struct ctx *c)
{
	char *none = mmap(NULL, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *ro = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct iovec iov[2] = { { c->buf, 4096 }, { none, 4096 } };
	const uint64_t kaddr = 0xffff888000000000ULL;
	int fd = c->rw;

	if (!CHECK(none != MAP_FAILED && ro != MAP_FAILED, "mmap")) {
		c->ok = false;
		return;
	}
	EXPECT(c, -EFAULT, "IN into PROT_NONE memory",
	       iouring_bpf_vblk_prep_read(sqe, fd, none, 4096, 0));
	EXPECT(c, -EFAULT, "OUT from PROT_NONE memory",
	       iouring_bpf_vblk_prep_write(sqe, fd, none, 4096, 0));
	EXPECT(c, -EFAULT, "IN into read-only memory",
	       iouring_bpf_vblk_prep_read(sqe, fd, ro, 4096, 0));
	EXPECT(c, 0, "OUT from read-only memory (zeros, to sector 0, the pattern rewritten later)",
	       iouring_bpf_vblk_prep_write(sqe, fd, ro, 4096, 0));
	EXPECT(c, -EFAULT, "IN into address 4096 (unmapped)",
	       iouring_bpf_vblk_prep_read(sqe, fd, (void *)4096, 4096, 0));
	/* misaligned: the kernel copies into its own pages at issue */
	EXPECT(c, -EFAULT, "OUT from PROT_NONE memory, misaligned",
	       iouring_bpf_vblk_prep_write(sqe, fd, none + 8, 512, 0));
	EXPECT(c, -EFAULT, "IN into a kernel address",
	       (iouring_bpf_vblk_prep_read(sqe, fd, c->buf, 4096, 0), cmd(sqe)->data = kaddr));
	EXPECT(c, -EFAULT, "OUT from a kernel address",
	       (iouring_bpf_vblk_prep_write(sqe, fd, c->pat, 4096, 0), cmd(sqe)->data = kaddr));
	EXPECT(c, -EFAULT, "IN with the iovec array in PROT_NONE memory",
	       iouring_bpf_vblk_prep_readv(sqe, fd, (struct iovec *)none, 1, 0));
	EXPECT(c, -EFAULT, "IN with the iovec array at a kernel address",
	       (iouring_bpf_vblk_prep_readv(sqe, fd, iov, 1, 0), cmd(sqe)->data = kaddr));
	EXPECT(c, -EFAULT, "IN with an iovec into PROT_NONE memory",
	       iouring_bpf_vblk_prep_readv(sqe, fd, iov, 2, 0));
	/* registered buffer 0 is c->buf, BUF_LEN bytes */
	EXPECT(c, -EFAULT, "IN registered, before the buffer",
	       iouring_bpf_vblk_prep_read_fixed(sqe, fd, c->buf - 4096, 4096, 0, 0));
	EXPECT(c, -EFAULT, "IN registered, past the buffer's end",
	       iouring_bpf_vblk_prep_read_fixed(sqe, fd, c->buf + BUF_LEN - 2048, 4096, 0, 0));
	EXPECT(c, -EFAULT, "OUT registered, entirely after the buffer",
	       iouring_bpf_vblk_prep_write_fixed(sqe, fd, c->buf + BUF_LEN, 4096, 0, 0));
	EXPECT(c, 0, "IN registered, the buffer's last 4096 bytes",
	       iouring_bpf_vblk_prep_read_fixed(sqe, fd, c->buf + BUF_LEN - 4096, 4096, 0, 0));
	EXPECT(c, -EFAULT, "IN registered, buf_index 1 (not registered)",
	       iouring_bpf_vblk_prep_read_fixed(sqe, fd, c->buf, 4096, 0, 1));
	munmap(none, 8192);
	munmap(ro, 8192);
}

static void access_modes(struct ctx *c)
{
	unsigned char id[20];

	EXPECT(c, -EACCES, "OUT on O_RDONLY", iouring_bpf_vblk_prep_write(sqe, c->ro, c->pat, 4096, 0));
	EXPECT(c, -EACCES, "OUT vectored on O_RDONLY",
	       ({ static struct iovec v; v = (struct iovec){ c->pat, 4096 };
		  iouring_bpf_vblk_prep_writev(sqe, c->ro, &v, 1, 0); }));
	EXPECT(c, -EACCES, "OUT registered on O_RDONLY",
	       iouring_bpf_vblk_prep_write_fixed(sqe, c->ro, c->buf, 4096, 0, 0));
	EXPECT(c, -EACCES, "FLUSH on O_RDONLY", iouring_bpf_vblk_prep_flush(sqe, c->ro));
	EXPECT(c, -EACCES, "DISCARD on O_RDONLY", iouring_bpf_vblk_prep_discard(sqe, c->ro, 0, 4096));
	EXPECT(c, -EACCES, "WRITE_ZEROES on O_RDONLY",
	       iouring_bpf_vblk_prep_write_zeroes(sqe, c->ro, 0, 4096, false));
	EXPECT(c, -EACCES, "WRITE_ZEROES|F_UNMAP on O_RDONLY",
	       iouring_bpf_vblk_prep_write_zeroes(sqe, c->ro, 0, 4096, true));
	memset(c->buf, 0, AREA);
	EXPECT(c, 0, "IN on O_RDONLY", iouring_bpf_vblk_prep_read(sqe, c->ro, c->buf, AREA, 0));
	c->ok &= same(c->buf, c->pat, AREA, "IN on O_RDONLY: the pattern");
	memset(id, 0, sizeof(id));
	EXPECT(c, 0, "GET_ID on O_RDONLY", iouring_bpf_vblk_prep_get_id(sqe, c->ro, id, 20));
	c->ok &= CHECK(!strncmp((char *)id, c->d->serial, 20), "GET_ID on O_RDONLY: '%.20s'", id);

	/* O_WRONLY: IN and GET_ID need the file open for reading */
	memset(c->buf, 0, AREA);
	EXPECT(c, -EACCES, "IN on O_WRONLY", iouring_bpf_vblk_prep_read(sqe, c->wo, c->buf, AREA, 0));
	c->ok &= CHECK(c->buf[0] == 0 && !memcmp(c->buf, c->buf + 1, AREA - 1),
		       "IN on O_WRONLY changed the buffer");
	memset(id, 0, sizeof(id));
	EXPECT(c, -EACCES, "GET_ID on O_WRONLY", iouring_bpf_vblk_prep_get_id(sqe, c->wo, id, 20));
	c->ok &= CHECK(id[0] == 0, "GET_ID on O_WRONLY wrote '%.20s'", id);
	EXPECT(c, 0, "OUT on O_WRONLY (the pattern again)",
	       iouring_bpf_vblk_prep_write(sqe, c->wo, c->pat, AREA, 0));
	EXPECT(c, 0, "FLUSH on O_WRONLY", iouring_bpf_vblk_prep_flush(sqe, c->wo));
}

/* A read-only disk: writes refused with -EROFS, reads and FLUSH still work. */
static void read_only(struct ctx *c)
{
	int blk = blk_open(c->d, O_RDONLY), on = 1, off = 0, was = -1;

	if (blk < 0) {
		c->ok = false;
		return;
	}
	if (!CHECK(!ioctl(blk, BLKROGET, &was) && was == 0, "BLKROGET: %d (%s)", was,
		   strerror(errno)) ||
	    !CHECK(!ioctl(blk, BLKROSET, &on), "BLKROSET 1: %s", strerror(errno))) {
		c->ok = false;
		close(blk);
		return;
	}
	EXPECT(c, -EROFS, "OUT on a read-only disk",
	       iouring_bpf_vblk_prep_write(sqe, c->rw, c->pat, 4096, 0));
	EXPECT(c, -EROFS, "OUT registered on a read-only disk",
	       iouring_bpf_vblk_prep_write_fixed(sqe, c->rw, c->buf, 4096, 0, 0));
	EXPECT(c, -EROFS, "DISCARD on a read-only disk",
	       iouring_bpf_vblk_prep_discard(sqe, c->rw, 0, 4096));
	EXPECT(c, -EROFS, "WRITE_ZEROES on a read-only disk",
	       iouring_bpf_vblk_prep_write_zeroes(sqe, c->rw, 0, 4096, true));
	EXPECT(c, 0, "FLUSH on a read-only disk", iouring_bpf_vblk_prep_flush(sqe, c->rw));
	EXPECT(c, 0, "IN on a read-only disk",
	       iouring_bpf_vblk_prep_read(sqe, c->rw, c->buf, 4096, 0));
	/* O_RDONLY's refusal comes first */
	EXPECT(c, -EACCES, "OUT on O_RDONLY, read-only disk",
	       iouring_bpf_vblk_prep_write(sqe, c->ro, c->pat, 4096, 0));
	c->ok &= CHECK(!ioctl(blk, BLKROSET, &off), "BLKROSET 0: %s", strerror(errno));
	EXPECT(c, 0, "OUT after the disk is writable again",
	       iouring_bpf_vblk_prep_write(sqe, c->rw, c->pat, 4096, 0));
	close(blk);
}

/* a 64-byte-SQE ring: the command does not fit, -EOPNOTSUPP */
static void small_sqe(struct ctx *c)
{
	struct io_uring ring;
	struct io_uring_sqe tmp[2], *sqe;
	int ret, res = 1;

	ret = io_uring_queue_init(4, &ring, 0);
	if (!CHECK_OK(ret, "io_uring_queue_init (64-byte SQEs)")) {
		c->ok = false;
		return;
	}
	/* the helpers write 128 bytes: prepare a copy, keep the first 64 */
	iouring_bpf_vblk_prep_read(tmp, c->rw, c->buf, 4096, 0);
	sqe = io_uring_get_sqe(&ring);
	memcpy(sqe, tmp, sizeof(*sqe));
	ret = ring_submit_one(&ring, &res);
	c->ok &= CHECK(!ret && res == -EOPNOTSUPP, "IN on a 64-byte-SQE ring: res %d, want %d",
		       res, -EOPNOTSUPP);
	c->checks++;
	io_uring_queue_exit(&ring);
}

static bool run_disk(struct disk *d)
{
	struct ctx c = { .d = d, .rw = -1, .ro = -1, .wo = -1, .ok = true };
	struct iovec reg;
	int blk = -1, ret;

	if (ring_init(&c.ring, 8, 0))
		return false;
	c.buf = alloc_buf(BUF_LEN);
	c.pat = alloc_buf(AREA);
	c.rw = open(d->chr, O_RDWR | O_CLOEXEC);
	c.ro = open(d->chr, O_RDONLY | O_CLOEXEC);
	c.wo = open(d->chr, O_WRONLY | O_CLOEXEC);
	if (!c.buf || !c.pat || !CHECK(c.rw >= 0 && c.ro >= 0 && c.wo >= 0, "open %s: %s",
				       d->chr, strerror(errno))) {
		c.ok = false;
		goto out;
	}
	reg = (struct iovec){ c.buf, BUF_LEN };
	ret = io_uring_register_buffers(&c.ring, &reg, 1);
	if (!CHECK_OK(ret, "io_uring_register_buffers")) {
		c.ok = false;
		goto out;
	}
	fill_pattern(c.pat, AREA, 0, 0x5eed);
	blk = blk_open(d, O_RDWR);
	if (blk < 0 || !CHECK(!blk_pwrite(blk, c.pat, AREA, 0), "writing the pattern")) {
		c.ok = false;
		goto out;
	}

	types_flags_ops(&c);
	lengths_fields(&c);
	ranges_sizes(&c);
	faults(&c);
	/* "OUT from read-only memory" wrote zeros: the pattern again */
	c.ok &= CHECK(!blk_pwrite(blk, c.pat, AREA, 0), "rewriting the pattern");
	access_modes(&c);
	read_only(&c);
	small_sqe(&c);

	/* nothing refused reached the disk: the area still holds the pattern */
	memset(c.buf, 0, AREA);
	c.ok &= CHECK(!blk_pread(blk, c.buf, AREA, 0), "reading the area back") &&
		same(c.buf, c.pat, AREA, "the area refused writes aimed at");
	printf("%s: %u commands checked%s\n", d->serial, c.checks, c.ok ? ", all as expected" : "");
out:
	if (blk >= 0)
		close(blk);
	if (c.rw >= 0)
		close(c.rw);
	if (c.ro >= 0)
		close(c.ro);
	if (c.wo >= 0)
		close(c.wo);
	io_uring_queue_exit(&c.ring);
	free_buf(c.buf, BUF_LEN);
	free_buf(c.pat, AREA);
	return c.ok;
}

static bool bounce_efault(struct disk *d)
{
	struct ctx c = { .d = d, .ok = true };
	char *none = mmap(NULL, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *ro = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct iovec iov[2];
	int fd = open(d->chr, O_RDWR | O_CLOEXEC);

	if (!CHECK(none != MAP_FAILED && ro != MAP_FAILED && fd >= 0, "mmap/open") ||
	    ring_init(&c.ring, 4, 0))
		return false;
	c.buf = alloc_buf(BUF_LEN);
	if (!c.buf)
		return false;
	iov[0] = (struct iovec){ c.buf, 512 };
	iov[1] = (struct iovec){ none + 8, 512 };
	/* the aligned forms fail at issue (vblk/refusals) */
	EXPECT(&c, -EFAULT, "IN into PROT_NONE memory, aligned",
	       iouring_bpf_vblk_prep_read(sqe, fd, none, 4096, 0));
	EXPECT(&c, -EFAULT, "IN into address 8 (unmapped), 512 bytes",
	       iouring_bpf_vblk_prep_read(sqe, fd, (void *)8, 512, 0));
	EXPECT(&c, -EFAULT, "IN into PROT_NONE memory + 8, 512 bytes",
	       iouring_bpf_vblk_prep_read(sqe, fd, none + 8, 512, 0));
	EXPECT(&c, -EFAULT, "IN into read-only memory + 8, 512 bytes",
	       iouring_bpf_vblk_prep_read(sqe, fd, ro + 8, 512, 0));
	EXPECT(&c, -EFAULT, "IN vectored, the second iovec in PROT_NONE memory + 8",
	       iouring_bpf_vblk_prep_readv(sqe, fd, iov, 2, 0));
	EXPECT(&c, -EFAULT, "GET_ID into PROT_NONE memory",
	       iouring_bpf_vblk_prep_get_id(sqe, fd, none, 20));
	EXPECT(&c, -EFAULT, "GET_ID into read-only memory",
	       iouring_bpf_vblk_prep_get_id(sqe, fd, ro, 20));
	/* and the same reads into writable memory work */
	EXPECT(&c, 0, "IN into c->buf + 8, 512 bytes",
	       iouring_bpf_vblk_prep_read(sqe, fd, c.buf + 8, 512, 0));
	EXPECT(&c, 0, "GET_ID into writable memory",
	       iouring_bpf_vblk_prep_get_id(sqe, fd, c.buf, 20));
	printf("%s: %u bounced reads checked%s\n", d->serial, c.checks,
	       c.ok ? ", all as expected" : "");
	close(fd);
	io_uring_queue_exit(&c.ring);
	free_buf(c.buf, BUF_LEN);
	munmap(none, 8192);
	munmap(ro, 8192);
	return c.ok;
}

int test_bounce_efault(void)
{
	struct disk d;

	arm_alarm(100, "vblk/bounce-efault");
	if (disk_find(SERIAL_NOPOLL, &d))
		return KSFT_FAIL;
	return bounce_efault(&d) ? KSFT_PASS : KSFT_FAIL;
}

int test_refusals(void)
{
	struct disk d[2];
	bool ok = true;

	arm_alarm(280, "vblk/refusals");
	if (disk_find(SERIAL_POLL, &d[0]) || disk_find(SERIAL_NOPOLL, &d[1]))
		return KSFT_FAIL;
	ok &= run_disk(&d[0]);
	ok &= run_disk(&d[1]);
	return ok ? KSFT_PASS : KSFT_FAIL;
}
