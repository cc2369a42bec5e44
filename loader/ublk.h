/* SPDX-License-Identifier: GPL-2.0 */
/* iouring-bpf ublk: the command, its daemon, and the daemon's state file. */
#ifndef IOURING_BPF_LOADER_UBLK_H
#define IOURING_BPF_LOADER_UBLK_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>
#include <liburing-bpf.h>
#include <iouring_bpf/ublk.h>

#define UBLK_STATE_DIR_DEFAULT	"/run/iouring-bpf/ublk"
#define UBLK_MAX_QUEUES		4
#define UBLK_MAX_IO_BYTES	(512 * 1024)

enum ublk_target {
	UBLK_TARGET_LOOP,	/* BPF: one file, zero copy */
	UBLK_TARGET_SPLIT,	/* BPF: two files, one after the other */
	UBLK_TARGET_LOOP_USER,	/* user space: one file, copies (NEED_GET_DATA) */
	UBLK_TARGET_BPF,	/* BPF: any policy object, 0..4 files */
};

/* A device to create, as the command line described it, checked. */
struct ublk_conf {
	enum ublk_target target;
	unsigned int nr_files;
	char files[IOU_UBLK_MAX_FILES][PATH_MAX];	/* absolute paths */
	__u64 file_bytes[IOU_UBLK_MAX_FILES];
	char policy[PATH_MAX];		/* BPF targets: absolute path of the object */
	__u64 dev_bytes;
	unsigned int queues, depth, max_io_bytes;
	__u32 chunk_bytes;		/* the policy's IOU_UBLK_CHUNK_BYTES(), 0: none */
	int dev_id;			/* -1: any */
};

const char *ublk_target_name(enum ublk_target t);
int ublk_target_parse(const char *name, enum ublk_target *t);

/* The daemon: create the device, serve it until it is stopped. */
int ublk_daemon_run(const struct ublk_conf *conf, int report_fd);

/* Per-queue serving, run by the daemon's queue threads. */
struct ublk_daemon;
struct ublk_queue_thread {
	struct ublk_daemon *d;
	unsigned int q_id;
	pthread_t tid;
	atomic_bool ended;
	int ret;		/* 0, or -errno: why it ended */
	char err[512];		/* what went wrong, for the user */
};

/* What queue threads share with the daemon's main thread. */
struct ublk_daemon {
	const struct ublk_conf *conf;
	struct iouring_bpf_ublk_dev dev;
	int file_fds[IOU_UBLK_MAX_FILES];
	int zero_fd;			/* /dev/zero */
	pid_t pid;
	atomic_bool start_busy;		/* START_DEV waits in the main thread */
	atomic_bool start_timed_out;	/* ... and the watchdog gave up on it */
	atomic_bool quit;		/* set-up failed: do not fetch; give up when interrupted */
	atomic_int nr_ended;
	struct ublk_queue_thread q[UBLK_MAX_QUEUES];
};

/* Thread bodies; they fill qt->ret and qt->err. */
void ublk_serve_user(struct ublk_queue_thread *qt);
void ublk_serve_bpf(struct ublk_queue_thread *qt);
void ublk_qfail(struct ublk_queue_thread *qt, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * False once the daemon gave up on the device: a queue thread then does not
 * fetch, and when a signal interrupts its io_uring_enter() (EINTR; the
 * daemon sends SIGUSR2) it ends at once, closing its ring, which makes the
 * driver fail the requests it held.
 */
bool ublk_may_fetch(struct ublk_queue_thread *qt);

/* /run/iouring-bpf/ublk/ID: what the daemon serves, for list and del. */
struct ublk_state {
	int id;
	pid_t pid;
	struct ublk_conf conf;
};

const char *ublk_state_dir(void);
int ublk_state_prepare_dir(void);
void ublk_state_path(int id, const char *suffix, char *buf, size_t size);
int ublk_state_write(const struct ublk_state *s);
int ublk_state_read(int id, struct ublk_state *s);
void ublk_state_remove(int id, pid_t only_if_pid);

/* Process pid exists and is not a zombie. */
bool ublk_pid_alive(pid_t pid);

int cmd_ublk(int argc, char **argv);

#endif
