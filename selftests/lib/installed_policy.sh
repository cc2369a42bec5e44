#!/usr/bin/env bash
# lib/installed-policy (host, then a VM): a program built from the
# installed files only opens, loads and runs a ready policy on the patched
# kernel. It installs into a scratch prefix and builds in a clean
# environment (no build-tree path anywhere, pkg-config told only where the
# install's .pc file is), once against the shared library and once against
# the static archive (pkg-config --static); both programs then run in a VM
# of their own. The program must run on the libbpf inside liburing-bpf, not
# on a distribution libbpf the dynamic loader would otherwise pick up. A
# third program, of the request-filter API, runs there as nobody: a task
# filter that allows NOP only.
# (Installing the ~1000 files in the guest would take minutes under TCG.)
set -u
fail() { echo "FAIL: $*"; exit 1; }
user=$IOURING_BPF_BUILD/user
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
chmod 755 "$dest"	# nobody runs a program from it in the VM

cmake --install "$user" --prefix "$dest/usr" > /dev/null || fail "cmake --install"
pc=$(dirname "$(ls "$dest"/usr/lib*/{,*/}pkgconfig/liburing-bpf.pc 2>/dev/null | head -n1)")
[ -f "$pc/liburing-bpf.pc" ] || fail "no liburing-bpf.pc installed"

cat > "$dest/run_nops.c" <<'C'
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <liburing-bpf.h>

int main(void)
{
	struct iouring_bpf_policy *policy = NULL;
	struct iouring_bpf_ring ring;
	char path[PATH_MAX];
	__u32 total = 64, inflight = 4;
	__u64 completed = 0;
	int ret, status = -1;

	ret = iouring_bpf_policy_find("nops.bpf.o", path, sizeof(path));
	if (ret) {
		fprintf(stderr, "find nops.bpf.o: %s\n", strerror(-ret));
		return 1;
	}
	printf("policy %s\n", path);
	ret = iouring_bpf_ring_init(&ring, 16, 0, IOURING_BPF_RING_FLAGS);
	if (ret) {
		fprintf(stderr, "ring: %s\n", strerror(-ret));
		return 1;
	}
	ret = iouring_bpf_policy_open(path, &policy);
	if (!ret)
		ret = iouring_bpf_policy_set_global(policy, "nop_total", &total, sizeof(total));
	if (!ret)
		ret = iouring_bpf_policy_set_global(policy, "nop_inflight", &inflight,
						    sizeof(inflight));
	if (!ret)
		ret = iouring_bpf_policy_set_ring(policy, &ring);
	if (!ret)
		ret = iouring_bpf_policy_load(policy);
	if (!ret)
		ret = iouring_bpf_policy_attach(policy);
	if (!ret)
		ret = iouring_bpf_policy_run(policy, &ring, &status);
	if (!ret)
		ret = iouring_bpf_policy_get_global(policy, "nop_completed", &completed,
						    sizeof(completed));
	if (ret)
		fprintf(stderr, "policy: %s (%s)\n", strerror(-ret),
			iouring_bpf_policy_strerror(policy));
	else
		printf("%llu NOPs completed, exit status %d\n",
		       (unsigned long long)completed, status);
	iouring_bpf_policy_close(policy);
	iouring_bpf_ring_exit(&ring);
	return ret || status || completed != total;
}
C

# the request-filter API from the installed header alone: Debian 12's UAPI
# headers have no <linux/io_uring/bpf_filter.h>, so the header's own
# definitions are what this program compiles against
cat > "$dest/sandbox_self.c" <<'C'
#define _GNU_SOURCE	/* liburing.h needs sigset_t and AT_FDCWD */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <liburing.h>
#include <liburing-bpf.h>

static int one(struct io_uring *ring, int read_fd)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	static char buf[8];
	int ret;

	if (read_fd < 0)
		io_uring_prep_nop(sqe);
	else
		io_uring_prep_read(sqe, read_fd, buf, sizeof(buf), 0);
	ret = io_uring_submit_and_wait(ring, 1);
	if (ret < 0)
		return ret;
	ret = io_uring_peek_cqe(ring, &cqe);
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return ret;
}

int main(void)
{
	const unsigned int allow[] = { IORING_OP_NOP };
	struct io_uring ring;
	int fd = open("/dev/zero", O_RDONLY), ret, nop, rd;

	ret = iouring_bpf_no_new_privs();
	if (!ret)
		ret = iouring_bpf_filter_allow(-1, allow, 1, true);
	if (ret) {
		fprintf(stderr, "task filter: %s\n", strerror(-ret));
		return 1;
	}
	ret = io_uring_queue_init(4, &ring, 0);
	if (ret) {
		fprintf(stderr, "ring: %s\n", strerror(-ret));
		return 1;
	}
	nop = one(&ring, -1);
	rd = one(&ring, fd);
	printf("sandboxed: NOP %d, READ %d\n", nop, rd);
	io_uring_queue_exit(&ring);
	return nop != 0 || rd != -EACCES;
}
C

# clean KIND: run "$@" with nothing of the caller's environment
clean() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/nonexistent LANG=C "$@"; }
pkgconf() { clean PKG_CONFIG_PATH="$pc" pkg-config --define-prefix "$@" liburing-bpf; }

cflags=$(pkgconf --cflags) || fail "pkg-config --cflags liburing-bpf fails on the install alone"
libs=$(pkgconf --libs) || fail "pkg-config --libs liburing-bpf fails on the install alone"
slibs=$(pkgconf --static --libs) || fail "pkg-config --static --libs liburing-bpf fails"
libdir=$(pkgconf --variable=libdir)
f="$cflags $libs $slibs"
case $f in
*"$IOURING_BPF_BUILD"*|*"$IOURING_BPF_SRC"*) fail "pkg-config names the build tree: $f" ;;
esac
echo "pkg-config: $cflags $libs"

clean cc -std=c11 -Wall -Werror -o "$dest/shared" "$dest/run_nops.c" $cflags $libs \
	-Wl,-rpath,"$libdir" || fail "the program does not build against the installed library"
# the static archive, then what it needs (Libs.private); installed in
# BINDIR, where the library finds LIBDIR/iouring-bpf from the program's path
clean cc -std=c11 -Wall -Werror -o "$dest/usr/bin/run-nops-static" "$dest/run_nops.c" $cflags \
	"$libdir/liburing-bpf.a" ${slibs//-luring-bpf/} ||
	fail "the program does not build against the installed static archive"

clean cc -std=c11 -Wall -Wextra -Werror -o "$dest/sandbox" "$dest/sandbox_self.c" $cflags $libs \
	-luring -Wl,-rpath,"$libdir" ||
	fail "a program of the request-filter API does not build against the installed header"

deps=$(ldd "$dest/shared") || fail "ldd $dest/shared"
echo "$deps" | grep -q "$libdir/liburing-bpf.so" || fail "not linked to the installed library: $deps"
! echo "$deps" | grep -q "libbpf" ||
	fail "the installed library needs a libbpf of the system: $(echo "$deps" | grep libbpf)"
! echo "$deps" | grep -q -e "$IOURING_BPF_BUILD" || fail "the program loads from the build tree: $deps"

ln -s usr/bin/run-nops-static "$dest/static"
for kind in shared static; do
	printf 'out=$(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin %q 2>&1); echo "%s: rc=$? $out"\n' \
		"$dest/$kind" "$kind" >> "$dest/guest.sh"
done
# as an unprivileged user: the library sets no_new_privs itself
printf 'out=$(setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin %q 2>&1); echo "sandbox: rc=$? $out"\n' \
	"$dest/sandbox" >> "$dest/guest.sh"
"$IOURING_BPF_SRC/scripts/vm" --variant "$IOURING_BPF_VARIANT" --build-dir "$IOURING_BPF_BUILD" \
	--out "$dest/vm" --timeout 300 -- bash "$dest/guest.sh" > "$dest/vm.out" 2>&1
rc=$?
cat "$dest/vm.out"
[ $rc = 0 ] || fail "the VM run failed (scripts/vm exit $rc)"
for kind in shared static; do
	line=$(grep -A3 "^$kind: " "$dest/vm.out" | tr '\n' ' ')
	echo "$line" | grep -q "^$kind: rc=0 policy $dest/usr/lib[^ ]*/iouring-bpf/nops.bpf.o " ||
		fail "$kind: did not run the installed policy: $line"
	echo "$line" | grep -q "64 NOPs completed, exit status 0" || fail "$kind: $line"
	echo "ok: $kind: 64 NOPs completed"
done
line=$(grep -A1 "^sandbox: " "$dest/vm.out" | tr '\n' ' ')
echo "$line" | grep -q "^sandbox: rc=0 sandboxed: NOP 0, READ -13 " ||
	fail "the request-filter program as nobody: $line"
echo "ok: sandbox: a task filter from the installed library, as nobody"
exit 0
