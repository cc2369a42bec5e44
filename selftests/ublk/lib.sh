# shellcheck shell=bash
# Shared by the ublk tests (sourced after T is set). Devices added with
# ublk_add are deleted on exit, whatever happens.
fails=0
work=$(mktemp -d /dev/shm/ublk-test.XXXXXX)
export IOURING_BPF_UBLK_DIR=$work/state
ublk_ids=()

ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
skip() { echo "SKIP: $*"; exit 77; }
# json EXPR: stdin is JSON, EXPR (Python, over j) must be true
json() { python3 -c "import json,sys; j=json.load(sys.stdin); sys.exit(0 if ($1) else 1)"; }
jget() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }

# ublk_remember ID: delete device ID on exit. Kept in a file too: ublk_add
# mostly runs in a command substitution, a subshell, whose ublk_ids is lost.
ublk_remember() {
	[ -n "$1" ] || return 0
	ublk_ids+=("$1")
	echo "$1" >> "$work/ublk_ids"
}

ublk_cleanup() {
	local id
	for id in "${ublk_ids[@]}" $(cat "$work/ublk_ids" 2>/dev/null); do
		# --force: a test may have remembered another program's device
		[ -e "/sys/class/ublk-char/ublkc$id" ] && "$T" ublk del "$id" --force > /dev/null 2>&1
	done
	cd /
	rm -rf "$work"
}
trap ublk_cleanup EXIT

# A test is skipped only when the kernel truly lacks a feature it needs. The
# kernel this tree builds (release *-iouring-bpf) has every one of them, so
# there a missing feature is a failure; so is a missing program (scripts/deps
# installs fio, strace, e2fsprogs) or running as anyone but root.
our_kernel() { case $(uname -r) in *-iouring-bpf) return 0 ;; esac; return 1; }
no_feature() {
	our_kernel && { echo "FAIL: $* -- on the iouring-bpf kernel ($(uname -r)), which has it"; exit 1; }
	skip "$*"
}
need_program() {
	local p
	# (bash's command -v also names a file it cannot run, if nothing else)
	p=$(command -v "$1") && [ -x "$p" ] ||
		{ echo "FAIL: no $1 (a dependency: scripts/deps installs it)"; exit 1; }
}

ublk_require() {
	[ "$(id -u)" = 0 ] || { echo "FAIL: needs root (the VM runs tests as root)"; exit 1; }
	[ -e /dev/ublk-control ] || no_feature "no /dev/ublk-control (CONFIG_BLK_DEV_UBLK)"
	need_program fio
	[ -x "$T" ] || { echo "FAIL: no tool at $T"; exit 1; }
	T=$(realpath "$T")
	cd "$work" || { echo "FAIL: cannot cd to $work"; exit 1; }	# fio keeps verify state files in the working directory
}

# ublk_add ARGS...: add a device (JSON on stdout), remembered for cleanup.
# With UBLK_PATH=kernel (the ublk/*-kernel tests) a BPF target also gets
# --path kernel: its policy's ublk_bpf_ops hook serves the requests in the
# driver; `ublk list` must then say so.
ublk_add() {
	local out id extra=()
	if [ "${UBLK_PATH:-daemon}" = kernel ] && [[ " $* " != *" loop-user "* ]]; then
		extra=(--path kernel)
	fi
	out=$("$T" -j ublk add "$@" "${extra[@]}") || { echo "add $* ${extra[*]}: $out" >&2; return 1; }
	id=$(jget '["id"]' <<<"$out")
	ublk_remember "$id"
	if [ ${#extra[@]} -gt 0 ] && ! "$T" -j ublk list | json "any(d['id'] == $id and d.get('path') == 'kernel' for d in j)"; then
		echo "add $* ${extra[*]}: ublk list does not show the kernel path" >&2
		return 1
	fi
	echo "$out"
}

# bss_sum BPFTOOL MAP KEY: the policy counter KEY summed over every BPF map
# named MAP (a policy's .bss, e.g. ublk_loo.bss: one instance per queue, and
# one for the kernel path's hook), found by BTF; -1 if it cannot be read
bss_sum() {
	"$1" -j map dump name "$2" 2>/dev/null | python3 -c '
import json, sys
def total(o, k):
    if isinstance(o, dict):
        n = o[k] if k in o and isinstance(o[k], int) else 0
        return n + sum(total(v, k) for v in o.values() if isinstance(v, (dict, list)))
    if isinstance(o, list):
        return sum(total(x, k) for x in o)
    return 0
try:
    print(total(json.load(sys.stdin), sys.argv[1]))
except ValueError:
    print(-1)' "$3"
}

fio_verify() {
	local dev=$1 name=$2; shift 2
	# --allow_file_create=0: never a regular file /dev/ublkbN if the node is gone
	fio --name="$name" --filename="$dev" --allow_file_create=0 --ioengine=io_uring --direct=1 \
		--verify=crc32c --do_verify=1 --output="$work/$name.fio" "$@" ||
		{ cat "$work/$name.fio"; return 1; }
	grep -q 'err= 0' "$work/$name.fio" || { cat "$work/$name.fio"; return 1; }
}

# wait_gone PID: up to 20 s for a process to exit (zombies count as gone)
wait_gone() {
	local i
	for i in $(seq 200); do
		[ -e "/proc/$1" ] || return 0
		[ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" = Z ] && return 0
		sleep 0.1
	done
	return 1
}

# fio_then DEV WHAT ACTION [FIO_ARGS...]: start fio (random reads and writes,
# time-based) on DEV, run the shell command ACTION once fio's I/O is under
# way, and check that fio then ends within 60 s, with errors.
fio_then() {
	local dev=$1 what=$2 action=$3 fpid rc i
	shift 3
	fio --name="$what" --filename="$dev" --allow_file_create=0 --ioengine=io_uring \
		--direct=1 --rw=randrw --time_based --runtime=120 --size=32M \
		--output="$work/$what.fio" "$@" &
	fpid=$!
	# under way: reads completed, from /sys/block/X/stat
	for i in $(seq 300); do
		[ "$(awk '{ print $1 }' "/sys/block/${dev#/dev/}/stat" 2>/dev/null || echo 0)" -gt 200 ] &&
			break
		sleep 0.1
	done
	eval "$action"
	for i in $(seq 60); do
		kill -0 "$fpid" 2>/dev/null || break
		sleep 1
	done
	if kill -0 "$fpid" 2>/dev/null; then
		bad "$what: fio still runs 60 s later"
		kill -9 "$fpid"
	fi
	wait "$fpid"
	rc=$?
	[ $rc != 0 ] && ok "$what: fio ended with errors (exit $rc) within $i s" ||
		bad "$what: fio exit $rc"
}

# alive PID: running and not a zombie
alive() {
	[ -e "/proc/$1" ] && [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" != Z ]
}

# wait_exit PID SECONDS: until PID (a child of this shell) ends; its status in $rc
wait_exit() {
	local i
	for i in $(seq $(($2 * 10))); do
		alive "$1" || { wait "$1" 2>/dev/null; rc=$?; return 0; }
		sleep 0.1
	done
	rc=
	return 1
}

# wait_bdev ID: up to 10 s for /dev/ublkbID to appear (udev or devtmpfs)
wait_bdev() {
	local i
	for i in $(seq 100); do
		[ -b "/dev/ublkb$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# stacks PID...: every task of each process, with its state and kernel stack
stacks() {
	local p t
	for p in "$@"; do
		[ -d "/proc/$p" ] || continue
		for t in /proc/"$p"/task/*; do
			echo "--- pid $p task ${t##*/} ($(cat "$t/comm" 2>/dev/null))" \
				"state $(awk '{ print $3 }' "$t/stat" 2>/dev/null)" \
				"wchan $(cat "$t/wchan" 2>/dev/null)"
			cat "$t/stack" 2>/dev/null
		done
	done
}

finish() {
	[ "$fails" = 0 ] && { echo "all checks passed"; exit 0; }
	echo "$fails check(s) failed"
	exit 1
}
