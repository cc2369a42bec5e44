// SPDX-License-Identifier: GPL-2.0
/*
 * The daemon behind `iouring-bpf ublk add`: it creates the device
 * (ADD_DEV, SET_PARAMS), opens /dev/ublkcN, starts one thread per queue,
 * then START_DEV, writes the state file and tells the waiting parent
 * "ready". It serves until every queue thread has ended, which happens when
 * the device is stopped (ublk del, STOP_DEV from anywhere, or SIGTERM to
 * the daemon, which stops it), then removes its state file and exits.
 *
 * Report protocol on report_fd, one line each: "added ID", then "ready" or
 * "error ERRNO MESSAGE". A device that never became ready is deleted again.
 */
#define _GNU_SOURCE
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "loader.h"
#include "ublk.h"

/* after a failed set-up: how long to keep stopping until the queues end */
#define TEARDOWN_WAIT_MS	30000
#define DELETE_WAIT_MS		5000
/*
 * START_DEV returns once every queue fetched and the partition scan that
 * add_disk() does read its sectors: queues that fetch but do not serve keep
 * it (uninterruptibly) waiting. After this long the watchdog makes the
 * queue threads close their rings, which fails those reads.
 */
#define START_WAIT_MS		60000

static void on_signal(int sig)
{
	(void)sig;	/* SIGUSR1: interrupts START_DEV's wait; SIGUSR2: a queue's */
}

static void report(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void report(int fd, const char *fmt, ...)
{
	char line[1200];
	va_list ap;
	int n;

	if (fd < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	if (write(fd, line, n) < 0)
		fprintf(stderr, "ublk daemon: reporting to the parent: %s\n", strerror(errno));
}

static void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void logmsg(const char *fmt, ...)
{
	char when[32];
	time_t t = time(NULL);
	struct tm tm;
	va_list ap;

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime_r(&t, &tm));
	fprintf(stderr, "%s [%d] ", when, (int)getpid());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void ublk_qfail(struct ublk_queue_thread *qt, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(qt->err, sizeof(qt->err), fmt, ap);
	va_end(ap);
	qt->ret = err < 0 ? err : -err;
	if (!qt->ret)
		qt->ret = -EIO;
	logmsg("queue %u: %s", qt->q_id, qt->err);
}

bool ublk_may_fetch(struct ublk_queue_thread *qt)
{
	return !atomic_load(&qt->d->quit);
}

static int daemon_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && !debug_output)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static void *queue_main(void *arg)
{
	struct ublk_queue_thread *qt = arg;
	struct ublk_daemon *d = qt->d;
	char name[16];

	snprintf(name, sizeof(name), "ublk%u-q%u", d->dev.info.dev_id, qt->q_id);
	pthread_setname_np(pthread_self(), name);
	if (d->conf->target == UBLK_TARGET_LOOP_USER)
		ublk_serve_user(qt);
	else
		ublk_serve_bpf(qt);
	atomic_store(&qt->ended, true);
	atomic_fetch_add(&d->nr_ended, 1);
	/*
	 * Tell the main thread. While it waits in START_DEV only it takes
	 * SIGUSR1 (with a handler, so the wait is interrupted); a signal that
	 * lands just before the wait begins is lost, so repeat until it is over.
	 */
	while (atomic_load(&d->start_busy)) {
		kill(d->pid, SIGUSR1);
		usleep(20000);
	}
	kill(d->pid, SIGUSR1);
	return NULL;
}

static const char *add_error(int err)
{
	switch (err) {
	case -ENOENT:
	case -ENODEV:
		return "/dev/ublk-control is missing: the ublk driver is not loaded (modprobe "
		       "ublk_drv, or a kernel with CONFIG_BLK_DEV_UBLK)";
	case -EPERM:
	case -EACCES:
		return "not allowed to create ublk devices: this needs root (CAP_SYS_ADMIN)";
	case -EEXIST:
		return "that ublk device id is in use";
	case -EOPNOTSUPP:
		return "the ublk driver does not support the device flags this target needs";
	default:
		return strerror(-err);
	}
}

static int set_params(struct ublk_daemon *d)
{
	const struct ublksrv_ctrl_dev_info *info = &d->dev.info;
	__u32 max_sectors = info->max_io_buf_bytes >> 9;
	__u32 chunk_sectors = d->conf->chunk_bytes >> 9;
	/*
	 * Reads, writes and write-zeroes never cross a chunk boundary; discards
	 * may (6.12 splits and merges them by max_discard_sectors only), so they
	 * are kept to one chunk's size: two chunks, two extents at most.
	 */
	__u32 max_discard = chunk_sectors && chunk_sectors < max_sectors ? chunk_sectors :
			    max_sectors;
	struct ublk_params p = {
		.len = sizeof(p),
		.types = UBLK_PARAM_TYPE_BASIC | UBLK_PARAM_TYPE_DISCARD,
		.basic = {
			/* writes land in the backing files' page cache: FLUSH means fsync */
			.attrs = UBLK_ATTR_VOLATILE_CACHE,
			.logical_bs_shift = 9,
			.physical_bs_shift = 12,
			.io_opt_shift = 12,
			.io_min_shift = 12,
			.max_sectors = max_sectors,
			.dev_sectors = d->conf->dev_bytes >> 9,
			/* the policy's IOU_UBLK_CHUNK_BYTES(), checked by add */
			.chunk_sectors = chunk_sectors,
		},
		.discard = {
			.discard_granularity = 4096,
			.max_discard_sectors = max_discard,
			.max_write_zeroes_sectors = max_sectors,
			.max_discard_segments = 1,
		},
	};

	return iouring_bpf_ublk_set_params(&d->dev, &p);
}

static unsigned int nr_threads(const struct ublk_daemon *d)
{
	return d->dev.info.nr_hw_queues;
}

/* Every thread that was started has ended (ran is how many were started). */
static bool all_ended(struct ublk_daemon *d, unsigned int ran)
{
	return (unsigned int)atomic_load(&d->nr_ended) >= ran;
}

/*
 * Make the queue threads end: STOP_DEV cancels every fetch the driver holds
 * (even on a device that never started), so stop until they have all gone;
 * a thread still setting up sees quit and does not fetch. Then join them.
 */
static void stop_queues(struct ublk_daemon *d, unsigned int ran)
{
	struct timespec t0, now;
	int ret;

	atomic_store(&d->quit, true);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!all_ended(d, ran)) {
		ret = iouring_bpf_ublk_stop(&d->dev);
		if (ret && ret != -ENODEV)
			logmsg("STOP_DEV: %s", strerror(-ret));
		for (int i = 0; i < 20 && !all_ended(d, ran); i++)
			usleep(10000);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000 > TEARDOWN_WAIT_MS) {
			logmsg("queue threads still running after %d s; giving up",
			       TEARDOWN_WAIT_MS / 1000);
			return;
		}
	}
	for (unsigned int i = 0; i < ran; i++)
		pthread_join(d->q[i].tid, NULL);
}

/* The first queue error, for the report. */
static struct ublk_queue_thread *first_failure(struct ublk_daemon *d, unsigned int ran)
{
	for (unsigned int i = 0; i < ran; i++)
		if (atomic_load(&d->q[i].ended) && d->q[i].ret)
			return &d->q[i];
	return NULL;
}

static void close_files(struct ublk_daemon *d)
{
	for (unsigned int i = 0; i < IOU_UBLK_MAX_FILES; i++) {
		if (d->file_fds[i] >= 0)
			close(d->file_fds[i]);
		d->file_fds[i] = -1;
	}
	if (d->zero_fd >= 0)
		close(d->zero_fd);
	d->zero_fd = -1;
}

/*
 * Set-up failed after ADD_DEV: end the queues, let go of the char device
 * and delete the device, so nothing is left behind.
 */
static void undo_device(struct ublk_daemon *d, unsigned int ran)
{
	int ret;

	stop_queues(d, ran);
	close_files(d);
	if (d->dev.char_fd >= 0) {
		close(d->dev.char_fd);
		d->dev.char_fd = -1;
	}
	ret = iouring_bpf_ublk_delete(&d->dev, DELETE_WAIT_MS);
	if (ret)
		logmsg("deleting the half-created device: %s", strerror(-ret));
	else
		logmsg("deleted the half-created device");
}

static int open_log(int id)
{
	char path[PATH_MAX];
	int fd;

	ublk_state_path(id, ".log", path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (fd != STDERR_FILENO) {
		dup2(fd, STDERR_FILENO);
		close(fd);
	}
	setvbuf(stderr, NULL, _IOLBF, 0);
	return 0;
}

/*
 * While START_DEV runs: after START_WAIT_MS, give up. Interrupt the queue
 * threads (SIGUSR2) until they have closed their rings and the main thread
 * (SIGUSR1) until START_DEV returned; signals that land outside a wait are
 * lost, hence the repeats.
 */
static void *start_watchdog(void *arg)
{
	struct ublk_daemon *d = arg;
	int waited = 0;

	while (atomic_load(&d->start_busy) && waited < START_WAIT_MS) {
		usleep(100000);
		waited += 100;
	}
	if (!atomic_load(&d->start_busy))
		return NULL;
	logmsg("START_DEV has not finished after %d s: giving up", START_WAIT_MS / 1000);
	atomic_store(&d->start_timed_out, true);
	atomic_store(&d->quit, true);
	while (atomic_load(&d->start_busy)) {
		for (unsigned int i = 0; i < d->dev.info.nr_hw_queues; i++)
			if (!atomic_load(&d->q[i].ended))
				pthread_kill(d->q[i].tid, SIGUSR2);
		kill(d->pid, SIGUSR1);
		usleep(100000);
	}
	return NULL;
}

/* Wait for queue threads and stop requests; returns when all threads ended. */
static void serve(struct ublk_daemon *d, const sigset_t *set)
{
	bool stopping = false;
	siginfo_t si;

	while (!all_ended(d, nr_threads(d))) {
		if (sigwaitinfo(set, &si) < 0)
			continue;
		if (si.si_signo == SIGUSR1) {
			struct ublk_queue_thread *f = first_failure(d, nr_threads(d));

			if (!f || stopping)
				continue;
			logmsg("queue %u failed (%s): stopping the device", f->q_id, f->err);
		} else {
			logmsg("%s: stopping the device", strsignal(si.si_signo));
			if (stopping)
				continue;
		}
		stopping = true;
		atomic_store(&d->quit, true);
		int ret = iouring_bpf_ublk_stop(&d->dev);

		if (ret && ret != -ENODEV)
			logmsg("STOP_DEV: %s", strerror(-ret));
	}
	stop_queues(d, nr_threads(d));
}

int ublk_daemon_run(const struct ublk_conf *conf, int report_fd)
{
	static struct ublk_daemon d;
	const struct ublk_conf *c = conf;
	struct ublk_queue_thread *f;
	struct ublk_state st = {};
	struct sigaction sa = { .sa_handler = on_signal };	/* no SA_RESTART */
	sigset_t set, usr1;
	pthread_t watchdog;
	unsigned int ran = 0;
	__u64 flags;
	int ret, id, status = 0;

	d.conf = c;
	d.pid = getpid();
	d.zero_fd = -1;
	for (unsigned int i = 0; i < IOU_UBLK_MAX_FILES; i++)
		d.file_fds[i] = -1;
	libbpf_set_print(daemon_libbpf_print);

	/* every thread blocks these; the main thread waits for them */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	for (unsigned int i = 0; i < c->nr_files; i++) {
		d.file_fds[i] = open(c->files[i], O_RDWR | O_CLOEXEC);
		if (d.file_fds[i] < 0) {
			ret = -errno;
			report(report_fd, "error %d %s: %s", ret, c->files[i], strerror(-ret));
			goto out_files;
		}
	}
	d.zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (d.zero_fd < 0) {
		ret = -errno;
		report(report_fd, "error %d /dev/zero: %s", ret, strerror(-ret));
		goto out_files;
	}

	flags = c->target == UBLK_TARGET_LOOP_USER ? UBLK_F_NEED_GET_DATA : UBLK_F_SUPPORT_ZERO_COPY;
	ret = iouring_bpf_ublk_add(&d.dev, c->dev_id, c->queues, c->depth, c->max_io_bytes, flags);
	if (ret) {
		if (ret == -EEXIST && c->dev_id >= 0)
			report(report_fd, "error %d ublk device %d exists already", ret, c->dev_id);
		else
			report(report_fd, "error %d creating the device (ADD_DEV): %s", ret,
			       add_error(ret));
		goto out_files;
	}
	id = d.dev.info.dev_id;
	report(report_fd, "added %d", id);
	ret = open_log(id);
	if (ret) {
		report(report_fd, "error %d opening the log %s/%d.log: %s", ret, ublk_state_dir(),
		       id, strerror(-ret));
		undo_device(&d, 0);
		goto out;
	}
	logmsg("ublk %d: target %s, %llu bytes, %u queue(s) of depth %u, flags 0x%llx", id,
	       ublk_target_name(c->target), (unsigned long long)c->dev_bytes,
	       d.dev.info.nr_hw_queues, d.dev.info.queue_depth,
	       (unsigned long long)d.dev.info.flags);
	for (unsigned int i = 0; i < c->nr_files; i++)
		logmsg("  file %u: %s (%llu bytes)", i, c->files[i],
		       (unsigned long long)c->file_bytes[i]);
	if (c->policy[0])
		logmsg("  policy: %s", c->policy);
	if (c->chunk_bytes)
		logmsg("  chunk: %u bytes (chunk_sectors %u)", c->chunk_bytes, c->chunk_bytes >> 9);

	ret = set_params(&d);
	if (ret) {
		report(report_fd, "error %d setting the device parameters (SET_PARAMS): %s", ret,
		       strerror(-ret));
		undo_device(&d, 0);
		goto out;
	}
	ret = iouring_bpf_ublk_open_char(&d.dev);
	if (ret) {
		report(report_fd, "error %d opening /dev/ublkc%d: %s", ret, id, strerror(-ret));
		undo_device(&d, 0);
		goto out;
	}

	atomic_store(&d.start_busy, true);
	for (ran = 0; ran < nr_threads(&d); ran++) {
		struct ublk_queue_thread *qt = &d.q[ran];

		qt->d = &d;
		qt->q_id = ran;
		ret = -pthread_create(&qt->tid, NULL, queue_main, qt);
		if (ret) {
			atomic_store(&d.start_busy, false);
			report(report_fd, "error %d starting queue thread %u: %s", ret, ran,
			       strerror(-ret));
			undo_device(&d, ran);
			goto out;
		}
	}

	/* START_DEV returns once every queue fetched; a queue that fails interrupts it */
	ret = -pthread_create(&watchdog, NULL, start_watchdog, &d);
	if (ret) {
		atomic_store(&d.start_busy, false);
		report(report_fd, "error %d starting a thread: %s", ret, strerror(-ret));
		undo_device(&d, ran);
		goto out;
	}
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	ret = all_ended(&d, 1) ? -EINTR : iouring_bpf_ublk_start(&d.dev, d.pid);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	atomic_store(&d.start_busy, false);
	pthread_join(watchdog, NULL);
	f = first_failure(&d, ran);
	if (atomic_load(&d.start_timed_out)) {
		report(report_fd, "error %d starting the device (START_DEV) did not finish within "
		       "%d s: the queues did not fetch, or did not serve the partition scan's "
		       "reads", -ETIMEDOUT, START_WAIT_MS / 1000);
		undo_device(&d, ran);
		goto out;
	}
	if (ret || f || atomic_load(&d.nr_ended)) {
		if (f)
			report(report_fd, "error %d queue %u: %s", f->ret, f->q_id, f->err);
		else if (ret)
			report(report_fd, "error %d starting the device (START_DEV): %s", ret,
			       strerror(-ret));
		else
			report(report_fd, "error %d a queue thread ended during set-up", -EIO);
		undo_device(&d, ran);
		goto out;
	}

	st.id = id;
	st.pid = d.pid;
	st.conf = *c;
	st.conf.queues = d.dev.info.nr_hw_queues;
	ret = ublk_state_write(&st);
	if (ret) {
		report(report_fd, "error %d writing the state file %s/%d: %s", ret, ublk_state_dir(),
		       id, strerror(-ret));
		undo_device(&d, ran);
		goto out;
	}
	logmsg("ublk %d: /dev/ublkb%d is live", id, id);
	report(report_fd, "ready");
	close(report_fd);
	report_fd = -1;

	serve(&d, &set);
	for (unsigned int i = 0; i < ran; i++) {
		if (d.q[i].ret) {
			status = 1;
			logmsg("queue %u ended: %s", i, d.q[i].err);
		}
	}
	logmsg("ublk %d: every queue ended; the daemon exits", id);
	ublk_state_remove(id, d.pid);
	close_files(&d);
	iouring_bpf_ublk_close(&d.dev);
	return status;
out:
	iouring_bpf_ublk_close(&d.dev);
out_files:
	close_files(&d);
	if (report_fd >= 0)
		close(report_fd);
	return 1;
}
