#!/usr/bin/env bash
# vblk/readme-example (VM): docs/virtio-blk.md's "From C" program, built
# from the document's own text, does what it says on the vblk0 scratch disk:
# it prints "/dev/vdXc0: serial vblk0" on stderr and the 4 KiB at the sector
# on stdout (random data written there first with O_DIRECT, compared byte
# for byte); a CQE error (a sector past the end) and a device that is not a
# virtio-blk disk end it with status 1 and the errno's text.
set -u
fail() { echo "FAIL: $*"; exit 1; }
ex=$1
dev=
for s in /sys/block/vd*/serial; do
	[ "$(cat "$s" 2>/dev/null)" = vblk0 ] && dev=/dev/$(basename "$(dirname "$s")")
done
[ -n "$dev" ] || fail "no disk with serial vblk0 in /sys/block/vd*/serial"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 4 KiB of random data at sector 8000 (byte 4096000 = block 1000 of 4096)
head -c 4096 /dev/urandom > "$tmp/want"
dd if="$tmp/want" of="$dev" bs=4096 seek=1000 count=1 oflag=direct conv=notrunc status=none ||
	fail "dd to $dev"
"$ex" "$dev" 8000 > "$tmp/got" 2> "$tmp/err"
rc=$?
cat "$tmp/err"
[ $rc = 0 ] || fail "$ex $dev 8000 exited $rc"
cmp "$tmp/want" "$tmp/got" || fail "the 4 KiB at sector 8000 differ from what dd wrote"
grep -qx "${dev}c0: serial vblk0" "$tmp/err" || fail "stderr does not say '${dev}c0: serial vblk0'"
echo "$dev 8000: 4096 bytes as written, serial vblk0"

# a sector past the end: the read's CQE carries -ERANGE
sectors=$(cat "/sys/block/${dev#/dev/}/size")
"$ex" "$dev" "$sectors" > "$tmp/got" 2> "$tmp/err"
rc=$?
cat "$tmp/err"
[ $rc = 1 ] || fail "reading sector $sectors (the end) exited $rc, want 1"
grep -q "read: $(python3 -c 'import os; print(os.strerror(34))')" "$tmp/err" ||
	fail "no ERANGE message for a read past the end"
[ -s "$tmp/got" ] && fail "output despite the failed read"

# not a virtio-blk disk
"$ex" /dev/null 0 > /dev/null 2> "$tmp/err"
rc=$?
cat "$tmp/err"
[ $rc = 1 ] && grep -q "No such device" "$tmp/err" || fail "/dev/null: exit $rc, want 1 and ENODEV's text"
echo "errors reported: past the end (ERANGE), not a virtio-blk disk (ENODEV)"
