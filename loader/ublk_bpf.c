// SPDX-License-Identifier: GPL-2.0
/*
 * --target loop|split|bpf: a queue served by a BPF policy inside the queue
 * thread's io_uring_enter(), with zero copy. The set-up follows the
 * contract in iouring_bpf/ublk.h: a ring with room for
 * IOU_UBLK_SQES_PER_TAG SQEs per tag, fixed files (char device, /dev/zero,
 * backing files), a sparse fixed-buffer table of `depth` entries, and the
 * read-only global iou_ublk. The policy fetches, serves and stops (exit
 * status 0) when every tag's command came back aborted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ublk.h"

static int register_files(struct iouring_bpf_ring *ring, const struct ublk_daemon *d)
{
	int fds[2 + IOU_UBLK_MAX_FILES];
	unsigned int n = 0;

	fds[IOU_UBLK_CHAR_INDEX] = d->dev.char_fd;
	fds[IOU_UBLK_ZERO_INDEX] = d->zero_fd;
	n = 2;
	for (unsigned int i = 0; i < d->conf->nr_files; i++)
		fds[IOU_UBLK_FILE_INDEX(i)] = d->file_fds[i], n++;
	if (syscall(__NR_io_uring_register, ring->fd, IORING_REGISTER_FILES, fds, n) < 0)
		return -errno;
	return 0;
}

static int register_sparse_buffers(struct iouring_bpf_ring *ring, unsigned int nr)
{
	struct io_uring_rsrc_register rr = { .nr = nr, .flags = IORING_RSRC_REGISTER_SPARSE };

	if (syscall(__NR_io_uring_register, ring->fd, IORING_REGISTER_BUFFERS2, &rr,
		    sizeof(rr)) < 0)
		return -errno;
	return 0;
}

void ublk_serve_bpf(struct ublk_queue_thread *qt)
{
	struct ublk_daemon *d = qt->d;
	const struct ublk_conf *c = d->conf;
	struct iouring_bpf_ring ring = { .fd = -1 };
	struct iouring_bpf_policy *p = NULL;
	struct iouring_bpf_ublk_geometry *g;
	unsigned int depth = d->dev.info.queue_depth, entries = 1;
	size_t size = 0;
	int ret, status = 0;

	while (entries < IOU_UBLK_SQES_PER_TAG * depth)
		entries <<= 1;
	ret = iouring_bpf_ring_init(&ring, entries, 2 * entries, IOURING_BPF_RING_FLAGS);
	if (ret) {
		ublk_qfail(qt, ret, "creating the queue's io_uring (%u entries): %s", entries,
			   strerror(-ret));
		goto out;
	}
	ret = register_files(&ring, d);
	if (ret) {
		ublk_qfail(qt, ret, "registering the fixed files: %s", strerror(-ret));
		goto out;
	}
	ret = register_sparse_buffers(&ring, depth);
	if (ret) {
		ublk_qfail(qt, ret, "registering a sparse table of %u fixed buffers: %s", depth,
			   strerror(-ret));
		goto out;
	}

	ret = iouring_bpf_policy_open(c->policy, &p);
	if (ret) {
		ublk_qfail(qt, ret, "%s", iouring_bpf_policy_strerror(p));
		goto out;
	}
	g = iouring_bpf_policy_global_ptr(p, "iou_ublk", &size);
	if (!g || size != sizeof(*g)) {
		ret = -EINVAL;
		ublk_qfail(qt, ret, "%s: no global 'iou_ublk' of type struct "
			   "iouring_bpf_ublk_geometry: not a ublk policy (see iouring_bpf/ublk.h)",
			   c->policy);
		goto out;
	}
	memset(g, 0, sizeof(*g));
	g->dev_id = d->dev.info.dev_id;
	g->q_id = qt->q_id;
	g->depth = depth;
	g->nr_files = c->nr_files;
	g->max_io_bytes = d->dev.info.max_io_buf_bytes;
	g->dev_sectors = c->dev_bytes >> 9;
	for (unsigned int i = 0; i < c->nr_files; i++)
		g->file_sectors[i] = c->file_bytes[i] >> 9;

	ret = iouring_bpf_policy_set_ring(p, &ring);
	if (!ret)
		ret = iouring_bpf_policy_load(p);
	if (ret) {
		ublk_qfail(qt, ret, "%s: %s%s", c->policy, iouring_bpf_policy_strerror(p),
			   ret == -EPERM ? " (loading BPF needs root)" : "");
		goto out;
	}
	ret = iouring_bpf_policy_attach(p);
	if (ret) {
		ublk_qfail(qt, ret, "%s: %s", c->policy, iouring_bpf_policy_strerror(p));
		goto out;
	}
	if (!ublk_may_fetch(qt))
		goto out;
	/* as iouring_bpf_policy_run(), but the daemon may interrupt it for good */
	do
		ret = iouring_bpf_ring_run(&ring);
	while (ret == -EINTR && ublk_may_fetch(qt));
	if (ret == -EINTR) {
		ublk_qfail(qt, ret, "the daemon gave up on the device");
		goto out;
	}
	if (ret) {
		ublk_qfail(qt, ret, "%s: io_uring_enter: %s", c->policy, strerror(-ret));
		goto out;
	}
	if (iouring_bpf_policy_get_global(p, "iou_exit_status", &status, sizeof(status)))
		status = 0;
	if (status)
		ublk_qfail(qt, status, "the policy stopped with status %d (%s)", status,
			   strerror(status < 0 ? -status : status));
out:
	/* detach first, then close the ring: that cancels what the driver holds */
	iouring_bpf_policy_close(p);
	iouring_bpf_ring_exit(&ring);
}
