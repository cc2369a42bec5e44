// SPDX-License-Identifier: GPL-2.0
/*
 * lib/policies-load (VM): every shipped policy (the .bpf.o files of bpf/policies,
 * paths given as arguments) passes the verifier of the patched kernel with
 * the geometry of a real ring, loaded through liburing-bpf's generic path.
 */
#include <bpf/libbpf.h>
#include <liburing-bpf.h>
#include "selftest.h"

int main(int argc, char **argv)
{
	struct iouring_bpf_ring ring;
	int failed = 0;

	if (!CHECK(argc > 1, "usage: %s POLICY.bpf.o...", argv[0]))
		return KSFT_FAIL;
	if (!CHECK_OK(iouring_bpf_ring_init(&ring, 64, 256, IOURING_BPF_RING_FLAGS), "ring"))
		return KSFT_FAIL;
	for (int i = 1; i < argc; i++) {
		struct iouring_bpf_policy *p = NULL;
		int ret = iouring_bpf_policy_open(argv[i], &p);

		if (!ret)
			ret = iouring_bpf_policy_set_ring(p, &ring);
		if (!ret)
			ret = iouring_bpf_policy_load(p);
		if (!ret)
			ret = iouring_bpf_policy_attach(p);
		printf("%-40s %s\n", argv[i], ret ? iouring_bpf_policy_strerror(p) : "verified, attached");
		failed += ret != 0;
		iouring_bpf_policy_close(p);
	}
	iouring_bpf_ring_exit(&ring);
	return failed ? KSFT_FAIL : KSFT_PASS;
}
