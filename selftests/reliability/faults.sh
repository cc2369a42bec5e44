#!/usr/bin/env bash
# reliability/faults[-kernel] (vm, root): injected faults under a ublk loop
# device (2 queues) backed by a memory-backed null_blk disk made through
# configfs. The writer is ackcheck: it overwrites random 4 KiB blocks from
# 4 threads and remembers which writes were acknowledged; afterwards every
# acknowledged write must read back from the backing disk itself.
#  1. bad blocks: null_blk fails a chosen range of sectors. Writes there get
#     an error, writes elsewhere none, and the rest reads back intact.
#  2. fail_make_request: random bios to the backing disk fail (5%), then
#     bios to the ublk disk itself. Errors reach the writer; acknowledged
#     data is intact.
#  3. failslab + fail_page_alloc for the ublk daemon's and the writer's
#     tasks, and on the kernel path the unbound kworkers the device's worker
#     runs in (task-filter; GFP_KERNEL allocations included), so allocations in
#     io_uring, the BPF loop, the ublk driver and the block layer fail at
#     random. Whatever fails, nothing hangs, the device can be deleted, and
#     acknowledged data is intact.
# Every step is bounded by a timeout. With UBLK_PATH=kernel the device's
# policy serves requests in the driver (ublk_bpf_ops). The number of faults
# each scenario injected is printed ("injected=N").
# usage: faults.sh TOOL ACKCHECK     Exit 0 pass, 1 fail, 77 skip.
set -u
T=$(realpath "$1")
A=$(realpath "$2")
. "$(dirname "$0")/../ublk/lib.sh"
ublk_require

dbg=/sys/kernel/debug
cfs=/sys/kernel/config
mountpoint -q "$dbg" || mount -t debugfs none "$dbg" 2>/dev/null
mountpoint -q "$cfs" || mount -t configfs none "$cfs" 2>/dev/null
[ -d "$dbg/failslab" ] && [ -d "$dbg/fail_page_alloc" ] && [ -d "$dbg/fail_make_request" ] ||
	no_feature "no failslab/fail_page_alloc/fail_make_request in debugfs (CONFIG_FAULT_INJECTION_DEBUG_FS)"
[ -d "$cfs/nullb" ] || no_feature "no null_blk configfs (CONFIG_BLK_DEV_NULL_BLK, CONFIG_CONFIGFS_FS)"

nb=$cfs/nullb/nullb_rel$$	# the disk is named after the directory
faults_off() {
	local f
	for f in failslab fail_page_alloc fail_make_request; do
		echo 0 > "$dbg/$f/probability" 2>/dev/null
	done
	for f in /sys/block/*/make-it-fail; do
		echo 0 > "$f" 2>/dev/null
	done
}
cleanup_faults() {
	faults_off
	for i in $(cat "$work/ublk_ids" 2>/dev/null); do
		timeout 60 "$T" ublk del "$i" > /dev/null 2>&1
	done
	[ -d "$nb" ] && { echo 0 > "$nb/power"; rmdir "$nb"; }
	ublk_cleanup
}
trap cleanup_faults EXIT

# 64 MiB, memory backed (what was written reads back), 512-byte sectors
mkdir "$nb" || { bad "mkdir $nb"; finish; }
echo 64 > "$nb/size" && echo 1 > "$nb/memory_backed" && echo 512 > "$nb/blocksize" &&
	echo 1 > "$nb/power" || { bad "configure null_blk through configfs"; finish; }
backing=/dev/${nb##*/}
for i in $(seq 50); do [ -b "$backing" ] && break; sleep 0.1; done
[ -b "$backing" ] && ok "null_blk $backing (memory backed, configfs)" || { bad "no $backing"; finish; }

blocks=4096	# 16 MiB of 4 KiB blocks
runs=0

# one_run NAME SETUP UNDO [ACKCHECK WRITE ARGS...]: a fresh device over the
# backing, SETUP (shell, may use $dev and $dpid), ackcheck write for 8 s,
# UNDO, then the device is deleted and ackcheck verify reads the backing.
# Prints the writer's counters into $work/NAME.write.
one_run() {
	local name=$1 setup=$2 undo=$3 out id dev dpid rc
	shift 3
	out=$(ublk_add --target loop --file "$backing" --queues 2 --depth 32) ||
		{ bad "$name: add"; return; }
	id=$(jget '["id"]' <<<"$out")
	dpid=$(jget '["pid"]' <<<"$out")
	dev=/dev/ublkb$id
	eval "$setup"
	timeout 120 "$A" write "$dev" "$work/$name.ack" --blocks $blocks --threads 4 \
		--seconds 8 --seed "$RANDOM$RANDOM" "$@" > "$work/$name.write" 2>&1
	rc=$?
	eval "$undo"
	faults_off
	runs=$((runs + 1))
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		bad "$name: the writer hung (killed after 120 s)"
	elif [ $rc != 0 ]; then
		bad "$name: ackcheck write exit $rc: $(cat "$work/$name.write")"
	fi
	timeout 60 "$T" ublk del "$id" > /dev/null 2>&1 && [ ! -e "/sys/class/ublk-char/ublkc$id" ] ||
		bad "$name: ublk del $id failed or the device stayed"
	wait_gone "$dpid" || bad "$name: daemon $dpid did not exit"
	# every acknowledged write is on the backing disk
	if timeout 120 "$A" verify "$backing" "$work/$name.ack" "$@" > "$work/$name.verify" 2>&1; then
		ok "$name: $(cat "$work/$name.write"); verify: $(cat "$work/$name.verify")"
	else
		bad "$name: acknowledged data lost: $(cat "$work/$name.write"); $(cat "$work/$name.verify")"
	fi
}
# field KEY FILE: the number after KEY= in $work/FILE
field() { grep -o "\b$1=[0-9]*" "$work/$2" | head -1 | cut -d= -f2; }

# --- 1. bad blocks: sectors 2048..2175 are blocks 256..271
echo "+2048-2175" > "$nb/badblocks" || bad "set badblocks"
one_run badblocks "" "" --bad 256:16 --max-errors 1000000000
[ "$(field errors badblocks.write)" -gt 0 ] 2>/dev/null && [ "$(field errors_outside_bad badblocks.write)" = 0 ] &&
	ok "bad blocks: errors reached the writer, and only for the bad range" ||
	bad "bad blocks: expected errors in blocks 256..271 only: $(cat "$work/badblocks.write")"
echo "-2048-2175" > "$nb/badblocks" || bad "clear badblocks"

# --- 2. fail_make_request: the backing's bios, then the ublk disk's own
arm() {	# arm DIR PERCENT: fault every call with PERCENT probability, silently
	echo "$2" > "$dbg/$1/probability"
	echo 1 > "$dbg/$1/interval"
	echo 1000000000 > "$dbg/$1/times"
	echo 0 > "$dbg/$1/verbose"
}
injected() { echo $((1000000000 - $(cat "$dbg/$1/times"))); }
arm fail_make_request 5
one_run fmr-backing "echo 1 > /sys/block/${backing#/dev/}/make-it-fail" \
	"echo 0 > /sys/block/${backing#/dev/}/make-it-fail; echo injected=\$(injected fail_make_request) > $work/fmr-backing.n"
arm fail_make_request 5
one_run fmr-ublk 'echo 1 > /sys/block/${dev#/dev/}/make-it-fail' \
	"echo 0 > /sys/block/\${dev#/dev/}/make-it-fail; echo injected=\$(injected fail_make_request) > $work/fmr-ublk.n"
for n in fmr-backing fmr-ublk; do
	inj=$(cut -d= -f2 "$work/$n.n" 2>/dev/null)
	errs=$(field errors $n.write)
	# each 4 KiB write is one bio: every failed bio is one failed write
	[ "${inj:-0}" -gt 0 ] && [ "$inj" = "${errs:-}" ] &&
		ok "$n: injected=$inj bio failures, each reached the writer ($errs errors)" ||
		bad "$n: injected bio failures and the writer's errors differ (injected=${inj:-?}, errors=${errs:-?})"
done

# --- 3. failslab + fail_page_alloc for the daemon's and the writer's tasks
# (the task filter first: armed without it, any task's allocation may fail,
# this script's own fork and writes included)
for f in failslab fail_page_alloc; do
	echo Y > "$dbg/$f/task-filter"
	echo N > "$dbg/$f/ignore-gfp-wait"
	arm $f 1
done
echo N > "$dbg/fail_page_alloc/ignore-gfp-highmem"
echo 0 > "$dbg/fail_page_alloc/min-order"
# (ackcheck --make-it-fail marks its writer threads once they run). On the
# kernel path the file I/O runs in the device's worker, a kworker of the
# unbound pool: mark those too (and unmark them after), so its allocations
# (the page list, the backing I/O's) fail as well
mark_daemon='for t in /proc/$dpid/task/*; do echo 1 > $t/make-it-fail; done'
kworkers() {
	local t
	for t in /proc/[0-9]*; do
		case $(cat "$t/comm" 2>/dev/null) in kworker/u*) echo "${t#/proc/}" ;; esac
	done
}
mark_workers() { local p; for p in $(kworkers); do echo "$1" > "/proc/$p/make-it-fail" 2>/dev/null; done; }
if [ "${UBLK_PATH:-daemon}" = kernel ]; then
	mark_daemon+='; mark_workers 1'
fi
one_run alloc "$mark_daemon" \
	"echo injected=\$((\$(injected failslab) + \$(injected fail_page_alloc))) > $work/alloc.n" \
	--make-it-fail
mark_workers 0
for f in failslab fail_page_alloc; do echo N > "$dbg/$f/task-filter"; done
inj=$(cut -d= -f2 "$work/alloc.n" 2>/dev/null)
[ "${inj:-0}" -gt 0 ] && ok "alloc: injected=$inj allocation failures" ||
	bad "alloc: no allocation failure was injected (injected=${inj:-?})"

echo "fault-injection runs=$runs"
finish
