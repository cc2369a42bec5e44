#!/usr/bin/env bash
# harness/kernel-apply (host): kernel/apply.sh applies the whole series to a
# pristine linux-source-6.12 tree and says so; given a 6.12 tree a patch
# does not apply to, it names the first such patch and exits 1; a tree that
# is not 6.12 is refused.
set -u
fail() { echo "FAIL: $*"; exit 1; }
apply=$IOURING_BPF_SRC/kernel/apply.sh
tarball=/usr/src/linux-source-6.12.tar.xz
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
total=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$IOURING_BPF_SRC/kernel/series" | wc -l)
first=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$IOURING_BPF_SRC/kernel/series" | head -n1)

tar -xf "$tarball" -C "$work" || fail "extracting $tarball"
tree=$work/linux-source-6.12
out=$("$apply" "$tree" 2>&1) || fail "apply.sh on a pristine tree: $out"
echo "$out"
[[ $out == "apply.sh: all $total patches apply to 6.12."* ]] || fail "unexpected report: $out"
grep -q IORING_SETUP_SQ_REWIND "$tree/include/uapi/linux/io_uring.h" || fail "the tree is not patched"

# a 6.12 tree without the files the first patch changes
mkdir -p "$work/bare"
printf 'VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 999\n' > "$work/bare/Makefile"
out=$("$apply" --check "$work/bare" 2>&1)
rc=$?
echo "$out" | head -n 3
[ $rc = 1 ] || fail "apply.sh exited $rc on a tree the series does not apply to"
[[ $out == "apply.sh: patch 1 of $total, $first, does not apply to 6.12.999:"* ]] ||
	fail "the failing patch is not named: $out"

printf 'VERSION = 6\nPATCHLEVEL = 6\n' > "$work/bare/Makefile"
out=$("$apply" "$work/bare" 2>&1)
[ $? = 2 ] && [[ $out == *"is not a Linux 6.12 source tree"* ]] || fail "a 6.6 tree: $out"
echo "ok: the series applies; the first failing patch is named; a non-6.12 tree is refused"
exit 0
