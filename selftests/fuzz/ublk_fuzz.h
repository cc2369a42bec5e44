/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by fuzz/ublk-ctrl and fuzz/ublk-io: the raw ublk UAPI (the patched
 * kernel's <linux/ublk_cmd.h>) spoken through Debian's liburing, a case log
 * that is printed when a case fails, a watchdog that turns a hang into a
 * failure with the kernel stacks of the blocked tasks, and the checks that
 * a device is gone.
 */
#ifndef IOURING_BPF_UBLK_FUZZ_H
#define IOURING_BPF_UBLK_FUZZ_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
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

/* the kernel's per-queue descriptor area stride: ublk_max_cmd_buf_size() */
static inline size_t ufz_page_round(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (n + pg - 1) & ~(pg - 1);
}
#define UFZ_CMD_BUF_STRIDE	ufz_page_round(UBLK_MAX_QUEUE_DEPTH * sizeof(struct ublksrv_io_desc))

/* ------------------------------------------------------------------ */
/* the case log: what the case did, printed when it fails (or with -v) */

#define UFZ_LOG_SIZE	(256 << 10)

static char ufz_log_buf[UFZ_LOG_SIZE];
static size_t ufz_log_len;
static bool ufz_log_echo;		/* -v: print every line as it comes */
static pthread_mutex_t ufz_log_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((format(printf, 1, 2)))
static inline void ufz_log(const char *fmt, ...)
{
	va_list ap;
	int n;

	pthread_mutex_lock(&ufz_log_lock);
	if (ufz_log_len < UFZ_LOG_SIZE - 1) {
		va_start(ap, fmt);
		n = vsnprintf(ufz_log_buf + ufz_log_len, UFZ_LOG_SIZE - ufz_log_len, fmt, ap);
		va_end(ap);
		if (n > 0) {
			if (ufz_log_echo)
				fwrite(ufz_log_buf + ufz_log_len, 1,
				       ufz_log_len + n < UFZ_LOG_SIZE ? (size_t)n :
				       UFZ_LOG_SIZE - 1 - ufz_log_len, stdout);
			ufz_log_len += n;
			if (ufz_log_len >= UFZ_LOG_SIZE)
				ufz_log_len = UFZ_LOG_SIZE - 1;
		}
	}
	pthread_mutex_unlock(&ufz_log_lock);
	if (ufz_log_echo)
		fflush(stdout);
}

static inline void ufz_log_reset(void)
{
	pthread_mutex_lock(&ufz_log_lock);
	ufz_log_len = 0;
	ufz_log_buf[0] = 0;
	pthread_mutex_unlock(&ufz_log_lock);
}

/* the failing case's input, on stderr next to fuzz_failed()'s line */
static inline void ufz_log_dump(const char *name)
{
	pthread_mutex_lock(&ufz_log_lock);
	fprintf(stderr, "fuzz %s: the case's commands (res = completion result):\n", name);
	fwrite(ufz_log_buf, 1, ufz_log_len, stderr);
	fflush(stderr);
	pthread_mutex_unlock(&ufz_log_lock);
}

static inline const char *ufz_err(int res)
{
	static __thread char buf[32];

	if (res >= 0) {
		snprintf(buf, sizeof(buf), "%d", res);
		return buf;
	}
	switch (-res) {
#define E(x) case x: return "-" #x
	E(EPERM); E(ENOENT); E(EINTR); E(EIO); E(ENXIO); E(EBADF); E(EAGAIN);
	E(ENOMEM); E(EACCES); E(EFAULT); E(EBUSY); E(EEXIST); E(ENODEV);
	E(ENOTDIR); E(EINVAL); E(ENOSPC); E(ENAMETOOLONG); E(ELOOP);
	E(EOPNOTSUPP); E(ECANCELED); E(ETIME); E(EOVERFLOW); E(ENOTTY);
#undef E
	}
	snprintf(buf, sizeof(buf), "%d", res);
	return buf;
}

/* ------------------------------------------------------------------ */
/* kernel stacks: what a hang report shows                            */

static inline void ufz_dump_task(const char *dir, const char *why)
{
	char path[700], buf[8192];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/comm", dir);
	fd = open(path, O_RDONLY);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n - 1 : 0] = 0;
	fprintf(stderr, "--- %s %s (%s):\n", dir, buf, why);
	snprintf(path, sizeof(path), "%s/stack", dir);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, n, stderr);
	close(fd);
}

static inline char ufz_task_state(const char *dir)
{
	char path[700], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/stat", dir);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] && p[2] ? p[2] : '?';
}

/* every task of ours, and every task in D state anywhere, with its stack */
static inline void ufz_dump_stacks(void)
{
	DIR *procs = opendir("/proc");
	struct dirent *p;
	pid_t self = getpid();

	fprintf(stderr, "=== kernel stacks: this process's tasks and all D-state tasks\n");
	while (procs && (p = readdir(procs))) {
		char tdir[300];
		DIR *tasks;
		struct dirent *t;
		long pid = strtol(p->d_name, NULL, 10);

		if (pid <= 0)
			continue;
		snprintf(tdir, sizeof(tdir), "/proc/%ld/task", pid);
		tasks = opendir(tdir);
		while (tasks && (t = readdir(tasks))) {
			char dir[600];
			char st;

			if (t->d_name[0] == '.')
				continue;
			snprintf(dir, sizeof(dir), "%s/%s", tdir, t->d_name);
			st = ufz_task_state(dir);
			if (pid == self || st == 'D')
				ufz_dump_task(dir, st == 'D' ? "D state" : "ours");
		}
		if (tasks)
			closedir(tasks);
	}
	if (procs)
		closedir(procs);
	fprintf(stderr, "=== end of stacks\n");
	fflush(stderr);
}

/* ------------------------------------------------------------------ */
/* the watchdog: a case that stops making progress is a failed case   */

struct ufz_watchdog {
	const char *name;
	_Atomic uint64_t case_seed;
	_Atomic double deadline;	/* fuzz_now() seconds; 0: disarmed */
	_Atomic(const char *) what;	/* what we wait for */
	bool unseeded;			/* a fixed program: no seed to replay */
	pthread_t th;
};

static struct ufz_watchdog ufz_wd;

static inline void *ufz_watchdog_fn(void *arg)
{
	(void)arg;
	for (;;) {
		double d = atomic_load(&ufz_wd.deadline);

		usleep(200 * 1000);
		if (d == 0 || fuzz_now() < d || atomic_load(&ufz_wd.deadline) != d)
			continue;
		if (ufz_wd.unseeded)
			fprintf(stderr, "%s: FAIL: watchdog: no progress in %s\n",
				ufz_wd.name, atomic_load(&ufz_wd.what));
		else
			fprintf(stderr, "fuzz %s: FAIL case seed=%#" PRIx64
				": watchdog: no progress in %s\n", ufz_wd.name,
				atomic_load(&ufz_wd.case_seed), atomic_load(&ufz_wd.what));
		ufz_log_dump(ufz_wd.name);
		ufz_dump_stacks();
		if (!ufz_wd.unseeded)
			fprintf(stderr, "fuzz %s: replay with: --replay %#" PRIx64 "\n",
				ufz_wd.name, atomic_load(&ufz_wd.case_seed));
		fflush(stderr);
		fflush(stdout);
		/* the kernel holds our tasks: nothing to clean up from here */
		_exit(1);
	}
	return NULL;
}

static inline void ufz_watchdog_start(const char *name)
{
	ufz_wd.name = name;
	atomic_store(&ufz_wd.what, "nothing");
	pthread_create(&ufz_wd.th, NULL, ufz_watchdog_fn, NULL);
}

/* allow @secs for @what; 0 disarms */
static inline void ufz_watchdog_arm(double secs, const char *what)
{
	atomic_store(&ufz_wd.what, what);
	atomic_store(&ufz_wd.deadline, secs > 0 ? fuzz_now() + secs : 0);
}

/* ------------------------------------------------------------------ */
/* control commands: one SQE128 ring on /dev/ublk-control             */

struct ufz_ctrl {
	int fd;
	struct io_uring ring;
};

static inline int ufz_ctrl_open(struct ufz_ctrl *c, unsigned int entries, unsigned int flags)
{
	int ret;

	c->fd = open("/dev/ublk-control", O_RDWR | O_CLOEXEC);
	if (c->fd < 0)
		return -errno;
	ret = io_uring_queue_init(entries, &c->ring, flags);
	if (ret) {
		close(c->fd);
		c->fd = -1;
	}
	return ret;
}

static inline void ufz_ctrl_close(struct ufz_ctrl *c)
{
	io_uring_queue_exit(&c->ring);
	close(c->fd);
}

/* queue one control command (not submitted); false if the SQ is full */
static inline bool ufz_ctrl_prep(struct ufz_ctrl *c, __u32 op, const struct ublksrv_ctrl_cmd *cmd,
			  __u64 user_data)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&c->ring);

	if (!sqe)
		return false;
	memset(sqe, 0, (c->ring.flags & IORING_SETUP_SQE128) ? 128 : 64);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = c->fd;
	sqe->cmd_op = op;
	sqe->user_data = user_data;
	/* a 64-byte SQE has only 16 bytes of command: the kernel refuses it
	 * before reading more (the fuzzer's SQE64 ring tests just that) */
	memcpy(sqe->cmd, cmd, (c->ring.flags & IORING_SETUP_SQE128) ? sizeof(*cmd) : 16);
	return true;
}

/* one synchronous command with a bound, for the setup steps the fuzzers
 * need to work (-ETIME: still running after @secs) */
static inline int ufz_ctrl_sync(struct ufz_ctrl *c, __u32 op, const struct ublksrv_ctrl_cmd *cmd,
			 double secs)
{
	static __u64 seq;
	/* its own user_data: a command given up on completes later */
	__u64 ud = 0x5cc0000000000000ULL | ++seq;
	struct io_uring_cqe *cqe;
	double end = fuzz_now() + secs;
	int ret;

	if (!ufz_ctrl_prep(c, op, cmd, ud))
		return -EBUSY;
	ret = io_uring_submit(&c->ring);
	if (ret < 0)
		return ret;
	for (;;) {
		struct __kernel_timespec ts = { .tv_nsec = 50 * 1000 * 1000 };

		ret = io_uring_wait_cqe_timeout(&c->ring, &cqe, &ts);
		if (!ret) {
			__u64 cqe_ud = cqe->user_data;

			ret = cqe->res;
			io_uring_cqe_seen(&c->ring, cqe);
			if (cqe_ud == ud)
				return ret;
			continue;
		}
		if (ret != -ETIME && ret != -EINTR)
			return ret;
		if (fuzz_now() > end)
			return -ETIME;
	}
}

static inline int ufz_get_features(struct ufz_ctrl *c, __u64 *features)
{
	struct ublksrv_ctrl_cmd cmd = {
		.dev_id = (__u32)-1,
		.queue_id = (__u16)-1,
		.addr = (__u64)(uintptr_t)features,
		.len = sizeof(*features),
	};

	return ufz_ctrl_sync(c, UBLK_U_CMD_GET_FEATURES, &cmd, 30);
}

/* ------------------------------------------------------------------ */
/* devices                                                            */

static inline bool ufz_path_exists(const char *fmt, int id)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), fmt, id);
	return lstat(path, &st) == 0;
}

/* any trace of device @id: sysfs (char and block) or a /dev node */
static inline const char *ufz_dev_trace(int id)
{
	static const char *const paths[] = {
		"/sys/class/ublk-char/ublkc%d", "/sys/block/ublkb%d",
		"/dev/ublkc%d", "/dev/ublkb%d",
	};

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (ufz_path_exists(paths[i], id))
			return paths[i];
	return NULL;
}

/* wait up to @secs for every trace of @id to go; NULL or what is left */
static inline const char *ufz_wait_dev_gone(int id, double secs)
{
	double end = fuzz_now() + secs;
	const char *left;

	while ((left = ufz_dev_trace(id)) && fuzz_now() < end)
		usleep(10 * 1000);
	return left;
}

/* the queue's descriptors, as the driver's mmap wants them */
static inline void *ufz_map_iods(int char_fd, unsigned int q, unsigned int depth, size_t *size)
{
	void *p;

	*size = ufz_page_round(depth * sizeof(struct ublksrv_io_desc));
	p = mmap(NULL, *size, PROT_READ, MAP_SHARED | MAP_POPULATE, char_fd,
		 UBLKSRV_CMD_BUF_OFFSET + (off_t)q * UFZ_CMD_BUF_STRIDE);
	return p == MAP_FAILED ? NULL : p;
}

/* an I/O command in a 64-byte SQE on the server's ring */
static inline void ufz_prep_io_cmd(struct io_uring_sqe *sqe, int char_fd, __u32 op, __u16 q,
			    __u16 tag, __s32 result, __u64 addr, __u64 user_data)
{
	struct ublksrv_io_cmd *cmd = (struct ublksrv_io_cmd *)sqe->cmd;

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = char_fd;
	sqe->cmd_op = op;
	sqe->user_data = user_data;
	cmd->q_id = q;
	cmd->tag = tag;
	cmd->result = result;
	cmd->addr = addr;
}

/*
 * On a UBLK_F_AUTO_BUF_REG device, after ufz_prep_io_cmd(): FETCH_REQ and
 * COMMIT_AND_FETCH_REQ carry their struct ublk_auto_buf_reg in the SQE's
 * own addr field, as mainline's servers do, and ublksrv_io_cmd.addr is 0.
 */
static inline void ufz_auto_buf_reg_to_sqe(struct io_uring_sqe *sqe)
{
	struct ublksrv_io_cmd *cmd = (struct ublksrv_io_cmd *)sqe->cmd;

	if (sqe->cmd_op != UBLK_U_IO_FETCH_REQ && sqe->cmd_op != UBLK_U_IO_COMMIT_AND_FETCH_REQ)
		return;
	sqe->addr = cmd->addr;
	cmd->addr = 0;
}

static inline int ufz_open_char(int id)
{
	char path[64];

	snprintf(path, sizeof(path), "/dev/ublkc%d", id);
	return open(path, O_RDWR | O_CLOEXEC);
}

/* exit 77 only when the kernel truly has no ublk */
static inline int ufz_require_ublk(const char *name)
{
	struct stat st;

	if (getuid() != 0) {
		fprintf(stderr, "fuzz %s: needs root (the VM runs tests as root)\n", name);
		return 1;
	}
	if (stat("/dev/ublk-control", &st) && errno == ENOENT &&
	    access("/sys/module/ublk_drv", F_OK)) {
		struct utsname u;

		/* the kernel this tree builds has ublk: there it is a failure */
		if (!uname(&u) && strstr(u.release, "-iouring-bpf")) {
			fprintf(stderr, "fuzz %s: FAIL: no /dev/ublk-control on %s, which has ublk\n",
				name, u.release);
			return 1;
		}
		printf("fuzz %s: SKIP: no /dev/ublk-control and no ublk_drv: kernel without ublk\n",
		       name);
		return 77;
	}
	return 0;
}

#endif
