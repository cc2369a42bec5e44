// SPDX-License-Identifier: GPL-2.0
/*
 * lib/policy-ranges (host): a policy's IOURING_BPF_GLOBAL_RANGE() limits are
 * enforced by liburing-bpf when a global is set (from C or from text) and
 * when the policy is loaded (a value written through global_ptr), with
 * -EINVAL and a message; the range records are not listed as globals.
 * copy's copy_slots is 1..8: 9 would alias its slot table, 0 would sleep
 * forever.
 *
 * lib/copy-slots-guard (VM): a copy policy loaded around liburing-bpf's
 * checks (as a skeleton would) with copy_slots 0 or 9 stops at once with
 * -EINVAL instead of sleeping forever or aliasing slots.
 *
 * usage: limits ranges COPY.bpf.o | limits guard COPY.bpf.o
 */
#define _GNU_SOURCE
#include <bpf/libbpf.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <liburing-bpf.h>
#include "selftest.h"

static int refused(struct iouring_bpf_policy *p, int ret, const char *want, const char *what)
{
	const char *msg = iouring_bpf_policy_strerror(p);

	if (!CHECK(ret == -EINVAL, "%s: returned %d, want -EINVAL", what, ret) ||
	    !CHECK(strstr(msg, want), "%s: message \"%s\" lacks \"%s\"", what, msg, want))
		return 0;
	printf("%-28s -EINVAL: %s\n", what, msg);
	return 1;
}

static int ranges(const char *path)
{
	struct iouring_bpf_policy *p = NULL;
	struct iouring_bpf_global g[64];
	__u32 v, *slots;
	int ok = 1, n;

	if (!CHECK_OK(iouring_bpf_policy_open(path, &p), iouring_bpf_policy_strerror(p)))
		return KSFT_FAIL;
	ok &= refused(p, iouring_bpf_policy_set_global_str(p, "copy_slots", "9"),
		      "global 'copy_slots' must be 1..8, not 9", "set_global_str 9");
	ok &= refused(p, iouring_bpf_policy_set_global_str(p, "copy_slots", "0"),
		      "must be 1..8, not 0", "set_global_str 0");
	v = 100;
	ok &= refused(p, iouring_bpf_policy_set_global(p, "copy_slots", &v, sizeof(v)),
		      "must be 1..8, not 100", "set_global 100");
	ok &= refused(p, iouring_bpf_policy_set_global_str(p, "copy_block", "0"),
		      "global 'copy_block' must be 1..", "copy_block 0");
	ok &= CHECK_OK(iouring_bpf_policy_set_global_str(p, "copy_slots", "8"), "copy_slots=8");
	ok &= CHECK_OK(iouring_bpf_policy_set_global_str(p, "copy_slots", "1"), "copy_slots=1");
	ok &= CHECK_OK(iouring_bpf_policy_get_global(p, "copy_slots", &v, sizeof(v)), "get") &&
	      CHECK(v == 1, "copy_slots is %u after refusals, want 1", v);
	/* the records are metadata: not listed */
	n = iouring_bpf_policy_globals(p, g, 64);
	ok &= CHECK(n > 0 && n <= 64, "%d globals", n);
	for (int i = 0; i < n && i < 64; i++)
		ok &= CHECK(strncmp(g[i].name, "__iou_range__", 13), "listed: %s", g[i].name);
	/* written around set_global: load refuses before it reaches the kernel */
	slots = iouring_bpf_policy_global_ptr(p, "copy_slots", NULL);
	if (!CHECK(slots, "copy_slots pointer"))
		return KSFT_FAIL;
	*slots = 0;
	ok &= refused(p, iouring_bpf_policy_load(p), "must be 1..8, not 0", "load with 0");
	*slots = 9;
	ok &= refused(p, iouring_bpf_policy_load(p), "must be 1..8, not 9", "load with 9");
	iouring_bpf_policy_close(p);
	return ok ? KSFT_PASS : KSFT_FAIL;
}

static void on_alarm(int sig)
{
	static const char msg[] = "timed out: the copy policy sleeps forever\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(KSFT_FAIL);
	_exit(KSFT_FAIL);
}

/* Load copy with copy_slots = slots, bypassing liburing-bpf's range check. */
static int guard_one(const char *path, __u32 slots)
{
	static char buf[8 * 4096];
	struct iouring_bpf_ring ring = { .fd = -1 };
	struct iouring_bpf_policy *p = NULL;
	int src = memfd_create("src", 0), dst = memfd_create("dst", 0), status = 1, ok = 0;
	__u64 size = 4 * 4096, addr = (uintptr_t)buf;
	__u32 block = 4096, *ps;

	if (!CHECK(src >= 0 && dst >= 0 && ftruncate(src, size) == 0, "memfds") ||
	    !CHECK_OK(iouring_bpf_ring_init(&ring, 16, 64, IOURING_BPF_RING_FLAGS), "ring") ||
	    !CHECK_OK(iouring_bpf_policy_open(path, &p), iouring_bpf_policy_strerror(p)) ||
	    !CHECK_OK(iouring_bpf_policy_set_global(p, "copy_src_fd", &src, 4), "src") ||
	    !CHECK_OK(iouring_bpf_policy_set_global(p, "copy_dst_fd", &dst, 4), "dst") ||
	    !CHECK_OK(iouring_bpf_policy_set_global(p, "copy_size", &size, 8), "size") ||
	    !CHECK_OK(iouring_bpf_policy_set_global(p, "copy_buf", &addr, 8), "buf") ||
	    !CHECK_OK(iouring_bpf_policy_set_global(p, "copy_block", &block, 4), "block") ||
	    !CHECK_OK(iouring_bpf_policy_set_ring(p, &ring), iouring_bpf_policy_strerror(p)) ||
	    !CHECK(ps = iouring_bpf_policy_global_ptr(p, "copy_slots", NULL), "copy_slots"))
		goto out;
	*ps = slots;
	if (!CHECK_OK(bpf_object__load(iouring_bpf_policy_object(p)), "bpf_object__load") ||
	    !CHECK_OK(iouring_bpf_policy_attach(p), iouring_bpf_policy_strerror(p)))
		goto out;
	alarm(20);
	if (!CHECK_OK(iouring_bpf_policy_run(p, &ring, &status), iouring_bpf_policy_strerror(p)))
		goto out;
	alarm(0);
	ok = CHECK(status == -EINVAL, "copy_slots %u: exit status %d, want %d", slots, status,
		   -EINVAL);
	if (ok)
		printf("copy_slots %u: stopped at once with -EINVAL\n", slots);
out:
	iouring_bpf_policy_close(p);
	iouring_bpf_ring_exit(&ring);
	close(src);
	close(dst);
	return ok;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	signal(SIGALRM, on_alarm);
	if (argc == 3 && !strcmp(argv[1], "ranges"))
		return ranges(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "guard"))
		return guard_one(argv[2], 0) && guard_one(argv[2], 9) ? KSFT_PASS : KSFT_FAIL;
	fprintf(stderr, "usage: %s ranges|guard COPY.bpf.o\n", argv[0]);
	return KSFT_FAIL;
}
