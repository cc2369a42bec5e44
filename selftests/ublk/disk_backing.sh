#!/usr/bin/env bash
# ublk/disk-backing[-kernel] (vm, root): backings whose I/O needs bios of
# their own, which tmpfs never does: a file on ext4 on a loop device (its
# buffered reads wait for bios), and /dev/nullb0 (a block device, opened
# O_DIRECT). On the kernel path (UBLK_PATH=kernel) the driver reads them
# from queue_rq, inside the submitter's submit_bio(): the device must start
# (its partition scan), fio verify must pass on the ext4 file and the
# device's bytes must equal the file's; fio must run clean on null_blk.
# Every step is bounded by a timeout, so a deadlock fails instead of hanging.
# usage: disk_backing.sh TOOL     Exit 0 pass, 1 fail, 77 skip.
set -u
T=$(realpath "$1")
. "$(dirname "$0")/lib.sh"
ublk_require

mnt=$work/mnt
mkdir -p "$mnt"
truncate -s 160M "$work/fs.img"
lo=$(losetup -f --show "$work/fs.img") || { bad "losetup"; finish; }
cleanup_disk() { umount "$mnt" 2>/dev/null; losetup -d "$lo" 2>/dev/null; }
# the devices go before the file system under them, then the rest
trap 'for i in $(cat "$work/ublk_ids" 2>/dev/null); do "$T" ublk del "$i" > /dev/null 2>&1; done
      cleanup_disk; ublk_cleanup' EXIT
mkfs.ext4 -q -F "$lo" && mount "$lo" "$mnt" || { bad "ext4 on $lo"; finish; }
img=$mnt/disk.img
dd if=/dev/urandom of="$img" bs=1M count=64 status=none
sync
echo 3 > /proc/sys/vm/drop_caches	# the file's pages come from the disk again

# ublk add gives up on a START_DEV that does not finish (60 s), never hangs
if out=$(ublk_add --target loop --file "$img"); then
	id=$(jget '["id"]' <<<"$out")
	ok "a device over a file on ext4 started (its partition scan read the disk)"
	dev=/dev/ublkb$id
	cmp -s <(timeout 60 dd if="$dev" bs=1M count=8 iflag=direct status=none) \
	       <(dd if="$img" bs=1M count=8 status=none) &&
		ok "the device reads the file's bytes" || bad "device and file differ"
	timeout 300 bash -c "$(declare -f fio_verify); work=$(printf %q "$work");
		fio_verify $dev disk --rw=randwrite --bs=4k --iodepth=16 --size=32M" &&
		ok "fio randwrite 4k + crc32c verify" || bad "fio verify on the ext4 file"
	sync
	echo 3 > /proc/sys/vm/drop_caches
	cmp -s <(timeout 60 dd if="$dev" bs=1M count=64 iflag=direct status=none) "$img" &&
		ok "all 64 MiB of the device equal the file" || bad "device and file differ after fio"
	timeout 60 "$T" ublk del "$id" > /dev/null && ok "del" || bad "del"
else
	bad "add over a file on ext4 (deadlock or error): $out"
fi

if [ -b /dev/nullb0 ]; then
	if out=$(ublk_add --target loop --file /dev/nullb0 --size 64M); then
		id=$(jget '["id"]' <<<"$out")
		ok "a device over /dev/nullb0 started"
		timeout 120 fio --name=nullb --filename=/dev/ublkb$id --allow_file_create=0 \
			--ioengine=io_uring --direct=1 --rw=randrw --bs=4k --iodepth=32 --size=64M \
			--io_size=32M --output="$work/nullb.fio" && grep -q 'err= 0' "$work/nullb.fio" &&
			ok "fio randrw 4k QD32 on null_blk" || bad "fio on null_blk: $(tail -3 "$work/nullb.fio")"
		timeout 60 "$T" ublk del "$id" > /dev/null && ok "del" || bad "del"
	else
		bad "add over /dev/nullb0: $out"
	fi
else
	bad "no /dev/nullb0 (the kernel has CONFIG_BLK_DEV_NULL_BLK=y)"
fi
finish
