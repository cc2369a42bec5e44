/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal helpers for selftest programs: exit codes the runner understands
 * and checks that report where and why they failed.
 */
#ifndef IOURING_BPF_SELFTEST_H
#define IOURING_BPF_SELFTEST_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

#ifdef __BPF__
#error "selftest.h is for user space; BPF programs include iouring_bpf/*.bpf.h"
#endif

enum {
	KSFT_PASS = 0,
	KSFT_FAIL = 1,
	KSFT_SKIP = 77,
};

/* CHECK(cond, fmt, ...): on failure print the location and message, then
 * evaluate to false so the caller can `goto out` with a failing status. */
#define CHECK(cond, fmt, ...)                                                  \
	({                                                                     \
		int __ok = !!(cond);                                           \
		if (!__ok)                                                     \
			fprintf(stderr, "%s:%d: check failed: %s: " fmt "\n",  \
				__FILE__, __LINE__, #cond, ##__VA_ARGS__);     \
		__ok;                                                          \
	})

/* An errno-style return (0 or -errno) that must be 0; evaluated once. */
#define CHECK_OK(ret, what)                                                    \
	({                                                                     \
		long __ret = (ret);                                            \
		CHECK(__ret == 0, "%s: %s", what,                              \
		      strerror(__ret < 0 ? -__ret : __ret));                   \
	})

#endif
