// SPDX-License-Identifier: (LGPL-2.1 OR MIT)
/*
 * Any policy object (.bpf.o with an io_uring_bpf_ops map): open it, set its
 * globals by name, give it a ring, load and attach. Names and offsets come
 * from the object's BTF, so no skeleton is needed.
 */
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "liburing-bpf.h"

struct iouring_bpf_policy {
	struct bpf_object *obj;
	struct bpf_map *ops;		/* the io_uring_bpf_ops map */
	struct bpf_link *link;
	char err[256];
};

static int policy_fail(struct iouring_bpf_policy *p, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int policy_fail(struct iouring_bpf_policy *p, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->err, sizeof(p->err), fmt, ap);
	va_end(ap);
	return err;
}

const char *iouring_bpf_policy_strerror(const struct iouring_bpf_policy *p)
{
	return p && p->err[0] ? p->err : "no error";
}

static bool is_loop_ops(const struct bpf_object *obj, const struct bpf_map *map)
{
	const struct btf *btf = bpf_object__btf(obj);
	const struct btf_type *t;

	if (bpf_map__type(map) != BPF_MAP_TYPE_STRUCT_OPS || !btf)
		return false;
	t = btf__type_by_id(btf, bpf_map__btf_value_type_id(map));
	return t && !strcmp(btf__name_by_offset(btf, t->name_off), "io_uring_bpf_ops");
}

int iouring_bpf_policy_open(const char *path, struct iouring_bpf_policy **out)
{
	struct iouring_bpf_policy *p = calloc(1, sizeof(*p));
	struct bpf_map *map;
	int ret;

	*out = p;
	if (!p)
		return -ENOMEM;
	p->obj = bpf_object__open_file(path, NULL);
	if (!p->obj) {
		ret = -errno;
		p->obj = NULL;
		return policy_fail(p, ret, "%s: not a BPF object libbpf can open: %s", path,
				   strerror(-ret));
	}
	bpf_object__for_each_map(map, p->obj) {
		if (!is_loop_ops(p->obj, map))
			continue;
		if (p->ops)
			return policy_fail(p, -EINVAL,
					   "%s: more than one io_uring_bpf_ops map (%s, %s)", path,
					   bpf_map__name(p->ops), bpf_map__name(map));
		p->ops = map;
	}
	if (!p->ops)
		return policy_fail(p, -ENOENT, "%s: no io_uring_bpf_ops map", path);
	return 0;
}

/* The global called name: its map and offset in the map's value. */
static int find_global(struct iouring_bpf_policy *p, const char *name, struct bpf_map **mapp,
		       __u32 *off, __u32 *size)
{
	const struct btf *btf = bpf_object__btf(p->obj);
	struct bpf_map *map;

	bpf_object__for_each_map(map, p->obj) {
		const struct btf_type *sec;
		const struct btf_var_secinfo *vs;
		int id;

		if (!bpf_map__is_internal(map))
			continue;
		/* internal maps are named "<obj>.rodata" etc.; the section is ".rodata" */
		const char *dot = strrchr(bpf_map__name(map), '.');

		id = dot ? btf__find_by_name_kind(btf, dot, BTF_KIND_DATASEC) : -ENOENT;
		if (id < 0)
			continue;
		sec = btf__type_by_id(btf, id);
		vs = btf_var_secinfos(sec);
		for (int i = 0; i < btf_vlen(sec); i++, vs++) {
			const struct btf_type *var = btf__type_by_id(btf, vs->type);

			if (strcmp(btf__name_by_offset(btf, var->name_off), name))
				continue;
			*mapp = map;
			*off = vs->offset;
			*size = vs->size;
			return 0;
		}
	}
	return -ENOENT;
}

int iouring_bpf_policy_set_global(struct iouring_bpf_policy *p, const char *name,
				  const void *value, size_t size)
{
	struct bpf_map *map;
	__u32 off, vsize;
	size_t map_size;
	char *data;

	if (!p || !p->obj || !name || !value)
		return -EINVAL;
	if (find_global(p, name, &map, &off, &vsize))
		return policy_fail(p, -ENOENT, "the policy has no global '%s'", name);
	if (size != vsize)
		return policy_fail(p, -EINVAL, "global '%s' is %u bytes, not %zu", name, vsize,
				   size);
	data = bpf_map__initial_value(map, &map_size);
	if (!data || off + size > map_size)
		return policy_fail(p, -EINVAL, "global '%s' cannot be set (already loaded?)",
				   name);
	memcpy(data + off, value, size);
	return 0;
}

int iouring_bpf_policy_set_ring(struct iouring_bpf_policy *p,
				const struct iouring_bpf_ring *ring)
{
	const struct btf *btf;
	const struct btf_type *t;
	const struct btf_member *m;
	size_t size;
	char *data;
	int ret;

	if (!p || !p->ops || !ring)
		return -EINVAL;
	/* iou_geom is optional: a policy may compute offsets its own way */
	ret = iouring_bpf_policy_set_global(p, "iou_geom", &ring->geom, sizeof(ring->geom));
	if (ret && ret != -ENOENT)
		return ret;
	p->err[0] = 0;

	/* ring_fd is read when the map is loaded: write it into its value */
	btf = bpf_object__btf(p->obj);
	t = btf__type_by_id(btf, bpf_map__btf_value_type_id(p->ops));
	data = bpf_map__initial_value(p->ops, &size);
	m = btf_members(t);
	for (int i = 0; i < btf_vlen(t); i++, m++) {
		if (strcmp(btf__name_by_offset(btf, m->name_off), "ring_fd"))
			continue;
		if (!data || m->offset / 8 + sizeof(__u32) > size)
			break;
		*(__u32 *)(data + m->offset / 8) = ring->fd;
		return 0;
	}
	return policy_fail(p, -EINVAL, "map %s has no ring_fd member to set",
			   bpf_map__name(p->ops));
}

int iouring_bpf_policy_load(struct iouring_bpf_policy *p)
{
	int ret;

	if (!p || !p->obj)
		return -EINVAL;
	ret = bpf_object__load(p->obj);
	if (ret)
		return policy_fail(p, ret, "loading failed: %s (libbpf prints the verifier log)",
				   strerror(-ret));
	return 0;
}

int iouring_bpf_policy_attach(struct iouring_bpf_policy *p)
{
	if (!p || !p->ops)
		return -EINVAL;
	p->link = bpf_map__attach_struct_ops(p->ops);
	if (!p->link) {
		int ret = -errno;

		return policy_fail(p, ret, "attaching %s: %s", bpf_map__name(p->ops),
				   ret == -EOPNOTSUPP ? "the ring lacks DEFER_TASKRUN or is SQPOLL/IOPOLL" :
				   ret == -EBUSY ? "the ring already has a policy" :
				   strerror(-ret));
	}
	return 0;
}

struct bpf_object *iouring_bpf_policy_object(const struct iouring_bpf_policy *p)
{
	return p ? p->obj : NULL;
}

void iouring_bpf_policy_close(struct iouring_bpf_policy *p)
{
	if (!p)
		return;
	bpf_link__destroy(p->link);
	bpf_object__close(p->obj);
	free(p);
}
