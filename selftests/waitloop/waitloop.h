/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The waitloop/ selftests: io_uring_bpf_ops on the patched 6.12 kernel.
 * common.c holds the fixture, the helpers the topics share and main();
 * each other .c file holds the tests of one topic.
 */
#ifndef WAITLOOP_TEST_H
#define WAITLOOP_TEST_H

#include <bpf/libbpf.h>
#include <pthread.h>
#include <liburing-bpf.h>
#include "selftest.h"

#define LOOP_FLAGS IOURING_BPF_RING_FLAGS

struct waitloop;
struct review;

unsigned int *cq_word(struct iouring_bpf_ring *r, __u32 off);

/* A ring for the loop plus a waitloop skeleton whose maps point at it. */
struct fixture {
	struct iouring_bpf_ring r;
	struct waitloop *skel;
};

int fixture_open(struct fixture *f, unsigned int entries, unsigned int cq_entries,
		 unsigned int flags);
int fixture_load(struct fixture *f);
void fixture_close(struct fixture *f);
int check_exit(struct fixture *f);

/*
 * The sequence every loop test goes through. The test opens its skeleton
 * and sets its globals and the ring_fd of its struct_ops maps (the kernel
 * copies ring_fd when a map is loaded, so it is set before); these load
 * the skeleton and attach the map @ops. The link, or NULL after a CHECK
 * said which step failed.
 */
struct bpf_link *load_and_attach(struct bpf_object_skeleton *skel, struct bpf_map *ops);
/* ... and run the loop once on @r: *enter_ret is what the enter returned. */
struct bpf_link *load_attach_run(struct bpf_object_skeleton *skel, struct bpf_map *ops,
				 struct iouring_bpf_ring *r, int *enter_ret);

/*
 * The same for a skeleton @skel with one struct_ops map, named @ops in it:
 * point the map at @r, then load and attach (and run). Macros, since each
 * skeleton gives the map's data a type of its own.
 */
#define SKEL_LOAD_ATTACH(skel, ops, r)						\
	((skel)->struct_ops.ops->ring_fd = (r)->fd,				\
	 load_and_attach((skel)->skeleton, (skel)->maps.ops))
#define SKEL_LOAD_ATTACH_RUN(skel, ops, r, enter_ret)				\
	((skel)->struct_ops.ops->ring_fd = (r)->fd,				\
	 load_attach_run((skel)->skeleton, (skel)->maps.ops, (r), (enter_ret)))

/* The review programs (review.bpf.c), opened for ring @r: every map points at it. */
struct review *review_load(struct iouring_bpf_ring *r);

/* For a thread beside the loop: after delay_ms, destroy link or signal target. */
struct delayed {
	struct bpf_link *link;
	pthread_t target;
	int delay_ms;
	int destroy_ret;
};

void on_alarm(int sig);
int run_bounded(struct iouring_bpf_ring *r, unsigned int secs,
		void *(*helper)(void *), void *arg);

double now_s(void);
int write_str(const char *path, const char *val);

/* attach.c: attach, detach and the attaches the kernel refuses */
int test_attach_detach(void);
int test_refuse_no_defer(void);
int test_refuse_sqpoll(void);
int test_refuse_iopoll(void);
int test_refuse_second(void);
int test_refuse_thread(void);
int test_ring_closed(void);
int test_detach_sleeping(void);
int test_reattach_while_sleeping(void);
int test_detach_no_stray_wakeup(void);

/* waits.c: how the loop's waits end */
int test_signal(void);
int test_timeout(void);
int test_never_waits(void);
int test_far_timeout(void);
int test_output_flag_refused(void);
int test_timeout_overdue(void);

/* ring.c: the ring under the loop */
int test_cq_overflow(void);
int test_param_region(void);
int test_sq_rewind(void);
int test_cq_dropped(void);

/* verifier.c: programs the verifier refuses */
int test_verifier_write_ctx(void);
int test_verifier_read_ctx(void);
int test_verifier_write_step(void);
int test_verifier_region_past_size(void);
int test_verifier_region_nonconst(void);
int test_kfunc_filter(void);

/* policies.c: whole policies, the library's and mainline-style ones */
int test_nops(void);
int test_copy(void);
int test_mainline_only(void);
int test_mainline72(void);

/* tracing.c: bpf_printk() to the trace buffer */
int test_printk(void);

/* execution.c: what the loop does around each call of its program */
int test_tasks_trace_latency(void);
int test_worker_from_program(void);
int test_direct_stats(void);
int test_non_sleepable_step(void);

#endif
