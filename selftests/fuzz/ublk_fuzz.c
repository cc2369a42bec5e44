// SPDX-License-Identifier: GPL-2.0
/*
 * What fuzz/ublk-ctrl, fuzz/ublk-io and ublk/found-* share (declared in
 * ublk_fuzz.h): the case log, the kernel stacks and the watchdog of a
 * hang, control commands, and the server's side of a device.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include "ublk_fuzz.h"

/* the kernel's per-queue descriptor area stride: ublk_max_cmd_buf_size() */
static size_t ufz_page_round(size_t n)
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
bool ufz_log_echo;
static pthread_mutex_t ufz_log_lock = PTHREAD_MUTEX_INITIALIZER;

void ufz_log(const char *fmt, ...)
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

void ufz_log_reset(void)
{
	pthread_mutex_lock(&ufz_log_lock);
	ufz_log_len = 0;
	ufz_log_buf[0] = 0;
	pthread_mutex_unlock(&ufz_log_lock);
}

void ufz_log_dump(const char *name)
{
	pthread_mutex_lock(&ufz_log_lock);
	fprintf(stderr, "fuzz %s: the case's commands (res = completion result):\n", name);
	fwrite(ufz_log_buf, 1, ufz_log_len, stderr);
	fflush(stderr);
	pthread_mutex_unlock(&ufz_log_lock);
}

const char *ufz_err(int res)
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

static void ufz_dump_task(const char *dir, const char *why)
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

static char ufz_task_state(const char *dir)
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

void ufz_dump_stacks(void)
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

static struct {
	const char *name;
	_Atomic uint64_t case_seed;
	_Atomic double deadline;	/* fuzz_now() seconds; 0: disarmed */
	_Atomic(const char *) what;	/* what we wait for */
	bool unseeded;			/* a fixed program: no seed to replay */
	pthread_t th;
} ufz_wd;

static void *ufz_watchdog_fn(void *arg)
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

void ufz_watchdog_start(const char *name, bool unseeded)
{
	ufz_wd.name = name;
	ufz_wd.unseeded = unseeded;
	atomic_store(&ufz_wd.what, "nothing");
	pthread_create(&ufz_wd.th, NULL, ufz_watchdog_fn, NULL);
}

void ufz_watchdog_arm(double secs, const char *what)
{
	atomic_store(&ufz_wd.what, what);
	atomic_store(&ufz_wd.deadline, secs > 0 ? fuzz_now() + secs : 0);
}

/* ------------------------------------------------------------------ */
/* the case                                                           */

void ufz_case_begin(const struct fuzz_run *run, uint64_t case_seed)
{
	ufz_log_reset();
	atomic_store(&ufz_wd.case_seed, case_seed);
	if (run->verbose)
		printf("case %" PRIu64 " seed=%#" PRIx64 "\n", run->cases, case_seed);
}

void ufz_case_vfail(bool *failed, char *why, size_t size, const char *fmt, va_list ap)
{
	char line[512];

	vsnprintf(line, sizeof(line), fmt, ap);
	ufz_log("  !! %s\n", line);
	if (!*failed)
		snprintf(why, size, "%s", line);
	*failed = true;
}

void ufz_avoid(const char *name, const struct ufz_issue *issues, size_t n)
{
	const char *a = getenv("IOURING_BPF_UBLK_FUZZ_AVOID");
	bool any = false;

	for (size_t i = 0; i < n; i++) {
		*issues[i].avoid = a && strstr(a, issues[i].name);
		any |= *issues[i].avoid;
	}
	if (!any)
		return;
	printf("fuzz %s: avoiding known issues:", name);
	for (size_t i = 0; i < n; i++)
		if (*issues[i].avoid)
			printf(" %s", issues[i].name);
	printf("\n");
}

/* ------------------------------------------------------------------ */
/* control commands: one SQE128 ring on /dev/ublk-control             */

int ufz_ctrl_open(struct ufz_ctrl *c, unsigned int entries, unsigned int flags)
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

void ufz_ctrl_close(struct ufz_ctrl *c)
{
	io_uring_queue_exit(&c->ring);
	close(c->fd);
}

bool ufz_ctrl_prep(struct ufz_ctrl *c, __u32 op, const struct ublksrv_ctrl_cmd *cmd,
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

int ufz_ctrl_sync(struct ufz_ctrl *c, __u32 op, const struct ublksrv_ctrl_cmd *cmd,
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

int ufz_ctrl_cmd(struct ufz_ctrl *c, __u32 op, int id, __u64 data0, void *buf,
		 unsigned int len, double secs)
{
	struct ublksrv_ctrl_cmd cmd = {
		.dev_id = (__u32)id, .queue_id = (__u16)-1,
		.addr = (__u64)(uintptr_t)buf, .len = (__u16)len, .data[0] = data0,
	};

	return ufz_ctrl_sync(c, op, &cmd, secs);
}

int ufz_ctrl_submit(struct ufz_ctrl *c, __u32 op, int id, __u64 data0, __u64 user_data)
{
	struct ublksrv_ctrl_cmd cmd = {
		.dev_id = (__u32)id, .queue_id = (__u16)-1, .data[0] = data0,
	};

	if (!ufz_ctrl_prep(c, op, &cmd, user_data))
		return -EBUSY;
	return io_uring_submit(&c->ring) == 1 ? 0 : -EIO;
}

int ufz_get_features(struct ufz_ctrl *c, __u64 *features)
{
	return ufz_ctrl_cmd(c, UBLK_U_CMD_GET_FEATURES, -1, 0, features, sizeof(*features), 30);
}

/* ------------------------------------------------------------------ */
/* devices                                                            */

bool ufz_path_exists(const char *fmt, int id)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), fmt, id);
	return lstat(path, &st) == 0;
}

const char *ufz_dev_trace(int id)
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

const char *ufz_wait_dev_gone(int id, double secs)
{
	double end = fuzz_now() + secs;
	const char *left;

	while ((left = ufz_dev_trace(id)) && fuzz_now() < end)
		usleep(10 * 1000);
	return left;
}

bool ufz_dev_left(int id, double secs, char *path, size_t size)
{
	const char *left = ufz_wait_dev_gone(id, secs);

	if (!left)
		return false;
	snprintf(path, size, left, id);
	return true;
}

void *ufz_map_iods(int char_fd, unsigned int q, unsigned int depth, size_t *size)
{
	void *p;

	*size = ufz_page_round(depth * sizeof(struct ublksrv_io_desc));
	p = mmap(NULL, *size, PROT_READ, MAP_SHARED | MAP_POPULATE, char_fd,
		 UBLKSRV_CMD_BUF_OFFSET + (off_t)q * UFZ_CMD_BUF_STRIDE);
	return p == MAP_FAILED ? NULL : p;
}

struct io_uring_sqe *ufz_get_sqe(struct io_uring *ring)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe) {
		io_uring_submit(ring);
		sqe = io_uring_get_sqe(ring);
	}
	return sqe;
}

void ufz_prep_io_cmd(struct io_uring_sqe *sqe, int char_fd, __u32 op, __u16 q, __u16 tag,
		     __s32 result, __u64 addr, __u64 user_data)
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

void ufz_auto_buf_reg_to_sqe(struct io_uring_sqe *sqe)
{
	struct ublksrv_io_cmd *cmd = (struct ublksrv_io_cmd *)sqe->cmd;

	if (sqe->cmd_op != UBLK_U_IO_FETCH_REQ && sqe->cmd_op != UBLK_U_IO_COMMIT_AND_FETCH_REQ)
		return;
	sqe->addr = cmd->addr;
	cmd->addr = 0;
}

int ufz_open_char(int id)
{
	char path[64];

	snprintf(path, sizeof(path), "/dev/ublkc%d", id);
	return open(path, O_RDWR | O_CLOEXEC);
}

int ufz_require_ublk(const char *name)
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

