/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fuzz/sqe: what the BPF program (sqe_fuzz.bpf.c) and user space
 * (sqe_fuzz.c) share. User space fills the value pools before load; the
 * program draws every SQE field from the pool its opcode's spec names, so
 * what the kernel may dereference (paths, iovecs, sockaddrs, fds that may
 * be closed) is only ever what user space vetted, and everything else is
 * free noise.
 */
#ifndef SQE_FUZZ_H
#define SQE_FUZZ_H

#define SQF_POOL_N	16		/* values per pool (power of two) */
#define SQF_SQE_LOG	1024		/* SQEs recorded per case (all of them) */
#define SQF_CQE_LOG	1024		/* CQEs recorded per case */
#define SQF_UD_TAG	0x5eed000000000000ULL
#define SQF_UD_MASK	0xffff000000000000ULL

/* Pools. Pointer and fd pools hold only safe values. */
enum sqf_class {
	FZ_ZERO,		/* 0 */
	FZ_MOSTLY0,	/* 0, now and then noise: fields a prep wants zero */
	FZ_NUM,		/* any number: edges, near edges, small, random */
	FZ_SMALL,	/* counts and small enums */
	FZ_ONE,		/* 1, now and then not */
	FZ_LEN,		/* byte counts */
	FZ_OFF,		/* file offsets, -1 = current position */
	FZ_FD,		/* a pool fd; a fixed-file index with IOSQE_FIXED_FILE */
	FZ_FDNUM,	/* a pool fd whatever the flags (dirfds, splice in, epoll) */
	FZ_FDCLOSE,	/* what CLOSE may close: the per-case files and noise */
	FZ_FIXED,	/* fixed-file indexes in and out of range */
	FZ_SLOT,		/* file_index of direct descriptors: 0, 1 + index, ALLOC */
	FZ_BUF,		/* buf_index / buf_group */
	FZ_PERS,		/* personality */
	FZ_DATA,		/* pointer into the data area, its edges, guard or garbage */
	FZ_MADV_ADDR,	/* page-aligned pointers for MADVISE */
	FZ_MADV_LEN,	/* MADVISE lengths: never past the guard */
	FZ_ADVICE,	/* MADVISE advice: none that poisons or frees memory */
	FZ_IOV,		/* iovec arrays (read-only page) */
	FZ_MSG,		/* msghdrs (read-only page) */
	FZ_PATH,		/* relative paths inside the temp dir, no ".." */
	FZ_XNAME,	/* xattr names */
	FZ_SADDR,	/* sockaddrs: loopback, unix sockets in the temp dir */
	FZ_SALEN,	/* sockaddr lengths */
	FZ_TS,		/* __kernel_timespecs */
	FZ_HOW,		/* struct open_how */
	FZ_HOWLEN,	/* its sizes */
	FZ_EPEV,		/* struct epoll_event */
	FZ_WAITV,	/* struct futex_waitv arrays */
	FZ_FDARR,	/* fd arrays for FILES_UPDATE */
	FZ_UD,		/* user_data of an SQE of this case */
	FZ_PBUF_N,	/* PROVIDE_BUFFERS counts */
	FZ_PBUF_LEN,	/* PROVIDE_BUFFERS sizes */
	FZ_DOMAIN,	/* socket domains: unix, inet, inet6, invalid */
	FZ_SOCKTYPE,	/* socket types */
	FZ_SOCKOPT,	/* level | optname << 32 for socket uring_cmds */
	FZ_CMDOP,	/* uring_cmd cmd_op */
	FZ_FUTEX,	/* futex2 flags */
	FZ_MODE,		/* file modes */
	FZ_FLAGS,	/* op flag words: random bits */
	FZ_RWF,		/* RWF_* */
	FZ_ATF,		/* AT_* */
	FZ_CANCELF,	/* IORING_ASYNC_CANCEL_* */
	FZ_SPLICEF,	/* SPLICE_F_*, SPLICE_F_FD_IN_FIXED */
	FZ_NETF,		/* send/recv/accept flags in ioprio */
	FZ_IOPRIO,	/* I/O priorities */
	FZ_MSGCMD,	/* MSG_RING commands */
	FZ_RINGFLAGS,	/* MSG_RING flags */
	FZ_TIMEOUT_FLAGS,
	FZ_NOP_FLAGS,
	FZ_WAITOPTS,	/* waitid options */
	SQF_NR_CLASSES
};

/* How a pool is drawn from. */
enum sqf_kind {
	FK_EXACT,	/* one of the values, nothing else */
	FK_NUM,		/* a value, a neighbour, a small number or noise */
	FK_BITS,		/* pool[0] is a mask of meaningful bits */
	FK_DATA,		/* random place in the data area, or a pool value */
	FK_UD,		/* an earlier SQE's user_data */
};

/* Which pool each SQE field of an opcode comes from. */
struct sqf_spec {
	__u8 fd, off, addr, len, opflags, buf, fdin, addr3, ioprio, pad2;
};

/* What the last loop_step did (sqf_state.last_action). */
enum { SQF_ACT_NONE, SQF_ACT_CONTINUE, SQF_ACT_STOP, SQF_ACT_BAD_RET, SQF_ACT_BAD_FLAGS };

/* One case's state; user space zeroes it and sets seed before attaching. */
struct sqf_state {
	__u64 seed;
	__u64 rng;
	__u32 started, done;
	__u32 steps, plan_steps;
	__u32 batches, plan_batches;
	__u32 written;		/* SQEs written: the fuzzer's units */
	__u32 submitted;	/* sum of what submit_sqes took */
	__u32 submit_calls, submit_errors;
	__s32 last_submit;
	__u32 step_calls;	/* loop_step invocations */
	__u32 last_action;
	__s32 last_ret;
	__u32 last_flags;	/* lp->flags the last step set */
	__u32 cqes;		/* CQEs reaped */
	__u32 msg_rings;	/* MSG_RING SQEs: CQEs this ring never asked for */
	__u32 ring_fail;	/* the CQ or SQ region was missing */
	__u32 unbounded_waits;	/* waits with no timeout (user space interrupts) */
};

struct sqf_cqe {
	__u64 user_data;
	__s32 res;
	__u32 flags;
};

#endif
