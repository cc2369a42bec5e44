// SPDX-License-Identifier: GPL-2.0
/*
 * The pin directory: PIN_ROOT/NAME/{link,meta,bss,data}. PIN_ROOT must be
 * on a BPF file system; bpffs is mounted only on /sys/fs/bpf itself, never
 * anywhere else. Removal works on directory fds (no symlink is followed),
 * needs the meta record this tool writes and unlinks only the names this
 * tool creates.
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "loader.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

#define BPF_FS_DEFAULT "/sys/fs/bpf"

/* What a pin directory holds, in removal order: the record goes last, so
 * that a removal that fails half-way can be done again. */
static const char *const pin_names[] = { "link", "bss", "data", "meta" };

const char *pin_root(void)
{
	const char *root = getenv("IOURING_BPF_PIN_ROOT");

	return root && *root ? root : PIN_ROOT_DEFAULT;
}

static bool is_bpffs_fd(int fd)
{
	struct statfs sfs;

	return !fstatfs(fd, &sfs) && sfs.f_type == BPF_FS_MAGIC;
}

static bool is_bpffs(const char *path)
{
	struct statfs sfs;

	return !statfs(path, &sfs) && sfs.f_type == BPF_FS_MAGIC;
}

/* fail() unless quiet (load's clean-up, after its own message). */
static int pfail(bool quiet, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int pfail(bool quiet, int err, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (quiet)
		return err > 0 ? -err : err;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return fail(err, "%s", msg);
}

static int not_bpffs(const char *path)
{
	return fail(ENOTDIR, "%s is not on a BPF file system (bpffs): pins live only there; "
			     "set IOURING_BPF_PIN_ROOT to a directory under %s (or under a bpffs "
			     "you mounted)", path, BPF_FS_DEFAULT);
}

/* The root exists on bpffs when this returns 0. Mounts bpffs only on
 * /sys/fs/bpf, and only for a root below it. */
int pin_prepare_root(void)
{
	const char *root = pin_root();
	char parent[4096], *slash;
	size_t n = strlen(BPF_FS_DEFAULT);

	if (!strncmp(root, BPF_FS_DEFAULT "/", n + 1) && !is_bpffs(BPF_FS_DEFAULT) &&
	    mount("bpf", BPF_FS_DEFAULT, "bpf", 0, "mode=0700"))
		return fail(errno, "%s is not a BPF file system and mounting one there failed: %s",
			    BPF_FS_DEFAULT, strerror(errno));
	if (!access(root, F_OK))	/* there already: it must be on bpffs itself */
		return is_bpffs(root) ? 0 : not_bpffs(root);
	snprintf(parent, sizeof(parent), "%s", root);
	slash = strrchr(parent, '/');
	if (slash && slash != parent)
		*slash = 0;
	else if (slash)
		parent[1] = 0;
	else
		snprintf(parent, sizeof(parent), ".");
	if (!is_bpffs(parent))
		return access(parent, F_OK) ? fail(errno, "%s: %s", parent, strerror(errno)) :
					      not_bpffs(parent);
	if (mkdir(root, 0700) && errno != EEXIST)
		return fail(errno, "creating %s: %s", root, strerror(errno));
	return is_bpffs(root) ? 0 : not_bpffs(root);
}

/* An fd of the pin root, which must be on bpffs; -ENOENT (no message) if
 * it is missing. */
int pin_root_open(bool quiet)
{
	int fd = open(pin_root(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT ? -ENOENT :
		       pfail(quiet, errno, "%s: %s", pin_root(), strerror(errno));
	if (!is_bpffs_fd(fd)) {
		close(fd);
		return quiet ? -ENOTDIR : not_bpffs(pin_root());
	}
	return fd;
}

/* Names are one path component of letters, digits, '-', '_' and '.'. */
int pin_name_check(const char *name)
{
	size_t n = strlen(name);

	if (!n || n > PIN_NAME_MAX || name[0] == '.')
		return -EINVAL;
	for (const char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.'))
			return -EINVAL;
	return 0;
}

/* The attachment record in the pin directory dfd: a pinned map (a regular
 * file on bpffs, not a symlink) named iou_pin_meta holding version 1. */
int pin_meta_read(int dfd, struct pin_meta *m)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), zero = 0;
	char path[64];
	struct stat st;
	int fd, ret = 0;

	if (fstatat(dfd, "meta", &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EBADF;
	snprintf(path, sizeof(path), "/proc/self/fd/%d/meta", dfd);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	memset(m, 0, sizeof(*m));
	if (bpf_map_get_info_by_fd(fd, &info, &len) || strcmp(info.name, "iou_pin_meta") ||
	    info.key_size != sizeof(__u32) || info.value_size != sizeof(*m) ||
	    bpf_map_lookup_elem(fd, &zero, m) || m->version != 1)
		ret = -EBADF;
	close(fd);
	return ret;
}

/* Remove NAME's pins (only the names we create) and the directory; a
 * directory holding anything else stays (ENOTEMPTY). */
static int remove_pins(int rootfd, int dfd, const char *name)
{
	int ret = 0;

	for (size_t i = 0; i < sizeof(pin_names) / sizeof(pin_names[0]); i++)
		if (unlinkat(dfd, pin_names[i], 0) && errno != ENOENT && !ret)
			ret = -errno;
	if (!ret && unlinkat(rootfd, name, AT_REMOVEDIR))
		ret = -errno;
	return ret;
}

/*
 * Unpin NAME under the pin root: the link's last reference goes with it,
 * which detaches the policy. need_meta: refuse a directory without our
 * attachment record (load's own clean-up of a half-made one passes false).
 * Says why on failure unless quiet.
 */
int pin_remove(const char *name, bool need_meta, bool quiet)
{
	struct pin_meta m;
	struct stat st;
	int rootfd, dfd, ret;

	if (pin_name_check(name))
		return pfail(quiet, EINVAL, "'%s' is not a pin name", name);
	rootfd = pin_root_open(quiet);
	if (rootfd == -ENOENT)
		return pfail(quiet, ENOENT, "no pinned policy '%s' (%s list shows them)", name,
			     prog_name);
	if (rootfd < 0)
		return rootfd;
	/* O_DIRECTORY | O_NOFOLLOW fails on a symlink, with ENOTDIR: say which */
	ret = fstatat(rootfd, name, &st, AT_SYMLINK_NOFOLLOW) ? errno :
	      S_ISLNK(st.st_mode) ? ELOOP : 0;
	dfd = ret ? -1 : openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		ret = ret ?: errno;
		close(rootfd);
		if (ret == ENOENT)
			return pfail(quiet, ENOENT, "no pinned policy '%s' (%s list shows them)",
				     name, prog_name);
		if (ret == ELOOP || ret == ENOTDIR)
			return pfail(quiet, ENOTDIR, "%s/%s is not a pin directory (%s): not "
				     "removing it", pin_root(), name,
				     ret == ELOOP ? "a symbolic link" : "not a directory");
		return pfail(quiet, ret, "%s/%s: %s", pin_root(), name, strerror(ret));
	}
	ret = need_meta ? pin_meta_read(dfd, &m) : 0;
	if (ret) {
		/* -EBADF: a record, but not one of ours (pin_meta_read()) */
		pfail(quiet, ret, "%s/%s has no attachment record of %s (meta: %s): not "
		      "removing it%s", pin_root(), name, prog_name,
		      ret == -EBADF ? "not one it wrote" : strerror(-ret), ret == -ENOENT ?
		      "; if it is a leftover of yours, remove it by hand" : "");
		goto out;
	}
	ret = remove_pins(rootfd, dfd, name);
	if (ret)
		pfail(quiet, ret, "removing %s/%s: %s%s", pin_root(), name, strerror(-ret),
		      ret == -ENOTEMPTY ? " (it holds files this tool did not create; they stay)" :
		      "");
out:
	close(dfd);
	close(rootfd);
	return ret;
}
