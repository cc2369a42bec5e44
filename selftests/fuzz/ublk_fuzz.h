/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by fuzz/ublk-ctrl, fuzz/ublk-io and ublk/found-* (ublk_fuzz.c):
 * the raw ublk UAPI (the patched kernel's <linux/ublk_cmd.h>) spoken
 * through Debian's liburing, a case log that is printed when a case fails,
 * a watchdog that turns a hang into a failure with the kernel stacks of the
 * blocked tasks, and the checks that a device is gone.
 */
#ifndef IOURING_BPF_UBLK_FUZZ_H
#define IOURING_BPF_UBLK_FUZZ_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

/* the patched kernel's UAPI first: liburing's private copy shares its guard */
#include <linux/io_uring.h>
#include <linux/ublk_cmd.h>
#include <liburing.h>

#include "fuzz.h"

#ifndef UBLK_U_IO_REGISTER_IO_BUF
#define UBLK_U_IO_REGISTER_IO_BUF	_IOWR('u', 0x23, struct ublksrv_io_cmd)
#define UBLK_U_IO_UNREGISTER_IO_BUF	_IOWR('u', 0x24, struct ublksrv_io_cmd)
#endif
#ifndef UBLK_F_AUTO_BUF_REG
#error "the patched kernel's ublk_cmd.h (UBLK_F_AUTO_BUF_REG, patch 27) is needed"
#endif

/* our kernel's UBLK_F_ALL (drivers/block/ublk_drv.c) */
#define UFZ_F_KNOWN	(UBLK_F_SUPPORT_ZERO_COPY | UBLK_F_URING_CMD_COMP_IN_TASK | \
			 UBLK_F_NEED_GET_DATA | UBLK_F_USER_RECOVERY | \
			 UBLK_F_USER_RECOVERY_REISSUE | UBLK_F_UNPRIVILEGED_DEV | \
			 UBLK_F_CMD_IOCTL_ENCODE | UBLK_F_USER_COPY | UBLK_F_ZONED | \
			 UBLK_F_AUTO_BUF_REG)

_Static_assert(sizeof(struct ublk_params) == 136, "6.15 layout: dma and seg params");
_Static_assert(sizeof(struct ublksrv_io_cmd) == 16, "io cmd fits a 64-byte SQE");
_Static_assert(sizeof(struct ublksrv_ctrl_cmd) == 32, "ctrl cmd fits a 128-byte SQE");

/* ------------------------------------------------------------------ */
/* the case log: what the case did, printed when it fails (or with -v) */

extern bool ufz_log_echo;		/* -v: print every line as it comes */

__attribute__((format(printf, 1, 2)))
void ufz_log(const char *fmt, ...);
void ufz_log_reset(void);
/* the failing case's input, on stderr next to fuzz_failed()'s line */
void ufz_log_dump(const char *name);
/* a result: its errno's name, or the number */
const char *ufz_err(int res);

/* ------------------------------------------------------------------ */
/* the case                                                           */

/* a case begins: an empty log, and the watchdog names its seed */
void ufz_case_begin(const struct fuzz_run *run, uint64_t case_seed);

/*
 * A failure of the case, logged; the first one's message is kept in @why
 * (what fuzz_failed() says at the end of the case).
 */
__attribute__((format(printf, 4, 0)))
void ufz_case_vfail(bool *failed, char *why, size_t size, const char *fmt, va_list ap);

/* a known kernel issue a fuzzer can steer around */
struct ufz_issue {
	const char *name;	/* in $IOURING_BPF_UBLK_FUZZ_AVOID */
	bool *avoid;
};

/* sets each issue's avoid from $IOURING_BPF_UBLK_FUZZ_AVOID; says which */
void ufz_avoid(const char *name, const struct ufz_issue *issues, size_t n);

/* ------------------------------------------------------------------ */
/* kernel stacks: what a hang report shows                            */

/* every task of ours, and every task in D state anywhere, with its stack */
void ufz_dump_stacks(void);

/* ------------------------------------------------------------------ */
/* the watchdog: a case that stops making progress is a failed case   */

/* @unseeded: a fixed program (ublk/found-*), with no seed to replay */
void ufz_watchdog_start(const char *name, bool unseeded);
/* allow @secs for @what; 0 disarms */
void ufz_watchdog_arm(double secs, const char *what);

/* ------------------------------------------------------------------ */
/* control commands: one SQE128 ring on /dev/ublk-control             */

struct ufz_ctrl {
	int fd;
	struct io_uring ring;
};

int ufz_ctrl_open(struct ufz_ctrl *c, unsigned int entries, unsigned int flags);
void ufz_ctrl_close(struct ufz_ctrl *c);
/* queue one control command (not submitted); false if the SQ is full */
bool ufz_ctrl_prep(struct ufz_ctrl *c, __u32 op, const struct ublksrv_ctrl_cmd *cmd,
		   __u64 user_data);
/* one synchronous command with a bound, for the setup steps the fuzzers
 * need to work (-ETIME: still running after @secs) */
int ufz_ctrl_sync(struct ufz_ctrl *c, __u32 op, const struct ublksrv_ctrl_cmd *cmd,
		  double secs);
/* ufz_ctrl_sync() of a command on device @id (-1: none) and its buffer */
int ufz_ctrl_cmd(struct ufz_ctrl *c, __u32 op, int id, __u64 data0, void *buf,
		 unsigned int len, double secs);
/* a command on device @id submitted, its completion left to the caller:
 * 0, -EBUSY (SQ full) or -EIO (not submitted) */
int ufz_ctrl_submit(struct ufz_ctrl *c, __u32 op, int id, __u64 data0, __u64 user_data);
int ufz_get_features(struct ufz_ctrl *c, __u64 *features);

/* ------------------------------------------------------------------ */
/* devices                                                            */

bool ufz_path_exists(const char *fmt, int id);
/* any trace of device @id: sysfs (char and block) or a /dev node */
const char *ufz_dev_trace(int id);
/* wait up to @secs for every trace of @id to go; NULL or what is left */
const char *ufz_wait_dev_gone(int id, double secs);
/* the same, with the path of what is left in @path: false if nothing */
bool ufz_dev_left(int id, double secs, char *path, size_t size);
/* the queue's descriptors, as the driver's mmap wants them */
void *ufz_map_iods(int char_fd, unsigned int q, unsigned int depth, size_t *size);
/* an SQE, submitting what is queued if the SQ is full; NULL if still none */
struct io_uring_sqe *ufz_get_sqe(struct io_uring *ring);
/* an I/O command in a 64-byte SQE on the server's ring */
void ufz_prep_io_cmd(struct io_uring_sqe *sqe, int char_fd, __u32 op, __u16 q, __u16 tag,
		     __s32 result, __u64 addr, __u64 user_data);
/*
 * On a UBLK_F_AUTO_BUF_REG device, after ufz_prep_io_cmd(): FETCH_REQ and
 * COMMIT_AND_FETCH_REQ carry their struct ublk_auto_buf_reg in the SQE's
 * own addr field, as mainline's servers do, and ublksrv_io_cmd.addr is 0.
 */
void ufz_auto_buf_reg_to_sqe(struct io_uring_sqe *sqe);
int ufz_open_char(int id);
/* exit 77 only when the kernel truly has no ublk */
int ufz_require_ublk(const char *name);

#endif
