// SPDX-License-Identifier: GPL-2.0
/* Load minimal.bpf.c onto a new ring and run it. */
#include <bpf/libbpf.h>
#include <stdio.h>
#include <string.h>
#include <liburing-bpf.h>
#include "minimal.skel.h"

int main(void)
{
	struct iouring_bpf_ring ring;
	struct minimal *skel = NULL;
	struct bpf_link *link = NULL;
	int ret;

	ret = iouring_bpf_ring_init(&ring, 8, 0, IOURING_BPF_RING_FLAGS);
	if (ret) {
		fprintf(stderr, "ring: %s\n", strerror(-ret));
		return 1;
	}
	skel = minimal__open();
	if (!skel)
		goto fail;
	skel->rodata->iou_geom = ring.geom;	/* where head, tail, CQEs are */
	skel->rodata->total = 1000;
	skel->struct_ops.minimal_ops->ring_fd = ring.fd;	/* before load */
	if (minimal__load(skel))
		goto fail;
	link = bpf_map__attach_struct_ops(skel->maps.minimal_ops);
	if (!link)
		goto fail;

	ret = iouring_bpf_ring_run(&ring);	/* the whole loop, in the kernel */
	printf("loop returned %d after %u NOPs\n", ret, skel->bss->done);
	ret = ret || skel->bss->done != 1000;
	goto out;
fail:
	perror("minimal");
	ret = 1;
out:
	bpf_link__destroy(link);
	minimal__destroy(skel);
	iouring_bpf_ring_exit(&ring);
	return ret;
}
