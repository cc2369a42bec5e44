// SPDX-License-Identifier: GPL-2.0
/*
 * The waitloop test of bpf_printk() from a loop program: every line in
 * tracefs's trace buffer, from the first step on (and, when one is
 * missing, the tracing state that decides what is recorded).
 */
#define _GNU_SOURCE
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

#include "waitloop.h"
#include "printk.skel.h"

/* tracefs, mounted if the guest has not done it yet */
static const char *tracefs(void)
{
	static const char dir[] = "/sys/kernel/tracing";

	if (access("/sys/kernel/tracing/trace", F_OK) &&
	    mount("tracefs", dir, "tracefs", 0, NULL)) {
		fprintf(stderr, "mount tracefs on %s: %s\n", dir, strerror(errno));
		return NULL;
	}
	return dir;
}

/* the tracing state that decides whether an event is recorded, to stderr */
static void dump_tracing_state(const char *dir)
{
	static const char *const files[] = {
		"tracing_on", "buffer_size_kb", "options/pause-on-trace", "set_event",
		"set_event_pid", "tracing_cpumask", "events/bpf_trace/bpf_trace_printk/enable",
		"events/bpf_trace/bpf_trace_printk/filter", "per_cpu/cpu0/stats",
		"per_cpu/cpu1/stats",
	};
	char path[160], buf[1024];
	unsigned int i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		int fd;
		ssize_t n;

		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		fd = open(path, O_RDONLY);
		n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		buf[n > 0 ? n : 0] = 0;
		if (fd >= 0)
			close(fd);
		fprintf(stderr, "  %s: %s%s", files[i], n >= 0 ? buf : strerror(errno),
			n > 0 && buf[n - 1] == '\n' ? "" : "\n");
	}
}

/* the first character of FILE ('?' if unreadable) */
static char read_char(const char *file)
{
	char c = '?';
	int fd = open(file, O_RDONLY);

	if (fd >= 0) {
		if (read(fd, &c, 1) != 1)
			c = '?';
		close(fd);
	}
	return c;
}

/*
 * bpf_printk() from loop_step reaches the trace buffer, line by line, from
 * the first step on. The kernel enables the bpf_trace_printk event for a
 * program that calls it from a work item queued at verification, which may
 * run after the program's first steps on a busy machine; so the test, as a
 * developer who wants every line, enables the event itself before loading
 * (after switching it off, as a user may have left it).
 */
int test_printk(void)
{
	char enable[160];
	struct iouring_bpf_ring r;
	struct printk *skel = NULL;
	struct bpf_link *link = NULL;
	const char *dir = tracefs();
	char path[128], want[96], *buf = NULL;
	int ret, fd, status = KSFT_FAIL;
	unsigned int step, found = 0;
	__u32 token = (__u32)getpid() * 2654435761u ^ (__u32)time(NULL);
	size_t len = 0, cap = 1 << 16;
	ssize_t n;

	if (!dir || !CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	snprintf(enable, sizeof(enable), "%s/events/bpf_trace/bpf_trace_printk/enable", dir);
	if (!CHECK_OK(write_str(enable, "0"), "switch the bpf_trace_printk event off") ||
	    !CHECK(read_char(enable) == '0', "the bpf_trace_printk event is not off") ||
	    !CHECK_OK(write_str(enable, "1"), "enable the bpf_trace_printk event") ||
	    !CHECK(read_char(enable) == '1', "the bpf_trace_printk event is not on"))
		goto out;
	/*
	 * Record into the buffer (as a developer would make sure of; an earlier
	 * user may have stopped it), and start from an empty one: only this
	 * run's lines count.
	 */
	snprintf(path, sizeof(path), "%s/tracing_on", dir);
	if (!CHECK_OK(write_str(path, "1"), "enable tracing_on"))
		goto out;
	snprintf(path, sizeof(path), "%s/trace", dir);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (!CHECK(fd >= 0, "open %s for writing: %s", path, strerror(errno)))
		goto out;
	close(fd);

	skel = printk__open();
	if (!CHECK(skel, "open: %s", strerror(errno)))
		goto out;
	skel->rodata->token = token;
	/* the verifier refuses bpf_trace_printk without CONFIG_BPF_EVENTS */
	link = SKEL_LOAD_ATTACH_RUN(skel, printk_ops, &r, &ret);
	if (!link || !CHECK_OK(ret, "load and run of a policy calling bpf_printk"))
		goto out;
	if (!CHECK(skel->bss->steps == 3, "the loop stopped after %u steps, not 3",
		   skel->bss->steps))
		goto out;

	buf = malloc(cap);
	fd = open(path, O_RDONLY);
	if (!CHECK(buf && fd >= 0, "open %s: %s", path, strerror(errno)))
		goto out;
	while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += n;
		if (len + 1 == cap) {
			char *bigger = realloc(buf, cap * 2);

			if (!bigger)
				break;
			buf = bigger;
			cap *= 2;
		}
	}
	close(fd);
	buf[len] = 0;
	for (step = 1; step <= 3; step++) {
		snprintf(want, sizeof(want), "iouring-bpf printk token=%u step=%u\n",
			 token, step);
		found += strstr(buf, want) != NULL;
	}
	if (found != 3) {
		CHECK(0, "%u of 3 bpf_printk lines with token %u; bpf_printk returned %ld %ld %ld on CPUs %u %u %u; trace holds:\n%.2000s",
		      found, token, skel->bss->printk_ret[1], skel->bss->printk_ret[2],
		      skel->bss->printk_ret[3], skel->bss->printk_cpu[1],
		      skel->bss->printk_cpu[2], skel->bss->printk_cpu[3], buf);
		dump_tracing_state(dir);
		goto out;
	}
	printf("3 bpf_printk lines from loop_step in %s (token %u)\n", path, token);
	status = KSFT_PASS;
out:
	free(buf);
	bpf_link__destroy(link);
	printk__destroy(skel);
	iouring_bpf_ring_exit(&r);
	return status;
}
