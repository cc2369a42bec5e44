/* SPDX-License-Identifier: (LGPL-2.1 OR MIT) */
/*
 * Private to liburing-bpf: what a ublk server's threads share
 * (ublk_server.c: device life cycle and BPF queues; ublk_user.c: the
 * copying user-space queue loop), and one control command of ublk.c the
 * server needs that the public API has no use for.
 */
#ifndef LIBURING_BPF_UBLK_SERVER_H
#define LIBURING_BPF_UBLK_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include "liburing-bpf.h"

/*
 * START_DEV that another thread can give up on: it is cancelled once
 * *abort is set (looked at every few milliseconds); -ECANCELED then,
 * unless it finished anyway. No signal is involved.
 */
int iouring_bpf__ublk_start_abortable(struct iouring_bpf_ublk_dev *dev, pid_t daemon,
				      atomic_bool *abort);

struct iouring_bpf_ublk_server;

struct ublk_server_queue {
	struct iouring_bpf_ublk_server *s;
	unsigned int q_id;
	pthread_t tid;
	atomic_bool ended;
	int ret;		/* 0, or -errno: why it ended */
	char err[512];		/* what went wrong, for the user */
};

struct iouring_bpf_ublk_server {
	struct iouring_bpf_ublk_server_opts o;	/* the caller's, copied; strings below */
	char *policy;
	char *files[IOU_UBLK_MAX_FILES];
	__u64 file_bytes[IOU_UBLK_MAX_FILES];
	__u64 dev_bytes;
	__u32 chunk_bytes;		/* the policy's IOU_UBLK_CHUNK_BYTES(), 0: none */
	bool auto_buf_reg;		/* the policy knows UBLK_F_AUTO_BUF_REG */
	struct iouring_bpf_ublk_hook *hook;	/* the kernel path, attached */
	struct iouring_bpf_ublk_dev dev;
	bool added;			/* ADD_DEV succeeded: dev is ours to delete */
	bool live;			/* START_DEV succeeded */
	bool waited;			/* _wait() saw every queue end and joined them */
	bool stuck;			/* queue threads that never ended: keep their memory */
	int wait_ret;
	int file_fds[IOU_UBLK_MAX_FILES];
	int zero_fd;			/* /dev/zero */
	pid_t pid;
	atomic_bool start_busy;		/* START_DEV waits */
	atomic_bool abort_start;	/* ... give up on it */
	atomic_bool start_timed_out;	/* the watchdog gave up on it */
	atomic_bool quit;		/* do not fetch; give up when interrupted */
	pthread_mutex_t lock;		/* nr_ended, cond */
	pthread_cond_t cond;
	pthread_mutex_t ctrl_lock;	/* dev's control ring: one command at a time */
	unsigned int nr_threads;	/* queue threads started */
	unsigned int nr_ended;
	struct ublk_server_queue *q;
	int err;
	char msg[1024];
};

/* Thread bodies; they fill q->ret and q->err (ublk_qfail()). */
void ublk_serve_user(struct ublk_server_queue *q);
void ublk_qfail(struct ublk_server_queue *q, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * False once the server gave up on the device: a queue thread then does
 * not fetch, and when a signal interrupts its io_uring_enter() (EINTR; the
 * start watchdog sends opts.signo) it ends at once, closing its ring,
 * which makes the driver fail the requests it held.
 */
bool ublk_may_fetch(struct ublk_server_queue *q);

#endif
