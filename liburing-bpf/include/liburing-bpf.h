/* SPDX-License-Identifier: (LGPL-2.1 OR MIT) */
/*
 * liburing-bpf: user-space side of iouring-bpf: rings set up for a BPF
 * event loop (io_uring_bpf_ops) and running that loop, policy loading, the
 * DAG builder, ublk device control and servers, and virtio-blk passthrough
 * commands.
 *
 * Conventions:
 * - functions returning int return 0 (or a count, or an id) on success and
 *   -errno on failure;
 * - the few returning a pointer (iouring_bpf_dag_new(),
 *   iouring_bpf_policy_global_ptr()) return NULL on failure with errno set;
 *   iouring_bpf_policy_object() and _link() are accessors (NULL: none),
 *   the _strerror() functions always return a string;
 * - destructors pair with constructors by kind: _init() and _exit() for
 *   structures the caller allocates (ring, ublk queue), _open() and
 *   _close() for handles on kernel objects (policy, ublk device;
 *   iouring_bpf_ublk_add() opens too), _new() and _free() for plain memory
 *   (DAG). All accept an
 *   object that failed to set up, and NULL where they take a pointer the
 *   library allocated.
 * - fields named __reserved or __private are not part of the API: leave
 *   them alone; they let structures grow without changing their size.
 * The library version is LIBURING_BPF_VERSION, the newest symbol version.
 */
#ifndef LIBURING_BPF_H
#define LIBURING_BPF_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/io_uring.h>
#include <linux/ublk_cmd.h>
#if __has_include(<linux/io_uring/bpf_filter.h>)
#include <linux/io_uring/bpf_filter.h>
#else					/* kernel headers older than 7.0: its UAPI */
struct io_uring_bpf_ctx {
	__u64	user_data;
	__u8	opcode;
	__u8	sqe_flags;
	__u8	pdu_size;
	__u8	pad[5];
	union {
		struct {
			__u32	family;
			__u32	type;
			__u32	protocol;
		} socket;
		struct {
			__u64	flags;
			__u64	mode;
			__u64	resolve;
		} open;
		struct {
			__u32	family;
			__be16	port;
			__u8	pad[2];
			union {
				__be32	v4_addr;
				__u8	v6_addr[16];
			};
		} connect;
	};
};

enum {
	IO_URING_BPF_FILTER_DENY_REST	= 1,
	IO_URING_BPF_FILTER_SZ_STRICT	= 2,
};

struct io_uring_bpf_filter {
	__u32	opcode;
	__u32	flags;
	__u32	filter_len;
	__u8	pdu_size;
	__u8	resv[3];
	__u64	filter_ptr;
	__u64	resv2[5];
};

enum {
	IO_URING_BPF_CMD_FILTER		= 1,
};

struct io_uring_bpf {
	__u16	cmd_type;
	__u16	cmd_flags;
	__u32	resv;
	union {
		struct io_uring_bpf_filter	filter;
	};
};
#endif
#ifndef UBLK_F_AUTO_BUF_REG		/* kernel headers older than 6.16: its UAPI */
#define UBLK_F_AUTO_BUF_REG		(1ULL << 11)
#define UBLK_AUTO_BUF_REG_FALLBACK	(1 << 0)
#define UBLK_AUTO_BUF_REG_F_MASK	UBLK_AUTO_BUF_REG_FALLBACK
#define UBLK_IO_F_NEED_REG_BUF		(1U << 17)
struct ublk_auto_buf_reg {
	__u16	index;
	__u8	flags;
	__u8	reserved0;
	__u32	reserved1;
};

static inline struct ublk_auto_buf_reg ublk_sqe_addr_to_auto_buf_reg(__u64 sqe_addr)
{
	struct ublk_auto_buf_reg reg = {
		.index = (__u16)sqe_addr,
		.flags = (__u8)(sqe_addr >> 16),
		.reserved0 = (__u8)(sqe_addr >> 24),
		.reserved1 = (__u32)(sqe_addr >> 32),
	};

	return reg;
}

static inline __u64 ublk_auto_buf_reg_to_sqe_addr(const struct ublk_auto_buf_reg *reg)
{
	return (__u64)reg->index | (__u64)reg->flags << 16 | (__u64)reg->reserved0 << 24 |
	       (__u64)reg->reserved1 << 32;
}
#endif
#include <linux/virtio_blk.h>
#include <iouring_bpf/geometry.h>
#include <iouring_bpf/dag.h>
#include <iouring_bpf/ublk.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LIBURING_BPF_VERSION "0.4"

/*
 * Setup flags that may be missing from older UAPI headers, including the
 * private copy liburing ships (which shares the kernel header's include
 * guard, so whichever comes first wins).
 */
#ifndef IORING_SETUP_SINGLE_ISSUER
#define IORING_SETUP_SINGLE_ISSUER (1U << 12)
#endif
#ifndef IORING_SETUP_DEFER_TASKRUN
#define IORING_SETUP_DEFER_TASKRUN (1U << 13)
#endif
#ifndef IORING_SETUP_NO_SQARRAY
#define IORING_SETUP_NO_SQARRAY (1U << 16)
#endif
#ifndef IORING_SETUP_SQ_REWIND
#define IORING_SETUP_SQ_REWIND (1U << 20)
#endif

/* What a ring driven by a BPF loop needs: the loop runs task work in the
 * submitter (DEFER_TASKRUN, SINGLE_ISSUER) and writes SQEs from index 0. */
#define IOURING_BPF_RING_FLAGS                                                 \
	(IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |             \
	 IORING_SETUP_NO_SQARRAY | IORING_SETUP_SQ_REWIND)

struct iouring_bpf_ring {
	int fd;
	struct io_uring_params params;	/* as io_uring_setup() returned them */
	void *ring_mem;			/* SQ/CQ ring header and CQEs */
	size_t ring_mem_size;
	struct io_uring_sqe *sqes;
	size_t sqes_size;
	/*
	 * For the policy's iou_geom global. geom.size says how much of it is
	 * filled; it may grow into __reserved, the size of this structure stays
	 * (layout 3 took one __u64 of it for sqe_size).
	 */
	struct iouring_bpf_geometry geom;
	__u64 __reserved[7];
};

int iouring_bpf_ring_init(struct iouring_bpf_ring *ring, unsigned int entries,
			  unsigned int cq_entries, unsigned int flags);
void iouring_bpf_ring_exit(struct iouring_bpf_ring *ring);
int iouring_bpf_ring_run(struct iouring_bpf_ring *ring);
int iouring_bpf_ring_register_mem(struct iouring_bpf_ring *ring, void *addr,
				  size_t size);

/*
 * Any policy object (.bpf.o with one io_uring_bpf_ops map), without a
 * skeleton: open, set globals by name, give it a ring (fills the iou_geom
 * global if the policy has one, and the map's ring_fd), load, attach.
 * Errors are -errno; the reason in words is iouring_bpf_policy_strerror().
 */
struct iouring_bpf_policy;
struct bpf_object;
struct bpf_link;

int iouring_bpf_policy_open(const char *path, struct iouring_bpf_policy **policy);
/*
 * The real path of a ready policy object NAME ("nops.bpf.o") in PATH:
 * $IOURING_BPF_POLICY_DIR first if set, then LIBDIR/iouring-bpf of the
 * install this library belongs to. -ENOENT: in neither; PATH then lists the
 * directories searched, separated by ':'.
 */
int iouring_bpf_policy_find(const char *name, char *path, size_t size);
int iouring_bpf_policy_set_global(struct iouring_bpf_policy *policy, const char *name,
				  const void *value, size_t size);
int iouring_bpf_policy_set_ring(struct iouring_bpf_policy *policy,
				const struct iouring_bpf_ring *ring);
int iouring_bpf_policy_load(struct iouring_bpf_policy *policy);
int iouring_bpf_policy_attach(struct iouring_bpf_policy *policy);
struct bpf_object *iouring_bpf_policy_object(const struct iouring_bpf_policy *policy);
struct bpf_link *iouring_bpf_policy_link(const struct iouring_bpf_policy *policy);
const char *iouring_bpf_policy_strerror(const struct iouring_bpf_policy *policy);
void iouring_bpf_policy_close(struct iouring_bpf_policy *policy);

/*
 * Run the loop: io_uring_enter() until the policy stops (EINTR retried),
 * then *exit_status = the policy's iou_exit_status (0 if it has none).
 */
int iouring_bpf_policy_run(struct iouring_bpf_policy *policy, struct iouring_bpf_ring *ring,
			   int *exit_status);

/* The policy's globals, as its BTF describes them. */
#define IOURING_BPF_GLOBAL_INT		(1U << 0)	/* integer/enum/bool: settable from text */
#define IOURING_BPF_GLOBAL_SIGNED	(1U << 1)
#define IOURING_BPF_GLOBAL_RODATA	(1U << 2)	/* const volatile: read-only once loaded */
#define IOURING_BPF_GLOBAL_CONST	(1U << 3)	/* const only: compiled in, never settable */
#define IOURING_BPF_GLOBAL_STATIC	(1U << 4)	/* static: private to the policy */

struct iouring_bpf_global {
	const char *name;	/* valid until the policy is closed */
	const char *section;	/* ".rodata", ".data", ".bss", ... */
	__u32 size;
	__u32 flags;		/* IOURING_BPF_GLOBAL_* */
};

int iouring_bpf_policy_globals(const struct iouring_bpf_policy *policy,
			       struct iouring_bpf_global *globals, unsigned int max);
int iouring_bpf_policy_get_global(const struct iouring_bpf_policy *policy, const char *name,
				  void *value, size_t size);
int iouring_bpf_policy_set_global_str(struct iouring_bpf_policy *policy, const char *name,
				      const char *text);
void *iouring_bpf_policy_global_ptr(const struct iouring_bpf_policy *policy, const char *name,
				    size_t *size);

/*
 * DAG builder for bpf/policies/dag: nodes are SQE templates, edges carry a
 * condition (enum iouring_bpf_dag_cond). Errors are -errno; the reason in words is
 * iouring_bpf_dag_strerror().
 */
struct iouring_bpf_dag;

struct iouring_bpf_dag *iouring_bpf_dag_new(void);
void iouring_bpf_dag_free(struct iouring_bpf_dag *dag);
int iouring_bpf_dag_add_node(struct iouring_bpf_dag *dag, const struct iouring_bpf_dag_node *tmpl);
int iouring_bpf_dag_add_edge(struct iouring_bpf_dag *dag, unsigned int parent,
			     unsigned int child, enum iouring_bpf_dag_cond cond);
int iouring_bpf_dag_export(struct iouring_bpf_dag *dag, struct iouring_bpf_dag_node *nodes,
			   unsigned int max_nodes, struct iouring_bpf_dag_edge *edges,
			   unsigned int max_edges, __u32 *nr_nodes);
const char *iouring_bpf_dag_strerror(const struct iouring_bpf_dag *dag);

/*
 * Run the DAG on a loaded, attached bpf/policies/dag policy: export it
 * into the policy, run the loop until every node ended, and copy each
 * node's result (res of its CQE, or -ECANCELED) into res[0..nodes).
 */
int iouring_bpf_dag_run(struct iouring_bpf_dag *dag, struct iouring_bpf_policy *policy,
			struct iouring_bpf_ring *ring, unsigned int max_inflight, __s32 *res,
			unsigned int nr_res);

/*
 * ublk: control of ublk devices through /dev/ublk-control and the per-IO
 * commands of a ublk server (queue daemon). Control commands go out as
 * IORING_OP_URING_CMD on a small private ring of the device handle.
 *
 * Names that UAPI headers older than the kernel's may lack (the library is
 * built against Linux 6.12's; zero-copy buffer commands come from 6.15).
 */
#ifndef UBLK_F_CMD_IOCTL_ENCODE
#define UBLK_F_CMD_IOCTL_ENCODE		(1ULL << 6)
#endif
#ifndef UBLK_FEATURES_LEN
#define UBLK_FEATURES_LEN		8
#endif
#ifndef UBLK_U_CMD_GET_DEV_INFO
#define UBLK_U_CMD_GET_DEV_INFO		_IOR('u', UBLK_CMD_GET_DEV_INFO, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_ADD_DEV		_IOWR('u', UBLK_CMD_ADD_DEV, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_DEL_DEV		_IOWR('u', UBLK_CMD_DEL_DEV, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_START_DEV		_IOWR('u', UBLK_CMD_START_DEV, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_STOP_DEV		_IOWR('u', UBLK_CMD_STOP_DEV, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_SET_PARAMS		_IOWR('u', UBLK_CMD_SET_PARAMS, struct ublksrv_ctrl_cmd)
#define UBLK_U_CMD_GET_PARAMS		_IOR('u', UBLK_CMD_GET_PARAMS, struct ublksrv_ctrl_cmd)
#endif
#ifndef UBLK_U_CMD_GET_FEATURES
#define UBLK_U_CMD_GET_FEATURES		_IOR('u', 0x13, struct ublksrv_ctrl_cmd)
#endif
#ifndef UBLK_U_IO_FETCH_REQ
#define UBLK_U_IO_FETCH_REQ		_IOWR('u', UBLK_IO_FETCH_REQ, struct ublksrv_io_cmd)
#define UBLK_U_IO_COMMIT_AND_FETCH_REQ	_IOWR('u', UBLK_IO_COMMIT_AND_FETCH_REQ, struct ublksrv_io_cmd)
#define UBLK_U_IO_NEED_GET_DATA		_IOWR('u', UBLK_IO_NEED_GET_DATA, struct ublksrv_io_cmd)
#endif
#ifndef UBLK_U_IO_REGISTER_IO_BUF
#define UBLK_U_IO_REGISTER_IO_BUF	_IOWR('u', 0x23, struct ublksrv_io_cmd)
#endif
#ifndef UBLK_U_IO_UNREGISTER_IO_BUF
#define UBLK_U_IO_UNREGISTER_IO_BUF	_IOWR('u', 0x24, struct ublksrv_io_cmd)
#endif

/*
 * A ublk device as seen from user space: read ctrl_fd, char_fd and info;
 * __private is the library's (its control ring), opaque and of fixed size.
 */
struct iouring_bpf_ublk_dev {
	int ctrl_fd;			/* /dev/ublk-control */
	int char_fd;			/* /dev/ublkcN once opened, else -1 */
	struct ublksrv_ctrl_dev_info info;	/* as the kernel last reported it */
	__u64 __private[64];
};

int iouring_bpf_ublk_get_features(__u64 *features);
int iouring_bpf_ublk_add(struct iouring_bpf_ublk_dev *dev, int dev_id, unsigned int nr_queues,
			 unsigned int depth, unsigned int max_io_bytes, __u64 flags);
int iouring_bpf_ublk_open(struct iouring_bpf_ublk_dev *dev, int dev_id);
int iouring_bpf_ublk_get_info(struct iouring_bpf_ublk_dev *dev);
int iouring_bpf_ublk_set_params(struct iouring_bpf_ublk_dev *dev, const struct ublk_params *params);
int iouring_bpf_ublk_get_params(struct iouring_bpf_ublk_dev *dev, struct ublk_params *params);
int iouring_bpf_ublk_open_char(struct iouring_bpf_ublk_dev *dev);
int iouring_bpf_ublk_start(struct iouring_bpf_ublk_dev *dev, pid_t daemon);
int iouring_bpf_ublk_stop(struct iouring_bpf_ublk_dev *dev);
int iouring_bpf_ublk_delete(struct iouring_bpf_ublk_dev *dev, unsigned int timeout_ms);
void iouring_bpf_ublk_close(struct iouring_bpf_ublk_dev *dev);

/*
 * The chunk a ublk policy declares with IOU_UBLK_CHUNK_BYTES()
 * (iouring_bpf/ublk.bpf.h), checked for a device whose requests are at
 * most max_io_bytes: 0 and *chunk_bytes (0 if it declares none), or
 * -EINVAL and the reason in iouring_bpf_policy_strerror().
 */
int iouring_bpf_ublk_policy_chunk(struct iouring_bpf_policy *policy, unsigned int max_io_bytes,
				  __u32 *chunk_bytes);

/* One queue of an open device: its request descriptors, mapped read-only. */
struct iouring_bpf_ublk_queue {
	unsigned int q_id;
	unsigned int depth;
	const struct ublksrv_io_desc *descs;	/* descs[tag], valid while the server owns tag */
	size_t descs_size;
};

int iouring_bpf_ublk_queue_init(struct iouring_bpf_ublk_queue *queue,
				const struct iouring_bpf_ublk_dev *dev, unsigned int q_id);
void iouring_bpf_ublk_queue_exit(struct iouring_bpf_ublk_queue *queue);

/* fd is an index into the ring's registered files (IOSQE_FIXED_FILE) */
#define IOURING_BPF_UBLK_FIXED_FILE	(1U << 0)
/*
 * UBLK_F_AUTO_BUF_REG: addr is a struct ublk_auto_buf_reg encoded by
 * ublk_auto_buf_reg_to_sqe_addr() and goes in the SQE's own addr field,
 * where the driver reads it (FETCH_REQ and COMMIT_AND_FETCH_REQ only)
 */
#define IOURING_BPF_UBLK_AUTO_BUF_REG	(1U << 1)

int iouring_bpf_ublk_prep_io_cmd(struct io_uring_sqe *sqe, __u32 cmd_op, int fd,
				 unsigned int flags, __u16 q_id, __u16 tag, __s32 result,
				 __u64 addr);

/*
 * The kernel path of a ublk policy (kernel patch "ublk: add ublk_bpf_ops"):
 * attach the policy object's ublk_bpf_ops map (IOURING_BPF_UBLK_HOOK() in
 * iouring_bpf/ublk.bpf.h) to the device whose /dev/ublkcN char_fd is (the
 * server's descriptor; attaching needs CAP_SYS_ADMIN), with the backing files
 * fds[0..nr_fds) (open for reading and writing; the kernel takes its own
 * references). The driver then serves requests in queue_rq() with the
 * policy's iou_ublk_map(); the device's server keeps serving what the
 * program hands over and everything after _detach(), which waits for the
 * requests the program took. The handle is set even on failure, for
 * _strerror(); free it with _detach().
 */
struct iouring_bpf_ublk_hook;

int iouring_bpf_ublk_hook_attach(const char *policy, int char_fd,
				 const struct iouring_bpf_ublk_geometry *geom,
				 const int *fds, unsigned int nr_fds,
				 struct iouring_bpf_ublk_hook **hook);
struct bpf_object *iouring_bpf_ublk_hook_object(const struct iouring_bpf_ublk_hook *hook);
const char *iouring_bpf_ublk_hook_strerror(const struct iouring_bpf_ublk_hook *hook);
void iouring_bpf_ublk_hook_detach(struct iouring_bpf_ublk_hook *hook);

/*
 * A ublk server: a device served by a BPF policy (one instance per queue,
 * each in a thread of the library's, with the ring, fixed files, sparse
 * buffers and iou_ublk global of iouring_bpf/ublk.h's contract) or, with
 * IOURING_BPF_UBLK_SERVE_USER_COPY, by a copying loop in user space.
 * iouring_bpf_ublk_server_start() returns once /dev/ublkbN is live;
 * _wait() blocks until every queue ended (the device was stopped or
 * deleted), _stop() stops the device, _destroy() ends and frees it all.
 * Errors are -errno; the reason in words is iouring_bpf_ublk_server_strerror().
 * The man page iouring_bpf_ublk_server_start(3) says which signal the
 * library sends to its own threads.
 */
#define IOURING_BPF_UBLK_SERVE_KERNEL_PATH	(1U << 0)	/* also attach the policy's ublk_bpf_ops */
#define IOURING_BPF_UBLK_SERVE_USER_COPY	(1U << 1)	/* no policy: files[0] in user space, copies */
#define IOURING_BPF_UBLK_SERVE_KEEP_DEVICE	(1U << 2)	/* leave a device that ran, stopped, at the end */
/* never UBLK_F_AUTO_BUF_REG (default: when the kernel and the policy have it) */
#define IOURING_BPF_UBLK_SERVE_NO_AUTO_BUF_REG	(1U << 3)

struct iouring_bpf_ublk_server;

struct iouring_bpf_ublk_server_opts {
	size_t sz;			/* sizeof(struct iouring_bpf_ublk_server_opts) */
	const char *policy;		/* the ublk policy object (.bpf.o) */
	unsigned int nr_files;		/* backing files, 0..IOU_UBLK_MAX_FILES */
	const char *files[IOU_UBLK_MAX_FILES];	/* opened for reading and writing */
	__u64 dev_bytes;		/* device size; 0: the files' sizes added up */
	unsigned int queues;		/* 0: 1 */
	unsigned int depth;		/* per queue; 0: 64; at most IOU_UBLK_MAX_DEPTH */
	unsigned int max_io_bytes;	/* largest request; 0: 512 KiB */
	int dev_id;			/* the device number, or -1: the first free one */
	__u64 flags;			/* UBLK_F_* for ADD_DEV, besides the ones the server sets */
	unsigned int serve_flags;	/* IOURING_BPF_UBLK_SERVE_* */
	int signo;			/* what interrupts a stuck queue thread; 0: SIGUSR2 */
	/*
	 * Called by _start() in its thread once the device exists (after
	 * ADD_DEV), before it is set up; a negative return ends the start
	 * (the device is deleted) with that error. NULL: none.
	 */
	int (*on_added)(struct iouring_bpf_ublk_server *server, void *arg);
	/* what the server has to say (queue errors, teardown), one line each, no newline */
	void (*log)(const char *line, void *arg);
	void *arg;			/* for on_added and log */
};

int iouring_bpf_ublk_server_start(const struct iouring_bpf_ublk_server_opts *opts,
				  struct iouring_bpf_ublk_server **server);
int iouring_bpf_ublk_server_wait(struct iouring_bpf_ublk_server *server);
int iouring_bpf_ublk_server_stop(struct iouring_bpf_ublk_server *server);
int iouring_bpf_ublk_server_id(const struct iouring_bpf_ublk_server *server);
const struct ublksrv_ctrl_dev_info *
iouring_bpf_ublk_server_info(const struct iouring_bpf_ublk_server *server);
const char *iouring_bpf_ublk_server_strerror(const struct iouring_bpf_ublk_server *server);
void iouring_bpf_ublk_server_destroy(struct iouring_bpf_ublk_server *server);
int iouring_bpf_ublk_serve(const struct iouring_bpf_ublk_server_opts *opts);

/*
 * virtio-blk io_uring passthrough (kernel patches 23-25): IORING_OP_URING_CMD
 * with cmd_op VIRTBLK_URING_CMD_IO on /dev/vdXc0, on a ring set up with
 * IORING_SETUP_SQE128; struct virtblk_uring_cmd fills the SQE's cmd area.
 * The definitions below are the kernel's, for UAPI headers without them.
 */
#ifndef VIRTBLK_URING_CMD_IO
struct virtblk_uring_cmd {
	__u32 type;		/* VIRTIO_BLK_T_* */
	__u32 ioprio;		/* as for ioprio_set() */
	__u64 sector;		/* first 512-byte sector */
	__u64 data;		/* buffer, iovec array (F_VEC) or registered address */
	__u32 data_len;		/* bytes, iovec count (F_VEC) or range bytes */
	__u32 flag;		/* VIRTBLK_URING_CMD_F_* */
};
#define VIRTBLK_URING_CMD_F_VEC		(1U << 0)
#define VIRTBLK_URING_CMD_F_UNMAP	(1U << 1)
#define VIRTBLK_URING_CMD_IO		_IOWR('V', 0x80, struct virtblk_uring_cmd)
#endif
#ifndef VIRTIO_BLK_T_DISCARD
#define VIRTIO_BLK_T_DISCARD		11
#endif
#ifndef VIRTIO_BLK_T_WRITE_ZEROES
#define VIRTIO_BLK_T_WRITE_ZEROES	13
#endif
#ifndef IORING_URING_CMD_FIXED
#define IORING_URING_CMD_FIXED		(1U << 0)
#endif
#ifdef __cplusplus
static_assert(sizeof(struct virtblk_uring_cmd) == 32, "struct virtblk_uring_cmd is 32 bytes");
#else
_Static_assert(sizeof(struct virtblk_uring_cmd) == 32, "struct virtblk_uring_cmd is 32 bytes");
#endif

/* The command area of a 128-byte SQE, for fields the helpers leave 0 (ioprio). */
static inline struct virtblk_uring_cmd *iouring_bpf_vblk_cmd(struct io_uring_sqe *sqe)
{
	return (struct virtblk_uring_cmd *)sqe->cmd;
}

/*
 * "/dev/vdXc0" for the virtio-blk disk blockdev ("/dev/vdX" or a link to
 * it) in buf: 0, -ENODEV (not a whole virtio-blk disk with a passthrough
 * device), -ENAMETOOLONG (buf too short), or stat()'s -errno.
 */
int iouring_bpf_vblk_char_path(const char *blockdev, char *buf, size_t len);

/*
 * Fill a 128-byte SQE (zeroed first) with one passthrough command for the
 * open /dev/vdXc0 fd; sectors are 512 bytes. 0, or -EINVAL for a NULL sqe
 * (or a buf_index outside 0..65535).
 * The caller sets user_data (and IOSQE_FIXED_FILE, ioprio) afterwards.
 */
int iouring_bpf_vblk_prep_read(struct io_uring_sqe *sqe, int fd, void *buf, __u32 len,
			       __u64 sector);
int iouring_bpf_vblk_prep_write(struct io_uring_sqe *sqe, int fd, const void *buf, __u32 len,
				__u64 sector);
struct iovec;
int iouring_bpf_vblk_prep_readv(struct io_uring_sqe *sqe, int fd, const struct iovec *iov,
				unsigned int nr_vecs, __u64 sector);
int iouring_bpf_vblk_prep_writev(struct io_uring_sqe *sqe, int fd, const struct iovec *iov,
				 unsigned int nr_vecs, __u64 sector);
int iouring_bpf_vblk_prep_read_fixed(struct io_uring_sqe *sqe, int fd, void *buf, __u32 len,
				     __u64 sector, int buf_index);
int iouring_bpf_vblk_prep_write_fixed(struct io_uring_sqe *sqe, int fd, const void *buf,
				      __u32 len, __u64 sector, int buf_index);
int iouring_bpf_vblk_prep_flush(struct io_uring_sqe *sqe, int fd);
int iouring_bpf_vblk_prep_get_id(struct io_uring_sqe *sqe, int fd, void *buf, __u32 len);
int iouring_bpf_vblk_prep_discard(struct io_uring_sqe *sqe, int fd, __u64 sector, __u32 len);
int iouring_bpf_vblk_prep_write_zeroes(struct io_uring_sqe *sqe, int fd, __u64 sector,
				       __u32 len, bool unmap);

/*
 * --- Request filters and task restrictions (Linux 7.0's
 * IORING_REGISTER_BPF_FILTER and IORING_REGISTER_RESTRICTIONS on fd -1;
 * this project's 6.12 series has them). fd is a ring, or
 * IOURING_BPF_FILTER_TASK for the calling task: every ring it and the
 * tasks it forks create from then on, across exec. A task filter needs
 * no_new_privs (iouring_bpf_no_new_privs()) or CAP_SYS_ADMIN (-EACCES).
 * Filters only ever narrow what is allowed; none can be removed.
 */
#define IOURING_BPF_FILTER_TASK		(-1)
#define IOURING_BPF_REGISTER_BPF_FILTER	37

/* IORING_REGISTER_RESTRICTIONS' argument on fd -1 */
struct iouring_bpf_task_restriction {
	__u16	flags;
	__u16	nr_res;
	__u32	resv[3];
	struct io_uring_restriction restrictions[];
};

struct sock_filter;
int iouring_bpf_filter_add(int fd, unsigned int opcode, unsigned int flags,
			   const struct sock_filter *insns, unsigned int nr_insns,
			   unsigned int *pdu_size);
int iouring_bpf_filter_allow(int fd, const unsigned int *opcodes, unsigned int nr,
			     bool deny_rest);
int iouring_bpf_filter_deny(int fd, unsigned int opcode);
int iouring_bpf_filter_socket_families(int fd, const int *families, unsigned int nr);
int iouring_bpf_filter_connect_families(int fd, const int *families, unsigned int nr);
int iouring_bpf_filter_open(int fd, __u64 deny_flags, __u64 need_resolve);
int iouring_bpf_task_restrict(const struct io_uring_restriction *res, unsigned int nr);
int iouring_bpf_no_new_privs(void);
const char *iouring_bpf_opcode_name(unsigned int opcode);
int iouring_bpf_opcode_from_name(const char *name);

/* What a ring's fdinfo says is in force (this project's kernel series). */
struct iouring_bpf_ring_filters {
	bool	reported;		/* the kernel shows restrictions and filters */
	bool	sqe_restricted;		/* SQEs pass an allowlist */
	bool	reg_restricted;		/* register ops pass an allowlist */
	unsigned char nr_filters[256];	/* filters per opcode */
	bool	deny_rest[256];		/* denied by IO_URING_BPF_FILTER_DENY_REST */
};
int iouring_bpf_ring_filters_read(pid_t pid, int fd, struct iouring_bpf_ring_filters *out);

#ifdef __cplusplus
}
#endif

#endif
