// SPDX-License-Identifier: GPL-2.0
/*
 * The waitloop tests of whole policies, each run to its end in one enter:
 * the library's nops and copy policies (bpf/policies/), and programs
 * written for mainline, unchanged (the CQ's offsets passed one by one, and
 * 7.2's struct iou_ctx).
 */
#define _GNU_SOURCE
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "waitloop.h"
#include "nops.skel.h"
#include "copy.skel.h"
#include "mainline_nops.skel.h"
#include "mainline72_batch.skel.h"

static int run_nops(__u32 total, __u32 inflight)
{
	struct iouring_bpf_ring r;
	struct nops *skel = NULL;
	struct bpf_link *link = NULL;
	int ret, status = KSFT_FAIL;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 16, 0, LOOP_FLAGS), "ring setup"))
		goto out;
	skel = nops__open();
	if (!CHECK(skel, "nops__open: %s", strerror(errno)))
		goto out;
	skel->rodata->iou_geom = r.geom;
	skel->rodata->nop_total = total;
	skel->rodata->nop_inflight = inflight;
	link = SKEL_LOAD_ATTACH_RUN(skel, nops_ops, &r, &ret);
	struct nops__bss *b = skel->bss;
	if (!link || !CHECK(ret == 0, "enter: %d", ret) ||
	    !CHECK(b->iou_exit_status == 0, "policy stopped with %d", b->iou_exit_status) ||
	    !CHECK(b->nop_submitted == total && b->nop_completed == total,
		   "submitted %llu completed %llu, want %u",
		   (unsigned long long)b->nop_submitted,
		   (unsigned long long)b->nop_completed, total) ||
	    !CHECK(b->nop_bad_cqes == 0, "%llu bad CQEs", (unsigned long long)b->nop_bad_cqes))
		goto out;
	/* the policy consumed everything it was given */
	if (!CHECK(*cq_word(&r, r.params.cq_off.head) == *cq_word(&r, r.params.cq_off.tail),
		   "CQEs left in the ring"))
		goto out;
	printf("%u NOPs, %u in flight: all completed in one io_uring_enter, %llu steps\n",
	       total, inflight, (unsigned long long)b->nop_steps);
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	nops__destroy(skel);
	iouring_bpf_ring_exit(&r);
	return status;
}

int test_nops(void)
{
	return run_nops(1000, 8);
}

static int fill_random(int fd, size_t size)
{
	char buf[4096];
	unsigned int seed = 12345;

	for (size_t done = 0; done < size; done += sizeof(buf)) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = rand_r(&seed);
		size_t n = size - done < sizeof(buf) ? size - done : sizeof(buf);
		if (pwrite(fd, buf, n, done) != (ssize_t)n)
			return -errno;
	}
	return 0;
}

static int files_equal(int a, int b, size_t size)
{
	char ba[65536], bb[65536];

	for (size_t off = 0; off < size; off += sizeof(ba)) {
		size_t n = size - off < sizeof(ba) ? size - off : sizeof(ba);
		if (pread(a, ba, n, off) != (ssize_t)n || pread(b, bb, n, off) != (ssize_t)n)
			return 0;
		if (memcmp(ba, bb, n))
			return 0;
	}
	return 1;
}

int test_copy(void)
{
	/* not a multiple of the block: the last read is short */
	const size_t size = 3 * 1024 * 1024 + 12345;
	const __u32 block = 65536, nslots = 4;
	char src_path[] = "/tmp/waitloop-src-XXXXXX", dst_path[] = "/tmp/waitloop-dst-XXXXXX";
	int src = mkstemp(src_path), dst = mkstemp(dst_path);
	struct iouring_bpf_ring r = { .fd = -1 };
	struct copy *skel = NULL;
	struct bpf_link *link = NULL;
	void *buf = NULL;
	int ret, status = KSFT_FAIL;
	struct stat st;

	if (!CHECK(src >= 0 && dst >= 0, "mkstemp: %s", strerror(errno)))
		goto out;
	unlink(src_path);
	unlink(dst_path);
	if (!CHECK_OK(fill_random(src, size), "fill source"))
		goto out;
	buf = aligned_alloc(4096, (size_t)block * nslots);
	if (!CHECK(buf, "aligned_alloc of %u slots", nslots))
		goto out;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 16, 0, LOOP_FLAGS), "ring setup"))
		goto out;
	skel = copy__open();	/* bpf/policies/copy.bpf.c */
	if (!CHECK(skel, "copy__open: %s", strerror(errno)))
		goto out;
	skel->rodata->iou_geom = r.geom;
	skel->rodata->copy_src_fd = src;
	skel->rodata->copy_dst_fd = dst;
	skel->rodata->copy_size = size;
	skel->rodata->copy_buf = (uintptr_t)buf;
	skel->rodata->copy_block = block;
	skel->rodata->copy_slots = nslots;
	link = SKEL_LOAD_ATTACH_RUN(skel, copy_ops, &r, &ret);
	if (!link || !CHECK(ret == 0, "enter: %d", ret) ||
	    !CHECK(skel->bss->iou_exit_status == 0, "policy stopped with %d", skel->bss->iou_exit_status))
		goto out;
	if (!CHECK(fstat(dst, &st) == 0 && (size_t)st.st_size == size,
		   "destination is %lld bytes, want %zu", (long long)st.st_size, size) ||
	    !CHECK(files_equal(src, dst, size), "destination differs from source"))
		goto out;
	printf("copied %zu bytes: %llu reads, %llu writes, byte-for-byte equal\n", size,
	       (unsigned long long)skel->bss->copy_reads,
	       (unsigned long long)skel->bss->copy_writes);
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	copy__destroy(skel);
	iouring_bpf_ring_exit(&r);
	free(buf);
	if (src >= 0)
		close(src);
	if (dst >= 0)
		close(dst);
	return status;
}

/*
 * The mainline-style programs know nothing of liburing-bpf's geometry
 * global: they take the CQ's offsets and the regions' sizes one by one.
 */
#define MAINLINE_RING_GLOBALS(skel, r)						\
	do {									\
		(skel)->rodata->cq_head_off = (r)->params.cq_off.head;		\
		(skel)->rodata->cq_tail_off = (r)->params.cq_off.tail;		\
		(skel)->rodata->cqes_off = (r)->params.cq_off.cqes;		\
		(skel)->rodata->cq_mask = (r)->params.cq_entries - 1;		\
		(skel)->rodata->cq_size = (r)->geom.cq_region_size;		\
		(skel)->rodata->sq_size = (r)->geom.sq_region_size;		\
	} while (0)

int test_mainline_only(void)
{
	struct iouring_bpf_ring r;
	struct mainline_nops *skel = NULL;
	struct bpf_link *link = NULL;
	int ret, status = KSFT_FAIL;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, LOOP_FLAGS), "setup"))
		goto out;
	skel = mainline_nops__open();
	if (!CHECK(skel, "open: %s", strerror(errno)))
		goto out;
	MAINLINE_RING_GLOBALS(skel, &r);
	skel->rodata->total = 100;
	link = SKEL_LOAD_ATTACH_RUN(skel, mainline_ops, &r, &ret);
	if (!link || !CHECK(ret == 0, "enter: %d", ret) ||
	    !CHECK(skel->bss->done == 100 && skel->bss->bad == 0, "done %u bad %u",
		   skel->bss->done, skel->bss->bad))
		goto out;
	printf("mainline-only program ran 100 NOPs unchanged\n");
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	mainline_nops__destroy(skel);
	iouring_bpf_ring_exit(&r);
	return status;
}

/* a policy written for mainline 7.2 (struct iou_ctx, vmlinux.h) loads and runs */
int test_mainline72(void)
{
	struct iouring_bpf_ring r;
	struct mainline72_batch *skel = NULL;
	struct bpf_link *link = NULL;
	int ret, status = KSFT_FAIL;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, LOOP_FLAGS), "setup"))
		goto out;
	skel = mainline72_batch__open();
	if (!CHECK(skel, "open: %s", strerror(errno)))
		goto out;
	MAINLINE_RING_GLOBALS(skel, &r);
	skel->rodata->batch = 4;
	skel->rodata->rounds = 25;
	link = SKEL_LOAD_ATTACH_RUN(skel, mainline72_ops, &r, &ret);
	if (!link || !CHECK(ret == 0, "enter: %d", ret) ||
	    !CHECK(skel->bss->rounds_done == 25 && skel->bss->cqes_seen == 100 &&
		   skel->bss->cqes_bad == 0, "rounds %u cqes %u bad %u",
		   skel->bss->rounds_done, skel->bss->cqes_seen, skel->bss->cqes_bad))
		goto out;
	printf("7.2-style program (struct iou_ctx) ran 25 rounds of 4 NOPs unchanged\n");
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	mainline72_batch__destroy(skel);
	iouring_bpf_ring_exit(&r);
	return status;
}
