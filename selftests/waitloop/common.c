// SPDX-License-Identifier: GPL-2.0
/*
 * The waitloop/ selftests: io_uring_bpf_ops on the patched 6.12 kernel.
 * What the topics share: the waitloop fixture, the load/attach/run
 * sequence, bounded runs and the review programs; and main(), which runs
 * the test named by its argument (see the table at the end).
 * Usage: waitloop_test TEST | --list
 */
#define _GNU_SOURCE
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "waitloop.h"
#include "waitloop.skel.h"
#include "review.skel.h"

unsigned int *cq_word(struct iouring_bpf_ring *r, __u32 off)
{
	return (unsigned int *)((char *)r->ring_mem + off);
}

/*
 * The kernel copies ring_fd when the struct_ops map is loaded, so every map
 * points at the fixture's ring before load; attaching only picks the map.
 */
int fixture_open(struct fixture *f, unsigned int entries, unsigned int cq_entries,
		 unsigned int flags)
{
	struct waitloop *k;
	int ret;

	memset(f, 0, sizeof(*f));
	ret = iouring_bpf_ring_init(&f->r, entries, cq_entries, flags);
	if (!CHECK_OK(ret, "io_uring_setup"))
		return ret;
	f->skel = waitloop__open();
	if (!CHECK(f->skel, "waitloop__open: %s", strerror(errno)))
		return -errno;
	k = f->skel;
	k->rodata->iou_geom = f->r.geom;
	k->struct_ops.stop_ops->ring_fd = f->r.fd;
	k->struct_ops.stop_ops2->ring_fd = f->r.fd;
	k->struct_ops.sleeper_ops->ring_fd = f->r.fd;
	k->struct_ops.overflow_ops->ring_fd = f->r.fd;
	k->struct_ops.param_ops->ring_fd = f->r.fd;
	return 0;
}

/* Load only, for a test that attaches by itself (expecting a refusal). */
int fixture_load(struct fixture *f)
{
	int ret = waitloop__load(f->skel);

	CHECK_OK(ret, "waitloop__load");
	return ret;
}

void fixture_close(struct fixture *f)
{
	waitloop__destroy(f->skel);
	iouring_bpf_ring_exit(&f->r);
}

int check_exit(struct fixture *f)
{
	if (!CHECK(f->skel->bss->exit_error == 0, "program stopped with %d at line %d",
		   f->skel->bss->exit_error, f->skel->bss->exit_line))
		return KSFT_FAIL;
	return KSFT_PASS;
}

struct bpf_link *load_and_attach(struct bpf_object_skeleton *skel, struct bpf_map *ops)
{
	/* <name>__load(): it also points the skeleton's bss, data... at the maps */
	int ret = bpf_object__load_skeleton(skel);
	struct bpf_link *link;

	if (!CHECK(ret == 0, "%s__load: %s", skel->name, strerror(-ret)))
		return NULL;
	link = bpf_map__attach_struct_ops(ops);
	CHECK(link, "attach %s: %s", bpf_map__name(ops), strerror(errno));
	return link;
}

struct bpf_link *load_attach_run(struct bpf_object_skeleton *skel, struct bpf_map *ops,
				 struct iouring_bpf_ring *r, int *enter_ret)
{
	struct bpf_link *link = load_and_attach(skel, ops);

	if (link)
		*enter_ret = iouring_bpf_ring_run(r);
	return link;
}

/* A hang here would be the bug; the alarm turns it into a failure. */
void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "FAIL: io_uring_enter still blocked at the test's time bound\n";
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(KSFT_FAIL);
}

/*
 * Run the loop on @r, bounded by a SIGALRM after @secs, with @helper (if
 * any) on a thread beside it that is joined before returning.
 */
int run_bounded(struct iouring_bpf_ring *r, unsigned int secs,
		void *(*helper)(void *), void *arg)
{
	pthread_t t;
	int ret;

	/* without its helper the loop would wait for what never comes */
	if (helper) {
		ret = pthread_create(&t, NULL, helper, arg);
		if (ret) {
			fprintf(stderr, "pthread_create: %s\n", strerror(ret));
			return -ret;
		}
	}
	signal(SIGALRM, on_alarm);
	alarm(secs);
	ret = iouring_bpf_ring_run(r);
	alarm(0);
	if (helper)
		pthread_join(t, NULL);
	return ret;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The review programs: reproducers for loop defects a review found. */
struct review *review_load(struct iouring_bpf_ring *r)
{
	struct review *skel = review__open();

	if (!CHECK(skel, "review__open: %s", strerror(errno)))
		return NULL;
	skel->rodata->iou_geom = r->geom;
	skel->struct_ops.spin_ops->ring_fd = r->fd;
	skel->struct_ops.far_ops->ring_fd = r->fd;
	skel->struct_ops.echo_ops->ring_fd = r->fd;
	skel->struct_ops.first_ops->ring_fd = r->fd;
	skel->struct_ops.second_ops->ring_fd = r->fd;
	skel->struct_ops.flood_ops->ring_fd = r->fd;
	skel->struct_ops.overdue_ops->ring_fd = r->fd;
	skel->struct_ops.async_ops->ring_fd = r->fd;
	skel->rodata->workers_tgid = getpid();
	return skel;
}

int write_str(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static const struct {
	const char *name;
	int (*fn)(void);
} tests[] = {
	{ "attach-detach", test_attach_detach },
	{ "nop-loop", test_nops },
	{ "copy", test_copy },
	{ "refuse-no-defer-taskrun", test_refuse_no_defer },
	{ "refuse-sqpoll", test_refuse_sqpoll },
	{ "refuse-iopoll", test_refuse_iopoll },
	{ "refuse-second-program", test_refuse_second },
	{ "refuse-non-submitter", test_refuse_thread },
	{ "ring-closed-attached", test_ring_closed },
	{ "detach-while-sleeping", test_detach_sleeping },
	{ "signal-eintr", test_signal },
	{ "cq-overflow", test_cq_overflow },
	{ "timeout", test_timeout },
	{ "param-region", test_param_region },
	{ "sq-rewind", test_sq_rewind },
	{ "verifier-write-ctx", test_verifier_write_ctx },
	{ "verifier-read-ctx", test_verifier_read_ctx },
	{ "verifier-write-readonly-param", test_verifier_write_step },
	{ "verifier-region-past-size", test_verifier_region_past_size },
	{ "verifier-region-nonconst-size", test_verifier_region_nonconst },
	{ "mainline-only", test_mainline_only },
	{ "mainline-7.2-ctx", test_mainline72 },
	{ "printk", test_printk },
	{ "never-waits-lock", test_never_waits },
	{ "timeout-far", test_far_timeout },
	{ "timeout-output-flag", test_output_flag_refused },
	{ "reattach-while-sleeping", test_reattach_while_sleeping },
	{ "kfunc-filter", test_kfunc_filter },
	{ "cq-dropped", test_cq_dropped },
	{ "timeout-overdue", test_timeout_overdue },
	{ "worker-from-program", test_worker_from_program },
	{ "detach-no-stray-wakeup", test_detach_no_stray_wakeup },
	{ "direct-stats", test_direct_stats },
	{ "non-sleepable-step", test_non_sleepable_step },
	{ "tasks-trace-latency", test_tasks_trace_latency },
};

/* Quiet libbpf unless a test fails; the verifier tests expect errors. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG || getenv("WAITLOOP_QUIET_LIBBPF"))
		return 0;
	return vfprintf(stderr, fmt, args);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
			printf("%s\n", tests[i].name);
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: %s TEST | --list\n", argv[0]);
		return KSFT_FAIL;
	}
	libbpf_set_print(libbpf_print);
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!strcmp(argv[1], tests[i].name))
			return tests[i].fn();
	fprintf(stderr, "unknown test %s\n", argv[1]);
	return KSFT_FAIL;
}
