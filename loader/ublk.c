// SPDX-License-Identifier: GPL-2.0
/*
 * iouring-bpf ublk add|list|del: ublk block devices served by BPF policies
 * inside the kernel (loop, split, bpf) or by the copying user-space loop
 * (loop-user). add checks everything it can, then forks the daemon
 * (ublk_daemon.c) and waits for its "ready".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/btf.h>

#include "interface.h"
#include "loader.h"
#include "ublk.h"

#ifndef IOURING_BPF_POLICY_BUILD_DIR
#define IOURING_BPF_POLICY_BUILD_DIR ""
#endif
#ifndef IOURING_BPF_TOOL_BUILD_PATH
#define IOURING_BPF_TOOL_BUILD_PATH ""
#endif

/* how long add waits for the daemon's "ready", del for the daemon to let go */
#define ADD_WAIT_MS	120000
#define DEL_WAIT_MS	10000
/*
 * how long add waits for a daemon that reported an error after creating the
 * device to exit: it stops its queues (up to 30 s) and deletes the device
 */
#define ERR_EXIT_WAIT_MS	45000

static int usage_error(void (*usage)(FILE *), const char *sub, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int usage_error(void (*usage)(FILE *), const char *sub, const char *fmt, ...)
{
	char cmd[32], msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "ublk %s", sub);
	return usage_fail(usage, cmd, "%s", msg);
}

static void ublk_usage(FILE *f)
{
	iface_print_usage(f, "ublk", NULL);
	fprintf(f, "       %s ublk SUBCOMMAND --help\n\n"
		   "ublk block devices (/dev/ublkbN) served by a BPF policy inside the kernel with\n"
		   "zero copy (loop, split, bpf), or by a copying loop in user space (loop-user).\n",
		prog_name);
	iface_print_summaries(f, "ublk");
	fprintf(f, "State files and daemon logs: %s/ID, ID.log\n", ublk_state_dir());
}

static void add_usage(FILE *f)
{
	iface_print_usage(f, "ublk", "add");
	fprintf(f,
		"\nCreate /dev/ublkbID and fork a daemon that serves it until the device is\n"
		"deleted ('%s ublk del ID') or the daemon gets SIGTERM.\n\n"
		"targets:\n"
		"  loop        one --file; the ublk_loop policy serves it in the kernel, zero copy\n"
		"  split       two --file: the device is the first file's bytes, then the second's\n"
		"              (ublk_split policy)\n"
		"  loop-user   one --file, served in user space with copies (UBLK_F_NEED_GET_DATA):\n"
		"              the baseline\n"
		"  bpf         --policy OBJ.bpf.o, a policy of your own (iouring_bpf/ublk.bpf.h),\n"
		"              with 0 to 4 --file; one that declares IOU_UBLK_CHUNK_BYTES(N)\n"
		"              gets chunk_sectors N/512 (N: a multiple of 4096, at most 512 KiB)\n\n"
		"loop and split find ublk_loop.bpf.o and ublk_split.bpf.o in\n"
		"$IOURING_BPF_POLICY_DIR, then LIBDIR/iouring-bpf of the install (an\n"
		"installed binary) or the build tree (the binary the build made).\n"
		"The BPF targets need a kernel whose ublk driver has zero copy\n"
		"(UBLK_F_SUPPORT_ZERO_COPY) and io_uring_bpf_ops: the iouring-bpf kernel.\n\n"
		"options:\n",
		prog_name);
	iface_print_options(f, "ublk", "add");
}

static void list_usage(FILE *f)
{
	iface_print_usage(f, "ublk", "list");
	fprintf(f,
		"\nEvery ublk device: id, state (LIVE, DEAD, QUIESCED), queues, depth, size,\n"
		"the daemon's pid and whether it is alive, target, flags and backing files\n"
		"(target and files from %s/ID, for devices made by\n"
		"'%s ublk add').\n\n"
		"options:\n",
		ublk_state_dir(), prog_name);
	iface_print_options(f, "ublk", "list");
}

static void del_usage(FILE *f)
{
	iface_print_usage(f, "ublk", "del");
	fprintf(f,
		"\nStop ublk device ID (its I/O in flight completes, new I/O fails) and delete\n"
		"it. An iouring-bpf daemon is asked to stop it (SIGTERM) and killed if it has\n"
		"not done so within %d s. Deleting waits, up to %d s, until the daemon closed\n"
		"/dev/ublkcID. The state file goes too. Works when the daemon was killed.\n"
		"A device another program serves (a live server that is not ours, and no\n"
		"state file) is refused with EBUSY unless --force is given; its server is\n"
		"never signalled.\n\n"
		"options:\n",
		DEL_WAIT_MS / 1000, DEL_WAIT_MS / 1000);
	iface_print_options(f, "ublk", "del");
}

/* "123", "64K", "64M", "1G" (powers of 1024) */
static int parse_size(const char *s, __u64 *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 0: break;
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: return -EINVAL;
	}
	if (*end || (shift && v > (~0ULL >> shift)))
		return -EINVAL;
	*out = v << shift;
	return 0;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* --- add --- */

struct add_args {
	const char *target, *files[IOU_UBLK_MAX_FILES + 1], *policy, *size, *path;
	unsigned int nr_files;
	unsigned long queues, depth, id;
	bool have_id;
};

static int parse_add(int argc, char **argv, struct add_args *a)
{
	struct iface_parser p;
	int c;

	iface_parse_init(&p, "ublk", "add", argc, argv, 0);
	while ((c = iface_parse_next(&p)) != IFACE_END) {
		const char *v = p.value;
		unsigned long n;

		switch (c) {
		case OPT_HELP:
			add_usage(stdout);
			return 1;
		case OPT_TARGET:
			a->target = v;
			break;
		case OPT_FILE:
			if (a->nr_files == IOU_UBLK_MAX_FILES)
				return usage_error(add_usage, "add", "at most %d --file",
						   IOU_UBLK_MAX_FILES);
			a->files[a->nr_files++] = v;
			break;
		case OPT_POLICY:
			a->policy = v;
			break;
		case OPT_SIZE:
			a->size = v;
			break;
		case OPT_PATH:
			if (strcmp(v, "daemon") && strcmp(v, "kernel"))
				return usage_error(add_usage, "add",
						   "--path wants 'daemon' or 'kernel', not '%s'", v);
			a->path = v;
			break;
		case OPT_QUEUES:
			if (parse_uint(v, UBLK_MAX_QUEUES, &n) || !n)
				return usage_error(add_usage, "add",
						   "--queues wants 1 to %d, not '%s'", UBLK_MAX_QUEUES, v);
			a->queues = n;
			break;
		case OPT_DEPTH:
			if (parse_uint(v, IOU_UBLK_MAX_DEPTH, &n) || !n)
				return usage_error(add_usage, "add",
						   "--depth wants 1 to %d, not '%s'", IOU_UBLK_MAX_DEPTH, v);
			a->depth = n;
			break;
		case OPT_ID:
			if (parse_uint(v, (1U << 20) - 1, &n))
				return usage_error(add_usage, "add",
						   "--id wants a device number 0 to %u, not '%s'",
						   (1U << 20) - 1, v);
			a->id = n;
			a->have_id = true;
			break;
		case IFACE_NO_VALUE:
			return usage_error(add_usage, "add", "%s needs a value", v);
		case IFACE_OPERAND:
			return usage_error(add_usage, "add", "unexpected argument '%s'", v);
		default:
			return usage_error(add_usage, "add", "unknown option '%s'", v);
		}
	}
	return 0;
}

/* Check the command line's shape (usage errors) and fill in what it says. */
static int check_add_shape(const struct add_args *a, struct ublk_conf *c)
{
	const char *name;

	if (!a->target)
		return usage_error(add_usage, "add", "--target is required (loop, split, "
				   "loop-user or bpf)");
	if (ublk_target_parse(a->target, &c->target))
		return usage_error(add_usage, "add", "unknown target '%s' (loop, split, "
				   "loop-user or bpf)", a->target);
	name = ublk_target_name(c->target);
	switch (c->target) {
	case UBLK_TARGET_LOOP:
	case UBLK_TARGET_LOOP_USER:
		if (a->nr_files != 1)
			return usage_error(add_usage, "add", "--target %s takes exactly one --file "
					   "(%u given)", name, a->nr_files);
		break;
	case UBLK_TARGET_SPLIT:
		if (a->nr_files != 2)
			return usage_error(add_usage, "add", "--target split takes exactly two "
					   "--file (%u given)", a->nr_files);
		break;
	case UBLK_TARGET_BPF:
		if (!a->policy)
			return usage_error(add_usage, "add", "--target bpf needs --policy OBJ.bpf.o");
		if (!a->nr_files && !a->size)
			return usage_error(add_usage, "add", "--target bpf without --file needs "
					   "--size");
		break;
	}
	if (a->policy && c->target != UBLK_TARGET_BPF)
		return usage_error(add_usage, "add", "--policy is for --target bpf (%s has its "
				   "own)", name);
	if (a->size && (parse_size(a->size, &c->dev_bytes) || !c->dev_bytes))
		return usage_error(add_usage, "add", "--size wants a number of bytes (K, M, G, T "
				   "suffixes allowed), not '%s'", a->size);
	if (a->size && c->dev_bytes % 512)
		return usage_error(add_usage, "add", "--size %llu is not a multiple of 512",
				   (unsigned long long)c->dev_bytes);
	c->nr_files = a->nr_files;
	c->queues = a->queues ? a->queues : 1;
	c->depth = a->depth ? a->depth : 64;
	c->dev_id = a->have_id ? (int)a->id : -1;
	c->max_io_bytes = UBLK_MAX_IO_BYTES;
	return 0;
}

/*
 * A path with a control character (a newline above all) is refused: it
 * would reach the state file, the log and list's output as is.
 */
static bool has_control_char(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return true;
	return false;
}

static int refuse_control_char(const char *opt, const char *given, const char *abs)
{
	if (!has_control_char(given) && !has_control_char(abs))
		return 0;
	return fail(EINVAL, "%s: the path has a control character (newline, tab, ...), which "
			    "ublk add refuses; rename the file", opt);
}

/* A backing file: exists, regular or block device, size a multiple of 512, writable. */
static int check_file(const char *path, char *abs, __u64 *bytes)
{
	struct stat st;
	int fd;

	if (has_control_char(path))
		return refuse_control_char("--file", path, "");
	if (stat(path, &st))
		return fail(errno, "--file %s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		return fail(EINVAL, "--file %s is not a regular file or a block device", path);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return fail(errno, "--file %s cannot be opened for reading and writing: %s", path,
			    strerror(errno));
	if (S_ISBLK(st.st_mode)) {
		unsigned long long sz = 0;

		if (ioctl(fd, BLKGETSIZE64, &sz)) {
			int err = errno;

			close(fd);
			return fail(err, "--file %s: size of the block device: %s", path,
				    strerror(err));
		}
		*bytes = sz;
	} else {
		*bytes = st.st_size;
	}
	close(fd);
	if (!*bytes)
		return fail(EINVAL, "--file %s is empty (0 bytes)", path);
	if (*bytes % 512)
		return fail(EINVAL, "--file %s is %llu bytes, not a multiple of 512", path,
			    (unsigned long long)*bytes);
	if (!realpath(path, abs))
		return fail(errno, "--file %s: %s", path, strerror(errno));
	return refuse_control_char("--file", path, abs);
}

/*
 * This binary is the one the build made, where it made it: then (and only
 * then) the build tree's policies are the ones that belong to it.
 */
static bool is_build_tree_binary(void)
{
	struct stat self, built;

	return IOURING_BPF_TOOL_BUILD_PATH[0] && !stat("/proc/self/exe", &self) &&
	       !stat(IOURING_BPF_TOOL_BUILD_PATH, &built) && self.st_dev == built.st_dev &&
	       self.st_ino == built.st_ino;
}

/*
 * The built-in policy object NAME: $IOURING_BPF_POLICY_DIR, then the build
 * tree for the build tree's binary; for any other (installed) copy where
 * the library finds installed policies. An installed binary never looks
 * into a build tree.
 */
static int find_policy(const char *name, char *out)
{
	const char *env = getenv("IOURING_BPF_POLICY_DIR");
	char path[PATH_MAX];
	int ret;

	if (is_build_tree_binary()) {
		const char *dirs[] = { env && *env ? env : NULL, IOURING_BPF_POLICY_BUILD_DIR };

		for (unsigned int i = 0; i < 2; i++) {
			if (!dirs[i])
				continue;
			snprintf(path, sizeof(path), "%s/%s", dirs[i], name);
			if (!access(path, R_OK) && realpath(path, out))
				return refuse_control_char("the policy", path, out);
		}
		return fail(ENOENT, "the policy %s is in none of: %s%s%s (build it: make user-default)",
			    name, dirs[0] ? dirs[0] : "", dirs[0] ? ", " : "", dirs[1]);
	}
	ret = iouring_bpf_policy_find(name, out, PATH_MAX);
	if (!ret)
		return refuse_control_char("the policy", out, out);
	if (ret == -ENOENT)
		return fail(ENOENT, "the policy %s is in none of: %s (set IOURING_BPF_POLICY_DIR, or "
				    "install iouring-bpf's policies: make install)", name, out);
	return fail(-ret, "looking for the policy %s: %s", name, strerror(-ret));
}

/*
 * The object opens, declares iou_ublk (the contract of iouring_bpf/ublk.h)
 * and, if it declares a chunk, one the device can have (c->chunk_bytes).
 */
static int check_policy(struct ublk_conf *c)
{
	const char *path = c->policy;
	struct iouring_bpf_policy *p = NULL;
	size_t size = 0;
	int ret = iouring_bpf_policy_open(path, &p);

	if (ret) {
		fail(ret, "%s", iouring_bpf_policy_strerror(p));
	} else if (!iouring_bpf_policy_global_ptr(p, "iou_ublk", &size) ||
		   size != sizeof(struct iouring_bpf_ublk_geometry)) {
		ret = fail(EINVAL, "%s is not a ublk policy: it has no global 'iou_ublk' (struct "
				   "iouring_bpf_ublk_geometry; see iouring_bpf/ublk.bpf.h)", path);
	} else {
		ret = iouring_bpf_ublk_policy_chunk(p, c->max_io_bytes, &c->chunk_bytes);
		if (ret)
			fail(ret, "%s: %s", path, iouring_bpf_policy_strerror(p));
	}
	iouring_bpf_policy_close(p);
	return ret;
}

static const char *driver_error(int err)
{
	if (err == -ENOENT || err == -ENODEV)
		return "/dev/ublk-control is missing: the ublk driver is not loaded (modprobe "
		       "ublk_drv, or a kernel with CONFIG_BLK_DEV_UBLK)";
	if (err == -EPERM || err == -EACCES)
		return "not allowed to use /dev/ublk-control: ublk devices need root "
		       "(CAP_SYS_ADMIN)";
	return strerror(-err);
}

/* What the kernel must have for this target, before anything is created. */
static int check_kernel_for(const struct ublk_conf *c)
{
	__u64 features = 0;
	int ret = iouring_bpf_ublk_get_features(&features);
	bool known = !ret;

	if (ret && ret != -EOPNOTSUPP)
		return fail(ret, "%s", driver_error(ret));
	if (c->target == UBLK_TARGET_LOOP_USER) {
		if (known && !(features & UBLK_F_NEED_GET_DATA))
			return fail(EOPNOTSUPP, "this kernel's ublk has no UBLK_F_NEED_GET_DATA, "
						"which --target loop-user needs");
		return 0;
	}
	if (!known || !(features & UBLK_F_SUPPORT_ZERO_COPY))
		return fail(EOPNOTSUPP, "this kernel's ublk has no zero copy "
					"(UBLK_F_SUPPORT_ZERO_COPY): use --target loop-user or the "
					"iouring-bpf kernel");
	struct btf *btf = kernel_btf_load();

	ret = btf ? kernel_has_bpf_ops(btf) : -errno;
	btf__free(btf);
	if (ret < 0)
		return fail(ret, "cannot read the kernel's BTF: %s; BPF targets need "
				 "CONFIG_DEBUG_INFO_BTF", strerror(-ret));
	if (!ret)
		return fail(EOPNOTSUPP, "this kernel has no io_uring_bpf_ops: --target %s needs "
					"the iouring-bpf kernel (use --target loop-user here)",
			    ublk_target_name(c->target));
	return 0;
}

static int validate_add(const struct add_args *a, struct ublk_conf *c)
{
	__u64 total = 0;
	int ret;

	for (unsigned int i = 0; i < c->nr_files; i++) {
		ret = check_file(a->files[i], c->files[i], &c->file_bytes[i]);
		if (ret)
			return ret;
		total += c->file_bytes[i];
	}
	c->kernel_path = a->path && !strcmp(a->path, "kernel");
	if (c->kernel_path && c->target == UBLK_TARGET_LOOP_USER)
		return usage_error(add_usage, "add", "--path kernel needs a BPF target, not "
				   "loop-user");
	if (c->target == UBLK_TARGET_BPF) {
		if (has_control_char(a->policy))
			return refuse_control_char("--policy", a->policy, "");
		if (!realpath(a->policy, c->policy))
			return fail(errno, "--policy %s: %s", a->policy, strerror(errno));
		ret = refuse_control_char("--policy", a->policy, c->policy);
		if (ret)
			return ret;
	} else if (c->target != UBLK_TARGET_LOOP_USER) {
		ret = find_policy(c->target == UBLK_TARGET_LOOP ? "ublk_loop.bpf.o" :
				  "ublk_split.bpf.o", c->policy);
		if (ret)
			return ret;
	}
	if (c->policy[0]) {
		ret = check_policy(c);
		if (ret)
			return ret;
	}

	if (!c->dev_bytes) {
		c->dev_bytes = total;
	} else if (c->target != UBLK_TARGET_BPF && c->dev_bytes > total) {
		return fail(EINVAL, "--size %llu is larger than %s (%llu bytes)",
			    (unsigned long long)c->dev_bytes,
			    c->nr_files == 1 ? c->files[0] : "the two files together",
			    (unsigned long long)total);
	}

	ret = check_kernel_for(c);
	if (ret)
		return ret;
	ret = ublk_state_prepare_dir();
	if (ret == -ENOTDIR)
		return fail(ret, "%s is not a directory of uid %d (a symlink, or someone else's): "
				 "refusing to keep device state there", ublk_state_dir(), (int)geteuid());
	if (ret)
		return fail(ret, "creating %s: %s", ublk_state_dir(), strerror(-ret));
	return 0;
}

/* Read the daemon's report lines until "ready", "error ..." or EOF. */
struct add_report {
	int id;
	bool ready;
	int err;
	char msg[1024];
};

static int read_report(int fd, struct add_report *r)
{
	char buf[4096], *line, *nl;
	size_t len = 0;
	struct timespec t0, now;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int ms;

		clock_gettime(CLOCK_MONOTONIC, &now);
		ms = ADD_WAIT_MS - ((now.tv_sec - t0.tv_sec) * 1000 +
				    (now.tv_nsec - t0.tv_nsec) / 1000000);
		if (ms <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, ms) <= 0) {
			if (errno == EINTR)
				continue;
			continue;	/* the deadline is checked above */
		}
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;	/* EOF */
		len += n;
		buf[len] = 0;
		while ((nl = strchr(buf, '\n'))) {
			*nl = 0;
			line = buf;
			if (!strncmp(line, "added ", 6)) {
				r->id = atoi(line + 6);
			} else if (!strcmp(line, "ready")) {
				r->ready = true;
			} else if (!strncmp(line, "error ", 6)) {
				char *msg;

				r->err = strtol(line + 6, &msg, 10);
				snprintf(r->msg, sizeof(r->msg), "%s", *msg ? msg + 1 : "failed");
			}
			len -= nl + 1 - buf;
			memmove(buf, nl + 1, len + 1);
			if (r->ready || r->err)
				return 0;
		}
		if (len == sizeof(buf) - 1)
			len = 0;	/* an overlong line: drop it */
	}
}

static int reaped_status;

/* waitpid() for at most ms: true if pid was reaped (its status in reaped_status). */
static bool reap(pid_t pid, int ms)
{
	for (int waited = 0; waited <= ms; waited += 50) {
		if (waitpid(pid, &reaped_status, WNOHANG) == pid)
			return true;
		usleep(50000);
	}
	return false;
}

/* The daemon died after ADD_DEV without cleaning up: delete its device. */
static void delete_leftover(int id)
{
	struct iouring_bpf_ublk_dev dev;

	if (id < 0 || iouring_bpf_ublk_open(&dev, id))
		return;
	iouring_bpf_ublk_stop(&dev);
	iouring_bpf_ublk_delete(&dev, DEL_WAIT_MS);
	iouring_bpf_ublk_close(&dev);
	ublk_state_remove(id, 0);
}

/*
 * In the forked daemon: a session of its own, stdin/stdout/stderr on
 * /dev/null, the report pipe as fd 3 and every other descriptor the caller
 * left open closed (a lock the caller holds on one must not stay held for
 * the device's lifetime), and "/" as working directory (so it keeps no file
 * system busy). Returns the report fd.
 */
static int daemon_setup(int pfd[2])
{
	int nul = open("/dev/null", O_RDWR), fd = pfd[1];

	close(pfd[0]);
	setsid();
	if (nul >= 0) {
		dup2(nul, STDIN_FILENO);
		dup2(nul, STDOUT_FILENO);
		dup2(nul, STDERR_FILENO);
		if (nul > STDERR_FILENO)
			close(nul);
	}
	if (fd != 3) {
		fd = dup3(fd, 3, O_CLOEXEC) < 0 ? fd : 3;
		if (fd == 3)
			close(pfd[1]);
	}
	if (close_range(fd + 1, ~0U, 0))
		for (long i = fd + 1, max = sysconf(_SC_OPEN_MAX); i < max && i < 65536; i++)
			close(i);
	for (int i = STDERR_FILENO + 1; i < fd; i++)
		close(i);
	if (chdir("/"))
		fprintf(stderr, "ublk daemon: chdir /: %s\n", strerror(errno));
	return fd;
}

/* The last lines of the daemon's log at path, indented, in buf ("" if none). */
static void log_tail(const char *path, char *buf, size_t size)
{
	char text[4096];
	size_t n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), lines = 0;
	off_t end;
	ssize_t got;
	char *p;

	buf[0] = 0;
	if (fd < 0)
		return;
	end = lseek(fd, 0, SEEK_END);
	if (end > 0) {
		off_t from = end > (off_t)sizeof(text) - 1 ? end - (off_t)sizeof(text) + 1 : 0;

		got = pread(fd, text, sizeof(text) - 1, from);
		n = got > 0 ? (size_t)got : 0;
	}
	close(fd);
	text[n] = 0;
	while (n && text[n - 1] == '\n')
		text[--n] = 0;
	/* back to the start of the 5th last line */
	for (p = text + n; p > text; p--) {
		if (p[-1] == '\n' && ++lines == 5)
			break;
	}
	for (char *line = p; *line; ) {
		char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		size_t used = strlen(buf);

		snprintf(buf + used, size - used, "\n  %.*s", (int)len, line);
		line += len + (nl ? 1 : 0);
	}
}

static int cmd_ublk_add(int argc, char **argv)
{
	static struct ublk_conf conf;
	struct add_args a = {};
	struct add_report r = { .id = -1 };
	int ret, pfd[2], status;
	char log[PATH_MAX], tail[2048];
	pid_t pid;

	ret = parse_add(argc, argv, &a);
	if (ret)
		return ret > 0 ? 0 : ret;
	ret = check_add_shape(&a, &conf);
	if (ret)
		return ret;
	ret = validate_add(&a, &conf);
	if (ret)
		return ret;

	if (pipe2(pfd, O_CLOEXEC))
		return fail(errno, "pipe: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		close(pfd[0]);
		close(pfd[1]);
		return fail(ret, "fork: %s", strerror(-ret));
	}
	if (!pid)
		exit(ublk_daemon_run(&conf, daemon_setup(pfd)));
	close(pfd[1]);
	ret = read_report(pfd[0], &r);
	close(pfd[0]);
	if (r.id >= 0)
		ublk_state_path(r.id, ".log", log, sizeof(log));
	else
		snprintf(log, sizeof(log), "(none yet)");

	if (r.ready) {
		if (json_output) {
			char path[64];

			jw = json_new(stdout);
			json_object_start(jw);
			json_kv_int(jw, "id", r.id);
			snprintf(path, sizeof(path), "/dev/ublkb%d", r.id);
			json_kv_string(jw, "block", path);
			snprintf(path, sizeof(path), "/dev/ublkc%d", r.id);
			json_kv_string(jw, "char", path);
			json_kv_int(jw, "pid", pid);
			json_kv_string(jw, "target", ublk_target_name(conf.target));
			json_object_end(jw);
			json_destroy(jw);
		} else {
			printf("ublk %d /dev/ublkb%d\n", r.id, r.id);
		}
		return 0;
	}
	if (r.err) {
		/*
		 * It cleans up (deletes what it created) and exits: wait for that,
		 * but not forever; its error is the answer either way.
		 */
		if (!reap(pid, r.id >= 0 ? ERR_EXIT_WAIT_MS : DEL_WAIT_MS))
			return fail(r.err, "%s (the daemon, pid %d, has not exited %d s later%s%s)",
				    r.msg, (int)pid,
				    (r.id >= 0 ? ERR_EXIT_WAIT_MS : DEL_WAIT_MS) / 1000,
				    r.id >= 0 ? "; log: " : "", r.id >= 0 ? log : "");
		return fail(r.err, "%s", r.msg);
	}
	if (ret == -ETIMEDOUT) {
		kill(pid, SIGKILL);
		if (!reap(pid, DEL_WAIT_MS))
			return fail(ETIMEDOUT, "the daemon (pid %d) did not get the device ready "
					       "within %d s and cannot be killed: it is stuck in "
					       "the kernel (log: %s)", (int)pid, ADD_WAIT_MS / 1000, log);
		delete_leftover(r.id);
		log_tail(log, tail, sizeof(tail));
		return fail(ETIMEDOUT, "the daemon did not get the device ready within %d s; it was "
				       "killed and the device deleted (log: %s)%s%s",
			    ADD_WAIT_MS / 1000, log, tail[0] ? "; it ends with:" : "", tail);
	}
	/* the report pipe was closed without "ready" or "error": it died */
	if (!reap(pid, DEL_WAIT_MS)) {
		log_tail(log, tail, sizeof(tail));
		return fail(EIO, "the daemon (pid %d) closed its report pipe without getting the "
				 "device ready, and has not exited %d s later (log: %s)%s%s",
			    (int)pid, DEL_WAIT_MS / 1000, log, tail[0] ? "; it ends with:" : "",
			    tail);
	}
	status = reaped_status;
	delete_leftover(r.id);
	log_tail(log, tail, sizeof(tail));
	return fail(EIO, "the daemon exited (%s %d) without getting the device ready (log: %s)%s%s",
		    WIFSIGNALED(status) ? "signal" : "status",
		    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), log,
		    tail[0] ? "; it ends with:" : "", tail);
}

/* --- list --- */

static const char *const flag_names[] = {
	"zero_copy", "comp_in_task", "need_get_data", "user_recovery",
	"user_recovery_reissue", "unprivileged", "cmd_ioctl_encode", "user_copy", "zoned",
};

static void flags_text(__u64 flags, char *buf, size_t size)
{
	buf[0] = 0;
	for (unsigned int i = 0; i < 64; i++) {
		char name[32];

		if (!(flags & (1ULL << i)))
			continue;
		if (i < sizeof(flag_names) / sizeof(flag_names[0]))
			snprintf(name, sizeof(name), "%s", flag_names[i]);
		else
			snprintf(name, sizeof(name), "bit%u", i);
		snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", buf[0] ? "," : "", name);
	}
	if (!buf[0])
		snprintf(buf, size, "-");
}

static const char *state_name(__u16 state)
{
	switch (state) {
	case UBLK_S_DEV_DEAD: return "DEAD";
	case UBLK_S_DEV_LIVE: return "LIVE";
	case UBLK_S_DEV_QUIESCED: return "QUIESCED";
	default: return "?";
	}
}

static void size_text(__u64 b, char *buf, size_t size)
{
	static const char *const units[] = { "TiB", "GiB", "MiB", "KiB" };

	for (int i = 0; i < 4; i++) {
		__u64 u = 1ULL << (10 * (4 - i));

		if (b >= u && !(b % u)) {
			snprintf(buf, size, "%llu %s", (unsigned long long)(b / u), units[i]);
			return;
		}
	}
	snprintf(buf, size, "%llu B", (unsigned long long)b);
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Numbers N of directory entries PREFIX<N>, sorted; count or -errno. */
static int scan_ids(const char *dir, const char *prefix, int *ids, int max)
{
	size_t plen = strlen(prefix);
	struct dirent *e;
	int n = 0;
	DIR *d = opendir(dir);

	if (!d)
		return -errno;
	while ((e = readdir(d)) && n < max) {
		char *end;
		long v;

		if (strncmp(e->d_name, prefix, plen) || !e->d_name[plen])
			continue;
		v = strtol(e->d_name + plen, &end, 10);
		if (*end || v < 0 || e->d_name[plen] == '-' || e->d_name[plen] == '+')
			continue;
		ids[n++] = v;
	}
	closedir(d);
	qsort(ids, n, sizeof(ids[0]), cmp_int);
	return n;
}

static void list_one(struct iouring_bpf_ublk_dev *dev, const struct ublk_state *st, bool have_st)
{
	const struct ublksrv_ctrl_dev_info *info = &dev->info;
	struct ublk_params params;
	int id = info->dev_id;
	/* the kernel's word, not the state file's: a file is easier to get wrong */
	pid_t pid = info->ublksrv_pid;
	bool alive = ublk_pid_alive(pid);
	__u64 bytes = 0, chunk = 0;
	char flags[256], size[32], path[PATH_MAX];

	if (!iouring_bpf_ublk_get_params(dev, &params) && params.types & UBLK_PARAM_TYPE_BASIC) {
		bytes = params.basic.dev_sectors << 9;
		chunk = (__u64)params.basic.chunk_sectors << 9;
	}
	flags_text(info->flags, flags, sizeof(flags));
	if (json_output) {
		json_object_start(jw);
		json_kv_int(jw, "id", id);
		json_kv_string(jw, "state", state_name(info->state));
		json_kv_uint(jw, "queues", info->nr_hw_queues);
		json_kv_uint(jw, "depth", info->queue_depth);
		json_kv_uint(jw, "size", bytes);
		json_kv_uint(jw, "max_io_bytes", info->max_io_buf_bytes);
		/* the kernel's chunk_sectors (a policy's IOU_UBLK_CHUNK_BYTES()) */
		json_key(jw, "chunk_bytes");
		chunk ? json_uint(jw, chunk) : json_null(jw);
		snprintf(path, sizeof(path), "/dev/ublkb%d", id);
		json_kv_string(jw, "block", path);
		snprintf(path, sizeof(path), "/dev/ublkc%d", id);
		json_kv_string(jw, "char", path);
		json_key(jw, "flags");
		json_array_start(jw);
		for (unsigned int i = 0; i < 64; i++) {
			if (!(info->flags & (1ULL << i)))
				continue;
			if (i < sizeof(flag_names) / sizeof(flag_names[0]))
				json_string(jw, flag_names[i]);
			else
				json_int(jw, i);
		}
		json_array_end(jw);
		json_key(jw, "pid");	/* the daemon's, as ublk add prints it */
		pid > 0 ? json_int(jw, pid) : json_null(jw);
		json_kv_bool(jw, "daemon_alive", alive);
		json_key(jw, "target");
		json_string(jw, have_st ? ublk_target_name(st->conf.target) : NULL);
		json_key(jw, "files");
		json_array_start(jw);
		for (unsigned int i = 0; have_st && i < st->conf.nr_files; i++)
			json_string(jw, st->conf.files[i]);
		json_array_end(jw);
		json_key(jw, "policy");
		json_string(jw, have_st && st->conf.policy[0] ? st->conf.policy : NULL);
		json_key(jw, "path");
		json_string(jw, !have_st || st->conf.target == UBLK_TARGET_LOOP_USER ? NULL :
			    st->conf.kernel_path ? "kernel" : "daemon");
		ublk_state_path(id, ".log", path, sizeof(path));
		json_key(jw, "log");
		json_string(jw, access(path, F_OK) ? NULL : path);
		json_object_end(jw);
		return;
	}
	char daemon[48];

	if (pid > 0)
		snprintf(daemon, sizeof(daemon), "%d %s", (int)pid, alive ? "alive" : "gone");
	else
		snprintf(daemon, sizeof(daemon), "-");
	size_text(bytes, size, sizeof(size));
	printf("%-4d %-9s %6u %6u %10s  %-16s %-10s %s\n", id, state_name(info->state),
	       info->nr_hw_queues, info->queue_depth, size, daemon,
	       have_st ? ublk_target_name(st->conf.target) : "-", flags);
	if (have_st && st->conf.policy[0])
		printf("     policy: %s (%s path)\n", st->conf.policy,
		       st->conf.kernel_path ? "kernel" : "daemon");
	if (chunk) {
		size_text(chunk, size, sizeof(size));
		printf("     chunk: %s\n", size);
	}
	for (unsigned int i = 0; have_st && i < st->conf.nr_files; i++)
		printf("     file: %s\n", st->conf.files[i]);
}

static int cmd_ublk_list(int argc, char **argv)
{
	static int ids[4096], state_ids[4096];
	struct iouring_bpf_ublk_dev dev;
	struct iface_parser p;
	int n, ns, ret;

	iface_parse_init(&p, "ublk", "list", argc, argv, 0);
	if (iface_parse_next(&p) == OPT_HELP)
		return list_usage(stdout), 0;
	if (p.value)
		return usage_error(list_usage, "list", "no arguments expected ('%s')", p.value);

	n = scan_ids("/sys/class/ublk-char", "ublkc", ids, 4096);
	if (n < 0) {
		if (access("/dev/ublk-control", F_OK))
			return fail(ENODEV, "%s", driver_error(-ENODEV));
		n = 0;
	}
	if (json_output) {	/* one document: the list, or an error object */
		jw = json_new_buffered(stdout);
		json_array_start(jw);
	} else {
		printf("%-4s %-9s %6s %6s %10s  %-16s %-10s %s\n", "ID", "STATE", "QUEUES", "DEPTH",
		       "SIZE", "DAEMON", "TARGET", "FLAGS");
	}
	for (int i = 0; i < n; i++) {
		struct ublk_state st;
		bool have_st;

		ret = iouring_bpf_ublk_open(&dev, ids[i]);
		if (ret == -ENODEV)
			continue;	/* went away meanwhile */
		if (ret) {
			json_discard(jw);
			return fail(ret, "ublk %d: %s", ids[i], driver_error(ret));
		}
		/* a state file describes the device only if it names the kernel's daemon */
		have_st = !ublk_state_read(ids[i], &st) && st.pid == (pid_t)dev.info.ublksrv_pid;
		list_one(&dev, &st, have_st);
		iouring_bpf_ublk_close(&dev);
	}
	if (json_output) {
		json_array_end(jw);
		json_destroy(jw);
	}

	/* state files of devices that are gone */
	ns = scan_ids(ublk_state_dir(), "", state_ids, 4096);
	for (int i = 0; i < ns; i++) {
		if (bsearch(&state_ids[i], ids, n, sizeof(ids[0]), cmp_int))
			continue;
		warn("%s/%d: ublk %d does not exist any more; '%s ublk del %d' removes the file",
		     ublk_state_dir(), state_ids[i], state_ids[i], prog_name, state_ids[i]);
	}
	return 0;
}

/* --- del --- */

/* pid's executable is this program's (the same file, or one rebuilt in its place). */
static bool runs_our_exe(pid_t pid)
{
	char a[PATH_MAX], b[PATH_MAX], path[64];
	struct stat sa, sb;
	ssize_t n, m;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (!stat(path, &sa) && !stat("/proc/self/exe", &sb) && sa.st_dev == sb.st_dev &&
	    sa.st_ino == sb.st_ino)
		return true;
	n = readlink(path, a, sizeof(a) - 1);
	m = readlink("/proc/self/exe", b, sizeof(b) - 1);
	if (n <= 0 || m <= 0)
		return false;
	a[n] = b[m] = 0;
	if (n > 10 && !strcmp(a + n - 10, " (deleted)"))
		a[n - 10] = 0;
	return !strcmp(a, b);
}

/* pid has ublk ID's char device (/dev/ublkcID) open: it serves that device. */
static bool holds_char_dev(pid_t pid, unsigned long id)
{
	char path[PATH_MAX];
	unsigned int major, minor;
	struct dirent *e;
	bool found = false;
	FILE *f;
	DIR *d;

	snprintf(path, sizeof(path), "/sys/class/ublk-char/ublkc%lu/dev", id);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (fscanf(f, "%u:%u", &major, &minor) != 2) {
		fclose(f);
		return false;
	}
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return false;
	while (!found && (e = readdir(d))) {
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd/%s", (int)pid, e->d_name);
		found = !stat(path, &st) && S_ISCHR(st.st_mode) &&
			st.st_rdev == makedev(major, minor);
	}
	closedir(d);
	return found;
}

/*
 * A pidfd for pid if it is our daemon for ublk ID: it runs this program and
 * holds /dev/ublkcID open; -1 if not. Not its name (anything can be called
 * iouring-bpf) and not a state file's word. Signals then go through the
 * pidfd, so they reach that process even if pid is reused meanwhile.
 */
static int our_daemon_pidfd(pid_t pid, unsigned long id)
{
	int pidfd;

	if (pid <= 0 || pid == getpid())
		return -1;
	pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return -1;
	/* checked after the pidfd pins the process: still the same one afterwards */
	if (!ublk_pid_alive(pid) || !runs_our_exe(pid) || !holds_char_dev(pid, id) ||
	    syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0)) {
		close(pidfd);
		return -1;
	}
	return pidfd;
}

static void pidfd_kill(int pidfd, int sig)
{
	if (pidfd >= 0)
		syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

/* Poll the device until it is not LIVE (or gone): true if so within ms. */
static bool wait_not_live(struct iouring_bpf_ublk_dev *dev, int ms)
{
	for (int waited = 0; ; waited += 50) {
		int ret = iouring_bpf_ublk_get_info(dev);

		if (ret || dev->info.state != UBLK_S_DEV_LIVE)
			return true;
		if (waited >= ms)
			return false;
		usleep(50000);
	}
}

static int cmd_ublk_del(int argc, char **argv)
{
	struct iouring_bpf_ublk_dev dev;
	struct ublk_state st;
	unsigned long id;
	bool have_st, force = false;
	const char *id_arg = NULL;
	struct iface_parser p;
	pid_t pid;
	int c, ret, pidfd, st_ret;

	iface_parse_init(&p, "ublk", "del", argc, argv, 0);
	while ((c = iface_parse_next(&p)) != IFACE_END) {
		if (c == OPT_HELP)
			return del_usage(stdout), 0;
		if (c == OPT_FORCE)
			force = true;
		else if (c == IFACE_OPERAND && !id_arg)
			id_arg = p.value;
		else
			return usage_error(del_usage, "del", "unexpected '%s'", p.value);
	}
	if (!id_arg)
		return usage_error(del_usage, "del", "one ID expected");
	if (parse_uint(id_arg, (1U << 20) - 1, &id))
		return usage_error(del_usage, "del", "'%s' is not a ublk device number", id_arg);

	st_ret = ublk_state_read(id, &st);
	have_st = !st_ret;
	ret = iouring_bpf_ublk_open(&dev, id);
	if (ret == -ENODEV && have_st && !ublk_pid_alive(st.pid)) {
		ublk_state_remove(id, 0);
		warn("ublk %lu does not exist; removed its stale state file", id);
		goto done;
	}
	if (ret == -ENODEV)
		return fail(ret, "no ublk device %lu ('%s ublk list' shows them)", id, prog_name);
	if (ret)
		return fail(ret, "%s", driver_error(ret));

	/*
	 * The daemon is the one the kernel names (START_DEV's pid), and only if
	 * it is ours and serves this device: never the state file's pid.
	 */
	pid = dev.info.ublksrv_pid;
	pidfd = our_daemon_pidfd(pid, id);
	/* a live server that is not ours, and no record of ours: not our device */
	if (st_ret == -ENOENT && !force && pidfd < 0 && pid > 0 && ublk_pid_alive(pid)) {
		iouring_bpf_ublk_close(&dev);
		return fail(EBUSY, "ublk %lu is served by pid %d, not by iouring-bpf (no state file "
				   "in %s); not deleting it (--force deletes it anyway)",
			    id, (int)pid, ublk_state_dir());
	}
	if (dev.info.state == UBLK_S_DEV_LIVE && pidfd >= 0) {
		/* the daemon stops the device itself: we never wait on a hung one */
		pidfd_kill(pidfd, SIGTERM);
		if (!wait_not_live(&dev, DEL_WAIT_MS)) {
			warn("the daemon (pid %d) did not stop ublk %lu within %d s: killing it",
			     (int)pid, id, DEL_WAIT_MS / 1000);
			pidfd_kill(pidfd, SIGKILL);
			wait_not_live(&dev, DEL_WAIT_MS);
		}
	}
	/* waits for requests in flight if a daemon of another program still serves them */
	ret = iouring_bpf_ublk_stop(&dev);
	if (ret && ret != -ENODEV) {
		iouring_bpf_ublk_close(&dev);
		if (pidfd >= 0)
			close(pidfd);
		return fail(ret, "stopping ublk %lu (STOP_DEV): %s", id, strerror(-ret));
	}
	ret = iouring_bpf_ublk_delete(&dev, DEL_WAIT_MS);
	if (ret == -ETIMEDOUT && pidfd >= 0) {
		warn("the daemon (pid %d) did not close /dev/ublkc%lu within %d s: killing it",
		     (int)pid, id, DEL_WAIT_MS / 1000);
		pidfd_kill(pidfd, SIGKILL);
		ret = iouring_bpf_ublk_delete(&dev, DEL_WAIT_MS);
	}
	if (pidfd >= 0)
		close(pidfd);
	iouring_bpf_ublk_close(&dev);
	if (ret == -ETIMEDOUT)
		return fail(ret, "ublk %lu is stopped and removed, but its daemon (pid %d) still "
				 "holds /dev/ublkc%lu: the number stays taken until it exits",
			    id, (int)pid, id);
	if (ret && ret != -ENODEV)
		return fail(ret, "deleting ublk %lu (DEL_DEV): %s", id, strerror(-ret));
	ublk_state_remove(id, 0);
done:
	if (json_output) {
		jw = json_new(stdout);
		json_object_start(jw);
		json_kv_int(jw, "deleted", id);
		json_object_end(jw);
		json_destroy(jw);
	} else {
		printf("ublk %lu deleted\n", id);
	}
	return 0;
}

int cmd_ublk(int argc, char **argv)
{
	struct iface_parser p;
	char **sub;
	int c, n;

	/* options of ublk itself (--help) come before the subcommand */
	iface_parse_init(&p, "ublk", NULL, argc, argv, IFACE_STOP_AT_OPERAND);
	while ((c = iface_parse_next(&p)) != IFACE_END) {
		if (c == OPT_HELP)
			return ublk_usage(stdout), 0;
		return usage_fail(ublk_usage, "ublk", "unknown subcommand '%s' (add, list, del)",
				  p.value);
	}
	sub = iface_parse_rest(&p, &n);
	if (!n)
		return usage_fail(ublk_usage, "ublk", "which subcommand? (add, list, del)");
	if (!strcmp(sub[0], "help"))
		return ublk_usage(stdout), 0;
	if (!strcmp(sub[0], "add"))
		return cmd_ublk_add(n - 1, sub + 1);
	if (!strcmp(sub[0], "list"))
		return cmd_ublk_list(n - 1, sub + 1);
	if (!strcmp(sub[0], "del"))
		return cmd_ublk_del(n - 1, sub + 1);
	return usage_fail(ublk_usage, "ublk", "unknown subcommand '%s' (add, list, del)", sub[0]);
}
