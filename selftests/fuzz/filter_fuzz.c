// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz/filter: random classic BPF filters and requests against
 * IORING_REGISTER_BPF_FILTER.
 *
 * Each case builds a program from a mix of valid and invalid instructions
 * (loads at any offset, every ALU and jump form, jumps past the end,
 * divisions by zero), registers it for NOP with random flags and payload
 * size, for NOP or for SOCKET, and checks the result against what the
 * interface allows (0, -EINVAL, -EMSGSIZE, the kernel's payload size
 * written back). For an accepted program it runs requests of that opcode
 * with random user_data and SQE flags (SOCKET: random family, type and
 * flags) and compares each verdict with this file's own classic BPF
 * interpreter on the same context, which the SQE determines in full. See
 * fuzz.h for the options.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/socket.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/filter.h>
#include <linux/io_uring/bpf_filter.h>
#include <liburing.h>

#include "fuzz.h"

#define REGISTER_BPF_FILTER	37
#define MAX_INSNS		24
#define SOCKET_PDU		12	/* family, type, protocol */

static int add_filter(int fd, struct io_uring_bpf *reg)
{
	int ret = syscall(__NR_io_uring_register, fd, REGISTER_BPF_FILTER, reg, 1);

	return ret < 0 ? -errno : ret;
}

/* what the kernel accepts (io_uring's subset of classic BPF) */
static bool insn_allowed(const struct sock_filter *f, unsigned int pc, unsigned int len)
{
	switch (f->code) {
	case BPF_LD | BPF_W | BPF_ABS:
		return f->k < sizeof(struct io_uring_bpf_ctx) && !(f->k & 3);
	case BPF_LD | BPF_W | BPF_LEN: case BPF_LDX | BPF_W | BPF_LEN:
	case BPF_RET | BPF_K: case BPF_RET | BPF_A:
	case BPF_ALU | BPF_ADD | BPF_K: case BPF_ALU | BPF_ADD | BPF_X:
	case BPF_ALU | BPF_SUB | BPF_K: case BPF_ALU | BPF_SUB | BPF_X:
	case BPF_ALU | BPF_MUL | BPF_K: case BPF_ALU | BPF_MUL | BPF_X:
	case BPF_ALU | BPF_DIV | BPF_X:
	case BPF_ALU | BPF_AND | BPF_K: case BPF_ALU | BPF_AND | BPF_X:
	case BPF_ALU | BPF_OR | BPF_K: case BPF_ALU | BPF_OR | BPF_X:
	case BPF_ALU | BPF_XOR | BPF_K: case BPF_ALU | BPF_XOR | BPF_X:
	case BPF_ALU | BPF_LSH | BPF_X: case BPF_ALU | BPF_RSH | BPF_X:
	case BPF_ALU | BPF_NEG:
	case BPF_LD | BPF_IMM: case BPF_LDX | BPF_IMM:
	case BPF_MISC | BPF_TAX: case BPF_MISC | BPF_TXA:
		return true;
	case BPF_ALU | BPF_DIV | BPF_K:
		return f->k != 0;		/* the classic checker refuses it */
	case BPF_ALU | BPF_LSH | BPF_K: case BPF_ALU | BPF_RSH | BPF_K:
		return f->k < 32;
	case BPF_LD | BPF_MEM: case BPF_LDX | BPF_MEM:
	case BPF_ST: case BPF_STX:
		return f->k < BPF_MEMWORDS;
	case BPF_JMP | BPF_JA:
		return f->k < len - pc - 1;
	case BPF_JMP | BPF_JEQ | BPF_K: case BPF_JMP | BPF_JEQ | BPF_X:
	case BPF_JMP | BPF_JGE | BPF_K: case BPF_JMP | BPF_JGE | BPF_X:
	case BPF_JMP | BPF_JGT | BPF_K: case BPF_JMP | BPF_JGT | BPF_X:
	case BPF_JMP | BPF_JSET | BPF_K: case BPF_JMP | BPF_JSET | BPF_X:
		return pc + 1 + f->jt < len && pc + 1 + f->jf < len;
	}
	return false;
}

/*
 * Also the classic checker's: the last instruction returns, and no memory
 * word is read before every path wrote it. The second is hard to predict
 * here, so programs that read M[] are not compared (any result is allowed).
 */
static bool reads_mem(const struct sock_filter *p, unsigned int len)
{
	for (unsigned int i = 0; i < len; i++)
		if (p[i].code == (BPF_LD | BPF_MEM) || p[i].code == (BPF_LDX | BPF_MEM))
			return true;
	return false;
}

/* the verdict of a classic program on @ctx (non-zero: allow) */
static uint32_t interpret(const struct sock_filter *p, unsigned int len, const uint8_t *ctx)
{
	uint32_t a = 0, x = 0, m[BPF_MEMWORDS] = { 0 };

	for (unsigned int pc = 0; pc < len; pc++) {
		const struct sock_filter *f = &p[pc];

		switch (f->code) {
		case BPF_LD | BPF_W | BPF_ABS: memcpy(&a, ctx + f->k, 4); break;
		case BPF_LD | BPF_W | BPF_LEN: a = sizeof(struct io_uring_bpf_ctx); break;
		case BPF_LDX | BPF_W | BPF_LEN: x = sizeof(struct io_uring_bpf_ctx); break;
		case BPF_RET | BPF_K: return f->k;
		case BPF_RET | BPF_A: return a;
		case BPF_ALU | BPF_ADD | BPF_K: a += f->k; break;
		case BPF_ALU | BPF_ADD | BPF_X: a += x; break;
		case BPF_ALU | BPF_SUB | BPF_K: a -= f->k; break;
		case BPF_ALU | BPF_SUB | BPF_X: a -= x; break;
		case BPF_ALU | BPF_MUL | BPF_K: a *= f->k; break;
		case BPF_ALU | BPF_MUL | BPF_X: a *= x; break;
		case BPF_ALU | BPF_DIV | BPF_K: a /= f->k; break;
		case BPF_ALU | BPF_DIV | BPF_X:
			if (!x)
				return 0;	/* a division by zero ends the program with 0 */
			a /= x;
			break;
		case BPF_ALU | BPF_AND | BPF_K: a &= f->k; break;
		case BPF_ALU | BPF_AND | BPF_X: a &= x; break;
		case BPF_ALU | BPF_OR | BPF_K: a |= f->k; break;
		case BPF_ALU | BPF_OR | BPF_X: a |= x; break;
		case BPF_ALU | BPF_XOR | BPF_K: a ^= f->k; break;
		case BPF_ALU | BPF_XOR | BPF_X: a ^= x; break;
		case BPF_ALU | BPF_LSH | BPF_K: a <<= f->k; break;
		case BPF_ALU | BPF_LSH | BPF_X: a <<= x & 31; break;	/* as eBPF's ALU32 */
		case BPF_ALU | BPF_RSH | BPF_K: a >>= f->k; break;
		case BPF_ALU | BPF_RSH | BPF_X: a >>= x & 31; break;
		case BPF_ALU | BPF_NEG: a = -a; break;
		case BPF_LD | BPF_IMM: a = f->k; break;
		case BPF_LDX | BPF_IMM: x = f->k; break;
		case BPF_LD | BPF_MEM: a = m[f->k]; break;
		case BPF_LDX | BPF_MEM: x = m[f->k]; break;
		case BPF_ST: m[f->k] = a; break;
		case BPF_STX: m[f->k] = x; break;
		case BPF_MISC | BPF_TAX: x = a; break;
		case BPF_MISC | BPF_TXA: a = x; break;
		case BPF_JMP | BPF_JA: pc += f->k; break;
		case BPF_JMP | BPF_JEQ | BPF_K: pc += a == f->k ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JEQ | BPF_X: pc += a == x ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JGE | BPF_K: pc += a >= f->k ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JGE | BPF_X: pc += a >= x ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JGT | BPF_K: pc += a > f->k ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JGT | BPF_X: pc += a > x ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JSET | BPF_K: pc += (a & f->k) ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JSET | BPF_X: pc += (a & x) ? f->jt : f->jf; break;
		}
	}
	return 0;
}

static const uint16_t codes[] = {
	BPF_LD | BPF_W | BPF_ABS, BPF_LD | BPF_W | BPF_ABS, BPF_LD | BPF_W | BPF_ABS,
	BPF_LD | BPF_H | BPF_ABS, BPF_LD | BPF_B | BPF_ABS, BPF_LD | BPF_W | BPF_IND,
	BPF_LD | BPF_W | BPF_LEN, BPF_LDX | BPF_W | BPF_LEN, BPF_LDX | BPF_B | BPF_MSH,
	BPF_RET | BPF_K, BPF_RET | BPF_A,
	BPF_ALU | BPF_ADD | BPF_K, BPF_ALU | BPF_SUB | BPF_X, BPF_ALU | BPF_MUL | BPF_K,
	BPF_ALU | BPF_DIV | BPF_K, BPF_ALU | BPF_DIV | BPF_X, BPF_ALU | BPF_MOD | BPF_K,
	BPF_ALU | BPF_AND | BPF_K, BPF_ALU | BPF_OR | BPF_X, BPF_ALU | BPF_XOR | BPF_K,
	BPF_ALU | BPF_LSH | BPF_K, BPF_ALU | BPF_RSH | BPF_X, BPF_ALU | BPF_NEG,
	BPF_LD | BPF_IMM, BPF_LDX | BPF_IMM, BPF_LD | BPF_MEM, BPF_ST, BPF_STX,
	BPF_MISC | BPF_TAX, BPF_MISC | BPF_TXA, BPF_JMP | BPF_JA,
	BPF_JMP | BPF_JEQ | BPF_K, BPF_JMP | BPF_JEQ | BPF_X, BPF_JMP | BPF_JGE | BPF_K,
	BPF_JMP | BPF_JGT | BPF_X, BPF_JMP | BPF_JSET | BPF_K,
};

static void random_insn(struct fuzz_rng *r, struct sock_filter *f, unsigned int pc,
			unsigned int len)
{
	static const uint64_t ks[] = { 0, 1, 2, 3, 4, 8, 12, 16, 20, 36, 40, 44, 31, 32,
				       0xffffffff, 0x80000000 };

	f->code = codes[fuzz_below(r, sizeof(codes) / sizeof(codes[0]))];
	f->k = (uint32_t)fuzz_pick(r, ks, sizeof(ks) / sizeof(ks[0]));
	if (BPF_CLASS(f->code) == BPF_LD && BPF_MODE(f->code) == BPF_ABS && fuzz_chance(r, 3, 4))
		f->k = (uint32_t)fuzz_below(r, 11) * 4;	/* mostly inside the context */
	if (BPF_CLASS(f->code) == BPF_JMP) {
		unsigned int room = len - pc - 1;

		f->jt = (uint8_t)(fuzz_chance(r, 9, 10) && room ? fuzz_below(r, room) : fuzz_next(r));
		f->jf = (uint8_t)(fuzz_chance(r, 9, 10) && room ? fuzz_below(r, room) : fuzz_next(r));
		if (f->code == (BPF_JMP | BPF_JA))
			f->k = fuzz_chance(r, 9, 10) && room ? (uint32_t)fuzz_below(r, room) : f->k;
	}
	if ((f->code == BPF_ST || f->code == BPF_STX || f->code == (BPF_LD | BPF_MEM)) &&
	    fuzz_chance(r, 7, 8))
		f->k = (uint32_t)fuzz_below(r, BPF_MEMWORDS);
}

int main(int argc, char **argv)
{
	struct fuzz_run run;
	uint64_t case_seed;
	int ret = fuzz_init(&run, "filter", "requests", argc, argv);

	if (ret)
		return ret > 0 ? 0 : 2;
	while (fuzz_next_case(&run, &case_seed)) {
		struct fuzz_rng r = { case_seed };
		struct sock_filter prog[MAX_INSNS];
		struct io_uring_bpf reg;
		struct io_uring ring;
		unsigned int len = 1 + (unsigned int)fuzz_below(&r, MAX_INSNS);
		bool valid = true, compare;

		for (unsigned int pc = 0; pc < len; pc++)
			random_insn(&r, &prog[pc], pc, len);
		if (fuzz_chance(&r, 1, 2))	/* mostly end in a return */
			prog[len - 1] = (struct sock_filter)BPF_STMT(fuzz_chance(&r, 1, 2) ?
					BPF_RET | BPF_A : BPF_RET | BPF_K, (uint32_t)fuzz_below(&r, 3));
		valid = true;
		for (unsigned int pc = 0; pc < len; pc++)
			valid &= insn_allowed(&prog[pc], pc, len);
		valid &= BPF_CLASS(prog[len - 1].code) == BPF_RET;
		compare = valid && !reads_mem(prog, len);

		if (io_uring_queue_init(8, &ring, 0)) {
			fuzz_failed(&run, case_seed, "io_uring_queue_init");
			continue;
		}
		bool sock = fuzz_chance(&r, 1, 2);
		unsigned int pdu = sock ? SOCKET_PDU : 0;
		static const uint8_t pdus[] = { 0, 4, 8, 12, 16, 24 };
		bool msgsize;

		memset(&reg, 0, sizeof(reg));
		reg.cmd_type = IO_URING_BPF_CMD_FILTER;
		reg.filter.opcode = sock ? IORING_OP_SOCKET : IORING_OP_NOP;
		reg.filter.flags = fuzz_chance(&r, 1, 8) ? IO_URING_BPF_FILTER_SZ_STRICT : 0;
		reg.filter.pdu_size = fuzz_chance(&r, 1, 4) ?
			pdus[fuzz_below(&r, sizeof(pdus))] : pdu;
		reg.filter.filter_len = len;
		reg.filter.filter_ptr = (uint64_t)(uintptr_t)prog;
		/* more than the kernel fills, or (SZ_STRICT) other than it */
		msgsize = reg.filter.pdu_size > pdu ||
			  (reg.filter.flags & IO_URING_BPF_FILTER_SZ_STRICT &&
			   reg.filter.pdu_size != pdu);
		ret = add_filter(ring.ring_fd, &reg);
		if (run.verbose)
			printf("case %#" PRIx64 ": %s, %u insns, %s, pdu %u -> %d\n", case_seed,
			       sock ? "SOCKET" : "NOP", len, valid ? "valid" : "invalid",
			       reg.filter.pdu_size, ret);
		if (reg.filter.pdu_size != pdu)
			fuzz_failed(&run, case_seed, "%s payload size written back: %u, want %u",
				    sock ? "SOCKET" : "NOP", reg.filter.pdu_size, pdu);
		if (msgsize != (ret == -EMSGSIZE))
			fuzz_failed(&run, case_seed, "payload size check: %d", ret);
		if (ret == -EMSGSIZE) {
			/* checked before the program: only the payload size decides */
			io_uring_queue_exit(&ring);
			continue;
		}
		if (ret != 0 && ret != -EINVAL) {
			fuzz_failed(&run, case_seed, "registration returned %d", ret);
		} else if (compare && ret == -EINVAL) {
			/*
			 * an over-strict checker refuses what the interpreter
			 * accepts (a program reading M[] may be refused for a word
			 * some path leaves unwritten, which is not modelled here)
			 */
			fuzz_failed(&run, case_seed, "a valid program was refused (-EINVAL)");
		} else if (!valid && ret == 0 && !reads_mem(prog, len)) {
			fuzz_failed(&run, case_seed, "an invalid program was accepted");
		} else if (ret == 0 && compare) {
			for (int i = 0; i < 8; i++) {
				struct io_uring_bpf_ctx ctx = { 0 };
				struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
				struct io_uring_cqe *cqe;
				uint64_t ud = fuzz_next(&r);
				int want;

				static const int families[] = { AF_UNIX, AF_INET, AF_INET6,
								AF_NETLINK, 4242 };
				static const int types[] = { SOCK_STREAM, SOCK_DGRAM, SOCK_RAW,
							     SOCK_SEQPACKET };
				bool allowed;

				if (sock) {
					int family = families[fuzz_below(&r, 5)];
					int type = types[fuzz_below(&r, 4)];

					if (fuzz_chance(&r, 1, 3))
						type |= SOCK_CLOEXEC;
					if (fuzz_chance(&r, 1, 3))
						type |= SOCK_NONBLOCK;
					io_uring_prep_socket(sqe, family, type, 0, 0);
					ctx.opcode = IORING_OP_SOCKET;
					ctx.pdu_size = SOCKET_PDU;
					ctx.socket.family = family;
					ctx.socket.type = type;
				} else {
					io_uring_prep_nop(sqe);
					ctx.opcode = IORING_OP_NOP;
				}
				io_uring_sqe_set_data64(sqe, ud);
				if (fuzz_chance(&r, 1, 4))
					sqe->flags |= IOSQE_ASYNC;
				ctx.user_data = ud;
				ctx.sqe_flags = sqe->flags;
				allowed = interpret(prog, len, (const uint8_t *)&ctx);
				io_uring_submit(&ring);
				if (io_uring_wait_cqe(&ring, &cqe)) {
					fuzz_failed(&run, case_seed, "no CQE");
					break;
				}
				/*
				 * An allowed SOCKET may still fail (an unknown family), but
				 * never with the denial's -EACCES: root may create all these.
				 */
				want = allowed ? 0 : -EACCES;
				if (sock && cqe->res >= 0)
					close(cqe->res);
				if (sock ? (cqe->res == -EACCES) == allowed : cqe->res != want)
					fuzz_failed(&run, case_seed,
						    "%s user_data %#" PRIx64 " flags %#x: res %d, "
						    "the interpreter says %s", sock ? "SOCKET" : "NOP",
						    ud, ctx.sqe_flags, cqe->res,
						    allowed ? "allow" : "deny");
				io_uring_cqe_seen(&ring, cqe);
				run.units++;
			}
		}
		io_uring_queue_exit(&ring);
	}
	/* a run that compared no verdict checked nothing of the filters */
	if (!run.units && !run.replay)
		fuzz_failed(&run, run.seed, "no verdict was compared with the interpreter");
	return fuzz_finish(&run);
}
