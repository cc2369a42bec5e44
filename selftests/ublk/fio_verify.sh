#!/usr/bin/env bash
# ublk/fio-verify-TARGET (vm, root): fio writes random blocks and verifies
# them (crc32c) through a device of TARGET (loop, split or loop-user), with
# 4 KiB and 512 KiB blocks at iodepth 32, on 1 and on 2 queues (2 queues:
# two fio jobs on different CPUs, so both queues carry I/O). Afterwards the
# device's bytes equal the backing files' bytes.
# usage: fio_verify.sh TOOL TARGET     Exit 0 pass, 1 fail, 77 skip.
set -u
T=$(realpath "$1")
target=$2
. "$(dirname "$0")/lib.sh"
ublk_require

for queues in 1 2; do
	files=()
	if [ "$target" = split ]; then
		# an odd boundary (20 MiB + 4 KiB) so 512 KiB requests straddle it
		truncate -s $(( (20 << 20) + 4096 )) "$work/a$queues.img"
		truncate -s $(( (44 << 20) - 4096 )) "$work/b$queues.img"
		files=(--file "$work/a$queues.img" --file "$work/b$queues.img")
	else
		truncate -s 64M "$work/f$queues.img"
		files=(--file "$work/f$queues.img")
	fi
	out=$(ublk_add --target "$target" "${files[@]}" --queues "$queues" --depth 32) ||
		{ bad "add $target, $queues queue(s)"; continue; }
	id=$(jget '["id"]' <<<"$out")
	dev=/dev/ublkb$id
	for bs in 4k 512k; do
		fio_verify "$dev" "q$queues-$bs" --rw=randwrite --bs="$bs" --iodepth=32 \
			--numjobs="$queues" --offset_increment=32M --size=16M \
			--cpus_allowed_policy=split &&
			ok "$target, $queues queue(s), randwrite $bs iodepth 32 x $queues job(s): verified" ||
			bad "$target, $queues queue(s), $bs: fio verify failed"
	done
	# the device is exactly the concatenation of its files
	if [ "$target" = split ]; then
		cmp -s <(dd if="$dev" bs=1M iflag=direct status=none) \
			<(cat "$work/a$queues.img" "$work/b$queues.img") &&
			ok "device bytes == A then B" || bad "device bytes differ from A+B"
	else
		cmp -s <(dd if="$dev" bs=1M iflag=direct status=none) "$work/f$queues.img" &&
			ok "device bytes == file bytes" || bad "device bytes differ from the file"
	fi
	"$T" ublk del "$id" > /dev/null && ok "del $id" || bad "del $id"
done
finish
