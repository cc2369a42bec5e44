// SPDX-License-Identifier: GPL-2.0
/* The pin directory: bpffs mounted, names checked. */
#include <dirent.h>
#include <errno.h>
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

const char *pin_root(void)
{
	const char *root = getenv("IOURING_BPF_PIN_ROOT");

	return root && *root ? root : PIN_ROOT_DEFAULT;
}

/* bpffs at the root's parent (mounted if it is not), and the root itself. */
int pin_prepare_root(void)
{
	char parent[4096], *slash;
	struct statfs sfs;

	snprintf(parent, sizeof(parent), "%s", pin_root());
	slash = strrchr(parent, '/');
	if (slash && slash != parent)
		*slash = 0;
	if (statfs(parent, &sfs))
		return fail(errno, "%s: %s", parent, strerror(errno));
	if (sfs.f_type != BPF_FS_MAGIC && mount("bpf", parent, "bpf", 0, "mode=0700"))
		return fail(errno, "%s is not a BPF file system and mounting one failed: %s",
			    parent, strerror(errno));
	if (mkdir(pin_root(), 0700) && errno != EEXIST)
		return fail(errno, "creating %s: %s", pin_root(), strerror(errno));
	return 0;
}

/* Names are one path component of letters, digits, '-', '_' and '.'. */
int pin_name_check(const char *name)
{
	size_t n = strlen(name);

	if (!n || n > 64 || name[0] == '.')
		return -EINVAL;
	for (const char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.'))
			return -EINVAL;
	return 0;
}

/* Remove a pin directory and the pins in it: the link's last reference
 * goes with it, which detaches the policy. */
int unpin_dir(const char *dir)
{
	struct dirent *e;
	char path[4400];
	DIR *d = opendir(dir);
	int ret = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (unlink(path) && !ret)
			ret = -errno;
	}
	closedir(d);
	if (rmdir(dir) && !ret)
		ret = -errno;
	return ret;
}
