// SPDX-License-Identifier: (LGPL-2.1 OR MIT)
/*
 * The kernel path of a ublk policy: its ublk_bpf_ops map
 * (IOURING_BPF_UBLK_HOOK() in iouring_bpf/ublk.bpf.h) attached to a device,
 * so that the driver serves requests in queue_rq() with the policy's
 * iou_ublk_map(), and the daemon sees only what the program hands over.
 *
 * A second instance of the policy object, separate from the queues' ones:
 * only the hook map is created (the io_uring_bpf_ops map is not), its
 * read-only iou_ublk is the device's geometry, and the struct_ops fields
 * dev_fd (the device's open /dev/ublkcN), nr_files and fds[] tell the
 * kernel the device and the backing files, which it takes when the link is
 * created (attaching needs CAP_SYS_ADMIN, as every ublk control command).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "liburing-bpf.h"
#include "internal.h"

#define HOOK_OPS_TYPE	"ublk_bpf_ops"
#define HOOK_MAX_FILES	4	/* UBLK_BPF_MAX_FILES in the driver */

struct iouring_bpf_ublk_hook {
	struct iouring_bpf_policy *policy;
	struct bpf_map *ops;
	struct bpf_link *link;
	char err[512];
};

static int hook_fail(struct iouring_bpf_ublk_hook *h, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int hook_fail(struct iouring_bpf_ublk_hook *h, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(h->err, sizeof(h->err), fmt, ap);
	va_end(ap);
	return err;
}

const char *iouring_bpf_ublk_hook_strerror(const struct iouring_bpf_ublk_hook *h)
{
	return h && h->err[0] ? h->err : "no error";
}

/* Byte offset of member name in the struct_ops value type, or -1. */
static int member_offset(const struct bpf_object *obj, const struct bpf_map *map,
			 const char *name)
{
	const struct btf *btf = bpf_object__btf(obj);
	const struct btf_type *t = btf__type_by_id(btf, bpf_map__btf_value_type_id(map));
	const struct btf_member *m = btf_members(t);

	for (int i = 0; i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(btf, m->name_off), name))
			return btf_member_bit_offset(t, i) / 8;
	return -1;
}

static const char *attach_error(int err)
{
	switch (err) {
	case -ENODEV:
		return "the ublk device is being deleted";
	case -EPERM:
		return "attaching needs CAP_SYS_ADMIN, and the device must not be one an "
		       "unprivileged user created";
	case -EBUSY:
		return "the device already has a ublk_bpf_ops program";
	case -EOPNOTSUPP:
		return "the device is zoned";
	case -EBADF:
		return "a backing file descriptor is not open";
	case -EINVAL:
		return "the descriptor naming the device is not a ublk char device (/dev/ublkcN), "
		       "or a backing file is neither a regular file nor a block device, or is open "
		       "O_DIRECT on storage whose logical block is larger than the device's";
	case -ELOOP:
		return "a backing file is the device itself, a device-mapper or md device stacked "
		       "on it, or lives on a file system on one of these";
	case -EACCES:
		return "a backing file is not open for reading and writing";
	case -E2BIG:
		return "more backing files than the kernel takes";
	default:
		return strerror(-err);
	}
}

/* 0 if fd is an open char device; the kernel checks that it is ublk's. */
static int check_char_fd(int fd)
{
	struct stat st;

	if (fd < 0 || fstat(fd, &st))
		return -EBADF;
	return S_ISCHR(st.st_mode) ? 0 : -EINVAL;
}

int iouring_bpf_ublk_hook_attach(const char *policy, int char_fd,
				 const struct iouring_bpf_ublk_geometry *geom,
				 const int *fds, unsigned int nr_fds,
				 struct iouring_bpf_ublk_hook **out)
{
	struct iouring_bpf_ublk_hook *h = calloc(1, sizeof(*h));
	struct iouring_bpf_ublk_geometry *g;
	struct bpf_object *obj;
	struct bpf_map *map;
	size_t size = 0;
	int off_dev, off_nr, off_fds, ret;
	char *data;

	*out = h;
	if (!h)
		return -ENOMEM;
	if (!policy || !geom || (nr_fds && !fds))
		return hook_fail(h, -EINVAL, "no policy, geometry or files given");
	ret = check_char_fd(char_fd);
	if (ret)
		return hook_fail(h, ret, "descriptor %d is not an open ublk char device "
				 "(/dev/ublkcN): the device is named by the one its server opened",
				 char_fd);
	if (nr_fds > HOOK_MAX_FILES || nr_fds != geom->nr_files)
		return hook_fail(h, -EINVAL, "%u backing files (at most %d, and as many as the "
				 "geometry's %u)", nr_fds, HOOK_MAX_FILES, geom->nr_files);
	ret = iouring_bpf_policy_open(policy, &h->policy);
	if (ret)
		return hook_fail(h, ret, "%s", iouring_bpf_policy_strerror(h->policy));
	obj = iouring_bpf_policy_object(h->policy);
	bpf_object__for_each_map(map, obj) {
		const char *type = iouring_bpf__struct_ops_type(obj, map);

		if (!type)
			continue;
		if (strcmp(type, HOOK_OPS_TYPE)) {
			bpf_map__set_autocreate(map, false);	/* the queues' loop */
			continue;
		}
		if (h->ops)
			return hook_fail(h, -EINVAL, "%s: more than one ublk_bpf_ops map (%s, %s)",
					 policy, bpf_map__name(h->ops), bpf_map__name(map));
		h->ops = map;
	}
	if (!h->ops)
		return hook_fail(h, -ENOENT, "%s: no ublk_bpf_ops map: the policy does not "
				 "declare IOURING_BPF_UBLK_HOOK() (iouring_bpf/ublk.bpf.h)", policy);
	/* iouring_bpf_policy_open() turned every other struct_ops off */
	bpf_map__set_autocreate(h->ops, true);

	g = iouring_bpf_policy_global_ptr(h->policy, "iou_ublk", &size);
	if (!g || size != sizeof(*g))
		return hook_fail(h, -EINVAL, "%s: no global 'iou_ublk' of type struct "
				 "iouring_bpf_ublk_geometry: not a ublk policy", policy);
	*g = *geom;

	data = bpf_map__initial_value(h->ops, &size);
	off_dev = member_offset(obj, h->ops, "dev_fd");
	off_nr = member_offset(obj, h->ops, "nr_files");
	off_fds = member_offset(obj, h->ops, "fds");
	if (!data || off_dev < 0 || off_nr < 0 || off_fds < 0 ||
	    (size_t)off_fds + HOOK_MAX_FILES * sizeof(int) > size)
		return hook_fail(h, -EINVAL, "%s: %s has not the layout this library knows "
				 "(dev_fd, nr_files, fds[%d]): a kernel older than this library?",
				 policy, bpf_map__name(h->ops), HOOK_MAX_FILES);
	memcpy(data + off_dev, &char_fd, sizeof(int));
	memcpy(data + off_nr, &nr_fds, sizeof(__u32));
	for (unsigned int i = 0; i < HOOK_MAX_FILES; i++) {
		int fd = i < nr_fds ? fds[i] : -1;

		memcpy(data + off_fds + i * sizeof(int), &fd, sizeof(int));
	}

	ret = bpf_object__load(obj);
	if (ret) {
		ret = ret <= -4000 ? -EINVAL : ret;
		return hook_fail(h, ret, "%s: loading the ublk_bpf_ops program: %s%s", policy,
				 strerror(-ret), ret == -EPERM ? " (loading BPF needs root)" :
				 ret == -EINVAL ? " (a sleepable queue_rq, struct_ops.s, is refused: "
				 "it runs where requests are queued)" : "");
	}
	h->link = bpf_map__attach_struct_ops(h->ops);
	if (!h->link) {
		ret = -errno;
		for (unsigned int i = 0; ret == -EINVAL && i < nr_fds; i++) {
			int fl = fcntl(fds[i], F_GETFL);

			if (fl >= 0 && (fl & O_APPEND))
				return hook_fail(h, ret, "attaching %s to ublk device %u: backing file "
						 "%u is open O_APPEND: its writes would land at the end "
						 "of the file", bpf_map__name(h->ops), geom->dev_id, i);
		}
		return hook_fail(h, ret, "attaching %s to ublk device %u: %s", bpf_map__name(h->ops),
				 geom->dev_id, attach_error(ret));
	}
	return 0;
}

void iouring_bpf_ublk_hook_detach(struct iouring_bpf_ublk_hook *h)
{
	if (!h)
		return;
	/* waits in the kernel for the requests the program took */
	bpf_link__destroy(h->link);
	iouring_bpf_policy_close(h->policy);
	free(h);
}

struct bpf_object *iouring_bpf_ublk_hook_object(const struct iouring_bpf_ublk_hook *h)
{
	return h ? iouring_bpf_policy_object(h->policy) : NULL;
}
