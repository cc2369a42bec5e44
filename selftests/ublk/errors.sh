#!/usr/bin/env bash
# ublk/errors (vm, root): errors reach the block layer with the right
# status, and a dying daemon or a device deleted under I/O cleans up.
#  - a backing file on a full tmpfs: the write fails with ENOSPC, the
#    device stays usable;
#  - kill -9 of a BPF loop daemon under fio: fio ends with errors, no hang,
#    del cleans up;
#  - del of a BPF loop device under fio: fio ends with errors, no hang.
# (The VM runner fails the suite on any kernel WARN/BUG/lockdep/KASAN.)
# usage: errors.sh TOOL TARGET     Exit 0 pass, 1 fail, 77 skip.
set -u
T=$(realpath "$1")
target=${2:-loop}
. "$(dirname "$0")/lib.sh"
ublk_require

# ENOSPC: a 64 MiB sparse file on a 4 MiB tmpfs
small=$work/small
mkdir -p "$small"
mount -t tmpfs -o size=4M tmpfs "$small" || no_feature "cannot mount tmpfs"
truncate -s 64M "$small/img"
out=$(ublk_add --target "$target" --file "$small/img") || { bad "add"; umount "$small"; finish; }
id=$(jget '["id"]' <<<"$out")
dev=/dev/ublkb$id
msg=$(dd if=/dev/urandom of="$dev" bs=1M count=16 oflag=direct 2>&1)
rc=$?
[ $rc != 0 ] && grep -q "No space left on device" <<<"$msg" &&
	ok "write past the tmpfs size: dd exit $rc, $(grep -o 'No space left on device' <<<"$msg" | head -1)" ||
	bad "write to a full backing file: exit $rc: $msg"
head -c 4096 /dev/urandom > "$work/p"
dd if="$work/p" of="$dev" bs=4096 count=1 oflag=direct conv=notrunc status=none &&
	cmp -s "$work/p" <(dd if="$dev" bs=4096 count=1 iflag=direct status=none) &&
	ok "the device still serves I/O after the error" || bad "device unusable after ENOSPC"
"$T" ublk del "$id" > /dev/null && ok "del" || bad "del $id"
umount "$small"

img=$work/k.img
truncate -s 32M "$img"
out=$(ublk_add --target "$target" --file "$img") || { bad "add"; finish; }
id=$(jget '["id"]' <<<"$out")
dpid=$(jget '["pid"]' <<<"$out")
fio_then "/dev/ublkb$id" kill-daemon "kill -9 $dpid" --bs=16k --iodepth=32
wait_gone "$dpid" && ok "daemon gone" || bad "daemon $dpid still there"
out=$("$T" ublk del "$id" 2>&1) && [ ! -e "/sys/class/ublk-char/ublkc$id" ] &&
	ok "del after kill: $out" || bad "del after kill: $out"

out=$(ublk_add --target "$target" --file "$img" --queues 2) || { bad "add"; finish; }
id=$(jget '["id"]' <<<"$out")
dpid=$(jget '["pid"]' <<<"$out")
fio_then "/dev/ublkb$id" del-under-io \
	"timeout 60 $T ublk del $id > $work/del.out 2>&1 || echo del-failed >> $work/del.out" \
	--bs=16k --iodepth=32
grep -q del-failed "$work/del.out" && bad "del under I/O: $(cat "$work/del.out")" ||
	ok "del under I/O: $(cat "$work/del.out")"
[ ! -e "/sys/class/ublk-char/ublkc$id" ] && ok "device gone" || bad "device $id still exists"
wait_gone "$dpid" && ok "daemon exited" || bad "daemon $dpid still there"
finish
