#!/usr/bin/env bash
# ublk/safety-* (vm, root): a ublk loop device loses no data and never turns
# an error into data, on the daemon path and (UBLK_PATH=kernel) the kernel
# path, whose file I/O runs in a worker of the device, not in the task that
# submitted the bio. Backing disks are memory-backed null_blk disks made
# through configfs, with ext4 on them where a file is the backing.
#  read-errors: a 16 MiB backing file on ext4 whose blocks 16..23 sit on bad
#               sectors; caches dropped, a 128 KiB read across them (direct
#               and buffered) fails with EIO and hands no zeros; a write
#               there fails its fsync; after the sectors heal, every write
#               that was acknowledged with its fsync reads back, and fio
#               verify (verify_fatal) passes.
#  killed-reader: ext4 on the ublk device over a file on a slow disk
#               (null_blk, 1 ms per I/O); a reader of a file there is
#               SIGKILLed mid-read, ten times, while another reads the same
#               bytes: the other reader, and every read after, gets the
#               file's bytes, never zeros.
#  submitter:   the submitter's limits stay its own: a writer under
#               `ulimit -f 512` writes 4 MiB at 16 MiB of the device (no
#               EFBIG, no SIGXFSZ); fsync callers of a file on ext4 on the
#               device SIGKILLed mid-fsync, five times: no I/O error in the
#               kernel log, the file system stays writable, sync succeeds.
#  flush:       the device advertises a volatile write cache; over a file
#               on ext4 (a tracepoint on that inode's fsync): a plain write
#               syncs nothing, an O_DSYNC write (REQ_FUA) and a flush of
#               the block device (its fsync) each sync the file.
#  stalled:     (kernel path) device A's backing is device B, whose server
#               is stopped (SIGSTOP): a read of A waits. Meanwhile neither
#               A nor a third device C is BLK_MQ_F_BLOCKING (blk-mq
#               debugfs), and C is deleted and its server exits within
#               30 s. After SIGCONT the read completes with B's bytes.
#  clone:       (kernel path) a request of one extent on a block device the
#               server opened O_DIRECT is cloned onto that device's queue:
#               block tracepoints see requests issued on the disk and no
#               bio submitted to it (the worker's direct I/O submits bios).
#               On null_blk without memory (its memory-backed queue may
#               block, which keeps the worker) with two tags, fio at QD32
#               gets no error while some clones find no tag and take the
#               worker instead; bad sectors fail 4 KiB and
#               128 KiB reads and a write with EIO, and after they heal the
#               same I/O succeeds. On a scsi_debug RAM disk (write cache,
#               FUA): the device reads the disk's bytes; a plain write sends
#               the disk no flush, an O_DSYNC write and the device's fsync
#               each send one; a medium error fails a read (an error, no
#               zeros); after it clears, an acknowledged write reads back on
#               the device and the disk, and fio verify passes.
#  two-backings: a split device over two null_blk disks with write caches:
#               a flush of the device reaches both; with bad sectors at the
#               start of the second, a read across the boundary fails (EIO,
#               no zeros), the first half alone reads right, and after
#               they heal the whole device reads as the two disks do.
# Every step is bounded by a timeout.
# usage: data_safety.sh TOOL MODE     Exit 0 pass, 1 fail, 77 skip.
set -u
T=$(realpath "$1")
mode=$2
. "$(dirname "$0")/lib.sh"
ublk_require
need_program mkfs.ext4
need_program filefrag
M=$((1 << 20))

cfs=/sys/kernel/config
dbg=/sys/kernel/debug
mountpoint -q "$cfs" || mount -t configfs none "$cfs" 2>/dev/null
mountpoint -q "$dbg" || mount -t debugfs none "$dbg" 2>/dev/null
[ -d "$cfs/nullb" ] || no_feature "no null_blk configfs (CONFIG_BLK_DEV_NULL_BLK, CONFIG_CONFIGFS_FS)"

nbs=() mnts=() pids=()
cleanup_safety() {
	local p n i
	for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; done
	for i in $(cat "$work/ublk_ids" 2>/dev/null); do
		timeout 60 "$T" ublk del "$i" > /dev/null 2>&1
	done
	for ((i = ${#mnts[@]} - 1; i >= 0; i--)); do umount "${mnts[i]}" 2>/dev/null; done
	trace_stop
	[ -z "${sdbg_host:-}" ] || { echo 0 > "$sdbg/opts"; echo -1 > "$sdbg/add_host"; }
	for n in "${nbs[@]}"; do
		[ -d "$n" ] && { echo 0 > "$n/power"; rmdir "$n"; }
	done
	ublk_cleanup
}
trap cleanup_safety EXIT

# nullb NAME MIB [ATTR=VALUE...]: a memory-backed null_blk disk; its
# configfs directory in $nb, its block device in $nbdev
nullb() {
	local name=$1 size=$2 a i
	shift 2
	nb=$cfs/nullb/$name$$
	mkdir "$nb" || return 1
	nbs+=("$nb")
	echo "$size" > "$nb/size" && echo 1 > "$nb/memory_backed" && echo 512 > "$nb/blocksize" ||
		return 1
	for a in "$@"; do echo "${a#*=}" > "$nb/${a%%=*}" || return 1; done
	echo 1 > "$nb/power" || return 1
	nbdev=/dev/${nb##*/}
	for i in $(seq 50); do [ -b "$nbdev" ] && return 0; sleep 0.1; done
	return 1
}

# fs_on DEV DIR: ext4 on DEV mounted at DIR
fs_on() {
	mkdir -p "$2"
	mkfs.ext4 -q -F -b 4096 "$1" && mount "$1" "$2" && mnts+=("$2")
}

# add_loop FILE [ARGS...]: a loop device over FILE on this test's path; $id, $dev, $dpid
add_loop() {
	local out f=$1
	shift
	out=$(ublk_add --target loop --file "$f" "$@") || return 1
	id=$(jget '["id"]' <<<"$out")
	# shellcheck disable=SC2034 # one of add_loop's results, for the callers
	dpid=$(jget '["pid"]' <<<"$out")
	dev=/dev/ublkb$id
}

# phys_block FILE N: the physical 4 KiB block of FILE's block N
phys_block() {
	filefrag -e -b4096 "$1" | python3 -c '
import re, sys
n = int(sys.argv[1])
for line in sys.stdin:
    m = re.match(r"\s*\d+:\s*(\d+)\.\.\s*(\d+):\s*(\d+)\.\.", line)
    if m and int(m.group(1)) <= n <= int(m.group(2)):
        print(int(m.group(3)) + n - int(m.group(1)))
        break
' "$2"
}

drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches; }
fsync_dev() { timeout 60 python3 -c 'import os, sys; os.fsync(os.open(sys.argv[1], os.O_WRONLY))' "$1"; }

# zero_blocks FILE: how many of its 4 KiB blocks are all zeros
zero_blocks() {
	[ -e "$1" ] || { echo 0; return; }
	python3 -c '
import sys
d = open(sys.argv[1], "rb").read()
print(sum(1 for i in range(0, len(d), 4096) if d[i:i + 4096] == bytes(len(d[i:i + 4096]))))
' "$1"
}

read_errors() {
	local f msg rc p s0 s1 n pat=$work/pat
	nullb bad 64 || { bad "null_blk"; return; }
	fs_on "$nbdev" "$work/fs" || { bad "ext4 on $nbdev"; return; }
	f=$work/fs/backing
	head -c $((16 * M)) /dev/urandom > "$pat"
	cp "$pat" "$f" && sync || { bad "writing the backing file"; return; }
	add_loop "$f" || { bad "add over $f"; return; }
	p=$(phys_block "$f" 16)
	[ -n "$p" ] && [ "$(phys_block "$f" 23)" = $((p + 7)) ] ||
		{ bad "blocks 16..23 of $f are not contiguous: $(filefrag -e -b4096 "$f")"; return; }
	s0=$((p * 8)) s1=$((p * 8 + 63))
	echo "+$s0-$s1" > "$nb/badblocks" || { bad "badblocks"; return; }
	ok "file blocks 16..23 are disk sectors $s0..$s1, now bad"

	drop_caches
	rm -f "$work/got"
	msg=$(timeout 60 dd if="$dev" of="$work/got" bs=128k count=1 iflag=direct 2>&1)
	rc=$?
	if [ $rc != 0 ] && grep -q "Input/output error" <<<"$msg"; then
		ok "a direct 128 KiB read across the bad blocks: EIO"
	else
		bad "a direct 128 KiB read across the bad blocks: exit $rc," \
		    "$(zero_blocks "$work/got") of 32 blocks all zero: $msg"
	fi
	# buffered: read() returns the good bytes before the error, then EIO
	drop_caches
	rm -f "$work/got"
	msg=$(timeout 60 dd if="$dev" of="$work/got" bs=128k count=1 2>&1)
	rc=$?
	n=$(stat -c %s "$work/got" 2>/dev/null || echo 0)
	if { [ $rc != 0 ] || [ "$n" -lt $((128 << 10)) ]; } && [ "$n" -gt 0 ] &&
		cmp -s "$work/got" <(head -c "$n" "$pat"); then
		ok "a buffered 128 KiB read across the bad blocks: $n bytes, all the file's (exit $rc)"
	else
		bad "a buffered 128 KiB read across the bad blocks: exit $rc, $n bytes," \
		    "$(zero_blocks "$work/got") blocks all zero: $msg"
	fi
	msg=$(timeout 60 dd if="$dev" of="$work/got" bs=64k skip=1 count=1 2>&1)
	rc=$?
	[ $rc != 0 ] && grep -q "Input/output error" <<<"$msg" &&
		ok "a buffered read starting in the bad blocks: EIO" ||
		bad "a buffered read starting in the bad blocks: exit $rc," \
		    "$(zero_blocks "$work/got") blocks all zero: $msg"
	cmp -s <(timeout 60 dd if="$dev" bs=64k skip=4 count=4 iflag=direct status=none) \
		<(dd if="$pat" bs=64k skip=4 count=4 status=none) &&
		ok "the blocks after the bad ones read right" || bad "reads beside the bad blocks"

	# writes: acknowledged only once stable, and then they are
	head -c $((64 << 10)) /dev/urandom > "$pat.w"
	msg=$(timeout 60 dd if="$pat.w" of="$dev" bs=64k seek=1 count=1 oflag=direct conv=fsync 2>&1)
	rc=$?
	[ $rc != 0 ] && grep -q "Input/output error" <<<"$msg" &&
		ok "a write onto the bad blocks fails its fsync with EIO (dd exit $rc)" ||
		bad "a write onto the bad blocks: exit $rc, want an I/O error: $msg"
	timeout 60 dd if="$pat.w" of="$dev" bs=64k seek=64 count=1 oflag=direct conv=fsync \
		status=none && ok "a write elsewhere and its fsync succeed" ||
		bad "a write away from the bad blocks failed"
	echo "-$s0-$s1" > "$nb/badblocks" || bad "clearing badblocks"
	drop_caches
	cmp -s <(timeout 60 dd if="$dev" bs=64k skip=64 count=1 iflag=direct status=none) "$pat.w" &&
		ok "the acknowledged write reads back after the fault cleared" ||
		bad "the acknowledged write is not on the device"
	cmp -s <(dd if="$f" bs=64k skip=64 count=1 iflag=direct status=none) "$pat.w" &&
		ok "... and is in the backing file on the disk" || bad "the acknowledged write is not in the file"
	timeout 300 bash -c "$(declare -f fio_verify); work=$(printf %q "$work");
		fio_verify $dev healed --rw=randwrite --bs=4k --iodepth=16 --size=16M \
			--verify_fatal=1" &&
		ok "fio randwrite + verify (verify_fatal) after the fault cleared" || bad "fio verify"
}

killed_reader() {
	local f i r1 r2 want sum bad_runs=0 z killed=0
	nullb slow 256 irqmode=2 completion_nsec=1000000 || { bad "null_blk"; return; }
	fs_on "$nbdev" "$work/fs" || { bad "ext4 on $nbdev"; return; }
	f=$work/fs/backing
	truncate -s 128M "$f"
	add_loop "$f" || { bad "add over $f"; return; }
	fs_on "$dev" "$work/top" || { bad "ext4 on $dev"; return; }
	head -c $((32 * M)) /dev/urandom > "$work/top/data"
	want=$(sha256sum < "$work/top/data")
	for i in $(seq 10); do
		drop_caches
		dd if="$work/top/data" of=/dev/null bs=1M 2> /dev/null &
		r1=$!
		(sha256sum < "$work/top/data" > "$work/sum2") &
		r2=$!
		sleep "0.$((RANDOM % 5))$((RANDOM % 10))"
		kill -9 "$r1" 2> /dev/null
		wait_exit "$r2" 120 || { bad "run $i: the second reader hangs"; kill -9 "$r2"; break; }
		wait "$r1" 2> /dev/null
		# 137: SIGKILL ended it mid-read; 0: it had finished first
		[ $? = 137 ] && killed=$((killed + 1))
		[ "$(cat "$work/sum2")" = "$want" ] || bad_runs=$((bad_runs + 1))
		sum=$(sha256sum < "$work/top/data")
		[ "$sum" = "$want" ] || {
			cp "$work/top/data" "$work/got"
			z=$(zero_blocks "$work/got")
			bad "run $i: after the killed reader the cached file differs ($z blocks all zero)"
			break
		}
	done
	[ $bad_runs = 0 ] && ok "10 runs: the second reader and every later read got the file's bytes" ||
		bad "$bad_runs of 10 runs: the second reader got other bytes"
	[ "$killed" -ge 5 ] && ok "$killed of 10 readers were killed mid-read" ||
		bad "only $killed of 10 readers were killed mid-read: the test did not test the kill"
}

submitter() {
	local img=$work/sub.img msg rc i p k0
	head -c $((64 * M)) /dev/urandom > "$img"
	head -c $((4 * M)) /dev/urandom > "$work/pat"
	add_loop "$img" || { bad "add over $img"; return; }
	msg=$( (ulimit -f 512; timeout 60 dd if="$work/pat" of="$dev" bs=1M seek=16 oflag=direct) 2>&1)
	rc=$?
	[ $rc = 0 ] && ! grep -qi "file size limit" <<<"$msg" &&
		ok "a writer under ulimit -f 512 writes 4 MiB at 16 MiB (exit 0)" ||
		bad "ulimit -f writer: exit $rc: $msg"
	cmp -s "$work/pat" <(dd if="$img" bs=1M skip=16 count=4 status=none) &&
		ok "... and the bytes are in the backing file" || bad "the ulimit -f writer's bytes are not in the file"

	fs_on "$dev" "$work/top" || { bad "ext4 on $dev"; return; }
	k0=$(dmesg | wc -l)
	for i in $(seq 5); do
		rm -f "$work/top/f$((i - 1))"
		dd if=/dev/urandom of="$work/top/f$i" bs=1M count=24 status=none
		dd if=/dev/zero of="$work/top/f$i" bs=1M count=8 conv=fsync,notrunc status=none &
		p=$!
		sleep "0.$((RANDOM % 3))"
		kill -9 "$p" 2> /dev/null
		wait_exit "$p" 60 || { bad "run $i: the killed fsync caller does not end"; break; }
	done
	timeout 120 sync -f "$work/top/f5" && ok "sync after 5 SIGKILLed fsync callers succeeds" ||
		bad "sync after the killed fsync callers failed"
	touch "$work/top/after" && ok "the file system is still writable" || bad "the file system went read-only"
	msg=$(dmesg | tail -n +$((k0 + 1)) | grep -E "ublkb$id|EXT4-fs (error|warning)|Buffer I/O error")
	[ -z "$msg" ] && ok "no I/O error in the kernel log" || bad "kernel log: $msg"
}

flush() {
	local f ino tr ev n0 n1 n2 n3
	tr=/sys/kernel/tracing
	[ -d "$tr/events" ] || mount -t tracefs nodev "$tr" 2>/dev/null
	ev=$tr/events/ext4/ext4_sync_file_enter
	[ -d "$ev" ] || no_feature "no ext4 tracepoints in tracefs (CONFIG_EVENT_TRACING)"
	nullb fl 64 || { bad "null_blk"; return; }
	fs_on "$nbdev" "$work/fs" || { bad "ext4 on $nbdev"; return; }
	f=$work/fs/backing
	head -c $((16 * M)) /dev/urandom > "$f" && sync
	ino=$(stat -c %i "$f")
	add_loop "$f" || { bad "add over $f"; return; }
	[ "$(cat /sys/block/ublkb$id/queue/write_cache)" = "write back" ] &&
		ok "ublkb$id advertises a volatile write cache (flushes will come)" ||
		bad "ublkb$id: write_cache $(cat /sys/block/ublkb$id/queue/write_cache)"
	echo "ino == $ino" > "$ev/filter" && echo 1 > "$ev/enable" && echo > "$tr/trace" ||
		{ bad "tracepoint ext4_sync_file_enter"; return; }
	syncs() { grep -c "ext4_sync_file_enter" "$tr/trace"; }
	head -c $((64 << 10)) /dev/urandom > "$work/pat"
	n0=$(syncs)
	timeout 60 dd if="$work/pat" of="$dev" bs=64k seek=2 oflag=direct status=none
	n1=$(syncs)
	timeout 60 dd if="$work/pat" of="$dev" bs=64k seek=3 oflag=direct,dsync status=none
	n2=$(syncs)
	# fsync() of the block device sends a flush (REQ_PREFLUSH)
	fsync_dev "$dev"
	n3=$(syncs)
	echo 0 > "$ev/enable"
	echo 0 > "$ev/filter"
	[ "$n1" = "$n0" ] && ok "a plain write syncs nothing (the cache is volatile)" ||
		bad "a plain write synced the backing file ($n0 -> $n1)"
	[ "$n2" -gt "$n1" ] && ok "an O_DSYNC (FUA) write syncs the backing file ($n1 -> $n2)" ||
		bad "an O_DSYNC write did not sync the backing file"
	[ "$n3" -gt "$n2" ] && ok "a flush of ublkb$id syncs the backing file ($n2 -> $n3)" ||
		bad "a flush did not sync the backing file"
}

# blocking ID: 0 if any hardware queue of ublkbID is BLK_MQ_F_BLOCKING
# (and fails the test when there are no flags to read: not a pass)
blocking() {
	local f found=0
	for f in /sys/kernel/debug/block/ublkb"$1"/hctx*/flags; do
		[ -r "$f" ] || continue
		found=1
		grep -qw BLOCKING "$f" && return 0
	done
	[ $found = 1 ] || bad "no /sys/kernel/debug/block/ublkb$1/hctx*/flags to read"
	return 1
}

stalled() {
	local out bid bpid aid cid cpid r rc t0
	[ -e /sys/kernel/debug/block ] || no_feature "no blk-mq debugfs (CONFIG_BLK_DEBUG_FS)"
	head -c $((32 * M)) /dev/urandom > "$work/b.img"
	truncate -s 32M "$work/c.img"
	out=$("$T" -j ublk add --target loop --file "$work/b.img") || { bad "add B: $out"; return; }
	bid=$(jget '["id"]' <<<"$out") bpid=$(jget '["pid"]' <<<"$out")
	ublk_remember "$bid"
	out=$("$T" -j ublk add --target loop --file "$work/c.img") || { bad "add C: $out"; return; }
	cid=$(jget '["id"]' <<<"$out") cpid=$(jget '["pid"]' <<<"$out")
	ublk_remember "$cid"
	wait_bdev "$bid" || { bad "no /dev/ublkb$bid"; return; }
	add_loop "/dev/ublkb$bid" || { bad "add A over /dev/ublkb$bid"; return; }
	aid=$id
	blocking "$cid" && bad "C (ublkb$cid, no hook) is BLK_MQ_F_BLOCKING" ||
		ok "C (ublkb$cid, no hook): $(cat /sys/kernel/debug/block/ublkb$cid/hctx0/flags)"
	blocking "$aid" && bad "A (ublkb$aid, the hook) is BLK_MQ_F_BLOCKING" ||
		ok "A (ublkb$aid, the hook): $(cat /sys/kernel/debug/block/ublkb$aid/hctx0/flags)"

	kill -STOP "$bpid" && pids+=("$bpid")
	timeout 120 dd if="/dev/ublkb$aid" of="$work/a.got" bs=64k count=1 skip=5 iflag=direct \
		status=none &
	r=$!
	sleep 1
	alive "$r" && ok "a read of A waits for B's stopped server" || bad "the read of A did not wait"
	t0=$SECONDS
	timeout 30 "$T" ublk del "$cid" > /dev/null && wait_gone "$cpid" &&
		ok "C deleted and its server gone in $((SECONDS - t0)) s while A's backing stalls" ||
		bad "C's deletion or its server's exit took over 30 s while A's backing stalls"
	kill -CONT "$bpid"
	wait_exit "$r" 60 || { bad "the read of A still waits 60 s after SIGCONT"; stacks "$r"; }
	[ "${rc:-1}" = 0 ] && cmp -s "$work/a.got" <(dd if="$work/b.img" bs=64k skip=5 count=1 status=none) &&
		ok "after SIGCONT the read of A completes with B's bytes" || bad "the read of A: exit ${rc:-?}"
	timeout 60 "$T" ublk del "$aid" > /dev/null && ok "del A" || bad "del A"
	timeout 60 "$T" ublk del "$bid" > /dev/null && ok "del B" || bad "del B"
}

# trace_start: record block_bio_queue and block_rq_issue in a tracefs
# instance of this test; trace_count DEV KIND [RWBS-REGEX]: how many events
# of KIND (bio_queue, rq_issue) on block device DEV since the start. A flush
# request's RWBS starts with F (REQ_PREFLUSH; data writes lose it in the
# flush machinery before they are issued).
trace_start() {
	local t=/sys/kernel/tracing
	[ -d "$t/instances" ] || mount -t tracefs nodev "$t" 2>/dev/null
	[ -d "$t/events/block/block_rq_issue" ] ||
		no_feature "no block tracepoints in tracefs (CONFIG_EVENT_TRACING)"
	tri=$t/instances/ublk-safety$$
	[ -d "$tri" ] || mkdir "$tri" || return 1
	echo 8192 > "$tri/buffer_size_kb"
	echo 1 > "$tri/events/block/block_bio_queue/enable" &&
		echo 1 > "$tri/events/block/block_rq_issue/enable" && echo > "$tri/trace"
}
trace_stop() { [ -n "${tri:-}" ] && [ -d "$tri" ] && { echo 0 > "$tri/events/enable"; rmdir "$tri"; }; }
trace_count() {
	local mm
	mm=$(stat -L -c '%t %T' "$1" | while read -r a b; do echo "$((16#$a)),$((16#$b))"; done)
	awk -v ev="block_$2:" -v mm="$mm" -v re="${3:-.}" \
		'{ for (i = 1; i < NF; i++) if ($i == ev && $(i + 1) == mm && $(i + 2) ~ re) n++ }
		 END { print n + 0 }' "$tri/trace"
}

# cloned DISK: 256 reads and 256 writes of 4 KiB through $dev are cloned
# onto DISK: as many requests issued there, and no bio submitted to it
cloned() {
	local disk=$1 r0 b0 r1 b1
	r0=$(trace_count "$disk" rq_issue) b0=$(trace_count "$disk" bio_queue)
	timeout 60 dd if="$dev" of=/dev/null bs=4k count=256 iflag=direct status=none &&
		timeout 60 dd if="$work/pat" of="$dev" bs=4k seek=1024 count=256 oflag=direct status=none ||
		{ bad "4 KiB reads and writes through $dev failed"; return; }
	r1=$(trace_count "$disk" rq_issue) b1=$(trace_count "$disk" bio_queue)
	[ $((r1 - r0)) -ge 512 ] && [ "$b1" = "$b0" ] &&
		ok "512 reads and writes of 4 KiB: $((r1 - r0)) requests issued on $disk, no bio submitted to it (cloned)" ||
		bad "512 reads and writes of 4 KiB: $((r1 - r0)) requests issued on $disk, $((b1 - b0)) bios submitted to it (want >= 512 and 0: not cloned)"
}

# fails WHAT ERROR-REGEX CMD...: CMD fails with an error its message names
# (dd's strerror text: $eio, or ENODATA's for a SCSI medium error) and
# leaves no all-zero block in $work/got
eio="Input/output error"
fails() {
	local what=$1 re=$2 msg rc
	shift 2
	rm -f "$work/got"
	msg=$("$@" 2>&1)
	rc=$?
	[ $rc != 0 ] && grep -Eq "$re" <<<"$msg" &&
		[ "$(zero_blocks "$work/got")" = 0 ] && ok "$what: an I/O error, no zeros" ||
		bad "$what: exit $rc, $(zero_blocks "$work/got") blocks all zero: $msg"
}

clone_null_blk() {
	local disk
	local r0 b0 r1 b1
	# two tags held 100 us each (timer completion): at QD32 a clone often
	# finds none and takes the worker
	nullb cl 64 memory_backed=0 hw_queue_depth=2 irqmode=2 completion_nsec=100000 || { bad "null_blk"; return; }
	disk=$nbdev
	head -c $((4 * M)) /dev/urandom > "$work/pat"
	add_loop "$disk" || { bad "add over $disk"; return; }
	trace_start || { bad "tracefs instance"; return; }
	cloned "$disk"
	r0=$(trace_count "$disk" rq_issue) b0=$(trace_count "$disk" bio_queue)
	timeout 120 fio --name=busy --filename="$dev" --ioengine=io_uring --direct=1 --rw=randrw \
		--bs=4k --iodepth=32 --size=32M --io_size=16M --output="$work/busy.fio" &&
		grep -q 'err= 0' "$work/busy.fio" || bad "fio randrw 4k QD32 on two tags: $(cat "$work/busy.fio")"
	r1=$(trace_count "$disk" rq_issue) b1=$(trace_count "$disk" bio_queue)
	[ $((b1 - b0)) -gt 0 ] && [ $((r1 - r0)) -gt $((b1 - b0)) ] &&
		ok "QD32 on two tags: $((r1 - r0)) requests issued, $((b1 - b0)) of them from the worker (no tag for a clone)" ||
		bad "QD32 on two tags: $((r1 - r0)) requests issued, $((b1 - b0)) bios from the worker (want both paths)"
	trace_stop
	# sectors 2048..2175 (1 MiB .. +64 KiB) go bad
	echo "+2048-2175" > "$nb/badblocks" || { bad "badblocks"; return; }
	fails "a 4 KiB read of a bad sector" "$eio" \
		timeout 60 dd if="$dev" of="$work/got" bs=4k skip=256 count=1 iflag=direct
	fails "a 128 KiB read across the bad sectors" "$eio" \
		timeout 60 dd if="$dev" of="$work/got" bs=128k skip=$((960 << 10)) count=1 \
		iflag=direct,skip_bytes
	fails "a 4 KiB write onto a bad sector" "$eio" \
		timeout 60 dd if="$work/pat" of="$dev" bs=4k seek=257 count=1 oflag=direct
	echo "-2048-2175" > "$nb/badblocks" || bad "clearing badblocks"
	timeout 60 dd if="$dev" of=/dev/null bs=128k skip=$((960 << 10)) count=1 \
		iflag=direct,skip_bytes status=none &&
		timeout 60 dd if="$work/pat" of="$dev" bs=4k seek=257 count=1 oflag=direct status=none &&
		ok "after the sectors heal the same read and write succeed" ||
		bad "a read or write after the sectors healed failed"
	timeout 60 "$T" ublk del "$id" > /dev/null || bad "del $id"
}

clone_scsi_debug() {
	local disk i f0 f1 f2 f3
	sdbg=/sys/bus/pseudo/drivers/scsi_debug
	[ -d "$sdbg" ] || no_feature "no scsi_debug (CONFIG_SCSI_DEBUG)"
	echo 0 > "$sdbg/delay" && echo 1 > "$sdbg/add_host" || { bad "scsi_debug host"; return; }
	sdbg_host=1
	for i in $(seq 100); do
		disk=$(ls -d "$sdbg"/adapter*/host*/target*/*/block/sd* 2>/dev/null | head -n 1)
		[ -n "$disk" ] && [ -b "/dev/${disk##*/}" ] && break
		disk= && sleep 0.1
	done
	[ -n "$disk" ] || { bad "no disk of the scsi_debug host"; return; }
	disk=/dev/${disk##*/}
	[ "$(cat "/sys/block/${disk##*/}/queue/write_cache")" = "write back" ] ||
		bad "$disk has no write cache: $(cat "/sys/block/${disk##*/}/queue/write_cache")"
	head -c $((64 * M)) /dev/urandom > "$work/pat"
	dd if="$work/pat" of="$disk" bs=1M oflag=direct status=none || { bad "filling $disk"; return; }
	add_loop "$disk" || { bad "add over $disk"; return; }
	cmp -s <(timeout 60 dd if="$dev" bs=1M count=4 iflag=direct status=none) \
		<(head -c $((4 * M)) "$work/pat") && ok "the device reads $disk's bytes" ||
		bad "the device and $disk differ"
	trace_start || { bad "tracefs instance"; return; }
	cloned "$disk"
	f0=$(trace_count "$disk" rq_issue '^F')
	timeout 60 dd if="$work/pat" of="$dev" bs=64k seek=40 count=1 oflag=direct status=none
	f1=$(trace_count "$disk" rq_issue '^F')
	timeout 60 dd if="$work/pat" of="$dev" bs=64k seek=41 count=1 oflag=direct,dsync status=none
	f2=$(trace_count "$disk" rq_issue '^F')
	fsync_dev "$dev"
	f3=$(trace_count "$disk" rq_issue '^F')
	trace_stop
	[ "$f1" = "$f0" ] && ok "a plain write sends no flush to $disk" ||
		bad "a plain write sent $((f1 - f0)) flushes to $disk"
	[ "$f2" -gt "$f1" ] && ok "an O_DSYNC write sends a flush to $disk ($((f2 - f1)))" ||
		bad "an O_DSYNC write sent no flush to $disk"
	[ "$f3" -gt "$f2" ] && ok "a flush of the device reaches $disk ($((f3 - f2)))" ||
		bad "a flush of the device did not reach $disk"

	# a medium error on reads of sectors 2048..2175 (1 MiB .. +64 KiB)
	echo 2048 > /sys/module/scsi_debug/parameters/medium_error_start &&
		echo 128 > /sys/module/scsi_debug/parameters/medium_error_count &&
		echo 2 > "$sdbg/opts" || { bad "scsi_debug medium errors"; return; }
	fails "a 128 KiB read across the medium error" "$eio|No data available" \
		timeout 60 dd if="$dev" of="$work/got" bs=128k skip=$((960 << 10)) count=1 \
		iflag=direct,skip_bytes
	head -c $((64 << 10)) /dev/urandom > "$work/pat.w"
	timeout 60 dd if="$work/pat.w" of="$dev" bs=64k seek=100 count=1 oflag=direct conv=fsync \
		status=none && ok "a write elsewhere and its fsync succeed" || bad "a write away from the medium error failed"
	echo 0 > "$sdbg/opts" || bad "clearing the medium error"
	cmp -s <(timeout 60 dd if="$dev" bs=64k skip=100 count=1 iflag=direct status=none) "$work/pat.w" &&
		cmp -s <(dd if="$disk" bs=64k skip=100 count=1 iflag=direct status=none) "$work/pat.w" &&
		ok "the acknowledged write reads back, on the device and on $disk" ||
		bad "the acknowledged write is not on the device or on $disk"
	timeout 300 bash -c "$(declare -f fio_verify); work=$(printf %q "$work");
		fio_verify $dev cloned --rw=randwrite --bs=4k --iodepth=32 --size=16M \
			--verify_fatal=1" &&
		ok "fio randwrite 4k QD32 + verify (verify_fatal) on the cloned path" || bad "fio verify"
}

two_backings() {
	local a b out msg rc fa fb
	nullb two0 32 cache_size=8 || { bad "null_blk"; return; }
	a=$nbdev
	nullb two1 32 cache_size=8 || { bad "null_blk"; return; }
	b=$nbdev
	head -c $((32 * M)) /dev/urandom > "$work/a.pat"
	head -c $((32 * M)) /dev/urandom > "$work/b.pat"
	dd if="$work/a.pat" of="$a" bs=1M oflag=direct status=none &&
		dd if="$work/b.pat" of="$b" bs=1M oflag=direct status=none || { bad "filling the disks"; return; }
	out=$(ublk_add --target split --file "$a" --file "$b") || { bad "add split over $a $b"; return; }
	id=$(jget '["id"]' <<<"$out")
	dev=/dev/ublkb$id
	trace_start || { bad "tracefs instance"; return; }
	fa=$(trace_count "$a" rq_issue '^F') fb=$(trace_count "$b" rq_issue '^F')
	timeout 60 dd if="$work/a.pat" of="$dev" bs=64k seek=3 count=1 oflag=direct status=none
	fsync_dev "$dev"
	fa=$(($(trace_count "$a" rq_issue '^F') - fa)) fb=$(($(trace_count "$b" rq_issue '^F') - fb))
	[ "$fa" -gt 0 ] && [ "$fb" -gt 0 ] && ok "a flush of the split device reaches both disks" ||
		bad "a flush of the split device: $fa flushes on $a, $fb on $b (want at least 1 each)"
	trace_stop

	# the second disk's first 64 KiB go bad: a read that ends there fails
	echo "+0-127" > "$nb/badblocks" || { bad "badblocks"; return; }
	fails "a direct read across the boundary into the bad sectors" "$eio" \
		timeout 60 dd if="$dev" of="$work/got" bs=64k skip=511 count=2 iflag=direct
	fails "a 128 KiB request spanning both disks, the second failing" "$eio" \
		timeout 60 dd if="$dev" of="$work/got" bs=128k skip=$((32 * M - (64 << 10))) count=1 \
		iflag=direct,skip_bytes
	cmp -s <(timeout 60 dd if="$dev" bs=64k skip=511 count=1 iflag=direct status=none) \
		<(dd if="$work/a.pat" bs=64k skip=511 count=1 status=none) &&
		ok "the first disk's last 64 KiB alone read right" || bad "the first disk's last 64 KiB"
	echo "-0-127" > "$nb/badblocks" || bad "clearing badblocks"
	cmp -s <(timeout 120 dd if="$dev" bs=1M iflag=direct status=none) \
		<(cat <(dd if="$a" bs=1M iflag=direct status=none) <(dd if="$b" bs=1M iflag=direct status=none)) &&
		ok "after the fault cleared the device reads as the two disks" ||
		bad "the device and the two disks differ"
}

case $mode in
read-errors) read_errors ;;
killed-reader) killed_reader ;;
submitter) submitter ;;
flush) flush ;;
stalled) stalled ;;
clone) clone_null_blk; clone_scsi_debug ;;
two-backings) two_backings ;;
*) echo "usage: data_safety.sh TOOL read-errors|killed-reader|submitter|flush|stalled|clone|two-backings"
   exit 2 ;;
esac
finish
