// SPDX-License-Identifier: GPL-2.0
/*
 * lib/ublk-prep-io-cmd (host): iouring_bpf_ublk_prep_io_cmd() lays out a
 * ublk I/O command where the driver reads it. With
 * IOURING_BPF_UBLK_AUTO_BUF_REG the struct ublk_auto_buf_reg goes in the
 * SQE's own addr field (byte 16), as mainline 6.16 reads it, and
 * ublksrv_io_cmd.addr (in the SQE's command area) stays 0; without it addr
 * is the command's. The flag is refused for anything but the two fetches.
 */
#include <stddef.h>
#include <stdint.h>
#include <liburing-bpf.h>
#include "selftest.h"

static const struct ublksrv_io_cmd *io_cmd(const struct io_uring_sqe *sqe)
{
	return (const struct ublksrv_io_cmd *)((const char *)sqe +
					       offsetof(struct io_uring_sqe, addr3));
}

int main(void)
{
	struct ublk_auto_buf_reg reg = { .index = 37, .flags = UBLK_AUTO_BUF_REG_FALLBACK };
	__u64 enc = ublk_auto_buf_reg_to_sqe_addr(&reg);
	struct io_uring_sqe sqe[2];
	__u64 at16;
	int ok = 1;

	ok &= CHECK(offsetof(struct io_uring_sqe, addr) == 16, "sqe->addr at %zu",
		    offsetof(struct io_uring_sqe, addr));
	ok &= CHECK(enc == (37 | 1ULL << 16), "encoded 0x%llx", (unsigned long long)enc);

	ok &= CHECK_OK(iouring_bpf_ublk_prep_io_cmd(sqe, UBLK_U_IO_COMMIT_AND_FETCH_REQ, 0,
						    IOURING_BPF_UBLK_FIXED_FILE |
						    IOURING_BPF_UBLK_AUTO_BUF_REG,
						    1, 5, 4096, enc), "auto commit");
	memcpy(&at16, (char *)sqe + 16, sizeof(at16));
	ok &= CHECK(at16 == enc, "SQE bytes 16-23 hold 0x%llx, want 0x%llx",
		    (unsigned long long)at16, (unsigned long long)enc);
	ok &= CHECK(io_cmd(sqe)->addr == 0, "ublksrv_io_cmd.addr 0x%llx, want 0",
		    (unsigned long long)io_cmd(sqe)->addr);
	ok &= CHECK(io_cmd(sqe)->q_id == 1 && io_cmd(sqe)->tag == 5 &&
		    io_cmd(sqe)->result == 4096, "q_id %u tag %u result %d",
		    io_cmd(sqe)->q_id, io_cmd(sqe)->tag, io_cmd(sqe)->result);
	reg = ublk_sqe_addr_to_auto_buf_reg(sqe->addr);
	ok &= CHECK(reg.index == 37 && reg.flags == UBLK_AUTO_BUF_REG_FALLBACK &&
		    !reg.reserved0 && !reg.reserved1, "decoded index %u flags %u",
		    reg.index, reg.flags);

	ok &= CHECK_OK(iouring_bpf_ublk_prep_io_cmd(sqe, UBLK_U_IO_FETCH_REQ, 3, 0, 0, 2, 0,
						    0x7000), "copy fetch");
	ok &= CHECK(sqe->addr == 0 && io_cmd(sqe)->addr == 0x7000,
		    "copy fetch: sqe->addr 0x%llx cmd addr 0x%llx",
		    (unsigned long long)sqe->addr, (unsigned long long)io_cmd(sqe)->addr);

	ok &= CHECK(iouring_bpf_ublk_prep_io_cmd(sqe, UBLK_U_IO_REGISTER_IO_BUF, 3,
						 IOURING_BPF_UBLK_AUTO_BUF_REG, 0, 2, 0, 2) ==
		    -EINVAL, "AUTO_BUF_REG with REGISTER_IO_BUF accepted");
	ok &= CHECK(iouring_bpf_ublk_prep_io_cmd(sqe, UBLK_U_IO_FETCH_REQ, 3, 1U << 7, 0, 2, 0,
						 0) == -EINVAL, "unknown flag accepted");
	if (!ok)
		return KSFT_FAIL;
	printf("prep_io_cmd: auto-registration descriptor in sqe->addr, command addr 0\n");
	return KSFT_PASS;
}
