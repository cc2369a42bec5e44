// SPDX-License-Identifier: (LGPL-2.1 OR MIT)
/*
 * A ublk server: create the device (ADD_DEV, SET_PARAMS), open
 * /dev/ublkcN, start one thread per queue, START_DEV, and serve until every
 * queue thread has ended, which happens when the device is stopped
 * (_stop(), STOP_DEV or DEL_DEV from anywhere). A device that never became
 * live is deleted again.
 *
 * A queue thread runs a BPF policy inside its io_uring_enter(), with zero
 * copy, set up as iouring_bpf/ublk.h says: a ring with room for
 * IOU_UBLK_SQES_PER_TAG SQEs per tag, fixed files (char device, /dev/zero,
 * backing files), a sparse fixed-buffer table of `depth` entries, and the
 * read-only global iou_ublk. The policy fetches, serves and stops (exit
 * status 0) once every tag's command came back aborted. With
 * IOURING_BPF_UBLK_SERVE_USER_COPY it runs the copying loop of ublk_user.c
 * instead.
 *
 * Waking: a queue thread that ends, or the start watchdog, sets
 * abort_start, which START_DEV's wait looks at; queue endings reach
 * _wait() through a condition variable. Only the watchdog signals
 * (opts.signo, to the library's own queue threads, with pthread_kill()):
 * nothing else interrupts a BPF loop that serves nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ublk_server.h"

#define DEFAULT_DEPTH		64
#define DEFAULT_MAX_IO_BYTES	(512 * 1024)
/* after a failed set-up: how long to keep stopping until the queues end */
#define TEARDOWN_WAIT_MS	30000
/* how long DEL_DEV waits for the char device to be let go */
#define DELETE_WAIT_MS		5000
/*
 * START_DEV returns once every queue fetched and the partition scan that
 * add_disk() does read its sectors: queues that fetch but do not serve keep
 * it (uninterruptibly) waiting. After this long the watchdog makes the
 * queue threads close their rings, which fails those reads.
 */
#define START_WAIT_MS		60000

#define KNOWN_SERVE_FLAGS	(IOURING_BPF_UBLK_SERVE_KERNEL_PATH |                    \
				 IOURING_BPF_UBLK_SERVE_USER_COPY |                      \
				 IOURING_BPF_UBLK_SERVE_KEEP_DEVICE |                    \
				 IOURING_BPF_UBLK_SERVE_NO_AUTO_BUF_REG)

/* --- messages --- */

static void slog(struct iouring_bpf_ublk_server *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void slog(struct iouring_bpf_ublk_server *s, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	if (!s->o.log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	s->o.log(line, s->o.arg);
}

static int sfail(struct iouring_bpf_ublk_server *s, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Record why _start() failed (err < 0) and return err. */
static int sfail(struct iouring_bpf_ublk_server *s, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->msg, sizeof(s->msg), fmt, ap);
	va_end(ap);
	s->err = err;
	return err;
}

void ublk_qfail(struct ublk_server_queue *q, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(q->err, sizeof(q->err), fmt, ap);
	va_end(ap);
	q->ret = err < 0 ? err : -err;
	if (!q->ret)
		q->ret = -EIO;
	slog(q->s, "queue %u: %s", q->q_id, q->err);
}

bool ublk_may_fetch(struct ublk_server_queue *q)
{
	return !atomic_load(&q->s->quit);
}

/* --- the signal that interrupts a queue thread --- */

static pthread_mutex_t sig_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_signal(int sig)
{
	(void)sig;	/* only to make io_uring_enter() return EINTR */
}

/*
 * A signal left at SIG_DFL would kill the process, one at SIG_IGN would be
 * dropped: give such a one a handler that does nothing (no SA_RESTART, so
 * the wait is interrupted). A handler of the caller's is left alone.
 */
static int prepare_signal(int signo)
{
	struct sigaction old, sa = { .sa_handler = on_signal };
	int ret = 0;

	sigemptyset(&sa.sa_mask);
	pthread_mutex_lock(&sig_lock);
	if (sigaction(signo, NULL, &old)) {
		ret = -errno;
	} else if (!(old.sa_flags & SA_SIGINFO) &&
		   (old.sa_handler == SIG_DFL || old.sa_handler == SIG_IGN)) {
		if (sigaction(signo, &sa, NULL))
			ret = -errno;
	}
	pthread_mutex_unlock(&sig_lock);
	return ret;
}

/* --- one queue served by the BPF policy --- */

static int register_files(struct iouring_bpf_ring *ring, const struct iouring_bpf_ublk_server *s)
{
	int fds[2 + IOU_UBLK_MAX_FILES];
	unsigned int n = 0;

	fds[IOU_UBLK_CHAR_INDEX] = s->dev.char_fd;
	fds[IOU_UBLK_ZERO_INDEX] = s->zero_fd;
	n = 2;
	for (unsigned int i = 0; i < s->o.nr_files; i++)
		fds[IOU_UBLK_FILE_INDEX(i)] = s->file_fds[i], n++;
	if (syscall(__NR_io_uring_register, ring->fd, IORING_REGISTER_FILES, fds, n) < 0)
		return -errno;
	return 0;
}

static int register_sparse_buffers(struct iouring_bpf_ring *ring, unsigned int nr)
{
	struct io_uring_rsrc_register rr = { .nr = nr, .flags = IORING_RSRC_REGISTER_SPARSE };

	if (syscall(__NR_io_uring_register, ring->fd, IORING_REGISTER_BUFFERS2, &rr,
		    sizeof(rr)) < 0)
		return -errno;
	return 0;
}

static void fill_geometry(const struct iouring_bpf_ublk_server *s, unsigned int q_id,
			  struct iouring_bpf_ublk_geometry *g)
{
	memset(g, 0, sizeof(*g));
	g->dev_id = s->dev.info.dev_id;
	g->q_id = q_id;
	g->depth = s->dev.info.queue_depth;
	g->nr_files = s->o.nr_files;
	g->max_io_bytes = s->dev.info.max_io_buf_bytes;
	g->dev_sectors = s->dev_bytes >> 9;
	for (unsigned int i = 0; i < s->o.nr_files; i++)
		g->file_sectors[i] = s->file_bytes[i] >> 9;
}

static void serve_bpf(struct ublk_server_queue *q)
{
	struct iouring_bpf_ublk_server *s = q->s;
	struct iouring_bpf_ring ring = { .fd = -1 };
	struct iouring_bpf_policy *p = NULL;
	struct iouring_bpf_ublk_geometry *g;
	unsigned int depth = s->dev.info.queue_depth, entries = 1;
	size_t size = 0;
	int ret, status = 0;

	while (entries < IOU_UBLK_SQES_PER_TAG * depth)
		entries <<= 1;
	ret = iouring_bpf_ring_init(&ring, entries, 2 * entries, IOURING_BPF_RING_FLAGS);
	if (ret) {
		ublk_qfail(q, ret, "creating the queue's io_uring (%u entries): %s", entries,
			   strerror(-ret));
		goto out;
	}
	ret = register_files(&ring, s);
	if (ret) {
		ublk_qfail(q, ret, "registering the fixed files: %s", strerror(-ret));
		goto out;
	}
	ret = register_sparse_buffers(&ring, depth);
	if (ret) {
		ublk_qfail(q, ret, "registering a sparse table of %u fixed buffers: %s", depth,
			   strerror(-ret));
		goto out;
	}

	ret = iouring_bpf_policy_open(s->policy, &p);
	if (ret) {
		ublk_qfail(q, ret, "%s", iouring_bpf_policy_strerror(p));
		goto out;
	}
	g = iouring_bpf_policy_global_ptr(p, "iou_ublk", &size);
	if (!g || size != sizeof(*g)) {
		ret = -EINVAL;
		ublk_qfail(q, ret, "%s: no global 'iou_ublk' of type struct "
			   "iouring_bpf_ublk_geometry: not a ublk policy (see iouring_bpf/ublk.h)",
			   s->policy);
		goto out;
	}
	fill_geometry(s, q->q_id, g);
	if (s->dev.info.flags & UBLK_F_AUTO_BUF_REG) {
		__u32 *auto_reg = iouring_bpf_policy_global_ptr(p, "iou_ublk_auto_buf_reg", &size);

		if (auto_reg && size == sizeof(*auto_reg))
			*auto_reg = 1;
	}

	ret = iouring_bpf_policy_set_ring(p, &ring);
	if (!ret)
		ret = iouring_bpf_policy_load(p);
	if (ret) {
		ublk_qfail(q, ret, "%s: %s%s", s->policy, iouring_bpf_policy_strerror(p),
			   ret == -EPERM ? " (loading BPF needs root)" : "");
		goto out;
	}
	ret = iouring_bpf_policy_attach(p);
	if (ret) {
		ublk_qfail(q, ret, "%s: %s", s->policy, iouring_bpf_policy_strerror(p));
		goto out;
	}
	if (!ublk_may_fetch(q))
		goto out;
	/* as iouring_bpf_policy_run(), but the server may interrupt it for good */
	do
		ret = iouring_bpf_ring_run(&ring);
	while (ret == -EINTR && ublk_may_fetch(q));
	if (ret == -EINTR) {
		ublk_qfail(q, ret, "the daemon gave up on the device");
		goto out;
	}
	if (ret) {
		ublk_qfail(q, ret, "%s: io_uring_enter: %s", s->policy, strerror(-ret));
		goto out;
	}
	if (iouring_bpf_policy_get_global(p, "iou_exit_status", &status, sizeof(status)))
		status = 0;
	if (status)
		ublk_qfail(q, status, "the policy stopped with status %d (%s)", status,
			   strerror(status < 0 ? -status : status));
out:
	/* detach first, then close the ring: that cancels what the driver holds */
	iouring_bpf_policy_close(p);
	iouring_bpf_ring_exit(&ring);
}

static void *queue_main(void *arg)
{
	struct ublk_server_queue *q = arg;
	struct iouring_bpf_ublk_server *s = q->s;
	sigset_t set;
	char name[16];

	/* created with every signal blocked: take only the one meant for us */
	sigemptyset(&set);
	sigaddset(&set, s->o.signo);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	snprintf(name, sizeof(name), "ublk%u-q%u", s->dev.info.dev_id, q->q_id);
	pthread_setname_np(pthread_self(), name);
	if (s->o.serve_flags & IOURING_BPF_UBLK_SERVE_USER_COPY)
		ublk_serve_user(q);
	else
		serve_bpf(q);
	atomic_store(&q->ended, true);
	/* a queue that ends while START_DEV waits makes it give up */
	atomic_store(&s->abort_start, true);
	pthread_mutex_lock(&s->lock);
	s->nr_ended++;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* --- the device --- */

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

static int set_params(struct iouring_bpf_ublk_server *s)
{
	const struct ublksrv_ctrl_dev_info *info = &s->dev.info;
	__u32 max_sectors = info->max_io_buf_bytes >> 9;
	__u32 chunk_sectors = s->chunk_bytes >> 9;
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
			.dev_sectors = s->dev_bytes >> 9,
			/* the policy's IOU_UBLK_CHUNK_BYTES(), checked before ADD_DEV */
			.chunk_sectors = chunk_sectors,
		},
		.discard = {
			.discard_granularity = 4096,
			.max_discard_sectors = max_discard,
			.max_write_zeroes_sectors = max_sectors,
			.max_discard_segments = 1,
		},
	};

	return iouring_bpf_ublk_set_params(&s->dev, &p);
}

/*
 * Everything the device needs once it exists and before its queues start
 * and START_DEV: its parameters and the char device the queues serve
 * through. A per-device hook of the kernel path (ublk_bpf_ops, attached
 * after ADD_DEV) belongs here too, once there is one.
 */
static int setup_device(struct iouring_bpf_ublk_server *s)
{
	int ret, id = s->dev.info.dev_id;

	ret = set_params(s);
	if (ret)
		return sfail(s, ret, "setting the device parameters (SET_PARAMS): %s",
			     strerror(-ret));
	ret = iouring_bpf_ublk_open_char(&s->dev);
	if (ret)
		return sfail(s, ret, "opening /dev/ublkc%d: %s", id, strerror(-ret));
	if (s->o.serve_flags & IOURING_BPF_UBLK_SERVE_KERNEL_PATH) {
		struct iouring_bpf_ublk_geometry g;

		/* before START_DEV: the partition scan takes the kernel path too */
		fill_geometry(s, 0, &g);
		ret = iouring_bpf_ublk_hook_attach(s->policy, s->dev.char_fd, &g, s->file_fds,
						   s->o.nr_files, &s->hook);
		if (ret)
			return sfail(s, ret, "the kernel path: %s",
				     iouring_bpf_ublk_hook_strerror(s->hook));
	}
	return 0;
}

/* The first queue that ended with an error. */
static struct ublk_server_queue *first_failure(struct iouring_bpf_ublk_server *s)
{
	for (unsigned int i = 0; i < s->nr_threads; i++)
		if (atomic_load(&s->q[i].ended) && s->q[i].ret)
			return &s->q[i];
	return NULL;
}

static int ctrl_stop(struct iouring_bpf_ublk_server *s)
{
	int ret;

	pthread_mutex_lock(&s->ctrl_lock);
	ret = iouring_bpf_ublk_stop(&s->dev);
	pthread_mutex_unlock(&s->ctrl_lock);
	if (ret && ret != -ENODEV)
		slog(s, "STOP_DEV: %s", strerror(-ret));
	return ret == -ENODEV ? 0 : ret;
}

static void join_queues(struct iouring_bpf_ublk_server *s)
{
	for (unsigned int i = 0; i < s->nr_threads; i++)
		pthread_join(s->q[i].tid, NULL);
	s->waited = true;
}

/*
 * Make the queue threads end: STOP_DEV cancels every fetch the driver holds
 * (even on a device that never started), so stop until they have all gone;
 * a thread still setting up sees quit and does not fetch. Then join them.
 */
static void stop_queues(struct iouring_bpf_ublk_server *s)
{
	struct timespec t0, now, until;

	atomic_store(&s->quit, true);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_mutex_lock(&s->lock);
	while (s->nr_ended < s->nr_threads) {
		pthread_mutex_unlock(&s->lock);
		ctrl_stop(s);
		pthread_mutex_lock(&s->lock);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += 200 * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		if (s->nr_ended < s->nr_threads)
			pthread_cond_timedwait(&s->cond, &s->lock, &until);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (s->nr_ended < s->nr_threads && (now.tv_sec - t0.tv_sec) * 1000 > TEARDOWN_WAIT_MS) {
			pthread_mutex_unlock(&s->lock);
			slog(s, "queue threads still running after %d s; giving up",
			     TEARDOWN_WAIT_MS / 1000);
			s->stuck = true;	/* their memory stays: they may still use it */
			return;
		}
	}
	pthread_mutex_unlock(&s->lock);
	join_queues(s);
}

static void close_files(struct iouring_bpf_ublk_server *s)
{
	for (unsigned int i = 0; i < IOU_UBLK_MAX_FILES; i++) {
		if (s->file_fds[i] >= 0)
			close(s->file_fds[i]);
		s->file_fds[i] = -1;
	}
	if (s->zero_fd >= 0)
		close(s->zero_fd);
	s->zero_fd = -1;
}

/* Let go of /dev/ublkcN, then DEL_DEV, which waits for that. */
static int delete_device(struct iouring_bpf_ublk_server *s)
{
	int ret;

	if (s->dev.char_fd >= 0) {
		close(s->dev.char_fd);
		s->dev.char_fd = -1;
	}
	pthread_mutex_lock(&s->ctrl_lock);
	ret = iouring_bpf_ublk_delete(&s->dev, DELETE_WAIT_MS);
	pthread_mutex_unlock(&s->ctrl_lock);
	if (!ret || ret == -ENODEV)
		s->added = false;
	return ret == -ENODEV ? 0 : ret;
}

/*
 * Set-up failed after ADD_DEV: end the queues, let go of the char device
 * and delete the device, so nothing is left behind.
 */
static void undo_device(struct iouring_bpf_ublk_server *s)
{
	int ret;

	stop_queues(s);
	close_files(s);
	ret = delete_device(s);
	if (ret)
		slog(s, "deleting the half-created device: %s", strerror(-ret));
	else
		slog(s, "deleted the half-created device");
}

/*
 * While START_DEV runs: after START_WAIT_MS, give up. Interrupt the queue
 * threads (opts.signo) until they have closed their rings, and tell
 * START_DEV's wait to cancel it; a signal that lands outside a wait is
 * lost, hence the repeats.
 */
static void *start_watchdog(void *arg)
{
	struct iouring_bpf_ublk_server *s = arg;
	int waited = 0;

	while (atomic_load(&s->start_busy) && waited < START_WAIT_MS) {
		usleep(100000);
		waited += 100;
	}
	if (!atomic_load(&s->start_busy))
		return NULL;
	slog(s, "START_DEV has not finished after %d s: giving up", START_WAIT_MS / 1000);
	atomic_store(&s->start_timed_out, true);
	atomic_store(&s->quit, true);
	atomic_store(&s->abort_start, true);
	while (atomic_load(&s->start_busy)) {
		for (unsigned int i = 0; i < s->nr_threads; i++)
			if (!atomic_load(&s->q[i].ended))
				pthread_kill(s->q[i].tid, s->o.signo);
		usleep(100000);
	}
	return NULL;
}

/* --- options --- */

static char *dup_str(struct iouring_bpf_ublk_server *s, const char *str)
{
	char *d = strdup(str);

	if (!d)
		sfail(s, -ENOMEM, "out of memory");
	return d;
}

/* Copy and check the caller's options; fill in the defaults. */
static int take_opts(struct iouring_bpf_ublk_server *s, const struct iouring_bpf_ublk_server_opts *uo)
{
	struct iouring_bpf_ublk_server_opts *o = &s->o;
	bool user = false;

	if (!uo)
		return sfail(s, -EINVAL, "no options (NULL)");
	if (uo->sz < sizeof(uo->sz) + sizeof(uo->policy))
		return sfail(s, -EINVAL, "opts.sz is %zu: set it to sizeof(struct "
			     "iouring_bpf_ublk_server_opts)", uo->sz);
	memcpy(o, uo, uo->sz < sizeof(*o) ? uo->sz : sizeof(*o));
	for (size_t i = sizeof(*o); i < uo->sz; i++)
		if (((const char *)uo)[i])
			return sfail(s, -EINVAL, "opts sets fields this liburing-bpf does not know "
				     "(opts.sz %zu, this library's %zu)", uo->sz, sizeof(*o));
	o->sz = sizeof(*o);

	if (o->serve_flags & ~KNOWN_SERVE_FLAGS)
		return sfail(s, -EINVAL, "unknown serve_flags 0x%x",
			     o->serve_flags & ~KNOWN_SERVE_FLAGS);
	user = o->serve_flags & IOURING_BPF_UBLK_SERVE_USER_COPY;
	if (user && (o->serve_flags & IOURING_BPF_UBLK_SERVE_KERNEL_PATH))
		return sfail(s, -EINVAL, "the kernel path needs a policy: not with "
			     "IOURING_BPF_UBLK_SERVE_USER_COPY");
	if (user && o->policy)
		return sfail(s, -EINVAL, "IOURING_BPF_UBLK_SERVE_USER_COPY serves without a "
			     "policy, but one is given (%s)", o->policy);
	if (!user && !o->policy)
		return sfail(s, -EINVAL, "no policy: opts.policy names the policy object");
	if (user && o->nr_files != 1)
		return sfail(s, -EINVAL, "IOURING_BPF_UBLK_SERVE_USER_COPY serves exactly one "
			     "file (%u given)", o->nr_files);
	if (o->nr_files > IOU_UBLK_MAX_FILES)
		return sfail(s, -EINVAL, "%u files: at most %d", o->nr_files, IOU_UBLK_MAX_FILES);
	for (unsigned int i = 0; i < o->nr_files; i++)
		if (!o->files[i])
			return sfail(s, -EINVAL, "opts.files[%u] is NULL", i);
	if (o->depth > IOU_UBLK_MAX_DEPTH)
		return sfail(s, -EINVAL, "depth %u: at most %d", o->depth, IOU_UBLK_MAX_DEPTH);
	if (o->dev_id < -1)
		return sfail(s, -EINVAL, "dev_id %d: a device number, or -1 for any", o->dev_id);
	if (o->dev_bytes % 512)
		return sfail(s, -EINVAL, "dev_bytes %llu is not a multiple of 512",
			     (unsigned long long)o->dev_bytes);
	if (!o->signo)
		o->signo = SIGUSR2;
	if (o->signo < 1 || o->signo > SIGRTMAX || o->signo == SIGKILL || o->signo == SIGSTOP)
		return sfail(s, -EINVAL, "signo %d is not a signal a handler can take", o->signo);
	if (!o->queues)
		o->queues = 1;
	if (!o->depth)
		o->depth = DEFAULT_DEPTH;
	if (!o->max_io_bytes)
		o->max_io_bytes = DEFAULT_MAX_IO_BYTES;

	/* the strings are the caller's: keep copies */
	if (o->policy && !(s->policy = dup_str(s, o->policy)))
		return s->err;
	o->policy = s->policy;
	for (unsigned int i = 0; i < o->nr_files; i++) {
		if (!(s->files[i] = dup_str(s, o->files[i])))
			return s->err;
		o->files[i] = s->files[i];
	}
	for (unsigned int i = o->nr_files; i < IOU_UBLK_MAX_FILES; i++)
		o->files[i] = NULL;
	return 0;
}

/* Open the backing files and /dev/zero; the device's size. */
static int open_files(struct iouring_bpf_ublk_server *s)
{
	__u64 total = 0;

	for (unsigned int i = 0; i < s->o.nr_files; i++) {
		const char *path = s->files[i];
		struct stat st;
		int fd, ret;

		fd = s->file_fds[i] = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return sfail(s, -errno, "%s: %s", path, strerror(errno));
		if (fstat(fd, &st))
			return sfail(s, -errno, "%s: %s", path, strerror(errno));
		if (S_ISBLK(st.st_mode)) {
			unsigned long long sz = 0;

			if (ioctl(fd, BLKGETSIZE64, &sz)) {
				ret = -errno;
				return sfail(s, ret, "%s: size of the block device: %s", path,
					     strerror(-ret));
			}
			s->file_bytes[i] = sz;
			/*
			 * Direct I/O, as the loop driver's, when the device takes
			 * the 512-byte requests ublk may send: no second copy in
			 * its page cache, and asynchronous in the kernel path.
			 */
			int lbs = 0;

			if (!ioctl(fd, BLKSSZGET, &lbs) && lbs == 512 &&
			    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_DIRECT))
				return sfail(s, -errno, "%s: O_DIRECT: %s", path, strerror(errno));
		} else if (S_ISREG(st.st_mode)) {
			s->file_bytes[i] = st.st_size;
		} else {
			return sfail(s, -EINVAL, "%s is not a regular file or a block device", path);
		}
		if (!s->file_bytes[i])
			return sfail(s, -EINVAL, "%s is empty (0 bytes)", path);
		if (s->file_bytes[i] % 512)
			return sfail(s, -EINVAL, "%s is %llu bytes, not a multiple of 512", path,
				     (unsigned long long)s->file_bytes[i]);
		total += s->file_bytes[i];
	}
	s->zero_fd = open("/dev/zero", O_RDWR | O_CLOEXEC);
	if (s->zero_fd < 0)
		return sfail(s, -errno, "/dev/zero: %s", strerror(errno));
	s->dev_bytes = s->o.dev_bytes ? s->o.dev_bytes : total;
	if (!s->dev_bytes)
		return sfail(s, -EINVAL, "no files and no dev_bytes: the device would be empty");
	return 0;
}

/* The policy opens, declares iou_ublk and, if it declares a chunk, one the device can have. */
static int check_policy(struct iouring_bpf_ublk_server *s)
{
	const char *path = s->policy;
	struct iouring_bpf_policy *p = NULL;
	size_t size = 0;
	int ret = iouring_bpf_policy_open(path, &p);

	if (ret) {
		sfail(s, ret, "%s", iouring_bpf_policy_strerror(p));
	} else if (!iouring_bpf_policy_global_ptr(p, "iou_ublk", &size) ||
		   size != sizeof(struct iouring_bpf_ublk_geometry)) {
		ret = sfail(s, -EINVAL, "%s is not a ublk policy: it has no global 'iou_ublk' "
			    "(struct iouring_bpf_ublk_geometry; see iouring_bpf/ublk.bpf.h)", path);
	} else {
		ret = iouring_bpf_ublk_policy_chunk(p, s->o.max_io_bytes, &s->chunk_bytes);
		if (ret)
			sfail(s, ret, "%s: %s", path, iouring_bpf_policy_strerror(p));
		/* built with an engine that leaves buffer registration to the driver */
		s->auto_buf_reg = iouring_bpf_policy_global_ptr(p, "iou_ublk_auto_buf_reg",
								&size) != NULL;
	}
	iouring_bpf_policy_close(p);
	return ret;
}

/* --- the API --- */

static struct iouring_bpf_ublk_server *server_new(void)
{
	struct iouring_bpf_ublk_server *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;

	if (!s)
		return NULL;
	for (unsigned int i = 0; i < IOU_UBLK_MAX_FILES; i++)
		s->file_fds[i] = -1;
	s->zero_fd = -1;
	s->dev.ctrl_fd = -1;
	s->dev.char_fd = -1;
	s->pid = getpid();
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->ctrl_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	return s;
}

/* Start the queue threads, every signal blocked in them but opts.signo. */
static int start_queues(struct iouring_bpf_ublk_server *s)
{
	unsigned int nr = s->dev.info.nr_hw_queues;
	sigset_t all, old;
	int ret = 0;

	s->q = calloc(nr, sizeof(*s->q));
	if (!s->q)
		return sfail(s, -ENOMEM, "out of memory for %u queues", nr);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (unsigned int i = 0; i < nr; i++) {
		struct ublk_server_queue *q = &s->q[i];

		q->s = s;
		q->q_id = i;
		ret = -pthread_create(&q->tid, NULL, queue_main, q);
		if (ret) {
			sfail(s, ret, "starting queue thread %u: %s", i, strerror(-ret));
			break;
		}
		s->nr_threads++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

/* START_DEV, given up on when a queue ends or the watchdog says so. */
static int start_device(struct iouring_bpf_ublk_server *s)
{
	struct ublk_server_queue *f;
	pthread_t watchdog;
	sigset_t all, old;
	int ret;

	atomic_store(&s->start_busy, true);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	ret = -pthread_create(&watchdog, NULL, start_watchdog, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		atomic_store(&s->start_busy, false);
		return sfail(s, ret, "starting a thread: %s", strerror(-ret));
	}
	pthread_mutex_lock(&s->ctrl_lock);
	ret = atomic_load(&s->abort_start) ? -ECANCELED :
	      iouring_bpf__ublk_start_abortable(&s->dev, s->pid, &s->abort_start);
	pthread_mutex_unlock(&s->ctrl_lock);
	atomic_store(&s->start_busy, false);
	pthread_join(watchdog, NULL);

	f = first_failure(s);
	if (atomic_load(&s->start_timed_out))
		return sfail(s, -ETIMEDOUT, "starting the device (START_DEV) did not finish within "
			     "%d s: the queues did not fetch, or did not serve the partition scan's "
			     "reads", START_WAIT_MS / 1000);
	if (f)
		return sfail(s, f->ret, "queue %u: %s", f->q_id, f->err);
	if (ret == -ECANCELED)
		ret = -EINTR;	/* a queue ended, without an error */
	if (ret)
		return sfail(s, ret, "starting the device (START_DEV): %s", strerror(-ret));
	pthread_mutex_lock(&s->lock);
	ret = s->nr_ended ? -EIO : 0;
	pthread_mutex_unlock(&s->lock);
	if (ret)
		return sfail(s, ret, "a queue thread ended during set-up");
	return 0;
}

int iouring_bpf_ublk_server_start(const struct iouring_bpf_ublk_server_opts *opts,
				  struct iouring_bpf_ublk_server **out)
{
	struct iouring_bpf_ublk_server *s;
	bool user;
	__u64 flags;
	int ret;

	if (!out)
		return -EINVAL;
	*out = s = server_new();
	if (!s)
		return -ENOMEM;
	ret = take_opts(s, opts);
	if (ret)
		return ret;
	user = s->o.serve_flags & IOURING_BPF_UBLK_SERVE_USER_COPY;
	ret = prepare_signal(s->o.signo);
	if (ret)
		return sfail(s, ret, "signal %d: %s", s->o.signo, strerror(-ret));
	ret = open_files(s);
	if (!ret && !user)
		ret = check_policy(s);
	if (ret)
		return ret;

	flags = s->o.flags | (user ? UBLK_F_NEED_GET_DATA : UBLK_F_SUPPORT_ZERO_COPY);
	/* the driver registers and unregisters the buffers: 2 SQEs, 2 CQEs fewer */
	if (!user && s->auto_buf_reg && !(s->o.serve_flags & IOURING_BPF_UBLK_SERVE_NO_AUTO_BUF_REG)) {
		__u64 features = 0;

		if (!iouring_bpf_ublk_get_features(&features) && (features & UBLK_F_AUTO_BUF_REG))
			flags |= UBLK_F_AUTO_BUF_REG;
	}
	ret = iouring_bpf_ublk_add(&s->dev, s->o.dev_id, s->o.queues, s->o.depth,
				   s->o.max_io_bytes, flags);
	if (ret) {
		s->dev.ctrl_fd = -1;
		s->dev.char_fd = -1;
		if (ret == -EEXIST && s->o.dev_id >= 0)
			return sfail(s, ret, "ublk device %d exists already", s->o.dev_id);
		return sfail(s, ret, "creating the device (ADD_DEV): %s", add_error(ret));
	}
	s->added = true;

	if (s->o.on_added) {
		ret = s->o.on_added(s, s->o.arg);
		if (ret) {
			if (ret > 0)
				ret = -ret;
			sfail(s, ret, "on_added: %s", strerror(-ret));
			undo_device(s);
			return ret;
		}
	}
	ret = setup_device(s);
	if (!ret)
		ret = start_queues(s);
	if (!ret)
		ret = start_device(s);
	if (ret) {
		undo_device(s);
		return ret;
	}
	s->live = true;
	return 0;
}

int iouring_bpf_ublk_server_stop(struct iouring_bpf_ublk_server *s)
{
	if (!s || !s->added)
		return -EINVAL;
	atomic_store(&s->quit, true);
	return ctrl_stop(s);
}

int iouring_bpf_ublk_server_wait(struct iouring_bpf_ublk_server *s)
{
	struct ublk_server_queue *f;
	bool stopping = false;

	if (!s)
		return -EINVAL;
	if (!s->live)
		return s->err ? s->err : -EINVAL;
	if (s->waited)
		return s->wait_ret;
	pthread_mutex_lock(&s->lock);
	while (s->nr_ended < s->nr_threads) {
		f = first_failure(s);
		if (f && !stopping) {
			stopping = true;
			pthread_mutex_unlock(&s->lock);
			if (!atomic_load(&s->quit))
				slog(s, "queue %u failed (%s): stopping the device", f->q_id, f->err);
			iouring_bpf_ublk_server_stop(s);
			pthread_mutex_lock(&s->lock);
			continue;
		}
		pthread_cond_wait(&s->cond, &s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	join_queues(s);
	for (unsigned int i = 0; i < s->nr_threads; i++) {
		if (!s->q[i].ret)
			continue;
		if (!s->wait_ret)
			s->wait_ret = s->q[i].ret;
		slog(s, "queue %u ended: %s", i, s->q[i].err);
	}
	return s->wait_ret;
}

int iouring_bpf_ublk_server_id(const struct iouring_bpf_ublk_server *s)
{
	if (!s || (!s->added && !s->live))
		return -ENODEV;
	return s->dev.info.dev_id;
}

const struct ublksrv_ctrl_dev_info *
iouring_bpf_ublk_server_info(const struct iouring_bpf_ublk_server *s)
{
	if (!s || (!s->added && !s->live))
		return NULL;
	return &s->dev.info;
}

const char *iouring_bpf_ublk_server_strerror(const struct iouring_bpf_ublk_server *s)
{
	if (!s)
		return "out of memory for the server";
	return s->msg[0] ? s->msg : "no error";
}

void iouring_bpf_ublk_server_destroy(struct iouring_bpf_ublk_server *s)
{
	int ret;

	if (!s)
		return;
	if (s->live && !s->waited) {
		iouring_bpf_ublk_server_stop(s);
		iouring_bpf_ublk_server_wait(s);
	}
	if (s->stuck)
		return;	/* threads that never ended may still use it all */
	/* requests back to the queues (if any are left) before the device goes */
	iouring_bpf_ublk_hook_detach(s->hook);
	s->hook = NULL;
	if (s->added && !(s->live && (s->o.serve_flags & IOURING_BPF_UBLK_SERVE_KEEP_DEVICE))) {
		ret = delete_device(s);
		if (ret)
			slog(s, "deleting ublk %u (DEL_DEV): %s", s->dev.info.dev_id, strerror(-ret));
	}
	if (s->dev.ctrl_fd >= 0 || s->dev.char_fd >= 0)
		iouring_bpf_ublk_close(&s->dev);
	close_files(s);
	free(s->policy);
	for (unsigned int i = 0; i < IOU_UBLK_MAX_FILES; i++)
		free(s->files[i]);
	free(s->q);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->ctrl_lock);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int iouring_bpf_ublk_serve(const struct iouring_bpf_ublk_server_opts *opts)
{
	struct iouring_bpf_ublk_server *s = NULL;
	int ret = iouring_bpf_ublk_server_start(opts, &s);

	if (ret) {
		/* nobody can ask for the reason afterwards: say it now */
		if (s && s->o.log)
			s->o.log(iouring_bpf_ublk_server_strerror(s), s->o.arg);
	} else {
		ret = iouring_bpf_ublk_server_wait(s);
	}
	iouring_bpf_ublk_server_destroy(s);
	return ret;
}
