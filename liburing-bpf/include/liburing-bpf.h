/* SPDX-License-Identifier: (LGPL-2.1 OR MIT) */
/*
 * liburing-bpf: user-space side of iouring-bpf. This part: rings set up for
 * a BPF event loop (io_uring_bpf_ops), and running that loop.
 * All functions return 0 (or a count) on success and -errno on failure.
 */
#ifndef LIBURING_BPF_H
#define LIBURING_BPF_H

#include <stddef.h>
#include <linux/io_uring.h>
#include <iouring_bpf/geometry.h>
#include <iouring_bpf/dag.h>

#ifdef __cplusplus
extern "C" {
#endif

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
	/* for the policy's iou_geom global */
	struct iouring_bpf_geometry geom;
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
 * condition (enum iou_dag_cond). Errors are -errno; the reason in words is
 * iouring_bpf_dag_strerror().
 */
struct iouring_bpf_dag;

struct iouring_bpf_dag *iouring_bpf_dag_new(void);
void iouring_bpf_dag_free(struct iouring_bpf_dag *dag);
int iouring_bpf_dag_add_node(struct iouring_bpf_dag *dag, const struct iou_dag_node *tmpl);
int iouring_bpf_dag_add_edge(struct iouring_bpf_dag *dag, unsigned int parent,
			     unsigned int child, enum iou_dag_cond cond);
int iouring_bpf_dag_export(struct iouring_bpf_dag *dag, struct iou_dag_node *nodes,
			   unsigned int max_nodes, struct iou_dag_edge *edges,
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

#ifdef __cplusplus
}
#endif

#endif
