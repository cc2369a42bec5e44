// SPDX-License-Identifier: GPL-2.0
/*
 * lib/policy-globals (host): liburing-bpf describes a policy's globals from
 * its BTF and sets them from text, refusing what cannot be set with an errno
 * and a message that names the problem.
 *
 * lib/policy-run (VM): iouring_bpf_policy_run() runs the loop until the
 * policy stops and returns its exit status; counters read back; rodata is
 * read-only once loaded; iouring_bpf_dag_run() reports per-node results.
 *
 * lib/policy-run-eintr (VM): a signal ends iouring_bpf_policy_run() with
 * -EINTR (a SIGTERM handler can stop a run); a further call goes on.
 *
 * usage: policy_api globals GLOBALS.bpf.o
 *        policy_api run NOPS.bpf.o DAG.bpf.o
 *        policy_api eintr BATCH.bpf.o
 */
#include <fcntl.h>
#include <iouring_bpf/link.h>
#include <liburing-bpf.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>
#include "selftest.h"

static const struct iouring_bpf_global *find(const struct iouring_bpf_global *g, int n,
					     const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(g[i].name, name))
			return &g[i];
	return NULL;
}

/* The global exists with exactly these flags, size and section. */
static int has(const struct iouring_bpf_global *g, int n, const char *name, __u32 flags,
	       __u32 size, const char *section)
{
	const struct iouring_bpf_global *x = find(g, n, name);

	return CHECK(x, "no global %s listed", name) &&
	       CHECK(x->flags == flags && x->size == size && !strcmp(x->section, section),
		     "%s: flags 0x%x size %u section %s; want 0x%x %u %s", name, x->flags,
		     x->size, x->section, flags, size, section);
}

/* set_global_str(name, text) returns err and, on error, says want. */
static int set_expect(struct iouring_bpf_policy *p, const char *name, const char *text, int err,
		      const char *want)
{
	int ret = iouring_bpf_policy_set_global_str(p, name, text);
	const char *msg = iouring_bpf_policy_strerror(p);

	if (!CHECK(ret == err, "set %s=%s: returned %d, want %d (%s)", name, text, ret, err, msg))
		return 0;
	if (err && !CHECK(strstr(msg, want), "set %s=%s: message \"%s\" lacks \"%s\"", name,
			  text, msg, want))
		return 0;
	if (err)
		printf("%s=%-24s %d: %s\n", name, text, ret, msg);
	return 1;
}

static int globals(const char *path)
{
	struct iouring_bpf_global g[64];
	struct iouring_bpf_policy *p = NULL;
	const __u32 I = IOURING_BPF_GLOBAL_INT, S = IOURING_BPF_GLOBAL_SIGNED,
		    R = IOURING_BPF_GLOBAL_RODATA;
	int n, ok = 0;
	__u32 u32;
	__s64 s64;
	__u8 u8;

	if (!CHECK_OK(iouring_bpf_policy_open(path, &p), iouring_bpf_policy_strerror(p)))
		goto out;
	n = iouring_bpf_policy_globals(p, g, 64);
	if (!CHECK(n > 0 && n <= 64, "%d globals", n))
		goto out;
	for (int i = 0; i < n; i++)
		printf("global %-12s %-8s %2u bytes flags 0x%x\n", g[i].name, g[i].section, g[i].size,
		       g[i].flags);
	if (!has(g, n, "g_u8", I | R, 1, ".rodata") || !has(g, n, "g_s16", I | S | R, 2, ".rodata") ||
	    !has(g, n, "g_u32", I | R, 4, ".rodata") || !has(g, n, "g_s64", I | S | R, 8, ".rodata") ||
	    !has(g, n, "g_bool", I | R, 1, ".rodata") || !has(g, n, "g_color", I | R, 4, ".rodata") ||
	    !has(g, n, "g_const", I | S | R | IOURING_BPF_GLOBAL_CONST, 4, ".rodata") ||
	    !has(g, n, "g_counter", I, 8, ".bss") || !has(g, n, "g_pair", 0, 8, ".bss") ||
	    !has(g, n, "g_static", I | IOURING_BPF_GLOBAL_STATIC, 4, ".bss") ||
	    !has(g, n, "iou_exit_status", I | S, 4, ".bss"))
		goto out;
	/* a short array is filled as far as it goes; the count is still all */
	if (!CHECK(iouring_bpf_policy_globals(p, g, 1) == n, "count with max 1") ||
	    !CHECK(iouring_bpf_policy_globals(p, NULL, 0) == n, "count with no array"))
		goto out;

	if (!set_expect(p, "g_u8", "255", 0, NULL) || !set_expect(p, "g_u8", "256", -ERANGE, "does not fit") ||
	    !set_expect(p, "g_u8", "-1", -ERANGE, "unsigned 8-bit") ||
	    !set_expect(p, "g_s16", "-32768", 0, NULL) ||
	    !set_expect(p, "g_s16", "32768", -ERANGE, "signed 16-bit") ||
	    !set_expect(p, "g_s64", "-9223372036854775808", 0, NULL) ||
	    !set_expect(p, "g_s64", "9223372036854775808", -ERANGE, "does not fit") ||
	    !set_expect(p, "g_u32", "0x10", 0, NULL) ||
	    !set_expect(p, "g_u32", "12abc", -EINVAL, "is not an integer") ||
	    !set_expect(p, "g_u32", "", -EINVAL, "is not an integer") ||
	    !set_expect(p, "g_bool", "true", 0, NULL) ||
	    !set_expect(p, "g_const", "1", -EPERM, "compiled into the program") ||
	    !set_expect(p, "g_pair", "1", -EINVAL, "not an integer") ||
	    !set_expect(p, "g_static", "1", -EPERM, "is static: private to the policy") ||
	    !set_expect(p, "no_such", "1", -ENOENT, "has no global 'no_such'") ||
	    !set_expect(p, "g_counter", "7", 0, NULL))
		goto out;
	if (!CHECK_OK(iouring_bpf_policy_get_global(p, "g_u32", &u32, 4), "get g_u32") ||
	    !CHECK(u32 == 16, "g_u32 is %u, want 16", u32) ||
	    !CHECK_OK(iouring_bpf_policy_get_global(p, "g_s64", &s64, 8), "get g_s64") ||
	    !CHECK(s64 == INT64_MIN, "g_s64 is %lld", (long long)s64) ||
	    !CHECK_OK(iouring_bpf_policy_get_global(p, "g_bool", &u8, 1), "get g_bool") ||
	    !CHECK(u8 == 1, "g_bool is %u", u8) ||
	    !CHECK(iouring_bpf_policy_get_global(p, "g_u32", &s64, 8) == -EINVAL, "size mismatch") ||
	    !CHECK(iouring_bpf_policy_get_global(p, "nope", &u32, 4) == -ENOENT, "unknown"))
		goto out;
	/* what inspect calls not settable, set_global refuses too */
	u32 = 1;
	if (!CHECK(iouring_bpf_policy_set_global(p, "g_static", &u32, 4) == -EPERM,
		   "raw set of a static: %s", iouring_bpf_policy_strerror(p)) ||
	    !CHECK(iouring_bpf_policy_set_global(p, "g_const", &u32, 4) == -EPERM,
		   "raw set of a const: %s", iouring_bpf_policy_strerror(p)))
		goto out;
	/* running needs an attached policy */
	struct iouring_bpf_ring none = { .fd = -1 };
	if (!CHECK(iouring_bpf_policy_run(p, &none, NULL) == -ENOTCONN, "run before attach"))
		goto out;
	ok = 1;
out:
	iouring_bpf_policy_close(p);
	return ok ? KSFT_PASS : KSFT_FAIL;
}

static int load_on(const char *path, struct iouring_bpf_ring *ring, struct iouring_bpf_policy **p,
		   const char *const *sets)
{
	int ret = iouring_bpf_policy_open(path, p);

	for (; !ret && sets && *sets; sets += 2)
		ret = iouring_bpf_policy_set_global_str(*p, sets[0], sets[1]);
	if (!ret)
		ret = iouring_bpf_policy_set_ring(*p, ring);
	if (!ret)
		ret = iouring_bpf_policy_load(*p);
	if (!ret)
		ret = iouring_bpf_policy_attach(*p);
	return CHECK_OK(ret, iouring_bpf_policy_strerror(*p));
}

static int load_on_opened(struct iouring_bpf_policy *p, struct iouring_bpf_ring *ring)
{
	int ret = iouring_bpf_policy_set_ring(p, ring);

	if (!ret)
		ret = iouring_bpf_policy_load(p);
	if (!ret)
		ret = iouring_bpf_policy_attach(p);
	return CHECK_OK(ret, iouring_bpf_policy_strerror(p));
}

static int run(const char *nops_path, const char *dag_path)
{
	static const char *const nop_sets[] = { "nop_total", "100", "nop_inflight", "4", NULL };
	struct iouring_bpf_policy *nops = NULL, *dag_pol = NULL;
	struct iouring_bpf_dag *dag = NULL;
	struct iouring_bpf_ring ring = { .fd = -1 }, ring2 = { .fd = -1 };
	__u64 completed = 0;
	__s32 res[4] = { 1, 1, 1, 1 };
	int status = -1, ok = 0;
	char buf[64];

	if (!CHECK_OK(iouring_bpf_ring_init(&ring, 16, 64, IOURING_BPF_RING_FLAGS), "ring") ||
	    !CHECK_OK(iouring_bpf_ring_init(&ring2, 16, 64, IOURING_BPF_RING_FLAGS), "ring2") ||
	    !load_on(nops_path, &ring, &nops, nop_sets))
		goto out;
	if (!CHECK(iouring_bpf_policy_set_global_str(nops, "nop_total", "5") == -EPERM,
		   "setting rodata after load: %s", iouring_bpf_policy_strerror(nops)) ||
	    !CHECK(strstr(iouring_bpf_policy_strerror(nops), "read-only once"), "message: %s",
		   iouring_bpf_policy_strerror(nops)) ||
	    !CHECK(!iouring_bpf_policy_global_ptr(nops, "nop_total", NULL) && errno == EPERM,
		   "pointer to loaded rodata"))
		goto out;
	if (!CHECK_OK(iouring_bpf_policy_run(nops, &ring, &status), iouring_bpf_policy_strerror(nops)) ||
	    !CHECK(status == 0, "nops stopped with %d", status) ||
	    !CHECK_OK(iouring_bpf_policy_get_global(nops, "nop_completed", &completed, 8), "counter") ||
	    !CHECK(completed == 100, "%llu NOPs completed, want 100", (unsigned long long)completed))
		goto out;
	printf("nops: exit status %d, nop_completed %llu\n", status, (unsigned long long)completed);

	/* the DAG policy refuses a graph over its limit: a non-zero exit status */
	if (!load_on(dag_path, &ring2, &dag_pol, NULL))
		goto out;
	__u32 *nr = iouring_bpf_policy_global_ptr(dag_pol, "iou_dag_nr_nodes", NULL);
	__u32 *gen = iouring_bpf_policy_global_ptr(dag_pol, "iou_dag_generation", NULL);
	if (!CHECK(nr && gen, "dag globals"))
		goto out;
	*nr = IOU_DAG_MAX_NODES + 1;
	++*gen;
	if (!CHECK_OK(iouring_bpf_policy_run(dag_pol, &ring2, &status), "run") ||
	    !CHECK(status == -EINVAL, "oversized graph: status %d, want %d", status, -EINVAL))
		goto out;
	printf("dag over the limit: exit status %d\n", status);

	/* read(bad fd) -> nop: the nop is cancelled; an independent nop runs;
	 * a read of /dev/zero feeds an ON_SUCCESS nop */
	int zero = open("/dev/zero", O_RDONLY);
	struct iouring_bpf_dag_node bad = { .opcode = IORING_OP_READ, .fd = 999, .addr = (uintptr_t)buf,
				    .len = sizeof(buf) };
	struct iouring_bpf_dag_node rd = { .opcode = IORING_OP_READ, .fd = zero, .addr = (uintptr_t)buf,
				   .len = sizeof(buf) };
	struct iouring_bpf_dag_node nop = { .opcode = IORING_OP_NOP, .fd = -1 };

	dag = iouring_bpf_dag_new();
	if (!CHECK(dag && zero >= 0, "setup") || !CHECK(iouring_bpf_dag_add_node(dag, &bad) == 0, "n0") ||
	    !CHECK(iouring_bpf_dag_add_node(dag, &nop) == 1, "n1") ||
	    !CHECK(iouring_bpf_dag_add_node(dag, &rd) == 2, "n2") ||
	    !CHECK(iouring_bpf_dag_add_node(dag, &nop) == 3, "n3") ||
	    !CHECK_OK(iouring_bpf_dag_add_edge(dag, 0, 1, IOU_DAG_ON_SUCCESS), "e01") ||
	    !CHECK_OK(iouring_bpf_dag_add_edge(dag, 2, 3, IOU_DAG_ON_SUCCESS), "e23"))
		goto out;
	if (!CHECK(iouring_bpf_dag_run(dag, nops, &ring, 4, res, 4) == -EINVAL, "dag_run on nops") ||
	    !CHECK(strstr(iouring_bpf_dag_strerror(dag), "iou_dag_"), "message: %s",
		   iouring_bpf_dag_strerror(dag)) ||
	    !CHECK_OK(iouring_bpf_dag_run(dag, dag_pol, &ring2, 4, res, 4), iouring_bpf_dag_strerror(dag)) ||
	    !CHECK(res[0] == -EBADF && res[1] == -ECANCELED && res[2] == sizeof(buf) && res[3] == 0,
		   "results %d %d %d %d", res[0], res[1], res[2], res[3]))
		goto out;
	printf("dag_run: results %d %d %d %d\n", res[0], res[1], res[2], res[3]);
	close(zero);
	ok = 1;
out:
	iouring_bpf_dag_free(dag);
	iouring_bpf_policy_close(nops);
	iouring_bpf_policy_close(dag_pol);
	iouring_bpf_ring_exit(&ring);
	iouring_bpf_ring_exit(&ring2);
	return ok ? KSFT_PASS : KSFT_FAIL;
}

static volatile sig_atomic_t signals;

static void on_alarm(int sig)
{
	static const char msg[] = "not ok: 20 signals and iouring_bpf_policy_run() has not "
				  "returned: it retries EINTR forever\n";

	(void)sig;
	if (++signals >= 20) {
		if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
			_exit(KSFT_FAIL);
		_exit(KSFT_FAIL);
	}
}

/* batch waits for a read of an empty pipe: only a signal ends the wait. */
static int eintr(const char *batch_path)
{
	struct iouring_bpf_ring ring = { .fd = -1 };
	struct iouring_bpf_policy *p = NULL;
	struct sigaction sa = { .sa_handler = on_alarm };	/* no SA_RESTART */
	struct itimerval every_100ms = { { 0, 100000 }, { 0, 100000 } }, off = {};
	struct iou_link_req *tmpl;
	__u64 completed = 0;
	int pfd[2] = { -1, -1 }, ret, status = -1, ok = 0;
	char buf[16];
	size_t size = 0;

	if (!CHECK_OK(pipe(pfd) ? -errno : 0, "pipe") ||
	    !CHECK_OK(iouring_bpf_ring_init(&ring, 16, 64, IOURING_BPF_RING_FLAGS), "ring") ||
	    !CHECK_OK(iouring_bpf_policy_open(batch_path, &p), iouring_bpf_policy_strerror(p)) ||
	    !CHECK_OK(iouring_bpf_policy_set_global_str(p, "batch_total", "1"), "batch_total") ||
	    !CHECK((tmpl = iouring_bpf_policy_global_ptr(p, "batch_tmpl", &size)) &&
		   size >= sizeof(*tmpl), "batch_tmpl"))
		goto out;
	tmpl[0] = (struct iou_link_req){ .opcode = IORING_OP_READ, .fd = pfd[0],
					 .addr = (uintptr_t)buf, .len = sizeof(buf),
					 .off = (__u64)-1, .user_data = 1 };
	if (!load_on_opened(p, &ring))
		goto out;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &every_100ms, NULL);
	ret = iouring_bpf_policy_run(p, &ring, &status);
	setitimer(ITIMER_REAL, &off, NULL);
	if (!CHECK(ret == -EINTR, "run returned %d, want -EINTR", ret) ||
	    !CHECK(strstr(iouring_bpf_policy_strerror(p), "interrupted by a signal"), "message: %s",
		   iouring_bpf_policy_strerror(p)))
		goto out;
	printf("run interrupted after %d signal(s): %s\n", (int)signals,
	       iouring_bpf_policy_strerror(p));
	/* the policy is still attached: the next run takes up the read */
	if (!CHECK(write(pfd[1], "x", 1) == 1, "write") ||
	    !CHECK_OK(iouring_bpf_policy_run(p, &ring, &status), iouring_bpf_policy_strerror(p)) ||
	    !CHECK(status == 0, "status %d", status) ||
	    !CHECK_OK(iouring_bpf_policy_get_global(p, "batch_completed", &completed, 8), "counter") ||
	    !CHECK(completed == 1, "%llu completed, want 1", (unsigned long long)completed))
		goto out;
	printf("run again: the read completed, exit status 0\n");
	ok = 1;
out:
	iouring_bpf_policy_close(p);
	iouring_bpf_ring_exit(&ring);
	if (pfd[0] >= 0)
		close(pfd[0]), close(pfd[1]);
	return ok ? KSFT_PASS : KSFT_FAIL;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "globals"))
		return globals(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "run"))
		return run(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "eintr"))
		return eintr(argv[2]);
	fprintf(stderr, "usage: %s globals GLOBALS.bpf.o | run NOPS.bpf.o DAG.bpf.o | "
		"eintr BATCH.bpf.o\n", argv[0]);
	return KSFT_FAIL;
}
