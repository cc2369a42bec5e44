// SPDX-License-Identifier: GPL-2.0
/*
 * loop_step programs for the loop's direct run of a sleepable program
 * (kernel patch 40): what the struct_ops trampoline did for each step (BPF
 * statistics, the RCU tasks-trace section a hash map relies on) must still
 * happen. (The non-sleepable case is bench/nop_chain/step_trampoline.bpf.c,
 * which the loop still calls through its trampoline.)
 */
#include <iouring_bpf/ring.bpf.h>

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 step_total = 1000;
__u64 sleepable_steps, map_misses;

/* a sleepable program's hash map elements are freed after tasks-trace RCU */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} step_counts SEC(".maps");

/* never waits; one hash map update and lookup per step */
IOURING_BPF_STEP(counted)
{
	__u32 key = sleepable_steps % 64;
	__u64 one = 1, *v;

	sleepable_steps++;
	v = bpf_map_lookup_elem(&step_counts, &key);
	if (v)
		__sync_fetch_and_add(v, 1);
	else if (bpf_map_update_elem(&step_counts, &key, &one, BPF_ANY))
		map_misses++;
	if (sleepable_steps >= step_total)
		return IOU_LOOP_STOP;
	return IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(counted_ops, counted);
