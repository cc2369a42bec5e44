// SPDX-License-Identifier: GPL-2.0
/*
 * Rings another process owns: take the fd with pidfd_getfd(), check it is
 * an io_uring and read what fdinfo says about it. And: does this kernel
 * have io_uring_bpf_ops at all?
 */
#define _GNU_SOURCE
#include <bpf/btf.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "loader.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

int parse_pid_fd(const char *arg, int *pid, int *fd)
{
	char *end;
	long p, f;

	errno = 0;
	p = strtol(arg, &end, 10);
	if (end == arg || *end != ':' || p <= 0 || p > INT_MAX || errno)
		return -EINVAL;
	arg = end + 1;
	f = strtol(arg, &end, 10);
	if (end == arg || *end || f < 0 || f > INT_MAX || errno)
		return -EINVAL;
	*pid = p;
	*fd = f;
	return 0;
}

/* Fields of /proc/PID/fdinfo/FD that matter here. */
int ring_fdinfo(int pid, int fd, struct foreign_ring *r)
{
	char path[64], line[256];
	bool have_mask = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", pid, fd);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	r->have_flags = false;
	r->bpf_loop = -1;
	r->sq_thread = -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned int v;
		int i;

		if (sscanf(line, "Flags: %x", &v) == 1) {
			r->flags = v;
			r->have_flags = true;
		} else if (sscanf(line, "BpfLoop: %d", &i) == 1) {
			r->bpf_loop = i;
		} else if (sscanf(line, "SqMask: %x", &v) == 1) {
			r->sq_entries = v + 1;
			have_mask = true;
		} else if (sscanf(line, "CqMask: %x", &v) == 1) {
			r->cq_entries = v + 1;
		} else if (sscanf(line, "SqThread: %d", &i) == 1) {
			r->sq_thread = i;
		}
	}
	fclose(f);
	return have_mask ? 0 : -ENOTTY;
}

bool fd_is_io_uring(int pid, int fd, char *target, size_t size)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/fd/%d", pid, fd);
	n = readlink(link, target, size - 1);
	snprintf(target + (n > 0 ? n : 0), size - (n > 0 ? n : 0), "%s", n > 0 ? "" : "unknown");
	return n > 0 && !strcmp(target, "anon_inode:[io_uring]");
}

int foreign_ring_open(struct foreign_ring *r, int pid, int fd)
{
	char target[256];
	int pidfd, ret;

	memset(r, 0, sizeof(*r));
	r->pid = pid;
	r->owner_fd = fd;
	r->fd = -1;
	pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return fail(errno, errno == ESRCH ? "no process %d" : "pidfd_open(%d): %s", pid,
			    strerror(errno));
	r->fd = syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	ret = errno;
	close(pidfd);
	if (r->fd < 0) {
		if (ret == EPERM)
			return fail(ret, "not allowed to take fd %d of process %d: pidfd_getfd() "
					 "needs the rights of ptrace attach (the same user and "
					 "kernel.yama.ptrace_scope allowing it, or CAP_SYS_PTRACE)",
				    fd, pid);
		if (ret == EBADF)
			return fail(ret, "process %d has no fd %d", pid, fd);
		return fail(ret, "pidfd_getfd(%d, %d): %s", pid, fd, strerror(ret));
	}
	if (!fd_is_io_uring(getpid(), r->fd, target, sizeof(target)))
		return fail(ENOTTY, "%d:%d is not an io_uring (it is %s)", pid, fd, target);
	ret = ring_fdinfo(getpid(), r->fd, r);
	if (ret)
		return fail(ret, "reading the fdinfo of ring %d:%d: %s", pid, fd, strerror(-ret));
	return 0;
}

/* The running kernel's BTF (IOURING_BPF_KERNEL_BTF names another file). */
struct btf *kernel_btf_load(void)
{
	const char *path = getenv("IOURING_BPF_KERNEL_BTF");

	return path ? btf__parse(path, NULL) : btf__load_vmlinux_btf();
}

/* 1 when btf (a kernel's) has struct io_uring_bpf_ops, 0 when not. */
int kernel_has_bpf_ops(const struct btf *btf)
{
	if (!btf)
		return -ENOENT;
	return btf__find_by_name_kind(btf, "io_uring_bpf_ops", BTF_KIND_STRUCT) > 0;
}
