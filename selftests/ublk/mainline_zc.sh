#!/usr/bin/env bash
# ublk/mainline-zc-* (vm, root): a server written the way mainline 6.15's
# reference server (kublk) serves zero-copy requests -- one chain per
# request, REGISTER_IO_BUF -> data -> UNREGISTER_IO_BUF, submitted at once --
# runs unchanged on our kernel (selftests/ublk/mainline_zc.c).
#   null        NOP + IORING_NOP_FIXED_BUFFER; DMA_ALIGN and SEGMENT params
#               reach the queue limits; fio randrw
#   loop        READ_FIXED/WRITE_FIXED: fio verify, the backing file holds
#               what was written, DMA_ALIGN reaches the queue; hard-linked
#               chains and (for comparison) unlinked phases
#   stripe      READV_FIXED/WRITEV_FIXED over 2 files, 64 KiB chunks: fio
#               verify, the members hold what was written
#   chain-fail  a chain whose data step fails (-EFAULT), hard and soft links:
#               the reader gets EIO, the buffer is released (soft link: by
#               the server), the device keeps serving and deletes cleanly
#   start-wait  a server that never commits while START_DEV's partition scan
#               waits: (a) kill -9 of the server, (b) DEL_DEV from another
#               process; either releases everything within 60 s
#  Auto buffer registration (UBLK_F_AUTO_BUF_REG, mainline 6.16, kernel
#  patch 27) as kublk's --auto_zc, for what the libublk crate cannot send
#  (its serving with and without FALLBACK is ublk/libublk-*):
#   auto-bad-addr  FETCHes whose ublk_auto_buf_reg has reserved0, reserved1
#               or an unknown flag set fail -EINVAL; a COMMIT_AND_FETCH with
#               reserved0 set fails -EINVAL and commits nothing (the reader
#               still gets the right data once it is committed properly)
#  Review reproducers (issue 12; loop target, each armed for one READ):
#   review-exit-after-commit  REGISTER_IO_BUF, READ_FIXED, COMMIT_AND_FETCH
#               without UNREGISTER, then (a) close the ring and live on,
#               (b) exit: the reader gets the committed data, the ring's exit
#               work ends, the server exits, DEL_DEV returns (item 1)
#   review-buffer-table  with a driver buffer in slot T, BUFFERS_UPDATE of
#               T and CLONE_BUFFERS from the ring fail -EBUSY; a user slot
#               updates, a clone without driver buffers works (item 5)
#   review-zc-flags  ZERO_COPY|NEED_GET_DATA: NEED_GET_DATA cleared, writes
#               work; no USER_COPY: pread/pwrite on /dev/ublkcN -EACCES
#               (with USER_COPY they work); UNREGISTER through another tag
#               and addr above 32 bits fail -EINVAL, the buffer stays (item 8)
#   review-reissue  USER_RECOVERY|REISSUE: the server dies with a READ's
#               buffer registered; a new server recovers the device and the
#               read completes with its data, not EIO (item 4)
# Every step that could hang is bounded; a hang is reported with the kernel
# stacks of the blocked tasks.
# usage: mainline_zc.sh SERVER CASE     Exit 0 pass, 1 fail, 77 skip.
set -u
T=$1
case_=${2:?usage: mainline_zc.sh SERVER null|loop|stripe|chain-fail|start-wait|auto-...|review-...}
. "$(dirname "$0")/lib.sh"
ublk_require

srv_pids=()
srv_ids=()
bg_pids=()
mzc_cleanup() {
	local p id
	for p in "${bg_pids[@]}" "${srv_pids[@]}"; do
		kill -9 "$p" 2>/dev/null
	done
	for id in "${srv_ids[@]}"; do
		[ -e "/sys/class/ublk-char/ublkc$id" ] &&
			{ "$T" del "$id" > /dev/null 2>&1 & wait_exit $! 30; }
	done
	cd /
	rm -rf "$work"
}
trap mzc_cleanup EXIT

"$T" features > "$work/features" 2>&1 || { cat "$work/features"; bad "GET_FEATURES"; finish; }
grep -q 'zero_copy 1' "$work/features" || no_feature "no UBLK_F_SUPPORT_ZERO_COPY: $(cat "$work/features")"

# wait_line FILE REGEX SECONDS: until a line of FILE matches
wait_line() {
	local i
	for i in $(seq $(($3 * 10))); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# d_tasks: every task in D state (PID/task/TID)
d_tasks() {
	local t
	for t in /proc/[0-9]*/task/[0-9]*; do
		[ "$(awk '{ print $3 }' "$t/stat" 2>/dev/null)" = D ] && echo "${t#/proc/}"
	done
}

# d_state: the tasks in D state in two samples 1 s apart, with their stacks
d_state() {
	local a b t
	a=$(d_tasks)
	sleep 1
	b=$(d_tasks)
	for t in $a; do
		grep -qx "$t" <<<"$b" || continue
		echo "--- D: $t ($(cat "/proc/$t/comm" 2>/dev/null))"
		cat "/proc/$t/stack" 2>/dev/null
	done
}

# srv_start NAME ARGS...: run the server in the background; sets srv_pid,
# srv_id, srv_out (stdout) and srv_err. Waits for "id"; with --no-start
# for "ready", else for "started" (60 s).
srv_start() {
	local name=$1 what=started
	shift
	srv_out=$work/$name.out
	srv_err=$work/$name.err
	case " $* " in *" --no-start "*) what=ready ;; esac
	"$T" add "$@" > "$srv_out" 2> "$srv_err" &
	srv_pid=$!
	srv_pids+=("$srv_pid")
	srv_id=
	if ! wait_line "$srv_out" '^id ' 10; then
		echo "server output:"; cat "$srv_out" "$srv_err"
		return 1
	fi
	srv_id=$(awk '$1 == "id" { print $2 }' "$srv_out")
	srv_ids+=("$srv_id")
	if ! wait_line "$srv_out" "^$what" 60; then
		echo "server ($what not seen in 60 s):"; cat "$srv_out" "$srv_err"
		stacks "$srv_pid"
		return 1
	fi
	if [ $what = started ] && ! wait_bdev "$srv_id"; then
		echo "no /dev/ublkb$srv_id"
		return 1
	fi
}

# del_wait SECONDS: DEL_DEV of $srv_id from another process; its output in
# del_out, its status in drc (124: still waiting after SECONDS; DEL_DEV can
# wait in D state, where timeout(1) could not end it)
del_wait() {
	local dpid
	"$T" del "$srv_id" > "$work/del.out" 2>&1 &
	dpid=$!
	bg_pids+=("$dpid")
	if wait_exit "$dpid" "$1"; then
		drc=$rc
	else
		drc=124
		echo "### DEL_DEV caller (pid $dpid):"; stacks "$dpid"
	fi
	del_out=$(cat "$work/del.out")
}

# srv_del NAME: DEL_DEV (bounded) and a clean server exit
srv_del() {
	local name=$1 out drc
	del_wait 60
	out=$del_out
	if [ $drc = 124 ]; then
		bad "$name: DEL_DEV still waits after 60 s"
		stacks "$srv_pid"
		d_state
		return 1
	fi
	[ $drc = 0 ] && ok "$name: $out" || bad "$name: $out (exit $drc)"
	if ! wait_exit "$srv_pid" 30; then
		bad "$name: server still runs 30 s after DEL_DEV"
		stacks "$srv_pid"
		kill -9 "$srv_pid"
		return 1
	fi
	[ $rc = 0 ] && ok "$name: server exit 0: $(tail -1 "$srv_out")" ||
		{ bad "$name: server exit $rc: $(tail -1 "$srv_out")"; sed 's/^/  stderr: /' "$srv_err" | tail -20; }
	[ ! -e "/sys/class/ublk-char/ublkc$srv_id" ] && ok "$name: device $srv_id gone" ||
		bad "$name: /sys/class/ublk-char/ublkc$srv_id still there"
}

# limit NAME ATTR WANT: /sys/block/ublkbN/queue/ATTR is WANT
limit() {
	local v
	v=$(cat "/sys/block/ublkb$srv_id/queue/$2" 2>&1)
	[ "$v" = "$3" ] && ok "$1: queue/$2 = $v" || bad "$1: queue/$2 = $v, server set $3"
}

# summary FIELD: a number from the server's "exit ..." line
summary() {
	awk -v f="$1" '$1 == "exit" { for (i = 1; i < NF; i++) if ($i == f) print $(i + 1) }' "$srv_out"
}

# dio_at DEV MISALIGN: a 4 KiB O_DIRECT read into a buffer MISALIGN bytes
# past a page boundary; prints the byte count or the errno name
dio_at() {
	timeout 60 python3 - "$1" "$2" <<'EOF'
import errno, mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
off = int(sys.argv[2])
buf = mmap.mmap(-1, 3 * 4096)
try:
    print(os.preadv(fd, [memoryview(buf)[off:off + 4096]], 0))
except OSError as e:
    print(errno.errorcode[e.errno])
EOF
}

# dma_check NAME OK BAD: the queue's DMA alignment is enforced: a buffer
# misaligned by OK bytes reads, one misaligned by BAD bytes gets EINVAL
dma_check() {
	local a b
	a=$(dio_at "/dev/ublkb$srv_id" "$2")
	b=$(dio_at "/dev/ublkb$srv_id" "$3")
	[ "$a" = 4096 ] && [ "$b" = EINVAL ] &&
		ok "$1: O_DIRECT buffer at +$2 reads, at +$3 gets EINVAL (DMA alignment applied)" ||
		bad "$1: O_DIRECT buffer at +$2: $a, at +$3: $b (want 4096, EINVAL)"
}

# reader_start NAME DEV BLOCK: a 4 KiB O_DIRECT read of block BLOCK in the
# background; its pid in rd_pid
reader_start() {
	timeout 300 dd if="$2" of="$work/$1.data" bs=4k skip="$3" count=1 iflag=direct \
		status=none 2> "$work/$1.err" &
	rd_pid=$!
	bg_pids+=("$rd_pid")
}

# reader_check NAME PID IMG BLOCK SECONDS: the read ends within SECONDS with
# the data at BLOCK of IMG
reader_check() {
	local name=$1 pid=$2 img=$3 blk=$4
	if ! wait_exit "$pid" "$5"; then
		bad "$name: the read of block $blk is still blocked after $5 s"
		stacks "$pid" $(pgrep -P "$pid")
		echo "### server:"; stacks "${srv_pid:-}"
		echo "### tasks in D state:"; d_state
		return 1
	fi
	if [ "$rc" != 0 ]; then
		bad "$name: the read of block $blk failed (exit $rc): $(cat "$work/$name.err")"
		return 1
	fi
	cmp -s "$work/$name.data" <(dd if="$img" bs=4k skip="$blk" count=1 status=none) &&
		ok "$name: the read of block $blk completed with the right data" ||
		bad "$name: the read of block $blk returned wrong data"
}

# probe_ok NAME PROBE...: the server's "probe PROBE ... ok" lines
probe_ok() {
	local name=$1 p line
	shift
	for p in "$@"; do
		line=$(grep -m1 "^probe $p " "$srv_out")
		if [ -z "$line" ]; then
			bad "$name: probe $p never ran"
		elif [ "${line##* }" = ok ]; then
			ok "$name: ${line#probe }"
		else
			bad "$name: ${line#probe }"
		fi
	done
}

# exit_work_tasks: tasks running a ring's exit work
exit_work_tasks() {
	local t
	for t in /proc/[0-9]*/task/[0-9]*; do
		grep -q io_ring_exit_work "$t/stack" 2>/dev/null && echo "${t#/proc/}"
	done
}

# exit_work_gone NAME SECONDS: no ring exit work left (not spinning)
exit_work_gone() {
	local i w
	for i in $(seq "$2"); do
		w=$(exit_work_tasks)
		[ -z "$w" ] && { ok "$1: no ring exit work left running"; return 0; }
		sleep 1
	done
	bad "$1: io_ring_exit_work still runs after $2 s"
	for t in $w; do
		echo "--- $t ($(cat "/proc/$t/comm" 2>/dev/null)) state $(awk '{ print $3 }' "/proc/$t/stat" 2>/dev/null)"
		cat "/proc/$t/stack" 2>/dev/null
	done
	return 1
}

# del_bounded NAME: DEL_DEV within 60 s, the device gone, no task in D state
del_bounded() {
	local out drc d
	del_wait 60
	out=$del_out
	if [ $drc = 0 ]; then
		ok "$1: $out"
	else
		bad "$1: DEL_DEV: $out (exit $drc$([ $drc = 124 ] && echo ': still waiting after 60 s'))"
		stacks "$srv_pid"
	fi
	[ ! -e "/sys/class/ublk-char/ublkc$srv_id" ] && ok "$1: device $srv_id gone" ||
		bad "$1: /sys/class/ublk-char/ublkc$srv_id still there"
	d=$(d_state)
	[ -z "$d" ] && ok "$1: no task in D state" || { bad "$1: tasks in D state"; echo "$d"; }
}

# flags_of: the dev_info.flags ADD_DEV returned (server's second line)
flags_of() {
	awk '$1 == "target" { for (i = 1; i < NF; i++) if ($i == "flags") print $(i + 1) }' "$srv_out"
}

# errors of the data path the server saw (first lines of its stderr)
srv_errors() {
	[ -s "$srv_err" ] && { echo "server stderr (head):"; head -5 "$srv_err"; }
}

# fio_run NAME DEV ARGS...: fio with crc32c verify (bounded), reported
fio_run() {
	local name=$1 dev=$2
	shift 2
	if timeout 300 fio --name="$name" --filename="$dev" --allow_file_create=0 \
		--ioengine=io_uring --direct=1 --verify=crc32c --do_verify=1 \
		--output="$work/$name.fio" "$@" && grep -q 'err= 0' "$work/$name.fio"; then
		ok "$name: fio verify $*"
	else
		bad "$name: fio verify $*"
		tail -30 "$work/$name.fio"
		srv_errors
	fi
}

case $case_ in
null)
	srv_start null -t null -d 32 -s 256M || { bad "null: start"; finish; }
	ok "null: started /dev/ublkb$srv_id"
	limit null dma_alignment 4095
	limit null max_segment_size 32768
	limit null max_segments 32
	limit null virt_boundary_mask 0
	limit null max_hw_sectors_kb 512
	dma_check null 0 512
	# no data on null: fio checks only that every I/O completes without error
	if timeout 300 fio --name=null --filename="/dev/ublkb$srv_id" --allow_file_create=0 \
		--ioengine=io_uring --direct=1 --rw=randrw --bsrange=4k-256k --iodepth=16 \
		--size=64M --output="$work/null.fio" && grep -q 'err= 0' "$work/null.fio"; then
		ok "null: fio randrw 4k-256k, 64 MiB"
	else
		bad "null: fio"; cat "$work/null.fio"; srv_errors
	fi
	dd if=/dev/zero of="/dev/ublkb$srv_id" bs=1M count=4 oflag=direct status=none &&
		dd if="/dev/ublkb$srv_id" of=/dev/null bs=1M count=4 iflag=direct status=none &&
		ok "null: 1 MiB direct writes and reads (split by the segment limits)" ||
		{ bad "null: dd 1 MiB"; srv_errors; }
	grep -q '^exit' "$srv_out" && bad "null: server ended early: $(tail -1 "$srv_out")"
	srv_del null
	# 32 segments of at most 4 KiB (boundary 4095): no request above 128 KiB
	m=$(summary max_bytes)
	[ -n "$m" ] && [ "$m" -gt 0 ] && [ "$m" -le 131072 ] &&
		ok "null: largest request $m bytes (32 segments x 4 KiB at most)" ||
		bad "null: largest request ${m:-?} bytes, over 32 x 4 KiB: segment limits not applied"
	;;
loop)
	for link in hard none; do
		n=loop-$link
		img=$work/$n.img
		truncate -s 64M "$img"
		srv_start "$n" -t loop -d 32 -f "$img" --link $link || { bad "$n: start"; continue; }
		ok "$n: started /dev/ublkb$srv_id ($(sed -n 2p "$srv_out"))"
		dev=/dev/ublkb$srv_id
		limit $n dma_alignment 511
		dma_check $n 512 256
		fio_run $n-randwrite "$dev" --rw=randwrite --bsrange=4k-128k --iodepth=16 --size=16M
		fio_run $n-write-read "$dev" --rw=write --bs=256k --iodepth=8 --size=8M --offset=32M
		# what the device wrote is in the backing file, at the same offset
		head -c 3M /dev/urandom > "$work/pat"
		if timeout 60 dd if="$work/pat" of="$dev" bs=1M seek=40 oflag=direct status=none &&
			timeout 60 dd if="$work/pat" of="$dev" bs=4k seek=$((48 * 256 + 1)) count=3 oflag=direct status=none; then
			sync "$img"
			cmp -s "$work/pat" <(dd if="$img" bs=1M skip=40 count=3 status=none) &&
				cmp -s <(head -c 12k "$work/pat") <(dd if="$img" bs=4k skip=$((48 * 256 + 1)) count=3 status=none) &&
				ok "$n: the backing file holds what was written" ||
				bad "$n: backing file differs from what was written"
			cmp -s "$work/pat" <(timeout 60 dd if="$dev" bs=1M skip=40 count=3 iflag=direct status=none) &&
				ok "$n: reads back through the device" || bad "$n: device read back differs"
		else
			bad "$n: dd to $dev"; srv_errors
		fi
		# flush: fsync of the backing file
		timeout 60 dd if="$work/pat" of="$dev" bs=4k count=1 oflag=direct conv=fsync status=none &&
			ok "$n: write + flush" || bad "$n: flush"
		srv_del $n
	done
	;;
stripe)
	n=stripe
	truncate -s 32M "$work/m0.img" "$work/m1.img"
	srv_start $n -t stripe -d 32 -f "$work/m0.img" -f "$work/m1.img" --chunk 64k ||
		{ bad "$n: start"; finish; }
	ok "$n: started /dev/ublkb$srv_id ($(sed -n 2p "$srv_out"))"
	dev=/dev/ublkb$srv_id
	[ "$(blockdev --getsize64 "$dev")" = $((64 << 20)) ] && ok "$n: 64 MiB" ||
		bad "$n: size $(blockdev --getsize64 "$dev")"
	limit $n max_hw_sectors_kb 512
	fio_run $n-randwrite "$dev" --rw=randwrite --bsrange=4k-256k --iodepth=16 --size=16M
	# 1 MiB + 12 KiB at 96 KiB + 4 KiB: crosses chunks of both members
	head -c $((1024 * 1024 + 12288)) /dev/urandom > "$work/pat"
	if timeout 60 dd if="$work/pat" of="$dev" bs=4k seek=25 oflag=direct status=none; then
		sync "$work/m0.img" "$work/m1.img"
		python3 - "$work/pat" "$work/m0.img" "$work/m1.img" $((25 * 4096)) $((64 << 10)) <<'EOF' &&
import sys
pat = open(sys.argv[1], 'rb').read()
m = [open(f, 'rb').read() for f in sys.argv[2:4]]
start, chunk = int(sys.argv[4]), int(sys.argv[5])
for i in range(len(pat)):
    d = start + i
    c = d // chunk
    off = (c // 2) * chunk + d % chunk
    if m[c % 2][off] != pat[i]:
        print(f"device byte {d}: member {c % 2} offset {off} differs")
        sys.exit(1)
EOF
			ok "$n: the members hold what was written, 64 KiB chunks alternating" ||
			bad "$n: member files differ from the stripe layout"
		cmp -s "$work/pat" <(timeout 60 dd if="$dev" bs=4k skip=25 count=$(((1024 * 1024 + 12288) / 4096)) iflag=direct status=none) &&
			ok "$n: reads back through the device" || bad "$n: device read back differs"
	else
		bad "$n: dd to $dev"; srv_errors
	fi
	timeout 60 dd if="$work/pat" of="$dev" bs=4k count=1 oflag=direct conv=fsync status=none &&
		ok "$n: write + flush" || bad "$n: flush"
	srv_del $n
	;;
chain-fail)
	for link in hard soft; do
		n=fail-$link
		img=$work/$n.img
		head -c 16M /dev/urandom > "$img"
		# requests touching sector 2048 (1 MiB) fail in the chain's middle
		srv_start $n -t loop -d 16 -f "$img" --link $link --fail-middle --fail-sector 2048 ||
			{ bad "$n: start"; continue; }
		ok "$n: started /dev/ublkb$srv_id"
		dev=/dev/ublkb$srv_id
		msg=$(timeout 60 dd if="$dev" of=/dev/null bs=4k skip=256 count=1 iflag=direct 2>&1)
		drc=$?
		[ $drc != 0 ] && [ $drc != 124 ] && grep -q 'Input/output error' <<<"$msg" &&
			ok "$n: read of the failing range: EIO" || bad "$n: read of the failing range: exit $drc: $msg"
		msg=$(timeout 60 dd if=/dev/zero of="$dev" bs=4k seek=256 count=1 oflag=direct 2>&1)
		drc=$?
		[ $drc != 0 ] && [ $drc != 124 ] && grep -q 'Input/output error' <<<"$msg" &&
			ok "$n: write of the failing range: EIO" || bad "$n: write of the failing range: exit $drc: $msg"
		grep -q -- '-14 (Bad address)' "$srv_err" && ok "$n: the data step failed with -EFAULT" ||
			{ bad "$n: no -EFAULT from the data step"; srv_errors; }
		# the rest of the device still serves, and its data is intact
		cmp -s <(head -c 64k "$img") <(timeout 60 dd if="$dev" bs=64k count=1 iflag=direct status=none) &&
			ok "$n: other ranges still read correctly" ||
			{ bad "$n: other ranges fail after the error"; srv_errors; }
		srv_del $n
		if [ $link = soft ]; then
			# IOSQE_IO_LINK: the failing step cancels the UNREGISTER
			# (-ECANCELED), so the server unregisters before committing
			f=$(summary fixups)
			[ "${f:-0}" -gt 0 ] && ok "$n: cancelled unregister seen and redone by the server ($f)" ||
				bad "$n: no cancelled UNREGISTER after the failing step (fixups ${f:-?}): the chain did not run up to the failure"
		else
			f=$(summary unreg_after_error)
			[ "${f:-0}" -gt 0 ] && ok "$n: the hard-linked UNREGISTER ran after the failure ($f)" ||
				bad "$n: the hard-linked UNREGISTER never ran after a failing step (${f:-?})"
		fi
	done
	;;
start-wait)
	for how in kill del; do
		n=start-wait-$how
		srv_start $n -t null -d 16 -s 64M --never-commit --no-start || { bad "$n: setup"; continue; }
		spid_srv=$srv_pid
		"$T" start "$srv_id" "$srv_pid" > "$work/$n.start" 2>&1 &
		st_pid=$!
		bg_pids+=("$st_pid")
		if wait_line "$srv_out" '^holding' 30; then
			sleep 1
			alive $st_pid && ok "$n: START_DEV waits on a request the server holds ($(grep -m1 '^holding' "$srv_out"))" ||
				bad "$n: START_DEV returned: $(cat "$work/$n.start")"
		else
			bad "$n: the server was never given a request (START: $(cat "$work/$n.start"))"
		fi
		if [ $how = kill ]; then
			kill -9 "$spid_srv"
			wait_exit "$spid_srv" 60 && ok "$n: server gone" ||
				{ bad "$n: killed server still there after 60 s"; stacks "$spid_srv"; }
		else
			"$T" del "$srv_id" > "$work/$n.del" 2>&1 &
			del_pid=$!
			bg_pids+=("$del_pid")
		fi
		if wait_exit $st_pid 60; then
			ok "$n: START_DEV returned within 60 s: $(cat "$work/$n.start")"
		else
			bad "$n: START_DEV still waits 60 s after the $how"
		fi
		if [ $how = del ]; then
			if wait_exit $del_pid 5; then
				ok "$n: DEL_DEV returned: $(cat "$work/$n.del")"
			else
				bad "$n: DEL_DEV while START_DEV waits: still blocked after 60 s"
				echo "### DEL_DEV caller (pid $del_pid):"; stacks $del_pid
				echo "### START_DEV caller (pid $st_pid):"; stacks $st_pid
				echo "### server (pid $spid_srv):"; stacks "$spid_srv"
				echo "### tasks in D state:"; d_state
				echo "### unwedging: kill -9 of the server"
				kill -9 "$spid_srv"
				wait_exit $st_pid 60 && echo "START_DEV then returned: $(cat "$work/$n.start")" ||
					echo "START_DEV still blocked after the kill"
				wait_exit $del_pid 60 && echo "DEL_DEV then returned: $(cat "$work/$n.del")" ||
					{ echo "DEL_DEV still blocked after the kill:"; stacks $del_pid; }
			fi
			wait_exit "$spid_srv" 30 && ok "$n: server exit $rc: $(tail -1 "$srv_out")" ||
				{ bad "$n: server still runs"; stacks "$spid_srv"; kill -9 "$spid_srv"; }
		fi
		for i in $(seq 300); do
			[ -e "/sys/block/ublkb$srv_id" ] || break
			sleep 0.2
		done
		[ -e "/sys/block/ublkb$srv_id" ] && bad "$n: /sys/block/ublkb$srv_id still there" ||
			ok "$n: block device gone"
		if [ -e "/sys/class/ublk-char/ublkc$srv_id" ]; then
			out=$(timeout 60 "$T" del "$srv_id" 2>&1)
			[ $? = 0 ] && ok "$n: $out" || { bad "$n: del after $how: $out"; d_state; }
		fi
		[ ! -e "/sys/class/ublk-char/ublkc$srv_id" ] && ok "$n: device $srv_id gone" ||
			bad "$n: ublkc$srv_id still there"
		d=$(d_state)
		[ -z "$d" ] && ok "$n: no task in D state" || { bad "$n: tasks in D state"; echo "$d"; }
	done
	;;
auto-bad-addr)
	n=auto-bad-addr
	img=$work/$n.img
	head -c 16M /dev/urandom > "$img"
	srv_start $n -t loop -d 4 -f "$img" --auto-zc --probe-bad-addr 8192 || { bad "$n: start"; finish; }
	ok "$n: started /dev/ublkb$srv_id ($(sed -n 2p "$srv_out"))"
	grep '^probe fetch-' "$srv_out"
	probe_ok $n fetch-reserved0 fetch-reserved1 fetch-unknown-flag
	# block 1024 = sector 8192: its READ gets the bad COMMIT_AND_FETCH first
	reader_start $n-read "/dev/ublkb$srv_id" 1024
	reader_check $n-read "$rd_pid" "$img" 1024 60
	grep '^probe commit-' "$srv_out"
	probe_ok $n commit-reserved0
	reader_start $n-after "/dev/ublkb$srv_id" 77
	reader_check $n-after "$rd_pid" "$img" 77 60
	srv_del $n
	;;
review-exit-after-commit)
	# item 1: a committed request whose buffer is still registered when
	# the ring goes. Before the fix the tag's new FETCH could not be
	# cancelled (its tag's request was "started"), so the ring's exit work
	# (close) or the exiting task (exit) looped forever, the request never
	# ended and DEL_DEV hung.
	for how in close exit; do
		n=exit-after-commit-$how
		echo "mainline_zc.sh: $n" > /dev/kmsg 2>/dev/null	# marks the kernel log
		img=$work/$n.img
		head -c 16M /dev/urandom > "$img"
		srv_start $n -t loop -d 4 -f "$img" --keep-buf 8192 --keep-buf-then $how ||
			{ bad "$n: start"; continue; }
		spid=$srv_pid
		reader_start $n-read "/dev/ublkb$srv_id" 1024
		rpid=$rd_pid
		if wait_line "$srv_out" '^committed' 60; then
			ok "$n: $(grep -m1 '^committed' "$srv_out")"
		else
			bad "$n: the server never committed the read"; cat "$srv_out" "$srv_err"
		fi
		probe_ok $n keep-register keep-read
		if [ $how = close ]; then
			wait_line "$srv_out" '^ring closed' 30 && ok "$n: the server closed its ring" ||
				bad "$n: no 'ring closed' from the server"
		else
			if wait_exit "$spid" 60; then
				ok "$n: the server exited at once (exit $rc)"
			else
				bad "$n: the server is still there 60 s after _exit()"
				stacks "$spid"
			fi
		fi
		reader_check $n-read "$rpid" "$img" 1024 60
		exit_work_gone $n 30
		if [ $how = close ]; then
			alive "$spid" && ok "$n: the server lives on without its ring" ||
				bad "$n: the server died after closing its ring: $(tail -3 "$srv_err")"
			kill -TERM "$spid"
			wait_exit "$spid" 30 && ok "$n: the server ended on SIGTERM" ||
				{ bad "$n: the server is still there 30 s after SIGTERM"; stacks "$spid"; }
		fi
		del_bounded $n
	done
	;;
review-buffer-table)
	# item 5: before the fix BUFFERS_UPDATE replaced the driver buffer
	# (returning 1) and CLONE_BUFFERS copied it into another ring (0)
	n=buffer-table
	img=$work/$n.img
	head -c 16M /dev/urandom > "$img"
	srv_start $n -t loop -d 4 -f "$img" --probe-table 8192 || { bad "$n: start"; finish; }
	reader_start $n-read "/dev/ublkb$srv_id" 1024
	reader_check $n-read "$rd_pid" "$img" 1024 60
	probe_ok $n table-register update-driver-slot update-user-slot clone-with-driver-buffer \
		table-read table-unregister clone-without-driver-buffer update-user-slot-clear
	reader_start $n-after "/dev/ublkb$srv_id" 77
	reader_check $n-after "$rd_pid" "$img" 77 60
	srv_del $n
	;;
review-zc-flags)
	# item 8, differences from 6.15: before the fix NEED_GET_DATA stayed
	# set with zero copy (a WRITE came back NEED_GET_DATA), zero copy
	# alone allowed pread/pwrite on /dev/ublkcN, and UNREGISTER_IO_BUF
	# emptied any slot, its addr truncated to 32 bits
	n=zc-flags
	img=$work/$n.img
	head -c 16M /dev/urandom > "$img"
	srv_start $n -t loop -d 4 -f "$img" --no-user-copy --need-get-data --probe-uc 8192 \
		--probe-unreg 16384,16392 || { bad "$n: start"; finish; }
	f=$(flags_of)
	ok "$n: ADD_DEV flags ZERO_COPY|NEED_GET_DATA|CMD_IOCTL_ENCODE returned $f"
	[ $((f & 0x4)) = 0 ] && ok "$n: NEED_GET_DATA cleared by zero copy" ||
		bad "$n: NEED_GET_DATA still set in $f with zero copy"
	[ $((f & 0x1)) != 0 ] && [ $((f & 0x80)) = 0 ] && ok "$n: ZERO_COPY on, USER_COPY off" ||
		bad "$n: flags $f: want ZERO_COPY on and USER_COPY off"
	dev=/dev/ublkb$srv_id
	head -c 64k /dev/urandom > "$work/pat"
	dd if="$work/pat" of="$work/patimg" bs=64k seek=200 conv=notrunc status=none
	# in the background: a write stuck in D state outlives timeout(1)
	timeout 300 dd if="$work/pat" of="$dev" bs=64k seek=200 count=1 oflag=direct status=none \
		2> "$work/$n-write.err" &
	wpid=$!
	bg_pids+=("$wpid")
	if ! wait_exit "$wpid" 60; then
		bad "$n: a 64 KiB write still waits after 60 s (a NEED_GET_DATA round?)"
		stacks "$wpid" $(pgrep -P "$wpid"); srv_errors
	elif [ "$rc" != 0 ]; then
		bad "$n: a 64 KiB write failed: $(cat "$work/$n-write.err")"; srv_errors
	else
		ok "$n: a WRITE is served (no NEED_GET_DATA round)"
		reader_start $n-write "$dev" 3200
		reader_check $n-write "$rd_pid" "$work/patimg" 3200 60
	fi
	reader_start $n-uc "$dev" 1024
	reader_check $n-uc "$rd_pid" "$img" 1024 60
	probe_ok $n uc-pwrite uc-pread
	# tag B holds the READ at sector 16384 while tag A's buffer is probed
	reader_start $n-b "$dev" 2048
	bpid=$rd_pid
	if wait_line "$srv_out" '^holding tag' 30; then
		reader_start $n-a "$dev" 2049
		reader_check $n-a "$rd_pid" "$img" 2049 60
	else
		bad "$n: the read of block 2048 never reached the server"
	fi
	reader_check $n-b "$bpid" "$img" 2048 60
	probe_ok $n register-addr-high register unregister-other-tag unregister-addr-high \
		buffer-still-registered unregister
	srv_del $n
	# positive control: with USER_COPY the same pwrite works
	n=zc-flags-user-copy
	srv_start $n -t loop -d 4 -f "$img" --probe-uc 8192 || { bad "$n: start"; finish; }
	f=$(flags_of)
	[ $((f & 0x80)) != 0 ] && ok "$n: USER_COPY on ($f)" || bad "$n: flags $f lack USER_COPY"
	reader_start $n-uc "/dev/ublkb$srv_id" 1024
	reader_check $n-uc "$rd_pid" "$img" 1024 60
	probe_ok $n uc-pwrite
	srv_del $n
	;;
review-reissue)
	# item 4: before the fix the request held by the dead server's buffer
	# ended with EIO when the ring was freed, even on a REISSUE device
	n=reissue
	img=$work/$n.img
	head -c 16M /dev/urandom > "$img"
	srv_start $n -t loop -d 4 -f "$img" --recovery-reissue --die-after-register 8192 ||
		{ bad "$n: start"; finish; }
	f=$(flags_of)
	[ $((f & 0x18)) = $((0x18)) ] && ok "$n: USER_RECOVERY|USER_RECOVERY_REISSUE ($f)" ||
		bad "$n: flags $f lack USER_RECOVERY|USER_RECOVERY_REISSUE"
	reader_start $n-read "/dev/ublkb$srv_id" 1024
	rpid=$rd_pid
	wait_line "$srv_out" '^dying' 60 && ok "$n: $(grep -m1 '^dying' "$srv_out")" ||
		{ bad "$n: the server never got the read"; cat "$srv_out" "$srv_err"; }
	probe_ok $n die-register
	wait_exit "$srv_pid" 60 && ok "$n: the server is dead" ||
		{ bad "$n: the killed server is still there after 60 s"; stacks "$srv_pid"; }
	# the read must not have failed while no server was there
	sleep 2
	if ! alive "$rpid"; then
		wait "$rpid"
		bad "$n: the read ended (exit $?: $(cat "$work/$n-read.err")) before a server recovered the device"
	else
		ok "$n: the read waits for a new server"
	fi
	srv_out=$work/$n-recover.out
	srv_err=$work/$n-recover.err
	"$T" recover "$srv_id" -t loop -f "$img" > "$srv_out" 2> "$srv_err" &
	srv_pid=$!
	srv_pids+=("$srv_pid")
	if wait_line "$srv_out" '^recovered' 90; then
		ok "$n: $(grep -m1 '^recovering' "$srv_out"); $(grep -m1 '^recovered' "$srv_out")"
	else
		bad "$n: recovery did not finish in 90 s"; cat "$srv_out" "$srv_err"; stacks "$srv_pid"
	fi
	reader_check $n-read "$rpid" "$img" 1024 60
	reader_start $n-after "/dev/ublkb$srv_id" 77
	reader_check $n-after "$rd_pid" "$img" 77 60
	srv_del $n-recovered
	;;
*)
	bad "unknown case $case_"
	;;
esac
finish
