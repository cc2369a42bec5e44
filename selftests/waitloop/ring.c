// SPDX-License-Identifier: GPL-2.0
/*
 * The waitloop tests of the ring under the loop: CQEs through a full CQ
 * and its overflow list, a CQE the overflow could not keep, the parameter
 * region a program reads and writes, and IORING_SETUP_SQ_REWIND.
 */
#define _GNU_SOURCE
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "waitloop.h"
#include "waitloop.skel.h"
#include "review.skel.h"

int test_cq_overflow(void)
{
	struct fixture f;
	struct bpf_link *link = NULL;
	int ret, status = KSFT_FAIL;
	const __u32 total = 20;

	/* 4 SQEs, 4 CQEs: 20 NOPs overflow the CQ five times over */
	if (fixture_open(&f, 4, 4, LOOP_FLAGS))
		goto out;
	f.skel->rodata->ovf_total = total;
	link = load_attach_run(f.skel->skeleton, f.skel->maps.overflow_ops, &f.r, &ret);
	struct waitloop__bss *b = f.skel->bss;
	if (!link || !CHECK(ret == 0, "enter: %d", ret) || check_exit(&f) ||
	    !CHECK(b->ovf_completed == total, "received %llu CQEs, want %u",
		   (unsigned long long)b->ovf_completed, total) ||
	    !CHECK(b->ovf_bad_cqes == 0, "%llu CQEs out of order or failed",
		   (unsigned long long)b->ovf_bad_cqes) ||
	    !CHECK(b->ovf_max_ready == f.r.params.cq_entries, "CQ never filled (max %llu of %u)",
		   (unsigned long long)b->ovf_max_ready, f.r.params.cq_entries) ||
	    !CHECK(*cq_word(&f.r, f.r.params.cq_off.overflow) == 0, "%u CQEs dropped",
		   *cq_word(&f.r, f.r.params.cq_off.overflow)))
		goto out;
	printf("%u CQEs through a %u-entry CQ: overflow flushed in order, none lost\n", total,
	       f.r.params.cq_entries);
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	fixture_close(&f);
	return status;
}

static int register_region(int fd, void *addr, __u64 size, __u32 rd_flags, __u64 reg_flags)
{
	struct io_uring_region_desc rd = {
		.user_addr = (uintptr_t)addr, .size = size, .flags = rd_flags,
	};
	struct io_uring_mem_region_reg reg = {
		.region_uptr = (uintptr_t)&rd, .flags = reg_flags,
	};
	int ret = syscall(__NR_io_uring_register, fd, IORING_REGISTER_MEM_REGION, &reg, 1);

	return ret < 0 ? -errno : ret;
}

int test_param_region(void)
{
	struct fixture f;
	struct bpf_link *link = NULL;
	long page = sysconf(_SC_PAGESIZE);
	__u64 *area = aligned_alloc(page, 2 * page);
	int ret, status = KSFT_FAIL;

	if (!CHECK(area, "aligned_alloc of 2 pages"))
		return KSFT_FAIL;
	memset(area, 0, 2 * page);
	if (fixture_open(&f, 8, 0, LOOP_FLAGS) ||
	    !(link = load_and_attach(f.skel->skeleton, f.skel->maps.param_ops)))
		goto out;

	/* no region yet: the kfunc returns NULL and the program says so */
	if (!CHECK(iouring_bpf_ring_run(&f.r) == 0 && f.skel->bss->exit_error == -ENOENT,
		   "program found a region before one was registered"))
		goto out;
	f.skel->bss->exit_error = 0;

	struct { int rd_flags, reg_flags; void *addr; __u64 size; int err; const char *what; }
	bad[] = {
		{ 1, 0, (char *)area + 1, page, -EINVAL, "unaligned address" },
		{ 1, 0, area, page / 2, -EINVAL, "unaligned size" },
		{ 1, 0, area, 0, -EINVAL, "zero size" },
		{ 1, 0, NULL, page, -EFAULT, "NULL user memory" },
		{ 0, 0, NULL, page, -EOPNOTSUPP, "kernel-allocated region" },
		{ 1, 1, area, page, -EOPNOTSUPP, "registered wait arguments" },
		{ 3, 0, area, page, -EINVAL, "unknown region flag" },
		{ 1, 4, area, page, -EINVAL, "unknown register flag" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ret = register_region(f.r.fd, bad[i].addr, bad[i].size, bad[i].rd_flags,
				      bad[i].reg_flags);
		if (!CHECK(ret == bad[i].err, "%s: %d, want %d", bad[i].what, ret, bad[i].err))
			goto out;
	}

	ret = register_region(f.r.fd, area, 2 * page, IORING_MEM_REGION_TYPE_USER, 0);
	if (!CHECK_OK(ret, "register region"))
		goto out;
	ret = register_region(f.r.fd, area, page, IORING_MEM_REGION_TYPE_USER, 0);
	if (!CHECK(ret == -EBUSY, "second region: %d, want -EBUSY", ret))
		goto out;

	area[0] = 41;
	ret = iouring_bpf_ring_run(&f.r);
	if (!CHECK(ret == 0, "enter: %d", ret) || check_exit(&f) ||
	    !CHECK(area[1] == 124, "program wrote %llu, want 124", (unsigned long long)area[1]))
		goto out;
	printf("parameter region: 8 bad registrations refused, program read 41 and wrote 124\n");
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	fixture_close(&f);
	free(area);
	return status;
}

int test_sq_rewind(void)
{
	struct iouring_bpf_ring r = { .fd = -1 };
	int ret, status = KSFT_FAIL;
	struct io_uring_params p = { .flags = IORING_SETUP_SQ_REWIND };

	ret = syscall(__NR_io_uring_setup, 8, &p);
	if (!CHECK(ret < 0 && errno == EINVAL, "SQ_REWIND without NO_SQARRAY: %d", ret))
		goto out;
	p = (struct io_uring_params){ .flags = IORING_SETUP_SQ_REWIND | IORING_SETUP_NO_SQARRAY |
						IORING_SETUP_SQPOLL };
	ret = syscall(__NR_io_uring_setup, 8, &p);
	if (!CHECK(ret < 0 && errno == EINVAL, "SQ_REWIND with SQPOLL: %d", ret))
		goto out;

	/* user space submits twice from index 0, never moving head or tail */
	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, IORING_SETUP_SQ_REWIND | IORING_SETUP_NO_SQARRAY),
		      "setup"))
		goto out;
	struct io_uring_sqe *sqes = r.sqes;
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 3; i++) {
			memset(&sqes[i], 0, sizeof(sqes[i]));
			sqes[i].opcode = IORING_OP_NOP;
			sqes[i].user_data = round * 10 + i;
		}
		ret = syscall(__NR_io_uring_enter, r.fd, 3, 0, 0, NULL, 0);
		if (!CHECK(ret == 3, "round %d submitted %d, want 3", round, ret))
			goto out;
	}
	struct io_uring_cqe *cqes = (void *)((char *)r.ring_mem + r.params.cq_off.cqes);
	unsigned int tail = *cq_word(&r, r.params.cq_off.tail);
	if (!CHECK(tail == 6, "%u CQEs, want 6", tail) ||
	    !CHECK(cqes[3].user_data == 10 && cqes[5].user_data == 12,
		   "second round did not re-read SQEs 0-2") ||
	    !CHECK(*cq_word(&r, r.params.sq_off.head) == 0 && *cq_word(&r, r.params.sq_off.tail) == 0,
		   "SQ head/tail moved"))
		goto out;
	printf("SQ_REWIND: flag checks hold, two submissions both read SQEs 0-2\n");
	status = KSFT_PASS;
out:
	iouring_bpf_ring_exit(&r);
	return status;
}

/*
 * failslab, limited to tasks that ask for it: GFP_ATOMIC allocations of the
 * calling thread fail while `on`, the allocation of an overflow CQE among
 * them.
 */
static int failslab_set(bool on)
{
	static const char dir[] = "/sys/kernel/debug/failslab";
	static const struct {
		const char *file, *on, *off;
	} knobs[] = {
		{ "task-filter", "Y", "N" },
		{ "ignore-gfp-wait", "Y", "Y" },
		{ "interval", "1", "1" },
		{ "times", "-1", "0" },
		{ "verbose", "0", "0" },
		{ "probability", "100", "0" },
	};
	char path[128];
	size_t i;
	int ret;

	if (access(dir, F_OK) && mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL) &&
	    errno != EBUSY) {
		fprintf(stderr, "mount debugfs: %s\n", strerror(errno));
		return -errno;
	}
	for (i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, knobs[i].file);
		ret = write_str(path, on ? knobs[i].on : knobs[i].off);
		if (ret) {
			fprintf(stderr, "%s: %s\n", path, strerror(-ret));
			return ret;
		}
	}
	return write_str("/proc/thread-self/make-it-fail", on ? "1" : "0");
}

/*
 * A CQE lost because its overflow entry could not be allocated: the loop
 * must report it once (-EBADR, as GETEVENTS does), not spin for good with
 * the lost-CQE bit set.
 */
int test_cq_dropped(void)
{
	struct iouring_bpf_ring r;
	struct review *skel = NULL;
	struct bpf_link *link = NULL;
	int ret, status = KSFT_FAIL;
	unsigned int dropped;

	/* 4 SQEs, 4 CQEs: half of 8 NOPs need overflow entries */
	if (!CHECK_OK(iouring_bpf_ring_init(&r, 4, 4, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	skel = review_load(&r);
	if (!skel || !(link = load_and_attach(skel->skeleton, skel->maps.flood_ops)))
		goto out;
	if (!CHECK_OK(failslab_set(true), "failslab on (CONFIG_FAILSLAB, debugfs)"))
		goto out;
	ret = run_bounded(&r, 30, NULL, NULL);
	failslab_set(false);
	dropped = *cq_word(&r, r.params.cq_off.overflow);
	if (!CHECK(skel->bss->flood_submitted == 8, "submitted %u NOPs",
		   skel->bss->flood_submitted) ||
	    !CHECK(dropped > 0, "no CQE was dropped: the overflow allocation did not fail") ||
	    !CHECK(ret == -EBADR, "enter returned %d, want -EBADR (%u CQEs dropped)", ret, dropped))
		goto out;
	/* reported once: the next enter runs the program normally */
	skel->bss->flood_phase = 1;
	ret = iouring_bpf_ring_run(&r);
	if (!CHECK(ret == 0, "enter after -EBADR: %d", ret) ||
	    !CHECK(skel->bss->flood_reaped + dropped == 8, "reaped %u + dropped %u of 8",
		   skel->bss->flood_reaped, dropped))
		goto out;
	printf("%u of 8 CQEs dropped: enter returned -EBADR once, then %u CQEs reaped normally\n",
	       dropped, skel->bss->flood_reaped);
	status = KSFT_PASS;
out:
	failslab_set(false);
	bpf_link__destroy(link);
	review__destroy(skel);
	iouring_bpf_ring_exit(&r);
	return status;
}
