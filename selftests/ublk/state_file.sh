#!/usr/bin/env bash
# ublk/state-file (vm, root): `ublk del B` never touches device A's daemon,
# whatever B's state file says.
#  - a --file path with a newline ("img\npid=A's daemon\ntarget=split") is
#    refused by add (it used to write its own pid= and target= lines into
#    the state file, later keys winning);
#  - B's state file edited to name A's daemon, or a process called
#    iouring-bpf that is not ours: del B stops B only (the daemon is the one
#    the kernel names, checked by executable and open /dev/ublkcB), and
#    list shows each device's own daemon;
#  - a state file with a key twice is not believed.
# usage: state_file.sh TOOL     Exit 0 pass, 1 fail, 77 skip.
set -u
T=$(realpath "$1")
. "$(dirname "$0")/lib.sh"
ublk_require

# live ID: the kernel says LIVE
live() { "$T" -j ublk list 2>/dev/null | json "any(d['id'] == $1 and d['state'] == 'LIVE' for d in j)"; }
# a_ok WHAT: device A and its daemon are untouched and still serve I/O
a_ok() {
	alive "$apid" && ok "$1: A's daemon $apid still runs" || bad "$1: A's daemon $apid is gone"
	live "$aid" && ok "$1: A (ublk $aid) still LIVE" || bad "$1: A (ublk $aid) is not LIVE"
	head -c 4096 /dev/urandom > "$work/pat"
	# (a block device: dd would make a regular file of a vanished node)
	[ -b "/dev/ublkb$aid" ] &&
		dd if="$work/pat" of="/dev/ublkb$aid" bs=4096 seek=3 count=1 oflag=direct \
			conv=notrunc status=none 2>/dev/null &&
		cmp -s "$work/pat" <(dd if="/dev/ublkb$aid" bs=4096 skip=3 count=1 iflag=direct \
			status=none 2>/dev/null) &&
		ok "$1: A serves I/O" || bad "$1: A does not serve I/O"
}
# del_b WHAT: del B succeeds and B is gone
del_b() {
	local out
	out=$(timeout 60 "$T" ublk del "$bid" 2>&1) && ok "$1: del $bid: $out" ||
		bad "$1: del $bid: $out"
	[ ! -e "/sys/class/ublk-char/ublkc$bid" ] && ok "$1: B (ublk $bid) gone" ||
		bad "$1: B (ublk $bid) still exists"
	wait_gone "$bpid" && ok "$1: B's daemon exited" || bad "$1: B's daemon $bpid still runs"
}

truncate -s 16M "$work/a.img" "$work/b.img"
out=$(ublk_add --target loop --file "$work/a.img") || { bad "add A"; finish; }
aid=$(jget '["id"]' <<<"$out")
apid=$(jget '["pid"]' <<<"$out")

# 1. a newline in --file
evil="$work/b.img"$'\n'"pid=$apid"$'\n'"target=split"
truncate -s 16M "$evil"
out=$("$T" -j ublk add --target loop --file "$evil" 2>&1)
rc=$?
if [ $rc = 0 ]; then
	bad "add with a newline in --file was accepted: $out"
	bid=$(jget '["id"]' <<<"$out")
	bpid=$(jget '["pid"]' <<<"$out")
	ublk_ids+=("$bid")
	sed 's/^/    state: /' "$IOURING_BPF_UBLK_DIR/$bid"
	del_b "newline in --file"
else
	grep -q 'control character' <<<"$out" && ok "newline in --file refused: $out" ||
		bad "newline in --file: exit $rc, but not for the control character: $out"
fi
a_ok "newline in --file"

# 2. B's state file names A's daemon
out=$(ublk_add --target loop --file "$work/b.img") || { bad "add B"; finish; }
bid=$(jget '["id"]' <<<"$out")
bpid=$(jget '["pid"]' <<<"$out")
state=$IOURING_BPF_UBLK_DIR/$bid
sed -i "s/^pid=.*/pid=$apid/" "$state"
"$T" -j ublk list | json "[d['pid'] for d in j if d['id'] in ($aid, $bid)] == [$apid, $bpid]" &&
	ok "list: each device shows the daemon the kernel names" ||
	bad "list: daemon pids $("$T" -j ublk list | jget '')"
del_b "state file naming A's daemon"
a_ok "state file naming A's daemon"

# 3. B's state file names a process called iouring-bpf that is not ours
out=$(ublk_add --target loop --file "$work/b.img") || { bad "add B"; finish; }
bid=$(jget '["id"]' <<<"$out")
bpid=$(jget '["pid"]' <<<"$out")
mkdir -p "$work/fake"
cp "$(command -v sleep)" "$work/fake/iouring-bpf"
"$work/fake/iouring-bpf" 600 &
fake=$!
sleep 0.2
[ "$(cat "/proc/$fake/comm")" = iouring-bpf ] || bad "the fake is called $(cat "/proc/$fake/comm")"
sed -i "s/^pid=.*/pid=$fake/" "$state"
del_b "state file naming a process called iouring-bpf"
alive "$fake" && ok "the process called iouring-bpf was left alone" ||
	bad "del signalled the process called iouring-bpf (pid $fake)"
kill "$fake" 2>/dev/null
a_ok "process called iouring-bpf"

# 4. a key twice: the file is not believed (list shows no target for it)
out=$(ublk_add --target loop --file "$work/b.img") || { bad "add B"; finish; }
bid=$(jget '["id"]' <<<"$out")
bpid=$(jget '["pid"]' <<<"$out")
printf 'target=split\npid=%s\n' "$apid" >> "$state"
"$T" -j ublk list | json "[d['target'] for d in j if d['id'] == $bid] == [None]" &&
	ok "a state file with a key twice is not believed" ||
	bad "a state file with a key twice: $("$T" -j ublk list)"
del_b "state file with a key twice"
a_ok "state file with a key twice"

"$T" ublk del "$aid" > /dev/null && ok "del A" || bad "del A"
finish
