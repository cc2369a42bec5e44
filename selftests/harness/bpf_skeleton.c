// SPDX-License-Identifier: GPL-2.0
/*
 * harness/bpf-skeleton (VM): the skeleton-built program loads, runs and
 * shares its globals with user space.
 * harness/bpf-skeleton-open (host, --open-only): the object the build made
 * has the program and global sections the skeleton promises.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <string.h>
#include "bpf_skeleton.skel.h"
#include "selftest.h"

static int open_only(void)
{
	struct bpf_skeleton *skel = bpf_skeleton__open();
	int status = KSFT_FAIL;

	if (!CHECK(skel, "bpf_skeleton__open: %s", strerror(errno)))
		return KSFT_FAIL;
	if (!CHECK(skel->progs.probe, "no program 'probe'") ||
	    !CHECK(!strcmp(bpf_program__section_name(skel->progs.probe), "syscall"),
		   "section %s", bpf_program__section_name(skel->progs.probe)) ||
	    !CHECK(skel->rodata && skel->bss, "globals missing from the skeleton"))
		goto out;
	printf("skeleton opened: program probe, .rodata and .bss present\n");
	status = KSFT_PASS;
out:
	bpf_skeleton__destroy(skel);
	return status;
}

static int load_and_run(void)
{
	const __u64 magic = 0x5eed0fb9f;
	struct bpf_skeleton *skel = bpf_skeleton__open();
	int ret, status = KSFT_FAIL;

	if (!CHECK(skel, "bpf_skeleton__open: %s", strerror(errno)))
		return KSFT_FAIL;
	skel->rodata->magic = magic;
	ret = bpf_skeleton__load(skel);
	if (!CHECK_OK(ret, "bpf_skeleton__load"))
		goto out;

	LIBBPF_OPTS(bpf_test_run_opts, opts);
	ret = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.probe), &opts);
	if (!CHECK_OK(ret, "bpf_prog_test_run_opts"))
		goto out;
	if (!CHECK(opts.retval == 42, "program returned %u", opts.retval) ||
	    !CHECK(skel->bss->run_count == 1, "run_count %llu",
		   (unsigned long long)skel->bss->run_count) ||
	    !CHECK(skel->bss->seen_magic == magic, "seen_magic %#llx",
		   (unsigned long long)skel->bss->seen_magic))
		goto out;
	printf("skeleton loaded and ran: retval %u, run_count %llu\n",
	       opts.retval, (unsigned long long)skel->bss->run_count);
	status = KSFT_PASS;
out:
	bpf_skeleton__destroy(skel);
	return status;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--open-only"))
		return open_only();
	return load_and_run();
}
