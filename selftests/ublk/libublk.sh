#!/usr/bin/env bash
# ublk/libublk-CASE (vm, root): devices served through the published libublk
# crate (0.4.8, selftests/ublk/libublk: libublk_serve), a client library by
# the ublk authors, on 1 and then 2 queues (depth 64, fio at iodepth 32):
#   null-MODE  null target: fio randrw 4k, 64 MiB, io_uring O_DIRECT, no error
#   loop-MODE  loop target over a 64 MiB file on tmpfs: fio verify randwrite
#              4k, then randrw 64k with verify_backlog; the device's bytes
#              equal the file's
# MODE: copy (no buffer flags), zc (UBLK_F_SUPPORT_ZERO_COPY: the crate's
# REGISTER_IO_BUF/UNREGISTER_IO_BUF around every READ/WRITE), auto
# (UBLK_F_AUTO_BUF_REG: the driver registers each request at slot tag, the
# descriptor in the SQE's addr field), auto-fallback (AUTO_BUF_REG|ZERO_COPY
# with UBLK_AUTO_BUF_REG_FALLBACK; every second request of a tag asks for
# slot 0xffff, comes back with UBLK_IO_F_NEED_REG_BUF and the server
# registers it). Checked each time: GET_DEV_INFO's flags (tool's list) have
# the mode's bits and equal what ADD_DEV returned to the crate; the server's
# summary (requests per queue, NEED_REG_BUF count, buffer commands, no error);
# the stop -- 'ublk del' of our tool (1 queue), SIGTERM to the server, which
# stops and deletes through the crate (2 queues) -- ends the server with exit
# 0 within 20 s and removes the device.
# null-copy also checks what the crate learns of the ublk features this
# kernel does not have (kernel/README): GET_FEATURES reports bits 0
# (SUPPORT_ZERO_COPY) and 11 (AUTO_BUF_REG) and none of bits 9, 10, 12-19,
# and UPDATE_SIZE and QUIESCE_DEV sent through the crate fail -EOPNOTSUPP.
#   loop-recovery  auto mode with UBLK_F_USER_RECOVERY: fio writes a 16 MiB
#              pattern, kill -9 of the server, the device goes QUIESCED, a
#              read issued then waits; a new server takes over with the
#              crate's recovery (--recover ID): the read completes with the
#              file's bytes, fio --verify_only of the pattern passes, new I/O
#              (randrw 64k at 32 MiB) verifies, the device equals the file,
#              'ublk del' ends the new server with exit 0.
# usage: libublk.sh TOOL SERVER CASE     Exit 0 pass, 1 fail, 77 skip.
set -u
T=$1
srv_bin=${2:?usage: libublk.sh TOOL SERVER CASE}
case_=${3:?usage: libublk.sh TOOL SERVER null-MODE|loop-MODE|loop-recovery}
srv_bin=$(realpath -m "$srv_bin")
. "$(dirname "$0")/lib.sh"
ublk_require
[ -x "$srv_bin" ] || { echo "FAIL: no libublk_serve at $srv_bin (the libublk_serve build target)"; exit 1; }

case $case_ in
null-copy | null-zc | null-auto | null-auto-fallback | loop-copy | loop-zc | loop-auto | \
	loop-auto-fallback | loop-recovery) ;;
*) echo "FAIL: unknown case '$case_'"; exit 1 ;;
esac
target=${case_%%-*}
mode=${case_#*-}
# the crate keeps each device's JSON (queues, target; what --recover
# reloads) in /run/ublksrvd, hard-coded; START_DEV fails without it
mkdir -p /run/ublksrvd || { echo "FAIL: libublk needs /run/ublksrvd (hard-coded), which cannot be created"; exit 1; }

srv_pids=()	# servers (their timeout(1)) and readers
lu_cleanup() {
	local p
	for p in "${srv_pids[@]}"; do
		kill -9 "$p" $(pgrep -P "$p" 2>/dev/null) 2>/dev/null
	done
	for p in "${srv_pids[@]}"; do
		wait_gone "$p"
	done
	ublk_cleanup
}
trap lu_cleanup EXIT

srv_errors() { sed 's/^/  server stderr: /' "$srv_err" | tail -20; }

# srv_start NAME ARGS...: libublk_serve ARGS in the background, bounded by
# timeout(1); waits up to 30 s for READY. Sets srv_pid (timeout's),
# srv_child (the server's), srv_id, srv_out, srv_err. ADDED's id is
# remembered for cleanup at once, whatever happens next.
srv_start() {
	local name=$1 i id
	shift
	srv_out=$work/$name.out
	srv_err=$work/$name.err
	timeout -k 10 400 "$srv_bin" "$@" > "$srv_out" 2> "$srv_err" &
	srv_pid=$!
	srv_pids+=("$srv_pid")
	srv_id=
	for i in $(seq 300); do
		grep -q '^READY ' "$srv_out" 2>/dev/null && break
		alive "$srv_pid" || break
		sleep 0.1
	done
	id=$(awk '$1 == "ADDED" { print $2 }' "$srv_out")
	ublk_remember "$id"
	if ! grep -q '^READY ' "$srv_out"; then
		echo "$name: no READY within 30 s; server stdout:"
		cat "$srv_out"
		srv_errors
		alive "$srv_pid" && stacks "$srv_pid" $(pgrep -P "$srv_pid")
		return 1
	fi
	srv_id=$(awk '$1 == "READY" { print $2; exit }' "$srv_out")
	ublk_remember "$srv_id"
	srv_child=$(pgrep -P "$srv_pid" -x libublk_serve)
	[ -n "$srv_child" ] || { echo "$name: no libublk_serve process under timeout (pid $srv_pid)"; return 1; }
	wait_bdev "$srv_id" && return 0
	echo "$name: READY $srv_id but no /dev/ublkb$srv_id after 10 s"
	return 1
}

# summary FIELD: FIELD=value of the server's DONE line
summary() {
	awk -v f="$1" '$1 == "DONE" { for (i = 2; i <= NF; i++) { split($i, kv, "=");
		if (kv[1] == f) print kv[2] } }' "$srv_out"
}

# list_flags ID: the device's flags from GET_DEV_INFO (our tool's list),
# as a number: the tool names bits 0-8 and gives the others as numbers
list_flags() {
	"$T" -j ublk list 2>/dev/null | python3 -c '
import json, sys
names = ["zero_copy", "comp_in_task", "need_get_data", "user_recovery",
         "user_recovery_reissue", "unprivileged", "cmd_ioctl_encode", "user_copy", "zoned"]
for d in json.load(sys.stdin):
    if d["id"] == int(sys.argv[1]):
        print(sum(1 << (names.index(f) if isinstance(f, str) else f) for f in d["flags"]))' "$1"
}

# dev_state ID: LIVE, QUIESCED, DEAD (GET_DEV_INFO through our tool)
dev_state() {
	"$T" -j ublk list 2>/dev/null |
		python3 -c 'import json, sys; print(*[d["state"] for d in json.load(sys.stdin) if d["id"] == int(sys.argv[1])])' "$1"
}

ZC=$((1 << 0)) RECOVERY=$((1 << 3)) AUTO=$((1 << 11))
# mainline's newer flags that this kernel does not have: USER_RECOVERY_FAIL_IO
# (9), UPDATE_SIZE (10), QUIESCE (12) .. SHMEM_ZC (19)
ABSENT=$(((1 << 9) | (1 << 10) | (0xff << 12)))

# absent_check NAME: the server ran with --probe-absent
absent_check() {
	local name=$1 feat probe
	feat=$(awk '$1 == "FEATURES" { print $2; exit }' "$srv_out")
	probe=$(grep -m1 '^PROBE ' "$srv_out")
	[ -n "$feat" ] && [ $((feat & (ZC | AUTO))) = $((ZC | AUTO)) ] && [ $((feat & ABSENT)) = 0 ] &&
		ok "$name: GET_FEATURES $feat: SUPPORT_ZERO_COPY and AUTO_BUF_REG, none of the absent flags" ||
		bad "$name: GET_FEATURES '$feat': want bits 0 and 11, none of $(printf 0x%x $ABSENT)"
	[ "$probe" = "PROBE update_size=-95 quiesce=-95" ] &&
		ok "$name: UPDATE_SIZE and QUIESCE_DEV through the crate: -EOPNOTSUPP ($probe)" ||
		bad "$name: '$probe', want update_size=-95 quiesce=-95 (-EOPNOTSUPP)"
}
# flags_check NAME MODE [EXTRA_BITS]: the mode's bits set, the others clear
flags_check() {
	local name=$1 set clear f s
	case $2 in
	copy) set=0 clear=$((ZC | AUTO)) ;;
	zc) set=$ZC clear=$AUTO ;;
	auto) set=$AUTO clear=$ZC ;;
	auto-fallback) set=$((ZC | AUTO)) clear=0 ;;
	esac
	set=$((set | ${3:-0}))
	f=$(list_flags "$srv_id")
	s=$(awk '$1 == "FLAGS" { print $2; exit }' "$srv_out")
	if [ -n "$f" ] && [ $((f & set)) = "$set" ] && [ $((f & clear)) = 0 ]; then
		ok "$name: GET_DEV_INFO flags $(printf 0x%x "$f"): want $(printf 0x%x "$set") set, $(printf 0x%x "$clear") clear"
	else
		bad "$name: GET_DEV_INFO flags '${f:+$(printf 0x%x "$f")}': want $(printf 0x%x "$set") set, $(printf 0x%x "$clear") clear"
	fi
	[ -n "$s" ] && [ -n "$f" ] && [ $((s)) = "$f" ] &&
		ok "$name: the flags ADD_DEV/GET_DEV_INFO gave the crate ($s) are the same" ||
		bad "$name: the server's FLAGS '$s' differ from GET_DEV_INFO's '$f'"
}

# srv_stop NAME HOW: del (our tool's 'ublk del --force', as the device is
# another program's) or term (SIGTERM to the server: it stops the device
# and deletes it through the crate); the server exits 0 within 20 s, the
# device is gone
srv_stop() {
	local name=$1 how=$2 out i
	if [ "$how" = del ]; then
		out=$(timeout 60 "$T" ublk del "$srv_id" --force 2>&1) && ok "$name: $out" ||
			bad "$name: ublk del $srv_id: $out"
	else
		kill -TERM "$srv_child"
	fi
	if ! wait_exit "$srv_pid" 20; then
		bad "$name: the server still runs 20 s after $how"
		stacks "$srv_pid" $(pgrep -P "$srv_pid")
		kill -9 "$srv_pid" "$srv_child" 2>/dev/null
		return 1
	fi
	[ "$rc" = 0 ] && ok "$name: server exit 0 after $how: $(grep '^DONE' "$srv_out")" ||
		{ bad "$name: server exit $rc after $how: $(tail -1 "$srv_out")"; srv_errors; }
	for i in $(seq 100); do
		[ -e "/sys/class/ublk-char/ublkc$srv_id" ] || [ -e "/sys/block/ublkb$srv_id" ] || break
		sleep 0.1
	done
	[ ! -e "/sys/class/ublk-char/ublkc$srv_id" ] && [ ! -e "/sys/block/ublkb$srv_id" ] &&
		[ ! -e "/dev/ublkb$srv_id" ] && ok "$name: device $srv_id gone" ||
		bad "$name: device $srv_id still there after the server exited"
	[ "$how" = del ] || [ "$(summary signal)" = 15 ] ||
		bad "$name: the server's summary does not show SIGTERM: $(grep '^DONE' "$srv_out")"
}

# summary_check NAME MODE QUEUES: the server's counters after its stop
summary_check() {
	local name=$1 m=$2 queues=$3 d r b e f qi
	d=$(summary data) r=$(summary need_reg_buf) b=$(summary buf_cmds)
	e=$(summary io_errors) f=$(summary failures) qi=$(summary queue_ios)
	if [ -z "$d" ]; then
		bad "$name: no DONE summary from the server"
		return
	fi
	[ "$e" = 0 ] && [ "$f" = 0 ] && ok "$name: no failed request, no failed ublk/io_uring command" ||
		bad "$name: io_errors $e failures $f"
	[ "$(tr ',' '\n' <<<"$qi" | awk '$1 > 0' | wc -l)" = "$queues" ] &&
		ok "$name: every queue served requests ($qi)" || bad "$name: requests per queue $qi, want all $queues > 0"
	case $m in
	copy | auto)
		[ "$r" = 0 ] && [ "$b" = 0 ] && ok "$name: no NEED_REG_BUF, no REGISTER/UNREGISTER_IO_BUF ($d READ/WRITE)" ||
			bad "$name: need_reg_buf $r buf_cmds $b, want 0 and 0"
		;;
	zc)
		[ "$d" -gt 0 ] && [ "$b" = $((2 * d)) ] && [ "$r" = 0 ] &&
			ok "$name: REGISTER_IO_BUF + UNREGISTER_IO_BUF for each of the $d READ/WRITE ($b commands)" ||
			bad "$name: buf_cmds $b for $d READ/WRITE (want twice), need_reg_buf $r"
		;;
	auto-fallback)
		[ "$r" -gt 0 ] && [ "$r" -lt "$d" ] && [ "$b" = $((2 * r)) ] &&
			ok "$name: $r of $d READ/WRITE came with UBLK_IO_F_NEED_REG_BUF and were registered by the server ($b commands), the others by the driver" ||
			bad "$name: need_reg_buf $r of $d READ/WRITE, buf_cmds $b (want 0 < need_reg_buf < data, buf_cmds = 2 x need_reg_buf)"
		;;
	esac
}

# fio_jobs QUEUES BYTES: job options spreading BYTES over one job per queue,
# each on its own CPU, so every queue carries I/O
fio_jobs() {
	echo "--numjobs=$1 --size=$(($2 / $1)) --offset_increment=$(($2 / $1)) --cpus_allowed_policy=split"
}

# loop_io NAME DEV IMG QUEUES: fio verify 4k then 64k randrw; bytes compare
# shellcheck disable=SC2046 # $(fio_jobs ...) is a list of fio options
loop_io() {
	local name=$1 dev=$2 img=$3 queues=$4
	fio_verify "$dev" "$name-4k" --rw=randwrite --bs=4k --iodepth=32 $(fio_jobs "$queues" $((32 << 20))) &&
		ok "$name: fio verify randwrite 4k iodepth 32, 32 MiB" ||
		{ bad "$name: fio verify randwrite 4k"; srv_errors; }
	fio_verify "$dev" "$name-64k" --rw=randrw --bs=64k --iodepth=32 --verify_backlog=16 \
		$(fio_jobs "$queues" $((32 << 20))) &&
		ok "$name: fio verify randrw 64k iodepth 32, verify_backlog" ||
		{ bad "$name: fio verify randrw 64k"; srv_errors; }
	dev_equals_file "$name" "$dev" "$img"
}

# dev_equals_file NAME DEV IMG: every byte read through the device (O_DIRECT)
# is the backing file's
dev_equals_file() {
	if cmp <(timeout 300 dd if="$2" bs=1M iflag=direct status=none) "$3" > "$work/cmp" 2>&1; then
		ok "$1: the device's $(($(stat -c %s "$3") >> 20)) MiB equal the backing file's"
	else
		bad "$1: device and backing file differ: $(cat "$work/cmp")"
		srv_errors
	fi
}

# null_io NAME DEV QUEUES: fio randrw 4k, 64 MiB, io_uring O_DIRECT
null_io() {
	local name=$1 dev=$2 queues=$3 n
	# shellcheck disable=SC2046 # $(fio_jobs ...) is a list of fio options
	if timeout 300 fio --name="$name" --filename="$dev" --allow_file_create=0 --rw=randrw \
		--iodepth=32 --bs=4k --direct=1 --ioengine=io_uring $(fio_jobs "$queues" $((64 << 20))) \
		--output="$work/$name.fio"; then
		n=$(grep -c 'err= 0' "$work/$name.fio")
		[ "$n" = "$queues" ] && ! grep -qE 'err= *[1-9]' "$work/$name.fio" &&
			ok "$name: fio randrw 4k iodepth 32, 64 MiB, $queues job(s), err=0" ||
			{ bad "$name: fio reported errors"; cat "$work/$name.fio"; srv_errors; }
	else
		bad "$name: fio failed"
		cat "$work/$name.fio"
		srv_errors
	fi
}

if [ "$mode" != recovery ]; then
	for queues in 1 2; do
		n=$case_-q$queues
		args=(--target "$target" --mode "$mode" --queues "$queues" --depth 64)
		[ "$case_" = null-copy ] && [ "$queues" = 1 ] && args+=(--probe-absent)
		if [ "$target" = loop ]; then
			img=$work/$n.img	# $work is on /dev/shm: tmpfs
			truncate -s 64M "$img"
			args+=(--backing "$img")
		fi
		srv_start "$n" "${args[@]}" || { bad "$n: server start"; continue; }
		ok "$n: /dev/ublkb$srv_id live"
		[ "$target" = loop ] && echo "$n: $(grep -m1 'backing file opened' "$srv_err")"
		flags_check "$n" "$mode"
		[ "$case_" = null-copy ] && [ "$queues" = 1 ] && absent_check "$n"
		dev=/dev/ublkb$srv_id
		if [ "$target" = loop ]; then
			loop_io "$n" "$dev" "$img" "$queues"
		else
			null_io "$n" "$dev" "$queues"
		fi
		how=del
		[ "$queues" = 2 ] && how=term
		srv_stop "$n" "$how"
		summary_check "$n" "$mode" "$queues"
	done
	finish
fi

# --- loop-recovery
for queues in 1 2; do
	n=loop-recovery-q$queues
	img=$work/$n.img
	truncate -s 64M "$img"
	srv_start "$n" --target loop --backing "$img" --mode auto --recovery --queues "$queues" ||
		{ bad "$n: server start"; continue; }
	flags_check "$n" auto "$RECOVERY"
	dev=/dev/ublkb$srv_id
	id=$srv_id
	# shellcheck disable=SC2207 # $(fio_jobs ...) is a list of fio options
	job=(--rw=randwrite --bs=4k --iodepth=32 $(fio_jobs "$queues" $((16 << 20))))
	fio_verify "$dev" "$n-pattern" "${job[@]}" && ok "$n: fio wrote and verified the pattern" ||
		{ bad "$n: fio verify of the pattern"; srv_errors; }

	kill -9 "$srv_child"
	wait_exit "$srv_pid" 20 && ok "$n: server killed (kill -9)" ||
		{ bad "$n: the killed server still runs after 20 s"; stacks "$srv_child"; continue; }
	for i in $(seq 300); do
		[ "$(dev_state "$id")" = QUIESCED ] && break
		sleep 0.1
	done
	st=$(dev_state "$id")
	[ "$st" = QUIESCED ] && ok "$n: ublk $id QUIESCED without its server" ||
		{ bad "$n: ublk $id is '$st' 30 s after its server died, want QUIESCED"; continue; }

	# a read while no server is there waits for the next one
	timeout 120 dd if="$dev" of="$work/$n.read" bs=1M count=1 skip=5 iflag=direct status=none \
		2> "$work/$n.read.err" &
	rd_pid=$!
	srv_pids+=("$rd_pid")	# killed on exit, too
	sleep 1
	alive "$rd_pid" && ok "$n: a read issued meanwhile waits" ||
		bad "$n: the read ended before a new server came: $(cat "$work/$n.read.err")"

	srv_start "$n-recover" --target loop --backing "$img" --mode auto --recover "$id" ||
		{ bad "$n: recovering server start"; continue; }
	[ "$srv_id" = "$id" ] && ok "$n: recovered ublk $id: $(grep -m1 '^FLAGS' "$srv_out")" ||
		bad "$n: the recovering server is READY with id $srv_id, not $id"
	flags_check "$n-recover" auto "$RECOVERY"
	if wait_exit "$rd_pid" 30; then
		[ "$rc" = 0 ] && cmp -s "$work/$n.read" <(dd if="$img" bs=1M count=1 skip=5 status=none) &&
			ok "$n: the waiting read completed with the file's bytes" ||
			bad "$n: the waiting read: exit $rc $(cat "$work/$n.read.err"), bytes $(cmp "$work/$n.read" \
				<(dd if="$img" bs=1M count=1 skip=5 status=none) 2>&1 || true)"
	else
		bad "$n: the waiting read still waits 30 s after the recovery"
		stacks "$rd_pid" $(pgrep -P "$rd_pid")
	fi
	fio_verify "$dev" "$n-pattern" "${job[@]}" --verify_only &&
		ok "$n: fio --verify_only: the pattern written before the kill reads back" ||
		{ bad "$n: fio --verify_only after the recovery"; srv_errors; }
	# shellcheck disable=SC2046 # $(fio_jobs ...) is a list of fio options
	fio_verify "$dev" "$n-after" --rw=randrw --bs=64k --iodepth=32 --verify_backlog=16 \
		$(fio_jobs "$queues" $((32 << 20))) --offset=32M &&
		ok "$n: new I/O after the recovery: fio verify randrw 64k at 32 MiB" ||
		{ bad "$n: fio verify after the recovery"; srv_errors; }
	dev_equals_file "$n" "$dev" "$img"
	srv_stop "$n" del
	summary_check "$n" auto "$queues"
done
finish
