// SPDX-License-Identifier: GPL-2.0
/*
 * lib/sqe-size (VM): policies on rings with 64- and 128-byte SQEs, through
 * liburing-bpf's generic path.
 * - nops (8 NOPs per submission, each tagged with its number) runs on a
 *   64-byte-SQE ring and on an IORING_SETUP_SQE128 ring with every CQE
 *   right: iou_sqe_at() steps by iou_geom.sqe_size, which set_ring fills;
 * - a policy built with geometry layout 1 or 2 (no sqe_size) is refused an
 *   SQE128 ring with -EOPNOTSUPP and a message, and still gets a 64-byte one;
 * - vblk_chain (iouring_bpf/vblk.bpf.h) passes the verifier on a 64-byte
 *   ring too, and stops there with -EOPNOTSUPP before submitting anything.
 *
 * usage: sqe_size NOPS.bpf.o GEOM_V1.bpf.o GEOM_V2.bpf.o VBLK_CHAIN.bpf.o
 */
#include <stdlib.h>
#include <liburing-bpf.h>
#include "selftest.h"

/* nops on a ring of sqe_size-byte SQEs: 1000 NOPs, 8 in flight, all right */
static int run_nops(const char *path, unsigned int setup_flags, __u32 sqe_size)
{
	struct iouring_bpf_policy *p = NULL;
	struct iouring_bpf_ring ring;
	unsigned long long completed = 0, bad = ~0ULL;
	int status = -1, ret, ok = 1;
	size_t size = 0;
	const struct iouring_bpf_geometry *g;

	if (!CHECK_OK(iouring_bpf_ring_init(&ring, 16, 64, IOURING_BPF_RING_FLAGS | setup_flags),
		      "ring"))
		return 0;
	ok &= CHECK(ring.geom.sqe_size == sqe_size, "ring geometry: sqe_size %u, want %u",
		    ring.geom.sqe_size, sqe_size);
	ret = iouring_bpf_policy_open(path, &p);
	if (!ret)
		ret = iouring_bpf_policy_set_global_str(p, "nop_total", "1000");
	if (!ret)
		ret = iouring_bpf_policy_set_global_str(p, "nop_inflight", "8");
	if (!ret)
		ret = iouring_bpf_policy_set_ring(p, &ring);
	if (!ret) {
		g = iouring_bpf_policy_global_ptr(p, "iou_geom", &size);
		ok &= CHECK(g && size == sizeof(*g) && g->sqe_size == sqe_size,
			    "the policy's iou_geom.sqe_size is %u, want %u", g ? g->sqe_size : 0,
			    sqe_size);
	}
	if (!ret)
		ret = iouring_bpf_policy_load(p);
	if (!ret)
		ret = iouring_bpf_policy_attach(p);
	if (!ret)
		ret = iouring_bpf_policy_run(p, &ring, &status);
	ok &= CHECK(!ret, "nops on %u-byte SQEs: %s", sqe_size, iouring_bpf_policy_strerror(p));
	if (!ret) {
		iouring_bpf_policy_get_global(p, "nop_completed", &completed, sizeof(completed));
		iouring_bpf_policy_get_global(p, "nop_bad_cqes", &bad, sizeof(bad));
		ok &= CHECK(status == 0 && completed == 1000 && bad == 0,
			    "nops on %u-byte SQEs: status %d, %llu completed, %llu bad CQEs",
			    sqe_size, status, completed, bad);
		printf("nops on %u-byte SQEs: status %d, %llu NOPs, %llu bad CQEs\n", sqe_size,
		       status, completed, bad);
	}
	iouring_bpf_policy_close(p);
	iouring_bpf_ring_exit(&ring);
	return ok;
}

/* set_ring of an old-layout policy: refused on 128-byte SQEs, fine on 64 */
static int old_layout(const char *path, __u32 geom_size)
{
	struct iouring_bpf_policy *p = NULL;
	struct iouring_bpf_ring r64, r128;
	char want[96];
	int ok = 1, ret;

	if (!CHECK_OK(iouring_bpf_ring_init(&r64, 16, 0, IOURING_BPF_RING_FLAGS), "ring"))
		return 0;
	if (!CHECK_OK(iouring_bpf_ring_init(&r128, 16, 0,
					    IOURING_BPF_RING_FLAGS | IORING_SETUP_SQE128), "ring")) {
		iouring_bpf_ring_exit(&r64);
		return 0;
	}
	if (CHECK_OK(iouring_bpf_policy_open(path, &p), iouring_bpf_policy_strerror(p))) {
		snprintf(want, sizeof(want), "global 'iou_geom' (%u bytes) has no sqe_size",
			 geom_size);
		ret = iouring_bpf_policy_set_ring(p, &r128);
		ok &= CHECK(ret == -EOPNOTSUPP && strstr(iouring_bpf_policy_strerror(p), want),
			    "%s on 128-byte SQEs: %d, \"%s\"", path, ret,
			    iouring_bpf_policy_strerror(p));
		printf("%s on 128-byte SQEs: %d: %s\n", path, ret, iouring_bpf_policy_strerror(p));
		ret = iouring_bpf_policy_set_ring(p, &r64);
		ok &= CHECK(ret == 0, "%s on 64-byte SQEs: %d, %s", path, ret,
			    iouring_bpf_policy_strerror(p));
	}
	iouring_bpf_policy_close(p);
	iouring_bpf_ring_exit(&r64);
	iouring_bpf_ring_exit(&r128);
	return ok;
}

/* The vblk helpers on a 64-byte ring: verified, then -EOPNOTSUPP at run time. */
static int vblk_on_64(const char *path)
{
	struct iouring_bpf_policy *p = NULL;
	struct iouring_bpf_ring ring;
	unsigned int nr = ~0U;
	int status = 0, ret, ok = 1;
	void *mem = aligned_alloc(4096, 4096);

	if (!mem || !CHECK_OK(iouring_bpf_ring_init(&ring, 4, 0, IOURING_BPF_RING_FLAGS), "ring")) {
		free(mem);
		return 0;
	}
	ret = iouring_bpf_ring_register_mem(&ring, mem, 4096);	/* one 4 KiB block's slot */
	if (!ret)
		ret = iouring_bpf_policy_open(path, &p);
	if (!ret)
		ret = iouring_bpf_policy_set_ring(p, &ring);
	if (!ret)
		ret = iouring_bpf_policy_load(p);
	if (!ret)
		ret = iouring_bpf_policy_attach(p);
	if (!ret)
		ret = iouring_bpf_policy_run(p, &ring, &status);
	ok &= CHECK(!ret, "vblk_chain on 64-byte SQEs: %d, %s", ret, iouring_bpf_policy_strerror(p));
	if (!ret) {
		iouring_bpf_policy_get_global(p, "chain_nr", &nr, sizeof(nr));
		ok &= CHECK(status == -EOPNOTSUPP && nr == 0,
			    "vblk_chain on 64-byte SQEs stopped with %d after %u reads, want "
			    "-EOPNOTSUPP after 0", status, nr);
		printf("vblk_chain on 64-byte SQEs: verified, stopped with %d (%s)\n", status,
		       strerror(-status));
	}
	iouring_bpf_policy_close(p);
	iouring_bpf_ring_exit(&ring);
	free(mem);
	return ok;
}

int main(int argc, char **argv)
{
	int ok = 1;

	if (argc != 5) {
		fprintf(stderr, "usage: %s NOPS.bpf.o GEOM_V1.bpf.o GEOM_V2.bpf.o VBLK_CHAIN.bpf.o\n",
			argv[0]);
		return KSFT_FAIL;
	}
	ok &= run_nops(argv[1], 0, 64);
	ok &= run_nops(argv[1], IORING_SETUP_SQE128, 128);
	ok &= old_layout(argv[2], IOURING_BPF_GEOMETRY_SIZE_V1);
	ok &= old_layout(argv[3], IOURING_BPF_GEOMETRY_SIZE_V2);
	ok &= vblk_on_64(argv[4]);
	return ok ? KSFT_PASS : KSFT_FAIL;
}
