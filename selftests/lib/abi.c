// SPDX-License-Identifier: GPL-2.0
/*
 * lib/abi (host): liburing-bpf's public structures can grow without
 * breaking what was built against them.
 * - struct iouring_bpf_geometry only grows at the end; layout 1 (48 bytes)
 *   is a prefix of the current one, which carries its size and version;
 * - iouring_bpf_policy_set_ring() fills a policy built against an older,
 *   smaller geometry (layout 1) with the part it has, and refuses one from
 *   a newer library (bigger than it can fill) with -EINVAL and a message;
 * - layout 3 carries sqe_size: a ring with 128-byte SQEs goes only to a
 *   policy whose iou_geom has it (layouts 1 and 2 get -EOPNOTSUPP and a
 *   message), and a current policy learns 128 even from a ring whose
 *   geometry was filled by hand without it (the setup flags say SQE128);
 * - struct iouring_bpf_ring and struct iouring_bpf_ublk_dev keep their size
 *   (reserved / opaque private room), so callers' allocations stay valid.
 *
 * usage: abi GEOM_V1.bpf.o GEOM_FUTURE.bpf.o CURRENT.bpf.o GEOM_V2.bpf.o
 */
#include <stddef.h>
#include <stdint.h>
#include <liburing-bpf.h>
#include "selftest.h"

/* The sizes this ABI promises (x86-64); a change here is an ABI break. */
#define RING_SIZE	280
#define UBLK_DEV_SIZE	(8 + sizeof(struct ublksrv_ctrl_dev_info) + 512)

static struct iouring_bpf_ring fake_ring(void)
{
	struct iouring_bpf_ring r = { .fd = 7 };

	r.geom = (struct iouring_bpf_geometry){
		.sq_entries = 16, .cq_entries = 64, .cq_head = 0x40, .cq_tail = 0x44,
		.cq_cqes = 0x80, .cq_overflow = 0x4c, .cq_region_size = 4096,
		.sq_region_size = 1024, .mem_region_size = 0,
		.size = sizeof(struct iouring_bpf_geometry),
		.version = IOURING_BPF_GEOMETRY_VERSION,
		.sqe_size = 64,
	};
	return r;
}

/* A ring with 128-byte SQEs, as iouring_bpf_ring_init() describes one. */
static struct iouring_bpf_ring fake_ring128(void)
{
	struct iouring_bpf_ring r = fake_ring();

	r.params.flags = IORING_SETUP_SQE128;
	r.geom.sq_region_size *= 2;
	r.geom.sqe_size = 128;
	return r;
}

/* The same, its geometry filled by hand in layout 2 (no sqe_size). */
static struct iouring_bpf_ring fake_ring128_v2(void)
{
	struct iouring_bpf_ring r = fake_ring128();

	r.geom.size = IOURING_BPF_GEOMETRY_SIZE_V2;
	r.geom.version = 2;
	r.geom.sqe_size = 0;
	return r;
}

static int set_ring_on(const char *path, struct iouring_bpf_ring r, int want,
		       size_t want_size, const char *want_msg, __u32 want_sqe_size)
{
	struct iouring_bpf_policy *p = NULL;
	size_t size = 0;
	const void *geom;
	int ok = 1, ret;

	if (!CHECK_OK(iouring_bpf_policy_open(path, &p), iouring_bpf_policy_strerror(p)))
		return 0;
	ret = iouring_bpf_policy_set_ring(p, &r);
	ok &= CHECK(ret == want, "%s: set_ring returned %d, want %d: %s", path, ret, want,
		    iouring_bpf_policy_strerror(p));
	if (want_msg)
		ok &= CHECK(strstr(iouring_bpf_policy_strerror(p), want_msg), "%s: message \"%s\"",
			    path, iouring_bpf_policy_strerror(p));
	if (!want) {
		geom = iouring_bpf_policy_global_ptr(p, "iou_geom", &size);
		if (want_sqe_size)
			r.geom.sqe_size = want_sqe_size;	/* what set_ring fills in */
		ok &= CHECK(geom && size == want_size, "%s: iou_geom is %zu bytes, want %zu", path,
			    size, want_size) &&
		      CHECK(!memcmp(geom, &r.geom, want_size), "%s: iou_geom not filled", path);
	}
	printf("%s: set_ring %d%s%s\n", path, ret, ret ? ": " : "",
	       ret ? iouring_bpf_policy_strerror(p) : "");
	iouring_bpf_policy_close(p);
	return ok;
}

static int set_ring(const char *path, int want, size_t want_size, const char *want_msg)
{
	return set_ring_on(path, fake_ring(), want, want_size, want_msg, 0);
}

int main(int argc, char **argv)
{
	int ok = 1;

	if (argc != 5) {
		fprintf(stderr, "usage: %s GEOM_V1.bpf.o GEOM_FUTURE.bpf.o CURRENT.bpf.o GEOM_V2.bpf.o\n",
			argv[0]);
		return KSFT_FAIL;
	}
	ok &= CHECK(offsetof(struct iouring_bpf_geometry, size) == IOURING_BPF_GEOMETRY_SIZE_V1,
		    "layout 1 is not a prefix: size at %zu",
		    offsetof(struct iouring_bpf_geometry, size));
	ok &= CHECK(offsetof(struct iouring_bpf_geometry, mem_region_size) == 40,
		    "layout 1 fields moved");
	ok &= CHECK(offsetof(struct iouring_bpf_geometry, sqe_size) == IOURING_BPF_GEOMETRY_SIZE_V2,
		    "layout 2 is not a prefix: sqe_size at %zu",
		    offsetof(struct iouring_bpf_geometry, sqe_size));
	ok &= CHECK(sizeof(struct iouring_bpf_geometry) == IOURING_BPF_GEOMETRY_SIZE_V3 &&
		    IOURING_BPF_GEOMETRY_VERSION == 3,
		    "geometry is %zu bytes, version %d: layout 3 is 64 bytes",
		    sizeof(struct iouring_bpf_geometry), IOURING_BPF_GEOMETRY_VERSION);
	ok &= CHECK(sizeof(struct iouring_bpf_ring) == RING_SIZE,
		    "struct iouring_bpf_ring is %zu bytes, the ABI says %d",
		    sizeof(struct iouring_bpf_ring), RING_SIZE);
	ok &= CHECK(offsetof(struct iouring_bpf_ring, geom) + sizeof(struct iouring_bpf_geometry) +
		    sizeof(((struct iouring_bpf_ring *)0)->__reserved) == RING_SIZE,
		    "the geometry is not followed by its reserved room");
	ok &= CHECK(sizeof(struct iouring_bpf_ublk_dev) == UBLK_DEV_SIZE,
		    "struct iouring_bpf_ublk_dev is %zu bytes, the ABI says %zu",
		    sizeof(struct iouring_bpf_ublk_dev), (size_t)UBLK_DEV_SIZE);
	ok &= CHECK(!strcmp(LIBURING_BPF_VERSION, "0.4"), "LIBURING_BPF_VERSION %s",
		    LIBURING_BPF_VERSION);
	ok &= set_ring(argv[1], 0, IOURING_BPF_GEOMETRY_SIZE_V1, NULL);
	ok &= set_ring(argv[2], -EINVAL, 0, "built against a newer liburing-bpf");
	ok &= set_ring(argv[3], 0, sizeof(struct iouring_bpf_geometry), NULL);
	ok &= set_ring(argv[4], 0, IOURING_BPF_GEOMETRY_SIZE_V2, NULL);
	/* 128-byte SQEs: only for a policy that reads sqe_size */
	ok &= set_ring_on(argv[1], fake_ring128(), -EOPNOTSUPP, 0,
			  "global 'iou_geom' (48 bytes) has no sqe_size", 0);
	ok &= set_ring_on(argv[4], fake_ring128(), -EOPNOTSUPP, 0,
			  "the ring has 128-byte SQEs (IORING_SETUP_SQE128); global 'iou_geom' "
			  "(56 bytes) has no sqe_size, so the policy writes 64-byte SQEs", 0);
	ok &= set_ring_on(argv[3], fake_ring128(), 0, sizeof(struct iouring_bpf_geometry), NULL,
			  128);
	ok &= set_ring_on(argv[3], fake_ring128_v2(), 0, sizeof(struct iouring_bpf_geometry), NULL,
			  128);
	ok &= set_ring_on(argv[4], fake_ring128_v2(), -EOPNOTSUPP, 0, "has no sqe_size", 0);
	return ok ? KSFT_PASS : KSFT_FAIL;
}
