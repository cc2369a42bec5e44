#!/usr/bin/env bash
# harness/kernel-series (host): the patch pipeline applies a series in order,
# re-patches only when the series changes, and fails naming a patch that does
# not apply. Uses the real linux-source-6.12 tarball and test-only patches.
set -u
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
build=$IOURING_BPF_SRC/kernel/build.sh
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$work/k/patches"
# A patch in git format-patch form that adds a line to io_uring/nop.c.
cat > "$work/k/patches/0001-io_uring-nop-test-marker.patch" <<'PATCH'
From 0000000000000000000000000000000000000001 Mon Sep 17 00:00:00 2001
From: iouring-bpf selftests <selftests@iouring-bpf.invalid>
Date: Sun, 17 Nov 2024 00:00:00 +0000
Subject: [PATCH] io_uring/nop: test marker

Only used by selftests/harness/kernel_series.sh.
---
 io_uring/nop.c | 1 +
 1 file changed, 1 insertion(+)

diff --git a/io_uring/nop.c b/io_uring/nop.c
--- a/io_uring/nop.c
+++ b/io_uring/nop.c
@@ -1,4 +1,5 @@
 // SPDX-License-Identifier: GPL-2.0
+/* iouring-bpf selftest marker */
 #include <linux/kernel.h>
 #include <linux/errno.h>
 #include <linux/fs.h>
-- 
2.39.5
PATCH
# A patch whose context does not exist in 6.12.
sed -e 's/0000000000000000000000000000000000000001/0000000000000000000000000000000000000002/' \
    -e 's/test marker/broken context/' \
    -e 's|^ #include <linux/errno.h>| #include <linux/no-such-header.h>|' \
    -e 's|^+/\* iouring-bpf selftest marker \*/|+/* never applied */|' \
    "$work/k/patches/0001-io_uring-nop-test-marker.patch" \
    > "$work/k/patches/0002-io_uring-broken-context.patch"

echo "0001-io_uring-nop-test-marker.patch" > "$work/k/series"
out=$("$build" --build-dir "$work/b" --series "$work/k/series" source 2>&1) ||
	fail "good series did not apply: $out"
echo "$out"
grep -q 'iouring-bpf selftest marker' "$work/b/kernel/src/io_uring/nop.c" ||
	fail "patched file lacks the marker"
# The patched file must be newer than untouched ones, so make rebuilds it.
[ "$work/b/kernel/src/io_uring/nop.c" -nt "$work/b/kernel/src/io_uring/io_uring.c" ] ||
	fail "patched file is not newer than the tarball's files"

out=$("$build" --build-dir "$work/b" --series "$work/k/series" source 2>&1) ||
	fail "second run failed: $out"
case $out in *extracting*) fail "unchanged series re-extracted the tree" ;; esac

printf '# a comment, then both patches\n0001-io_uring-nop-test-marker.patch\n\n0002-io_uring-broken-context.patch\n' > "$work/k/series"
out=$("$build" --build-dir "$work/b" --series "$work/k/series" source 2>&1)
rc=$?
echo "$out"
[ $rc != 0 ] || fail "a broken patch did not fail the kernel step"
echo "$out" | grep -q 'error: patch 0002-io_uring-broken-context.patch (number 2 in series) does not apply' ||
	fail "error does not name the broken patch"
echo "$out" | grep -q 'applying 0001-io_uring-nop-test-marker.patch' ||
	fail "patches before the broken one were not applied first"
# The failed attempt must not leave a tree that looks ready.
out=$("$build" --build-dir "$work/b" --series "$work/k/series" source 2>&1) &&
	fail "second attempt with the broken patch succeeded"

echo "0003-missing.patch" > "$work/k/series"
out=$("$build" --build-dir "$work/b" --series "$work/k/series" source 2>&1) &&
	fail "a series naming a missing patch succeeded"
echo "$out" | grep -q '0003-missing.patch' || fail "missing patch not named: $out"
exit 0
