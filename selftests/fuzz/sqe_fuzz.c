// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz/sqe (VM): SQEs written by BPF. Each case makes a fresh ring, attaches
 * sqe_fuzz.bpf.c's loop_step program and gives it the case seed; the
 * program writes random SQEs (every opcode and beyond, random flags, fds,
 * lengths, offsets, addresses, fixed files and buffers, links) and submits
 * random counts, waits and returns random things. User space then checks
 * what can be checked: every io_uring_enter() returned what the program's
 * last step asked for, no CQE is impossible, the ring still runs a NOP,
 * detach and close finish in bounded time, a map bound to a closed ring is
 * released. One case in eight also loads a program that maps a random
 * region id with a random size (sqe_region.bpf.c): the size is a load-time
 * constant, so each of those cases loads its own copy.
 *
 * What the kernel may follow from an SQE is vetted here, not in BPF: paths
 * are relative names inside a private tmpfs that is also the working
 * directory, structures that hold pointers (iovecs, msghdrs, futex_waitv,
 * fd arrays) live in read-only pages of vetted values with a guard page
 * behind each, buffers the kernel writes to are in a data area with a
 * large guard above it, and CLOSE only ever gets the per-case files.
 * Kernel reports (KASAN, WARN, lockdep) fail the test through the runner.
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/openat2.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <liburing-bpf.h>
#include "selftest.h"
#include "fuzz.h"
#include "sqe_fuzz.h"
#include "sqe_fuzz.skel.h"
#include "sqe_region.skel.h"

#define PAGE		4096UL
#define SQ_ENTRIES	32
#define DATA_SIZE	(64UL << 10)
#define GUARD_LO	(1UL << 20)
#define GUARD_MID	(64UL << 10)
#define GUARD_HI	(64UL << 20)	/* > what PROVIDE_BUFFERS may span (16 MiB) */
#define NR_FIXED_FILES	16
#define SCRATCH_NAMED	2		/* fds past scratch_lo that the pools name */
#define NOP_UD		0xa11ce0000000001ULL
#define ENTER_SIGNAL_MS	50		/* bounds a wait with no timeout */
#define KERNEL_ADDR	0xffffffff81000000ULL
#define NONCANON_ADDR	0x8000000000000000ULL

/* fd numbers of the per-case files: high, so no fd the fuzz opens lands there */
enum {
	FD_RING = 200, FD_RING2, FD_FILE, FD_NULL, FD_PIPE_R, FD_PIPE_W,
	FD_SOCK_A, FD_SOCK_B, FD_DIR, FD_EPOLL, FD_EVENT, FD_END
};

/* one read-only page per kind of structure, each followed by a guard page */
enum { A_IOV, A_MSG, A_PATH, A_XNAME, A_SADDR, A_TS, A_HOW, A_EPEV, A_WAITV, A_FDARR, NR_ARGS };

/* how a case ends */
enum { END_DETACH_FIRST, END_CLOSE_FIRST, END_CLOSE_REBIND };
static const char *const end_names[] = { "detach, NOP, close", "close, then detach",
					 "close attached, rebind the map" };

struct region_case {
	bool on;
	__u32 id;
	__u64 size, off;
	__u32 access;
};

struct case_plan {
	uint64_t seed;
	unsigned int ring_flags;
	unsigned int mem_pages;		/* IORING_REGISTER_MEM_REGION pages, 0 = none */
	bool pipe_nonblock, dgram, ring2_defer;
	int fixed[NR_FIXED_FILES];
	int end;
	struct region_case region;
};

static struct fuzz_run run;
static struct sqe_fuzz *skel;
static struct case_plan plan;
static char tmpdir[64];
static bool mounted;
static int scratch_lo;		/* lowest fd number the fuzz's own opens take */
static char *resv, *args_base, *args_rw, *data;
static void *pbuf_mem;
static char *param_mem;
static unsigned char pattern[DATA_SIZE];
static struct iouring_bpf_ring ring = { .fd = -1 };
static int personality;

/* statistics */
static uint64_t st_enters, st_eintr, st_einval, st_ebadr, st_cqes, st_submitted;
static uint64_t st_region_loads, st_region_refused, st_region_got, st_rebind_waits;
static uint64_t st_sync_cancel_timeouts, st_nop_stuck;

/* ---- phases: a hang fails with the case seed instead of hanging (fuzz.h) */

/* where the time goes, by phase (printed at the end: TCG makes it matter) */
static struct {
	const char *name;
	double secs;
} phase_time[32];
static const char *cur_phase;
static double cur_phase_t0;

static void phase(const char *what, double secs)
{
	double now = fuzz_now();

	if (cur_phase) {
		for (int i = 0; i < 32; i++) {
			if (!phase_time[i].name || phase_time[i].name == cur_phase) {
				phase_time[i].name = cur_phase;
				phase_time[i].secs += now - cur_phase_t0;
				break;
			}
		}
	}
	cur_phase = what;
	cur_phase_t0 = now;
	fuzz_phase(what, secs);
}

static void print_phase_times(void)
{
	printf("fuzz sqe: seconds by phase:");
	for (int i = 0; i < 32 && phase_time[i].name; i++)
		printf(" %s %.1f;", phase_time[i].name, phase_time[i].secs);
	printf("\n");
}

/* ---- small helpers */

static void on_alarm(int sig)
{
	(void)sig;	/* only interrupts io_uring_enter() */
}

/* the case a crash names */
static _Atomic uint64_t crash_seed;

/*
 * A crash of the fuzzer itself means a request wrote or discarded memory
 * outside what the pools allow (or the kernel did): name the case, and
 * where everything was mapped. Async-signal-safe calls only.
 */
static void on_crash(int sig)
{
	char buf[4096];
	uint64_t s = atomic_load(&crash_seed);
	int n, fd;

	n = snprintf(buf, sizeof(buf), "fuzz sqe: FAIL: signal %d in case seed=%#" PRIx64
		     " (or a late request of the case before); replay with: --replay %#" PRIx64
		     "\nfuzz sqe: data %p args %p param %p\n", sig, s, s, (void *)data,
		     (void *)args_base, (void *)param_mem);
	if (n > 0 && write(2, buf, n) < 0)
		_exit(1);
	fd = open("/proc/self/maps", O_RDONLY);
	while (fd >= 0 && (n = read(fd, buf, sizeof(buf))) > 0)
		if (write(2, buf, n) < 0)
			break;
	_exit(1);
}

static void arm(int ms)
{
	struct itimerval it = { .it_value = { .tv_sec = ms / 1000, .tv_usec = ms % 1000 * 1000 } };

	setitimer(ITIMER_REAL, &it, NULL);
}

static void disarm(void)
{
	struct itimerval it = {};

	setitimer(ITIMER_REAL, &it, NULL);
}

static int enter(int fd, unsigned int submit, unsigned int wait, unsigned int flags)
{
	int ret = syscall(__NR_io_uring_enter, fd, submit, wait, flags, NULL, 0);

	return ret < 0 ? -errno : ret;
}

static int reg(int fd, unsigned int op, void *arg, unsigned int nr)
{
	int ret = syscall(__NR_io_uring_register, fd, op, arg, nr);

	return ret < 0 ? -errno : ret;
}

/* Put fd at number want (closing what was there). */
static int place(int fd, int want)
{
	if (fd < 0)
		return -errno;
	if (fd != want) {
		if (dup2(fd, want) < 0) {
			int err = -errno;

			close(fd);
			return err;
		}
		close(fd);
	}
	return 0;
}

static void close_from(int lo, int hi)
{
	syscall(__NR_close_range, lo, hi, 0);
}

/* Empty a directory tree (the fuzz only creates names from the path page). */
static void rm_tree(int dfd, int depth)
{
	DIR *d;
	struct dirent *e;

	if (depth > 16)
		return;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) == 0)
			continue;
		if (errno == EISDIR || errno == EPERM) {
			int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);

			if (sub >= 0)
				rm_tree(sub, depth + 1);
			unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
		}
	}
	closedir(d);
}

/* ---- the fixed memory layout: guards, read-only argument pages, data */

static char *args_page(int kind)
{
	return args_base + 2 * kind * PAGE;
}

static __u64 data_at(__u64 off)
{
	return (__u64)(uintptr_t)data + off;
}

static int setup_memory(void)
{
	size_t total = GUARD_LO + 2 * NR_ARGS * PAGE + GUARD_MID + DATA_SIZE + GUARD_HI;
	int memfd;

	resv = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (resv == MAP_FAILED)
		return -errno;
	args_base = resv + GUARD_LO;
	data = args_base + 2 * NR_ARGS * PAGE + GUARD_MID;
	if (mprotect(data, DATA_SIZE, PROT_READ | PROT_WRITE))
		return -errno;

	/*
	 * Argument pages are a shared memfd mapped read-only: the kernel can
	 * never write to them, and MADV_DONTNEED (which the fuzz may issue)
	 * does not lose their contents. Filled through a writable mapping.
	 */
	memfd = memfd_create("fuzz-sqe-args", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, NR_ARGS * PAGE))
		return -errno;
	for (int k = 0; k < NR_ARGS; k++) {
		if (mmap(args_page(k), PAGE, PROT_READ, MAP_SHARED | MAP_FIXED, memfd,
			 k * PAGE) == MAP_FAILED)
			return -errno;
	}
	args_rw = mmap(NULL, NR_ARGS * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	close(memfd);
	if (args_rw == MAP_FAILED)
		return -errno;

	pbuf_mem = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pbuf_mem == MAP_FAILED)
		return -errno;
	/* the parameter region, which SQEs may point into too: guarded above */
	param_mem = resv + GUARD_LO / 2;
	if (mprotect(param_mem, 4 * PAGE, PROT_READ | PROT_WRITE))
		return -errno;

	/* some zero words, so FUTEX_WAIT on them sometimes matches */
	struct fuzz_rng r = { 0x5eed };

	for (size_t i = 0; i < DATA_SIZE; i += 8) {
		uint64_t v = fuzz_next(&r);

		if ((i / 8) % 5 == 0)
			v = 0;
		memcpy(pattern + i, &v, 8);
	}
	return 0;
}

/* ---- the read-only argument pages */

static __u64 arg_addr(int kind, size_t off)
{
	return (__u64)(uintptr_t)(args_page(kind) + off);
}

static void *arg_rw(int kind, size_t off)
{
	return args_rw + kind * PAGE + off;
}

static __u64 garbage(struct fuzz_rng *r)
{
	static const __u64 g[] = { 0, 1, KERNEL_ADDR, NONCANON_ADDR, ~0ULL };

	return g[fuzz_below(r, sizeof(g) / sizeof(g[0]))];
}

static void fill_iovecs(struct fuzz_rng *r)
{
	static const __u64 lens[] = { 0, 1, 8, 100, 512, 4096, 4097, 16384, 65536,
				      1 << 20, 0x7fffffff, ~0ULL >> 1 };
	struct iovec *v = arg_rw(A_IOV, 0);

	for (size_t i = 0; i < PAGE / sizeof(*v); i++) {
		__u64 base;

		switch (fuzz_below(r, 8)) {
		case 0:
			base = data_at(DATA_SIZE - fuzz_below(r, 64));
			break;
		case 1:
			base = fuzz_chance(r, 1, 2) ? garbage(r) : data_at(DATA_SIZE + PAGE);
			break;
		default:
			base = data_at(fuzz_below(r, DATA_SIZE));
			break;
		}
		v[i].iov_base = (void *)(uintptr_t)base;
		v[i].iov_len = lens[fuzz_below(r, sizeof(lens) / sizeof(lens[0]))];
	}
}

static void fill_msghdrs(struct fuzz_rng *r)
{
	static const size_t namelens[] = { 0, 16, 28, 110, 128, 4096 };
	static const size_t iovlens[] = { 0, 1, 1, 2, 3, 4, 8, 1024, 1025 };
	static const size_t ctllens[] = { 0, 16, 24, 64, 256, 4096 };

	for (size_t off = 0; off + 64 <= PAGE; off += 64) {
		struct msghdr *m = arg_rw(A_MSG, off);

		switch (fuzz_below(r, 4)) {
		case 0:
			m->msg_name = NULL;
			break;
		case 1:
			m->msg_name = (void *)(uintptr_t)data_at(fuzz_below(r, DATA_SIZE) & ~7UL);
			break;
		default:
			m->msg_name = (void *)(uintptr_t)arg_addr(A_SADDR, 128 * fuzz_below(r, 13));
			break;
		}
		m->msg_namelen = namelens[fuzz_below(r, 6)];
		m->msg_iov = (void *)(uintptr_t)arg_addr(A_IOV, 16 * fuzz_below(r, 256));
		m->msg_iovlen = iovlens[fuzz_below(r, 9)];
		m->msg_control = fuzz_chance(r, 1, 3) ? NULL :
				 (void *)(uintptr_t)data_at(fuzz_below(r, DATA_SIZE) & ~7UL);
		m->msg_controllen = ctllens[fuzz_below(r, 6)];
		m->msg_flags = fuzz_chance(r, 1, 2) ? 0 : (int)fuzz_next(r);
	}
}

/* strings placed one after another; their addresses go to *out */
static void fill_strings(int kind, const char *const *strs, int n, __u64 *out)
{
	size_t off = 0;

	for (int i = 0; i < n; i++) {
		size_t len = strlen(strs[i]) + 1;

		memcpy(arg_rw(kind, off), strs[i], len);
		out[i] = arg_addr(kind, off);
		off += (len + 15) & ~15UL;
	}
	/* and one that is never terminated: the guard page ends it */
	memset(arg_rw(kind, PAGE - 64), 'a', 64);
	out[n] = arg_addr(kind, PAGE - 64);
}

static void set_pool(int cls, int kind, const __u64 *v)
{
	memcpy(skel->data_sqf->sqf_pool[cls], v, SQF_POOL_N * sizeof(*v));
	skel->data_sqf->sqf_kind[cls] = kind;
}

/* a pool of n addresses: the rest of its 16 slots repeat them, 2 garbage */
static void set_ptr_pool(int cls, const __u64 *addrs, int n)
{
	__u64 v[SQF_POOL_N];

	for (int i = 0; i < SQF_POOL_N - 2; i++)
		v[i] = addrs[i % n];
	v[SQF_POOL_N - 2] = 0;
	v[SQF_POOL_N - 1] = KERNEL_ADDR;
	set_pool(cls, FK_EXACT, v);
}

static void fill_args_and_pools(void)
{
	struct fuzz_rng r = { 0xa465 };
	__u64 a[SQF_POOL_N];
	char long_name[300];

	fill_iovecs(&r);
	for (int i = 0; i < SQF_POOL_N - 2; i++) {
		static const int slot[] = { 0, 1, 2, 4, 8, 16, 32, 64, 100, 128, 200, 250, 254, 255 };

		a[i] = arg_addr(A_IOV, 16 * slot[i]);
	}
	set_ptr_pool(FZ_IOV, a, SQF_POOL_N - 2);

	/* sockaddrs: loopback, unix sockets in the temp dir (the cwd), junk */
	{
		struct sockaddr_un un = { .sun_family = AF_UNIX };
		struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(41234),
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(41234),
					    .sin6_addr = IN6ADDR_LOOPBACK_INIT };
		int n = 0;

#define SADDR(x) do { memcpy(arg_rw(A_SADDR, 128 * n), &(x), sizeof(x)); a[n] = arg_addr(A_SADDR, 128 * n); n++; } while (0)
		strcpy(un.sun_path, "u0");
		SADDR(un);
		memset(un.sun_path, 0, sizeof(un.sun_path));
		memcpy(un.sun_path, "\0fuzz-sqe", 9);
		SADDR(un);
		SADDR(in);
		in.sin_addr.s_addr = 0;
		in.sin_port = 0;
		SADDR(in);
		SADDR(in6);
		un.sun_family = AF_UNSPEC;
		SADDR(un);
		in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		SADDR(in);
		un.sun_family = 0xffff;
		SADDR(un);
		un.sun_family = AF_UNIX;
		memset(un.sun_path, 0, sizeof(un.sun_path));
		strcpy(un.sun_path, "d0/u1");
		SADDR(un);
		memset(&in6.sin6_addr, 0, sizeof(in6.sin6_addr));
		in6.sin6_port = 0;
		SADDR(in6);
		memset(un.sun_path, 'u', sizeof(un.sun_path));	/* unterminated, relative */
		SADDR(un);
		in.sin_port = htons(41235);
		SADDR(in);
		/* the last slot: a length past 16 runs into the guard */
		memcpy(arg_rw(A_SADDR, PAGE - 16), &in, 16);
		a[n++] = arg_addr(A_SADDR, PAGE - 16);
#undef SADDR
		set_ptr_pool(FZ_SADDR, a, n);
	}
	fill_msghdrs(&r);
	for (int i = 0; i < SQF_POOL_N - 2; i++)
		a[i] = arg_addr(A_MSG, 64 * (i * 4 + (i & 3)));
	set_ptr_pool(FZ_MSG, a, SQF_POOL_N - 2);

	/* relative names only, never "..": nothing leaves the temp dir */
	memset(long_name, 'n', 255);
	long_name[255] = 0;
	{
		const char *paths[] = { "f0", "f1", "d0", "d0/f1", "d0/d1", "d0/d1/f2", "l0", "l1",
					"u0", "", ".", "d0/", long_name };

		fill_strings(A_PATH, paths, 13, a);
		set_ptr_pool(FZ_PATH, a, 14);
	}
	{
		char long_x[300] = "user.";

		memset(long_x + 5, 'x', 280);
		long_x[285] = 0;
		const char *names[] = { "user.a", "user.b", "trusted.t", "security.s",
					"system.posix_acl_access", "system.posix_acl_default", "",
					"user.", "nosuch.x", "security.capability",
					"trusted.overlay.opaque", long_x, long_name };

		fill_strings(A_XNAME, names, 13, a);
		set_ptr_pool(FZ_XNAME, a, 14);
	}

	/* timespecs: zero, tiny, short, long, invalid */
	{
		static const struct { long long s, ns; } ts[] = {
			{ 0, 0 }, { 0, 1 }, { 0, 1000 }, { 0, 50000 }, { 0, 100000 }, { 0, 1000000 },
			{ 0, 5000000 }, { 1, 0 }, { -1, 0 }, { 0, -1 }, { 0, 999999999 },
			{ 0, 1000000000 }, { 1LL << 40, 0 }, { LLONG_MAX, 999999999 },
		};

		for (int i = 0; i < 14; i++) {
			memcpy(arg_rw(A_TS, 16 * i), &ts[i], 16);
			a[i] = arg_addr(A_TS, 16 * i);
		}
		set_ptr_pool(FZ_TS, a, 14);
	}

	/* open_how, each in a zeroed 64-byte slot (sizes up to 64 pass) */
	{
		static const struct open_how how[] = {
			{ O_RDONLY, 0, 0 }, { O_RDWR | O_CREAT, 0644, 0 },
			{ O_PATH, 0, RESOLVE_BENEATH }, { O_DIRECTORY, 0, RESOLVE_IN_ROOT },
			{ O_TMPFILE | O_RDWR, 0600, 0 }, { O_WRONLY | O_TRUNC, 0, RESOLVE_NO_SYMLINKS },
			{ O_RDONLY, 0, RESOLVE_CACHED }, { O_RDWR | O_CREAT | O_EXCL, 07777, 0 },
			{ O_RDONLY, 0644, 0 }, { ~0ULL, ~0ULL, ~0ULL }, { O_RDWR, 0, 0x7f },
			{ O_CREAT | O_DIRECTORY, 0, 0 }, { O_RDONLY | O_NOFOLLOW, 0, RESOLVE_NO_XDEV },
		};

		for (int i = 0; i < 13; i++) {
			memcpy(arg_rw(A_HOW, 64 * i), &how[i], sizeof(how[i]));
			a[i] = arg_addr(A_HOW, 64 * i);
		}
		/* a nonzero byte past the known size: E2BIG for larger sizes */
		memcpy(arg_rw(A_HOW, 64 * 13), &how[1], sizeof(how[1]));
		*(char *)arg_rw(A_HOW, 64 * 13 + 30) = 1;
		a[13] = arg_addr(A_HOW, 64 * 13);
		set_ptr_pool(FZ_HOW, a, 14);
	}

	/* epoll_event: packed 12 bytes on x86-64 */
	{
		static const __u32 ev[] = { EPOLLIN, EPOLLOUT | EPOLLET, EPOLLIN | EPOLLONESHOT,
					    EPOLLIN | EPOLLEXCLUSIVE, EPOLLPRI | EPOLLRDHUP, 0,
					    ~0U, EPOLLIN | EPOLLOUT | EPOLLWAKEUP };

		for (int i = 0; i < 14; i++) {
			struct epoll_event e = { .events = ev[i % 8], .data.u64 = fuzz_next(&r) };

			memcpy(arg_rw(A_EPEV, 16 * i), &e, sizeof(e));
			a[i] = arg_addr(A_EPEV, 16 * i);
		}
		set_ptr_pool(FZ_EPEV, a, 14);
	}

	/* futex_waitv arrays: the whole page is entries, so any count stays vetted */
	{
		struct futex_waitv *w = arg_rw(A_WAITV, 0);

		for (size_t i = 0; i < PAGE / sizeof(*w); i++) {
			__u64 off = fuzz_below(&r, DATA_SIZE / 4) * 4;
			__u32 cur;

			memcpy(&cur, pattern + off, 4);
			w[i].uaddr = fuzz_chance(&r, 1, 8) ? garbage(&r) :
				     data_at(off + (fuzz_chance(&r, 1, 16) ? 1 : 0));
			w[i].val = fuzz_chance(&r, 1, 2) ? cur : fuzz_below(&r, 3);
			w[i].flags = fuzz_chance(&r, 1, 8) ? (__u32)fuzz_next(&r) :
				     fuzz_chance(&r, 1, 2) ? 0x82 : 0x02;
			w[i].__reserved = fuzz_chance(&r, 1, 16);
		}
		for (int i = 0; i < 14; i++)
			a[i] = arg_addr(A_WAITV, sizeof(*w) * (i * 12));
		set_ptr_pool(FZ_WAITV, a, 14);
	}

	/* fd arrays for FILES_UPDATE: per-case files, skips, rings, junk */
	{
		const __s32 fds[] = { FD_FILE, FD_NULL, FD_PIPE_R, FD_PIPE_W, FD_SOCK_A, FD_SOCK_B,
				      FD_DIR, FD_EPOLL, FD_EVENT, -1, IORING_REGISTER_FILES_SKIP,
				      FD_RING, FD_RING2, 1 << 20, scratch_lo };
		__s32 *v = arg_rw(A_FDARR, 0);

		for (size_t i = 0; i < PAGE / 4; i++)
			v[i] = fds[fuzz_below(&r, sizeof(fds) / sizeof(fds[0]))];
		for (int i = 0; i < 14; i++)
			a[i] = arg_addr(A_FDARR, 4 * (i * 20));
		a[13] = arg_addr(A_FDARR, PAGE - 8);
		set_ptr_pool(FZ_FDARR, a, 14);
	}

	/* the pools of plain values */
	{
		const __u64 zero[SQF_POOL_N] = {};
		const __u64 mostly0[SQF_POOL_N] = { [14] = 1, [15] = ~0ULL };
		const __u64 num[SQF_POOL_N] = { 0, 1, 2, 3, 4, 7, 8, 16, 63, 64, 4095, 4096, 65535,
						65536, 0x7fffffff, 0xffffffff };
		const __u64 small[SQF_POOL_N] = { 0, 0, 1, 1, 2, 2, 3, 4, 5, 7, 8, 15, 16, 64,
						  1024, 1025 };
		const __u64 one[SQF_POOL_N] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 2 };
		const __u64 len[SQF_POOL_N] = { 0, 1, 2, 7, 8, 64, 512, 4095, 4096, 4097, 16384,
						65536, 65537, 1 << 20, 0x7ffff000, 0xffffffff };
		const __u64 off[SQF_POOL_N] = { 0, 0, 1, 512, 4096, 8192, 65536, 1 << 20, 1 << 30,
						1ULL << 40, (1ULL << 63) - 1, ~0ULL, ~0ULL - 1, 4095,
						8191, 0x7ffffffffffff000ULL };
		const __u64 fd[SQF_POOL_N] = { FD_RING, FD_RING2, FD_FILE, FD_NULL, FD_PIPE_R,
					       FD_PIPE_W, FD_SOCK_A, FD_SOCK_B, FD_DIR, FD_EPOLL,
					       FD_EVENT, scratch_lo, scratch_lo + 1, (__u32)-1,
					       (__u32)AT_FDCWD, 1 << 20 };
		const __u64 fdclose[SQF_POOL_N] = { FD_FILE, FD_NULL, FD_PIPE_R, FD_PIPE_W, FD_SOCK_A,
						    FD_SOCK_B, FD_DIR, FD_EPOLL, FD_EVENT, FD_RING,
						    FD_RING2, (__u32)-1, (__u32)AT_FDCWD, 1 << 20,
						    0x7fffffff, FD_FILE };
		const __u64 fixed[SQF_POOL_N] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17,
						  1000, 0xffffffff };
		const __u64 slot[SQF_POOL_N] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 16, 17,
						 IORING_FILE_INDEX_ALLOC, 0x10000, 5 };
		const __u64 buf[SQF_POOL_N] = { 0, 0, 1, 1, 2, 3, 4, 5, 1, 2, 7, 8, 100, 0xffff,
						3, 0 };
		const __u64 pers[SQF_POOL_N] = { [12] = personality, [13] = personality,
						 [14] = personality + 1, [15] = 0xffff };
		__u64 dedge[SQF_POOL_N] = {
			data_at(0), (uintptr_t)param_mem, data_at(DATA_SIZE - 1), data_at(DATA_SIZE),
			data_at(0) - 1, data_at(DATA_SIZE + PAGE), 0, 1, 4096, KERNEL_ADDR,
			0xffff888000000000ULL, NONCANON_ADDR, (uintptr_t)param_mem + 3 * PAGE + 8,
			data_at(8), data_at(DATA_SIZE - PAGE), arg_addr(A_IOV, 0),
		};
		const __u64 madv_addr[SQF_POOL_N] = {
			data_at(0), data_at(PAGE), data_at(2 * PAGE), data_at(4 * PAGE),
			data_at(8 * PAGE), data_at(DATA_SIZE - PAGE), data_at(DATA_SIZE),
			data_at(0) - PAGE, arg_addr(A_IOV, 0), arg_addr(A_IOV, PAGE), data_at(1),
			0, KERNEL_ADDR, NONCANON_ADDR, data_at(0), data_at(3 * PAGE),
		};
		/*
		 * From any of those, never past the reservation's upper guard.
		 * The kernel takes the length from off, or from the 32-bit len
		 * when off is 0, so a value is either length: the huge one
		 * overflows as off (EINVAL) and is 0 as len. (~0 would be 4 GiB
		 * as len, and MADV_DONTNEED over it zeroed this process's TLS.)
		 */
		const __u64 madv_len[SQF_POOL_N] = { 0, 1, 4096, 8192, 16384, 65536, 4095, 12288,
						     0x10000, 0, 4096, 8192, 32768,
						     0xffffffff00000000ULL, 1 << 20, 2 << 20 };
		/* no MADV_REMOVE, HWPOISON, SOFT_OFFLINE: nothing that frees or poisons */
		const __u64 advice[SQF_POOL_N] = { MADV_NORMAL, MADV_RANDOM, MADV_SEQUENTIAL,
						   MADV_WILLNEED, MADV_DONTNEED, MADV_FREE,
						   MADV_DONTFORK, MADV_DOFORK, MADV_MERGEABLE,
						   MADV_UNMERGEABLE, MADV_HUGEPAGE, MADV_NOHUGEPAGE,
						   MADV_COLD, MADV_PAGEOUT, MADV_POPULATE_READ, 999 };
		const __u64 salen[SQF_POOL_N] = { 0, 1, 2, 3, 8, 16, 16, 28, 28, 110, 112, 128, 256,
						  4096, 0xffff, 0xffffffff };
		const __u64 howlen[SQF_POOL_N] = { 24, 24, 24, 0, 8, 16, 23, 25, 32, 64, 128, 4096,
						   4097, 8192, 24, 1 << 20 };
		const __u64 pbuf_n[SQF_POOL_N] = { 0, 1, 1, 2, 3, 4, 8, 16, 32, 64, 100, 1000,
						   65536, 65537, 0xffffffff, 8 };
		const __u64 pbuf_len[SQF_POOL_N] = { 0, 1, 8, 64, 100, 512, 1024, 4096, 4096, 8192,
						     65536, 1 << 20, 0x7fffffff, 0xffffffff, 256,
						     32 };
		/* no netlink, no packet sockets: nothing that reconfigures the VM */
		const __u64 domain[SQF_POOL_N] = { AF_UNIX, AF_UNIX, AF_UNIX, AF_INET, AF_INET,
						   AF_INET, AF_INET, AF_INET6, AF_INET6, AF_INET6,
						   AF_UNSPEC, 46, 200, 0xffffffff, AF_UNIX, AF_INET };
		const __u64 socktype[SQF_POOL_N] = { SOCK_STREAM, SOCK_STREAM, SOCK_DGRAM, SOCK_DGRAM,
						     SOCK_SEQPACKET, SOCK_RAW,
						     SOCK_STREAM | SOCK_NONBLOCK,
						     SOCK_DGRAM | SOCK_CLOEXEC, 0, 11, 0xffff,
						     SOCK_STREAM, SOCK_DGRAM, SOCK_STREAM,
						     SOCK_SEQPACKET | SOCK_NONBLOCK, SOCK_DGRAM };
#define OPT(level, name) ((__u64)(level) | (__u64)(name) << 32)
		const __u64 sockopt[SQF_POOL_N] = {
			OPT(SOL_SOCKET, SO_RCVBUF), OPT(SOL_SOCKET, SO_SNDBUF),
			OPT(SOL_SOCKET, SO_REUSEADDR), OPT(SOL_SOCKET, SO_TYPE),
			OPT(SOL_SOCKET, SO_ERROR), OPT(SOL_SOCKET, SO_LINGER),
			OPT(SOL_SOCKET, SO_PEEK_OFF), OPT(SOL_SOCKET, SO_RCVTIMEO_OLD),
			OPT(IPPROTO_TCP, 1), OPT(IPPROTO_TCP, 2), OPT(IPPROTO_UDP, 1),
			OPT(SOL_SOCKET, SO_PRIORITY), OPT(SOL_SOCKET, SO_MARK), OPT(999, 1),
			OPT(SOL_SOCKET, 9999), OPT(SOL_SOCKET, SO_KEEPALIVE),
		};
#undef OPT
		const __u64 cmdop[SQF_POOL_N] = { 0, 1, 2, 3, 0, 1, 2, 3, 2, 3, 4, 100, 0xffffffff,
						  0x40001234, 3, 2 };
		const __u64 futex[SQF_POOL_N] = { 0x82, 0x82, 0x82, 0x82, 0x02, 0x02, 0, 1, 3, 0x80,
						  0x83, 0x08, 0x10, 0xffffffff, 0x81, 0x40 };
		const __u64 mode[SQF_POOL_N] = { 0, 0644, 0600, 0755, 0777, 01777, 04755, 07777,
						 0x10000, 0, 0644, 0400, 0200, 0100, 0, 0666 };
		const __u64 flags[SQF_POOL_N] = { 0xffffffff };
		const __u64 rwf[SQF_POOL_N] = { 0x7f };
		const __u64 atf[SQF_POOL_N] = { 0x7f00 };
		const __u64 cancelf[SQF_POOL_N] = { 0x7f };
		const __u64 splicef[SQF_POOL_N] = { 0x8000000f };
		const __u64 ioprio[SQF_POOL_N] = { 0, 0, 0, 0, 0, 0, 0, 0, 1 << 13, (1 << 13) | 7,
						   2 << 13, (2 << 13) | 4, 3 << 13, 4 << 13,
						   0xffff, 1 };
		const __u64 netf[SQF_POOL_N] = { 0x3f };
		const __u64 msgcmd[SQF_POOL_N] = { 0, 0, 0, 0, 1, 1, 1, 1, 2, 3, 0xffffffff, 0, 1,
						   0, 1, 7 };
		const __u64 ringflags[SQF_POOL_N] = { 0, 0, 0, 0, 1, 2, 3, 4, 0, 1, 2, 0,
						      0xffffffff, 0, 1, 2 };
		const __u64 tflags[SQF_POOL_N] = { 0x7f };
		const __u64 nopf[SQF_POOL_N] = { 0x1f };
		const __u64 waitopts[SQF_POOL_N] = { WEXITED, WEXITED | WNOHANG, WSTOPPED, WCONTINUED,
						     WNOWAIT | WEXITED, 0, WEXITED | WNOHANG | WNOWAIT,
						     0xffffffff, WEXITED, WEXITED | WNOHANG,
						     __WALL | WEXITED, WEXITED | WNOHANG,
						     WSTOPPED | WNOHANG, 1, 0x40000000, WEXITED };

		set_pool(FZ_ZERO, FK_EXACT, zero);
		set_pool(FZ_MOSTLY0, FK_EXACT, mostly0);
		set_pool(FZ_NUM, FK_NUM, num);
		set_pool(FZ_SMALL, FK_NUM, small);
		set_pool(FZ_ONE, FK_EXACT, one);
		set_pool(FZ_LEN, FK_NUM, len);
		set_pool(FZ_OFF, FK_NUM, off);
		set_pool(FZ_FD, FK_EXACT, fd);
		set_pool(FZ_FDNUM, FK_EXACT, fd);
		set_pool(FZ_FDCLOSE, FK_EXACT, fdclose);
		set_pool(FZ_FIXED, FK_EXACT, fixed);
		set_pool(FZ_SLOT, FK_EXACT, slot);
		set_pool(FZ_BUF, FK_EXACT, buf);
		set_pool(FZ_PERS, FK_EXACT, pers);
		set_pool(FZ_DATA, FK_DATA, dedge);
		set_pool(FZ_MADV_ADDR, FK_EXACT, madv_addr);
		set_pool(FZ_MADV_LEN, FK_EXACT, madv_len);
		set_pool(FZ_ADVICE, FK_EXACT, advice);
		set_pool(FZ_SALEN, FK_NUM, salen);
		set_pool(FZ_HOWLEN, FK_EXACT, howlen);
		set_pool(FZ_UD, FK_UD, zero);
		set_pool(FZ_PBUF_N, FK_EXACT, pbuf_n);
		set_pool(FZ_PBUF_LEN, FK_EXACT, pbuf_len);
		set_pool(FZ_DOMAIN, FK_EXACT, domain);
		set_pool(FZ_SOCKTYPE, FK_EXACT, socktype);
		set_pool(FZ_SOCKOPT, FK_EXACT, sockopt);
		set_pool(FZ_CMDOP, FK_EXACT, cmdop);
		set_pool(FZ_FUTEX, FK_EXACT, futex);
		set_pool(FZ_MODE, FK_NUM, mode);
		set_pool(FZ_FLAGS, FK_BITS, flags);
		set_pool(FZ_RWF, FK_BITS, rwf);
		set_pool(FZ_ATF, FK_BITS, atf);
		set_pool(FZ_CANCELF, FK_BITS, cancelf);
		set_pool(FZ_SPLICEF, FK_BITS, splicef);
		set_pool(FZ_IOPRIO, FK_EXACT, ioprio);
		set_pool(FZ_NETF, FK_BITS, netf);
		set_pool(FZ_MSGCMD, FK_EXACT, msgcmd);
		set_pool(FZ_RINGFLAGS, FK_EXACT, ringflags);
		set_pool(FZ_TIMEOUT_FLAGS, FK_BITS, tflags);
		set_pool(FZ_NOP_FLAGS, FK_BITS, nopf);
		set_pool(FZ_WAITOPTS, FK_EXACT, waitopts);
	}
	skel->data_sqf->sqf_data_base = data_at(0);
	skel->data_sqf->sqf_data_size = DATA_SIZE;
}

/*
 * Which pool each field of each opcode draws from. A field the kernel
 * reads as a pointer, an fd to act on or a path gets a vetted pool;
 * "Z" (mostly zero) is for fields a prep wants zero, so it usually
 * passes and now and then is refused.
 */
#define Z FZ_MOSTLY0
static const struct sqf_spec specs[IORING_OP_LAST] = {
	/*                               fd          off          addr          len          opflags           buf     fdin         addr3     ioprio     pad2 */
	[IORING_OP_NOP]              = { FZ_FD,      Z,           Z,            FZ_NUM,      FZ_NOP_FLAGS,     FZ_BUF, Z,           Z,        Z,         Z },
	[IORING_OP_READV]            = { FZ_FD,      FZ_OFF,      FZ_IOV,       FZ_SMALL,    FZ_RWF,           FZ_BUF, Z,           Z,        FZ_IOPRIO, Z },
	[IORING_OP_WRITEV]           = { FZ_FD,      FZ_OFF,      FZ_IOV,       FZ_SMALL,    FZ_RWF,           FZ_BUF, Z,           Z,        FZ_IOPRIO, Z },
	[IORING_OP_FSYNC]            = { FZ_FD,      FZ_OFF,      Z,            FZ_LEN,      FZ_SMALL,         Z,      Z,           Z,        Z,         Z },
	[IORING_OP_READ_FIXED]       = { FZ_FD,      FZ_OFF,      FZ_DATA,      FZ_LEN,      FZ_RWF,           FZ_BUF, Z,           Z,        FZ_IOPRIO, Z },
	[IORING_OP_WRITE_FIXED]      = { FZ_FD,      FZ_OFF,      FZ_DATA,      FZ_LEN,      FZ_RWF,           FZ_BUF, Z,           Z,        FZ_IOPRIO, Z },
	[IORING_OP_POLL_ADD]         = { FZ_FD,      Z,           Z,            FZ_SMALL,    FZ_FLAGS,         Z,      Z,           Z,        Z,         Z },
	[IORING_OP_POLL_REMOVE]      = { FZ_FD,      FZ_UD,       FZ_UD,        FZ_SMALL,    FZ_FLAGS,         Z,      Z,           Z,        Z,         Z },
	[IORING_OP_SYNC_FILE_RANGE]  = { FZ_FD,      FZ_OFF,      Z,            FZ_LEN,      FZ_SMALL,         Z,      Z,           Z,        Z,         Z },
	[IORING_OP_SENDMSG]          = { FZ_FD,      Z,           FZ_MSG,       Z,           FZ_FLAGS,         FZ_BUF, Z,           Z,        FZ_NETF,   Z },
	[IORING_OP_RECVMSG]          = { FZ_FD,      Z,           FZ_MSG,       Z,           FZ_FLAGS,         FZ_BUF, Z,           Z,        FZ_NETF,   Z },
	[IORING_OP_TIMEOUT]          = { FZ_FD,      FZ_SMALL,    FZ_TS,        FZ_ONE,      FZ_TIMEOUT_FLAGS, Z,      Z,           Z,        Z,         Z },
	[IORING_OP_TIMEOUT_REMOVE]   = { FZ_FD,      FZ_TS,       FZ_UD,        Z,           FZ_TIMEOUT_FLAGS, Z,      Z,           Z,        Z,         Z },
	[IORING_OP_ACCEPT]           = { FZ_FD,      FZ_DATA,     FZ_DATA,      Z,           FZ_FLAGS,         Z,      FZ_SLOT,     Z,        FZ_NETF,   Z },
	[IORING_OP_ASYNC_CANCEL]     = { FZ_FD,      Z,           FZ_UD,        FZ_SMALL,    FZ_CANCELF,       Z,      Z,           Z,        Z,         Z },
	[IORING_OP_LINK_TIMEOUT]     = { FZ_FD,      Z,           FZ_TS,        FZ_ONE,      FZ_TIMEOUT_FLAGS, Z,      Z,           Z,        Z,         Z },
	[IORING_OP_CONNECT]          = { FZ_FD,      FZ_SALEN,    FZ_SADDR,     Z,           Z,                Z,      Z,           Z,        Z,         Z },
	[IORING_OP_FALLOCATE]        = { FZ_FD,      FZ_OFF,      FZ_LEN,       FZ_SMALL,    Z,                Z,      Z,           Z,        Z,         Z },
	[IORING_OP_OPENAT]           = { FZ_FDNUM,   Z,           FZ_PATH,      FZ_MODE,     FZ_FLAGS,         Z,      FZ_SLOT,     Z,        Z,         Z },
	[IORING_OP_CLOSE]            = { FZ_FDCLOSE, Z,           Z,            Z,           Z,                Z,      FZ_SLOT,     Z,        Z,         Z },
	[IORING_OP_FILES_UPDATE]     = { FZ_FD,      FZ_FIXED,    FZ_FDARR,     FZ_SMALL,    Z,                Z,      Z,           Z,        Z,         Z },
	[IORING_OP_STATX]            = { FZ_FDNUM,   FZ_DATA,     FZ_PATH,      FZ_NUM,      FZ_ATF,           Z,      Z,           Z,        Z,         Z },
	[IORING_OP_READ]             = { FZ_FD,      FZ_OFF,      FZ_DATA,      FZ_LEN,      FZ_RWF,           FZ_BUF, Z,           Z,        FZ_IOPRIO, Z },
	[IORING_OP_WRITE]            = { FZ_FD,      FZ_OFF,      FZ_DATA,      FZ_LEN,      FZ_RWF,           FZ_BUF, Z,           Z,        FZ_IOPRIO, Z },
	[IORING_OP_FADVISE]          = { FZ_FD,      FZ_OFF,      FZ_LEN,       FZ_LEN,      FZ_SMALL,         Z,      Z,           Z,        Z,         Z },
	[IORING_OP_MADVISE]          = { FZ_FD,      FZ_MADV_LEN, FZ_MADV_ADDR, FZ_MADV_LEN, FZ_ADVICE,        Z,      Z,           Z,        Z,         Z },
	[IORING_OP_SEND]             = { FZ_FD,      FZ_SADDR,    FZ_DATA,      FZ_LEN,      FZ_FLAGS,         FZ_BUF, FZ_SALEN,    Z,        FZ_NETF,   Z },
	[IORING_OP_RECV]             = { FZ_FD,      Z,           FZ_DATA,      FZ_LEN,      FZ_FLAGS,         FZ_BUF, Z,           Z,        FZ_NETF,   Z },
	[IORING_OP_OPENAT2]          = { FZ_FDNUM,   FZ_HOW,      FZ_PATH,      FZ_HOWLEN,   Z,                Z,      FZ_SLOT,     Z,        Z,         Z },
	[IORING_OP_EPOLL_CTL]        = { FZ_FDNUM,   FZ_FD,       FZ_EPEV,      FZ_SMALL,    Z,                Z,      Z,           Z,        Z,         Z },
	[IORING_OP_SPLICE]           = { FZ_FD,      FZ_OFF,      FZ_OFF,       FZ_LEN,      FZ_SPLICEF,       Z,      FZ_FDNUM,    Z,        Z,         Z },
	[IORING_OP_PROVIDE_BUFFERS]  = { FZ_PBUF_N,  FZ_SMALL,    FZ_DATA,      FZ_PBUF_LEN, Z,                FZ_BUF, Z,           Z,        Z,         Z },
	[IORING_OP_REMOVE_BUFFERS]   = { FZ_PBUF_N,  Z,           Z,            Z,           Z,                FZ_BUF, Z,           Z,        Z,         Z },
	[IORING_OP_TEE]              = { FZ_FD,      Z,           Z,            FZ_LEN,      FZ_SPLICEF,       Z,      FZ_FDNUM,    Z,        Z,         Z },
	[IORING_OP_SHUTDOWN]         = { FZ_FD,      Z,           Z,            FZ_SMALL,    Z,                Z,      Z,           Z,        Z,         Z },
	[IORING_OP_RENAMEAT]         = { FZ_FDNUM,   FZ_PATH,     FZ_PATH,      FZ_FDNUM,    FZ_SMALL,         Z,      Z,           Z,        Z,         Z },
	[IORING_OP_UNLINKAT]         = { FZ_FDNUM,   Z,           FZ_PATH,      Z,           FZ_ATF,           Z,      Z,           Z,        Z,         Z },
	[IORING_OP_MKDIRAT]          = { FZ_FDNUM,   Z,           FZ_PATH,      FZ_MODE,     Z,                Z,      Z,           Z,        Z,         Z },
	[IORING_OP_SYMLINKAT]        = { FZ_FDNUM,   FZ_PATH,     FZ_PATH,      Z,           Z,                Z,      Z,           Z,        Z,         Z },
	[IORING_OP_LINKAT]           = { FZ_FDNUM,   FZ_PATH,     FZ_PATH,      FZ_FDNUM,    FZ_ATF,           Z,      Z,           Z,        Z,         Z },
	[IORING_OP_MSG_RING]         = { FZ_FD,      FZ_NUM,      FZ_MSGCMD,    FZ_NUM,      FZ_RINGFLAGS,     Z,      FZ_FIXED,    FZ_FIXED, Z,         Z },
	[IORING_OP_FSETXATTR]        = { FZ_FD,      FZ_DATA,     FZ_XNAME,     FZ_LEN,      FZ_SMALL,         Z,      Z,           Z,        Z,         Z },
	[IORING_OP_SETXATTR]         = { FZ_FD,      FZ_DATA,     FZ_XNAME,     FZ_LEN,      FZ_SMALL,         Z,      Z,           FZ_PATH,  Z,         Z },
	[IORING_OP_FGETXATTR]        = { FZ_FD,      FZ_DATA,     FZ_XNAME,     FZ_LEN,      Z,                Z,      Z,           Z,        Z,         Z },
	[IORING_OP_GETXATTR]         = { FZ_FD,      FZ_DATA,     FZ_XNAME,     FZ_LEN,      Z,                Z,      Z,           FZ_PATH,  Z,         Z },
	[IORING_OP_SOCKET]           = { FZ_DOMAIN,  FZ_SOCKTYPE, Z,            FZ_SMALL,    Z,                Z,      FZ_SLOT,     Z,        Z,         Z },
	[IORING_OP_URING_CMD]        = { FZ_FD,      FZ_CMDOP,    FZ_SOCKOPT,   Z,           FZ_SMALL,         FZ_BUF, FZ_LEN,      FZ_DATA,  Z,         Z },
	[IORING_OP_SEND_ZC]          = { FZ_FD,      FZ_SADDR,    FZ_DATA,      FZ_LEN,      FZ_FLAGS,         FZ_BUF, FZ_SALEN,    Z,        FZ_NETF,   Z },
	[IORING_OP_SENDMSG_ZC]       = { FZ_FD,      Z,           FZ_MSG,       Z,           FZ_FLAGS,         FZ_BUF, Z,           Z,        FZ_NETF,   Z },
	[IORING_OP_READ_MULTISHOT]   = { FZ_FD,      FZ_OFF,      Z,            FZ_LEN,      Z,                FZ_BUF, Z,           Z,        Z,         Z },
	[IORING_OP_WAITID]           = { FZ_NUM,     FZ_DATA,     Z,            FZ_SMALL,    Z,                Z,      FZ_WAITOPTS, Z,        Z,         Z },
	[IORING_OP_FUTEX_WAIT]       = { FZ_FUTEX,   FZ_NUM,      FZ_DATA,      Z,           Z,                Z,      Z,           FZ_NUM,   Z,         Z },
	[IORING_OP_FUTEX_WAKE]       = { FZ_FUTEX,   FZ_NUM,      FZ_DATA,      Z,           Z,                Z,      Z,           FZ_NUM,   Z,         Z },
	[IORING_OP_FUTEX_WAITV]      = { Z,          Z,           FZ_WAITV,     FZ_SMALL,    Z,                Z,      Z,           Z,        Z,         Z },
	[IORING_OP_FIXED_FD_INSTALL] = { FZ_FD,      Z,           Z,            Z,           FZ_SMALL,         Z,      Z,           Z,        Z,         Z },
	[IORING_OP_FTRUNCATE]        = { FZ_FD,      FZ_OFF,      Z,            Z,           Z,                Z,      Z,           Z,        Z,         Z },
	[IORING_OP_BIND]             = { FZ_FD,      FZ_SALEN,    FZ_SADDR,     Z,           Z,                Z,      Z,           Z,        Z,         Z },
	[IORING_OP_LISTEN]           = { FZ_FD,      Z,           Z,            FZ_SMALL,    Z,                Z,      Z,           Z,        Z,         Z },
	[IORING_OP_READV_FIXED]      = { FZ_FD,      FZ_OFF,      FZ_IOV,       FZ_SMALL,    FZ_RWF,           FZ_BUF, Z,           Z,        FZ_IOPRIO, Z },
	[IORING_OP_WRITEV_FIXED]     = { FZ_FD,      FZ_OFF,      FZ_IOV,       FZ_SMALL,    FZ_RWF,           FZ_BUF, Z,           Z,        FZ_IOPRIO, Z },
};
#undef Z

static void fill_specs(void)
{
	/* opcodes past IORING_OP_LAST: anything goes, io_init_req() refuses them */
	const struct sqf_spec noise = { FZ_NUM, FZ_NUM, FZ_NUM, FZ_NUM, FZ_FLAGS, FZ_NUM, FZ_NUM,
					FZ_NUM, FZ_NUM, FZ_NUM };
	/* opcodes without a row (placeholders): nothing they could follow */
	const struct sqf_spec quiet = { FZ_FD, FZ_MOSTLY0, FZ_MOSTLY0, FZ_MOSTLY0, FZ_MOSTLY0,
					FZ_MOSTLY0, FZ_MOSTLY0, FZ_MOSTLY0, FZ_MOSTLY0, FZ_MOSTLY0 };

	for (int op = 0; op < 256; op++) {
		const struct sqf_spec *s = op < IORING_OP_LAST ? &specs[op] : &noise;

		if (op < IORING_OP_LAST && s->fd == FZ_ZERO)
			s = &quiet;
		skel->data_sqf->sqf_spec[op] = *s;
	}
}

/* ---- one case */

static const char *const op_names[] = {
	"NOP", "READV", "WRITEV", "FSYNC", "READ_FIXED", "WRITE_FIXED", "POLL_ADD",
	"POLL_REMOVE", "SYNC_FILE_RANGE", "SENDMSG", "RECVMSG", "TIMEOUT", "TIMEOUT_REMOVE",
	"ACCEPT", "ASYNC_CANCEL", "LINK_TIMEOUT", "CONNECT", "FALLOCATE", "OPENAT", "CLOSE",
	"FILES_UPDATE", "STATX", "READ", "WRITE", "FADVISE", "MADVISE", "SEND", "RECV",
	"OPENAT2", "EPOLL_CTL", "SPLICE", "PROVIDE_BUFFERS", "REMOVE_BUFFERS", "TEE",
	"SHUTDOWN", "RENAMEAT", "UNLINKAT", "MKDIRAT", "SYMLINKAT", "LINKAT", "MSG_RING",
	"FSETXATTR", "SETXATTR", "FGETXATTR", "GETXATTR", "SOCKET", "URING_CMD", "SEND_ZC",
	"SENDMSG_ZC", "READ_MULTISHOT", "WAITID", "FUTEX_WAIT", "FUTEX_WAKE", "FUTEX_WAITV",
	"FIXED_FD_INSTALL", "FTRUNCATE", "BIND", "LISTEN", "RECV_ZC", "EPOLL_WAIT",
	"READV_FIXED", "WRITEV_FIXED",
};

static const char *op_name(unsigned int op)
{
	return op < sizeof(op_names) / sizeof(op_names[0]) ? op_names[op] : "?";
}

static const int victims[] = { FD_FILE, FD_NULL, FD_PIPE_R, FD_PIPE_W, FD_SOCK_A, FD_SOCK_B,
			       FD_DIR, FD_EPOLL, FD_EVENT };

static __u64 region_bytes(__u32 id)
{
	switch (id) {
	case 0:
		return (__u64)plan.mem_pages * PAGE;
	case 1:
		return (ring.geom.cq_region_size + PAGE - 1) & ~(PAGE - 1);
	case 2:
		return (ring.geom.sq_region_size + PAGE - 1) & ~(PAGE - 1);
	default:
		return 0;
	}
}

static void make_plan(uint64_t seed)
{
	struct fuzz_rng r = { seed ^ 0x51ab1e5eedULL };
	__u64 x;

	memset(&plan, 0, sizeof(plan));
	plan.seed = seed;
	plan.ring_flags = IOURING_BPF_RING_FLAGS;
	if (fuzz_chance(&r, 1, 2))
		plan.ring_flags |= IORING_SETUP_SUBMIT_ALL;
	if (fuzz_chance(&r, 1, 4))
		plan.ring_flags |= IORING_SETUP_TASKRUN_FLAG;
	plan.mem_pages = fuzz_chance(&r, 1, 4) ? 1 + fuzz_below(&r, 4) : 0;
	plan.pipe_nonblock = fuzz_chance(&r, 1, 2);
	plan.dgram = fuzz_chance(&r, 1, 3);
	plan.ring2_defer = fuzz_chance(&r, 1, 2);
	for (int i = 0; i < NR_FIXED_FILES; i++)
		plan.fixed[i] = fuzz_chance(&r, 3, 4) ? victims[fuzz_below(&r, 9)] : -1;
	/* waiting for a closed ring's teardown is slow: rebind now and then */
	x = fuzz_below(&r, 16);
	plan.end = x < 10 ? END_DETACH_FIRST : x < 15 ? END_CLOSE_FIRST : END_CLOSE_REBIND;

	/* a program load per region case is slow too (TCG: ~0.3 s) */
	if (plan.end == END_DETACH_FIRST && fuzz_chance(&r, 1, 30)) {
		static const __u32 ids[] = { 0, 1, 2, 0, 1, 2, 3, 7, 0x80000000, ~0U };
		struct region_case *rc = &plan.region;
		__u64 edge, sizes[16], size;

		rc->on = true;
		rc->id = ids[fuzz_below(&r, 10)];
		edge = rc->id <= 2 ? region_bytes(rc->id) : PAGE;
		if (!edge)
			edge = PAGE;
		__u64 s[] = { 0, 1, 8, 64, edge - 1, edge, edge + 1, PAGE, 2 * PAGE, 1 << 20,
			      1ULL << 31, UINT32_MAX, 1ULL << 32, 1ULL << 40, edge, edge - 1 };
		memcpy(sizes, s, sizeof(s));
		size = sizes[fuzz_below(&r, 16)];
		rc->size = size;
		switch (fuzz_below(&r, 6)) {
		case 0:
			rc->off = 0;
			break;
		case 1:
			rc->off = size ? size - 1 : 0;
			break;
		case 2:
			rc->off = size;
			break;
		case 3:
			rc->off = size / 2;
			break;
		case 4:
			rc->off = size ? fuzz_below(&r, size) : 0;
			break;
		default:
			rc->off = size + PAGE;
			break;
		}
		rc->access = fuzz_below(&r, 3);
	}
}

static int described;	/* failing cases printed in full */

static void describe_case(FILE *f)
{
	struct sqf_state *s = &skel->bss->sqf;
	bool full = run.replay || described++ < 3;

	fprintf(f, "  case seed=%#" PRIx64 ": ring flags %#x, mem region %u pages, pipe %s, socketpair %s,"
		" end: %s\n", plan.seed, plan.ring_flags, plan.mem_pages,
		plan.pipe_nonblock ? "nonblocking" : "blocking", plan.dgram ? "dgram" : "stream",
		end_names[plan.end]);
	fprintf(f, "  fixed files:");
	for (int i = 0; i < NR_FIXED_FILES; i++)
		fprintf(f, " %d", plan.fixed[i]);
	fprintf(f, "\n");
	if (plan.region.on)
		fprintf(f, "  region: id %#x size %#llx off %#llx access %u\n", plan.region.id,
			(unsigned long long)plan.region.size, (unsigned long long)plan.region.off,
			plan.region.access);
	fprintf(f, "  program: %u batches, %u steps, %u SQEs written, %u submitted, %u CQEs,"
		" last submit %d, last action %u ret %d\n", s->batches, s->steps, s->written,
		s->submitted, s->cqes, s->last_submit, s->last_action, s->last_ret);
	if (!full) {
		fprintf(f, "  (its SQEs: --replay %#" PRIx64 " prints them)\n", plan.seed);
		fflush(f);
		return;
	}
	for (__u32 i = 0; i < s->written && i < SQF_SQE_LOG; i++) {
		const struct io_uring_sqe *q = &skel->bss->sqf_sqe_log[i];

		fprintf(f, "  sqe %u: %s(%u) flags %#x ioprio %#x fd %d off %#llx addr %#llx len %#x"
			" opflags %#x buf %u pers %u fdin %#x addr3 %#llx pad2 %#llx\n", i,
			op_name(q->opcode), q->opcode, q->flags, q->ioprio, q->fd,
			(unsigned long long)q->off, (unsigned long long)q->addr, q->len, q->rw_flags,
			q->buf_index, q->personality, q->file_index, (unsigned long long)q->addr3,
			(unsigned long long)q->__pad2[0]);
	}
	fflush(f);
}

static bool case_failed;

static void fail(const char *fmt, ...)
{
	char msg[20000];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fuzz_case_fail(&run, plan.seed, &case_failed, describe_case, msg);
}

/* The per-case files at their fixed numbers, in a freshly emptied temp dir. */
static int make_victims(void)
{
	int p[2], sv[2], dir, fd;
	char buf[8192];

	close_from(FD_FILE, FD_END - 1);
	dir = open(".", O_RDONLY | O_DIRECTORY);
	if (dir < 0)
		return -errno;
	rm_tree(dir, 0);

	fd = open("f0", O_RDWR | O_CREAT | O_TRUNC, 0644);
	memcpy(buf, pattern, sizeof(buf));
	if (fd < 0 || write(fd, buf, sizeof(buf)) != sizeof(buf))
		return -EIO;
	if (place(fd, FD_FILE) || place(open("/dev/null", O_RDWR), FD_NULL))
		return -errno;
	if (pipe2(p, plan.pipe_nonblock ? O_NONBLOCK : 0))
		return -errno;
	if (plan.seed & 1)
		(void)!write(p[1], buf, 100);
	if (place(p[0], FD_PIPE_R) || place(p[1], FD_PIPE_W))
		return -errno;
	if (socketpair(AF_UNIX, plan.dgram ? SOCK_DGRAM : SOCK_STREAM, 0, sv))
		return -errno;
	if (place(sv[0], FD_SOCK_A) || place(sv[1], FD_SOCK_B))
		return -errno;
	if (place(open(".", O_RDONLY | O_DIRECTORY), FD_DIR) ||
	    place(epoll_create1(0), FD_EPOLL) || place(eventfd(0, 0), FD_EVENT))
		return -errno;
	return 0;
}

/* A fresh ring at FD_RING with files, buffers, a buffer ring, a personality. */
static int make_ring(void)
{
	struct io_uring_params p = {};
	struct iovec bufs[4] = {
		{ data, 16384 }, { data + 16384, 16384 }, { data + 32768, 32768 }, { data + 4096, 4096 },
	};
	struct io_uring_buf_reg br = { .ring_addr = (uintptr_t)pbuf_mem, .ring_entries = 8, .bgid = 1 };
	struct io_uring_buf_ring *bring = pbuf_mem;
	int ret, fd;

	ret = iouring_bpf_ring_init(&ring, SQ_ENTRIES, 0, plan.ring_flags);
	if (ret)
		return ret;
	ret = place(ring.fd, FD_RING);
	ring.fd = FD_RING;
	if (ret)
		return ret;
	ret = reg(FD_RING, IORING_REGISTER_FILES, plan.fixed, NR_FIXED_FILES);
	if (ret)
		return ret;
	ret = reg(FD_RING, IORING_REGISTER_BUFFERS, bufs, 4);
	if (ret)
		return ret;
	memset(pbuf_mem, 0, PAGE);
	ret = reg(FD_RING, IORING_REGISTER_PBUF_RING, &br, 1);
	if (ret)
		return ret;
	for (int i = 0; i < 8; i++) {
		bring->bufs[i].addr = data_at(i * PAGE);
		bring->bufs[i].len = i == 7 ? 100 : PAGE;
		bring->bufs[i].bid = i;
	}
	__atomic_store_n(&bring->tail, 8, __ATOMIC_RELEASE);
	ret = reg(FD_RING, IORING_REGISTER_PERSONALITY, NULL, 0);
	if (ret < 0)
		return ret;
	if (ret != personality)
		fprintf(stderr, "fuzz sqe: personality %d, pools have %d\n", ret, personality);
	if (plan.mem_pages) {
		ret = iouring_bpf_ring_register_mem(&ring, param_mem, plan.mem_pages * PAGE);
		if (ret)
			return ret;
	}

	/* a second ring for MSG_RING, never read: its own CQ overflows */
	p.flags = plan.ring2_defer ? IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN : 0;
	fd = syscall(__NR_io_uring_setup, 4, &p);
	ret = place(fd, FD_RING2);
	if (ret)
		return ret;
	int sparse[8] = { -1, -1, -1, -1, -1, -1, -1, -1 };

	return reg(FD_RING2, IORING_REGISTER_FILES, sparse, 8);
}

/* Is this CQE possible for what the case submitted? */
static void check_cqe(__u64 ud, __s32 res, __u32 flags)
{
	struct sqf_state *s = &skel->bss->sqf;
	const struct io_uring_sqe *q = NULL;
	bool inject = false;

	st_cqes++;
	if ((ud & SQF_UD_MASK) != SQF_UD_TAG) {
		/* MSG_RING posts whatever it was given; a zeroed SQE slot is a NOP */
		if (s->msg_rings)
			return;
		/* a zeroed slot is a NOP; linked behind a failure it is cancelled */
		if (ud == 0 && (res == 0 || res == -ECANCELED) && flags == 0)
			return;
		fail("CQE user_data %#llx res %d flags %#x: no SQE of this case has it",
		     (unsigned long long)ud, res, flags);
		return;
	}
	__u64 idx = ud & ~SQF_UD_MASK;

	if (idx >= s->written) {
		fail("CQE for SQE %llu, only %u written", (unsigned long long)idx, s->written);
		return;
	}
	if (idx < SQF_SQE_LOG) {
		q = &skel->bss->sqf_sqe_log[idx];
		inject = q->opcode == IORING_OP_NOP && (q->nop_flags & IORING_NOP_INJECT_RESULT);
	}
	if (inject)
		return;
	/* a zero-copy notification may say the data was copied after all */
	if ((flags & IORING_CQE_F_NOTIF) && (res & ~IORING_NOTIF_USAGE_ZC_COPIED))
		fail("SQE %llu: notification res %#x", (unsigned long long)idx, res);
	else if (!(flags & IORING_CQE_F_NOTIF) && res < -4095 && q)
		fail("SQE %llu (%s): res %d is no errno", (unsigned long long)idx,
		     op_name(q->opcode), res);
	if (flags & 0xffe0)
		fail("SQE %llu: CQE flags %#x has unknown bits", (unsigned long long)idx, flags);
	else if (!(flags & IORING_CQE_F_BUFFER) && (flags >> IORING_CQE_BUFFER_SHIFT))
		fail("SQE %llu: CQE flags %#x: a buffer id without IORING_CQE_F_BUFFER",
		     (unsigned long long)idx, flags);
	if (!q)
		return;
	if ((flags & IORING_CQE_F_NOTIF) && q->opcode != IORING_OP_SEND_ZC &&
	    q->opcode != IORING_OP_SENDMSG_ZC)
		fail("SQE %llu (%s): a zero-copy notification", (unsigned long long)idx,
		     op_name(q->opcode));
	/* a plain read or write never moves more than it was asked to */
	if ((q->opcode == IORING_OP_READ || q->opcode == IORING_OP_WRITE ||
	     q->opcode == IORING_OP_READ_FIXED || q->opcode == IORING_OP_WRITE_FIXED) &&
	    !(q->flags & IOSQE_BUFFER_SELECT) && res > 0 && (__u32)res > q->len)
		fail("SQE %llu (%s): res %d > len %u", (unsigned long long)idx,
		     op_name(q->opcode), res, q->len);
}

/* CQEs the program left: read them from user space. */
static void drain_cq(void)
{
	unsigned int *khead = (void *)((char *)ring.ring_mem + ring.params.cq_off.head);
	unsigned int *ktail = (void *)((char *)ring.ring_mem + ring.params.cq_off.tail);
	struct io_uring_cqe *cqes = (void *)((char *)ring.ring_mem + ring.params.cq_off.cqes);
	unsigned int mask = ring.params.cq_entries - 1;

	for (int round = 0; round < 64; round++) {
		unsigned int head = *khead, tail = __atomic_load_n(ktail, __ATOMIC_ACQUIRE);

		if (head == tail)
			break;
		for (; head != tail; head++) {
			struct io_uring_cqe *c = &cqes[head & mask];

			if (c->user_data == NOP_UD)
				continue;
			check_cqe(c->user_data, c->res, c->flags);
		}
		__atomic_store_n(khead, head, __ATOMIC_RELEASE);
		/* lets overflowed CQEs in, runs task work */
		arm(ENTER_SIGNAL_MS);
		enter(FD_RING, 0, 0, IORING_ENTER_GETEVENTS);
		disarm();
	}
}

/*
 * After the program is gone the ring is a plain ring: a NOP goes round,
 * unless something that could not be cancelled holds a drain in front of it.
 */
static void nop_round_trip(bool all_cancelled)
{
	unsigned int *khead = (void *)((char *)ring.ring_mem + ring.params.cq_off.head);
	unsigned int *ktail = (void *)((char *)ring.ring_mem + ring.params.cq_off.tail);
	struct io_uring_cqe *cqes = (void *)((char *)ring.ring_mem + ring.params.cq_off.cqes);
	unsigned int mask = ring.params.cq_entries - 1;
	int ret;

	memset(&ring.sqes[0], 0, sizeof(ring.sqes[0]));
	ring.sqes[0].opcode = IORING_OP_NOP;
	ring.sqes[0].user_data = NOP_UD;
	/* with something left in flight, do not wait: a drain may hold it */
	for (int tries = 0; tries < (all_cancelled ? 16 : 1); tries++) {
		arm(ENTER_SIGNAL_MS);
		ret = enter(FD_RING, tries ? 0 : 1, all_cancelled, IORING_ENTER_GETEVENTS);
		disarm();
		if (ret < 0 && ret != -EINTR && ret != -EBADR && ret != -EAGAIN) {
			fail("NOP after detach: io_uring_enter() %d", ret);
			return;
		}
		if (!tries && ret != 1) {
			fail("NOP after detach: submitted %d", ret);
			return;
		}
		unsigned int head = *khead, tail = __atomic_load_n(ktail, __ATOMIC_ACQUIRE);

		for (; head != tail; head++) {
			struct io_uring_cqe *c = &cqes[head & mask];

			if (c->user_data == NOP_UD) {
				__atomic_store_n(khead, head + 1, __ATOMIC_RELEASE);
				if (c->res != 0)
					fail("NOP after detach: res %d", c->res);
				return;
			}
			check_cqe(c->user_data, c->res, c->flags);
		}
		__atomic_store_n(khead, head, __ATOMIC_RELEASE);
	}
	if (all_cancelled)
		fail("NOP after detach: no CQE after 16 tries, with nothing left to cancel");
	else
		st_nop_stuck++;
}

/* Does io_uring_enter()'s result match what the last step asked for? */
static void check_enter(int ret, __u32 calls_before)
{
	struct sqf_state *s = &skel->bss->sqf;

	st_enters++;
	if (ret == -EINTR)
		st_eintr++;
	else if (ret == -EINVAL)
		st_einval++;
	else if (ret == -EBADR)
		st_ebadr++;
	if (s->ring_fail) {
		fail("the program could not map the CQ and SQ regions");
		return;
	}
	if (s->step_calls == calls_before) {
		fail("io_uring_enter() returned %d without running loop_step", ret);
		return;
	}
	switch (s->last_action) {
	case SQF_ACT_STOP:
		if (ret != 0)
			fail("loop_step returned STOP, io_uring_enter() %d", ret);
		break;
	case SQF_ACT_BAD_RET:
	case SQF_ACT_BAD_FLAGS:
		if (ret != -EINVAL)
			fail("loop_step returned %d with flags %#x, io_uring_enter() %d, want -EINVAL",
			     s->last_ret, s->last_flags, ret);
		break;
	case SQF_ACT_CONTINUE:
		/* it only leaves a wait for a signal or a lost CQE */
		if (ret != -EINTR && ret != -EBADR)
			fail("loop_step returned CONTINUE, io_uring_enter() %d", ret);
		break;
	default:
		fail("io_uring_enter() %d, loop_step's last action %u", ret, s->last_action);
	}
}

static char region_log[16384];

static int load_region(struct sqe_region **out, bool *refused)
{
	struct region_case *rc = &plan.region;
	struct sqe_region *rs = sqe_region__open();
	int ret;

	*out = NULL;
	*refused = false;
	if (!rs)
		return -errno;
	rs->rodata->reg_id = rc->id;
	rs->rodata->reg_size = rc->size;
	rs->rodata->reg_off = rc->off;
	rs->rodata->reg_access = rc->access;
	rs->struct_ops.region_ops->ring_fd = FD_RING;
	region_log[0] = 0;
	bpf_program__set_log_buf(rs->progs.region_step, region_log, sizeof(region_log));
	st_region_loads++;
	ret = sqe_region__load(rs);
	if (ret) {
		*refused = true;
		st_region_refused++;
		sqe_region__destroy(rs);
		return 0;
	}
	*out = rs;
	return 0;
}

/* bpf_io_uring_get_region() with this case's id and size, on the detached ring */
static void region_case(void)
{
	struct region_case *rc = &plan.region;
	struct sqe_region *rs;
	struct bpf_link *link;
	bool refused, bad, sure;
	__u64 bytes = region_bytes(rc->id), memsz = rc->size ? rc->size : 1;
	int ret;

	/* what the verifier must refuse, and what it surely takes */
	bad = rc->size > UINT32_MAX ||
	      (rc->access && rc->off >= memsz) ||
	      (rc->access == 2 && rc->size == 0);
	sure = !bad && rc->size <= (1 << 20);

	libbpf_print_fn_t print = libbpf_set_print(NULL);

	phase("region program load", 60);
	ret = load_region(&rs, &refused);
	libbpf_set_print(print);
	if (ret) {
		fail("region program: open: %d", ret);
		return;
	}
	if (refused) {
		if (sure)
			fail("the verifier refused get_region(%#x, %#llx) touching byte %#llx; log:\n%s",
			     rc->id, (unsigned long long)rc->size, (unsigned long long)rc->off,
			     region_log);
		return;
	}
	if (bad) {
		fail("the verifier took get_region(%#x, %#llx) touching byte %#llx (access %u)",
		     rc->id, (unsigned long long)rc->size, (unsigned long long)rc->off, rc->access);
		sqe_region__destroy(rs);
		return;
	}
	phase("region program attach", 10);
	link = bpf_map__attach_struct_ops(rs->maps.region_ops);
	if (!link) {
		fail("region program: attach to the detached ring: %s", strerror(errno));
	} else {
		phase("region program run", 10);
		arm(ENTER_SIGNAL_MS);
		ret = enter(FD_RING, 0, 0, IORING_ENTER_GETEVENTS);
		disarm();
		if (ret != 0 || rs->bss->reg_runs != 1)
			fail("region program: io_uring_enter() %d after %u runs", ret,
			     rs->bss->reg_runs);
		else if (rs->bss->reg_got != (rc->id <= 2 && bytes && rc->size <= bytes))
			fail("get_region(%#x, %#llx) %s, the region has %#llx bytes", rc->id,
			     (unsigned long long)rc->size, rs->bss->reg_got ? "mapped" : "refused",
			     (unsigned long long)bytes);
		st_region_got += rs->bss->reg_got;
		phase("region program detach", 10);
		bpf_link__destroy(link);
	}
	sqe_region__destroy(rs);
}

/*
 * Cancel what is left, synchronously, round by round: a drained request
 * only starts once what came before it is gone. The last round's result:
 * -ENOENT means nothing was left to cancel.
 */
static int cancel_all(void)
{
	struct io_uring_sync_cancel_reg sc = {
		.flags = IORING_ASYNC_CANCEL_ANY,
		.fd = -1,
		.timeout = { .tv_sec = 0, .tv_nsec = 100 * 1000 * 1000 },
	};
	int ret = -ENOENT;

	for (int round = 0; round < 8; round++) {
		phase("sync cancel", 10);
		ret = reg(FD_RING, IORING_REGISTER_SYNC_CANCEL, &sc, 1);
		if (ret == -ETIME)
			st_sync_cancel_timeouts++;
		else if (ret < 0 && ret != -ENOENT && ret != -EALREADY && ret != -EINTR)
			fail("IORING_REGISTER_SYNC_CANCEL: %d", ret);
		phase("drain", 20);
		drain_cq();
		if (ret == -ENOENT)
			break;
	}
	return ret;
}

static void print_file(FILE *out, const char *path, const char *prefix)
{
	char line[512];
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		fprintf(out, "%s%s", prefix, line);
	fclose(f);
}

/*
 * What a stuck teardown waits for: the kernel stacks of our io-wq workers
 * and of any kworker in io_ring_exit_work().
 */
static void dump_stacks(void)
{
	char path[300], stack[4096];
	struct dirent *e;
	DIR *d = opendir("/proc/self/task");

	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		print_file(stderr, path, "  thread ");
		snprintf(path, sizeof(path), "/proc/self/task/%s/stack", e->d_name);
		print_file(stderr, path, "    ");
	}
	if (d)
		closedir(d);
	/* who may still hold a ring: our fds and mappings */
	d = opendir("/proc/self/fd");
	while (d && (e = readdir(d))) {
		char target[256];
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n > 0) {
			target[n] = 0;
			fprintf(stderr, "  fd %s -> %s\n", e->d_name, target);
		}
	}
	if (d)
		closedir(d);
	{
		char line[512];
		FILE *f = fopen("/proc/self/maps", "r");

		while (f && fgets(line, sizeof(line), f))
			if (strstr(line, "io_uring") || strstr(line, "anon_inode"))
				fprintf(stderr, "  map %s", line);
		if (f)
			fclose(f);
	}
	/* every kernel thread and task in io_uring code, twice */
	for (int round = 0; round < 2; round++) {
		glob_t g;

		if (glob("/proc/[0-9]*/task/[0-9]*/stack", 0, NULL, &g))
			continue;
		for (size_t i = 0; i < g.gl_pathc; i++) {
			FILE *f = fopen(g.gl_pathv[i], "r");
			size_t n;

			if (!f)
				continue;
			n = fread(stack, 1, sizeof(stack) - 1, f);
			fclose(f);
			stack[n] = 0;
			if (!strstr(stack, "io_ring") && !strstr(stack, "io_uring") &&
			    !strstr(stack, "io_wq") && !strstr(stack, "bpf"))
				continue;
			snprintf(path, sizeof(path), "%.*s/comm",
				 (int)(strlen(g.gl_pathv[i]) - 6), g.gl_pathv[i]);
			fprintf(stderr, "  task %s:\n", g.gl_pathv[i]);
			print_file(stderr, path, "    comm ");
			fprintf(stderr, "%s", stack);
		}
		globfree(&g);
		usleep(500 * 1000);
	}
	d = NULL;
	if (d)
		closedir(d);
	fflush(stderr);
}

/* how long a closed ring's teardown may take ($IOURING_BPF_FUZZ_REBIND_SECONDS) */
static double rebind_secs = 20;

/* The map was left bound to a closed ring: a new ring gets it once teardown ran. */
static void rebind(struct bpf_link *stale)
{
	struct bpf_link *link = NULL;
	double t0 = fuzz_now();
	int ret;

	phase("rebind after close", 30);
	ret = iouring_bpf_ring_init(&ring, SQ_ENTRIES, 0, IOURING_BPF_RING_FLAGS);
	if (!ret) {
		ret = place(ring.fd, FD_RING);
		ring.fd = FD_RING;
	}
	if (ret) {
		fail("rebind: new ring: %d", ret);
		bpf_link__destroy(stale);
		return;
	}
	while (fuzz_now() - t0 < rebind_secs) {
		link = bpf_map__attach_struct_ops(skel->maps.sqf_ops);
		if (link || errno != EBUSY)
			break;
		st_rebind_waits++;
		usleep(1000);
	}
	if (!link) {
		fail("the map stayed bound to the closed ring for %.1f s: %s", fuzz_now() - t0,
		     strerror(errno));
		dump_stacks();
		bpf_link__destroy(stale);
		iouring_bpf_ring_exit(&ring);
		return;
	}
	/* the old link goes; the new ring keeps its program */
	bpf_link__destroy(stale);
	/* the case's plan is done: one step that stops */
	__u32 calls = skel->bss->sqf.step_calls;

	skel->bss->sqf.started = 1;
	skel->bss->sqf.done = 1;
	arm(ENTER_SIGNAL_MS);
	ret = enter(FD_RING, 0, 0, IORING_ENTER_GETEVENTS);
	disarm();
	if (ret != 0 || skel->bss->sqf.step_calls != calls + 1)
		fail("rebind: the new ring's program after the stale link went: enter %d, %u steps",
		     ret, skel->bss->sqf.step_calls - calls);
	phase("rebind detach", 10);
	bpf_link__destroy(link);
	iouring_bpf_ring_exit(&ring);
}

static void run_case(uint64_t seed)
{
	struct sqf_state *s = &skel->bss->sqf;
	struct bpf_link *link;
	int ret, k;

	case_failed = false;
	atomic_store(&crash_seed, seed);
	fuzz_watchdog_case(seed);
	make_plan(seed);
	/* what earlier cases wrote must not change this one */
	memcpy(data, pattern, DATA_SIZE);
	memset(param_mem, 0, 4 * PAGE);

	phase("case setup: files", 30);
	ret = make_victims();
	phase("case setup: ring", 30);
	if (!ret)
		ret = make_ring();
	if (ret) {
		fail("case setup: %s", strerror(-ret));
		iouring_bpf_ring_exit(&ring);
		return;
	}

	/*
	 * A request on the ring's own fd holds the ring's file: a closed ring
	 * then lives until the process exits, by io_uring's design (its
	 * completion is task work that only entering the ring, or exit, runs).
	 * The rebind check waits for the teardown, so those cases get the
	 * other ring's fd in that slot of the pools.
	 */
	skel->data_sqf->sqf_pool[FZ_FD][0] = plan.end == END_CLOSE_REBIND ? FD_RING2 : FD_RING;
	skel->data_sqf->sqf_pool[FZ_FDNUM][0] = skel->data_sqf->sqf_pool[FZ_FD][0];

	memset(skel->bss, 0, sizeof(*skel->bss));
	s->seed = seed;
	phase("attach", 10);
	/*
	 * The link's fd must not be one of the numbers the pools name (the
	 * fuzz's first opens), or an SQE could put the link in the ring's
	 * file table and keep it attached past its destroy: hold those
	 * numbers while attaching.
	 */
	for (int i = 0; i < SCRATCH_NAMED; i++)
		dup2(FD_NULL, scratch_lo + i);
	link = bpf_map__attach_struct_ops(skel->maps.sqf_ops);
	close_from(scratch_lo, scratch_lo + SCRATCH_NAMED - 1);
	if (!link) {
		fail("attach: %s", strerror(errno));
		iouring_bpf_ring_exit(&ring);
		return;
	}

	/* the program's plan, however many enters it takes */
	for (k = 0; k < 64; k++) {
		__u32 calls = s->step_calls;

		phase("io_uring_enter with the program", 20);
		arm(ENTER_SIGNAL_MS);
		ret = enter(FD_RING, 0, 0, IORING_ENTER_GETEVENTS);
		disarm();
		check_enter(ret, calls);
		if (case_failed || (s->done && s->last_action == SQF_ACT_STOP && ret == 0))
			break;
	}
	if (!case_failed && k == 64)
		fail("the program's plan did not finish in 64 enters");
	run.units += s->written;
	st_submitted += s->submitted;
	for (__u32 i = 0; i < s->cqes && i < SQF_CQE_LOG; i++)
		check_cqe(skel->bss->sqf_cqe_log[i].user_data, skel->bss->sqf_cqe_log[i].res,
			  skel->bss->sqf_cqe_log[i].flags);

	switch (plan.end) {
	case END_DETACH_FIRST:
		phase("detach", 10);
		ret = bpf_link__destroy(link);
		if (ret)
			fail("detach: %d", ret);
		phase("drain", 20);
		drain_cq();
		ret = cancel_all();
		phase("NOP after detach", 20);
		nop_round_trip(ret == -ENOENT);
		if (plan.region.on)
			region_case();
		phase("ring close", 10);
		iouring_bpf_ring_exit(&ring);
		break;
	case END_CLOSE_FIRST:
		phase("ring close while attached", 10);
		iouring_bpf_ring_exit(&ring);
		phase("detach after close", 10);
		ret = bpf_link__destroy(link);
		if (ret)
			fail("detach after ring close: %d", ret);
		break;
	case END_CLOSE_REBIND:
		phase("ring close while attached", 10);
		iouring_bpf_ring_exit(&ring);
		rebind(link);
		break;
	}

	phase("case cleanup", 30);
	close(FD_RING2);
	/* what the fuzz opened (OPENAT, SOCKET, ACCEPT, FIXED_FD_INSTALL, SCM_RIGHTS) */
	close_from(scratch_lo, FD_RING - 1);
	close_from(FD_END, ~0U);
	phase("between cases", 0);
	kmsg_watch_case(seed, fail);
	if (run.replay && !case_failed)
		describe_case(stdout);
	else if (run.verbose && !case_failed)
		printf("case %#" PRIx64 ": %u SQEs in %u batches, %u CQEs, %s\n", seed, s->written,
		       s->batches, s->cqes, end_names[plan.end]);
}

/*
 * $IOURING_BPF_FUZZ_SQE_NOPS, e.g. "3,10-19": those SQEs of every case
 * become NOPs with the same flags and user_data, the rest stays as the
 * seed made it. To narrow a failing replay down to the SQEs that matter.
 */
static int set_nop_mask(const char *list)
{
	__u64 *mask = skel->data_sqf->sqf_nop_mask;
	char *end;

	while (list && *list) {
		unsigned long lo = strtoul(list, &end, 0), hi = lo;

		if (end == list)
			return -EINVAL;
		if (*end == '-')
			hi = strtoul(end + 1, &end, 0);
		if (hi >= SQF_SQE_LOG || lo > hi)
			return -EINVAL;
		for (unsigned long i = lo; i <= hi; i++)
			mask[i / 64] |= 1ULL << (i % 64);
		list = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -EINVAL;
	}
	return 0;
}

/* The kernel must have io_uring_bpf_ops; anything else is a failure. */
static bool kernel_has_loop(void)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	bool has;

	if (!vmlinux)
		return true;	/* let the load say what is wrong */
	has = btf__find_by_name_kind(vmlinux, "io_uring_bpf_ops", BTF_KIND_STRUCT) >= 0;
	btf__free(vmlinux);
	return has;
}

static void cleanup_dir(void)
{
	if (!tmpdir[0])
		return;
	if (chdir("/"))
		return;
	if (mounted)
		umount2(tmpdir, MNT_DETACH);
	rmdir(tmpdir);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_alarm };	/* no SA_RESTART */
	struct iouring_bpf_ring probe = { .fd = -1 };
	uint64_t seed;
	int ret, status;

	ret = fuzz_init(&run, "sqe", "sqes", argc, argv);
	if (ret)
		return ret > 0 ? 0 : 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* a failing case prints hundreds of lines: one write each is slow on
	 * the VM's shared log directory; fail() flushes */
	setvbuf(stderr, NULL, _IOFBF, 1 << 16);
	if (!kernel_has_loop()) {
		printf("SKIP: this kernel has no io_uring_bpf_ops\n");
		return KSFT_SKIP;
	}

	/* a private tmpfs: the fuzz's files stay in it, and it is small */
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/fuzz-sqe-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	if (mount("tmpfs", tmpdir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=8m,mode=0700")) {
		fprintf(stderr, "mount tmpfs on %s: %s (the fuzz needs its own small tmpfs)\n",
			tmpdir, strerror(errno));
		rmdir(tmpdir);
		return 1;
	}
	mounted = true;
	if (chdir(tmpdir)) {
		perror("chdir");
		cleanup_dir();
		return 1;
	}

	sigaction(SIGALRM, &sa, NULL);
	{
		static char altstack[65536];
		stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
		struct sigaction crash = { .sa_handler = on_crash, .sa_flags = SA_ONSTACK };

		sigaltstack(&ss, NULL);
		sigaction(SIGSEGV, &crash, NULL);
		sigaction(SIGBUS, &crash, NULL);
	}
	signal(SIGPIPE, SIG_IGN);
	/* the watchdog never takes the interrupting SIGALRM */
	fuzz_watchdog_start(&run, describe_case, SIGALRM);

	status = 1;
	phase("setup", 120);
	if (!CHECK_OK(setup_memory(), "memory layout"))
		goto out;
	/* before the fuzz's fd range starts: the fuzz must never reach it */
	kmsg_watch_start();
	skel = sqe_fuzz__open();
	if (!CHECK(skel, "sqe_fuzz__open: %s", strerror(errno)))
		goto out;
	/* the geometry every case's ring will have */
	if (!CHECK_OK(iouring_bpf_ring_init(&probe, SQ_ENTRIES, 0, IOURING_BPF_RING_FLAGS),
		      "ring setup"))
		goto out;
	skel->rodata->iou_geom = probe.geom;
	personality = reg(probe.fd, IORING_REGISTER_PERSONALITY, NULL, 0);
	iouring_bpf_ring_exit(&probe);
	skel->struct_ops.sqf_ops->ring_fd = FD_RING;
	if (!CHECK_OK(sqe_fuzz__load(skel), "sqe_fuzz__load"))
		goto out;
	/*
	 * Every fd of ours is below this one; what the fuzz opens lands from
	 * here on, so the pools name these numbers and each case closes them.
	 * The pools are a writable map: filled now that this is known.
	 */
	scratch_lo = fcntl(0, F_DUPFD, 0);
	close(scratch_lo);
	if (!CHECK(scratch_lo + 32 < FD_RING, "fd %d already in use", scratch_lo))
		goto out;
	fill_args_and_pools();
	fill_specs();
	if (!CHECK_OK(set_nop_mask(getenv("IOURING_BPF_FUZZ_SQE_NOPS")), "IOURING_BPF_FUZZ_SQE_NOPS"))
		goto out;
	if (getenv("IOURING_BPF_FUZZ_REBIND_SECONDS"))
		rebind_secs = strtod(getenv("IOURING_BPF_FUZZ_REBIND_SECONDS"), NULL);
	phase(NULL, 0);

	while (fuzz_next_case(&run, &seed))
		run_case(seed);

	double secs = fuzz_elapsed(&run);

	printf("fuzz sqe: %.0f sqes/s, %.1f cases/s (%" PRIu64 " submitted, %" PRIu64 " CQEs checked);"
	       " enters %" PRIu64 " (EINTR %" PRIu64 ", EINVAL %" PRIu64 ", EBADR %" PRIu64 ");"
	       " region programs %" PRIu64 " (refused by the verifier %" PRIu64 ", mapped %" PRIu64 ");"
	       " rebind waits %" PRIu64 "; sync cancel timeouts %" PRIu64 ", NOPs held by a drain %" PRIu64 "\n",
	       run.units / (secs > 0 ? secs : 1), run.cases / (secs > 0 ? secs : 1), st_submitted,
	       st_cqes, st_enters, st_eintr, st_einval, st_ebadr, st_region_loads,
	       st_region_refused, st_region_got, st_rebind_waits, st_sync_cancel_timeouts,
	       st_nop_stuck);
	print_phase_times();
	status = fuzz_finish(&run);
out:
	fuzz_phase(NULL, 0);
	sqe_fuzz__destroy(skel);
	close_from(FD_RING, FD_END - 1);
	cleanup_dir();
	return status;
}
