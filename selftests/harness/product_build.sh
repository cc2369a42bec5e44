#!/usr/bin/env bash
# harness/product-build (host): what make demo, install, deb and shell
# build -- CMake without IOURING_BPF_TESTS -- needs neither cargo nor
# liburing's test tarball. A scratch build of this checkout, with a cargo on
# PATH that records any call and fails, and the tarball's path pointing at
# nothing, configures and builds; it has the tool, the library, the
# policies and the demo's two programs, and no test manifest.
set -u
fail() { echo "FAIL: $*"; exit 1; }
src=${IOURING_BPF_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${IOURING_BPF_BUILD:-$src/build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir "$work/bin"
cat > "$work/bin/cargo" <<'EOF'
#!/bin/sh
echo "cargo $*" >> "$(dirname "$0")/../cargo-calls"
echo "cargo called by a build without the test suite" >&2
exit 1
EOF
chmod +x "$work/bin/cargo"
export PATH=$work/bin:$PATH HOME=$work/home
mkdir "$work/home"

cmake -S "$src" -B "$work/user" -G Ninja -DIOURING_BPF_BUILD="$build" \
	-DLIBURING_TESTS_TARBALL="$work/no-such-tarball.tar.gz" > "$work/configure.log" 2>&1 ||
	{ cat "$work/configure.log"; fail "configure without the test suite failed"; }
grep -q '^IOURING_BPF_TESTS:BOOL=OFF$' "$work/user/CMakeCache.txt" ||
	fail "IOURING_BPF_TESTS is not OFF by default"
cmake --build "$work/user" > "$work/build.log" 2>&1 ||
	{ tail -n 40 "$work/build.log"; fail "the build without the test suite failed"; }
[ ! -e "$work/cargo-calls" ] || fail "cargo ran: $(cat "$work/cargo-calls")"
for f in loader/iouring-bpf liburing-bpf/liburing-bpf.so selftests/io_uring_nop \
	selftests/bpf_skeleton_test bpf/nops.bpf.o bpf/ublk_loop.bpf.o; do
	[ -e "$work/user/$f" ] || fail "$f was not built"
done
[ ! -e "$work/user/selftests/tests.tsv" ] || fail "a test manifest was written"
! find "$work/user" -name 'libublk_serve' | grep -q . || fail "the libublk server was built"
echo "ok: the product built ($(grep -c '^\[' "$work/build.log" || true) steps) without cargo or the tarball; no test manifest"
exit 0
