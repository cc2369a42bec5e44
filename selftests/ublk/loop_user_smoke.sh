#!/usr/bin/env bash
# ublk/loop-user-smoke (vm, root): `iouring-bpf ublk add --target loop-user`
# serves a file-backed device correctly: fio with verification (1 queue at
# 4 KiB, 2 queues at 512 KiB), bytes land at the right offset of the file in
# both directions, discard and write-zeroes read back as zeros, a file that
# shrank reads as zeros past its end; list and del show and remove it; a
# taken --id is refused with nothing left behind; kill -9 of the daemon under
# fio makes fio fail (not hang) and del then cleans up; SIGTERM to the
# daemon stops the device.
# usage: loop_user_smoke.sh [TOOL]   (default: $IOURING_BPF_BUILD/user/loader/iouring-bpf)
# Exit 0 pass, 1 fail, 77 skip (no ublk driver, no fio, not root).
set -u
T=${1:-${IOURING_BPF_BUILD:-build}/user/loader/iouring-bpf}
. "$(dirname "$0")/lib.sh"
ublk_require

# --- 1 queue, 4 KiB random writes, verified
img=$work/a.img
truncate -s 64M "$img"
out=$(ublk_add --target loop-user --file "$img") || { bad "add loop-user"; exit 1; }
id=$(jget '["id"]' <<<"$out")
dpid=$(jget '["pid"]' <<<"$out")
dev=/dev/ublkb$id
json "j['block'] == '$dev' and j['char'] == '/dev/ublkc$id' and j['target'] == 'loop-user'" <<<"$out" &&
	ok "add --json: $out" || bad "add --json output: $out"
[ -b "$dev" ] && ok "$dev exists" || bad "$dev is not a block device"
sz=$(blockdev --getsize64 "$dev")
[ "$sz" = $((64 << 20)) ] && ok "size $sz" || bad "size $sz, want $((64 << 20))"
fio_verify "$dev" q1-4k --rw=randwrite --bs=4k --iodepth=32 --size=16M &&
	ok "fio randwrite 4k, iodepth 32, verified" || bad "fio 4k verify"

# device -> file at an odd offset, and file -> device
off=$(( (5 << 20) + 4096 * 3 ))
head -c 8192 /dev/urandom > "$work/pat1"
dd if="$work/pat1" of="$dev" bs=4096 seek=$((off / 4096)) oflag=direct conv=notrunc status=none
cmp -s "$work/pat1" <(dd if="$img" bs=4096 skip=$((off / 4096)) count=2 status=none) &&
	ok "a device write landed at byte $off of the file" || bad "device write not at byte $off of the file"
head -c 4096 /dev/urandom > "$work/pat2"
off2=$(( (40 << 20) + 512 * 7 ))
dd if="$work/pat2" of="$img" bs=512 seek=$((off2 / 512)) conv=notrunc status=none
cmp -s "$work/pat2" <(dd if="$dev" bs=512 skip=$((off2 / 512)) count=8 iflag=direct status=none) &&
	ok "a file write reads back from the device at byte $off2" || bad "device read at $off2 differs from the file"

# discard (PUNCH_HOLE) and write zeroes (ZERO_RANGE, or zeros written on tmpfs)
dd if=/dev/urandom of="$dev" bs=1M seek=20 count=2 oflag=direct status=none
blkdiscard -o $((20 << 20)) -l $((1 << 20)) "$dev" &&
	cmp -s <(head -c $((1 << 20)) /dev/zero) <(dd if="$img" bs=1M skip=20 count=1 status=none) &&
	ok "discard: the file reads zeros there" || bad "discard"
blkdiscard -z -o $((21 << 20)) -l $((1 << 20)) "$dev" &&
	cmp -s <(head -c $((1 << 20)) /dev/zero) <(dd if="$dev" bs=1M skip=21 count=1 iflag=direct status=none) &&
	ok "write zeroes: the device reads zeros there" || bad "write zeroes"
dd if=/dev/zero of="$dev" bs=4k count=1 oflag=direct,sync conv=fsync status=none &&
	ok "write with fsync (FLUSH)" || bad "write with fsync"

# list: text and JSON
l=$("$T" ublk list)
grep -qE "^$id +LIVE +1 +64 +64 MiB +$dpid alive +loop-user +.*need_get_data" <<<"$l" &&
	grep -q "file: $img" <<<"$l" && ok "list: $(grep -E "^$id " <<<"$l")" || bad "list output: $l"
"$T" -j ublk list | json "any(d['id'] == $id and d['state'] == 'LIVE' and d['queues'] == 1 and
	d['depth'] == 64 and d['size'] == 64 << 20 and d['pid'] == $dpid and d['daemon_alive'] and
	d['target'] == 'loop-user' and d['files'] == ['$img'] and 'need_get_data' in d['flags'] for d in j)" &&
	ok "list --json" || bad "list --json: $("$T" -j ublk list)"

# a taken id is refused, and nothing is left behind
n_before=$(ls /sys/class/ublk-char | wc -l)
out=$("$T" ublk add --target loop-user --file "$img" --id "$id" 2>&1)
rc=$?
n_after=$(ls /sys/class/ublk-char | wc -l)
[ $rc = 1 ] && grep -q "ublk device $id exists already" <<<"$out" && [ "$n_before" = "$n_after" ] &&
	ok "--id $id again: exit 1: $out" || bad "--id $id again: exit $rc, $n_before -> $n_after devices: $out"

# a file that shrank reads as zeros past its end
truncate -s 32M "$img"
cmp -s <(head -c 65536 /dev/zero) <(dd if="$dev" bs=64k skip=$((48 << 4)) count=1 iflag=direct status=none) &&
	ok "reads past the end of a shrunk file are zeros" || bad "read past the end of the file"

# del
out=$("$T" ublk del "$id")
rc=$?
[ $rc = 0 ] && [ ! -e "$dev" ] && [ ! -e "/sys/class/ublk-char/ublkc$id" ] && [ ! -e "$work/state/$id" ] &&
	ok "del $id: $out" || bad "del $id: exit $rc: $out"
wait_gone "$dpid" && ok "the daemon exited" || bad "daemon $dpid still runs after del"
"$T" -j ublk list | json "not any(d['id'] == $id for d in j)" && ok "list no longer shows $id" ||
	bad "list still shows $id"
out=$("$T" ublk del "$id" 2>&1)
[ $? = 1 ] && grep -q "no ublk device $id" <<<"$out" && ok "del $id again: $out" || bad "del again: $out"

# --- 2 queues, 512 KiB, verified
img2=$work/b.img
truncate -s 128M "$img2"
out=$(ublk_add --target loop-user --file "$img2" --queues 2 --depth 16) || { bad "add 2 queues"; exit 1; }
id=$(jget '["id"]' <<<"$out")
dev=/dev/ublkb$id
"$T" -j ublk list | json "any(d['id'] == $id and d['queues'] == 2 and d['depth'] == 16 for d in j)" &&
	ok "2 queues of depth 16" || bad "list for 2 queues: $("$T" -j ublk list)"
fio_verify "$dev" q2-512k --rw=randwrite --bs=512k --iodepth=16 --numjobs=2 --offset_increment=64M \
	--size=32M --cpus_allowed_policy=split &&
	ok "fio randwrite 512k, 2 jobs, verified" || bad "fio 512k verify"
fio_verify "$dev" q2-mix --rw=randrw --bsrange=512-256k --iodepth=8 --size=16M --offset=96M &&
	ok "fio randrw 512..256k, verified" || bad "fio mixed verify"
"$T" ublk del "$id" > /dev/null && ok "del $id" || bad "del $id"

# --- SIGTERM to the daemon: it stops the device, removes its state file, exits
out=$(ublk_add --target loop-user --file "$img2") || { bad "add for SIGTERM"; exit 1; }
id=$(jget '["id"]' <<<"$out")
dpid=$(jget '["pid"]' <<<"$out")
[ -f "$work/state/$id" ] && ok "state file $work/state/$id" || bad "no state file for $id"
kill -TERM "$dpid"
wait_gone "$dpid" && ok "SIGTERM: the daemon exited" || bad "SIGTERM: daemon $dpid still runs"
[ ! -e "$work/state/$id" ] && ok "SIGTERM: state file removed" || bad "SIGTERM: state file left"
"$T" -j ublk list | json "any(d['id'] == $id and d['state'] == 'DEAD' for d in j)" &&
	ok "SIGTERM: $id is DEAD" || bad "SIGTERM: list: $("$T" -j ublk list)"
grep -q 'Terminated: stopping the device' "$work/state/$id.log" && ok "SIGTERM: logged" ||
	bad "SIGTERM: log: $(cat "$work/state/$id.log")"
"$T" ublk del "$id" > /dev/null && [ ! -e "/sys/class/ublk-char/ublkc$id" ] && ok "del $id" ||
	bad "del $id after SIGTERM"

# --- kill -9 of the daemon under fio: fio fails, del cleans up
img3=$work/c.img
truncate -s 32M "$img3"
out=$(ublk_add --target loop-user --file "$img3") || { bad "add for kill"; exit 1; }
id=$(jget '["id"]' <<<"$out")
dpid=$(jget '["pid"]' <<<"$out")
dev=/dev/ublkb$id
fio_then "$dev" kill-daemon "kill -9 $dpid" --bs=4k --iodepth=16
"$T" -j ublk list | json "any(d['id'] == $id and d['state'] == 'DEAD' and not d['daemon_alive'] for d in j)" &&
	ok "list: $id DEAD, daemon gone" || bad "list after kill: $("$T" -j ublk list)"
out=$("$T" -j ublk del "$id")
rc=$?
[ $rc = 0 ] && json "j == {'deleted': $id}" <<<"$out" && [ ! -e "/sys/class/ublk-char/ublkc$id" ] &&
	[ ! -e "$work/state/$id" ] && ok "del after kill: $out" || bad "del after kill: exit $rc: $out"

finish
