#!/usr/bin/env bash
# harness/vm-reaps-orphans (vm): the guest reaps what a test leaves behind,
# as a booted system's init does. A daemon-style process (double fork: its
# parent exits at once) that exits must vanish from /proc, not stay a
# zombie: tools that wait for a daemon's pid to go (ublk del, servers'
# own scripts) depend on it.
set -u
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
( sleep 1 & echo $! > "$work/pid" )
pid=$(cat "$work/pid")
ppid=$(awk '{ sub(/^.*\) /, ""); print $2 }' "/proc/$pid/stat" 2>/dev/null)
echo "orphan $pid, reparented to $ppid ($(cat "/proc/$ppid/comm" 2>/dev/null))"
for _ in $(seq 100); do
	[ -e "/proc/$pid" ] || { echo "ok: the orphan was reaped after it exited"; exit 0; }
	sleep 0.1
done
echo "FAIL: pid $pid is still in /proc 10 s later, state $(awk '{ sub(/^.*\) /, ""); print $1 }' "/proc/$pid/stat")"
exit 1
