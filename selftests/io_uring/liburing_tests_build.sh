#!/usr/bin/env bash
# Build some of liburing's own tests, unchanged, from its release tarball
# (scripts/deps fetches it): the tests of io_uring request filters and
# restrictions. They include the tree's headers and helpers and link its
# liburing.a, so they are built inside the tree, by its own configure and
# Makefiles. Leaves OUT/liburing-VERSION/test/NAME.t.
# usage: liburing_tests_build.sh TARBALL OUT TEST...
set -euo pipefail
tarball=$1 out=$2
shift 2

die() { echo "liburing_tests_build: error: $*" >&2; exit 1; }

[ -f "$tarball" ] || die "$tarball is missing; run scripts/deps"
top=$(tar -tzf "$tarball" | sed -n 1p)
top=${top%%/*}
[ -n "$top" ] || die "$tarball: empty"
mkdir -p "$out"
src=$out/$top
if [ ! -f "$src/configure" ] || [ "$tarball" -nt "$src/configure" ]; then
	rm -rf "$src"
	tar -xzf "$tarball" -C "$out"
	touch "$src/configure"
fi
log=$out/build.log
: > "$log"
run() { "$@" >> "$log" 2>&1 || { tail -n 30 "$log" >&2; die "$* failed (log: $log)"; }; }
[ -f "$src/config-host.mak" ] || (cd "$src" && run ./configure --cc="${CC:-cc}")
jobs=$(nproc 2>/dev/null || echo 1)
run make -C "$src/src" -j"$jobs"
targets=()
for t in "$@"; do
	[ -f "$src/test/$t.c" ] || die "$top has no test/$t.c"
	targets+=("$t.t")
done
run make -C "$src/test" -j"$jobs" "${targets[@]}"
for t in "$@"; do
	[ -x "$src/test/$t.t" ] || die "no $src/test/$t.t after make"
done
ln -sfn "$top" "$out/src"
