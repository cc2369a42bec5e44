#!/usr/bin/env bash
# ublk/add-daemon (vm, root): what `ublk add` leaves behind and how long it
# waits.
#  - a lock the caller holds (flock on fd 9) is not kept by the daemon: once
#    the caller's shell is gone the lock is free, and the daemon has no
#    descriptor of the lock file; its stdin and stdout are /dev/null, its
#    stderr its log;
#  - the daemon's working directory is "/": add run from inside a mount
#    does not keep that mount busy;
#  - a daemon that fails and then does not exit (its exit_group() held for
#    2 minutes by strace) does not keep add waiting: add reports the
#    daemon's error within 30 s.
# usage: add_daemon.sh TOOL     Exit 0 pass, 1 fail, 77 skip.
set -u
T=$(realpath "$1")
. "$(dirname "$0")/lib.sh"
ublk_require
need_program strace

truncate -s 16M "$work/a.img" "$work/b.img"

# 1. the caller's lock
: > "$work/lock"
out=$( (flock 9 && "$T" -j ublk add --target loop --file "$work/a.img") 9> "$work/lock") ||
	{ bad "add under flock: $out"; finish; }
aid=$(jget '["id"]' <<<"$out")
ublk_ids+=("$aid")
apid=$(jget '["pid"]' <<<"$out")
flock -n -E 99 "$work/lock" true
rc=$?
[ $rc = 0 ] && ok "the caller's flock is free once the caller is gone" ||
	bad "the caller's flock is still held (flock -n exit $rc): the daemon kept the lock's fd"
held=$(for f in /proc/"$apid"/fd/*; do
	[ "$(readlink "$f")" = "$work/lock" ] && echo "${f##*/}"
done)
[ -z "$held" ] && ok "the daemon holds no descriptor of the caller's lock file" ||
	bad "the daemon holds the caller's lock file as fd $held"
for n in 0 1; do
	[ "$(readlink "/proc/$apid/fd/$n")" = /dev/null ] || bad "daemon fd $n is $(readlink "/proc/$apid/fd/$n")"
done
[ "$(readlink "/proc/$apid/fd/2")" = "$IOURING_BPF_UBLK_DIR/$aid.log" ] ||
	bad "daemon fd 2 is $(readlink "/proc/$apid/fd/2"), not its log"

# 2. its working directory
mkdir -p "$work/mnt"
mount -t tmpfs tmpfs "$work/mnt" || { bad "mount tmpfs"; finish; }
out=$(cd "$work/mnt" && "$T" -j ublk add --target loop --file "$work/b.img") ||
	{ bad "add from a mount: $out"; umount "$work/mnt"; finish; }
bid=$(jget '["id"]' <<<"$out")
ublk_ids+=("$bid")
bpid=$(jget '["pid"]' <<<"$out")
cwd=$(readlink "/proc/$bpid/cwd")
[ "$cwd" = / ] && ok "the daemon's working directory is /" || bad "the daemon's working directory is $cwd"
umount "$work/mnt" 2>"$work/umount.err" && ok "the mount add ran in is not kept busy" ||
	{ bad "umount: $(cat "$work/umount.err")"; umount -l "$work/mnt"; }
"$T" ublk del "$bid" > /dev/null || bad "del $bid"

# 3. a failing daemon that does not exit: ublk A's id is taken, so the
# daemon reports "exists already" and exits -- slowly
ids() { "$T" -j ublk list | python3 -c "import json,sys; print([d['id'] for d in json.load(sys.stdin)])"; }
before=$(ids)
start=$SECONDS
strace -f -qq -o /dev/null -e trace=exit_group -e inject=exit_group:delay_enter=120s \
	"$T" ublk add --target loop --file "$work/b.img" --id "$aid" > "$work/add.out" 2> "$work/add.err" &
spid=$!
while [ $((SECONDS - start)) -lt 30 ]; do
	grep -q 'exists already' "$work/add.err" && break
	sleep 0.2
done
took=$((SECONDS - start))
if grep -q 'exists already' "$work/add.err"; then
	ok "add reported the daemon's error after ${took} s: $(head -c 300 "$work/add.err")"
else
	bad "add still waits for a daemon that failed and does not exit (${took} s): $(cat "$work/add.err")"
fi
kill -9 "$spid" 2>/dev/null	# the held exit_group()s go on (strace does not end on SIGTERM while it holds one)
wait "$spid" 2>/dev/null
for i in $(seq 100); do	# the daemon and add, no longer held, exit
	pgrep -f "ublk add --target loop --file $work/b.img --id $aid" > /dev/null || break
	sleep 0.1
done
after=$(ids)
[ "$after" = "$before" ] && ok "nothing left behind: devices $after" ||
	bad "devices $after after the failed add, $before before"
"$T" ublk del "$aid" > /dev/null && ok "del $aid" || bad "del $aid"
finish
