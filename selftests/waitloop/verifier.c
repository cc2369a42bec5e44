// SPDX-License-Identifier: GPL-2.0
/*
 * The waitloop tests of programs the verifier refuses, each for what its
 * log must name: writes to the read-only context and parameters, reads
 * past mainline 7.2's opaque ring or a region's size, and the ublk kfunc
 * called from a struct_ops program that is not an io_uring loop.
 */
#define _GNU_SOURCE
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "waitloop.h"
#include "verifier_reject.skel.h"
#include "kfunc_filter.skel.h"

/* Load one program of verifier_reject.bpf.o; it must fail naming `want`. */
static int expect_verifier_reject(const char *prog_name, const char *want)
{
	static char log[64 * 1024];
	struct verifier_reject *skel = verifier_reject__open();
	struct bpf_program *prog, *target = NULL;
	struct bpf_map *map;
	int ret, status = KSFT_FAIL;

	if (!CHECK(skel, "open: %s", strerror(errno)))
		return KSFT_FAIL;
	bpf_object__for_each_program(prog, skel->obj) {
		int mine = !strcmp(bpf_program__name(prog), prog_name);

		bpf_program__set_autoload(prog, mine);
		if (mine)
			target = prog;
	}
	/* each program has its map, named after it */
	bpf_object__for_each_map(map, skel->obj) {
		if (bpf_map__type(map) == BPF_MAP_TYPE_STRUCT_OPS)
			bpf_map__set_autocreate(map, !strncmp(bpf_map__name(map), prog_name,
							      strlen(prog_name)) &&
						!strcmp(bpf_map__name(map) + strlen(prog_name), "_ops"));
	}
	if (!CHECK(target, "no program %s", prog_name))
		goto out;
	log[0] = 0;
	bpf_program__set_log_buf(target, log, sizeof(log));
	ret = verifier_reject__load(skel);
	if (!CHECK(ret < 0, "%s loaded, but the verifier must reject it", prog_name))
		goto out;
	if (!CHECK(strstr(log, want), "%s: verifier log lacks \"%s\"; log:\n%s", prog_name,
		   want, log))
		goto out;
	printf("%s rejected: \"%s\"\n", prog_name, want);
	status = KSFT_PASS;
out:
	verifier_reject__destroy(skel);
	return status;
}

int test_verifier_write_ctx(void)
{
	return expect_verifier_reject("write_ctx", "io_uring_bpf_ops: iou_ctx is read-only");
}

/* mainline 7.2's opaque ring: nothing of it can be read either */
int test_verifier_read_ctx(void)
{
	return expect_verifier_reject("read_ctx", "access beyond struct iou_ctx at off 0");
}

int test_verifier_write_step(void)
{
	return expect_verifier_reject("write_step",
				      "iou_loop_params offset 16 size 8 is read-only");
}

int test_verifier_region_past_size(void)
{
	return expect_verifier_reject("region_past_size",
				      "invalid access to memory, mem_size=64 off=64 size=1");
}

int test_verifier_region_nonconst(void)
{
	return expect_verifier_reject("region_nonconst", "R3 is not a const");
}

/* The ublk kfunc is for io_uring loops only, not for other struct_ops. */
int test_kfunc_filter(void)
{
	static char log[64 * 1024];
	struct kfunc_filter *skel = kfunc_filter__open();
	const char *want = "calling kernel function bpf_ublk_get_io_desc is not allowed";
	int ret, status = KSFT_FAIL;

	if (!CHECK(skel, "open: %s", strerror(errno)))
		return KSFT_FAIL;
	log[0] = 0;
	bpf_program__set_log_buf(skel->progs.not_a_loop, log, sizeof(log));
	ret = kfunc_filter__load(skel);
	if (!CHECK(ret < 0, "a bpf_dummy_ops program calling bpf_ublk_get_io_desc loaded") ||
	    !CHECK(strstr(log, want), "verifier log lacks \"%s\"; log:\n%s", want, log))
		goto out;
	printf("bpf_dummy_ops program refused: \"%s\"\n", want);
	status = KSFT_PASS;
out:
	kfunc_filter__destroy(skel);
	return status;
}
