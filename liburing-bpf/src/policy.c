// SPDX-License-Identifier: (LGPL-2.1 OR MIT)
/*
 * Any policy object (.bpf.o with an io_uring_bpf_ops map): open it, set its
 * globals by name, give it a ring, load and attach. Names and offsets come
 * from the object's BTF, so no skeleton is needed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liburing-bpf.h"
#include "internal.h"
#include <iouring_bpf/ublk.h>

struct iouring_bpf_policy {
	struct bpf_object *obj;
	struct bpf_map *ops;		/* the io_uring_bpf_ops map */
	struct bpf_link *link;
	bool loaded;
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

const char *iouring_bpf__struct_ops_type(const struct bpf_object *obj,
					 const struct bpf_map *map)
{
	const struct btf *btf = bpf_object__btf(obj);
	const struct btf_type *t;

	if (bpf_map__type(map) != BPF_MAP_TYPE_STRUCT_OPS || !btf)
		return NULL;
	t = btf__type_by_id(btf, bpf_map__btf_value_type_id(map));
	return t ? btf__name_by_offset(btf, t->name_off) : NULL;
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
		char why[128];

		ret = -errno;
		p->obj = NULL;
		if (ret == -ENOENT || ret == -EACCES || ret == -EISDIR)
			return policy_fail(p, ret, "%s: %s", path, strerror(-ret));
		/* libbpf's own codes (4000 and up) are not errnos */
		libbpf_strerror(ret, why, sizeof(why));
		return policy_fail(p, ret <= -4000 ? -EINVAL : ret,
				   "%s: not a BPF ELF object libbpf can open: %s", path, why);
	}
	bpf_object__for_each_map(map, p->obj) {
		const char *type = iouring_bpf__struct_ops_type(p->obj, map);

		if (!type)
			continue;
		/*
		 * Other struct_ops in the object (a ublk policy's
		 * ublk_bpf_ops hook) have their own users: not created here,
		 * and libbpf then does not load their programs either.
		 */
		if (strcmp(type, "io_uring_bpf_ops")) {
			bpf_map__set_autocreate(map, false);
			continue;
		}
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

/* Where a global lives and what its type allows. */
struct global_info {
	struct bpf_map *map;
	__u32 off;
	struct iouring_bpf_global pub;
};

/* Strip typedefs and modifiers off a variable's type; note const/volatile. */
static __u32 global_flags(const struct btf *btf, const struct btf_var_secinfo *vs)
{
	const struct btf_type *var = btf__type_by_id(btf, vs->type);
	const struct btf_type *t = btf__type_by_id(btf, var->type);
	bool is_const = false, is_volatile = false;
	__u32 flags = 0;

	if (btf_var(var)->linkage == BTF_VAR_STATIC)
		flags |= IOURING_BPF_GLOBAL_STATIC;
	while (t && (btf_is_typedef(t) || btf_is_mod(t))) {
		is_const |= btf_is_const(t);
		is_volatile |= btf_is_volatile(t);
		t = btf__type_by_id(btf, t->type);
	}
	if (is_const && !is_volatile)
		flags |= IOURING_BPF_GLOBAL_CONST;
	if (!t)
		return flags;
	if (btf_is_int(t) && btf_int_offset(t) == 0 && btf_int_bits(t) == t->size * 8) {
		flags |= IOURING_BPF_GLOBAL_INT;
		if (btf_int_encoding(t) & BTF_INT_SIGNED)
			flags |= IOURING_BPF_GLOBAL_SIGNED;
	} else if (btf_is_any_enum(t)) {
		flags |= IOURING_BPF_GLOBAL_INT;
		if (btf_kflag(t))
			flags |= IOURING_BPF_GLOBAL_SIGNED;
	}
	return flags;
}

/*
 * Walk the variables of every data section (.rodata, .data, .bss and their
 * named variants); fn returns non-zero to stop the walk with that value.
 */
static int for_each_global(const struct iouring_bpf_policy *p,
			   int (*fn)(const struct global_info *g, void *arg), void *arg)
{
	const struct btf *btf = bpf_object__btf(p->obj);
	struct bpf_map *map;

	if (!btf)
		return 0;
	bpf_object__for_each_map(map, p->obj) {
		const struct btf_type *sec;
		const struct btf_var_secinfo *vs;
		const char *dot;
		int id, ret;

		/* internal maps are named "<obj>.rodata" etc.; the section ".rodata" */
		if (!bpf_map__is_internal(map) || !(dot = strchr(bpf_map__name(map), '.')) ||
		    !strcmp(dot, ".kconfig"))
			continue;
		id = btf__find_by_name_kind(btf, dot, BTF_KIND_DATASEC);
		if (id < 0)
			continue;
		sec = btf__type_by_id(btf, id);
		vs = btf_var_secinfos(sec);
		for (int i = 0; i < btf_vlen(sec); i++, vs++) {
			const struct btf_type *var = btf__type_by_id(btf, vs->type);
			struct global_info g = {
				.map = map,
				.off = vs->offset,
				.pub = {
					.name = btf__name_by_offset(btf, var->name_off),
					.section = dot,
					.size = vs->size,
					.flags = global_flags(btf, vs),
				},
			};

			if (!btf_is_var(var))
				continue;
			if (!strncmp(dot, ".rodata", 7))
				g.pub.flags |= IOURING_BPF_GLOBAL_RODATA;
			ret = fn(&g, arg);
			if (ret)
				return ret;
		}
	}
	return 0;
}

struct find_arg {
	const char *name;
	struct global_info *out;
};

static int match_name(const struct global_info *g, void *arg)
{
	struct find_arg *a = arg;

	if (strcmp(g->pub.name, a->name))
		return 0;
	*a->out = *g;
	return 1;
}

static int find_global(const struct iouring_bpf_policy *p, const char *name,
		       struct global_info *g)
{
	struct find_arg a = { .name = name, .out = g };

	return for_each_global(p, match_name, &a) == 1 ? 0 : -ENOENT;
}

struct list_arg {
	struct iouring_bpf_global *out;
	unsigned int max, n;
};

#define RANGE_PREFIX "__iou_range__"	/* IOURING_BPF_GLOBAL_RANGE() records */

static int add_to_list(const struct global_info *g, void *arg)
{
	struct list_arg *a = arg;

	if (!strncmp(g->pub.name, RANGE_PREFIX, strlen(RANGE_PREFIX)))
		return 0;	/* metadata, not a setting */

	if (a->n < a->max)
		a->out[a->n] = g->pub;
	a->n++;
	return 0;
}

int iouring_bpf_policy_globals(const struct iouring_bpf_policy *p,
			       struct iouring_bpf_global *out, unsigned int max)
{
	struct list_arg a = { .out = out, .max = out ? max : 0 };

	if (!p || !p->obj)
		return -EINVAL;
	for_each_global(p, add_to_list, &a);
	return a.n;
}

/* The bytes of a global: initial value before load, live memory after. */
static void *global_data(const struct global_info *g)
{
	size_t map_size;
	char *data = bpf_map__initial_value(g->map, &map_size);

	return data && g->off + g->pub.size <= map_size ? data + g->off : NULL;
}

/*
 * The value (size bytes, little-endian) of integer global g against its
 * IOURING_BPF_GLOBAL_RANGE() record, if it has one: 0 or -EINVAL.
 */
static int check_range(struct iouring_bpf_policy *p, const struct global_info *g,
		       const void *value)
{
	char rname[256];
	struct global_info r;
	const __s64 *range;
	__u64 u = 0;
	__s64 v;

	if (!(g->pub.flags & IOURING_BPF_GLOBAL_INT) || g->pub.size > 8 ||
	    snprintf(rname, sizeof(rname), RANGE_PREFIX "%s", g->pub.name) >= (int)sizeof(rname) ||
	    find_global(p, rname, &r) || r.pub.size != 2 * sizeof(__s64) ||
	    !(range = global_data(&r)))
		return 0;
	memcpy(&u, value, g->pub.size);	/* little-endian: the low bytes */
	if ((g->pub.flags & IOURING_BPF_GLOBAL_SIGNED) && g->pub.size < 8 &&
	    (u >> (g->pub.size * 8 - 1)) & 1)
		u |= ~0ULL << (g->pub.size * 8);	/* sign-extend */
	v = (__s64)u;
	if (!(g->pub.flags & IOURING_BPF_GLOBAL_SIGNED) && g->pub.size == 8 && v < 0)
		return policy_fail(p, -EINVAL, "global '%s' must be %lld..%lld, not %llu",
				   g->pub.name, (long long)range[0], (long long)range[1],
				   (unsigned long long)u);
	if (v < range[0] || v > range[1])
		return policy_fail(p, -EINVAL, "global '%s' must be %lld..%lld, not %lld",
				   g->pub.name, (long long)range[0], (long long)range[1],
				   (long long)v);
	return 0;
}

/* Before load: every ranged global's value (default or set) is in range. */
static int check_range_record(const struct global_info *r, void *arg)
{
	struct iouring_bpf_policy *p = arg;
	struct global_info g;
	const void *data;

	if (strncmp(r->pub.name, RANGE_PREFIX, strlen(RANGE_PREFIX)) ||
	    find_global(p, r->pub.name + strlen(RANGE_PREFIX), &g) || !(data = global_data(&g)))
		return 0;
	return check_range(p, &g, data);
}

int iouring_bpf_policy_set_global(struct iouring_bpf_policy *p, const char *name,
				  const void *value, size_t size)
{
	struct global_info g;
	void *data;
	int ret;

	if (!p || !p->obj || !name || !value)
		return -EINVAL;
	if (find_global(p, name, &g))
		return policy_fail(p, -ENOENT, "the policy has no global '%s'", name);
	if (g.pub.flags & IOURING_BPF_GLOBAL_CONST)
		return policy_fail(p, -EPERM,
				   "global '%s' is const, not const volatile: its value is compiled into the program",
				   name);
	if (g.pub.flags & IOURING_BPF_GLOBAL_STATIC)
		return policy_fail(p, -EPERM, "global '%s' is static: private to the policy",
				   name);
	if (p->loaded && (g.pub.flags & IOURING_BPF_GLOBAL_RODATA))
		return policy_fail(p, -EPERM, "global '%s' is read-only once the policy is loaded",
				   name);
	if (size != g.pub.size)
		return policy_fail(p, -EINVAL, "global '%s' is %u bytes, not %zu", name,
				   g.pub.size, size);
	data = global_data(&g);
	if (!data)
		return policy_fail(p, -EINVAL, "global '%s' has no memory to write", name);
	ret = check_range(p, &g, value);
	if (ret)
		return ret;
	memcpy(data, value, size);
	return 0;
}

int iouring_bpf_policy_get_global(const struct iouring_bpf_policy *p, const char *name,
				  void *value, size_t size)
{
	struct global_info g;
	const void *data;

	if (!p || !p->obj || !name || !value)
		return -EINVAL;
	if (find_global(p, name, &g))
		return -ENOENT;
	if (size != g.pub.size)
		return -EINVAL;
	data = global_data(&g);
	if (!data)
		return -ENODATA;
	memcpy(value, data, size);
	return 0;
}

void *iouring_bpf_policy_global_ptr(const struct iouring_bpf_policy *p, const char *name,
				    size_t *size)
{
	struct global_info g;
	void *data;

	if (!p || !p->obj || !name || find_global(p, name, &g)) {
		errno = ENOENT;
		return NULL;
	}
	if ((g.pub.flags & IOURING_BPF_GLOBAL_RODATA) && p->loaded) {
		errno = EPERM;	/* mapped read-only: a write would fault */
		return NULL;
	}
	if (size)
		*size = g.pub.size;
	data = global_data(&g);
	if (!data)
		errno = ENODATA;
	return data;
}

/* An integer from text: decimal, 0x hex, 0 octal; true/false for 1-byte. */
static int parse_int(const char *text, bool is_signed, __u32 size, __u64 *out)
{
	char *end;

	if (size == 1 && !strcmp(text, "true"))
		return *out = 1, 0;
	if (size == 1 && !strcmp(text, "false"))
		return *out = 0, 0;
	if (!*text || isspace((unsigned char)*text))
		return -EINVAL;
	errno = 0;
	if (is_signed) {
		long long v = strtoll(text, &end, 0);
		long long max = size == 8 ? LLONG_MAX : (1LL << (size * 8 - 1)) - 1;

		if (*end || errno)
			return errno ? -ERANGE : -EINVAL;
		if (v > max || v < -max - 1)
			return -ERANGE;
		*out = (__u64)v;
	} else {
		unsigned long long v;

		if (*text == '-')
			return -ERANGE;
		v = strtoull(text, &end, 0);
		if (*end || errno)
			return errno ? -ERANGE : -EINVAL;
		if (size < 8 && v >> (size * 8))
			return -ERANGE;
		*out = v;
	}
	return 0;
}

int iouring_bpf_policy_set_global_str(struct iouring_bpf_policy *p, const char *name,
				      const char *text)
{
	struct global_info g;
	__u64 v;
	int ret;

	if (!p || !p->obj || !name || !text)
		return -EINVAL;
	if (find_global(p, name, &g))
		return policy_fail(p, -ENOENT, "the policy has no global '%s'", name);
	if (!(g.pub.flags & IOURING_BPF_GLOBAL_INT) ||
	    (g.pub.size != 1 && g.pub.size != 2 && g.pub.size != 4 && g.pub.size != 8))
		return policy_fail(p, -EINVAL,
				   "global '%s' is not an integer (%u bytes): set it from C instead",
				   name, g.pub.size);
	ret = parse_int(text, g.pub.flags & IOURING_BPF_GLOBAL_SIGNED, g.pub.size, &v);
	if (ret == -ERANGE)
		return policy_fail(p, ret, "'%s' does not fit global '%s' (%s %u-bit integer)",
				   text, name,
				   g.pub.flags & IOURING_BPF_GLOBAL_SIGNED ? "signed" : "unsigned",
				   g.pub.size * 8);
	if (ret)
		return policy_fail(p, ret, "'%s' is not an integer (global '%s')", text, name);
	/* little-endian x86-64 and BPF: the low bytes hold the value */
	return iouring_bpf_policy_set_global(p, name, &v, g.pub.size);
}

/* Bytes per SQE of a ring: its geometry's word, else its setup flags. */
static __u32 ring_sqe_size(const struct iouring_bpf_ring *ring)
{
	if (ring->geom.size >= IOURING_BPF_GEOMETRY_SIZE_V3 && ring->geom.sqe_size)
		return ring->geom.sqe_size;
	return ring->params.flags & IORING_SETUP_SQE128 ? 128 : 64;
}

int iouring_bpf_policy_set_ring(struct iouring_bpf_policy *p,
				const struct iouring_bpf_ring *ring)
{
	const struct btf *btf;
	const struct btf_type *t;
	const struct btf_member *m;
	struct global_info geom;
	size_t size;
	char *data;
	int ret;

	if (!p || !p->ops || !ring)
		return -EINVAL;
	/*
	 * iou_geom is optional: a policy may compute offsets its own way. Its
	 * layout only grows at the end: a policy built against an older
	 * header gets the part it has, one built against a newer one (bigger
	 * than this library fills) is refused, and so is an older one that
	 * cannot learn the SQE size when it is not 64.
	 */
	ret = find_global(p, "iou_geom", &geom);
	if (!ret) {
		struct iouring_bpf_geometry g = ring->geom;

		if (geom.pub.size < IOURING_BPF_GEOMETRY_SIZE_V1 ||
		    geom.pub.size > sizeof(ring->geom))
			return policy_fail(p, -EINVAL,
					   "global 'iou_geom' is %u bytes, this liburing-bpf fills %u to %zu%s",
					   geom.pub.size, IOURING_BPF_GEOMETRY_SIZE_V1,
					   sizeof(ring->geom),
					   geom.pub.size > sizeof(ring->geom) ?
					   ": the policy was built against a newer liburing-bpf, rebuild it against this one's headers" :
					   ": not a struct iouring_bpf_geometry");
		/* a geometry filled by hand may lack sqe_size: the setup flags know */
		g.sqe_size = ring_sqe_size(ring);
		/* an older policy's iou_sqe_at() steps 64 bytes: on 128-byte SQEs
		 * the kernel would read its SQEs at the wrong places */
		if (g.sqe_size != 64 && geom.pub.size < IOURING_BPF_GEOMETRY_SIZE_V3)
			return policy_fail(p, -EOPNOTSUPP,
					   "the ring has %u-byte SQEs (IORING_SETUP_SQE128); global "
					   "'iou_geom' (%u bytes) has no sqe_size, so the policy writes "
					   "64-byte SQEs: rebuild it against this liburing-bpf's headers",
					   g.sqe_size, geom.pub.size);
		ret = iouring_bpf_policy_set_global(p, "iou_geom", &g, geom.pub.size);
		if (ret)
			return ret;
	}
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
	if (!p->loaded) {
		ret = for_each_global(p, check_range_record, p);
		if (ret)
			return ret;
	}
	ret = bpf_object__load(p->obj);
	if (ret)
		return policy_fail(p, ret, "loading failed: %s (libbpf prints the verifier log)",
				   strerror(-ret));
	p->loaded = true;
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

int iouring_bpf_policy_run(struct iouring_bpf_policy *p, struct iouring_bpf_ring *ring,
			   int *exit_status)
{
	int ret, status = 0;

	if (!p || !ring)
		return -EINVAL;
	if (!p->link)
		return policy_fail(p, -ENOTCONN, "the policy is not attached to a ring");
	/* a signal ends the wait: the caller decides whether to go on (a
	 * SIGTERM handler must be able to stop a run) */
	ret = iouring_bpf_ring_run(ring);
	if (ret == -EINTR)
		return policy_fail(p, ret, "interrupted by a signal; the policy is still attached "
				   "and a further run goes on where it stopped");
	if (ret < 0)
		return policy_fail(p, ret, "io_uring_enter: %s", strerror(-ret));
	/* a policy without iou_exit_status reports 0 */
	if (exit_status) {
		if (iouring_bpf_policy_get_global(p, "iou_exit_status", &status, sizeof(status)))
			status = 0;
		*exit_status = status;
	}
	return 0;
}

/*
 * Which chunk_sectors a device served by this ublk policy may have. The
 * rules, against what Linux 6.12 itself accepts for a device that is not
 * zoned (ublk_validate_params() checks chunk_sectors for zoned devices only):
 *  - a multiple of IOU_UBLK_CHUNK_ALIGN (4096): chunk_sectors counts 512-byte
 *    sectors, so a chunk of 1000 bytes would silently become 512; and the
 *    devices have 4 KiB physical blocks, which a chunk boundary must not cut
 *    (blk_stack_limits() drops such a chunk_sectors for a device stacked on
 *    top, and requests would end inside a block);
 *  - at most max_io_bytes, the largest request. Our choice, not the
 *    kernel's (it cuts requests at a larger chunk's boundaries too): it
 *    catches a mistyped unit (64 << 20 for 64 << 10) at add time;
 *  - not necessarily a power of two: only zoned devices need one; for the
 *    rest the block layer divides when it is not (blk_boundary_sectors_left())
 *    and stacks chunks by gcd, as md and dm-stripe allow such chunks too.
 */
int iouring_bpf_ublk_policy_chunk(struct iouring_bpf_policy *p, unsigned int max_io_bytes,
				  __u32 *chunk_bytes)
{
	const __u32 want = IOURING_BPF_GLOBAL_INT | IOURING_BPF_GLOBAL_RODATA;
	struct global_info g;
	const __u32 *data;
	__u32 chunk;

	if (!p || !p->obj || !chunk_bytes || !max_io_bytes)
		return -EINVAL;
	*chunk_bytes = 0;
	if (find_global(p, IOU_UBLK_CHUNK_GLOBAL, &g))
		return 0;	/* no declaration: no chunk */
	if (g.pub.size != sizeof(__u32) ||
	    (g.pub.flags & (want | IOURING_BPF_GLOBAL_SIGNED | IOURING_BPF_GLOBAL_CONST |
			    IOURING_BPF_GLOBAL_STATIC)) != want)
		return policy_fail(p, -EINVAL,
				   "global '%s' is not a const volatile __u32 in .rodata: declare "
				   "it with IOU_UBLK_CHUNK_BYTES() (iouring_bpf/ublk.bpf.h)",
				   IOU_UBLK_CHUNK_GLOBAL);
	data = global_data(&g);
	if (!data)
		return policy_fail(p, -EINVAL, "global '%s' has no value to read",
				   IOU_UBLK_CHUNK_GLOBAL);
	memcpy(&chunk, data, sizeof(chunk));
	if (!chunk)
		return policy_fail(p, -EINVAL, "IOU_UBLK_CHUNK_BYTES(0): a chunk of 0 bytes (leave "
				   "the declaration out for a map without chunks)");
	if (chunk % IOU_UBLK_CHUNK_ALIGN)
		return policy_fail(p, -EINVAL, "IOU_UBLK_CHUNK_BYTES(%u): the chunk is not a "
				   "multiple of %u bytes", chunk, IOU_UBLK_CHUNK_ALIGN);
	if (chunk > max_io_bytes)
		return policy_fail(p, -EINVAL, "IOU_UBLK_CHUNK_BYTES(%u): the chunk is larger than "
				   "the device's largest request (%u bytes)", chunk, max_io_bytes);
	*chunk_bytes = chunk;
	return 0;
}

struct bpf_object *iouring_bpf_policy_object(const struct iouring_bpf_policy *p)
{
	return p ? p->obj : NULL;
}

struct bpf_link *iouring_bpf_policy_link(const struct iouring_bpf_policy *p)
{
	return p ? p->link : NULL;
}

void iouring_bpf_policy_close(struct iouring_bpf_policy *p)
{
	if (!p)
		return;
	bpf_link__destroy(p->link);
	bpf_object__close(p->obj);
	free(p);
}

#ifndef IOURING_BPF_POLICY_INSTALL_DIR
#define IOURING_BPF_POLICY_INSTALL_DIR ""
#endif
#ifndef IOURING_BPF_POLICY_REL_DIR
#define IOURING_BPF_POLICY_REL_DIR ""
#endif

/* NAME in DIR: 0 and its real path in OUT, else -errno */
static int policy_in(const char *dir, const char *name, char *out, size_t size)
{
	char path[PATH_MAX], real[PATH_MAX];

	if (!dir || !*dir)
		return -ENOENT;
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (access(path, R_OK) || !realpath(path, real))
		return -errno;
	if (strlen(real) >= size)
		return -ENAMETOOLONG;
	strcpy(out, real);
	return 0;
}

struct policy_search {
	const char *name;
	char *path;
	size_t size;
	char tried[4 * PATH_MAX];
};

/* one directory of the search: 0 found, -ENOENT go on, else the error */
static int policy_search_dir(struct policy_search *ps, const char *dir)
{
	size_t len = strlen(ps->tried);
	struct stat st;

	/* BINDIR/iouring-bpf is the tool, not a directory */
	if (!dir || !*dir || (!stat(dir, &st) && !S_ISDIR(st.st_mode)))
		return -ENOENT;
	snprintf(ps->tried + len, sizeof(ps->tried) - len, "%s%s", len ? ":" : "", dir);
	return policy_in(dir, ps->name, ps->path, ps->size);
}

/*
 * Installed policies live in LIBDIR/iouring-bpf. The library finds them
 * relative to the file it was loaded from (a shared object in LIBDIR, or a
 * program in BINDIR it was linked into), so an install under any prefix
 * works, and then in the directory it was configured for.
 */
int iouring_bpf_policy_find(const char *name, char *path, size_t size)
{
	struct policy_search ps = { .name = name, .path = path, .size = size };
	char self[PATH_MAX], dir[PATH_MAX + sizeof(IOURING_BPF_POLICY_REL_DIR) + 16];
	Dl_info info;
	int ret;

	if (!name || !*name || strchr(name, '/') || !path || !size)
		return -EINVAL;
	ret = policy_search_dir(&ps, getenv("IOURING_BPF_POLICY_DIR"));
	/*
	 * A program this library is linked into may be named as it was run
	 * ("iouring-bpf", found on PATH): its file is /proc/self/exe then.
	 */
	if (ret == -ENOENT && dladdr((void *)iouring_bpf_policy_find, &info) && info.dli_fname &&
	    realpath(strchr(info.dli_fname, '/') ? info.dli_fname : "/proc/self/exe", self) &&
	    strrchr(self, '/')) {
		*strrchr(self, '/') = 0;
		snprintf(dir, sizeof(dir), "%s/iouring-bpf", self);
		ret = policy_search_dir(&ps, dir);
		if (ret == -ENOENT && IOURING_BPF_POLICY_REL_DIR[0]) {
			snprintf(dir, sizeof(dir), "%s/%s", self, IOURING_BPF_POLICY_REL_DIR);
			if (realpath(dir, self))
				ret = policy_search_dir(&ps, self);
		}
	}
	if (ret == -ENOENT && (!realpath(IOURING_BPF_POLICY_INSTALL_DIR, self) ||
			       !strstr(ps.tried, self)))
		ret = policy_search_dir(&ps, IOURING_BPF_POLICY_INSTALL_DIR);
	/* not found: PATH says where it was looked for */
	if (ret == -ENOENT)
		snprintf(path, size, "%s", ps.tried);
	return ret;
}
