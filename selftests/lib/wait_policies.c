// SPDX-License-Identifier: GPL-2.0
/*
 * lib/wait-policies (VM): the batch policy with its multi-step min-wait and
 * target queue depth, on timeout requests whose completions are spread out
 * in time. Asserts behaviour (how often the loop woke, whether a phase
 * expired, the in-flight peak), never a duration.
 */
#include <bpf/libbpf.h>
#include <stdint.h>
#include <liburing-bpf.h>
#include <iouring_bpf/link.h>
#include <iouring_bpf/wait.h>
#include "batch.skel.h"
#include "selftest.h"

#define MS 1000000ULL

static struct __kernel_timespec spans[16];

struct outcome {
	__u64 steps, completed, errors, peak, batches, expiries, cur_wait;
	int status, ret;
};

/*
 * total timeouts, from templates lasting durations_ms[i], depth in flight,
 * min-wait configured as given.
 */
static int run(const unsigned int *durations_ms, unsigned int nr_tmpl, unsigned int total,
	       unsigned int depth, unsigned int batch, __u64 min_wait, __u64 max_wait,
	       unsigned int backoff, struct outcome *o)
{
	struct iouring_bpf_ring ring;
	struct batch *skel = NULL;
	struct bpf_link *link = NULL;
	int ret = -1;

	memset(o, 0, sizeof(*o));
	if (!CHECK_OK(iouring_bpf_ring_init(&ring, 32, 64, IOURING_BPF_RING_FLAGS), "ring"))
		return -1;
	skel = batch__open();
	if (!CHECK(skel, "batch__open: %s", strerror(errno)))
		goto out;
	skel->rodata->iou_geom = ring.geom;
	skel->struct_ops.batch_ops->ring_fd = ring.fd;
	if (!CHECK_OK(batch__load(skel), "batch__load"))
		goto out;
	link = bpf_map__attach_struct_ops(skel->maps.batch_ops);
	if (!CHECK(link, "attach: %s", strerror(errno)))
		goto out;

	for (unsigned int i = 0; i < nr_tmpl; i++) {
		spans[i] = (struct __kernel_timespec){ .tv_sec = durations_ms[i] / 1000,
						       .tv_nsec = durations_ms[i] % 1000 * MS };
		skel->bss->batch_tmpl[i] = (struct iou_link_req){
			.opcode = IORING_OP_TIMEOUT, .fd = -1,
			.addr = (uintptr_t)&spans[i], .len = 1,
		};
	}
	skel->data->batch_nr_tmpl = nr_tmpl;
	skel->bss->batch_total = total;
	skel->data->batch_depth = depth;
	skel->data->batch_wait = (struct iou_minwait){
		.batch = batch, .min_wait_ns = min_wait, .max_wait_ns = max_wait,
		.backoff = backoff,
	};
	o->ret = iouring_bpf_ring_run(&ring);
	o->status = skel->bss->iou_exit_status;
	o->steps = skel->bss->batch_steps;
	o->completed = skel->bss->batch_completed;
	o->errors = skel->bss->batch_errors;
	o->peak = skel->bss->batch_peak_inflight;
	o->batches = skel->data->batch_wait.batches;
	o->expiries = skel->data->batch_wait.expiries;
	o->cur_wait = skel->data->batch_wait.cur_wait_ns;
	ret = CHECK(o->ret == 0 && o->status == 0 && o->completed == total,
		    "run: ret %d status %d completed %llu of %u", o->ret, o->status,
		    (unsigned long long)o->completed, total) ? 0 : -1;
out:
	bpf_link__destroy(link);
	batch__destroy(skel);
	iouring_bpf_ring_exit(&ring);
	return ret;
}

int main(void)
{
	/* 16 templates finishing 1..16 ms after submission: spread out */
	unsigned int spread[16];
	struct outcome one, sixteen, stuck, back, qd;
	int ok = 1;

	setvbuf(stdout, NULL, _IONBF, 0);
	for (unsigned int i = 0; i < 16; i++)
		spread[i] = i + 1;

	/* A: waking for every CQE vs for batches of 16 (never expiring) */
	if (run(spread, 16, 64, 16, 1, 1000 * MS, 0, 0, &one) ||
	    run(spread, 16, 64, 16, 16, 5000 * MS, 0, 0, &sixteen))
		return KSFT_FAIL;
	ok &= CHECK(sixteen.expiries == 0, "batch 16 expired %llu times",
		    (unsigned long long)sixteen.expiries);
	ok &= CHECK(sixteen.steps * 2 < one.steps,
		    "batching did not cut wake-ups: %llu steps with batch 16, %llu with batch 1",
		    (unsigned long long)sixteen.steps, (unsigned long long)one.steps);
	printf("64 spread timeouts, depth 16: %llu steps waking per CQE, %llu in batches of 16 (%llu batches)\n",
	       (unsigned long long)one.steps, (unsigned long long)sixteen.steps,
	       (unsigned long long)sixteen.batches);

	/* B: a batch that cannot fill: one request takes 2 s; min-wait 50 ms */
	unsigned int one_slow[16];
	for (unsigned int i = 0; i < 16; i++)
		one_slow[i] = i == 15 ? 2000 : i + 1;
	if (run(one_slow, 16, 16, 16, 16, 50 * MS, 0, 0, &stuck))
		return KSFT_FAIL;
	ok &= CHECK(stuck.expiries >= 1, "the min-wait never expired");
	ok &= CHECK(stuck.errors == 16, "timeouts report -ETIME: %llu errors",
		    (unsigned long long)stuck.errors);
	printf("batch of 16 with one 2 s request: min-wait expired %llu times, then took what came\n",
	       (unsigned long long)stuck.expiries);

	/* C: back-off doubles the min-wait on each expiry, up to max_wait */
	if (run(one_slow, 16, 16, 16, 16, 20 * MS, 400 * MS, 1, &back))
		return KSFT_FAIL;
	__u64 want = 20 * MS;
	for (__u64 e = 0; e < back.expiries; e++)
		want = want * 2 > 400 * MS ? 400 * MS : want * 2;
	ok &= CHECK(back.expiries >= 1 && back.cur_wait == want,
		    "back-off: %llu expiries, min-wait now %llu ns, want %llu",
		    (unsigned long long)back.expiries, (unsigned long long)back.cur_wait,
		    (unsigned long long)want);
	printf("back-off: %llu expiries, min-wait grew from 20 ms to %llu ms\n",
	       (unsigned long long)back.expiries, (unsigned long long)(back.cur_wait / MS));

	/* D: target queue depth 5: never more, and reached */
	if (run(spread, 16, 60, 5, 1, 100 * MS, 0, 0, &qd))
		return KSFT_FAIL;
	ok &= CHECK(qd.peak == 5, "in-flight peak %llu, want exactly 5",
		    (unsigned long long)qd.peak);
	printf("target depth 5: peak in flight %llu, %llu completed\n",
	       (unsigned long long)qd.peak, (unsigned long long)qd.completed);
	return ok ? KSFT_PASS : KSFT_FAIL;
}
