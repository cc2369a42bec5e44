/* SPDX-License-Identifier: GPL-2.0 */
/*
 * iouring-bpf ublk: the command, its daemon, and the daemon's state file;
 * private to the tool (the BPF library's is <iouring_bpf/ublk.h>).
 */
#ifndef IOURING_BPF_LOADER_UBLK_CMD_H
#define IOURING_BPF_LOADER_UBLK_CMD_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
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
	bool kernel_path;		/* --path kernel: the policy's ublk_bpf_ops too */
};

const char *ublk_target_name(enum ublk_target t);
int ublk_target_parse(const char *name, enum ublk_target *t);

/*
 * The daemon: liburing-bpf's ublk server (iouring_bpf_ublk_server_start())
 * creates and serves the device; the daemon reports, logs, keeps the state
 * file and stops the device on SIGTERM, SIGINT or SIGHUP.
 */
int ublk_daemon_run(const struct ublk_conf *conf, int report_fd);

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

/* The command: ublk_cmd.c dispatches to ublk_add.c and ublk_admin.c. */
int cmd_ublk(int argc, char **argv);
int cmd_ublk_add(int argc, char **argv);
int cmd_ublk_list(int argc, char **argv);
int cmd_ublk_del(int argc, char **argv);

/* how long del waits for the daemon to let go; add too, for a failed one */
#define DEL_WAIT_MS	10000

/* What the subcommands share (ublk_cmd.c). */
/* usage_fail() for `ublk SUB`: returns USAGE_ERROR */
int usage_error(void (*usage)(FILE *), const char *sub, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* a decimal number 0..max, no sign: 0, or -EINVAL */
int parse_uint(const char *s, unsigned long max, unsigned long *out);
/* a ublk control command's error (-errno) in plain words */
const char *driver_error(int err);

#endif
