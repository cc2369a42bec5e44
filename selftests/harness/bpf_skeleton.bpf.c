// SPDX-License-Identifier: GPL-2.0
/* A struct_ops-free program that proves the BPF build: vmlinux.h, libbpf
 * headers, globals in .rodata and .bss, and a skeleton. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

const volatile __u64 magic;
__u64 seen_magic;
__u64 run_count;

SEC("syscall")
int probe(void *ctx)
{
	run_count++;
	seen_magic = magic;
	return 42;
}

char LICENSE[] SEC("license") = "GPL";
