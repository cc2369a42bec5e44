// SPDX-License-Identifier: GPL-2.0
/*
 * mainline_zc: a small ublk server that serves zero-copy requests the way
 * mainline 6.15's reference server (tools/testing/selftests/ublk, "kublk")
 * does, for the ublk/mainline-zc-* tests. It uses nothing of ours: only the
 * ublk and io_uring UAPI, through Debian's liburing 2.3, with every SQE the
 * old liburing cannot prepare filled in by hand. What a published client
 * library can do is tested with one (the libublk crate, ublk/libublk-*);
 * this server is for what such a library does not let a test express:
 * hand-built chains, a step failing in the middle of one, malformed
 * commands and the review reproducers.
 *
 * One queue, served by one thread whose ring is COOP_TASKRUN | SINGLE_ISSUER
 * | DEFER_TASKRUN, with a sparse registered-buffer table (slot = tag) and the
 * registered files [/dev/ublkcN, backing files...]. A READ/WRITE request is
 * served by one chain submitted at once:
 *
 *   REGISTER_IO_BUF [link, CQE_SKIP_SUCCESS]
 *     -> data SQE(s) [link], buf_index = tag
 *     -> UNREGISTER_IO_BUF
 *
 * then COMMIT_AND_FETCH with the first negative result or the byte count.
 * With --auto-zc (UBLK_F_AUTO_BUF_REG, mainline 6.16) the driver registers
 * the buffer at slot tag before the request is delivered and unregisters it
 * at COMMIT_AND_FETCH, so a request is its data SQE(s) alone.
 * Targets: null (NOP with IORING_NOP_FIXED_BUFFER | INJECT_RESULT), loop
 * (READ_FIXED/WRITE_FIXED on one file, addr = offset into the request),
 * stripe (READV_FIXED/WRITEV_FIXED, one per member file touched, iovec bases
 * = offsets into the request).
 *
 * usage:
 *   mainline_zc add -t null|loop|stripe [-d DEPTH] [-s SIZE] [-f FILE]...
 *           [--link hard|soft|none] [--chunk BYTES] [--fail-middle]
 *           [--fail-sector S] [--never-commit] [--no-start]
 *       Adds a device, prints "id N", starts it (unless --no-start; then
 *       "ready" once every tag is fetched), prints "started", serves until
 *       the device is deleted (FETCH/COMMIT ended with -ENODEV and nothing
 *       is left in flight), prints an "exit ..." summary and exits 0 unless
 *       something unexpected failed (77: no zero copy in GET_FEATURES).
 *       --link soft: IOSQE_IO_LINK instead of IOSQE_IO_HARDLINK (a failing
 *       step cancels the UNREGISTER; the server unregisters on its own).
 *       --link none: register, data, unregister submitted one phase at a
 *       time, no links.
 *       --fail-middle: the data step of any request touching --fail-sector
 *       (default 2048) asks for more bytes than the request has (-EFAULT).
 *       --never-commit: fetch requests but never commit them.
 *       Review reproducers, each armed for the first READ
 *       that starts exactly at sector S (loop target), printing one line
 *       "probe NAME res R want W ok|FAIL" per check:
 *       --keep-buf S --keep-buf-then close|exit: REGISTER_IO_BUF, READ_FIXED,
 *           COMMIT_AND_FETCH without UNREGISTER, then close the ring and
 *           keep living ("ring closed", until SIGTERM) or _exit(0)
 *       --probe-table S: with the request's buffer registered, BUFFERS_UPDATE
 *           of its slot and CLONE_BUFFERS from the ring must fail -EBUSY;
 *           updating a user slot and cloning without driver buffers work
 *       --probe-uc S: pwrite()/pread() on /dev/ublkcN at the tag's offset:
 *           -EACCES without UBLK_F_USER_COPY, 4096 (pwrite) with it
 *       --probe-unreg SB,SA: hold the READ at SB (tag B); for the READ at
 *           SA (tag A): REGISTER/UNREGISTER with addr (1<<32)|A, UNREGISTER
 *           through tag B fail -EINVAL, the buffer stays, then serve both
 *       --die-after-register S: REGISTER_IO_BUF, then SIGKILL ourselves
 *       --no-user-copy, --need-get-data, --recovery-reissue: ADD_DEV flags
 *       --auto-zc: UBLK_F_AUTO_BUF_REG (mainline 6.16, kernel patch 27) as
 *           kublk's --auto_zc: FETCH/COMMIT_AND_FETCH carry struct
 *           ublk_auto_buf_reg {index = tag} in the SQE's addr field
 *           (ublk_auto_buf_reg_to_sqe_addr()), the driver registers
 *           and unregisters the request's buffer, the server sends only the
 *           data SQE(s) on buf_index = tag (no REGISTER/UNREGISTER_IO_BUF)
 *       --probe-bad-addr S (with --auto-zc, loop target): before the first
 *           FETCH, FETCHes whose ublk_auto_buf_reg has reserved0, reserved1
 *           or an unknown flag set must fail -EINVAL; for the READ at sector
 *           S a COMMIT_AND_FETCH with reserved0 set must fail -EINVAL and
 *           commit nothing (the request is then served as usual)
 *   mainline_zc recover ID -t loop -f FILE
 *       START_USER_RECOVERY (retried while -EBUSY, 60 s), serve the device
 *       as "add" does, END_USER_RECOVERY, print "recovered", serve
 *   mainline_zc start ID PID     START_DEV for a server that used --no-start
 *   mainline_zc del ID [--async] DEL_DEV (or DEL_DEV_ASYNC)
 *   mainline_zc info ID          GET_DEV_INFO: "info id N state S flags 0x..."
 *   mainline_zc features         print UBLK_U_CMD_GET_FEATURES
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* the patched kernel's UAPI first: liburing's private copy shares its guard */
#include <linux/io_uring.h>
#include <linux/ublk_cmd.h>
#include <liburing.h>

/* --- what the 6.12 headers (or liburing 2.3) may lack: mainline's values --- */
#ifndef IORING_SETUP_COOP_TASKRUN
#define IORING_SETUP_COOP_TASKRUN	(1U << 8)
#endif
#ifndef IORING_SETUP_SINGLE_ISSUER
#define IORING_SETUP_SINGLE_ISSUER	(1U << 12)
#endif
#ifndef IORING_SETUP_DEFER_TASKRUN
#define IORING_SETUP_DEFER_TASKRUN	(1U << 13)
#endif
#ifndef IORING_NOP_INJECT_RESULT
#define IORING_NOP_INJECT_RESULT	(1U << 0)
#endif
#ifndef IORING_NOP_FIXED_BUFFER
#define IORING_NOP_FIXED_BUFFER		(1U << 3)
#endif
/* enum members in the UAPI, so no #ifndef: mainline 6.15's numbers */
#define OP_READV_FIXED			60
#define OP_WRITEV_FIXED			61

#ifndef UBLK_U_IO_REGISTER_IO_BUF
#define UBLK_U_IO_REGISTER_IO_BUF	_IOWR('u', 0x23, struct ublksrv_io_cmd)
#endif
#ifndef UBLK_U_IO_UNREGISTER_IO_BUF
#define UBLK_U_IO_UNREGISTER_IO_BUF	_IOWR('u', 0x24, struct ublksrv_io_cmd)
#endif

/* mainline 6.16's auto buffer registration (kernel patch 27): its UAPI */
#ifndef UBLK_F_AUTO_BUF_REG
#error "the patched kernel's linux/ublk_cmd.h (UBLK_F_AUTO_BUF_REG, patch 27) is needed"
#endif

#ifndef UBLK_PARAM_TYPE_DMA_ALIGN
#define UBLK_PARAM_TYPE_DMA_ALIGN	(1 << 4)
struct ublk_param_dma_align {
	__u32	alignment;
	__u8	pad[4];
};
#endif
#ifndef UBLK_PARAM_TYPE_SEGMENT
#define UBLK_PARAM_TYPE_SEGMENT		(1 << 5)
struct ublk_param_segment {
	__u64	seg_boundary_mask;
	__u32	max_segment_size;
	__u16	max_segments;
	__u8	pad[2];
};
#endif

/* mainline 6.15's struct ublk_params, whatever the installed header has */
struct zc_params {
	__u32	len;
	__u32	types;
	struct ublk_param_basic		basic;
	struct ublk_param_discard	discard;
	struct ublk_param_devt		devt;
	struct ublk_param_zoned		zoned;
	struct ublk_param_dma_align	dma;
	struct ublk_param_segment	seg;
};
_Static_assert(offsetof(struct zc_params, dma) == 108, "6.15 layout: dma at 108");
_Static_assert(offsetof(struct zc_params, seg) == 120, "6.15 layout: seg at 120");
_Static_assert(sizeof(struct zc_params) == 136, "6.15 layout: 136 bytes");
_Static_assert(sizeof(struct ublksrv_io_cmd) == 16, "io cmd fits a 64-byte SQE");

#define CMD_NR(op)		((op) & 0xff)	/* _IOC_NR */
#define NR_FETCH		CMD_NR(UBLK_U_IO_FETCH_REQ)
#define NR_COMMIT		CMD_NR(UBLK_U_IO_COMMIT_AND_FETCH_REQ)
#define NR_REGISTER		CMD_NR(UBLK_U_IO_REGISTER_IO_BUF)
#define NR_UNREGISTER		CMD_NR(UBLK_U_IO_UNREGISTER_IO_BUF)

/* user_data as kublk: bits 0-15 tag, 16-23 op, 24-39 target data, 63 target */
#define UD_TGT			(1ULL << 63)
static __u64 ud(unsigned int tag, unsigned int op, unsigned int tdata, bool tgt)
{
	return tag | ((__u64)(op & 0xff) << 16) | ((__u64)(tdata & 0xffff) << 24) |
	       (tgt ? UD_TGT : 0);
}
static unsigned int ud_tag(__u64 u) { return u & 0xffff; }
static unsigned int ud_op(__u64 u) { return (u >> 16) & 0xff; }
static unsigned int ud_tdata(__u64 u) { return (u >> 24) & 0xffff; }

#define MAX_FILES		2
#define MAX_IO_BYTES		(512u << 10)

enum target { T_NULL, T_LOOP, T_STRIPE };
enum link_mode { L_HARD, L_SOFT, L_NONE };

/* where a tag's request is */
enum phase {
	PH_IDLE,	/* fetched or being fetched: no request held */
	PH_HELD,	/* --never-commit */
	PH_CHAIN,	/* register -> data -> unregister chain in flight */
	PH_FIXUP,	/* soft link: our own unregister of a cancelled one */
	PH_REG,		/* --link none: register */
	PH_DATA,	/* --link none: data */
	PH_UNREG,	/* --link none: unregister */
	PH_FLUSH,	/* fsync of the backing files */
	PH_AUTO,	/* auto buffer registration: data SQE(s) only */
	PH_STOPPED,	/* FETCH/COMMIT ended with an error: no more requests */
};

struct member {
	unsigned int file;	/* backing file index (fixed file file+1) */
	__u64 off;		/* byte offset in the file */
	unsigned int bytes;
	unsigned int nr_vec;
	struct iovec *vec;	/* bases are offsets into the request */
};

struct tag_io {
	enum phase phase;
	int pending;		/* CQEs still expected */
	int err;		/* first negative result */
	unsigned int done;	/* bytes the data steps reported */
	bool short_io;		/* stripe: a member moved less than its share */
	bool reg_cqe;		/* the register posted a CQE: it failed */
	bool unreg_seen;
	int unreg_res;
	unsigned int bytes;
	bool fail;		/* --fail-middle applies */
	unsigned int nr_members;
	struct member m[MAX_FILES];
};

struct server {
	enum target target;
	enum link_mode link;
	unsigned int depth;
	unsigned long long size;
	unsigned int chunk;
	bool fail_middle, never_commit, no_start;
	unsigned long long fail_sector;
	const char *files[MAX_FILES];
	unsigned int nr_files;
	int backing[MAX_FILES];
	bool direct[MAX_FILES];

	struct ublksrv_ctrl_dev_info info;
	int dev_id;
	int char_fd;
	const struct ublksrv_io_desc *iods;
	size_t iods_size;

	struct io_uring ring;
	struct tag_io *tags;
	struct iovec *vecs;	/* stripe: per tag, per member */
	unsigned int vec_cap;	/* per member */
	int ready_pipe[2];

	/* review reproducers (sector -1: not armed) */
	bool no_user_copy, need_get_data, recovery_reissue, recover;
	long long keep_buf_sector, table_sector, uc_sector, unreg_b_sector,
		  unreg_a_sector, die_sector;
	bool keep_buf_close;
	bool auto_zc;			/* UBLK_F_AUTO_BUF_REG (kublk --auto_zc) */
	long long bad_addr_sector;	/* --probe-bad-addr */
	int held_b;
	unsigned int nr_bufs;		/* buffer-table slots (depth, +1 user slot) */
	struct io_uring_cqe *deferred;	/* CQEs seen while waiting for a probe */
	unsigned int nr_deferred, cap_deferred;
	unsigned long probe_fails;

	/* summary */
	unsigned long served, errors, fixups, unreg_after_error, flushes, held, unexpected;
	unsigned int max_bytes;		/* largest request seen */
	unsigned long data_reqs;	/* READ/WRITE requests delivered */
	unsigned long auto_served;	/* served on the driver's registration */
	unsigned long need_reg;		/* delivered with UBLK_IO_F_NEED_REG_BUF */
	unsigned long buf_cmds;		/* REGISTER/UNREGISTER_IO_BUF sent */
	unsigned int aborted;		/* tags whose FETCH/COMMIT ended in error */
	unsigned int cmd_inflight;	/* FETCH/COMMIT_AND_FETCH not completed */
	int thread_ret;
};

static const char *target_name[] = { "null", "loop", "stripe" };
static const char *link_name[] = { "hard", "soft", "none" };

/* ------------------------------------------------------------------ */
/* control commands on /dev/ublk-control (SQE128 ring)                */

struct ctrl {
	int fd;
	struct io_uring ring;
};

static int ctrl_open(struct ctrl *c)
{
	int ret;

	c->fd = open("/dev/ublk-control", O_RDWR | O_CLOEXEC);
	if (c->fd < 0)
		return -errno;
	ret = io_uring_queue_init(4, &c->ring, IORING_SETUP_SQE128);
	if (ret) {
		close(c->fd);
		return ret;
	}
	return 0;
}

static void ctrl_close(struct ctrl *c)
{
	io_uring_queue_exit(&c->ring);
	close(c->fd);
}

static int ctrl_cmd(struct ctrl *c, unsigned int op, struct ublksrv_ctrl_cmd *cmd)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&c->ring);
	struct io_uring_cqe *cqe;
	int ret;

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 128);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = c->fd;
	sqe->cmd_op = op;
	sqe->user_data = op;
	memcpy(sqe->cmd, cmd, sizeof(*cmd));
	ret = io_uring_submit(&c->ring);
	if (ret < 0)
		return ret;
	do
		ret = io_uring_wait_cqe(&c->ring, &cqe);
	while (ret == -EINTR);
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(&c->ring, cqe);
	return ret;
}

static int ctrl_simple(unsigned int op, int dev_id, __u64 data0)
{
	struct ublksrv_ctrl_cmd cmd = {
		.dev_id = (__u32)dev_id,
		.queue_id = (__u16)-1,
		.data[0] = data0,
	};
	struct ctrl c;
	int ret = ctrl_open(&c);

	if (ret)
		return ret;
	ret = ctrl_cmd(&c, op, &cmd);
	ctrl_close(&c);
	return ret;
}

static int get_features(__u64 *features)
{
	struct ublksrv_ctrl_cmd cmd = {
		.dev_id = (__u32)-1,
		.queue_id = (__u16)-1,
		.addr = (__u64)(uintptr_t)features,
		.len = sizeof(*features),
	};
	struct ctrl c;
	int ret = ctrl_open(&c);

	if (ret)
		return ret;
	ret = ctrl_cmd(&c, UBLK_U_CMD_GET_FEATURES, &cmd);
	ctrl_close(&c);
	return ret;
}

/* ------------------------------------------------------------------ */
/* SQE preparation (liburing 2.3 has no helpers for most of these)    */

static struct io_uring_sqe *get_sqe(struct io_uring *ring)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe) {
		io_uring_submit(ring);
		sqe = io_uring_get_sqe(ring);
	}
	if (!sqe) {
		fprintf(stderr, "mainline_zc: SQ ring full\n");
		abort();
	}
	return sqe;
}

/* room for n SQEs, so that a chain is never split across submissions */
static void reserve_sqes(struct io_uring *ring, unsigned int n)
{
	if (io_uring_sq_space_left(ring) < n)
		io_uring_submit(ring);
}

static void prep_io_cmd(struct io_uring_sqe *sqe, unsigned int op, unsigned int tag,
			int result, __u64 addr)
{
	struct ublksrv_io_cmd *cmd;

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = 0;	/* fixed file 0: /dev/ublkcN */
	sqe->flags = IOSQE_FIXED_FILE;
	sqe->cmd_op = op;
	cmd = (struct ublksrv_io_cmd *)sqe->cmd;
	cmd->q_id = 0;
	cmd->tag = tag;
	cmd->result = result;
	cmd->addr = addr;
}

/* FETCH/COMMIT_AND_FETCH's struct ublk_auto_buf_reg for tag: slot tag */
static struct ublk_auto_buf_reg auto_reg(unsigned int tag)
{
	struct ublk_auto_buf_reg reg = { .index = (__u16)tag };

	return reg;
}

/*
 * FETCH_REQ or COMMIT_AND_FETCH_REQ; with auto registration its
 * descriptor goes in the SQE's own addr field (ublksrv_io_cmd.addr stays 0)
 */
static void prep_fetch_cmd(const struct server *s, struct io_uring_sqe *sqe, unsigned int op,
			   unsigned int tag, int result, const struct ublk_auto_buf_reg *reg)
{
	prep_io_cmd(sqe, op, tag, result, 0);
	if (s->auto_zc)
		sqe->addr = ublk_auto_buf_reg_to_sqe_addr(reg);
}

static void queue_fetch(struct server *s, unsigned int tag)
{
	struct io_uring_sqe *sqe = get_sqe(&s->ring);

	struct ublk_auto_buf_reg reg = auto_reg(tag);

	prep_fetch_cmd(s, sqe, UBLK_U_IO_FETCH_REQ, tag, 0, &reg);
	sqe->user_data = ud(tag, NR_FETCH, 0, false);
	s->cmd_inflight++;
}

static void commit(struct server *s, unsigned int tag, int res)
{
	struct io_uring_sqe *sqe = get_sqe(&s->ring);
	struct ublk_auto_buf_reg reg = auto_reg(tag);

	if (res < 0)
		s->errors++;
	s->served++;
	s->tags[tag].phase = PH_IDLE;
	prep_fetch_cmd(s, sqe, UBLK_U_IO_COMMIT_AND_FETCH_REQ, tag, res, &reg);
	sqe->user_data = ud(tag, NR_COMMIT, 0, false);
	s->cmd_inflight++;
}

static void prep_buf_cmd(struct io_uring_sqe *sqe, unsigned int op, unsigned int tag)
{
	prep_io_cmd(sqe, op, tag, 0, tag);	/* addr = buffer-table slot = tag */
	sqe->user_data = ud(tag, CMD_NR(op), 0, true);
}

/* counted where the chains are built (the sync probes send their own) */
static void count_buf_cmds(struct server *s, unsigned int n)
{
	s->buf_cmds += n;
}

/* the data SQE(s) of a READ/WRITE request; returns how many */
static unsigned int prep_data(struct server *s, unsigned int tag, __u8 link_flag)
{
	const struct ublksrv_io_desc *iod = &s->iods[tag];
	struct tag_io *t = &s->tags[tag];
	unsigned int ublk_op = ublksrv_get_op(iod);
	bool rd = ublk_op == UBLK_IO_OP_READ;
	struct io_uring_sqe *sqe;
	unsigned int i, len;

	switch (s->target) {
	case T_NULL:
		sqe = get_sqe(&s->ring);
		io_uring_prep_rw(IORING_OP_NOP, sqe, -1, NULL, t->bytes, 0);
		sqe->rw_flags = IORING_NOP_FIXED_BUFFER | IORING_NOP_INJECT_RESULT;
		sqe->buf_index = tag;
		sqe->flags = IOSQE_FIXED_FILE | link_flag;	/* as kublk; fd -1 */
		sqe->user_data = ud(tag, ublk_op, 0, true);
		return 1;
	case T_LOOP:
		len = t->bytes + (t->fail ? 4096 : 0);
		sqe = get_sqe(&s->ring);
		io_uring_prep_rw(rd ? IORING_OP_READ_FIXED : IORING_OP_WRITE_FIXED, sqe, 1,
				 NULL /* offset 0 in the request */, len,
				 iod->start_sector << 9);
		sqe->buf_index = tag;
		sqe->flags = IOSQE_FIXED_FILE | link_flag;
		sqe->user_data = ud(tag, ublk_op, 0, true);
		return 1;
	case T_STRIPE:
		for (i = 0; i < t->nr_members; i++) {
			struct member *m = &t->m[i];

			sqe = get_sqe(&s->ring);
			io_uring_prep_rw(rd ? OP_READV_FIXED : OP_WRITEV_FIXED, sqe, m->file + 1,
					 m->vec, m->nr_vec, m->off);
			sqe->buf_index = tag;
			sqe->flags = IOSQE_FIXED_FILE | link_flag;
			sqe->user_data = ud(tag, ublk_op, i, true);
		}
		return t->nr_members;
	}
	return 0;
}

/* stripe: split the request over the member files, kublk's layout */
static void stripe_map(struct server *s, unsigned int tag)
{
	const struct ublksrv_io_desc *iod = &s->iods[tag];
	struct tag_io *t = &s->tags[tag];
	__u64 chunk_sects = s->chunk >> 9;
	__u64 sect = iod->start_sector, end = sect + iod->nr_sectors;
	unsigned int done = 0, i;
	int slot[MAX_FILES];

	for (i = 0; i < MAX_FILES; i++)
		slot[i] = -1;
	t->nr_members = 0;
	while (sect < end) {
		__u64 chunk_no = sect / chunk_sects, in_chunk = sect % chunk_sects;
		__u64 n = chunk_sects - in_chunk;
		unsigned int file = chunk_no % s->nr_files;
		__u64 off = ((chunk_no / s->nr_files) * chunk_sects + in_chunk) << 9;
		struct member *m;

		if (n > end - sect)
			n = end - sect;
		if (slot[file] < 0) {
			slot[file] = t->nr_members;
			m = &t->m[t->nr_members++];
			m->file = file;
			m->off = off;
			m->bytes = 0;
			m->nr_vec = 0;
			m->vec = s->vecs + ((size_t)tag * MAX_FILES + file) * s->vec_cap;
		}
		m = &t->m[slot[file]];
		if (m->off + m->bytes != off || m->nr_vec >= s->vec_cap) {
			fprintf(stderr, "mainline_zc: stripe layout broken at sector %llu\n",
				(unsigned long long)sect);
			abort();
		}
		m->vec[m->nr_vec].iov_base = (void *)(uintptr_t)done;
		m->vec[m->nr_vec].iov_len = n << 9;
		m->nr_vec++;
		m->bytes += n << 9;
		sect += n;
		done += n << 9;
	}
	/* --fail-middle: the last piece reaches past the request's end */
	if (t->fail) {
		struct member *m = &t->m[t->nr_members - 1];

		m->vec[m->nr_vec - 1].iov_len += 4096;
	}
}

static void queue_unregister(struct server *s, unsigned int tag)
{
	struct io_uring_sqe *sqe = get_sqe(&s->ring);

	prep_buf_cmd(sqe, UBLK_U_IO_UNREGISTER_IO_BUF, tag);
}

static void queue_rw(struct server *s, unsigned int tag)
{
	struct tag_io *t = &s->tags[tag];
	struct io_uring_sqe *sqe;
	__u8 link = s->link == L_SOFT ? IOSQE_IO_LINK : IOSQE_IO_HARDLINK;
	unsigned int ndata = s->target == T_STRIPE ? t->nr_members : 1;

	if (s->link == L_NONE) {
		sqe = get_sqe(&s->ring);
		prep_buf_cmd(sqe, UBLK_U_IO_REGISTER_IO_BUF, tag);
		count_buf_cmds(s, 1);
		t->phase = PH_REG;
		t->pending = 1;
		return;
	}
	reserve_sqes(&s->ring, ndata + 2);
	sqe = get_sqe(&s->ring);
	prep_buf_cmd(sqe, UBLK_U_IO_REGISTER_IO_BUF, tag);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS | link;
	prep_data(s, tag, link);
	queue_unregister(s, tag);
	count_buf_cmds(s, 2);
	t->phase = PH_CHAIN;
	t->pending = ndata + 1;	/* the register is skip-success */
}

/* UBLK_F_AUTO_BUF_REG: the driver registered the buffer at slot tag */
static void queue_auto(struct server *s, unsigned int tag)
{
	struct tag_io *t = &s->tags[tag];

	reserve_sqes(&s->ring, s->target == T_STRIPE ? t->nr_members : 1);
	t->pending = prep_data(s, tag, 0);
	t->phase = PH_AUTO;
	s->auto_served++;
}

/*
 * A READ/WRITE: with auto registration the data SQE(s) alone. Without
 * UBLK_AUTO_BUF_REG_FALLBACK the driver never hands a request over
 * unregistered (UBLK_IO_F_NEED_REG_BUF); if it did, the server's own
 * REGISTER -> data -> UNREGISTER serves it, and it counts as unexpected.
 */
static void serve_rw(struct server *s, unsigned int tag)
{
	const struct ublksrv_io_desc *iod = &s->iods[tag];
	bool need_reg = iod->op_flags & UBLK_IO_F_NEED_REG_BUF;

	if (!s->auto_zc) {
		queue_rw(s, tag);
		return;
	}
	if (need_reg) {
		fprintf(stderr, "tag %u: op_flags 0x%x: NEED_REG_BUF without FALLBACK\n", tag,
			iod->op_flags);
		s->need_reg++;
		s->unexpected++;
		queue_rw(s, tag);
		return;
	}
	queue_auto(s, tag);
}

static void queue_flush(struct server *s, unsigned int tag)
{
	struct tag_io *t = &s->tags[tag];
	unsigned int i;

	s->flushes++;
	for (i = 0; i < s->nr_files; i++) {
		struct io_uring_sqe *sqe = get_sqe(&s->ring);

		io_uring_prep_rw(IORING_OP_FSYNC, sqe, i + 1, NULL, 0, 0);
		sqe->fsync_flags = IORING_FSYNC_DATASYNC;
		sqe->flags = IOSQE_FIXED_FILE;
		sqe->user_data = ud(tag, UBLK_IO_OP_FLUSH, i, true);
	}
	t->phase = PH_FLUSH;
	t->pending = s->nr_files;
}

/* ------------------------------------------------------------------ */
/* review reproducers: synchronous steps inside the event loop        */

#define UD_SYNC			(1ULL << 62)

/* mainline's struct io_uring_clone_buffers (IORING_REGISTER_CLONE_BUFFERS) */
struct zc_clone_buffers {
	__u32	src_fd;
	__u32	flags;
	__u32	pad[6];
};
#define ZC_REGISTER_CLONE_BUFFERS	30

static void start_request(struct server *s, unsigned int tag);
static void cmd_cqe(struct server *s, const struct io_uring_cqe *cqe);

static void defer_cqe(struct server *s, const struct io_uring_cqe *cqe)
{
	if (s->nr_deferred == s->cap_deferred) {
		s->cap_deferred = s->cap_deferred ? 2 * s->cap_deferred : 64;
		s->deferred = realloc(s->deferred, s->cap_deferred * sizeof(*cqe));
		if (!s->deferred)
			abort();
	}
	s->deferred[s->nr_deferred++] = *cqe;
}

/* submit the prepared sqe alone and wait for its CQE; others are deferred */
static int sync_sqe(struct server *s, struct io_uring_sqe *sqe)
{
	sqe->user_data = UD_SYNC;
	sqe->flags &= ~(IOSQE_CQE_SKIP_SUCCESS | IOSQE_IO_LINK | IOSQE_IO_HARDLINK);
	for (;;) {
		struct io_uring_cqe *cqe;
		int ret = io_uring_submit_and_wait(&s->ring, 1);

		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
			fprintf(stderr, "mainline_zc: io_uring_enter: %s\n", strerror(-ret));
			s->unexpected++;
			return ret;
		}
		while (io_uring_peek_cqe(&s->ring, &cqe) == 0) {
			struct io_uring_cqe c = *cqe;

			io_uring_cqe_seen(&s->ring, cqe);
			if (c.user_data == UD_SYNC)
				return c.res;
			defer_cqe(s, &c);
		}
	}
}

static int sync_buf_cmd(struct server *s, unsigned int op, unsigned int tag, __u64 addr)
{
	struct io_uring_sqe *sqe = get_sqe(&s->ring);

	prep_io_cmd(sqe, op, tag, 0, addr);
	return sync_sqe(s, sqe);
}

/* the loop target's data step into slot buf (READ requests only) */
static int sync_read_fixed(struct server *s, unsigned int tag, unsigned int buf)
{
	const struct ublksrv_io_desc *iod = &s->iods[tag];
	struct io_uring_sqe *sqe = get_sqe(&s->ring);

	io_uring_prep_rw(IORING_OP_READ_FIXED, sqe, 1, NULL, s->tags[tag].bytes,
			 iod->start_sector << 9);
	sqe->buf_index = buf;
	sqe->flags = IOSQE_FIXED_FILE;
	return sync_sqe(s, sqe);
}

static void report(struct server *s, const char *name, long res, long want)
{
	bool ok = res == want;

	if (!ok)
		s->probe_fails++;
	printf("probe %s res %ld%s%s want %ld%s%s %s\n", name, res,
	       res < 0 ? " " : "", res < 0 ? strerror(-res) : "", want,
	       want < 0 ? " " : "", want < 0 ? strerror(-want) : "", ok ? "ok" : "FAIL");
	fflush(stdout);
}

/* item 1: commit with the buffer still registered, then close or exit */
static void probe_keep_buf(struct server *s, unsigned int tag)
{
	int r, n;

	r = sync_buf_cmd(s, UBLK_U_IO_REGISTER_IO_BUF, tag, tag);
	report(s, "keep-register", r, 0);
	r = sync_read_fixed(s, tag, tag);
	report(s, "keep-read", r, s->tags[tag].bytes);
	commit(s, tag, r);	/* COMMIT_AND_FETCH: the new FETCH makes the tag active */
	n = io_uring_submit(&s->ring);
	printf("committed tag %u with %d (submit %d), buffer %u still registered\n", tag, r,
	       n, tag);
	fflush(stdout);
	if (!s->keep_buf_close) {
		printf("exiting\n");
		fflush(stdout);
		_exit(0);
	}
	io_uring_queue_exit(&s->ring);
	printf("ring closed\n");
	fflush(stdout);
	for (;;)
		pause();	/* until SIGTERM */
}

static int clone_into_new_ring(struct server *s)
{
	struct zc_clone_buffers arg = { .src_fd = (__u32)s->ring.ring_fd };
	struct io_uring dst;
	int r = io_uring_queue_init(4, &dst, 0);

	if (r)
		return r;
	r = syscall(__NR_io_uring_register, dst.ring_fd, ZC_REGISTER_CLONE_BUFFERS, &arg, 1);
	if (r < 0)
		r = -errno;
	io_uring_queue_exit(&dst);
	return r;
}

/* item 5: the buffer table's management leaves a driver buffer alone */
static void probe_table(struct server *s, unsigned int tag)
{
	static char ubuf[4096] __attribute__((aligned(4096)));
	struct iovec iov = { .iov_base = ubuf, .iov_len = sizeof(ubuf) };
	struct iovec none = { .iov_base = NULL, .iov_len = 0 };
	__u64 utag = 0;
	unsigned int user_slot = s->depth;
	int r, rd;

	r = sync_buf_cmd(s, UBLK_U_IO_REGISTER_IO_BUF, tag, tag);
	report(s, "table-register", r, 0);
	r = io_uring_register_buffers_update_tag(&s->ring, tag, &iov, &utag, 1);
	report(s, "update-driver-slot", r, -EBUSY);
	r = io_uring_register_buffers_update_tag(&s->ring, user_slot, &iov, &utag, 1);
	report(s, "update-user-slot", r, 1);
	r = clone_into_new_ring(s);
	report(s, "clone-with-driver-buffer", r, -EBUSY);
	/* the request's buffer is still the one in its slot */
	rd = sync_read_fixed(s, tag, tag);
	report(s, "table-read", rd, s->tags[tag].bytes);
	r = sync_buf_cmd(s, UBLK_U_IO_UNREGISTER_IO_BUF, tag, tag);
	report(s, "table-unregister", r, 0);
	/* the same clone works without a driver buffer: the call is right */
	r = clone_into_new_ring(s);
	report(s, "clone-without-driver-buffer", r, 0);
	r = io_uring_register_buffers_update_tag(&s->ring, user_slot, &none, &utag, 1);
	report(s, "update-user-slot-clear", r, 1);
	commit(s, tag, rd);
}

/* item 8: zero copy alone allows no copying through /dev/ublkcN */
static void probe_uc(struct server *s, unsigned int tag)
{
	static char ubuf[4096] __attribute__((aligned(4096)));
	off_t off = UBLKSRV_IO_BUF_OFFSET + ((off_t)0 << UBLK_QID_OFF) +
		    ((off_t)tag << UBLK_TAG_OFF);
	long r;

	memset(ubuf, 0x5a, sizeof(ubuf));
	r = pwrite(s->char_fd, ubuf, sizeof(ubuf), off);
	report(s, "uc-pwrite", r < 0 ? -errno : r, s->no_user_copy ? -EACCES : 4096);
	if (s->no_user_copy) {
		r = pread(s->char_fd, ubuf, sizeof(ubuf), off);
		report(s, "uc-pread", r < 0 ? -errno : r, -EACCES);
	}
	queue_rw(s, tag);	/* then served as usual */
}

/* item 8: UNREGISTER only empties its own tag's slot; no truncated index */
static void probe_unreg(struct server *s, unsigned int a)
{
	unsigned int b = s->held_b;
	__u64 high = (1ULL << 32) | a;
	int r, rd;
	bool reg = false;

	r = sync_buf_cmd(s, UBLK_U_IO_REGISTER_IO_BUF, a, high);
	report(s, "register-addr-high", r, -EINVAL);
	if (r == 0) {
		reg = true;	/* truncated to slot a */
	} else {
		r = sync_buf_cmd(s, UBLK_U_IO_REGISTER_IO_BUF, a, a);
		report(s, "register", r, 0);
		reg = r == 0;
	}
	r = sync_buf_cmd(s, UBLK_U_IO_UNREGISTER_IO_BUF, b, a);
	report(s, "unregister-other-tag", r, -EINVAL);
	r = sync_buf_cmd(s, UBLK_U_IO_UNREGISTER_IO_BUF, a, high);
	report(s, "unregister-addr-high", r, -EINVAL);
	rd = sync_read_fixed(s, a, a);
	report(s, "buffer-still-registered", rd, s->tags[a].bytes);
	r = sync_buf_cmd(s, UBLK_U_IO_UNREGISTER_IO_BUF, a, a);
	report(s, "unregister", r, reg ? 0 : -EINVAL);
	commit(s, a, rd);
	s->held_b = -1;
	s->held--;
	start_request(s, b);	/* the held request, served as usual */
}

/* item 4: the server dies with a buffer registered and nothing committed */
static void probe_die(struct server *s, unsigned int tag)
{
	int r = sync_buf_cmd(s, UBLK_U_IO_REGISTER_IO_BUF, tag, tag);

	report(s, "die-register", r, 0);
	printf("dying with tag %u registered\n", tag);
	fflush(stdout);
	kill(getpid(), SIGKILL);
	pause();
}

/*
 * Submit what is prepared (the probe's SQE carries user_data udata) and
 * wait up to 2 s for the CQE of udata; other CQEs are deferred. False if
 * none came: the command is still pending (the kernel took it).
 */
static bool sync_wait_ud(struct server *s, __u64 udata, int *res)
{
	struct timespec now, end;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += 2;
	io_uring_submit(&s->ring);
	for (;;) {
		struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 100000000 };
		struct io_uring_cqe *cqe;
		int ret = io_uring_wait_cqe_timeout(&s->ring, &cqe, &ts);

		if (ret == 0) {
			struct io_uring_cqe c = *cqe;

			io_uring_cqe_seen(&s->ring, cqe);
			if (c.user_data == udata) {
				*res = c.res;
				return true;
			}
			defer_cqe(s, &c);
			continue;
		}
		if (ret != -ETIME && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
			fprintf(stderr, "mainline_zc: wait: %s\n", strerror(-ret));
			s->unexpected++;
			return false;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec ||
		    (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			return false;
	}
}

static void report_pending(struct server *s, const char *name, long want)
{
	s->probe_fails++;
	printf("probe %s res pending (the kernel took it) want %ld %s FAIL\n", name, want,
	       strerror(-want));
	fflush(stdout);
}

/*
 * --probe-bad-addr, before the first FETCH: FETCHes of tags 0-2 whose
 * struct ublk_auto_buf_reg has reserved0, reserved1 or an unknown flag set
 * fail -EINVAL. Returns a mask of tags whose FETCH the kernel took anyway
 * (those need no FETCH of their own).
 */
static unsigned int probe_bad_fetch(struct server *s)
{
	static const char *const name[] = {
		"fetch-reserved0", "fetch-reserved1", "fetch-unknown-flag",
	};
	unsigned int i, taken = 0;

	for (i = 0; i < 3 && i < s->depth; i++) {
		struct io_uring_sqe *sqe = get_sqe(&s->ring);
		struct ublk_auto_buf_reg reg = auto_reg(i);
		int res;

		if (i == 0)
			reg.reserved0 = 1;
		else if (i == 1)
			reg.reserved1 = 1;
		else
			reg.flags |= UBLK_AUTO_BUF_REG_F_MASK + 1;
		prep_fetch_cmd(s, sqe, UBLK_U_IO_FETCH_REQ, i, 0, &reg);
		sqe->user_data = ud(i, NR_FETCH, 0, false);
		printf("probe %s: FETCH tag %u sqe addr 0x%llx\n", name[i], i,
		       (unsigned long long)sqe->addr);
		if (sync_wait_ud(s, ud(i, NR_FETCH, 0, false), &res)) {
			report(s, name[i], res, -EINVAL);
			if (res >= 0)	/* a request already: not before START_DEV */
				s->unexpected++;
		} else {
			report_pending(s, name[i], -EINVAL);
			s->cmd_inflight++;	/* it is this tag's FETCH now */
			taken |= 1u << i;
		}
	}
	return taken;
}

/*
 * --probe-bad-addr, for the READ at its sector: a COMMIT_AND_FETCH with
 * reserved0 set fails -EINVAL and commits nothing; the request is then
 * served as usual (the reader checks its data). False if the kernel took
 * the bad command (it committed the request unserved).
 */
static bool probe_bad_commit(struct server *s, unsigned int tag)
{
	struct io_uring_sqe *sqe = get_sqe(&s->ring);
	struct ublk_auto_buf_reg reg = auto_reg(tag);
	__u64 u = ud(tag, NR_COMMIT, 0, false);
	int res;

	reg.reserved0 = 1;
	prep_fetch_cmd(s, sqe, UBLK_U_IO_COMMIT_AND_FETCH_REQ, tag, s->tags[tag].bytes, &reg);
	sqe->user_data = u;
	printf("probe commit-reserved0: COMMIT_AND_FETCH tag %u result %u sqe addr 0x%llx\n",
	       tag, s->tags[tag].bytes, (unsigned long long)sqe->addr);
	if (sync_wait_ud(s, u, &res)) {
		report(s, "commit-reserved0", res, -EINVAL);
		if (res == -EINVAL)
			return true;
		if (res < 0)
			return true;	/* refused otherwise: still ours */
		/* committed, and the tag already has its next request */
		s->served++;
		s->cmd_inflight++;
		cmd_cqe(s, &(struct io_uring_cqe){ .user_data = u, .res = res });
		return false;
	}
	report_pending(s, "commit-reserved0", -EINVAL);
	s->served++;
	s->cmd_inflight++;
	s->tags[tag].phase = PH_IDLE;
	return false;
}

static bool armed(long long *sector, const struct ublksrv_io_desc *iod)
{
	if (*sector < 0 || ublksrv_get_op(iod) != UBLK_IO_OP_READ ||
	    iod->start_sector != (__u64)*sector)
		return false;
	*sector = -1;	/* once */
	return true;
}

/* a READ a reproducer is armed for: handled here (true) */
static bool probe_hook(struct server *s, unsigned int tag)
{
	const struct ublksrv_io_desc *iod = &s->iods[tag];
	struct tag_io *t = &s->tags[tag];

	if (armed(&s->keep_buf_sector, iod)) {
		t->phase = PH_HELD;
		probe_keep_buf(s, tag);
		return true;
	}
	if (armed(&s->table_sector, iod)) {
		t->phase = PH_HELD;
		probe_table(s, tag);
		return true;
	}
	if (armed(&s->uc_sector, iod)) {
		probe_uc(s, tag);
		return true;
	}
	if (armed(&s->unreg_b_sector, iod)) {
		t->phase = PH_HELD;
		s->held++;
		s->held_b = tag;
		printf("holding tag %u sector %llu\n", tag, (unsigned long long)iod->start_sector);
		fflush(stdout);
		return true;
	}
	if (s->held_b >= 0 && armed(&s->unreg_a_sector, iod)) {
		t->phase = PH_HELD;
		probe_unreg(s, tag);
		return true;
	}
	if (armed(&s->bad_addr_sector, iod)) {
		if (probe_bad_commit(s, tag))
			serve_rw(s, tag);
		return true;
	}
	if (armed(&s->die_sector, iod)) {
		t->phase = PH_HELD;
		probe_die(s, tag);
		return true;
	}
	return false;
}

/* a FETCH or COMMIT_AND_FETCH completed with a request for tag */
static void start_request(struct server *s, unsigned int tag)
{
	const struct ublksrv_io_desc *iod = &s->iods[tag];
	struct tag_io *t = &s->tags[tag];
	unsigned int op = ublksrv_get_op(iod);

	memset(t, 0, offsetof(struct tag_io, m));
	t->bytes = iod->nr_sectors << 9;
	if (op == UBLK_IO_OP_READ || op == UBLK_IO_OP_WRITE) {
		s->data_reqs++;
		if (t->bytes > s->max_bytes)
			s->max_bytes = t->bytes;
	}
	if (s->never_commit) {
		t->phase = PH_HELD;
		s->held++;
		printf("holding tag %u op %u sector %llu sectors %u\n", tag, op,
		       (unsigned long long)iod->start_sector, iod->nr_sectors);
		fflush(stdout);
		return;
	}
	if (op == UBLK_IO_OP_READ && probe_hook(s, tag))
		return;
	switch (op) {
	case UBLK_IO_OP_READ:
	case UBLK_IO_OP_WRITE:
		t->fail = s->fail_middle && s->fail_sector >= iod->start_sector &&
			  s->fail_sector < iod->start_sector + iod->nr_sectors;
		if (s->target == T_STRIPE)
			stripe_map(s, tag);
		serve_rw(s, tag);
		break;
	case UBLK_IO_OP_FLUSH:
		if (s->nr_files)
			queue_flush(s, tag);
		else
			commit(s, tag, 0);
		break;
	case UBLK_IO_OP_DISCARD:
	case UBLK_IO_OP_WRITE_ZEROES:
		commit(s, tag, -EOPNOTSUPP);
		break;
	default:
		commit(s, tag, -EINVAL);
		break;
	}
}

/* all expected CQEs of the current step are in */
static void step_done(struct server *s, unsigned int tag)
{
	struct tag_io *t = &s->tags[tag];
	int res;

	switch (t->phase) {
	case PH_CHAIN:
		if (!t->reg_cqe && t->unreg_seen && t->unreg_res == -ECANCELED) {
			/* a soft link broke after the register ran: the buffer
			 * is still in the table, so unregister it first */
			s->fixups++;
			fprintf(stderr, "tag %u: unregister cancelled (err %d), unregistering\n",
				tag, t->err);
			queue_unregister(s, tag);
			count_buf_cmds(s, 1);
			t->phase = PH_FIXUP;
			t->pending = 1;
			return;
		}
		/* a step failed and the chain's unregister still ran */
		if (t->err && !t->reg_cqe && t->unreg_seen && t->unreg_res != -ECANCELED)
			s->unreg_after_error++;
		break;
	case PH_FIXUP:
	case PH_UNREG:
	case PH_FLUSH:
	case PH_AUTO:
		break;
	case PH_REG:
		if (t->err)
			break;
		t->pending = prep_data(s, tag, 0);
		t->phase = PH_DATA;
		return;
	case PH_DATA:
		queue_unregister(s, tag);
		count_buf_cmds(s, 1);
		t->phase = PH_UNREG;
		t->pending = 1;
		return;
	default:
		fprintf(stderr, "tag %u: completion in phase %d\n", tag, t->phase);
		s->unexpected++;
		return;
	}
	if (t->err)
		res = t->err;
	else if (t->phase == PH_FLUSH)
		res = 0;
	else if (s->target == T_STRIPE)
		res = t->short_io ? -EIO : (int)t->bytes;
	else
		res = (int)t->done;
	commit(s, tag, res);
}

static void target_cqe(struct server *s, const struct io_uring_cqe *cqe)
{
	unsigned int tag = ud_tag(cqe->user_data), op = ud_op(cqe->user_data);
	struct tag_io *t;
	int res = cqe->res;

	if (tag >= s->depth) {
		s->unexpected++;
		return;
	}
	t = &s->tags[tag];
	if (res < 0) {
		fprintf(stderr, "tag %u op 0x%x member %u: %d (%s)\n", tag, op,
			ud_tdata(cqe->user_data), res, strerror(-res));
		if (!t->err)
			t->err = res;
	}
	if (op == NR_REGISTER) {
		/* skip-success in a chain: a CQE means it failed, and was
		 * not counted */
		t->reg_cqe = res < 0;
		if (t->phase == PH_CHAIN)
			t->pending++;
	} else if (op == NR_UNREGISTER) {
		t->unreg_seen = true;
		t->unreg_res = res;
	} else if ((op == UBLK_IO_OP_READ || op == UBLK_IO_OP_WRITE) && res >= 0) {
		t->done += res;
		if (s->target == T_STRIPE) {
			unsigned int i = ud_tdata(cqe->user_data);

			if (i >= t->nr_members || (unsigned int)res < t->m[i].bytes)
				t->short_io = true;
		}
	}
	if (--t->pending <= 0)
		step_done(s, tag);
}

static void cmd_cqe(struct server *s, const struct io_uring_cqe *cqe)
{
	unsigned int tag = ud_tag(cqe->user_data);

	s->cmd_inflight--;
	if (tag >= s->depth) {
		s->unexpected++;
		return;
	}
	if (cqe->res == UBLK_IO_RES_OK) {
		start_request(s, tag);
		return;
	}
	s->tags[tag].phase = PH_STOPPED;
	s->aborted++;
	if (cqe->res != UBLK_IO_RES_ABORT) {
		fprintf(stderr, "tag %u: %s ended with %d (%s)\n", tag,
			ud_op(cqe->user_data) == NR_FETCH ? "FETCH" : "COMMIT_AND_FETCH",
			cqe->res, strerror(-cqe->res));
		s->unexpected++;
	}
}

/* ------------------------------------------------------------------ */
/* the queue thread                                                   */

static void ready(struct server *s, int err)
{
	ssize_t n = write(s->ready_pipe[1], &err, sizeof(err));

	(void)n;
}

/* tags with target I/O in flight */
static unsigned int active_tags(const struct server *s)
{
	unsigned int i, n = 0;

	for (i = 0; i < s->depth; i++)
		switch (s->tags[i].phase) {
		case PH_IDLE:
		case PH_HELD:
		case PH_STOPPED:
			break;
		default:
			n++;
		}
	return n;
}

/*
 * Serve until the device goes: a FETCH/COMMIT ended with -ENODEV, and no
 * command and no target I/O is left in flight (as kublk; tags held by
 * --never-commit have nothing in flight).
 */
static bool queue_done(const struct server *s)
{
	return s->aborted && !s->cmd_inflight && !active_tags(s) && !s->nr_deferred;
}

static void dispatch(struct server *s, const struct io_uring_cqe *c)
{
	if (c->user_data & UD_TGT)
		target_cqe(s, c);
	else
		cmd_cqe(s, c);
}

/* CQEs that arrived while a probe waited, in order */
static void drain_deferred(struct server *s)
{
	while (s->nr_deferred) {
		struct io_uring_cqe c = s->deferred[0];

		memmove(s->deferred, s->deferred + 1, --s->nr_deferred * sizeof(c));
		dispatch(s, &c);
	}
}

static void *queue_thread(void *arg)
{
	struct server *s = arg;
	struct io_uring_params p;
	unsigned int per_req = 2 + (s->target == T_STRIPE ? s->nr_files : 1);
	unsigned int sq = s->depth * per_req, i, taken = 0, nfetch = 0;
	int fds[1 + MAX_FILES], ret;

	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER |
		  IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQSIZE;
	p.cq_entries = sq * 2;
	ret = io_uring_queue_init_params(sq, &s->ring, &p);
	if (ret) {
		fprintf(stderr, "mainline_zc: io_uring_setup: %s\n", strerror(-ret));
		goto fail;
	}
	ret = io_uring_register_ring_fd(&s->ring);
	if (ret < 0)
		fprintf(stderr, "mainline_zc: register ring fd: %s (going on)\n", strerror(-ret));
	s->nr_bufs = s->depth + (s->table_sector >= 0);	/* + a user slot */
	ret = io_uring_register_buffers_sparse(&s->ring, s->nr_bufs);
	if (ret) {
		fprintf(stderr, "mainline_zc: sparse buffer table: %s\n", strerror(-ret));
		goto fail_ring;
	}
	fds[0] = s->char_fd;
	for (i = 0; i < s->nr_files; i++)
		fds[i + 1] = s->backing[i];
	ret = io_uring_register_files(&s->ring, fds, 1 + s->nr_files);
	if (ret) {
		fprintf(stderr, "mainline_zc: register files: %s\n", strerror(-ret));
		goto fail_ring;
	}
	if (s->bad_addr_sector >= 0)
		taken = probe_bad_fetch(s);
	for (i = 0; i < s->depth; i++)
		if (!(i < 32 && (taken & (1u << i)))) {
			queue_fetch(s, i);
			nfetch++;
		}
	ret = io_uring_submit(&s->ring);
	if (ret != (int)nfetch) {
		fprintf(stderr, "mainline_zc: FETCH submit: %d\n", ret);
		ret = ret < 0 ? ret : -EIO;
		goto fail_ring;
	}
	ready(s, 0);

	while (!queue_done(s)) {
		struct io_uring_cqe *cqe;

		if (s->nr_deferred) {
			drain_deferred(s);
			continue;
		}
		ret = io_uring_submit_and_wait(&s->ring, 1);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
			fprintf(stderr, "mainline_zc: io_uring_enter: %s\n", strerror(-ret));
			s->unexpected++;
			break;
		}
		while (io_uring_peek_cqe(&s->ring, &cqe) == 0) {
			struct io_uring_cqe c = *cqe;

			io_uring_cqe_seen(&s->ring, cqe);
			dispatch(s, &c);
		}
	}
	io_uring_queue_exit(&s->ring);
	s->thread_ret = 0;
	return NULL;

fail_ring:
	io_uring_queue_exit(&s->ring);
fail:
	s->thread_ret = ret ? ret : -EIO;
	ready(s, s->thread_ret);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* add: set the device up, start it, serve                            */

static int open_backing(struct server *s)
{
	unsigned long long min = ULLONG_MAX;
	unsigned int i;

	for (i = 0; i < s->nr_files; i++) {
		struct stat st;

		s->direct[i] = true;
		s->backing[i] = open(s->files[i], O_RDWR | O_DIRECT | O_CLOEXEC);
		if (s->backing[i] < 0 && errno == EINVAL) {
			/* tmpfs has no O_DIRECT */
			s->direct[i] = false;
			s->backing[i] = open(s->files[i], O_RDWR | O_CLOEXEC);
		}
		if (s->backing[i] < 0 || fstat(s->backing[i], &st)) {
			fprintf(stderr, "mainline_zc: %s: %s\n", s->files[i], strerror(errno));
			return -errno;
		}
		if ((unsigned long long)st.st_size < min)
			min = st.st_size;
	}
	if (s->target == T_LOOP)
		s->size = min & ~511ULL;
	else if (s->target == T_STRIPE)
		s->size = (min & ~((unsigned long long)s->chunk - 1)) * s->nr_files;
	return 0;
}

static void fill_params(const struct server *s, struct zc_params *p)
{
	memset(p, 0, sizeof(*p));
	p->len = sizeof(*p);
	p->types = UBLK_PARAM_TYPE_BASIC;
	p->basic.logical_bs_shift = 9;
	p->basic.physical_bs_shift = 12;
	p->basic.io_opt_shift = 12;
	p->basic.io_min_shift = 9;
	p->basic.max_sectors = s->info.max_io_buf_bytes >> 9;
	p->basic.dev_sectors = s->size >> 9;
	switch (s->target) {
	case T_NULL:
		p->types |= UBLK_PARAM_TYPE_DMA_ALIGN | UBLK_PARAM_TYPE_SEGMENT;
		p->dma.alignment = 4095;
		p->seg.seg_boundary_mask = 4095;
		p->seg.max_segment_size = 32 << 10;
		p->seg.max_segments = 32;
		break;
	case T_LOOP:
		p->basic.attrs = UBLK_ATTR_VOLATILE_CACHE;
		p->types |= UBLK_PARAM_TYPE_DMA_ALIGN;
		p->dma.alignment = 511;
		break;
	case T_STRIPE:
		p->basic.attrs = UBLK_ATTR_VOLATILE_CACHE;
		break;
	}
}

static int open_char(int id)
{
	char path[64];
	int i, fd = -1;

	snprintf(path, sizeof(path), "/dev/ublkc%d", id);
	for (i = 0; i < 500; i++) {	/* devtmpfs or udev: up to 5 s */
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd >= 0 || errno != ENOENT)
			break;
		usleep(10000);
	}
	if (fd < 0)
		fprintf(stderr, "mainline_zc: %s: %s\n", path, strerror(errno));
	return fd;
}

static int cmd_add(struct server *s)
{
	struct ublksrv_ctrl_cmd cmd;
	struct zc_params params;
	struct ctrl c;
	pthread_t th;
	__u64 features = 0;
	long page = sysconf(_SC_PAGESIZE);
	int ret, err = 0;
	unsigned int i;
	ssize_t n;

	ret = get_features(&features);
	if (ret) {
		fprintf(stderr, "mainline_zc: GET_FEATURES: %s\n", strerror(-ret));
		return 1;
	}
	if (!(features & UBLK_F_SUPPORT_ZERO_COPY) || !(features & UBLK_F_CMD_IOCTL_ENCODE)) {
		fprintf(stderr, "mainline_zc: features 0x%llx lack ZERO_COPY/CMD_IOCTL_ENCODE\n",
			(unsigned long long)features);
		return 77;
	}
	if (s->auto_zc && !(features & UBLK_F_AUTO_BUF_REG)) {
		fprintf(stderr, "mainline_zc: features 0x%llx lack AUTO_BUF_REG\n",
			(unsigned long long)features);
		return 77;
	}
	if (s->nr_files && open_backing(s))
		return 1;

	ret = ctrl_open(&c);
	if (ret) {
		fprintf(stderr, "mainline_zc: /dev/ublk-control: %s\n", strerror(-ret));
		return 1;
	}
	if (s->recover) {
		int i;

		memset(&cmd, 0, sizeof(cmd));
		cmd.dev_id = s->dev_id;
		cmd.queue_id = (__u16)-1;
		cmd.addr = (__u64)(uintptr_t)&s->info;
		cmd.len = sizeof(s->info);
		ret = ctrl_cmd(&c, UBLK_U_CMD_GET_DEV_INFO, &cmd);
		if (ret) {
			fprintf(stderr, "mainline_zc: GET_DEV_INFO %d: %s\n", s->dev_id,
				strerror(-ret));
			ctrl_close(&c);
			return 1;
		}
		s->depth = s->info.queue_depth;
		/* -EBUSY until the dead server's files are gone and the
		 * device is quiesced */
		for (i = 0; i < 600; i++) {
			memset(&cmd, 0, sizeof(cmd));
			cmd.dev_id = s->dev_id;
			cmd.queue_id = (__u16)-1;
			ret = ctrl_cmd(&c, UBLK_U_CMD_START_USER_RECOVERY, &cmd);
			if (ret != -EBUSY)
				break;
			usleep(100000);
		}
		if (ret) {
			fprintf(stderr, "mainline_zc: START_USER_RECOVERY: %s (state %u)\n",
				strerror(-ret), s->info.state);
			ctrl_close(&c);
			return 1;
		}
		printf("id %d pid %d\n", s->dev_id, getpid());
		printf("recovering target %s depth %u flags 0x%llx after %d tries\n",
		       target_name[s->target], s->depth, (unsigned long long)s->info.flags,
		       i + 1);
		fflush(stdout);
		goto serve;
	}
	memset(&s->info, 0, sizeof(s->info));
	s->info.nr_hw_queues = 1;
	s->info.queue_depth = s->depth;
	s->info.max_io_buf_bytes = MAX_IO_BYTES;
	s->info.dev_id = (__u32)-1;
	s->info.ublksrv_pid = getpid();
	s->info.flags = UBLK_F_CMD_IOCTL_ENCODE | UBLK_F_SUPPORT_ZERO_COPY | UBLK_F_USER_COPY;
	if (s->no_user_copy)
		s->info.flags &= ~UBLK_F_USER_COPY;
	if (s->need_get_data)
		s->info.flags |= UBLK_F_NEED_GET_DATA;
	if (s->recovery_reissue)
		s->info.flags |= UBLK_F_USER_RECOVERY | UBLK_F_USER_RECOVERY_REISSUE;
	if (s->auto_zc)	/* with ZERO_COPY, as kublk's --auto_zc */
		s->info.flags |= UBLK_F_AUTO_BUF_REG;
	memset(&cmd, 0, sizeof(cmd));
	cmd.dev_id = (__u32)-1;
	cmd.queue_id = (__u16)-1;
	cmd.addr = (__u64)(uintptr_t)&s->info;
	cmd.len = sizeof(s->info);
	ret = ctrl_cmd(&c, UBLK_U_CMD_ADD_DEV, &cmd);
	if (ret) {
		fprintf(stderr, "mainline_zc: ADD_DEV: %s\n", strerror(-ret));
		ctrl_close(&c);
		return 1;
	}
	s->dev_id = s->info.dev_id;
	printf("id %d pid %d\n", s->dev_id, getpid());
	printf("target %s link %s depth %u size %llu flags 0x%llx max_io %u%s",
	       target_name[s->target], link_name[s->link], s->depth, s->size,
	       (unsigned long long)s->info.flags, s->info.max_io_buf_bytes,
	       s->auto_zc ? " auto_zc" : "");
	for (i = 0; i < s->nr_files; i++)
		printf(" file%u %s%s", i, s->files[i], s->direct[i] ? " (O_DIRECT)" : "");
	printf("\n");
	fflush(stdout);

	fill_params(s, &params);
	memset(&cmd, 0, sizeof(cmd));
	cmd.dev_id = s->dev_id;
	cmd.queue_id = (__u16)-1;
	cmd.addr = (__u64)(uintptr_t)&params;
	cmd.len = sizeof(params);
	ret = ctrl_cmd(&c, UBLK_U_CMD_SET_PARAMS, &cmd);
	if (ret) {
		fprintf(stderr, "mainline_zc: SET_PARAMS: %s\n", strerror(-ret));
		goto del;
	}

serve:
	s->char_fd = open_char(s->dev_id);
	if (s->char_fd < 0)
		goto del;
	s->iods_size = ((size_t)s->depth * sizeof(struct ublksrv_io_desc) + page - 1) &
		       ~((size_t)page - 1);
	s->iods = mmap(NULL, s->iods_size, PROT_READ, MAP_SHARED | MAP_POPULATE, s->char_fd,
		       UBLKSRV_CMD_BUF_OFFSET);
	if (s->iods == MAP_FAILED) {
		fprintf(stderr, "mainline_zc: mmap descriptors: %s\n", strerror(errno));
		goto del_char;
	}
	s->tags = calloc(s->depth, sizeof(*s->tags));
	s->vec_cap = s->chunk ? MAX_IO_BYTES / s->chunk + 2 : 1;
	s->vecs = calloc((size_t)s->depth * MAX_FILES * s->vec_cap, sizeof(*s->vecs));
	if (!s->tags || !s->vecs || pipe(s->ready_pipe))
		goto del_char;

	if (pthread_create(&th, NULL, queue_thread, s)) {
		fprintf(stderr, "mainline_zc: pthread_create failed\n");
		goto del_char;
	}
	n = read(s->ready_pipe[0], &err, sizeof(err));
	if (n != sizeof(err) || err) {
		pthread_join(th, NULL);
		goto del_char;
	}
	if (s->recover) {
		memset(&cmd, 0, sizeof(cmd));
		cmd.dev_id = s->dev_id;
		cmd.queue_id = (__u16)-1;
		cmd.data[0] = getpid();
		ret = ctrl_cmd(&c, UBLK_U_CMD_END_USER_RECOVERY, &cmd);
		if (ret) {
			fprintf(stderr, "mainline_zc: END_USER_RECOVERY: %s\n", strerror(-ret));
			s->unexpected++;
		} else {
			printf("recovered /dev/ublkb%d\n", s->dev_id);
			fflush(stdout);
		}
	} else if (s->no_start) {
		printf("ready pid %d\n", getpid());
		fflush(stdout);
	} else {
		memset(&cmd, 0, sizeof(cmd));
		cmd.dev_id = s->dev_id;
		cmd.queue_id = (__u16)-1;
		cmd.data[0] = getpid();
		ret = ctrl_cmd(&c, UBLK_U_CMD_START_DEV, &cmd);
		if (ret) {
			fprintf(stderr, "mainline_zc: START_DEV: %s\n", strerror(-ret));
			/* the queue thread ends when the device goes */
			memset(&cmd, 0, sizeof(cmd));
			cmd.dev_id = s->dev_id;
			cmd.queue_id = (__u16)-1;
			ctrl_cmd(&c, UBLK_U_CMD_DEL_DEV_ASYNC, &cmd);
			pthread_join(th, NULL);
			s->unexpected++;
			goto out;
		}
		printf("started /dev/ublkb%d\n", s->dev_id);
		fflush(stdout);
	}
	pthread_join(th, NULL);
out:
	ctrl_close(&c);
	munmap((void *)s->iods, s->iods_size);
	close(s->char_fd);
	for (i = 0; i < s->nr_files; i++)
		close(s->backing[i]);
	printf("exit served %lu errors %lu fixups %lu unreg_after_error %lu flushes %lu held %lu "
	       "aborted %u max_bytes %u unexpected %lu probe_fails %lu data_reqs %lu auto %lu "
	       "need_reg %lu buf_cmds %lu thread %d\n",
	       s->served, s->errors, s->fixups, s->unreg_after_error, s->flushes, s->held,
	       s->aborted, s->max_bytes, s->unexpected, s->probe_fails, s->data_reqs,
	       s->auto_served, s->need_reg, s->buf_cmds, s->thread_ret);
	fflush(stdout);
	return s->unexpected || s->thread_ret || s->probe_fails ? 1 : 0;

del_char:
	if (s->iods && s->iods != MAP_FAILED)
		munmap((void *)s->iods, s->iods_size);
	close(s->char_fd);
del:
	memset(&cmd, 0, sizeof(cmd));
	cmd.dev_id = s->dev_id;
	cmd.queue_id = (__u16)-1;
	ret = ctrl_cmd(&c, UBLK_U_CMD_DEL_DEV, &cmd);
	if (ret)
		fprintf(stderr, "mainline_zc: DEL_DEV: %s\n", strerror(-ret));
	ctrl_close(&c);
	return 1;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: mainline_zc add -t null|loop|stripe [-d DEPTH] [-s SIZE] [-f FILE]...\n"
		"                       [--link hard|soft|none] [--chunk BYTES] [--fail-middle]\n"
		"                       [--fail-sector S] [--never-commit] [--no-start]\n"
		"                       [--keep-buf S --keep-buf-then close|exit] [--probe-table S]\n"
		"                       [--probe-uc S] [--probe-unreg SB,SA] [--die-after-register S]\n"
		"                       [--no-user-copy] [--need-get-data] [--recovery-reissue]\n"
		"                       [--auto-zc] [--probe-bad-addr S]\n"
		"       mainline_zc recover ID -t loop -f FILE\n"
		"       mainline_zc start ID PID\n"
		"       mainline_zc del ID [--async]\n"
		"       mainline_zc info ID\n"
		"       mainline_zc features\n");
}

static unsigned long long parse_size(const char *arg)
{
	char *end;
	unsigned long long v = strtoull(arg, &end, 0);

	switch (*end) {
	case 'k': case 'K': v <<= 10; break;
	case 'm': case 'M': v <<= 20; break;
	case 'g': case 'G': v <<= 30; break;
	default: break;
	}
	return v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "target", required_argument, NULL, 't' },
		{ "depth", required_argument, NULL, 'd' },
		{ "size", required_argument, NULL, 's' },
		{ "file", required_argument, NULL, 'f' },
		{ "link", required_argument, NULL, 'l' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "fail-middle", no_argument, NULL, 'F' },
		{ "fail-sector", required_argument, NULL, 'S' },
		{ "never-commit", no_argument, NULL, 'N' },
		{ "no-start", no_argument, NULL, 'n' },
		{ "keep-buf", required_argument, NULL, 'K' },
		{ "keep-buf-then", required_argument, NULL, 'T' },
		{ "probe-table", required_argument, NULL, 'B' },
		{ "probe-uc", required_argument, NULL, 'U' },
		{ "probe-unreg", required_argument, NULL, 'R' },
		{ "die-after-register", required_argument, NULL, 'D' },
		{ "no-user-copy", no_argument, NULL, 'C' },
		{ "need-get-data", no_argument, NULL, 'G' },
		{ "recovery-reissue", no_argument, NULL, 'Q' },
		{ "auto-zc", no_argument, NULL, 'A' },
		{ "probe-bad-addr", required_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	struct server s;
	int opt, ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		usage();
		return 2;
	}
	if (!strcmp(argv[1], "features")) {
		__u64 f = 0;

		ret = get_features(&f);
		if (ret) {
			fprintf(stderr, "GET_FEATURES: %s\n", strerror(-ret));
			return 1;
		}
		printf("features 0x%llx zero_copy %d\n", (unsigned long long)f,
		       !!(f & UBLK_F_SUPPORT_ZERO_COPY));
		return 0;
	}
	if (!strcmp(argv[1], "info") && argc == 3) {
		struct ublksrv_ctrl_dev_info info;
		struct ublksrv_ctrl_cmd cmd = {
			.dev_id = (__u32)atoi(argv[2]),
			.queue_id = (__u16)-1,
			.addr = (__u64)(uintptr_t)&info,
			.len = sizeof(info),
		};
		struct ctrl c;

		memset(&info, 0, sizeof(info));
		ret = ctrl_open(&c);
		if (!ret) {
			ret = ctrl_cmd(&c, UBLK_U_CMD_GET_DEV_INFO, &cmd);
			ctrl_close(&c);
		}
		if (ret) {
			fprintf(stderr, "GET_DEV_INFO %s: %s\n", argv[2], strerror(-ret));
			return 1;
		}
		printf("info id %u state %u flags 0x%llx depth %u queues %u\n", info.dev_id,
		       info.state, (unsigned long long)info.flags, info.queue_depth,
		       info.nr_hw_queues);
		return 0;
	}
	if (!strcmp(argv[1], "start") && argc == 4) {
		ret = ctrl_simple(UBLK_U_CMD_START_DEV, atoi(argv[2]), strtoull(argv[3], NULL, 0));
		printf("start %s: %d%s%s\n", argv[2], ret, ret ? " " : "",
		       ret ? strerror(-ret) : "");
		return ret ? 1 : 0;
	}
	if (!strcmp(argv[1], "del") && (argc == 3 || argc == 4)) {
		bool async = argc == 4 && !strcmp(argv[3], "--async");

		ret = ctrl_simple(async ? UBLK_U_CMD_DEL_DEV_ASYNC : UBLK_U_CMD_DEL_DEV,
				  atoi(argv[2]), 0);
		printf("del %s: %d%s%s\n", argv[2], ret, ret ? " " : "",
		       ret ? strerror(-ret) : "");
		return ret ? 1 : 0;
	}
	if (strcmp(argv[1], "add") && !(strcmp(argv[1], "recover") == 0 && argc >= 3)) {
		usage();
		return 2;
	}

	memset(&s, 0, sizeof(s));
	s.target = T_NULL;
	s.link = L_HARD;
	s.depth = 32;
	s.size = 256ULL << 20;
	s.chunk = 64 << 10;
	s.fail_sector = 2048;
	s.char_fd = -1;
	s.dev_id = -1;
	s.keep_buf_sector = s.table_sector = s.uc_sector = -1;
	s.unreg_b_sector = s.unreg_a_sector = s.die_sector = -1;
	s.held_b = -1;
	s.bad_addr_sector = -1;
	optind = 2;
	if (!strcmp(argv[1], "recover")) {
		s.recover = true;
		s.dev_id = atoi(argv[2]);
		optind = 3;
	}
	while ((opt = getopt_long(argc, argv, "t:d:s:f:", opts, NULL)) != -1) {
		switch (opt) {
		case 't':
			if (!strcmp(optarg, "null"))
				s.target = T_NULL;
			else if (!strcmp(optarg, "loop"))
				s.target = T_LOOP;
			else if (!strcmp(optarg, "stripe"))
				s.target = T_STRIPE;
			else
				goto bad;
			break;
		case 'd':
			s.depth = atoi(optarg);
			break;
		case 's':
			s.size = parse_size(optarg);
			break;
		case 'f':
			if (s.nr_files >= MAX_FILES)
				goto bad;
			s.files[s.nr_files++] = optarg;
			break;
		case 'l':
			if (!strcmp(optarg, "hard"))
				s.link = L_HARD;
			else if (!strcmp(optarg, "soft"))
				s.link = L_SOFT;
			else if (!strcmp(optarg, "none"))
				s.link = L_NONE;
			else
				goto bad;
			break;
		case 'c':
			s.chunk = parse_size(optarg);
			break;
		case 'F':
			s.fail_middle = true;
			break;
		case 'S':
			s.fail_sector = strtoull(optarg, NULL, 0);
			break;
		case 'N':
			s.never_commit = true;
			break;
		case 'n':
			s.no_start = true;
			break;
		case 'K':
			s.keep_buf_sector = strtoll(optarg, NULL, 0);
			break;
		case 'T':
			if (!strcmp(optarg, "close"))
				s.keep_buf_close = true;
			else if (strcmp(optarg, "exit"))
				goto bad;
			break;
		case 'B':
			s.table_sector = strtoll(optarg, NULL, 0);
			break;
		case 'U':
			s.uc_sector = strtoll(optarg, NULL, 0);
			break;
		case 'R':
			if (sscanf(optarg, "%lld,%lld", &s.unreg_b_sector, &s.unreg_a_sector) != 2)
				goto bad;
			break;
		case 'D':
			s.die_sector = strtoll(optarg, NULL, 0);
			break;
		case 'C':
			s.no_user_copy = true;
			break;
		case 'G':
			s.need_get_data = true;
			break;
		case 'Q':
			s.recovery_reissue = true;
			break;
		case 'A':
			s.auto_zc = true;
			break;
		case 'P':
			s.bad_addr_sector = strtoll(optarg, NULL, 0);
			break;
		default:
			goto bad;
		}
	}
	if (optind != argc || !s.depth || s.depth > 4096)
		goto bad;
	if ((s.target == T_LOOP && s.nr_files != 1) ||
	    (s.target == T_STRIPE && s.nr_files != 2) || (s.target == T_NULL && s.nr_files))
		goto bad;
	if (s.target == T_STRIPE &&
	    (s.chunk < 4096 || s.chunk > (512u << 10) || (s.chunk & (s.chunk - 1))))
		goto bad;
	if (s.fail_middle && s.target == T_NULL) {
		fprintf(stderr, "mainline_zc: --fail-middle needs a loop or stripe target\n");
		return 2;
	}
	if (s.target != T_STRIPE)
		s.chunk = 0;
	if ((s.keep_buf_sector >= 0 || s.table_sector >= 0 || s.uc_sector >= 0 ||
	     s.unreg_b_sector >= 0 || s.die_sector >= 0) && (s.target != T_LOOP || s.link == L_NONE)) {
		fprintf(stderr, "mainline_zc: the review probes need a linked loop target\n");
		return 2;
	}
	if (s.auto_zc && (s.keep_buf_sector >= 0 || s.table_sector >= 0 || s.uc_sector >= 0 ||
			  s.unreg_b_sector >= 0 || s.die_sector >= 0 || s.recovery_reissue ||
			  s.recover)) {
		fprintf(stderr, "mainline_zc: the review probes register buffers themselves: "
			"not with --auto-zc\n");
		return 2;
	}
	if (s.bad_addr_sector >= 0 && (!s.auto_zc || s.target != T_LOOP)) {
		fprintf(stderr, "mainline_zc: --probe-bad-addr needs --auto-zc and a loop target\n");
		return 2;
	}
	return cmd_add(&s);
bad:
	usage();
	return 2;
}
