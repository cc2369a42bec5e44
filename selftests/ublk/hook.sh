#!/usr/bin/env bash
# ublk/hook-* (vm, root): the kernel path's hook (ublk_bpf_ops) attached
# with hook_attach (iouring_bpf_ublk_hook_attach()) to a device that
# `ublk add --target loop` serves from the daemon (ublk_loop policy).
#  refusals:  ublk_loop.bpf.o's hook serves a written pattern (in the file
#             and read back through the device) while the daemon's policy
#             sees none of it; a second attachment -16 (EBUSY) and the
#             first still serves; device 999 (no server to take
#             /dev/ublkc999 from) -9 (EBADF); /dev/null named as the device
#             -22; CAP_SYS_ADMIN dropped (CAP_BPF, CAP_PERFMON kept) -1
#             (EPERM); a sleepable queue_rq -22; an O_APPEND file -22; the
#             device itself -40 (ELOOP), a dm-linear device over it -40,
#             and a file on ext4 on it -40; an
#             O_DIRECT null_blk with 4096-byte blocks -22 (the device's are
#             512); files
#             read-only -13 (EACCES); descriptor 1000 -9 (EBADF); /dev/null
#             -22 (EINVAL); a device of its own with UBLK_F_UNPRIVILEGED_DEV
#             -1 (EPERM), deleted again; `ublk add --path kernel` works and
#             list -j says "path": "kernel".
#  behaviour: a queue_rq returning -ENOSPC for writes: dd fails with "No
#             space left on device", the file is unchanged, reads still
#             return the file's bytes; one returning 7 for reads: a read
#             fails with "Input/output error" and the kernel's warning names
#             the value (and is no kernel-report match), writes still work;
#             a loop program calling bpf_ublk_io_add_extent() does not load
#             (the verifier says "not allowed").
#  detach:    fio randwrite + crc32c verify while the hook serves; the hook
#             is detached (stdin closed) mid-write; fio ends with 0 errors,
#             every byte written and verified, and afterwards the daemon's
#             policy serves (its ublk_requests grows, the data is right).
#  private-file: the kernel opens the backing file for itself: O_APPEND
#             set on the server's descriptor after the attach, a 4 KiB
#             write of the device at 1 MiB lands at 1 MiB and the file
#             does not grow; over a null_blk disk whose blocks at 1 MiB
#             fail, a write there is lost in writeback, the server's
#             fsync() gets the EIO, and the device's FLUSH (fsync of
#             /dev/ublkbN) still fails with EIO.
# usage: hook.sh TOOL HOOK_ATTACH POLICY_DIR OBJDIR BPFTOOL MODE
#   Exit 0 pass, 1 fail, 77 skip.
set -u
T=$(realpath "$1")
HA=$2
pol=$3
objdir=$4
bpftool=$5
mode=$6
. "$(dirname "$0")/lib.sh"
ublk_require
[ -x "$HA" ] || { echo "FAIL: no hook_attach at $HA (build the tests)"; exit 1; }
for o in "$pol/ublk_loop" "$objdir/hook_write_enospc" "$objdir/hook_bad_return" \
	 "$objdir/hook_kfunc_in_loop" "$objdir/hook_sleepable" "$objdir/hook_uncovered"; do
	[ -f "$o.bpf.o" ] || { echo "FAIL: no $o.bpf.o (build the tests)"; exit 1; }
done
loop_o=$pol/ublk_loop.bpf.o
src=${IOURING_BPF_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}

declare -A hpid hfd

# hook_start NAME ARGS...: hook_attach ARGS in the background, its stdin a
# fifo we hold open; returns 0 once it printed "attached", 1 if it ended
# (its output: $work/NAME.out)
hook_start() {
	local name=$1 fd i
	shift
	rm -f "$work/$name.in"
	mkfifo "$work/$name.in"
	timeout 300 "$HA" "$@" < "$work/$name.in" > "$work/$name.out" 2>&1 &
	hpid[$name]=$!
	exec {fd}> "$work/$name.in"
	hfd[$name]=$fd
	for i in $(seq 300); do
		grep -q '^attached' "$work/$name.out" && return 0
		kill -0 "${hpid[$name]}" 2> /dev/null || break
		sleep 0.1
	done
	echo "hook_attach $*: $(cat "$work/$name.out")" >&2
	hook_stop "$name"
	return 1
}

# hook_stop NAME [term]: end it (close its stdin, or SIGTERM), wait up to
# 60 s; its output in $hout; 1 if it did not end or exited non-zero. Not in
# a subshell: the fifo's writer and the job are this shell's.
hook_stop() {
	local name=$1 how=${2:-eof} i rc fd
	hout=
	[ -n "${hpid[$name]:-}" ] || return 1
	if [ "$how" = term ]; then
		kill -TERM "${hpid[$name]}" 2> /dev/null
	fi
	fd=${hfd[$name]}
	exec {fd}>&-
	for i in $(seq 600); do
		kill -0 "${hpid[$name]}" 2> /dev/null || break
		sleep 0.1
	done
	if kill -0 "${hpid[$name]}" 2> /dev/null; then
		echo "hook_attach $name still runs 60 s after $how" >&2
		kill -9 "${hpid[$name]}"
	fi
	wait "${hpid[$name]}"
	rc=$?
	unset "hpid[$name]"
	hout=$(cat "$work/$name.out")
	return $rc
}

# counter_of OUTPUT NAME: the value hook_attach printed for counter NAME
counter_of() { awk -v n="$2" '$1 == n { print $2 }' <<<"$1"; }

# daemon_requests: the daemon's ublk_requests, summed over ublk_loop's .bss
# maps (one per queue; a ublk_loop hook's instance counts only hook counters)
daemon_requests() { bss_sum "$bpftool" ublk_loo.bss ublk_requests; }

# attach_fails WANT_ERRNO WHAT ARGS...: hook_attach ARGS (stdin empty) exits
# 1 printing "error WANT_ERRNO ..."; its output in $aout
attach_fails() {
	local want=$1 what=$2 rc
	shift 2
	aout=$(timeout 60 "$HA" "$@" < /dev/null 2>&1)
	rc=$?
	if [ $rc = 1 ] && grep -q "^error $want " <<<"$aout"; then
		ok "$what: $(grep '^error' <<<"$aout")"
	else
		bad "$what: exit $rc, want error $want: $aout"
	fi
}

# the device: 64 MiB of random bytes, served by the daemon (ublk_loop)
new_device() {
	local out
	img=$work/$1.img
	head -c $((64 << 20)) /dev/urandom > "$img"
	out=$(ublk_add --target loop --file "$img") || return 1
	id=$(jget '["id"]' <<<"$out")
	dev=/dev/ublkb$id
}

# same_bytes OFF LEN (bytes, multiples of 4096): the device (direct
# reads) and the file agree there
same_bytes() {
	cmp -s <(dd if="$dev" bs=256k skip="$1" count="$2" iflag=direct,skip_bytes,count_bytes \
		    status=none) \
		<(dd if="$img" bs=256k skip="$1" count="$2" iflag=skip_bytes,count_bytes status=none)
}
M=$((1 << 20))

refusals() {
	local out req pat=$work/pat d0 d1 uid
	new_device refusals || { bad "add"; return; }
	hook_start first "$loop_o" "$id" "$img" || { bad "attach ublk_loop's hook to ublk$id"; return; }
	ok "attached ublk_loop.bpf.o's hook to ublk$id"
	d0=$(daemon_requests)
	head -c $((256 << 10)) /dev/urandom > "$pat"
	dd if="$pat" of="$dev" bs=256k seek=16 oflag=direct status=none || bad "write through the hook"
	cmp -s "$pat" <(dd if="$img" bs=256k skip=16 count=1 status=none) &&
		ok "the pattern written through the hook is in the backing file" ||
		bad "the backing file does not hold the pattern"
	cmp -s "$pat" <(dd if="$dev" bs=256k skip=16 count=1 iflag=direct status=none) &&
		ok "read back through the device" || bad "the device does not read back the pattern"
	d1=$(daemon_requests)
	[ "$d0" -ge 0 ] && [ "$d0" = "$d1" ] &&
		ok "the daemon's policy saw none of it (ublk_requests $d0 -> $d1)" ||
		bad "the daemon served requests while the hook was attached ($d0 -> $d1)"

	attach_fails -16 "a second hook on ublk$id (EBUSY)" "$loop_o" "$id" "$img"
	head -c $((64 << 10)) /dev/urandom > "$pat.2"
	dd if="$pat.2" of="$dev" bs=64k seek=100 oflag=direct status=none &&
		cmp -s "$pat.2" <(dd if="$img" bs=64k skip=100 count=1 status=none) &&
		[ "$(daemon_requests)" = "$d1" ] &&
		ok "the first hook still serves after the refused second" ||
		bad "after the refused second attachment the first hook does not serve"
	hook_stop first; out=$hout
	grep -q '^detached' <<<"$out" || bad "hook_attach: $out"
	req=$(counter_of "$out" ublk_hook_requests)
	[ -n "$req" ] && [ "$req" -gt 0 ] && [ "$(counter_of "$out" ublk_hook_errors)" = 0 ] &&
		ok "ublk_hook_requests $req, ublk_hook_errors 0" ||
		bad "hook counters: $out"
	same_bytes $((4 * M)) $((256 << 10)) && [ "$(daemon_requests)" -gt "$d1" ] &&
		ok "after the detach the daemon serves ($(daemon_requests) requests)" ||
		bad "after the detach: the daemon did not serve a read right"

	attach_fails -9 "device 999: no server, no /dev/ublkc999 to name it by (EBADF)" \
		"$loop_o" 999 "$img"
	attach_fails -22 "/dev/null named as the device (EINVAL)" --char /dev/null "$loop_o" "$id" "$img"
	attach_fails -1 "CAP_BPF and CAP_PERFMON without CAP_SYS_ADMIN (EPERM)" --drop-admin \
		"$loop_o" "$id" "$img"
	grep -q '^CAP_SYS_ADMIN dropped' <<<"$aout" || bad "--drop-admin: $aout"
	attach_fails -22 "a sleepable queue_rq, struct_ops.s (EINVAL)" \
		"$objdir/hook_sleepable.bpf.o" "$id" "$img"
	attach_fails -22 "a backing file open O_APPEND (EINVAL)" --append "$loop_o" "$id" "$img"
	attach_fails -40 "/dev/ublkb$id as its own backing (ELOOP)" "$loop_o" "$id" "$dev"
	# a device-mapper device over this one: its I/O would come back here
	local dm=ublkself$$ dmdev
	need_program dmsetup
	if printf '0 %s linear %s 0\n' "$(blockdev --getsz "$dev")" "$dev" |
		DM_DISABLE_UDEV=1 dmsetup create --noudevsync "$dm"; then
		dmdev=/dev/$(dmsetup info -c --noheadings -o blkdevname "$dm")
		attach_fails -40 "$dmdev, dm-linear over ublkb$id, as its backing (ELOOP)" \
			"$loop_o" "$id" "$dmdev"
		dmsetup remove "$dm" || bad "dmsetup remove $dm"
	else
		bad "dmsetup create $dm over $dev"
	fi
	# O_DIRECT on a disk whose logical block (4096) is larger than the device's (512)
	local nb4=/sys/kernel/config/nullb/nullb4k$$
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config 2>/dev/null
	if mkdir "$nb4" 2>/dev/null; then
		echo 64 > "$nb4/size"; echo 4096 > "$nb4/blocksize"; echo 1 > "$nb4/power"
		for i in $(seq 50); do [ -b "/dev/${nb4##*/}" ] && break; sleep 0.1; done
		attach_fails -22 "an O_DIRECT backing with 4096-byte blocks under 512-byte ublk$id (EINVAL)" \
			--direct "$loop_o" "$id" "/dev/${nb4##*/}"
		echo 0 > "$nb4/power"; rmdir "$nb4"
	else
		bad "no null_blk configfs for the O_DIRECT alignment refusal"
	fi
	attach_fails -13 "files open read-only (EACCES)" --ro "$loop_o" "$id" "$img"
	attach_fails -9 "descriptor 1000, not open (EBADF)" --bad-fd "$loop_o" "$id"
	attach_fails -22 "/dev/null as backing file (EINVAL)" "$loop_o" "$id" /dev/null
	attach_fails -1 "an UBLK_F_UNPRIVILEGED_DEV device (EPERM)" --unpriv "$loop_o" 0 "$img"
	out=$aout
	uid=$(sed -n 's/^unprivileged device \([0-9]*\) .*/\1/p' <<<"$out")
	if [ -n "$uid" ] && grep -q "^deleted unprivileged device $uid: 0$" <<<"$out" &&
		[ ! -e "/sys/class/ublk-char/ublkc$uid" ]; then
		ok "the unprivileged device $uid was deleted again"
	else
		bad "unprivileged device: $out"
		ublk_remember "$uid"
	fi
	# the device took no harm from the refusals
	dd if="$pat" of="$dev" bs=256k seek=40 oflag=direct status=none &&
		cmp -s "$pat" <(dd if="$img" bs=256k skip=40 count=1 status=none) &&
		same_bytes $((10 * M)) $((256 << 10)) && ok "ublk$id still served by the daemon after the refusals" ||
		bad "ublk$id after the refusals"
	# a file on a file system on the device: its reads would come back here
	local mnt=$work/mnt
	mkdir -p "$mnt"
	if mkfs.ext4 -q -F "$dev" && mount "$dev" "$mnt"; then
		truncate -s 1M "$mnt/backing"
		attach_fails -40 "a file on ext4 on ublkb$id as its backing (ELOOP)" "$loop_o" "$id" \
			"$mnt/backing"
		umount "$mnt" || bad "umount $mnt"
	else
		bad "mkfs.ext4 or mount of $dev"
	fi
	"$T" ublk del "$id" > /dev/null && ok "del $id" || bad "del $id"

	# the tool's own kernel path
	local kimg=$work/kernel.img kid
	truncate -s 32M "$kimg"
	out=$("$T" -j ublk add --target loop --file "$kimg" --path kernel) ||
		{ bad "ublk add --path kernel: $out"; return; }
	kid=$(jget '["id"]' <<<"$out")
	ublk_remember "$kid"
	"$T" -j ublk list | json "any(d['id'] == $kid and d.get('path') == 'kernel' for d in j)" &&
		ok "ublk add --path kernel: list -j shows \"path\": \"kernel\" for $kid" ||
		bad "ublk list -j does not show the kernel path for $kid: $("$T" -j ublk list)"
	dd if="$pat" of="/dev/ublkb$kid" bs=256k seek=8 oflag=direct status=none &&
		cmp -s "$pat" <(dd if="$kimg" bs=256k skip=8 count=1 status=none) &&
		cmp -s "$pat" <(dd if="/dev/ublkb$kid" bs=256k skip=8 count=1 iflag=direct status=none) &&
		ok "a pattern through the --path kernel device is in its file and reads back" ||
		bad "I/O through the --path kernel device"
	attach_fails -16 "hook_attach on the --path kernel device (EBUSY)" "$loop_o" "$kid" "$kimg"
	"$T" ublk del "$kid" > /dev/null && ok "del $kid" || bad "del $kid"
}

behaviour() {
	local out msg rc sum0 pat=$work/pat line re kmsg0
	new_device behaviour || { bad "add"; return; }

	# writes: -ENOSPC
	hook_start enospc "$objdir/hook_write_enospc.bpf.o" "$id" "$img" ||
		{ bad "attach hook_write_enospc"; return; }
	sum0=$(sha256sum < "$img")
	head -c $((64 << 10)) /dev/urandom > "$pat"
	msg=$(dd if="$pat" of="$dev" bs=64k seek=3 oflag=direct 2>&1)
	rc=$?
	[ $rc != 0 ] && grep -q "No space left on device" <<<"$msg" &&
		ok "a write the hook fails with -ENOSPC: dd exit $rc, No space left on device" ||
		bad "write with the -ENOSPC hook: exit $rc: $msg"
	[ "$(sha256sum < "$img")" = "$sum0" ] && ok "the backing file is unchanged" ||
		bad "the backing file changed"
	same_bytes 0 $M && ok "reads still return the file's bytes" || bad "reads through the -ENOSPC hook"
	hook_stop enospc term; out=$hout
	grep -q '^detached' <<<"$out" || bad "hook_attach (SIGTERM): $out"
	[ "$(counter_of "$out" ublk_hook_errors)" -gt 0 ] 2> /dev/null &&
		[ "$(counter_of "$out" ublk_hook_requests)" -gt "$(counter_of "$out" ublk_hook_errors)" ] &&
		ok "counters: $(tr '\n' ' ' <<<"$out" | grep -o 'ublk_hook_requests [0-9]* ublk_hook_errors [0-9]*')" ||
		bad "counters of the -ENOSPC hook: $out"
	dd if="$pat" of="$dev" bs=64k seek=3 oflag=direct status=none &&
		cmp -s "$pat" <(dd if="$img" bs=64k skip=3 count=1 status=none) &&
		ok "after the detach the same write works (daemon)" || bad "write after detaching the -ENOSPC hook"

	# reads: 7, neither a serve value nor an errno
	# (never dmesg -c: the runner reads the kernel log after the test)
	kmsg0=$(dmesg | wc -l)
	hook_start bad "$objdir/hook_bad_return.bpf.o" "$id" "$img" ||
		{ bad "attach hook_bad_return"; return; }
	msg=$(dd if="$dev" of=/dev/null bs=4k count=1 skip=100 iflag=direct 2>&1)
	rc=$?
	[ $rc != 0 ] && grep -q "Input/output error" <<<"$msg" &&
		ok "a read the hook returns 7 for: dd exit $rc, Input/output error" ||
		bad "read with the bad-return hook: exit $rc: $msg"
	head -c $((64 << 10)) /dev/urandom > "$pat.b"
	dd if="$pat.b" of="$dev" bs=64k seek=5 oflag=direct status=none &&
		cmp -s "$pat.b" <(dd if="$img" bs=64k skip=5 count=1 status=none) &&
		ok "writes still go through iou_ublk_hook()" || bad "a write through the bad-return hook"
	hook_stop bad; out=$hout
	grep -q '^detached' <<<"$out" || bad "hook_attach: $out"
	[ "$(counter_of "$out" ublk_hook_errors)" -gt 0 ] 2> /dev/null &&
		ok "bad-return hook: ublk_hook_errors $(counter_of "$out" ublk_hook_errors)" ||
		bad "counters of the bad-return hook: $out"
	line=$(dmesg | tail -n +$((kmsg0 + 1)) | grep "ublk$id: ublk_bpf_ops queue_rq returned 7: I/O error" | head -1)
	[ -n "$line" ] && ok "kernel log: $line" || bad "no 'queue_rq returned 7' warning: $(dmesg | tail -5)"
	if [ -f "$src/scripts/kernel-report.re" ]; then
		re=$(cat "$src/scripts/kernel-report.re")
		[ -n "$line" ] && ! grep -qE "$re" <<<"$line" &&
			ok "the warning is no kernel-report match" ||
			bad "the bad-return warning matches scripts/kernel-report.re: $line"
	fi
	same_bytes 0 $((512 << 10)) && ok "after the detach reads work (daemon)" || bad "reads after the bad-return hook"

	# extents that do not cover the request: EIO, never the pages' contents
	kmsg0=$(dmesg | wc -l)
	hook_start uncovered "$objdir/hook_uncovered.bpf.o" "$id" "$img" ||
		{ bad "attach hook_uncovered"; return; }
	for bs in 64k 4k; do
		msg=$(dd if="$dev" of="$work/got" bs=$bs count=1 skip=7 iflag=direct 2>&1)
		rc=$?
		[ $rc != 0 ] && grep -q "Input/output error" <<<"$msg" && [ ! -s "$work/got" ] &&
			ok "a $bs read the hook covers $([ $bs = 4k ] && echo not at all || echo half of): EIO" ||
			bad "$bs read with partial extents: exit $rc, $(stat -c %s "$work/got") bytes: $msg"
	done
	msg=$(blkdiscard -z -o $((8 * M)) -l $((64 << 10)) "$dev" 2>&1)
	rc=$?
	[ $rc != 0 ] && ok "a write-zeroes without extents fails (blkdiscard -z exit $rc)" ||
		bad "write-zeroes without extents succeeded"
	cmp -s <(dd if="$img" bs=64k skip=128 count=1 status=none) \
		<(head -c $((64 << 10)) /dev/zero) &&
		bad "the refused write-zeroes zeroed the file" || ok "the file is not zeroed there"
	hook_stop uncovered; out=$hout
	grep -q '^detached' <<<"$out" || bad "hook_attach: $out"
	line=$(dmesg | tail -n +$((kmsg0 + 1)) | grep "ublk$id: ublk_bpf_ops extents do not cover" | head -1)
	[ -n "$line" ] && ok "kernel log: $line" || bad "no 'extents do not cover' warning"
	"$T" ublk del "$id" > /dev/null && ok "del $id" || bad "del $id"

	# the kfunc outside a ublk_bpf_ops program
	out=$(timeout 60 "$T" load "$objdir/hook_kfunc_in_loop.bpf.o" --ring 2>&1)
	rc=$?
	[ $rc != 0 ] && grep -q "calling kernel function bpf_ublk_io_add_extent is not allowed" <<<"$out" &&
		ok "a loop program calling bpf_ublk_io_add_extent does not load (exit $rc, 'not allowed')" ||
		bad "load of the loop program with the kfunc: exit $rc: $(tail -20 <<<"$out")"
}

detach() {
	local out d0 d1 i fpid rc req writes
	new_device detach || { bad "add"; return; }
	hook_start fio "$loop_o" "$id" "$img" || { bad "attach ublk_loop's hook"; return; }
	d0=$(daemon_requests)
	# 16 MiB of 4 KiB random writes at 1000/s (several seconds), then the verify
	# (without our end of hook_attach's stdin, or closing it would not be EOF)
	(fd=${hfd[fio]}; exec {fd}>&-; exec timeout 300 fio --name=detach --filename="$dev" --allow_file_create=0 --ioengine=io_uring \
		--direct=1 --rw=randwrite --bs=4k --size=16M --iodepth=16 --rate_iops=1000 \
		--verify=crc32c --do_verify=1 --verify_fatal=1 --output-format=json \
		--output="$work/detach.json") &
	fpid=$!
	for i in $(seq 300); do
		writes=$(awk '{ print $5 }' "/sys/block/ublkb$id/stat" 2>/dev/null || echo 0)
		[ "$writes" -gt 300 ] && break
		sleep 0.1
	done
	sleep 2
	kill -0 "$fpid" 2> /dev/null && ok "fio writes under way ($writes writes) while the hook serves" ||
		bad "fio ended before the detach"
	hook_stop fio; out=$hout
	grep -q '^detached' <<<"$out" || bad "hook_attach: $out"
	req=$(counter_of "$out" ublk_hook_requests)
	kill -0 "$fpid" 2> /dev/null && ok "detached under fio (the hook served $req requests)" ||
		bad "fio was no longer running at the detach"
	[ -n "$req" ] && [ "$req" -gt 0 ] || bad "the hook served nothing: $out"
	wait "$fpid"
	rc=$?
	if [ $rc = 0 ] && python3 - "$work/detach.json" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
w, r = j["write"]["io_bytes"], j["read"]["io_bytes"]
print(f"fio: error {j['error']}, wrote {w}, verified {r} bytes")
sys.exit(0 if j["error"] == 0 and w == 16 << 20 and r == 16 << 20 else 1)
EOF
	then
		ok "fio: 0 errors, all 16 MiB written and verified across the detach"
	else
		bad "fio exit $rc: $(cat "$work/detach.json")"
	fi
	d1=$(daemon_requests)
	[ "$d1" -gt "$d0" ] && ok "the daemon's policy served after the detach (ublk_requests $d0 -> $d1)" ||
		bad "daemon requests $d0 -> $d1"
	same_bytes 0 $((16 * M)) && [ "$(daemon_requests)" -gt "$d1" ] &&
		ok "a direct read of 16 MiB after the detach (daemon) returns the file's bytes" ||
		bad "read after the detach"
	"$T" ublk del "$id" > /dev/null && ok "del $id" || bad "del $id"
}

# wait_line NAME PATTERN: up to 10 s for hook_attach NAME to print PATTERN
wait_line() {
	local i
	for i in $(seq 100); do
		grep -q "$2" "$work/$1.out" && return 0
		sleep 0.1
	done
	return 1
}

private_file() {
	local pat=$work/pat size0 size1 nb out msg rc
	new_device private || { bad "add"; return; }
	size0=$(stat -c %s "$img")
	hook_start priv --server "$loop_o" "$id" "$img" || { bad "attach ublk_loop's hook"; return; }
	echo append >&"${hfd[priv]}"
	wait_line priv '^O_APPEND set' || bad "the server could not set O_APPEND: $(cat "$work/priv.out")"
	head -c 4096 /dev/urandom > "$pat"
	dd if="$pat" of="$dev" bs=4k seek=256 oflag=direct conv=notrunc status=none ||
		bad "write at 1 MiB through the hook"
	size1=$(stat -c %s "$img")
	cmp -s "$pat" <(dd if="$img" bs=4k skip=256 count=1 status=none) &&
		ok "O_APPEND on the server's descriptor: a write at 1 MiB lands at 1 MiB" ||
		bad "O_APPEND on the server's descriptor: the file does not hold the write at 1 MiB"
	[ "$size0" = "$size1" ] && ok "the file did not grow ($size1 bytes)" ||
		bad "the file grew from $size0 to $size1 bytes"
	hook_stop priv
	"$T" ublk del "$id" > /dev/null || bad "del $id"

	# a writeback error the server's fsync() consumed fails the device's FLUSH
	nb=/sys/kernel/config/nullb/nbpriv$$
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config 2>/dev/null
	mkdir "$nb" 2> /dev/null || { bad "no null_blk configfs"; return; }
	echo 64 > "$nb/size"; echo 1 > "$nb/memory_backed"; echo 1 > "$nb/power"
	for i in $(seq 50); do [ -b "/dev/${nb##*/}" ] && break; sleep 0.1; done
	out=$(ublk_add --target loop --file "/dev/${nb##*/}" --size 64M) ||
		{ bad "add over /dev/${nb##*/}: $out"; echo 0 > "$nb/power"; rmdir "$nb"; return; }
	id=$(jget '["id"]' <<<"$out")
	dev=/dev/ublkb$id
	if hook_start privwb --server "$loop_o" "$id" "/dev/${nb##*/}"; then
		echo "+2048-2055" > "$nb/badblocks" || bad "null_blk badblocks"
		dd if="$pat" of="$dev" bs=4k seek=256 oflag=direct conv=notrunc status=none &&
			ok "a 4 KiB write at 1 MiB completes (the backing disk's page cache)" ||
			bad "the write at 1 MiB failed at once"
		echo fsync >&"${hfd[privwb]}"
		wait_line privwb '^fsync 0:' || bad "the server's fsync did not return"
		grep -q '^fsync 0: -5$' "$work/privwb.out" &&
			ok "the server's fsync() of the disk: EIO (the write is lost)" ||
			bad "the server's fsync(): $(grep '^fsync' "$work/privwb.out"), want -5"
		msg=$(dd if=/dev/null of="$dev" count=0 conv=notrunc,fsync 2>&1)
		rc=$?
		[ $rc != 0 ] && grep -q "Input/output error" <<<"$msg" &&
			ok "the device's FLUSH after the server's fsync: EIO ($msg)" ||
			bad "the device's FLUSH succeeded (exit $rc: $msg) for a write that was lost"
		echo "-2048-2055" > "$nb/badblocks"
		hook_stop privwb
	else
		bad "attach ublk_loop's hook over /dev/${nb##*/}"
	fi
	"$T" ublk del "$id" > /dev/null || bad "del $id"
	echo 0 > "$nb/power"; rmdir "$nb"
}

case $mode in
private-file) private_file ;;
refusals) refusals ;;
behaviour) behaviour ;;
detach) detach ;;
*) echo "FAIL: unknown mode $mode"; exit 1 ;;
esac
finish
