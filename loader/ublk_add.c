// SPDX-License-Identifier: GPL-2.0
/*
 * iouring-bpf ublk add: check the command line, the backing files, the
 * policy and the kernel (everything that can be checked before a device
 * exists), then fork the daemon (ublk_daemon.c) and wait for its "ready";
 * clean up after a daemon that died before it got there.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/btf.h>

#include "interface.h"
#include "loader.h"
#include "ublk_cmd.h"

#ifndef IOURING_BPF_POLICY_BUILD_DIR
#define IOURING_BPF_POLICY_BUILD_DIR ""
#endif
#ifndef IOURING_BPF_TOOL_BUILD_PATH
#define IOURING_BPF_TOOL_BUILD_PATH ""
#endif

/* how long add waits for the daemon's "ready" */
#define ADD_WAIT_MS	120000
/*
 * how long add waits for a daemon that reported an error after creating the
 * device to exit: it stops its queues (up to 30 s) and deletes the device
 */
#define ERR_EXIT_WAIT_MS	45000

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

int cmd_ublk_add(int argc, char **argv)
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
