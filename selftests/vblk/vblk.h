/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vblk/ tests: virtio-blk io_uring passthrough (kernel patches 23-25) on the
 * two scratch disks selftests/run attaches, found by serial: vblk0 (two
 * virtqueues, one of them a poll queue) and vblk1 (one interrupt queue).
 */
#ifndef VBLK_TEST_H
#define VBLK_TEST_H

#include <liburing.h>
#include <liburing-bpf.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "selftest.h"

struct disk {
	char serial[32];
	char name[32];		/* vdb */
	char blk[64];		/* /dev/vdb */
	char chr[64];		/* /dev/vdbc0 */
	uint64_t sectors;	/* 512-byte sectors */
	unsigned int lbs;	/* logical block size */
	unsigned int max_segments;
	uint64_t max_hw_bytes;	/* max_hw_sectors_kb, in bytes */
	uint64_t discard_max;	/* discard_max_hw_bytes (0: no DISCARD) */
	uint64_t wz_max;	/* write_zeroes_max_bytes (0: no WRITE_ZEROES) */
};

/* vblk0 and vblk1, as selftests/run attaches them */
#define SERIAL_POLL	"vblk0"
#define SERIAL_NOPOLL	"vblk1"

/* the longest a single command may take before the test calls it lost */
#define CMD_TIMEOUT_S	60

/* Find the disk with this serial in /sys/block and fill *d. */
int disk_find(const char *serial, struct disk *d);
/* Wait up to secs for it (and its /dev nodes) to be there, quietly. */
int disk_wait(const char *serial, struct disk *d, unsigned int secs);
/* Read a sysfs (or other) file's first line into buf, newline stripped. */
int read_line(const char *path, char *buf, size_t len);
/* Read /sys/block/NAME/REL as an unsigned number. */
int read_u64(const char *name, const char *rel, uint64_t *v);

/* An SQE128 ring with these extra setup flags. */
int ring_init(struct io_uring *ring, unsigned int entries, unsigned int flags);
/* Submit what is queued and wait for one CQE: its res (and user_data). */
int ring_submit_one(struct io_uring *ring, int *res);
/* Submit what is queued, then wait for n CQEs; res[] by user_data (0..n-1). */
int ring_submit_wait(struct io_uring *ring, unsigned int n, int *res);
/* Wait for n more CQEs (already submitted); res[] by user_data. */
int ring_wait(struct io_uring *ring, unsigned int n, int *res);

/* One passthrough command, submitted and waited for: its CQE's res, or
 * 10000 + -errno if submitting or waiting failed. */
int vblk_read(struct io_uring *ring, int fd, void *buf, uint32_t len, uint64_t sector);
int vblk_write(struct io_uring *ring, int fd, const void *buf, uint32_t len, uint64_t sector);
int vblk_flush(struct io_uring *ring, int fd);
int vblk_get_id(struct io_uring *ring, int fd, void *buf, uint32_t len);
/* The raw form: fill the SQE with a prepared command, then edit it. */
struct io_uring_sqe *sqe_get(struct io_uring *ring);
int run_sqe(struct io_uring *ring);

/* O_DIRECT block device I/O (whole lengths or -errno). */
int blk_open(const struct disk *d, int flags);
int blk_pwrite(int fd, const void *buf, size_t len, uint64_t off);
int blk_pread(int fd, void *buf, size_t len, uint64_t off);

/* page-aligned memory (NULL on failure, reported) */
void *alloc_buf(size_t len);
void free_buf(void *p, size_t len);
/* A pattern that differs per byte, per offset and per seed. */
void fill_pattern(void *buf, size_t len, uint64_t off, uint32_t seed);
/* The first byte of buf that is not val (-1 if none). */
ssize_t find_not(const void *buf, size_t len, unsigned char val);
/* Compare and report the first difference; true if equal. */
bool same(const void *got, const void *want, size_t len, const char *what);

uint64_t rnd64(uint64_t *state);
uint32_t rnd_below(uint64_t *state, uint32_t n);

/* The run's random seed: VBLK_SEED if set, else time and pid; printed. */
uint64_t test_seed(void);

/* Kill the test with a message after s seconds (a hang fails, not stalls). */
void arm_alarm(unsigned int s, const char *what);

int test_chardev(void);
int test_data(void);
int test_discard_zeroes(void);
int test_refusals(void);
int test_bounce_efault(void);
int test_permissions(void);
int test_iopoll(void);
int test_remove(void);

#endif
