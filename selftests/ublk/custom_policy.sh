#!/usr/bin/env bash
# ublk/custom-policy (vm, root): the README's null target, a policy of a
# dozen lines, run with --target bpf --policy: the device has the size
# asked for, reads are zeros (also after writes), writes succeed, fio runs.
# usage: custom_policy.sh TOOL ublk_null.bpf.o     Exit 0 pass, 1 fail, 77 skip.
set -u
T=$(realpath "$1")
obj=$(realpath "$2")
. "$(dirname "$0")/lib.sh"
ublk_require

out=$(ublk_add --target bpf --policy "$obj" --size $((256 << 20))) || { bad "add --policy"; finish; }
id=$(jget '["id"]' <<<"$out")
dev=/dev/ublkb$id
[ "$(blockdev --getsize64 "$dev")" = $((256 << 20)) ] && ok "size 256 MiB" || bad "size"
dd if=/dev/urandom of="$dev" bs=1M count=4 seek=8 oflag=direct status=none && ok "writes succeed" ||
	bad "write"
cmp -s <(head -c $((4 << 20)) /dev/zero) <(dd if="$dev" bs=1M count=4 skip=8 iflag=direct status=none) &&
	ok "reads return zeros after the write" || bad "reads are not zeros"
fio --name=null --filename="$dev" --ioengine=io_uring --direct=1 --rw=randrw --bs=4k --iodepth=32 \
	--size=64M --output="$work/null.fio" && grep -q 'err= 0' "$work/null.fio" &&
	ok "fio randrw 4k iodepth 32" || bad "fio on null"
"$T" ublk del "$id" > /dev/null && ok "del" || bad "del"
finish
