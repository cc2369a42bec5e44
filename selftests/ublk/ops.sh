#!/usr/bin/env bash
# ublk/ops-TARGET (vm, root): FLUSH, DISCARD and WRITE_ZEROES through a
# device of TARGET (loop or split) reach the backing file: discard and
# write-zeroes punch holes (fewer blocks allocated, zeros read back through
# the file and the device), a flush is an fsync (the policy's ublk_flushes
# counter, read with bpftool, grows); an unsupported op is refused, not
# lost: BLKSECDISCARD fails.
# usage: ops.sh TOOL BPFTOOL     Exit 0 pass, 1 fail, 77 skip.
set -u
T=$(realpath "$1")
bpftool=$2
. "$(dirname "$0")/lib.sh"
ublk_require

img=$work/ops.img
truncate -s 64M "$img"
out=$(ublk_add --target loop --file "$img") || { bad "add"; finish; }
id=$(jget '["id"]' <<<"$out")
dev=/dev/ublkb$id

# a flush reaches the daemon's policy, or on the kernel path the hook
flush_counter=ublk_flushes
[ "${UBLK_PATH:-daemon}" = kernel ] && flush_counter=ublk_hook_requests

dd if=/dev/urandom of="$dev" bs=1M count=8 seek=8 oflag=direct status=none
b0=$(stat -c %b "$img")
blkdiscard -o $((8 << 20)) -l $((4 << 20)) "$dev" && ok "blkdiscard 4 MiB" || bad "blkdiscard"
b1=$(stat -c %b "$img")
[ "$b1" -lt "$b0" ] && ok "discard freed file blocks ($b0 -> $b1)" || bad "discard: blocks $b0 -> $b1"
cmp -s <(head -c $((4 << 20)) /dev/zero) <(dd if="$img" bs=1M skip=8 count=4 status=none) &&
	ok "the file reads zeros in the discarded range" || bad "file not zero after discard"
blkdiscard -z -o $((12 << 20)) -l $((2 << 20)) "$dev" && ok "blkdiscard -z (write zeroes)" ||
	bad "write zeroes"
cmp -s <(head -c $((2 << 20)) /dev/zero) <(dd if="$dev" bs=1M skip=12 count=2 iflag=direct status=none) &&
	cmp -s <(head -c $((2 << 20)) /dev/zero) <(dd if="$img" bs=1M skip=12 count=2 status=none) &&
	ok "write-zeroes range reads zeros (device and file)" || bad "write-zeroes range not zero"
cmp -s <(dd if="$img" bs=1M skip=14 count=2 status=none) <(dd if="$dev" bs=1M skip=14 count=2 iflag=direct status=none) &&
	[ "$(dd if="$img" bs=1M skip=14 count=2 status=none | tr -d '\0' | wc -c)" -gt 0 ] &&
	ok "bytes next to the zeroed range untouched" || bad "neighbouring bytes changed"

f0=$(bss_sum "$bpftool" ublk_loo.bss $flush_counter)
dd if=/dev/urandom of="$dev" bs=4k count=1 oflag=direct conv=fsync status=none && ok "write + fsync" ||
	bad "write + fsync"
f1=$(bss_sum "$bpftool" ublk_loo.bss $flush_counter)
[ "$f0" -ge 0 ] && [ "$f1" -gt "$f0" ] && ok "FLUSH reached the policy ($f0 -> $f1 flushes)" ||
	bad "flush counter $f0 -> $f1"
blkdiscard -s -o 0 -l 4096 "$dev" 2> /dev/null && bad "secure discard accepted" ||
	ok "secure discard refused"
"$T" ublk del "$id" > /dev/null && ok "del" || bad "del"
finish
