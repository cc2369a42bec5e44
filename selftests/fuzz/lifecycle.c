// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz/lifecycle (VM): the io_uring_bpf_ops lifecycle raced while a loop
 * runs and sleeps. Each case starts a loop thread that owns a fresh ring
 * and keeps calling io_uring_enter() on it, and two racer threads that do
 * a seeded sequence of lifecycle operations with random pauses between
 * them: attach a policy (one of two loaded objects), detach (destroy a
 * link), close the ring, free a policy object (its maps and programs;
 * links keep what they use), load one again, switch what the policy does
 * (sleep, time out, spin, keep NOPs or a pipe read in flight, stop), signal
 * the loop thread, and fork a child that inherits all of it and attaches,
 * runs its own loop or enters the parent's ring, then exits or is killed.
 *
 * Each case must end with everything released in bounded time: the loop
 * thread leaves io_uring_enter() once its program is gone, children are
 * reaped, no io_uring or bpf_link fd is left open, and a fresh ring takes a
 * policy and runs it. io_uring_enter() may only fail the ways a detach,
 * close or signal explain. Kernel reports fail the test through the runner.
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <liburing-bpf.h>
#include "selftest.h"
#include "fuzz.h"
#include "lifecycle_fuzz.skel.h"

#define FD_RING		200	/* the case's ring, always at this number */
#define FD_PIPE_R	201
#define FD_PIPE_W	202
#define NR_OBJS		2
#define NR_LINKS	4
#define NR_RACERS	2
#define MAX_OPS		8
#define RING_ENTRIES	8

enum { LIFE_SLEEP, LIFE_TIMEOUT, LIFE_SPIN, LIFE_NOPS, LIFE_PIPE, LIFE_NR_MODES };

enum op_kind {
	OP_ATTACH, OP_DETACH, OP_RING_CLOSE, OP_MAP_FREE, OP_LOAD, OP_MODE, OP_STOP,
	OP_SIGNAL, OP_FORK, NR_OP_KINDS
};
static const char *const op_names[] = {
	"attach", "detach", "ring-close", "map-free", "load", "mode", "stop", "signal", "fork",
};

/* what a forked child does with what it inherited */
enum { CHILD_ATTACH_PARENT_RING, CHILD_OWN_LOOP, CHILD_ENTER_PARENT_RING, NR_CHILD_MODES };
static const char *const child_names[] = {
	"attaches to the parent's ring", "runs its own loop", "enters the parent's ring",
};

struct op {
	enum op_kind kind;
	unsigned int arg, arg2;
	unsigned int delay_us;	/* before it; 0 = none, 1 = sched_yield() */
};

struct case_plan {
	uint64_t seed;
	unsigned int initial_mode[NR_OBJS];
	bool attach_first;	/* the case starts with obj 0 attached */
	unsigned int nr_ops[NR_RACERS];
	struct op ops[NR_RACERS][MAX_OPS];
	unsigned int check_obj;	/* the object the final re-attach uses */
};

/* a loaded policy; the lock keeps it alive while a racer uses it */
struct obj {
	pthread_rwlock_t lock;
	struct lifecycle_fuzz *skel;
};

static struct fuzz_run run;
static struct case_plan plan;
static struct obj objs[NR_OBJS];
static _Atomic(struct bpf_link *) links[NR_LINKS];
static atomic_bool ring_open, loop_quit, loop_ready;
static pthread_t loop_thread;
static struct iouring_bpf_geometry geom;
static __u64 pipe_buf[8];
static bool case_failed;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

static _Atomic uint64_t st_ops, st_loads, st_attached, st_busy, st_forks, st_killed;
static _Atomic uint64_t st_enter_eintr, st_enter_efault, st_enter_ok;

/* ---- reporting */

static void describe_case(FILE *f)
{
	fprintf(f, "  case seed=%#" PRIx64 ": modes %u/%u, %s, re-attach with obj %u\n", plan.seed,
		plan.initial_mode[0], plan.initial_mode[1],
		plan.attach_first ? "obj 0 attached first" : "nothing attached first",
		plan.check_obj);
	for (int t = 0; t < NR_RACERS; t++) {
		fprintf(f, "  racer %d:", t);
		for (unsigned int i = 0; i < plan.nr_ops[t]; i++) {
			const struct op *o = &plan.ops[t][i];

			fprintf(f, " [%uus] %s(%u", o->delay_us, op_names[o->kind], o->arg);
			if (o->kind == OP_FORK)
				fprintf(f, ": child %s", child_names[o->arg2 % NR_CHILD_MODES]);
			else if (o->kind == OP_MODE)
				fprintf(f, ", mode %u", o->arg2);
			fprintf(f, ")");
		}
		fprintf(f, "\n");
	}
	fflush(f);
}

static void fail(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* racers and the loop thread fail too */
	pthread_mutex_lock(&fail_lock);
	fuzz_case_fail(&run, plan.seed, &case_failed, describe_case, msg);
	pthread_mutex_unlock(&fail_lock);
}

/* ---- helpers */

static void on_signal(int sig)
{
	(void)sig;	/* only interrupts io_uring_enter() */
}

static int enter(int fd)
{
	int ret = syscall(__NR_io_uring_enter, fd, 0, 0, IORING_ENTER_GETEVENTS, NULL, 0);

	return ret < 0 ? -errno : ret;
}

static int make_ring(void)
{
	struct io_uring_params p = { .flags = IOURING_BPF_RING_FLAGS };
	int fd = syscall(__NR_io_uring_setup, RING_ENTRIES, &p);

	if (fd < 0)
		return -errno;
	if (fd != FD_RING) {
		if (dup2(fd, FD_RING) < 0) {
			close(fd);
			return -errno;
		}
		close(fd);
	}
	return 0;
}

static void pause_for(unsigned int us)
{
	if (us == 1)
		sched_yield();
	else if (us)
		usleep(us);
}

/* Load obj k (it must not be loaded); the caller holds its lock for writing. */
static int load_obj(int k)
{
	struct lifecycle_fuzz *skel = lifecycle_fuzz__open();
	int ret;

	if (!skel)
		return -errno;
	skel->rodata->iou_geom = geom;
	skel->rodata->life_pipe_fd = FD_PIPE_R;
	skel->rodata->life_buf = (uintptr_t)pipe_buf;
	skel->struct_ops.life_ops->ring_fd = FD_RING;
	ret = lifecycle_fuzz__load(skel);
	if (ret) {
		lifecycle_fuzz__destroy(skel);
		return ret;
	}
	objs[k].skel = skel;
	st_loads++;
	return 0;
}

static void keep_link(struct bpf_link *link)
{
	for (int i = 0; i < NR_LINKS; i++) {
		struct bpf_link *none = NULL;

		if (atomic_compare_exchange_strong(&links[i], &none, link))
			return;
	}
	bpf_link__destroy(link);
}

/* attach obj k's map: to whatever ring FD_RING is in this process now */
static void do_attach(int k)
{
	struct bpf_link *link = NULL;
	int err = 0;

	pthread_rwlock_rdlock(&objs[k].lock);
	if (objs[k].skel) {
		link = bpf_map__attach_struct_ops(objs[k].skel->maps.life_ops);
		err = link ? 0 : errno;
	}
	pthread_rwlock_unlock(&objs[k].lock);
	if (link) {
		st_attached++;
		keep_link(link);
		return;
	}
	/* busy (a program is attached, or the map is bound elsewhere); no ring */
	if (err == EBUSY)
		st_busy++;
	else if (err && err != EBADF && err != EOPNOTSUPP)
		fail("attach obj %d: %s", k, strerror(err));
}

static void do_detach(int slot)
{
	struct bpf_link *link = atomic_exchange(&links[slot % NR_LINKS], NULL);
	int ret;

	if (!link)
		return;
	ret = bpf_link__destroy(link);
	if (ret)
		fail("detach: bpf_link__destroy %d", ret);
}

static void do_ring_close(void)
{
	if (atomic_exchange(&ring_open, false))
		close(FD_RING);
}

static void do_map_free(int k)
{
	pthread_rwlock_wrlock(&objs[k].lock);
	lifecycle_fuzz__destroy(objs[k].skel);
	objs[k].skel = NULL;
	pthread_rwlock_unlock(&objs[k].lock);
}

static void do_load(int k)
{
	int ret = 0;

	pthread_rwlock_wrlock(&objs[k].lock);
	if (!objs[k].skel)
		ret = load_obj(k);
	pthread_rwlock_unlock(&objs[k].lock);
	if (ret)
		fail("load obj %d: %d", k, ret);
}

static void do_mode(int k, unsigned int mode, bool stop)
{
	pthread_rwlock_rdlock(&objs[k].lock);
	if (objs[k].skel) {
		if (stop)
			objs[k].skel->bss->life_stop = 1;
		else
			objs[k].skel->bss->life_mode = mode;
	}
	pthread_rwlock_unlock(&objs[k].lock);
}

/* ---- forked children */

enum {
	CHILD_OK = 0,
	CHILD_BAD = 10,		/* + what went wrong */
};

/* Runs in the child; returns its exit status. */
static int child_main(unsigned int k, unsigned int mode)
{
	struct lifecycle_fuzz *skel = objs[k % NR_OBJS].skel;
	struct bpf_link *link;
	int ret;

	switch (mode) {
	case CHILD_ATTACH_PARENT_RING:
		/* FD_RING here is the parent's ring, if it is still open */
		if (!skel)
			return CHILD_OK;
		link = bpf_map__attach_struct_ops(skel->maps.life_ops);
		if (!link && errno != EBUSY && errno != EBADF && errno != EOPNOTSUPP)
			return CHILD_BAD + 1;
		usleep(1000);
		return CHILD_OK;	/* exit releases the link */
	case CHILD_OWN_LOOP:
		if (make_ring())
			return CHILD_BAD + 2;
		if (skel) {
			skel->bss->life_stop = 0;
			skel->bss->life_mode = LIFE_SLEEP;
			link = bpf_map__attach_struct_ops(skel->maps.life_ops);
			if (!link && errno != EBUSY)
				return CHILD_BAD + 3;
		}
		/* until killed; the program (if ours) sleeps */
		for (;;) {
			ret = enter(FD_RING);
			if (ret && ret != -EINTR && ret != -EFAULT)
				return CHILD_BAD + 4;
			if (ret == 0)
				usleep(1000);
		}
	default:
		/* not the submitter: refused, program or not */
		ret = enter(FD_RING);
		if (ret != -EEXIST && ret != -EBADF)
			return CHILD_BAD + 5;
		return CHILD_OK;
	}
}

static void do_fork(unsigned int k, unsigned int mode, unsigned int kill_after_us)
{
	pid_t pid;
	int status = 0;
	double t0;

	mode %= NR_CHILD_MODES;
	/* no object is halfway freed or loaded while the child copies it */
	for (int i = 0; i < NR_OBJS; i++)
		pthread_rwlock_rdlock(&objs[i].lock);
	pid = fork();
	if (pid == 0) {
		signal(SIGUSR1, SIG_DFL);
		_exit(child_main(k, mode));
	}
	for (int i = NR_OBJS - 1; i >= 0; i--)
		pthread_rwlock_unlock(&objs[i].lock);
	if (pid < 0) {
		fail("fork: %s", strerror(errno));
		return;
	}
	st_forks++;
	usleep(kill_after_us);
	/* a child with its own loop only ends when killed; the others maybe */
	if (mode == CHILD_OWN_LOOP || kill_after_us % 2) {
		kill(pid, SIGKILL);
		st_killed++;
	}
	t0 = fuzz_now();
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			break;
		if (r < 0) {
			fail("waitpid: %s", strerror(errno));
			return;
		}
		if (fuzz_now() - t0 > 20) {
			fail("child %d (%s) not gone 20 s after SIGKILL", pid, child_names[mode]);
			kill(pid, SIGKILL);
			return;
		}
		if (mode != CHILD_OWN_LOOP && fuzz_now() - t0 > 5)
			kill(pid, SIGKILL);
		usleep(1000);
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) != CHILD_OK)
		fail("child (%s) failed with %d", child_names[mode], WEXITSTATUS(status));
	else if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
		fail("child (%s) died of signal %d", child_names[mode], WTERMSIG(status));
}

/* ---- the loop thread: the ring's submitter, always in io_uring_enter() */

static void *loop_main(void *arg)
{
	int ret;

	(void)arg;
	ret = make_ring();
	if (ret) {
		fail("loop thread: ring: %s", strerror(-ret));
		atomic_store(&loop_ready, true);
		return NULL;
	}
	atomic_store(&ring_open, true);
	atomic_store(&loop_ready, true);
	while (!atomic_load(&loop_quit)) {
		ret = enter(FD_RING);
		switch (ret) {
		case -EINTR:
			st_enter_eintr++;
			continue;
		case -EFAULT:	/* the program went while the loop ran */
			st_enter_efault++;
			continue;
		case 0:		/* no program, or it stopped */
			st_enter_ok++;
			usleep(500);
			continue;
		case -EBADF:	/* the ring was closed */
			usleep(500);
			continue;
		default:
			fail("loop thread: io_uring_enter() %d", ret);
			usleep(500);
		}
	}
	return NULL;
}

/* ---- racers */

static void run_op(const struct op *o)
{
	pause_for(o->delay_us);
	st_ops++;
	switch (o->kind) {
	case OP_ATTACH:
		do_attach(o->arg % NR_OBJS);
		break;
	case OP_DETACH:
		do_detach(o->arg);
		break;
	case OP_RING_CLOSE:
		do_ring_close();
		break;
	case OP_MAP_FREE:
		do_map_free(o->arg % NR_OBJS);
		break;
	case OP_LOAD:
		do_load(o->arg % NR_OBJS);
		break;
	case OP_MODE:
		do_mode(o->arg % NR_OBJS, o->arg2 % LIFE_NR_MODES, false);
		break;
	case OP_STOP:
		do_mode(o->arg % NR_OBJS, 0, true);
		break;
	case OP_SIGNAL:
		for (unsigned int i = 0; i <= o->arg % 4; i++)
			pthread_kill(loop_thread, SIGUSR1);
		break;
	case OP_FORK:
		do_fork(o->arg % NR_OBJS, o->arg2, o->delay_us % 3000);
		break;
	default:
		break;
	}
}

static void *racer_main(void *arg)
{
	int t = (int)(intptr_t)arg;

	for (unsigned int i = 0; i < plan.nr_ops[t]; i++)
		run_op(&plan.ops[t][i]);
	return NULL;
}

static void make_plan(uint64_t seed)
{
	struct fuzz_rng r = { seed };
	/* weights: attach and detach most, loads rarely (slow under TCG) */
	static const enum op_kind bag[] = {
		OP_ATTACH, OP_ATTACH, OP_ATTACH, OP_ATTACH, OP_DETACH, OP_DETACH, OP_DETACH,
		OP_RING_CLOSE, OP_MAP_FREE, OP_MAP_FREE, OP_LOAD, OP_MODE, OP_MODE, OP_STOP,
		OP_SIGNAL, OP_SIGNAL, OP_SIGNAL, OP_FORK, OP_FORK,
	};

	memset(&plan, 0, sizeof(plan));
	plan.seed = seed;
	for (int k = 0; k < NR_OBJS; k++)
		plan.initial_mode[k] = fuzz_below(&r, LIFE_NR_MODES);
	plan.attach_first = fuzz_chance(&r, 3, 4);
	plan.check_obj = fuzz_below(&r, NR_OBJS);
	for (int t = 0; t < NR_RACERS; t++) {
		plan.nr_ops[t] = 2 + fuzz_below(&r, MAX_OPS - 1);
		for (unsigned int i = 0; i < plan.nr_ops[t]; i++) {
			struct op *o = &plan.ops[t][i];

			o->kind = bag[fuzz_below(&r, sizeof(bag) / sizeof(bag[0]))];
			o->arg = fuzz_below(&r, 16);
			o->arg2 = fuzz_below(&r, 16);
			switch (fuzz_below(&r, 4)) {
			case 0:
				o->delay_us = 0;
				break;
			case 1:
				o->delay_us = 1;
				break;
			default:
				o->delay_us = 50 + fuzz_below(&r, 3000);
				break;
			}
		}
	}
}

/* Which fds of kinds that must be gone at the end of a case are open? */
static int leaked_fds(char *what, size_t size)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	what[0] = 0;
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[300], target[128];
		ssize_t len;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = 0;
		if (strstr(target, "io_uring") || strstr(target, "bpf_link") ||
		    strstr(target, "bpf-link")) {
			size_t used = strlen(what);

			snprintf(what + used, size - used, " %s->%s", e->d_name, target);
			n++;
		}
	}
	closedir(d);
	return n;
}

/* A fresh ring takes a policy and runs it: nothing of the case is held. */
static void check_fresh_attach(void)
{
	int k = plan.check_obj, ret;
	struct bpf_link *link = NULL;
	double t0;
	__u64 steps;

	fuzz_phase("fresh ring and policy", 60);
	ret = make_ring();
	if (ret) {
		fail("fresh ring: %s", strerror(-ret));
		return;
	}
	pthread_rwlock_wrlock(&objs[k].lock);
	if (!objs[k].skel && (ret = load_obj(k)))
		fail("load obj %d for the fresh ring: %d", k, ret);
	pthread_rwlock_unlock(&objs[k].lock);
	if (ret)
		goto out;
	objs[k].skel->bss->life_stop = 1;
	steps = objs[k].skel->bss->life_steps;
	t0 = fuzz_now();
	while (!(link = bpf_map__attach_struct_ops(objs[k].skel->maps.life_ops)) &&
	       errno == EBUSY && fuzz_now() - t0 < 20)
		usleep(1000);
	if (!link) {
		fail("obj %d does not attach to a fresh ring (%.1f s): %s", k, fuzz_now() - t0,
		     strerror(errno));
		goto out;
	}
	ret = enter(FD_RING);
	if (ret != 0 || objs[k].skel->bss->life_steps != steps + 1)
		fail("fresh ring: io_uring_enter() %d, %llu steps", ret,
		     (unsigned long long)(objs[k].skel->bss->life_steps - steps));
	ret = bpf_link__destroy(link);
	if (ret)
		fail("fresh ring: detach %d", ret);
out:
	close(FD_RING);
}

static void run_case(uint64_t seed)
{
	pthread_t racers[NR_RACERS];
	char leaked[1024];
	int ret;

	case_failed = false;
	fuzz_watchdog_case(seed);
	make_plan(seed);
	fuzz_phase("case setup", 120);
	for (int k = 0; k < NR_OBJS; k++) {
		pthread_rwlock_wrlock(&objs[k].lock);
		ret = objs[k].skel ? 0 : load_obj(k);
		if (!ret) {
			memset(objs[k].skel->bss, 0, sizeof(*objs[k].skel->bss));
			objs[k].skel->bss->life_mode = plan.initial_mode[k];
		}
		pthread_rwlock_unlock(&objs[k].lock);
		if (ret) {
			fail("load obj %d: %d", k, ret);
			return;
		}
	}

	atomic_store(&loop_quit, false);
	atomic_store(&loop_ready, false);
	pthread_create(&loop_thread, NULL, loop_main, NULL);
	while (!atomic_load(&loop_ready))
		usleep(100);
	if (plan.attach_first)
		do_attach(0);
	usleep(500);	/* the loop is in its program */

	fuzz_phase("racers", 60);
	for (int t = 0; t < NR_RACERS; t++)
		pthread_create(&racers[t], NULL, racer_main, (void *)(intptr_t)t);
	for (int t = 0; t < NR_RACERS; t++)
		pthread_join(racers[t], NULL);

	/* wind down: stop the policies, drop the links, wake the loop */
	fuzz_phase("loop thread leaves io_uring_enter()", 20);
	atomic_store(&loop_quit, true);
	for (int k = 0; k < NR_OBJS; k++)
		do_mode(k, 0, true);
	for (int i = 0; i < NR_LINKS; i++)
		do_detach(i);
	for (;;) {
		struct timespec ts;

		pthread_kill(loop_thread, SIGUSR1);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 10 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (pthread_timedjoin_np(loop_thread, NULL, &ts) == 0)
			break;
	}
	do_ring_close();
	st_ops += 3;

	ret = leaked_fds(leaked, sizeof(leaked));
	if (ret)
		fail("%d fds left open at the end of the case:%s", ret, leaked);
	check_fresh_attach();
	st_ops += 2;
	fuzz_phase(NULL, 0);
	kmsg_watch_case(seed, fail);
	run.units = st_ops;
	if (run.verbose && !case_failed)
		printf("case %#" PRIx64 ": %u + %u operations\n", seed, plan.nr_ops[0], plan.nr_ops[1]);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };	/* no SA_RESTART */
	struct iouring_bpf_ring probe = { .fd = -1 };
	struct btf *vmlinux;
	uint64_t seed;
	int ret, p[2];

	ret = fuzz_init(&run, "lifecycle", "ops", argc, argv);
	if (ret)
		return ret > 0 ? 0 : 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	vmlinux = btf__load_vmlinux_btf();
	if (vmlinux && btf__find_by_name_kind(vmlinux, "io_uring_bpf_ops", BTF_KIND_STRUCT) < 0) {
		printf("SKIP: this kernel has no io_uring_bpf_ops\n");
		return KSFT_SKIP;
	}
	btf__free(vmlinux);

	sigaction(SIGUSR1, &sa, NULL);
	fuzz_watchdog_start(&run, describe_case, SIGUSR1);

	fuzz_phase("setup", 120);
	if (!CHECK_OK(iouring_bpf_ring_init(&probe, RING_ENTRIES, 0, IOURING_BPF_RING_FLAGS),
		      "ring setup"))
		return 1;
	geom = probe.geom;
	iouring_bpf_ring_exit(&probe);
	/* a pipe nobody writes: LIFE_PIPE's read stays in flight */
	if (!CHECK(pipe(p) == 0 && dup2(p[0], FD_PIPE_R) == FD_PIPE_R &&
		   dup2(p[1], FD_PIPE_W) == FD_PIPE_W, "pipe: %s", strerror(errno)))
		return 1;
	close(p[0]);
	close(p[1]);
	for (int k = 0; k < NR_OBJS; k++)
		pthread_rwlock_init(&objs[k].lock, NULL);
	/* racers pause; the loop thread gets the signals */
	libbpf_set_print(NULL);
	kmsg_watch_start();
	fuzz_phase(NULL, 0);

	while (fuzz_next_case(&run, &seed))
		run_case(seed);

	double secs = fuzz_elapsed(&run);

	printf("fuzz lifecycle: %.1f ops/s, %.2f cases/s; %" PRIu64 " loads, %" PRIu64 " attached, %" PRIu64
	       " busy, %" PRIu64 " forks (%" PRIu64 " killed); loop enters: %" PRIu64 " returned 0, %"
	       PRIu64 " EINTR, %" PRIu64 " EFAULT (detached while running)\n",
	       run.units / (secs > 0 ? secs : 1), run.cases / (secs > 0 ? secs : 1),
	       (uint64_t)st_loads, (uint64_t)st_attached, (uint64_t)st_busy, (uint64_t)st_forks,
	       (uint64_t)st_killed, (uint64_t)st_enter_ok, (uint64_t)st_enter_eintr,
	       (uint64_t)st_enter_efault);
	for (int k = 0; k < NR_OBJS; k++)
		lifecycle_fuzz__destroy(objs[k].skel);
	return fuzz_finish(&run);
}
