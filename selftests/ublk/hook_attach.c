// SPDX-License-Identifier: GPL-2.0
/*
 * hook_attach: attach a ublk policy object's ublk_bpf_ops hook (the kernel
 * path, IOURING_BPF_UBLK_HOOK()) to a ublk device with
 * iouring_bpf_ublk_hook_attach(), for the ublk/hook-* tests.
 *
 * usage: hook_attach [--ro] [--append] [--direct] [--bad-fd] [--char PATH] [--server]
 *                    [--drop-admin] [--unpriv] POLICY.bpf.o DEV_ID [FILE]...
 *   Opens the FILEs (read-write; --ro: read-only; --append, --direct: with
 *   O_APPEND, O_DIRECT), takes the device's /dev/ublkcN descriptor from its
 *   server (pidfd_getfd() of the one the server's pid, from GET_DEV_INFO,
 *   has open: the driver lets one process open it), attaches the policy's
 *   hook to the device with them, prints "attached", then waits until
 *   stdin reaches end of file or SIGTERM/SIGINT comes, prints the hook's
 *   counters ("ublk_hook_requests N", "ublk_hook_errors N", read live from
 *   the loaded object's .bss), detaches and prints "detached".
 *   --bad-fd  pass descriptor 1000 (closed) instead of the first file
 *   --char P  name the device by P opened read-write (e.g. /dev/null), not
 *             by the server's descriptor
 *   --server  keep the FILEs open after attaching, as a server does, and
 *             act on its descriptors by commands read from stdin, one per
 *             line: "append" sets O_APPEND on each (fcntl F_SETFL) and
 *             prints "O_APPEND set"; "fsync" fsyncs each and prints
 *             "fsync N: R" (0 or a negative errno)
 *   --drop-admin  drop CAP_SYS_ADMIN (effective, permitted, inheritable)
 *             just before attaching, keeping CAP_BPF and CAP_PERFMON
 *   --unpriv  ignore DEV_ID: add a device of our own with
 *             UBLK_F_UNPRIVILEGED_DEV (CAP_SYS_ADMIN dropped from the
 *             effective set for ADD_DEV: root's flag is cleared otherwise),
 *             not started, attach to it, and delete it afterwards (DEL_DEV
 *             with the char device's path, as the driver wants for such a
 *             device).
 *   The geometry is the device's (GET_DEV_INFO, GET_PARAMS) when it can be
 *   read, else made up from the files (so that the kernel's refusal of a
 *   missing device is what the test sees).
 * On failure: "error <negative errno> <message>", exit 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/capability.h>
#include <liburing.h>

#include "liburing-bpf.h"

#define MAX_FILES	4
#define BAD_FD		1000

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int fail(int err, const char *what)
{
	printf("error %d %s\n", err, what);
	fflush(stdout);
	return 1;
}

/*
 * Clear (on = false) or set again CAP_SYS_ADMIN in the effective set; with
 * for_good, clear it from the permitted and inheritable sets too.
 */
static int cap_sys_admin(bool on, bool for_good)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];
	struct __user_cap_data_struct *d = &data[CAP_SYS_ADMIN / 32];
	__u32 bit = 1U << (CAP_SYS_ADMIN % 32);

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	if (on)
		d->effective |= bit;
	else
		d->effective &= ~bit;
	if (for_good) {
		d->permitted &= ~bit;
		d->inheritable &= ~bit;
	}
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	return 0;
}

/* The server's /dev/ublkcN descriptor, duplicated into us, or -errno. */
static int server_char_fd(int pid, int dev_id)
{
	char dir[64], link[PATH_MAX], want[64], path[PATH_MAX + 80];
	int pidfd, fd = -ENOENT;
	struct dirent *de;
	DIR *d;

	if (pid <= 0)
		return -ESRCH;
	snprintf(want, sizeof(want), "/dev/ublkc%d", dev_id);
	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return -errno;
	d = opendir(dir);
	if (!d) {
		fd = -errno;
		close(pidfd);
		return fd;
	}
	while ((de = readdir(d))) {
		ssize_t n;

		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (strcmp(link, want))
			continue;
		fd = syscall(SYS_pidfd_getfd, pidfd, atoi(de->d_name), 0);
		if (fd < 0)
			fd = -errno;
		break;
	}
	closedir(d);
	close(pidfd);
	return fd;
}

/* DEL_DEV of an unprivileged device: the header carries /dev/ublkcN. */
static int del_unpriv(int dev_id)
{
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct ublksrv_ctrl_cmd c;
	char path[64];
	int fd, ret, len;

	len = snprintf(path, sizeof(path), "/dev/ublkc%d", dev_id);
	fd = open("/dev/ublk-control", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = io_uring_queue_init(4, &ring, IORING_SETUP_SQE128);
	if (ret) {
		close(fd);
		return ret;
	}
	memset(&c, 0, sizeof(c));
	c.dev_id = dev_id;
	c.queue_id = (__u16)-1;
	c.addr = (__u64)(uintptr_t)path;
	c.len = len;
	c.dev_path_len = len;
	sqe = io_uring_get_sqe(&ring);
	if (!sqe) {
		io_uring_queue_exit(&ring);
		close(fd);
		return -EBUSY;
	}
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = UBLK_U_CMD_DEL_DEV;
	/* the SQE128 ring's second half: fresh from mmap, zero */
	memcpy(sqe->cmd, &c, sizeof(c));
	ret = io_uring_submit(&ring);
	if (ret == 1) {
		ret = io_uring_wait_cqe(&ring, &cqe);
		if (!ret) {
			ret = cqe->res;
			io_uring_cqe_seen(&ring, cqe);
		}
	} else if (ret >= 0) {
		ret = -EIO;
	}
	io_uring_queue_exit(&ring);
	close(fd);
	return ret;
}

/* The live value of global NAME in the object's .bss (mmapped), or NULL. */
static volatile __u64 *bss_u64(struct bpf_object *obj, const char *name)
{
	const struct btf *btf = bpf_object__btf(obj);
	const struct btf_var_secinfo *v;
	const struct btf_type *sec;
	struct bpf_map *map, *bss = NULL;
	size_t size = 0;
	char *data;
	int id;

	bpf_object__for_each_map(map, obj) {
		const char *n = bpf_map__name(map);
		size_t l = strlen(n);

		if (bpf_map__is_internal(map) && l >= 4 && !strcmp(n + l - 4, ".bss"))
			bss = map;
	}
	if (!bss || !btf)
		return NULL;
	data = bpf_map__initial_value(bss, &size);
	id = btf__find_by_name_kind(btf, ".bss", BTF_KIND_DATASEC);
	if (!data || id < 0)
		return NULL;
	sec = btf__type_by_id(btf, id);
	v = btf_var_secinfos(sec);
	for (int i = 0; i < btf_vlen(sec); i++, v++) {
		const struct btf_type *var = btf__type_by_id(btf, v->type);

		if (!strcmp(btf__name_by_offset(btf, var->name_off), name) &&
		    v->size == sizeof(__u64) && v->offset + sizeof(__u64) <= size)
			return (volatile __u64 *)(data + v->offset);
	}
	return NULL;
}

/* --server: what a server may do to its own descriptors after attaching */
static void server_commands(const char *buf, size_t len, const int *fds, int nr_fds)
{
	int i, fl;

	if (len >= 6 && !strncmp(buf, "append", 6)) {
		for (i = 0; i < nr_fds; i++) {
			fl = fcntl(fds[i], F_GETFL);
			if (fl < 0 || fcntl(fds[i], F_SETFL, fl | O_APPEND)) {
				printf("error %d setting O_APPEND: %s\n", -errno, strerror(errno));
				return;
			}
		}
		printf("O_APPEND set\n");
	} else if (len >= 5 && !strncmp(buf, "fsync", 5)) {
		for (i = 0; i < nr_fds; i++)
			printf("fsync %d: %d\n", i, fsync(fds[i]) ? -errno : 0);
	}
}

int main(int argc, char **argv)
{
	struct iouring_bpf_ublk_geometry g = { 0 };
	struct iouring_bpf_ublk_hook *hook = NULL;
	struct iouring_bpf_ublk_dev dev, own;
	bool ro = false, bad_fd = false, unpriv = false, own_added = false, server = false;
	int open_flags = 0, char_fd = -EBADF, server_pid = 0;
	bool drop_admin = false;
	const char *char_path = NULL;
	volatile __u64 *requests, *errors;
	int fds[MAX_FILES], nr_fds = 0, ret, i, dev_id;
	const char *policy;
	struct sigaction sa;
	char msg[600], buf[256];
	__u64 file_bytes = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--ro"))
			ro = true;
		else if (!strcmp(argv[i], "--bad-fd"))
			bad_fd = true;
		else if (!strcmp(argv[i], "--unpriv"))
			unpriv = true;
		else if (!strcmp(argv[i], "--append"))
			open_flags |= O_APPEND;
		else if (!strcmp(argv[i], "--direct"))
			open_flags |= O_DIRECT;
		else if (!strcmp(argv[i], "--server"))
			server = true;
		else if (!strcmp(argv[i], "--drop-admin"))
			drop_admin = true;
		else if (!strcmp(argv[i], "--char") && i + 1 < argc)
			char_path = argv[++i];
		else
			break;
	}
	if (argc - i < 2 || argc - i - 2 > MAX_FILES) {
		fprintf(stderr, "usage: %s [--ro] [--append] [--direct] [--bad-fd] [--char PATH] "
			"[--server] [--drop-admin] [--unpriv] POLICY.bpf.o DEV_ID [FILE]... (at most %d)\n", argv[0],
			MAX_FILES);
		return 2;
	}
	policy = argv[i];
	dev_id = atoi(argv[i + 1]);
	for (i += 2; i < argc; i++) {
		struct stat st;
		int fd = open(argv[i], (ro ? O_RDONLY : O_RDWR) | open_flags | O_CLOEXEC);

		if (fd < 0 || fstat(fd, &st)) {
			int err = errno;

			snprintf(msg, sizeof(msg), "opening %s: %s", argv[i], strerror(err));
			return fail(-err, msg);
		}
		g.file_sectors[nr_fds] = (__u64)st.st_size >> 9;
		file_bytes += (__u64)st.st_size;
		fds[nr_fds++] = fd;
	}
	if (bad_fd) {
		close(BAD_FD);
		if (!nr_fds)
			nr_fds = 1;
		fds[0] = BAD_FD;
	}

	if (unpriv) {
		ret = cap_sys_admin(false, false);
		if (ret)
			return fail(ret, "dropping CAP_SYS_ADMIN from the effective set");
		ret = iouring_bpf_ublk_add(&own, -1, 1, 64, 512 << 10, UBLK_F_UNPRIVILEGED_DEV);
		i = cap_sys_admin(true, false);
		if (ret)
			return fail(ret, "adding an unprivileged device (UBLK_F_UNPRIVILEGED_DEV)");
		if (i) {
			del_unpriv(own.info.dev_id);
			return fail(i, "raising CAP_SYS_ADMIN again");
		}
		own_added = true;
		dev_id = own.info.dev_id;
		ret = iouring_bpf_ublk_open_char(&own);
		if (ret) {
			del_unpriv(dev_id);
			return fail(ret, "opening the unprivileged device's /dev/ublkcN");
		}
		char_fd = own.char_fd;
		printf("unprivileged device %d flags 0x%llx\n", dev_id,
		       (unsigned long long)own.info.flags);
		if (!(own.info.flags & UBLK_F_UNPRIVILEGED_DEV)) {
			del_unpriv(dev_id);
			return fail(-EINVAL, "the device has no UBLK_F_UNPRIVILEGED_DEV");
		}
	}

	g.dev_id = dev_id;
	g.nr_files = nr_fds;
	g.depth = 64;
	g.max_io_bytes = 512 << 10;
	g.dev_sectors = file_bytes >> 9;
	if (!unpriv && iouring_bpf_ublk_open(&dev, dev_id) == 0) {
		struct ublk_params p;

		server_pid = dev.info.ublksrv_pid;
		g.depth = dev.info.queue_depth;
		g.max_io_bytes = dev.info.max_io_buf_bytes;
		if (!iouring_bpf_ublk_get_params(&dev, &p) && (p.types & UBLK_PARAM_TYPE_BASIC))
			g.dev_sectors = p.basic.dev_sectors;
		iouring_bpf_ublk_close(&dev);
	}
	if (bad_fd && !g.file_sectors[0])
		g.file_sectors[0] = g.dev_sectors;

	if (char_path) {
		char_fd = open(char_path, O_RDWR | O_CLOEXEC);
		if (char_fd < 0) {
			snprintf(msg, sizeof(msg), "opening %s: %s", char_path, strerror(errno));
			return fail(-errno, msg);
		}
	} else if (!unpriv) {
		/* no server (no device): the library's refusal is what we see */
		char_fd = server_char_fd(server_pid, dev_id);
		if (char_fd >= 0)
			printf("device %d's /dev/ublkcN from its server %d\n", dev_id, server_pid);
	}

	if (drop_admin) {
		ret = cap_sys_admin(false, true);
		if (ret)
			return fail(ret, "dropping CAP_SYS_ADMIN");
		printf("CAP_SYS_ADMIN dropped\n");
	}
	ret = iouring_bpf_ublk_hook_attach(policy, char_fd, &g, fds, nr_fds, &hook);
	if (ret) {
		snprintf(msg, sizeof(msg), "%s", iouring_bpf_ublk_hook_strerror(hook));
		iouring_bpf_ublk_hook_detach(hook);
		if (own_added) {
			int r;

			/* DEL_DEV waits for the char device to be closed */
			close(own.char_fd);
			own.char_fd = -1;
			r = del_unpriv(dev_id);

			printf("deleted unprivileged device %d: %d\n", dev_id, r);
			iouring_bpf_ublk_close(&own);
		}
		return fail(ret, msg);
	}
	requests = bss_u64(iouring_bpf_ublk_hook_object(hook), "ublk_hook_requests");
	errors = bss_u64(iouring_bpf_ublk_hook_object(hook), "ublk_hook_errors");
	/* the kernel holds its own references to the files now */
	for (i = 0; i < nr_fds && !server; i++)
		if (fds[i] != BAD_FD)
			close(fds[i]);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: read() returns EINTR */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	printf("attached %s to ublk device %d\n", policy, dev_id);
	while (!stop) {
		ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

		if (n == 0 || (n < 0 && errno != EINTR))
			break;
		if (n > 0 && server)
			server_commands(buf, (size_t)n, fds, nr_fds);
	}
	if (requests && errors)
		printf("ublk_hook_requests %llu\nublk_hook_errors %llu\n",
		       (unsigned long long)*requests, (unsigned long long)*errors);
	else
		printf("no ublk_hook_requests/ublk_hook_errors in the object's .bss\n");
	iouring_bpf_ublk_hook_detach(hook);
	printf("detached\n");
	if (own_added) {
		close(own.char_fd);
		own.char_fd = -1;
		printf("deleted unprivileged device %d: %d\n", dev_id, del_unpriv(dev_id));
		iouring_bpf_ublk_close(&own);
	}
	return 0;
}
