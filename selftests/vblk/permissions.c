// SPDX-License-Identifier: GPL-2.0
/*
 * vblk/permissions (VM): the character device's permission model, as
 * kernel/README.md states it, seen by an unprivileged user (a child that
 * becomes uid/gid 65534, "nobody", with no supplementary groups):
 * - the node is root:root 0600: opening it for reading or writing fails
 *   with EACCES;
 * - after chmod 0666: it opens; IN returns the disk's data and GET_ID its
 *   serial on an O_RDONLY file, where OUT, FLUSH, DISCARD and WRITE_ZEROES
 *   are refused with -EACCES and change nothing; on an O_RDWR file OUT
 *   works (no capability is checked), and a real-time I/O priority is
 *   refused with -EPERM (CAP_SYS_NICE, as ioprio_set()) where a best-effort
 *   one works;
 * - the mode is restored afterwards (also when a check fails).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <linux/ioprio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "vblk.h"

#define NOBODY	65534
#define AREA	(64 * 1024)
#define OFF	(8ULL << 20)	/* where this test writes: 8 MiB into the disk */

static bool expect(struct io_uring *ring, int want, const char *what)
{
	int res = run_sqe(ring);

	return CHECK(res == want, "as uid %d: %s: res %d, want %d", (int)getuid(), what, res, want);
}

/* What the unprivileged child checks; its exit status is the verdict. */
static int child(const struct disk *d, bool opened_mode, const char *pat, const char *pat2)
{
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	unsigned char id[20];
	bool ok = true;
	char *buf;
	int fd;

	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY)) {
		perror("dropping privileges");
		return KSFT_FAIL;
	}
	if (!CHECK(getuid() == NOBODY && geteuid() == NOBODY, "still uid %d", (int)geteuid()))
		return KSFT_FAIL;
	if (!opened_mode) {
		fd = open(d->chr, O_RDONLY);
		ok &= CHECK(fd < 0 && errno == EACCES, "open O_RDONLY at mode 0600: %d (%s)", fd,
			    fd < 0 ? strerror(errno) : "opened");
		fd = open(d->chr, O_RDWR);
		ok &= CHECK(fd < 0 && errno == EACCES, "open O_RDWR at mode 0600: %d (%s)", fd,
			    fd < 0 ? strerror(errno) : "opened");
		fd = open(d->blk, O_RDONLY);
		ok &= CHECK(fd < 0 && errno == EACCES, "open %s: %d", d->blk, fd);
		printf("uid %d: %s refused (EACCES) at mode 0600\n", NOBODY, d->chr);
		return ok ? KSFT_PASS : KSFT_FAIL;
	}
	buf = alloc_buf(AREA);
	if (!buf || ring_init(&ring, 4, 0))
		return KSFT_FAIL;
	fd = open(d->chr, O_RDONLY);
	if (!CHECK(fd >= 0, "open O_RDONLY at mode 0666: %s", strerror(errno)))
		return KSFT_FAIL;
	memset(buf, 0, AREA);
	ok &= CHECK(vblk_read(&ring, fd, buf, AREA, OFF / 512) == 0, "IN as nobody") &&
	      same(buf, pat, AREA, "IN as nobody: the data root wrote");
	memset(id, 0, sizeof(id));
	ok &= CHECK(vblk_get_id(&ring, fd, id, 20) == 0 && !strncmp((char *)id, d->serial, 20),
		    "GET_ID as nobody: '%.20s'", id);
	iouring_bpf_vblk_prep_write(sqe_get(&ring), fd, pat2, AREA, OFF / 512);
	ok &= expect(&ring, -EACCES, "OUT on O_RDONLY");
	iouring_bpf_vblk_prep_flush(sqe_get(&ring), fd);
	ok &= expect(&ring, -EACCES, "FLUSH on O_RDONLY");
	iouring_bpf_vblk_prep_discard(sqe_get(&ring), fd, OFF / 512, AREA);
	ok &= expect(&ring, -EACCES, "DISCARD on O_RDONLY");
	iouring_bpf_vblk_prep_write_zeroes(sqe_get(&ring), fd, OFF / 512, AREA, true);
	ok &= expect(&ring, -EACCES, "WRITE_ZEROES on O_RDONLY");
	memset(buf, 0, AREA);
	ok &= CHECK(vblk_read(&ring, fd, buf, AREA, OFF / 512) == 0, "IN as nobody") &&
	      same(buf, pat, AREA, "after the refused writes: the data root wrote");
	close(fd);

	/* O_RDWR: writes work without any capability */
	fd = open(d->chr, O_RDWR);
	if (!CHECK(fd >= 0, "open O_RDWR at mode 0666: %s", strerror(errno)))
		return KSFT_FAIL;
	iouring_bpf_vblk_prep_write(sqe_get(&ring), fd, pat2, AREA, OFF / 512);
	ok &= expect(&ring, 0, "OUT on O_RDWR");
	iouring_bpf_vblk_prep_flush(sqe_get(&ring), fd);
	ok &= expect(&ring, 0, "FLUSH on O_RDWR");
	/* a real-time I/O priority needs CAP_SYS_NICE */
	sqe = sqe_get(&ring);
	iouring_bpf_vblk_prep_read(sqe, fd, buf, 4096, OFF / 512);
	iouring_bpf_vblk_cmd(sqe)->ioprio = IOPRIO_PRIO_VALUE(IOPRIO_CLASS_RT, 0);
	ok &= expect(&ring, -EPERM, "IN with a real-time I/O priority");
	sqe = sqe_get(&ring);
	iouring_bpf_vblk_prep_read(sqe, fd, buf, 4096, OFF / 512);
	iouring_bpf_vblk_cmd(sqe)->ioprio = IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 4);
	ok &= expect(&ring, 0, "IN with a best-effort I/O priority");
	close(fd);
	io_uring_queue_exit(&ring);
	printf("uid %d at mode 0666: IN and GET_ID work on O_RDONLY, writes -EACCES; "
	       "OUT works on O_RDWR\n", NOBODY);
	return ok ? KSFT_PASS : KSFT_FAIL;
}

static bool run_child(const struct disk *d, bool open_mode, const char *pat, const char *pat2)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();

	if (!CHECK(pid >= 0, "fork: %s", strerror(errno)))
		return false;
	if (!pid) {
		_exit(child(d, open_mode, pat, pat2));
	}
	if (!CHECK(waitpid(pid, &status, 0) == pid, "waitpid"))
		return false;
	return CHECK(WIFEXITED(status) && WEXITSTATUS(status) == KSFT_PASS,
		     "the unprivileged child failed (status %#x)", status);
}

int test_permissions(void)
{
	struct disk d;
	struct stat st;
	char *pat, *pat2, *buf;
	bool ok = true;
	int blk;

	arm_alarm(110, "vblk/permissions");
	if (disk_find(SERIAL_NOPOLL, &d))
		return KSFT_FAIL;
	if (!CHECK(!stat(d.chr, &st), "stat %s: %s", d.chr, strerror(errno)))
		return KSFT_FAIL;
	if (!CHECK((st.st_mode & 07777) == 0600 && st.st_uid == 0 && st.st_gid == 0,
		   "%s is %o %u:%u, want 0600 root:root", d.chr, st.st_mode & 07777, st.st_uid,
		   st.st_gid))
		return KSFT_FAIL;
	pat = alloc_buf(AREA);
	pat2 = alloc_buf(AREA);
	buf = alloc_buf(AREA);
	blk = blk_open(&d, O_RDWR);
	if (!pat || !pat2 || !buf || blk < 0)
		return KSFT_FAIL;
	fill_pattern(pat, AREA, OFF, 0x600);
	fill_pattern(pat2, AREA, OFF, 0x666);
	if (!CHECK(!blk_pwrite(blk, pat, AREA, OFF), "writing the pattern"))
		return KSFT_FAIL;

	ok &= run_child(&d, false, pat, pat2);
	if (!CHECK(!chmod(d.chr, 0666), "chmod 0666 %s: %s", d.chr, strerror(errno)))
		return KSFT_FAIL;
	ok &= run_child(&d, true, pat, pat2);
	ok &= CHECK(!chmod(d.chr, st.st_mode & 07777), "restoring mode %o of %s: %s",
		    st.st_mode & 07777, d.chr, strerror(errno));
	/* the child's OUT on O_RDWR reached the disk */
	ok &= CHECK(!blk_pread(blk, buf, AREA, OFF), "reading back") &&
	      same(buf, pat2, AREA, "what nobody wrote on O_RDWR");
	close(blk);
	return ok ? KSFT_PASS : KSFT_FAIL;
}
