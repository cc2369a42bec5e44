// SPDX-License-Identifier: GPL-2.0
/*
 * ublk/found-*: the kernel bugs fuzz/ublk-ctrl and fuzz/ublk-io found, each
 * as a fixed sequence of raw ublk commands that reproduced it before its
 * patch (kernel/patches, named in each case). Before the fix a case fails by
 * its own check or by the kernel report the runner finds in dmesg; a hang
 * is turned into a failure by the watchdog.
 *
 *   ublk_found CASE      CASE: params-shift | partial-fetch | result-bounds
 *                         | stop-then-start | stop-ends-start | del-during-start
 *                         | recovery-start-dies
 *                         | recovery-cycle | recovery-unfetched-queue
 */
#define _GNU_SOURCE
#include <stddef.h>

#include "ublk_fuzz.h"

#define DEV_SECTORS	8192u		/* 4 MiB */
#define MAX_SECTORS	128u		/* 64 KiB per request */

/* ctl for synchronous commands; ctl_async for those that wait meanwhile */
static struct ufz_ctrl ctl, ctl_async;

/*
 * The case requires @cond: else it fails here, saying where and why, and
 * the function returns 1 (selftest.h's CHECK() only evaluates to false).
 */
#define REQUIRE(cond, ...) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "FAIL %s:%d: ", __func__, __LINE__);	\
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
		return 1;						\
	}								\
} while (0)

static struct ublk_params default_params(void)
{
	struct ublk_params p = {
		.len = sizeof(p),
		.types = UBLK_PARAM_TYPE_BASIC,
		.basic = {
			.logical_bs_shift = 9, .physical_bs_shift = 12,
			.io_min_shift = 9, .io_opt_shift = 12,
			.max_sectors = MAX_SECTORS, .dev_sectors = DEV_SECTORS,
		},
	};

	return p;
}

static int cmd_simple(int id, __u32 op, double secs)
{
	return ufz_ctrl_cmd(&ctl, op, id, getpid(), NULL, 0, secs);
}

static int set_params(int id, struct ublk_params *p)
{
	return ufz_ctrl_cmd(&ctl, UBLK_U_CMD_SET_PARAMS, id, 0, p, sizeof(*p), 10);
}

/* a device with @nrq queues of @depth tags and default parameters; its id */
static int add_dev_queues(unsigned int nrq, unsigned int depth, __u64 flags)
{
	struct ublksrv_ctrl_dev_info info = {
		.nr_hw_queues = nrq, .queue_depth = depth,
		.max_io_buf_bytes = MAX_SECTORS << 9,
		.dev_id = (__u32)-1, .flags = flags,
	};
	struct ublk_params p = default_params();
	int ret;

	ret = ufz_ctrl_cmd(&ctl, UBLK_U_CMD_ADD_DEV, -1, 0, &info, sizeof(info), 10);
	if (ret) {
		fprintf(stderr, "ADD_DEV: %s\n", ufz_err(ret));
		return ret;
	}
	ret = set_params(info.dev_id, &p);
	if (ret) {
		fprintf(stderr, "SET_PARAMS: %s\n", ufz_err(ret));
		cmd_simple(info.dev_id, UBLK_U_CMD_DEL_DEV, 10);
		return ret;
	}
	return info.dev_id;
}

static int add_dev(unsigned int depth, __u64 flags)
{
	return add_dev_queues(1, depth, flags);
}

/* DEL_DEV within 20 s, and every trace of the device gone */
static int del_dev(int id)
{
	char left[64];
	int ret = cmd_simple(id, UBLK_U_CMD_DEL_DEV, 20);

	REQUIRE(ret == 0, "DEL_DEV of %d: %s", id, ufz_err(ret));
	REQUIRE(!ufz_dev_left(id, 10, left, sizeof(left)),
		"device %d: %s still there after DEL_DEV", id, left);
	return 0;
}

/* an SQE, submitting what is queued if the SQ is full */
static struct io_uring_sqe *next_sqe(struct io_uring *ring)
{
	struct io_uring_sqe *sqe = ufz_get_sqe(ring);

	if (!sqe)
		abort();	/* a ring of 4 or more entries, one SQE at a time */
	return sqe;
}

/* ------------------------------------------------------------------ */
/* a server in a thread: copy mode, one buffer per tag, and a policy for
 * the result it commits                                                */

struct server {
	int id;
	bool own_fd;
	unsigned int q, depth;
	int fd;
	struct io_uring ring;
	const struct ublksrv_io_desc *iods;
	size_t iods_size;
	char *bufs[UBLK_MAX_QUEUE_DEPTH];
	/* the result to commit; default: every byte */
	int (*result)(struct server *s, const struct ublksrv_io_desc *iod);
	/* exit at the first request, committing nothing */
	bool die_at_first;
	/* set by the test: leave at the next chance, committing nothing */
	atomic_bool quit;
	/* set by the test: leave when the next request comes, holding it */
	atomic_bool quit_on_request;
	atomic_bool left;
	/* what it saw */
	unsigned int requests, aborted;
	__u64 seen_start[64];
	__u32 seen_sectors[64];
	unsigned int nseen;
	pthread_t thread;
	int error;
};

/* each sector of the device reads as its own number, repeated */
static void fill_sectors(char *buf, __u64 start, __u32 nr)
{
	for (__u32 i = 0; i < nr; i++)
		for (unsigned int j = 0; j < 512 / 8; j++)
			memcpy(buf + i * 512 + j * 8, &(__u64){ start + i }, 8);
}

static bool check_sectors(const char *buf, __u64 start, __u32 nr)
{
	for (__u32 i = 0; i < nr; i++)
		for (unsigned int j = 0; j < 512 / 8; j++) {
			__u64 v;

			memcpy(&v, buf + i * 512 + j * 8, 8);
			if (v != start + i)
				return false;
		}
	return true;
}

static void *server_loop(void *arg)
{
	struct server *s = arg;
	struct io_uring_cqe *cqe;

	for (unsigned int t = 0; t < s->depth; t++)
		ufz_prep_io_cmd(next_sqe(&s->ring), s->fd, UBLK_U_IO_FETCH_REQ,
				s->q, t, 0, (__u64)(uintptr_t)s->bufs[t], t);
	if (io_uring_submit(&s->ring) != (int)s->depth) {
		s->error = -EIO;
		return NULL;
	}
	while (s->aborted < s->depth) {
		unsigned int tag;
		const struct ublksrv_io_desc *iod;
		int res;

		struct __kernel_timespec ts = { .tv_nsec = 50 * 1000 * 1000 };

		if (atomic_load(&s->quit))
			return NULL;
		if (io_uring_wait_cqe_timeout(&s->ring, &cqe, &ts))
			continue;
		tag = (unsigned int)cqe->user_data;
		res = cqe->res;
		io_uring_cqe_seen(&s->ring, cqe);
		if (res == UBLK_IO_RES_ABORT) {
			s->aborted++;
			continue;
		}
		if (res != UBLK_IO_RES_OK || tag >= s->depth) {
			fprintf(stderr, "server: tag %u: %s\n", tag, ufz_err(res));
			s->error = res < 0 ? res : -EIO;
			s->aborted++;
			continue;
		}
		iod = &s->iods[tag];
		if (atomic_load(&s->quit_on_request))
			return NULL;
		if (s->die_at_first) {
			s->requests++;
			return NULL;
		}
		if (s->nseen < 64) {
			s->seen_start[s->nseen] = iod->start_sector;
			s->seen_sectors[s->nseen++] = iod->nr_sectors;
		}
		s->requests++;
		if ((iod->op_flags & 0xff) == UBLK_IO_OP_READ)
			fill_sectors(s->bufs[tag], iod->start_sector, iod->nr_sectors);
		res = s->result ? s->result(s, iod) : (int)(iod->nr_sectors << 9);
		ufz_prep_io_cmd(next_sqe(&s->ring), s->fd,
				UBLK_U_IO_COMMIT_AND_FETCH_REQ, s->q, tag, res,
				(__u64)(uintptr_t)s->bufs[tag], tag);
		io_uring_submit(&s->ring);
	}
	return NULL;
}

/* a server of queue @q; on @fd (the char device opens once) or, -1, its own */
static void *server_fn(void *arg)
{
	struct server *s = arg;

	server_loop(s);
	atomic_store(&s->left, true);
	return NULL;
}

static int server_open_queue(struct server *s, int id, unsigned int q, unsigned int depth,
			     int fd)
{
	memset(s, 0, sizeof(*s));
	s->id = id;
	s->q = q;
	s->depth = depth;
	s->own_fd = fd < 0;
	s->fd = fd < 0 ? ufz_open_char(id) : fd;
	REQUIRE(s->fd >= 0, "open /dev/ublkc%d: %s", id, strerror(errno));
	REQUIRE(!io_uring_queue_init(2 * depth, &s->ring, 0), "server ring");
	s->iods = ufz_map_iods(s->fd, q, depth, &s->iods_size);
	REQUIRE(s->iods, "mmap of the descriptors: %s", strerror(errno));
	for (unsigned int t = 0; t < depth; t++) {
		void *p;

		REQUIRE(!posix_memalign(&p, 4096, MAX_SECTORS << 9), "buffer");
		s->bufs[t] = p;
	}
	return 0;
}

static int server_open(struct server *s, int id, unsigned int depth)
{
	return server_open_queue(s, id, 0, depth, -1);
}

static void server_close(struct server *s)
{
	io_uring_queue_exit(&s->ring);
	munmap((void *)s->iods, s->iods_size);
	if (s->own_fd)
		close(s->fd);
	for (unsigned int t = 0; t < s->depth; t++)
		free(s->bufs[t]);
}

/* /dev/ublkb@id within 5 s of START_DEV; its path in @bdev */
static int wait_bdev(int id, char *bdev, size_t len)
{
	snprintf(bdev, len, "/dev/ublkb%d", id);
	for (int i = 0; i < 500 && access(bdev, F_OK); i++)
		usleep(10 * 1000);
	REQUIRE(!access(bdev, F_OK), "%s did not appear", bdev);
	return 0;
}

/* ADD, server up, START; the block device's path in @bdev */
static int start_served(struct server *s, unsigned int depth,
			int (*result)(struct server *, const struct ublksrv_io_desc *),
			char *bdev, size_t len)
{
	int id = add_dev(depth, 0), ret;

	REQUIRE(id >= 0, "add_dev");
	if (server_open(s, id, depth))
		return 1;
	s->result = result;
	REQUIRE(!pthread_create(&s->thread, NULL, server_fn, s), "server thread");
	ret = cmd_simple(id, UBLK_U_CMD_START_DEV, 30);
	REQUIRE(ret == 0, "START_DEV: %s", ufz_err(ret));
	return wait_bdev(id, bdev, len);
}

static int stop_served(struct server *s)
{
	int ret = cmd_simple(s->id, UBLK_U_CMD_STOP_DEV, 20);

	REQUIRE(ret == 0, "STOP_DEV: %s", ufz_err(ret));
	pthread_join(s->thread, NULL);
	server_close(s);
	REQUIRE(!s->error, "server: %s", ufz_err(s->error));
	return del_dev(s->id);
}

/* ------------------------------------------------------------------ */
/* params-shift: SET_PARAMS took physical_bs_shift, io_min_shift and
 * io_opt_shift of any size, and START_DEV shifted 1 by them (UBSAN
 * shift-out-of-bounds at ublk_ctrl_start_dev; fuzz/ublk-ctrl used
 * io_opt_shift 74). Patch "ublk: reject block size shifts that overflow
 * the queue limits" refuses anything above 28 (256 MiB), as mainline.  */

static int case_params_shift(void)
{
	static const struct { const char *field; size_t off; } f[] = {
		{ "physical_bs_shift", offsetof(struct ublk_param_basic, physical_bs_shift) },
		{ "io_min_shift", offsetof(struct ublk_param_basic, io_min_shift) },
		{ "io_opt_shift", offsetof(struct ublk_param_basic, io_opt_shift) },
	};
	static const __u8 bad[] = { 29, 32, 74, 255 };
	int id = add_dev(4, 0);

	REQUIRE(id >= 0, "add_dev");
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		struct ublk_params p = default_params();
		int ret;

		for (size_t b = 0; b < sizeof(bad); b++) {
			p = default_params();
			((__u8 *)&p.basic)[f[i].off] = bad[b];
			ret = set_params(id, &p);
			REQUIRE(ret == -EINVAL, "%s = %u: SET_PARAMS gave %s, want -EINVAL",
			        f[i].field, bad[b], ufz_err(ret));
		}
		p = default_params();
		((__u8 *)&p.basic)[f[i].off] = 28;
		ret = set_params(id, &p);
		REQUIRE(ret == 0, "%s = 28 (256 MiB): SET_PARAMS gave %s, want 0",
		        f[i].field, ufz_err(ret));
	}
	printf("params-shift: 29, 32, 74 and 255 refused for each shift, 28 taken\n");
	return del_dev(id);
}

/* ------------------------------------------------------------------ */
/* partial-fetch: a server fetched tag 0 of 2 and closed its ring; the
 * ring's cancel of that FETCH warned in ublk_uring_cmd_cancel_fn (the
 * queue had no server task before all tags were fetched), and a second
 * task could fetch the rest of the queue. Patch "ublk: make the first
 * FETCH_REQ of a queue choose its server task".                        */

struct other_fetch {
	int fd;
	int res;
};

static void *other_task_fetch(void *arg)
{
	struct other_fetch *o = arg;
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { .tv_sec = 5 };
	static char buf[4096] __attribute__((aligned(4096)));

	o->res = 1;
	if (io_uring_queue_init(4, &ring, 0))
		return NULL;
	ufz_prep_io_cmd(next_sqe(&ring), o->fd, UBLK_U_IO_FETCH_REQ, 0, 1, 0,
			(__u64)(uintptr_t)buf, 1);
	io_uring_submit(&ring);
	if (!io_uring_wait_cqe_timeout(&ring, &cqe, &ts)) {
		o->res = cqe->res;
		io_uring_cqe_seen(&ring, cqe);
	}
	io_uring_queue_exit(&ring);
	return NULL;
}

static int case_partial_fetch(void)
{
	struct server s;
	struct other_fetch o;
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { .tv_nsec = 200 * 1000 * 1000 };
	pthread_t t;
	int id = add_dev(2, 0);

	REQUIRE(id >= 0, "add_dev");
	if (server_open(&s, id, 2))
		return 1;
	ufz_prep_io_cmd(next_sqe(&s.ring), s.fd, UBLK_U_IO_FETCH_REQ, 0, 0, 0,
			(__u64)(uintptr_t)s.bufs[0], 0);
	REQUIRE(io_uring_submit(&s.ring) == 1, "FETCH tag 0");
	REQUIRE(io_uring_wait_cqe_timeout(&s.ring, &cqe, &ts) == -ETIME,
	        "FETCH tag 0 completed at once (%d)", cqe->res);

	/* another task may not serve the rest of this queue */
	o.fd = s.fd;
	REQUIRE(!pthread_create(&t, NULL, other_task_fetch, &o), "thread");
	pthread_join(t, NULL);
	REQUIRE(o.res == -EINVAL, "FETCH tag 1 from a second task gave %s, want -EINVAL",
	        o.res == 1 ? "no completion in 5 s" : ufz_err(o.res));

	/* the server goes away with tag 1 never fetched */
	ufz_watchdog_arm(60, "closing a partly fetched queue's ring");
	server_close(&s);
	ufz_watchdog_arm(0, NULL);
	printf("partial-fetch: second task refused, ring with 1 of 2 tags fetched closed\n");
	return del_dev(id);
}

/* ------------------------------------------------------------------ */
/* result-bounds: a server committing more bytes than a READ holds made
 * ublk_unmap_io() warn (ublk_drv.c:1066); a result that was not whole
 * sectors sent the remainder back as a request of zero sectors, forever
 * for a WRITE. Patch "ublk: keep a server's READ or WRITE result within
 * whole blocks of the request".                                        */

#define BIG_AT		1024u	/* READ committed with twice its bytes */
#define ODD_READ_AT	2048u	/* first commit 4096 + 100 bytes */
#define ODD_WRITE_AT	3072u
#define TINY_AT		4096u	/* READ committed with 100 bytes */

static int odd_results(struct server *s, const struct ublksrv_io_desc *iod)
{
	int bytes = (int)(iod->nr_sectors << 9);

	(void)s;
	switch (iod->start_sector) {
	case BIG_AT:
		return 2 * bytes;
	case ODD_READ_AT:
	case ODD_WRITE_AT:
		return bytes > 4096 ? 4096 + 100 : bytes;
	case TINY_AT:
		return 100;
	}
	return bytes;
}

static bool seen(const struct server *s, __u64 start, __u32 nr)
{
	for (unsigned int i = 0; i < s->nseen; i++)
		if (s->seen_start[i] == start && s->seen_sectors[i] == nr)
			return true;
	return false;
}

static int case_result_bounds(void)
{
	struct server s;
	char bdev[64];
	void *buf;
	ssize_t n;
	int fd;

	if (start_served(&s, 4, odd_results, bdev, sizeof(bdev)))
		return 1;
	fd = open(bdev, O_RDWR | O_DIRECT);
	REQUIRE(fd >= 0, "open %s: %s", bdev, strerror(errno));
	REQUIRE(!posix_memalign(&buf, 4096, 8192), "buffer");
	ufz_watchdog_arm(60, "I/O on the device whose server commits odd results");

	n = pread(fd, buf, 8192, (off_t)BIG_AT << 9);
	REQUIRE(n == 8192, "READ with a result of twice its size: %zd (%s)", n, strerror(errno));
	REQUIRE(check_sectors(buf, BIG_AT, 16), "READ with a result of twice its size: wrong data");

	n = pread(fd, buf, 8192, (off_t)ODD_READ_AT << 9);
	REQUIRE(n == 8192, "READ with a result of 4196 of 8192 bytes: %zd (%s)", n, strerror(errno));
	REQUIRE(check_sectors(buf, ODD_READ_AT, 16), "READ of 4196 + rest: wrong data");
	REQUIRE(seen(&s, ODD_READ_AT + 8, 8),
	        "the rest of the READ was not sent back as sectors %u+8", ODD_READ_AT + 8);

	memset(buf, 0x5a, 8192);
	n = pwrite(fd, buf, 8192, (off_t)ODD_WRITE_AT << 9);
	REQUIRE(n == 8192, "WRITE with a result of 4196 of 8192 bytes: %zd (%s)", n,
		strerror(errno));
	REQUIRE(seen(&s, ODD_WRITE_AT + 8, 8),
	        "the rest of the WRITE was not sent back as sectors %u+8", ODD_WRITE_AT + 8);

	n = pread(fd, buf, 4096, (off_t)TINY_AT << 9);
	REQUIRE(n < 0 && errno == EIO, "READ with a result of 100 bytes: %zd (%s), want EIO",
	        n, n < 0 ? strerror(errno) : "no error");
	ufz_watchdog_arm(0, NULL);

	close(fd);
	free(buf);
	printf("result-bounds: %u requests served; oversized result clamped, 4196 bytes "
	       "completed 4096 and the rest came back whole, 100 bytes failed with EIO\n",
	       s.requests);
	return stop_served(&s);
}

/* ------------------------------------------------------------------ */
/* a control command left running on ctl_async, and its completion     */

static int async_submit(int id, __u32 op)
{
	return ufz_ctrl_submit(&ctl_async, op, id, getpid(), op);
}

/* the result of the command async_submit() left running, or -ETIME */
static int async_result(double secs)
{
	struct __kernel_timespec ts = { .tv_nsec = 50 * 1000 * 1000 };
	struct io_uring_cqe *cqe;
	double end = fuzz_now() + secs;
	int res;

	while (io_uring_wait_cqe_timeout(&ctl_async.ring, &cqe, &ts)) {
		if (fuzz_now() > end)
			return -ETIME;
	}
	res = cqe->res;
	io_uring_cqe_seen(&ctl_async.ring, cqe);
	return res;
}

/* every FETCH_REQ of @s ended with UBLK_IO_RES_ABORT within @secs */
static int fetches_aborted(struct server *s, double secs)
{
	struct __kernel_timespec ts = { .tv_nsec = 100 * 1000 * 1000 };
	struct io_uring_cqe *cqe;
	double end = fuzz_now() + secs;
	unsigned int n = 0;

	while (n < s->depth && fuzz_now() < end) {
		if (io_uring_wait_cqe_timeout(&s->ring, &cqe, &ts))
			continue;
		REQUIRE(cqe->res == UBLK_IO_RES_ABORT,
			"FETCH of tag %llu ended with %s, want -ENODEV",
			(unsigned long long)cqe->user_data, ufz_err(cqe->res));
		io_uring_cqe_seen(&s->ring, cqe);
		n++;
	}
	REQUIRE(n == s->depth, "%u of %u FETCHes ended in %.0f s", n, s->depth, secs);
	return 0;
}

static int fetch_all(struct server *s)
{
	for (unsigned int t = 0; t < s->depth; t++)
		ufz_prep_io_cmd(next_sqe(&s->ring), s->fd, UBLK_U_IO_FETCH_REQ, 0, t, 0,
				(__u64)(uintptr_t)s->bufs[t], t);
	REQUIRE(io_uring_submit(&s->ring) == (int)s->depth, "FETCH of %u tags", s->depth);
	return 0;
}

/* ------------------------------------------------------------------ */
/* stop-then-start: the FETCHes of a never-started device were ended (by
 * STOP_DEV, or by the exit of the server's ring) and a later START_DEV
 * still added the disk, whose partition scan went to the freed commands
 * (KASAN slab-use-after-free in __io_uring_cmd_do_in_task from
 * ublk_queue_rq). Patch "ublk: do not start a device whose server's
 * commands were ended": START_DEV fails with -ENODEV.                  */

static int start_after_end(bool by_stop)
{
	struct server s;
	char bdev[64];
	int id = add_dev(4, 0), ret;

	REQUIRE(id >= 0, "add_dev");
	if (server_open(&s, id, 4) || fetch_all(&s))
		return 1;
	if (by_stop) {
		ret = cmd_simple(id, UBLK_U_CMD_STOP_DEV, 10);
		REQUIRE(ret == 0, "STOP_DEV of a device never started: %s", ufz_err(ret));
		if (fetches_aborted(&s, 10))
			return 1;
	}
	server_close(&s);	/* by_stop false: the ring's exit ends them */

	/*
	 * A ring's exit runs in a kworker after the close: give it time to
	 * cancel. If START_DEV still comes first, the commands are alive and
	 * it may start (the scan then fails); the use-after-free this case
	 * is about shows up in the kernel log, which the runner checks.
	 */
	if (!by_stop)
		usleep(500 * 1000);
	ufz_watchdog_arm(60, "START_DEV after the server's commands ended");
	ret = cmd_simple(id, UBLK_U_CMD_START_DEV, 30);
	ufz_watchdog_arm(0, NULL);
	snprintf(bdev, sizeof(bdev), "/dev/ublkb%d", id);
	if (by_stop || ret != 0) {
		REQUIRE(ret == -ENODEV, "START_DEV after %s: %s, want -ENODEV",
		        by_stop ? "STOP_DEV" : "the server's ring closed", ufz_err(ret));
		REQUIRE(access(bdev, F_OK), "%s exists after a refused START_DEV", bdev);
	} else {
		printf("stop-then-start: START_DEV came before the ring's exit work\n");
	}
	return del_dev(id);
}

static int case_stop_then_start(void)
{
	if (start_after_end(true) || start_after_end(false))
		return 1;
	printf("stop-then-start: START_DEV refused with -ENODEV after STOP_DEV and after "
	       "the server's ring closed\n");
	return 0;
}

/* ------------------------------------------------------------------ */
/* stop-ends-start: a START_DEV waiting for a server that never fetched
 * was not ended by STOP_DEV or DEL_DEV; it kept its device reference
 * and DEL_DEV waited with it. Patch "ublk: let STOP_DEV end a START_DEV
 * that still waits for FETCH_REQs".                                   */

static int start_waits_then(__u32 op)
{
	const char *name = op == UBLK_U_CMD_STOP_DEV ? "STOP_DEV" : "DEL_DEV";
	int id = add_dev(2, 0), ret;

	REQUIRE(id >= 0, "add_dev");
	REQUIRE(!async_submit(id, UBLK_U_CMD_START_DEV), "START_DEV submit");
	ret = async_result(0.3);
	REQUIRE(ret == -ETIME, "START_DEV without a server completed: %s", ufz_err(ret));

	ufz_watchdog_arm(60, name);
	ret = cmd_simple(id, op, 20);
	REQUIRE(ret == 0, "%s while START_DEV waits: %s", name, ufz_err(ret));
	ret = async_result(10);
	ufz_watchdog_arm(0, NULL);
	REQUIRE(ret == -ENODEV, "START_DEV after %s: %s, want -ENODEV", name, ufz_err(ret));
	if (op == UBLK_U_CMD_STOP_DEV)
		return del_dev(id);
	REQUIRE(!ufz_wait_dev_gone(id, 10), "device %d left after DEL_DEV", id);
	return 0;
}

static int case_stop_ends_start(void)
{
	if (start_waits_then(UBLK_U_CMD_STOP_DEV) || start_waits_then(UBLK_U_CMD_DEL_DEV))
		return 1;
	printf("stop-ends-start: a START_DEV waiting for FETCHes ended with -ENODEV by "
	       "STOP_DEV and by DEL_DEV\n");
	return 0;
}

/* ------------------------------------------------------------------ */
/* del-during-start: a DEL_DEV that came after the last FETCH_REQ woke
 * START_DEV, but before START_DEV marked the device LIVE, aborted nothing
 * and then waited for ub->mutex behind a partition scan whose read the
 * server held: START_DEV, DEL_DEV and every later control command hung
 * (fuzz/ublk-ctrl; DEL_DEV aborts only a device it finds LIVE and not yet
 * added). Racy: many rounds, DEL_DEV each time a little later after the
 * FETCH. Patch "ublk: do not add the disk of a device DEL_DEV has begun
 * to remove".                                                          */

#define DEL_ROUNDS	30

static int del_during_start_round(unsigned int round, unsigned int delay_us, int *started)
{
	struct server s;
	int id = add_dev(1, 0), ret;

	REQUIRE(id >= 0, "add_dev");
	if (server_open(&s, id, 1))
		return 1;
	REQUIRE(!async_submit(id, UBLK_U_CMD_START_DEV), "START_DEV submit");
	ret = async_result(0.1);
	REQUIRE(ret == -ETIME, "START_DEV before any FETCH completed: %s", ufz_err(ret));

	/* the FETCH wakes START_DEV; the partition scan's read then stays
	 * with this "server", which never answers */
	if (fetch_all(&s))
		return 1;
	if (delay_us)
		usleep(delay_us);
	ufz_watchdog_arm(60, "DEL_DEV_ASYNC racing START_DEV");
	ret = cmd_simple(id, UBLK_U_CMD_DEL_DEV_ASYNC, 20);
	REQUIRE(ret == 0, "round %u (%u us after the FETCH): DEL_DEV_ASYNC: %s", round, delay_us,
	        ufz_err(ret));
	ret = async_result(20);
	ufz_watchdog_arm(0, NULL);
	REQUIRE(ret == 0 || ret == -ENODEV,
	        "round %u (%u us after the FETCH): START_DEV: %s, want 0 or -ENODEV", round,
	        delay_us, ufz_err(ret));
	*started += ret == 0;
	server_close(&s);
	REQUIRE(!ufz_wait_dev_gone(id, 10), "device %d left after DEL_DEV_ASYNC", id);
	return 0;
}

static int case_del_during_start(void)
{
	static const unsigned int delay_us[] = { 0, 200, 500, 1000, 2000, 5000 };
	int started = 0;

	for (unsigned int r = 0; r < DEL_ROUNDS; r++)
		if (del_during_start_round(r, delay_us[r % 6], &started))
			return 1;
	printf("del-during-start: %u rounds of DEL_DEV_ASYNC right after the FETCH: every "
	       "START_DEV ended (%d added the disk and saw the scan fail, %d refused with -ENODEV)\n",
	       DEL_ROUNDS, started, DEL_ROUNDS - started);
	return 0;
}

/* ------------------------------------------------------------------ */
/* recovery-start-dies: the server of a UBLK_F_USER_RECOVERY device died
 * during START_DEV's partition scan; the scan's read was kept for a next
 * server that could never come (START_DEV holds ub->mutex), and START_DEV,
 * the quiesce work and DEL_DEV hung in D state. Patch "ublk: fail the
 * partition scan's reads when a recovery device's server dies during
 * START_DEV".                                                          */

static int get_state(int id, __u16 *state)
{
	struct ublksrv_ctrl_dev_info info;
	int ret = ufz_ctrl_cmd(&ctl, UBLK_U_CMD_GET_DEV_INFO, id, 0, &info, sizeof(info), 10);

	if (!ret)
		*state = info.state;
	return ret;
}

static int case_recovery_start_dies(void)
{
	struct server s;
	__u16 state = 0;
	double end;
	int id = add_dev(2, UBLK_F_USER_RECOVERY), ret;

	REQUIRE(id >= 0, "add_dev");
	if (server_open(&s, id, 2))
		return 1;
	s.die_at_first = true;
	REQUIRE(!pthread_create(&s.thread, NULL, server_fn, &s), "server thread");
	REQUIRE(!async_submit(id, UBLK_U_CMD_START_DEV), "START_DEV submit");

	ufz_watchdog_arm(90, "START_DEV whose server died in the partition scan");
	pthread_join(s.thread, NULL);
	REQUIRE(s.requests == 1, "the server saw %u requests", s.requests);
	server_close(&s);
	ret = async_result(30);
	REQUIRE(ret == 0, "START_DEV: %s, want 0 (the scan fails, the device starts)",
	        ufz_err(ret));
	for (end = fuzz_now() + 10; fuzz_now() < end; usleep(50 * 1000))
		if (!get_state(id, &state) && state == UBLK_S_DEV_QUIESCED)
			break;
	REQUIRE(state == UBLK_S_DEV_QUIESCED, "device state %u, want QUIESCED (%u)",
	        state, UBLK_S_DEV_QUIESCED);
	ret = del_dev(id);
	ufz_watchdog_arm(0, NULL);
	if (!ret)
		printf("recovery-start-dies: START_DEV returned, device quiesced, deleted\n");
	return ret;
}

/* ------------------------------------------------------------------ */
/* recovery-cycle: the quiesce work cancels a dead server's commands
 * after dropping ub->mutex; START_USER_RECOVERY could reset the ios in
 * that window (NULL io_uring_cmd in io_uring_cmd_done(), an Oops), and
 * the work, queued once per queue, could run after the reset and end the
 * new server's FETCHes. Racy: many cycles on 2 queues, and after each
 * the new server must serve reads. Patch "ublk: keep the quiesce work's
 * cancel away from a recovered queue".                                 */

#define CYCLE_QUEUES	2
#define CYCLES		25

static int servers_up(struct server *s, int id)
{
	for (unsigned int q = 0; q < CYCLE_QUEUES; q++) {
		/* queue 0 opens the char device, the others share it */
		if (server_open_queue(&s[q], id, q, 8, q ? s[0].fd : -1))
			return 1;
		REQUIRE(!pthread_create(&s[q].thread, NULL, server_fn, &s[q]), "server thread");
	}
	return 0;
}

/* the servers leave without a word, one holding a request of the reader's
 * (on queue 0, or after 1 s anyway), and their rings close */
static int servers_die(struct server *s)
{
	for (unsigned int q = 0; q < CYCLE_QUEUES; q++)
		atomic_store(&s[q].quit_on_request, true);
	for (int i = 0; i < 100 && !atomic_load(&s[0].left); i++)
		usleep(10 * 1000);
	for (unsigned int q = 0; q < CYCLE_QUEUES; q++)
		atomic_store(&s[q].quit, true);
	for (unsigned int q = CYCLE_QUEUES; q-- > 0;) {
		pthread_join(s[q].thread, NULL);
		REQUIRE(!s[q].error, "server of queue %u: %s", q, ufz_err(s[q].error));
		server_close(&s[q]);
	}
	return 0;
}

static int read_check(int fd, unsigned int cycle)
{
	static char buf[8192] __attribute__((aligned(4096)));
	__u64 sector = (cycle * 64) % (DEV_SECTORS - 16);
	ssize_t n = pread(fd, buf, sizeof(buf), (off_t)sector << 9);

	REQUIRE(n == (ssize_t)sizeof(buf), "cycle %u: read: %zd (%s)", cycle, n, strerror(errno));
	REQUIRE(check_sectors(buf, sector, 16), "cycle %u: wrong data", cycle);
	return 0;
}

struct cycle_reader {
	int fd;
	atomic_bool stop;
	unsigned long reads, errors, wrong;
};

/* reads all the time, through every recovery: data or EIO, never wrong data */
static void *cycle_reader_fn(void *arg)
{
	static char buf[4096] __attribute__((aligned(4096)));
	struct cycle_reader *r = arg;

	for (unsigned int i = 0; !atomic_load(&r->stop); i++) {
		__u64 sector = (i * 24) % (DEV_SECTORS - 8);
		ssize_t n = pread(r->fd, buf, sizeof(buf), (off_t)sector << 9);

		if (n == (ssize_t)sizeof(buf)) {
			r->reads++;
			r->wrong += !check_sectors(buf, sector, 8);
		} else {
			r->errors++;
		}
	}
	return NULL;
}

/* START_USER_RECOVERY once the dead server's char device is released */
static int start_recovery(int id, const char *when)
{
	double end = fuzz_now() + 20;
	int ret;

	for (;; usleep(1000)) {
		ret = cmd_simple(id, UBLK_U_CMD_START_USER_RECOVERY, 10);
		if (ret != -EBUSY || fuzz_now() > end)
			break;
	}
	REQUIRE(ret == 0, "START_USER_RECOVERY %s: %s", when, ufz_err(ret));
	return 0;
}

/* a CYCLE_QUEUES-queue recovery device, its servers up, started: id, bdev */
static int recovery_dev_up(struct server *s, int *id, char *bdev, size_t len)
{
	int ret;

	*id = add_dev_queues(CYCLE_QUEUES, 8, UBLK_F_USER_RECOVERY);
	REQUIRE(*id >= 0, "add_dev");
	if (servers_up(s, *id))
		return 1;
	ret = cmd_simple(*id, UBLK_U_CMD_START_DEV, 30);
	REQUIRE(ret == 0, "START_DEV: %s", ufz_err(ret));
	return wait_bdev(*id, bdev, len);
}

/* STOP_DEV, which ends the servers, then DEL_DEV */
static int recovery_dev_down(struct server *s, int id)
{
	int ret = cmd_simple(id, UBLK_U_CMD_STOP_DEV, 20);

	REQUIRE(ret == 0, "STOP_DEV: %s", ufz_err(ret));
	for (unsigned int q = CYCLE_QUEUES; q-- > 0;) {
		pthread_join(s[q].thread, NULL);
		server_close(&s[q]);
	}
	return del_dev(id);
}

static int case_recovery_cycle(void)
{
	struct cycle_reader rd = { 0 };
	pthread_t rt;
	struct server s[CYCLE_QUEUES];
	char bdev[64];
	__u16 state = 0;
	int id, fd, ret;

	if (recovery_dev_up(s, &id, bdev, sizeof(bdev)))
		return 1;
	fd = open(bdev, O_RDONLY | O_DIRECT);
	REQUIRE(fd >= 0, "open %s: %s", bdev, strerror(errno));
	if (read_check(fd, 0))
		return 1;
	rd.fd = fd;
	REQUIRE(!pthread_create(&rt, NULL, cycle_reader_fn, &rd), "reader thread");

	for (unsigned int c = 1; c <= CYCLES; c++) {
		char when[32];

		ufz_watchdog_arm(60, "a recovery cycle");
		if (servers_die(s))
			return 1;
		/* START_USER_RECOVERY as soon as it is allowed: the race */
		snprintf(when, sizeof(when), "in cycle %u", c);
		if (start_recovery(id, when) || servers_up(s, id))
			return 1;
		ret = cmd_simple(id, UBLK_U_CMD_END_USER_RECOVERY, 30);
		REQUIRE(ret == 0, "cycle %u: END_USER_RECOVERY: %s", c, ufz_err(ret));
		REQUIRE(!get_state(id, &state) && state == UBLK_S_DEV_LIVE,
		        "cycle %u: state %u after END_USER_RECOVERY", c, state);
		/* the new servers' FETCHes were not ended by a late cancel */
		if (read_check(fd, c))
			return 1;
	}
	atomic_store(&rd.stop, true);
	pthread_join(rt, NULL);
	ufz_watchdog_arm(0, NULL);
	close(fd);
	REQUIRE(!rd.wrong, "the reader got wrong data %lu times", rd.wrong);
	printf("recovery-cycle: %u recovery cycles on %u queues, every one served reads; "
	       "a reader meanwhile: %lu reads, %lu errors\n",
	       CYCLES, CYCLE_QUEUES, rd.reads, rd.errors);
	return recovery_dev_down(s, id);
}

/* ------------------------------------------------------------------ */
/* recovery-unfetched-queue: START_USER_RECOVERY put the old server task
 * of every queue, also of a queue the last server never fetched (a NULL
 * put_task_struct, an Oops), after warning that the task was not dying.
 * A new server fetches queue 0 only and leaves; recovery is asked for
 * again, and then a full server must bring the device back. Patch "ublk:
 * let START_USER_RECOVERY reset a queue its last server never fetched". */

static int case_recovery_unfetched_queue(void)
{
	struct server s[CYCLE_QUEUES], half;
	char bdev[64];
	__u16 state = 0;
	int id, fd, ret;

	if (recovery_dev_up(s, &id, bdev, sizeof(bdev)))
		return 1;

	ufz_watchdog_arm(90, "recovery of a queue that was never fetched");
	if (servers_die(s) || start_recovery(id, "after the server died"))
		return 1;
	/* a new server that fetches every tag of queue 0, none of queue 1 */
	if (server_open_queue(&half, id, 0, 8, -1) || fetch_all(&half))
		return 1;
	server_close(&half);
	if (start_recovery(id, "after a server that fetched queue 0 only"))
		return 1;

	if (servers_up(s, id))
		return 1;
	ret = cmd_simple(id, UBLK_U_CMD_END_USER_RECOVERY, 30);
	REQUIRE(ret == 0, "END_USER_RECOVERY: %s", ufz_err(ret));
	REQUIRE(!get_state(id, &state) && state == UBLK_S_DEV_LIVE,
	        "state %u after END_USER_RECOVERY, want LIVE (%u)", state, UBLK_S_DEV_LIVE);
	fd = open(bdev, O_RDONLY | O_DIRECT);
	REQUIRE(fd >= 0, "open %s: %s", bdev, strerror(errno));
	ret = read_check(fd, 1);
	close(fd);
	if (ret)
		return 1;
	ufz_watchdog_arm(0, NULL);
	printf("recovery-unfetched-queue: recovery after a server that fetched one of "
	       "%u queues, then served reads\n", CYCLE_QUEUES);
	return recovery_dev_down(s, id);
}

int main(int argc, char **argv)
{
	static const struct { const char *name; int (*fn)(void); } cases[] = {
		{ "params-shift", case_params_shift },
		{ "partial-fetch", case_partial_fetch },
		{ "result-bounds", case_result_bounds },
		{ "stop-then-start", case_stop_then_start },
		{ "stop-ends-start", case_stop_ends_start },
		{ "del-during-start", case_del_during_start },
		{ "recovery-start-dies", case_recovery_start_dies },
		{ "recovery-cycle", case_recovery_cycle },
		{ "recovery-unfetched-queue", case_recovery_unfetched_queue },
	};
	int ret;

	if (argc != 2 || !strcmp(argv[1], "--help")) {
		printf("usage: %s CASE\nCASE:", argv[0]);
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			printf(" %s", cases[i].name);
		printf("\nReplays a ublk bug the fuzzers found; exit 0 when the kernel is fixed.\n");
		return argc == 2 ? 0 : 2;
	}
	ret = ufz_require_ublk("found");
	if (ret)
		return ret;
	ufz_watchdog_start("ublk-found", true);
	if (ufz_ctrl_open(&ctl, 8, IORING_SETUP_SQE128) ||
	    ufz_ctrl_open(&ctl_async, 8, IORING_SETUP_SQE128)) {
		fprintf(stderr, "FAIL: /dev/ublk-control: %s\n", strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (strcmp(argv[1], cases[i].name))
			continue;
		ret = cases[i].fn();
		ufz_ctrl_close(&ctl);
		ufz_ctrl_close(&ctl_async);
		printf("%s: %s\n", cases[i].name, ret ? "FAIL" : "ok");
		return ret;
	}
	fprintf(stderr, "unknown case %s\n", argv[1]);
	return 2;
}
