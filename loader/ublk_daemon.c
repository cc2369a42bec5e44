// SPDX-License-Identifier: GPL-2.0
/*
 * The daemon behind `iouring-bpf ublk add`: liburing-bpf's ublk server
 * creates the device (ADD_DEV, SET_PARAMS), opens /dev/ublkcN, starts one
 * thread per queue, then START_DEV; the daemon then writes the state file
 * and tells the waiting parent "ready". It serves until every queue thread
 * has ended, which happens when the device is stopped (ublk del, STOP_DEV
 * from anywhere, or SIGTERM to the daemon, which stops it), then removes
 * its state file and exits, leaving the stopped device to ublk del.
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
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "loader.h"
#include "ublk_cmd.h"

#define DELETE_WAIT_MS	5000

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

/* The server's own lines (queue errors, teardown) go to the log too. */
static void server_log(const char *line, void *arg)
{
	(void)arg;
	logmsg("%s", line);
}

static int daemon_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && !debug_output)
		return 0;
	return vfprintf(stderr, fmt, ap);
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

struct daemon {
	const struct ublk_conf *conf;
	int report_fd;
	int err;		/* on_added failed: why */
	char msg[512];
	struct iouring_bpf_ublk_server *server;
	atomic_bool done;	/* the signal thread may end */
};

/* The device exists: tell the parent its id, log to ID.log from now on. */
static int on_added(struct iouring_bpf_ublk_server *s, void *arg)
{
	struct daemon *d = arg;
	const struct ublk_conf *c = d->conf;
	const struct ublksrv_ctrl_dev_info *info = iouring_bpf_ublk_server_info(s);
	int id = iouring_bpf_ublk_server_id(s), ret;

	report(d->report_fd, "added %d", id);
	ret = open_log(id);
	if (ret) {
		d->err = ret;
		snprintf(d->msg, sizeof(d->msg), "opening the log %s/%d.log: %s", ublk_state_dir(),
			 id, strerror(-ret));
		return ret;
	}
	logmsg("ublk %d: target %s, %llu bytes, %u queue(s) of depth %u, flags 0x%llx", id,
	       ublk_target_name(c->target), (unsigned long long)c->dev_bytes,
	       info->nr_hw_queues, info->queue_depth, (unsigned long long)info->flags);
	for (unsigned int i = 0; i < c->nr_files; i++)
		logmsg("  file %u: %s (%llu bytes)", i, c->files[i],
		       (unsigned long long)c->file_bytes[i]);
	if (c->policy[0])
		logmsg("  policy: %s", c->policy);
	if (c->chunk_bytes)
		logmsg("  chunk: %u bytes (chunk_sectors %u)", c->chunk_bytes, c->chunk_bytes >> 9);
	return 0;
}

/*
 * SIGTERM, SIGINT, SIGHUP (blocked in every thread) stop the device; the
 * main thread waits for the queues meanwhile. SIGHUP with done set ends it.
 */
static void *signal_main(void *arg)
{
	struct daemon *d = arg;
	bool stopping = false;
	sigset_t set;
	siginfo_t si;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	for (;;) {
		if (sigwaitinfo(&set, &si) < 0)
			continue;
		if (atomic_load(&d->done))
			return NULL;
		logmsg("%s: stopping the device", strsignal(si.si_signo));
		if (stopping)
			continue;
		stopping = true;
		iouring_bpf_ublk_server_stop(d->server);
	}
}

/*
 * The device went live but the daemon cannot go on (no state file): stop
 * and delete it, so nothing is left behind. The server keeps a device that
 * ran (IOURING_BPF_UBLK_SERVE_KEEP_DEVICE), so it is deleted here.
 */
static void give_up(struct iouring_bpf_ublk_server *s, int id)
{
	struct iouring_bpf_ublk_dev dev;
	int ret;

	iouring_bpf_ublk_server_stop(s);
	iouring_bpf_ublk_server_wait(s);
	iouring_bpf_ublk_server_destroy(s);
	ret = iouring_bpf_ublk_open(&dev, id);
	if (!ret) {
		iouring_bpf_ublk_stop(&dev);
		ret = iouring_bpf_ublk_delete(&dev, DELETE_WAIT_MS);
		iouring_bpf_ublk_close(&dev);
	}
	if (ret && ret != -ENODEV)
		logmsg("deleting the half-created device: %s", strerror(-ret));
	else
		logmsg("deleted the half-created device");
}

int ublk_daemon_run(const struct ublk_conf *conf, int report_fd)
{
	static struct daemon d;
	const struct ublk_conf *c = conf;
	struct iouring_bpf_ublk_server_opts o = { .sz = sizeof(o) };
	struct iouring_bpf_ublk_server *s = NULL;
	struct ublk_state st = {};
	pthread_t sig_thread;
	sigset_t set;
	int ret, id, status;

	d.conf = c;
	d.report_fd = report_fd;
	libbpf_set_print(daemon_libbpf_print);

	/* every thread blocks these; signal_main() waits for them */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	o.policy = c->target == UBLK_TARGET_LOOP_USER ? NULL : c->policy;
	o.nr_files = c->nr_files;
	for (unsigned int i = 0; i < c->nr_files; i++)
		o.files[i] = c->files[i];
	o.dev_bytes = c->dev_bytes;
	o.queues = c->queues;
	o.depth = c->depth;
	o.max_io_bytes = c->max_io_bytes;
	o.dev_id = c->dev_id;
	/* ublk del deletes the device, also after SIGTERM stopped it */
	o.serve_flags = IOURING_BPF_UBLK_SERVE_KEEP_DEVICE;
	if (c->target == UBLK_TARGET_LOOP_USER)
		o.serve_flags |= IOURING_BPF_UBLK_SERVE_USER_COPY;
	if (c->kernel_path)
		o.serve_flags |= IOURING_BPF_UBLK_SERVE_KERNEL_PATH;
	o.on_added = on_added;
	o.log = server_log;
	o.arg = &d;

	ret = iouring_bpf_ublk_server_start(&o, &s);
	if (ret) {
		if (d.err)
			report(report_fd, "error %d %s", d.err, d.msg);
		else
			report(report_fd, "error %d %s", ret, iouring_bpf_ublk_server_strerror(s));
		iouring_bpf_ublk_server_destroy(s);
		close(report_fd);
		return 1;
	}
	id = iouring_bpf_ublk_server_id(s);
	d.server = s;

	st.id = id;
	st.pid = getpid();
	st.conf = *c;
	st.conf.queues = iouring_bpf_ublk_server_info(s)->nr_hw_queues;
	ret = ublk_state_write(&st);
	if (ret) {
		report(report_fd, "error %d writing the state file %s/%d: %s", ret, ublk_state_dir(),
		       id, strerror(-ret));
		give_up(s, id);
		close(report_fd);
		return 1;
	}
	ret = -pthread_create(&sig_thread, NULL, signal_main, &d);
	if (ret) {
		report(report_fd, "error %d starting a thread: %s", ret, strerror(-ret));
		ublk_state_remove(id, st.pid);
		give_up(s, id);
		close(report_fd);
		return 1;
	}
	logmsg("ublk %d: /dev/ublkb%d is live", id, id);
	report(report_fd, "ready");
	close(report_fd);

	/* the server logs each queue that ended with an error */
	status = iouring_bpf_ublk_server_wait(s) ? 1 : 0;
	logmsg("ublk %d: every queue ended; the daemon exits", id);
	ublk_state_remove(id, st.pid);
	atomic_store(&d.done, true);
	pthread_kill(sig_thread, SIGHUP);
	pthread_join(sig_thread, NULL);
	iouring_bpf_ublk_server_destroy(s);
	return status;
}
