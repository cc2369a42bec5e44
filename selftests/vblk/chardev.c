// SPDX-License-Identifier: GPL-2.0
/*
 * vblk/chardev (VM): every virtio-blk disk has its passthrough character
 * device, and nothing else does:
 * - /dev/vdXc0 is a character device numbered as
 *   /sys/class/virtblk-generic/vdXc0/dev says, its sysfs parent is the
 *   disk's virtio device, and devtmpfs made it root:root 0600;
 * - iouring_bpf_vblk_char_path() maps /dev/vdX (and a link to it) to it and
 *   refuses what is not a virtio-blk disk (-ENODEV), a short buffer
 *   (-ENAMETOOLONG) and a missing file (-ENOENT);
 * - GET_ID returns the disk's serial (NUL-padded to 20 bytes) and writes
 *   nothing past those 20 bytes of a larger buffer;
 * - FLUSH completes with 0, on a file opened for writing.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "vblk.h"

/* /dev/vdXc0 against the class directory's dev file and parent */
static bool check_node(const char *disk)
{
	char path[PATH_MAX], line[64], chr[64], cls_parent[PATH_MAX], blk_parent[PATH_MAX];
	unsigned int maj, min;
	struct stat st;
	bool ok = true;

	snprintf(path, sizeof(path), "/sys/class/virtblk-generic/%sc0/dev", disk);
	if (!CHECK(!read_line(path, line, sizeof(line)), "%s: %s", path, strerror(errno)))
		return false;
	if (!CHECK(sscanf(line, "%u:%u", &maj, &min) == 2, "%s holds '%s'", path, line))
		return false;
	snprintf(chr, sizeof(chr), "/dev/%.32sc0", disk);
	if (!CHECK(!stat(chr, &st), "stat %s: %s", chr, strerror(errno)))
		return false;
	ok &= CHECK(S_ISCHR(st.st_mode), "%s is not a character device (mode %o)", chr,
		    st.st_mode);
	ok &= CHECK(major(st.st_rdev) == maj && minor(st.st_rdev) == min,
		    "%s is %u:%u, sysfs says %u:%u", chr, major(st.st_rdev), minor(st.st_rdev),
		    maj, min);
	ok &= CHECK((st.st_mode & 07777) == 0600 && st.st_uid == 0 && st.st_gid == 0,
		    "%s is %o %u:%u, want 0600 root:root", chr, st.st_mode & 07777, st.st_uid,
		    st.st_gid);
	/* the character device hangs off the disk's virtio device */
	snprintf(path, sizeof(path), "/sys/class/virtblk-generic/%sc0/device", disk);
	if (!CHECK(realpath(path, cls_parent), "%s: %s", path, strerror(errno)))
		return false;
	snprintf(path, sizeof(path), "/sys/block/%s/device", disk);
	if (!CHECK(realpath(path, blk_parent), "%s: %s", path, strerror(errno)))
		return false;
	ok &= CHECK(!strcmp(cls_parent, blk_parent), "%sc0's parent is %s, the disk's %s", disk,
		    cls_parent, blk_parent);
	printf("%s: %u:%u, mode %o, parent %s\n", chr, maj, min, st.st_mode & 07777, cls_parent);
	return ok;
}

/* every vd* disk has a class entry, and every class entry a vd* disk */
static bool check_all_disks(void)
{
	char path[PATH_MAX];
	struct dirent *de;
	int disks = 0, nodes = 0;
	bool ok = true;
	DIR *dir;

	dir = opendir("/sys/block");
	if (!CHECK(dir, "opendir /sys/block"))
		return false;
	while ((de = readdir(dir))) {
		if (strncmp(de->d_name, "vd", 2))
			continue;
		disks++;
		ok &= check_node(de->d_name);
	}
	closedir(dir);
	dir = opendir("/sys/class/virtblk-generic");
	if (!CHECK(dir, "opendir /sys/class/virtblk-generic: %s", strerror(errno)))
		return false;
	while ((de = readdir(dir))) {
		size_t n = strlen(de->d_name);

		if (de->d_name[0] == '.')
			continue;
		nodes++;
		ok &= CHECK(n > 2 && !strcmp(de->d_name + n - 2, "c0"), "class entry %s",
			    de->d_name);
		snprintf(path, sizeof(path), "/sys/block/%.*s", (int)(n - 2), de->d_name);
		ok &= CHECK(!access(path, F_OK), "class entry %s has no disk %s", de->d_name,
			    path);
	}
	closedir(dir);
	ok &= CHECK(disks >= 2 && nodes == disks, "%d vd* disks, %d character devices", disks,
		    nodes);
	return ok;
}

static bool check_char_path(const struct disk *d)
{
	char buf[64], link[] = "/tmp/vblk-chardev-linkXXXXXX";
	size_t need = strlen(d->chr) + 1;
	bool ok = true;
	int ret, fd;

	ret = iouring_bpf_vblk_char_path(d->blk, buf, need);
	ok &= CHECK(ret == 0 && !strcmp(buf, d->chr), "char_path(%s, %zu bytes): %d '%s'",
		    d->blk, need, ret, ret ? "" : buf);
	ret = iouring_bpf_vblk_char_path(d->blk, buf, need - 1);
	ok &= CHECK(ret == -ENAMETOOLONG, "char_path with %zu bytes: %d, want -ENAMETOOLONG",
		    need - 1, ret);
	/* through a symbolic link, as /dev/disk/by-id/ gives them */
	fd = mkstemp(link);
	if (CHECK(fd >= 0, "mkstemp")) {
		close(fd);
		unlink(link);
		if (CHECK(!symlink(d->blk, link), "symlink: %s", strerror(errno))) {
			ret = iouring_bpf_vblk_char_path(link, buf, sizeof(buf));
			ok &= CHECK(ret == 0 && !strcmp(buf, d->chr), "char_path(link): %d", ret);
			unlink(link);
		}
	}
	ret = iouring_bpf_vblk_char_path(d->chr, buf, sizeof(buf));
	ok &= CHECK(ret == -ENODEV, "char_path(%s): %d, want -ENODEV", d->chr, ret);
	ret = iouring_bpf_vblk_char_path("/dev/null", buf, sizeof(buf));
	ok &= CHECK(ret == -ENODEV, "char_path(/dev/null): %d, want -ENODEV", ret);
	ret = iouring_bpf_vblk_char_path("/proc/self/exe", buf, sizeof(buf));
	ok &= CHECK(ret == -ENODEV, "char_path(regular file): %d, want -ENODEV", ret);
	ret = iouring_bpf_vblk_char_path("/dev/vd-does-not-exist", buf, sizeof(buf));
	ok &= CHECK(ret == -ENOENT, "char_path(missing): %d, want -ENOENT", ret);
	ret = iouring_bpf_vblk_char_path(NULL, buf, sizeof(buf));
	ok &= CHECK(ret == -EINVAL, "char_path(NULL): %d, want -EINVAL", ret);
	return ok;
}

/* a block device that is not a virtio-blk disk: a loop device, if any */
static bool check_other_blockdev(void)
{
	char buf[64];
	struct stat st;
	int ret;

	if (stat("/dev/loop0", &st) || !S_ISBLK(st.st_mode)) {
		printf("no /dev/loop0: the non-virtio block device case is not checked\n");
		return true;
	}
	ret = iouring_bpf_vblk_char_path("/dev/loop0", buf, sizeof(buf));
	return CHECK(ret == -ENODEV, "char_path(/dev/loop0): %d, want -ENODEV", ret);
}

static bool check_commands(const struct disk *d)
{
	unsigned char id[512];
	struct io_uring ring;
	size_t slen = strlen(d->serial);
	bool ok = true;
	int fd, res;

	if (ring_init(&ring, 8, 0))
		return false;
	fd = open(d->chr, O_RDWR | O_CLOEXEC);
	if (!CHECK(fd >= 0, "open %s: %s", d->chr, strerror(errno))) {
		io_uring_queue_exit(&ring);
		return false;
	}
	/* exactly 20 bytes */
	memset(id, 0xa5, sizeof(id));
	res = vblk_get_id(&ring, fd, id, VIRTIO_BLK_ID_BYTES);
	ok &= CHECK(res == 0, "GET_ID(20 bytes): %d", res);
	ok &= CHECK(!memcmp(id, d->serial, slen) && find_not(id + slen, 20 - slen, 0) < 0,
		    "GET_ID says '%.20s', want '%s' padded with NULs", (char *)id, d->serial);
	ok &= CHECK(find_not(id + 20, sizeof(id) - 20, 0xa5) < 0,
		    "GET_ID wrote past 20 bytes (at %zd)", 20 + find_not(id + 20, sizeof(id) - 20, 0xa5));
	/* a bigger buffer: still 20 bytes written, the rest untouched */
	memset(id, 0xa5, sizeof(id));
	res = vblk_get_id(&ring, fd, id, sizeof(id));
	ok &= CHECK(res == 0, "GET_ID(512 bytes): %d", res);
	ok &= CHECK(!memcmp(id, d->serial, slen) && find_not(id + slen, 20 - slen, 0) < 0,
		    "GET_ID says '%.20s'", (char *)id);
	ok &= CHECK(find_not(id + 20, sizeof(id) - 20, 0xa5) < 0,
		    "GET_ID into 512 bytes wrote past 20");
	printf("%s: GET_ID '%.20s'\n", d->chr, (char *)id);

	res = vblk_flush(&ring, fd);
	ok &= CHECK(res == 0, "FLUSH: %d", res);
	printf("%s: FLUSH %d\n", d->chr, res);
	close(fd);
	io_uring_queue_exit(&ring);
	return ok;
}

int test_chardev(void)
{
	struct disk d[2];
	bool ok = true;
	int i;

	arm_alarm(200, "vblk/chardev");
	if (disk_find(SERIAL_POLL, &d[0]) || disk_find(SERIAL_NOPOLL, &d[1]))
		return KSFT_FAIL;
	ok &= check_all_disks();
	for (i = 0; i < 2; i++) {
		ok &= check_char_path(&d[i]);
		ok &= check_commands(&d[i]);
	}
	ok &= check_other_blockdev();
	return ok ? KSFT_PASS : KSFT_FAIL;
}
