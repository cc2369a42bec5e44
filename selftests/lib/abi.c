// SPDX-License-Identifier: GPL-2.0
/*
 * lib/abi (host): liburing-bpf's public structures can grow without
 * breaking what was built against them.
 * - struct iouring_bpf_geometry only grows at the end; layout 1 (48 bytes)
 *   is a prefix of the current one, which carries its size and version;
 * - iouring_bpf_policy_set_ring() fills a policy built against an older,
 *   smaller geometry (layout 1) with the part it has, and refuses one from
 *   a newer library (bigger than it can fill) with -EINVAL and a message;
 * - struct iouring_bpf_ring and struct iouring_bpf_ublk_dev keep their size
 *   (reserved / opaque private room), so callers' allocations stay valid.
 *
 * usage: abi GEOM_V1.bpf.o GEOM_FUTURE.bpf.o CURRENT.bpf.o
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
	};
	return r;
}

static int set_ring(const char *path, int want, size_t want_size, const char *want_msg)
{
	struct iouring_bpf_policy *p = NULL;
	struct iouring_bpf_ring r = fake_ring();
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
		ok &= CHECK(geom && size == want_size, "%s: iou_geom is %zu bytes, want %zu", path,
			    size, want_size) &&
		      CHECK(!memcmp(geom, &r.geom, want_size), "%s: iou_geom not filled", path);
	}
	printf("%s: set_ring %d%s%s\n", path, ret, ret ? ": " : "",
	       ret ? iouring_bpf_policy_strerror(p) : "");
	iouring_bpf_policy_close(p);
	return ok;
}

int main(int argc, char **argv)
{
	int ok = 1;

	if (argc != 4) {
		fprintf(stderr, "usage: %s GEOM_V1.bpf.o GEOM_FUTURE.bpf.o CURRENT.bpf.o\n", argv[0]);
		return KSFT_FAIL;
	}
	ok &= CHECK(offsetof(struct iouring_bpf_geometry, size) == IOURING_BPF_GEOMETRY_SIZE_V1,
		    "layout 1 is not a prefix: size at %zu",
		    offsetof(struct iouring_bpf_geometry, size));
	ok &= CHECK(offsetof(struct iouring_bpf_geometry, mem_region_size) == 40,
		    "layout 1 fields moved");
	ok &= CHECK(sizeof(struct iouring_bpf_ring) == RING_SIZE,
		    "struct iouring_bpf_ring is %zu bytes, the ABI says %d",
		    sizeof(struct iouring_bpf_ring), RING_SIZE);
	ok &= CHECK(offsetof(struct iouring_bpf_ring, geom) + sizeof(struct iouring_bpf_geometry) +
		    sizeof(((struct iouring_bpf_ring *)0)->__reserved) == RING_SIZE,
		    "the geometry is not followed by its reserved room");
	ok &= CHECK(sizeof(struct iouring_bpf_ublk_dev) == UBLK_DEV_SIZE,
		    "struct iouring_bpf_ublk_dev is %zu bytes, the ABI says %zu",
		    sizeof(struct iouring_bpf_ublk_dev), (size_t)UBLK_DEV_SIZE);
	ok &= CHECK(!strcmp(LIBURING_BPF_VERSION, "0.2"), "LIBURING_BPF_VERSION %s",
		    LIBURING_BPF_VERSION);
	ok &= set_ring(argv[1], 0, IOURING_BPF_GEOMETRY_SIZE_V1, NULL);
	ok &= set_ring(argv[2], -EINVAL, 0, "built against a newer liburing-bpf");
	ok &= set_ring(argv[3], 0, sizeof(struct iouring_bpf_geometry), NULL);
	return ok ? KSFT_PASS : KSFT_FAIL;
}
