/* SPDX-License-Identifier: (LGPL-2.1 OR MIT) */
/* liburing-bpf: helpers shared between its source files, not exported. */
#ifndef LIBURING_BPF_INTERNAL_H
#define LIBURING_BPF_INTERNAL_H

#include <bpf/libbpf.h>

/* The value type's name of a struct_ops map ("io_uring_bpf_ops"), else NULL. */
const char *iouring_bpf__struct_ops_type(const struct bpf_object *obj,
					 const struct bpf_map *map);

#endif
