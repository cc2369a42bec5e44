#!/usr/bin/env bash
# ublk/split-layout (vm, root): a split device is file A then file B. Bytes
# written to the device land in the right file at the right offset, a
# request that straddles the boundary is split between the two files (in
# both directions), discard across the boundary punches both files, and a
# shrunk B reads zeros past its end.
# usage: split_layout.sh TOOL     Exit 0 pass, 1 fail, 77 skip.
set -u
T=$(realpath "$1")
. "$(dirname "$0")/lib.sh"
ublk_require

a=$work/a.img b=$work/b.img
truncate -s 24M "$a"
truncate -s 40M "$b"
out=$(ublk_add --target split --file "$a" --file "$b") || { bad "add split"; finish; }
id=$(jget '["id"]' <<<"$out")
dev=/dev/ublkb$id
sz=$(blockdev --getsize64 "$dev")
[ "$sz" = $((64 << 20)) ] && ok "size $sz = A + B" || bad "size $sz, want $((64 << 20))"

# one 1 MiB write straddling the boundary at 24 MiB: 256 KiB in A, the rest in B
head -c $((1 << 20)) /dev/urandom > "$work/pat"
dd if="$work/pat" of="$dev" bs=256k seek=$(( (24 << 2) - 1 )) oflag=direct status=none
cmp -s <(head -c $((256 << 10)) "$work/pat") <(tail -c $((256 << 10)) "$a") &&
	ok "straddling write: first 256 KiB at the end of A" || bad "straddling write: end of A differs"
cmp -s <(tail -c $((768 << 10)) "$work/pat") <(head -c $((768 << 10)) "$b") &&
	ok "straddling write: the rest at the start of B" || bad "straddling write: start of B differs"
# and back, in one direct read that straddles
cmp -s "$work/pat" <(dd if="$dev" bs=1M count=1 iflag=direct,skip_bytes \
		skip=$(( (24 << 20) - (256 << 10) )) status=none) &&
	ok "straddling read returns both halves" || bad "straddling read differs"

# bytes well inside each file
head -c 4096 /dev/urandom > "$work/p1"
dd if="$work/p1" of="$dev" bs=4096 seek=$(( (3 << 20) / 4096 + 5 )) oflag=direct status=none
cmp -s "$work/p1" <(dd if="$a" bs=4096 skip=$(( (3 << 20) / 4096 + 5 )) count=1 status=none) &&
	ok "device byte 3 MiB+20 KiB is A's" || bad "write inside A misplaced"
dd if="$work/p1" of="$dev" bs=4096 seek=$(( (50 << 20) / 4096 )) oflag=direct status=none
cmp -s "$work/p1" <(dd if="$b" bs=4096 skip=$(( (26 << 20) / 4096 )) count=1 status=none) &&
	ok "device byte 50 MiB is B's byte 26 MiB" || bad "write inside B misplaced"

# fio verify across the whole device, straddling requests included
fio_verify "$dev" split-512k --rw=randwrite --bs=512k --iodepth=32 --size=64M &&
	ok "fio randwrite 512k over A and B, verified" || bad "fio split 512k"

# discard across the boundary punches both files
a0=$(stat -c %b "$a"); b0=$(stat -c %b "$b")
blkdiscard -o $((22 << 20)) -l $((4 << 20)) "$dev" || bad "blkdiscard across the boundary"
a1=$(stat -c %b "$a"); b1=$(stat -c %b "$b")
[ "$a1" -lt "$a0" ] && [ "$b1" -lt "$b0" ] && ok "discard freed blocks in A ($a0 -> $a1) and B ($b0 -> $b1)" ||
	bad "discard across the boundary: A $a0 -> $a1, B $b0 -> $b1"
cmp -s <(head -c $((4 << 20)) /dev/zero) <(dd if="$dev" bs=1M skip=22 count=4 iflag=direct status=none) &&
	ok "discarded range reads zeros" || bad "discarded range is not zeros"

# B shrinks: reads past its end are zeros, not errors
truncate -s 8M "$b"
cmp -s <(head -c $((1 << 20)) /dev/zero) <(dd if="$dev" bs=1M skip=40 count=1 iflag=direct status=none) &&
	ok "read past the end of a shrunk B returns zeros" || bad "read past shrunk B"
"$T" ublk del "$id" > /dev/null && ok "del" || bad "del $id"
finish
