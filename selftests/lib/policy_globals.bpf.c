// SPDX-License-Identifier: GPL-2.0
/* Globals of every kind, for lib/policy-globals (BTF only; never loaded). */
#include <iouring_bpf/ring.bpf.h>

char LICENSE[] SEC("license") = "GPL";

enum color { RED, GREEN, BLUE };
struct pair { __u32 a, b; };

const volatile __u8 g_u8 = 1;
const volatile __s16 g_s16 = -2;
const volatile __u32 g_u32 = 3;
const volatile __s64 g_s64 = -4;
const volatile __u64 g_u64 = ~0ULL;	/* prints as 18446744073709551615, not -1 */
const volatile bool g_bool;
const volatile enum color g_color = GREEN;
const int g_const = 5;		/* folded into the program: never settable */
__u64 g_counter;
struct pair g_pair;
static __u32 g_static;

IOURING_BPF_STEP(globals_step)
{
	g_counter += g_u8 + g_s16 + g_u32 + g_s64 + g_u64 + g_bool + g_color + g_const + g_pair.a;
	g_static++;
	return g_static ? IOU_LOOP_STOP : IOU_LOOP_CONTINUE;
}
IOURING_BPF_OPS(globals_ops, globals_step);
