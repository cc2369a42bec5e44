// SPDX-License-Identifier: GPL-2.0
/*
 * The waitloop tests of what the loop does around each call of its
 * program: the RCU tasks-trace section it keeps across steps, the
 * migrate_disable() io-wq workers created from a program must not inherit,
 * BPF statistics and map access of a sleepable program called directly,
 * and a non-sleepable one, called through its trampoline.
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "waitloop.h"
#include "../../bench/bench.h"
#include "review.skel.h"
#include "direct.skel.h"
#include "step_trampoline.skel.h"

#define GP_ROUNDS 9

/* ms one tracepoint detach takes: an RCU tasks-trace grace period */
static double tasks_trace_gp_ms(struct bpf_program *prog)
{
	struct bpf_link *link = bpf_program__attach(prog);
	double t;

	if (!link)
		return -1;
	t = now_s();
	bpf_link__destroy(link);
	return (now_s() - t) * 1e3;
}

struct gp_probe {
	struct review *skel;
	double ms[GP_ROUNDS];
	__u64 steps_before, steps_after;
	int failed;
};

/* While the loop spins: grace periods, then stop the program. */
static void *measure_gp(void *arg)
{
	struct gp_probe *g = arg;
	volatile __u64 *steps = &g->skel->bss->spin_steps;

	while (*steps < 1000)
		usleep(1000);
	g->steps_before = *steps;
	for (int i = 0; i < GP_ROUNDS && !g->failed; i++) {
		g->ms[i] = tasks_trace_gp_ms(g->skel->progs.gp_probe);
		g->failed = g->ms[i] < 0;
	}
	g->steps_after = *steps;
	g->skel->bss->spin_stop = 1;
	return NULL;
}

/*
 * A sleepable program runs inside an RCU tasks-trace read section, and the
 * loop keeps that section across a few steps (kernel patches 38 and 40).
 * Bounded as it is, a grace period waits at most a few steps for a loop that
 * never sleeps: synchronize_rcu_tasks_trace() takes no more than twice as
 * long while such a loop spins as when nothing runs, in the same boot.
 */
int test_tasks_trace_latency(void)
{
	struct iouring_bpf_ring r;
	struct bpf_link *link = NULL;
	struct gp_probe g = { 0 };
	double idle[GP_ROUNDS], idle_ms, busy_ms;
	int ret, status = KSFT_FAIL;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	g.skel = review_load(&r);
	if (!g.skel || !CHECK_OK(review__load(g.skel), "load"))
		goto out;
	for (int i = 0; i < GP_ROUNDS; i++) {
		idle[i] = tasks_trace_gp_ms(g.skel->progs.gp_probe);
		if (!CHECK(idle[i] >= 0, "attach to sys_enter_getppid: %s", strerror(errno)))
			goto out;
	}
	idle_ms = bench_median(idle, GP_ROUNDS);
	link = bpf_map__attach_struct_ops(g.skel->maps.spin_ops);
	if (!CHECK(link, "attach spin_ops: %s", strerror(errno)))
		goto out;
	ret = run_bounded(&r, 60, measure_gp, &g);
	if (!CHECK(ret == 0, "enter returned %d, want 0 (the program stopped)", ret) ||
	    !CHECK(!g.failed, "attach to sys_enter_getppid while the loop spun: %s",
		   strerror(errno)) ||
	    !CHECK(g.steps_after > g.steps_before,
		   "the loop did not run while the grace periods were measured"))
		goto out;
	busy_ms = bench_median(g.ms, GP_ROUNDS);
	printf("synchronize_rcu_tasks_trace(), median of %d: %.2f ms idle, %.2f ms while the loop "
	       "spun (%.2fx, %llu steps meanwhile; TCG)\n", GP_ROUNDS, idle_ms, busy_ms,
	       busy_ms / idle_ms, (unsigned long long)(g.steps_after - g.steps_before));
	if (!CHECK(busy_ms <= 2 * idle_ms,
		   "a grace period took %.2f ms while the loop spun, more than twice the idle %.2f ms",
		   busy_ms, idle_ms))
		goto out;
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	review__destroy(g.skel);
	iouring_bpf_ring_exit(&r);
	return status;
}

/*
 * io-wq creates its workers from inside the program (IOSQE_ASYNC NOPs), and
 * the program runs with migration disabled. A worker must not inherit that:
 * it never runs the matching migrate_enable(), so the scheduler would later
 * move a task it believes pinned (a set_task_cpu WARNING, seen in fio runs).
 */
int test_worker_from_program(void)
{
	struct iouring_bpf_ring r;
	struct review *skel = NULL;
	struct bpf_link *link = NULL, *iter = NULL;
	int ret, iter_fd = -1, status = KSFT_FAIL, workers = 0, bad = 0;
	char buf[4096];
	ssize_t len = 0, n;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 16, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	skel = review_load(&r);
	if (!skel || !(link = load_and_attach(skel->skeleton, skel->maps.async_ops)))
		goto out;
	ret = run_bounded(&r, 30, NULL, NULL);
	if (!CHECK(ret == 0 && skel->bss->exit_error == 0, "enter %d, program error %d", ret,
		   skel->bss->exit_error) ||
	    !CHECK(skel->bss->async_reaped == 4 && skel->bss->async_bad_res == 0,
		   "reaped %u of 4 async NOPs (a result %d)", skel->bss->async_reaped,
		   skel->bss->async_bad_res))
		goto out;
	/* let the workers go idle: a running one could be inside a program */
	usleep(100 * 1000);
	iter = bpf_program__attach_iter(skel->progs.worker_state, NULL);
	if (!CHECK(iter, "attach the task iterator: %s", strerror(errno)))
		goto out;
	iter_fd = bpf_iter_create(bpf_link__fd(iter));
	if (!CHECK(iter_fd >= 0, "bpf_iter_create: %s", strerror(errno)))
		goto out;
	while (len < (ssize_t)sizeof(buf) - 1 &&
	       (n = read(iter_fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	buf[len] = 0;
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		int tid, own_mask;
		unsigned int disabled;

		if (sscanf(line, "%d %u %d", &tid, &disabled, &own_mask) != 3)
			continue;
		workers++;
		printf("io-wq worker %d: migration_disabled %u, %s CPU mask\n", tid, disabled,
		       own_mask ? "own" : "a borrowed one-CPU");
		if (disabled || !own_mask)
			bad++;
	}
	if (!CHECK(workers > 0, "no io-wq worker found: the IOSQE_ASYNC NOPs did not reach io-wq") ||
	    !CHECK(bad == 0, "%d of %d workers inherited the program's migrate_disable()", bad,
		   workers))
		goto out;
	status = KSFT_PASS;
out:
	if (iter_fd >= 0)
		close(iter_fd);
	bpf_link__destroy(iter);
	bpf_link__destroy(link);
	review__destroy(skel);
	iouring_bpf_ring_exit(&r);
	return status;
}

static int prog_stats(struct bpf_program *prog, __u64 *run_cnt, __u64 *run_time_ns)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (bpf_prog_get_info_by_fd(bpf_program__fd(prog), &info, &len))
		return -errno;
	*run_cnt = info.run_cnt;
	*run_time_ns = info.run_time_ns;
	return 0;
}

/*
 * The loop runs a sleepable program itself, not through its trampoline;
 * what the trampoline did for each call must still happen. BPF statistics
 * count every step while on and nothing while off, and a hash map, whose
 * elements a sleepable program reaches under RCU tasks-trace, counts every
 * step too.
 */
int test_direct_stats(void)
{
	const __u32 total = 1000;
	struct iouring_bpf_ring r;
	struct direct *skel = NULL;
	struct bpf_link *link = NULL;
	__u64 cnt0, ns0, cnt1, ns1, cnt2, ns2, sum = 0;
	int stats_fd = -1, status = KSFT_FAIL, map_fd;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	/* selftests/waitloop/direct.bpf.c, @total steps a run */
	skel = direct__open();
	if (!CHECK(skel, "direct__open: %s", strerror(errno)))
		goto out;
	skel->rodata->iou_geom = r.geom;
	skel->rodata->step_total = total;
	link = SKEL_LOAD_ATTACH(skel, counted_ops, &r);
	if (!link)
		goto out;
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (!CHECK(stats_fd >= 0, "BPF_ENABLE_STATS: %s", strerror(errno)) ||
	    !CHECK_OK(prog_stats(skel->progs.counted, &cnt0, &ns0), "prog info") ||
	    !CHECK_OK(iouring_bpf_ring_run(&r), "run with statistics on") ||
	    !CHECK_OK(prog_stats(skel->progs.counted, &cnt1, &ns1), "prog info"))
		goto out;
	close(stats_fd);
	stats_fd = -1;
	if (!CHECK(skel->bss->sleepable_steps == total, "first run took %llu steps, want %u",
		   (unsigned long long)skel->bss->sleepable_steps, total))
		goto out;
	skel->bss->sleepable_steps = 0;
	if (!CHECK_OK(iouring_bpf_ring_run(&r), "run with statistics off") ||
	    !CHECK_OK(prog_stats(skel->progs.counted, &cnt2, &ns2), "prog info"))
		goto out;
	map_fd = bpf_map__fd(skel->maps.step_counts);
	for (__u32 key = 0; key < 64; key++) {
		__u64 v = 0;

		if (!bpf_map_lookup_elem(map_fd, &key, &v))
			sum += v;
	}
	if (!CHECK(cnt1 - cnt0 == total, "statistics on: run_cnt grew by %llu in %u steps",
		   (unsigned long long)(cnt1 - cnt0), total) ||
	    !CHECK(ns1 > ns0, "statistics on: run_time_ns stayed at %llu",
		   (unsigned long long)ns1) ||
	    !CHECK(cnt2 == cnt1 && ns2 == ns1,
		   "statistics off: run_cnt grew by %llu, run_time_ns by %llu",
		   (unsigned long long)(cnt2 - cnt1), (unsigned long long)(ns2 - ns1)) ||
	    !CHECK(skel->bss->sleepable_steps == total, "second run took %llu steps, want %u",
		   (unsigned long long)skel->bss->sleepable_steps, total) ||
	    !CHECK(!skel->bss->map_misses && sum == 2 * total,
		   "hash map counted %llu steps of %u (%llu updates failed)",
		   (unsigned long long)sum, 2 * total,
		   (unsigned long long)skel->bss->map_misses))
		goto out;
	printf("%u steps with statistics on: run_cnt +%llu, run_time_ns +%llu; off: +0; hash map %llu\n",
	       total, (unsigned long long)(cnt1 - cnt0), (unsigned long long)(ns1 - ns0),
	       (unsigned long long)sum);
	status = KSFT_PASS;
out:
	if (stats_fd >= 0)
		close(stats_fd);
	bpf_link__destroy(link);
	direct__destroy(skel);
	iouring_bpf_ring_exit(&r);
	return status;
}

/*
 * A program without BPF_F_SLEEPABLE still runs, through its trampoline: the
 * empty step nop_chain measures that way (bench/nop_chain).
 */
int test_non_sleepable_step(void)
{
	const __u32 total = 1000;
	struct iouring_bpf_ring r;
	struct step_trampoline *skel = NULL;
	struct bpf_link *link = NULL;
	int ret, status = KSFT_FAIL;

	if (!CHECK_OK(iouring_bpf_ring_init(&r, 8, 0, LOOP_FLAGS), "setup"))
		return KSFT_FAIL;
	skel = step_trampoline__open();
	if (!CHECK(skel, "step_trampoline__open: %s", strerror(errno)))
		goto out;
	skel->rodata->step_total = total;
	link = SKEL_LOAD_ATTACH(skel, trampoline_ops, &r);
	if (!link ||
	    !CHECK(!(bpf_program__flags(skel->progs.trampoline_step) & BPF_F_SLEEPABLE),
		   "trampoline_step was loaded sleepable"))
		goto out;
	ret = iouring_bpf_ring_run(&r);
	if (!CHECK(ret == 0, "run: %d", ret) ||
	    !CHECK(skel->bss->steps == total, "took %llu steps, want %u",
		   (unsigned long long)skel->bss->steps, total))
		goto out;
	printf("non-sleepable loop_step: %u steps\n", total);
	status = KSFT_PASS;
out:
	bpf_link__destroy(link);
	step_trampoline__destroy(skel);
	iouring_bpf_ring_exit(&r);
	return status;
}
