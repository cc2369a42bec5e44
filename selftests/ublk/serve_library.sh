#!/usr/bin/env bash
# ublk/serve-library (vm, root): examples/ublk_serve, a program on
# liburing-bpf's ublk server alone (iouring_bpf_ublk_server_start(), no
# iouring-bpf tool), serves the ublk_loop policy over a file on tmpfs:
#  - it prints /dev/ublkbN once the device is live, of the file's size;
#  - what is written through the device (dd, fio with verify) is in the
#    file at the same offsets, and what is written to the file reads back
#    through the device (O_DIRECT: no page cache of the device's);
#  - `iouring-bpf ublk del` refuses the device (EBUSY: another program
#    serves it) and leaves it and its server alone; with --force it deletes
#    a second such device;
#  - SIGTERM: it logs that it stops the device, exits 0, and the device
#    (block and char) is gone; the file keeps the data.
# usage: serve_library.sh UBLK_SERVE POLICY.bpf.o TOOL   Exit 0 pass, 1 fail, 77 skip.
set -u
T=$(realpath "$1")	# lib.sh's name for the program under test
P=$(realpath "$2")
TOOL=$(realpath "$3")
. "$(dirname "$0")/lib.sh"
ublk_require
[ -f "$P" ] || { echo "FAIL: no policy object $P"; exit 1; }

spid=
cleanup() {
	[ -n "$spid" ] && kill -TERM "$spid" 2>/dev/null && { wait_gone "$spid" || kill -9 "$spid"; }
	ublk_cleanup
}
trap cleanup EXIT

img=$work/disk.img	# $work is on /dev/shm: tmpfs
truncate -s 64M "$img"
# serve IMG OUT: ublk_serve in the background ($spid), until it printed
serve() {
	"$T" "$P" "$1" > "$2" 2> "$2.err" &
	spid=$!
	for i in $(seq 600); do
		[ -s "$2" ] && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
}
serve "$img" "$work/out"
dev=$(head -n 1 "$work/out")
if ! [[ $dev =~ ^/dev/ublkb([0-9]+)$ ]] || ! [ -b "$dev" ]; then
	bad "ublk_serve printed '$dev', not a live /dev/ublkbN: $(cat "$work/out.err")"
	finish
fi
id=${BASH_REMATCH[1]}
ok "live: $dev"
size=$(blockdev --getsize64 "$dev")
[ "$size" = $((64 << 20)) ] && ok "size $size, the file's" || bad "size $size, want $((64 << 20))"

# through the device, into the file: 4 MiB at 8 MiB
head -c 4M /dev/urandom > "$work/pat"
dd if="$work/pat" of="$dev" bs=1M seek=8 oflag=direct conv=notrunc,fsync status=none ||
	bad "dd to $dev"
cmp -s "$work/pat" <(dd if="$img" bs=1M skip=8 count=4 status=none) &&
	ok "4 MiB written through the device are in the file at 8 MiB" ||
	bad "the file at 8 MiB differs from what was written through the device"
cmp -s "$work/pat" <(dd if="$dev" bs=1M skip=8 count=4 iflag=direct status=none) &&
	ok "and read back through the device" || bad "reading 8 MiB..12 MiB back through the device"

# into the file, out of the device: 1 MiB at 20 MiB
head -c 1M /dev/urandom > "$work/pat2"
dd if="$work/pat2" of="$img" bs=1M seek=20 conv=notrunc status=none
cmp -s "$work/pat2" <(dd if="$dev" bs=1M skip=20 count=1 iflag=direct status=none) &&
	ok "1 MiB written to the file reads back through the device" ||
	bad "the device at 20 MiB differs from the file"

# fio: random 4 KiB writes with checksums through the device, verified
# there, then the same blocks verified in the file (same seed, verify_only)
job=(--rw=randwrite --bs=4k --offset=32M --size=16M --verify=crc32c)
fio_verify "$dev" serve-verify "${job[@]}" --iodepth=16 &&
	ok "fio verify through the device" || bad "fio verify through the device"
fio --name=serve-verify --filename="$img" --allow_file_create=0 --ioengine=psync "${job[@]}" \
	--verify_only --output="$work/file-verify.fio" &&
	grep -q 'err= 0' "$work/file-verify.fio" &&
	ok "fio's blocks verify in the file" ||
	{ cat "$work/file-verify.fio"; bad "fio's blocks do not verify in the file"; }

# the tool leaves a device another program serves alone, unless --force
out=$("$TOOL" ublk del "$id" 2>&1)
rc=$?
[ $rc = 1 ] && [[ $out == *"served by pid $spid, not by iouring-bpf"*"--force"* ]] &&
	ok "iouring-bpf ublk del refuses it: $out" || bad "iouring-bpf ublk del: exit $rc: $out"
[ -e "/sys/class/ublk-char/ublkc$id" ] && kill -0 "$spid" 2>/dev/null &&
	cmp -s "$work/pat" <(dd if="$dev" bs=1M skip=8 count=4 iflag=direct status=none) &&
	ok "the device and its server are untouched" || bad "the refused del touched ublk $id"

# SIGTERM: the program stops the device, deletes it and exits 0
kill -TERM "$spid"
if wait_gone "$spid"; then
	wait "$spid"
	rc=$?
	spid=
	[ $rc = 0 ] && ok "SIGTERM: exit 0" || bad "SIGTERM: exit $rc: $(cat "$work/out.err")"
else
	bad "SIGTERM: ublk_serve ($spid) still runs 20 s later"
fi
grep -q 'Terminated: stopping the device' "$work/out.err" && ok "SIGTERM: it said so" ||
	bad "SIGTERM: stderr: $(cat "$work/out.err")"
for i in $(seq 50); do
	[ -e "/sys/class/ublk-char/ublkc$id" ] || [ -e "/sys/block/ublkb$id" ] || break
	sleep 0.1
done
[ ! -e "/sys/class/ublk-char/ublkc$id" ] && [ ! -e "/sys/block/ublkb$id" ] &&
	ok "ublk $id is gone (block and char device)" || bad "ublk $id still exists"
[ ! -b "$dev" ] && ok "$dev is gone" || bad "$dev is still there"
cmp -s "$work/pat" <(dd if="$img" bs=1M skip=8 count=4 status=none) &&
	ok "the file keeps the data" || bad "the file lost the data written through the device"

# --force: a second server's device is deleted by the tool
truncate -s 16M "$work/second.img"
serve "$work/second.img" "$work/out2"
if [[ $(head -n 1 "$work/out2") =~ ^/dev/ublkb([0-9]+)$ ]]; then
	id2=${BASH_REMATCH[1]}
	out=$(timeout 60 "$TOOL" ublk del "$id2" --force 2>&1) &&
		[ ! -e "/sys/class/ublk-char/ublkc$id2" ] && ok "del $id2 --force: $out" ||
		bad "del $id2 --force: $out"
	kill -TERM "$spid" 2>/dev/null
	wait_gone "$spid" || kill -9 "$spid"
	spid=
else
	bad "a second ublk_serve: $(cat "$work/out2" "$work/out2.err")"
fi
finish
