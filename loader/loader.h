/* SPDX-License-Identifier: GPL-2.0 */
/* iouring-bpf: the command-line tool. Shared by the command files. */
#ifndef IOURING_BPF_LOADER_H
#define IOURING_BPF_LOADER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>
#include <bpf/libbpf.h>

#include "json.h"

/* A command returns this after printing its usage: exit status 2. */
#define USAGE_ERROR (-100000)

/* Global options. */
extern bool json_output;
extern bool debug_output;
extern struct json *jw;		/* the JSON writer when json_output */
extern const char *prog_name;

/* output.c: errors, warnings, integer values, libbpf's log. */

/* Print "iouring-bpf: message" (or a JSON error object); returns -err. */
int fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A usage error of command cmd ("load", "ublk add", NULL for none): the
 * message and usage (stderr), or a JSON error object with "usage": true;
 * returns USAGE_ERROR. */
int usage_fail(void (*usage)(FILE *), const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* An integer of size bytes at p; a policy's integer global's value. The
 * bits are kept as a u64 (sign-extended when signed): unsigned values
 * print as unsigned, all 64 bits of them. */
struct int_val {
	unsigned long long bits;
	bool is_signed;
};
struct iouring_bpf_policy;
struct iouring_bpf_global;
struct int_val int_from_bytes(const void *p, unsigned int size, bool is_signed);
struct int_val policy_global_int(const struct iouring_bpf_policy *p,
				 const struct iouring_bpf_global *g);
const char *int_val_text(struct int_val v, char *buf, size_t size);
void json_int_val(struct json *j, struct int_val v);

/* libbpf output: kept for the verifier log tail, or printed with -d. */
void libbpf_log_reset(void);
void libbpf_log_print_tail(unsigned int lines);
/* what main() hands libbpf_set_print() */
int libbpf_log_print(enum libbpf_print_level level, const char *fmt, va_list ap);

/* Where pins live: /sys/fs/bpf/iouring-bpf/NAME/{link,meta,bss,data}, on
 * bpffs only; only /sys/fs/bpf is ever mounted. */
#define PIN_ROOT_DEFAULT "/sys/fs/bpf/iouring-bpf"
#define PIN_NAME_MAX 64
struct pin_meta;
const char *pin_root(void);
int pin_prepare_root(void);
int pin_root_open(bool quiet);
int pin_name_check(const char *name);
int pin_meta_read(int dfd, struct pin_meta *m);
int pin_remove(const char *name, bool need_meta, bool quiet);

/* What the pin directory's meta map holds about an attachment. */
#define META_MAX_PROGS 8
struct pin_meta {
	__u32 version;
	__s32 owner_pid;
	__s32 ring_fd;		/* in the owner */
	__u32 nr_progs;
	__u32 prog_ids[META_MAX_PROGS];
	__u64 attach_time_ns;	/* CLOCK_REALTIME */
	char object[256];
	char ops_map[64];
};

/* A ring another process owns, as fdinfo shows it. */
struct foreign_ring {
	int pid, owner_fd, fd;	/* fd: ours, from pidfd_getfd() */
	bool have_flags;	/* the kernel printed Flags: (patch 0008) */
	__u32 flags, sq_entries, cq_entries;
	int bpf_loop;		/* BpfLoop: 1, 0, or -1 if not shown */
	int sq_thread;		/* SqThread: pid, or -1 */
};
int parse_pid_fd(const char *arg, int *pid, int *fd);
int foreign_ring_open(struct foreign_ring *r, int pid, int fd);
int ring_fdinfo(int pid, int fd, struct foreign_ring *r);
bool fd_is_io_uring(int pid, int fd, char *target, size_t size);
struct btf;
struct btf *kernel_btf_load(void);
int kernel_has_bpf_ops(const struct btf *btf);

int cmd_load(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_unload(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_sandbox(int argc, char **argv);

#endif
