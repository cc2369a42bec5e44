// SPDX-License-Identifier: (LGPL-2.1 OR MIT)
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "liburing-bpf.h"

int iouring_bpf_ring_init(struct iouring_bpf_ring *ring, unsigned int entries,
			  unsigned int cq_entries, unsigned int flags)
{
	struct io_uring_params *p = &ring->params;
	size_t cq_size, sq_size;
	int ret;

	memset(ring, 0, sizeof(*ring));
	ring->fd = -1;
	p->flags = flags;
	if (cq_entries) {
		p->flags |= IORING_SETUP_CQSIZE;
		p->cq_entries = cq_entries;
	}
	ret = syscall(__NR_io_uring_setup, entries, p);
	if (ret < 0)
		return -errno;
	ring->fd = ret;

	/* one mapping holds both ring headers and the CQEs (FEAT_SINGLE_MMAP) */
	cq_size = p->cq_off.cqes + (size_t)p->cq_entries * sizeof(struct io_uring_cqe) *
		  (p->flags & IORING_SETUP_CQE32 ? 2 : 1);
	sq_size = p->sq_off.array + (size_t)p->sq_entries * sizeof(__u32);
	ring->ring_mem_size = cq_size > sq_size ? cq_size : sq_size;
	ring->ring_mem = mmap(NULL, ring->ring_mem_size, PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_POPULATE, ring->fd, IORING_OFF_SQ_RING);
	if (ring->ring_mem == MAP_FAILED) {
		ret = -errno;
		ring->ring_mem = NULL;
		goto err;
	}
	ring->sqes_size = (size_t)p->sq_entries * sizeof(struct io_uring_sqe) *
			  (p->flags & IORING_SETUP_SQE128 ? 2 : 1);
	ring->sqes = mmap(NULL, ring->sqes_size, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_POPULATE, ring->fd, IORING_OFF_SQES);
	if (ring->sqes == MAP_FAILED) {
		ret = -errno;
		ring->sqes = NULL;
		goto err;
	}

	ring->geom = (struct iouring_bpf_geometry){
		.sq_entries = p->sq_entries,
		.cq_entries = p->cq_entries,
		.cq_head = p->cq_off.head,
		.cq_tail = p->cq_off.tail,
		.cq_cqes = p->cq_off.cqes,
		.cq_overflow = p->cq_off.overflow,
		.cq_region_size = cq_size,
		.sq_region_size = ring->sqes_size,
		.size = sizeof(struct iouring_bpf_geometry),
		.version = IOURING_BPF_GEOMETRY_VERSION,
		.sqe_size = p->flags & IORING_SETUP_SQE128 ? 128 : 64,
	};
	return 0;
err:
	iouring_bpf_ring_exit(ring);
	return ret;
}

void iouring_bpf_ring_exit(struct iouring_bpf_ring *ring)
{
	if (ring->sqes)
		munmap(ring->sqes, ring->sqes_size);
	if (ring->ring_mem)
		munmap(ring->ring_mem, ring->ring_mem_size);
	if (ring->fd >= 0)
		close(ring->fd);
	ring->sqes = NULL;
	ring->ring_mem = NULL;
	ring->fd = -1;
}

int iouring_bpf_ring_run(struct iouring_bpf_ring *ring)
{
	int ret = syscall(__NR_io_uring_enter, ring->fd, 0, 0, IORING_ENTER_GETEVENTS,
			  NULL, 0);

	return ret < 0 ? -errno : ret;
}

int iouring_bpf_ring_register_mem(struct iouring_bpf_ring *ring, void *addr, size_t size)
{
	struct io_uring_region_desc rd = {
		.user_addr = (uintptr_t)addr,
		.size = size,
		.flags = IORING_MEM_REGION_TYPE_USER,
	};
	struct io_uring_mem_region_reg reg = { .region_uptr = (uintptr_t)&rd };
	int ret = syscall(__NR_io_uring_register, ring->fd, IORING_REGISTER_MEM_REGION,
			  &reg, 1);

	if (ret < 0)
		return -errno;
	ring->geom.mem_region_size = size;
	return 0;
}
