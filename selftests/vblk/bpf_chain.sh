#!/usr/bin/env bash
# vblk/bpf-chain (VM): examples/vblk_chain on the scratch disk with serial
# vblk0: a linked list of blocks at random sectors, walked through
# /dev/vdXc0 by a BPF policy in one io_uring_enter() (and from user space,
# one enter per block); the example checks the order of the sectors, the
# data and the enter counts, this script its output, JSON and --help, and
# that a disk without a passthrough device and a bad option are refused.
# usage: bpf_chain.sh VBLK_CHAIN
set -u
EX=$1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# the scratch disks are found by serial, not by name (the root disk may be a vd too)
disk_by_serial() {
	local s
	for s in /sys/block/vd*/serial; do
		[ "$(cat "$s" 2>/dev/null)" = "$1" ] && { echo "/dev/$(basename "$(dirname "$s")")"; return 0; }
	done
	return 1
}
# docs/virtio-blk.md's "From BPF" policy is this example's, as it is in the tree
src=${IOURING_BPF_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
readme_policy=$(awk '
	index($0, "<!-- vblk-bpf-chain: policy ") == 1 { found = 1; next }
	found && !open && /^```/ { open = 1; next }
	open && /^```/ { exit }
	open { print }' "$src/docs/virtio-blk.md")
[ -n "$readme_policy" ] && [ "$readme_policy" = "$(cat "$src/examples/vblk_chain/vblk_chain.bpf.c")" ] &&
	ok "docs/virtio-blk.md's policy is examples/vblk_chain/vblk_chain.bpf.c" ||
	fail "docs/virtio-blk.md's From BPF policy differs from examples/vblk_chain/vblk_chain.bpf.c: $(diff <(echo "$readme_policy") "$src/examples/vblk_chain/vblk_chain.bpf.c" | head -5)"

disk=$(disk_by_serial vblk0) || { echo "FAIL: no virtio-blk disk with serial vblk0"; exit 1; }
name=${disk#/dev/}
[ -c "/dev/${name}c0" ] || { echo "FAIL: $disk has no /dev/${name}c0"; exit 1; }
echo "scratch disk $disk, passthrough /dev/${name}c0"

out=$("$EX" --help 2>&1); st=$?
[ $st = 0 ] && grep -q '^usage: .*DISK' <<<"$out" && grep -q 'one io_uring_enter()' <<<"$out" &&
	ok "--help exits 0 and explains" || fail "--help: exit $st: $out"
out=$("$EX" -x "$disk" 2>&1); st=$?
[ $st = 2 ] && grep -q '^usage:' <<<"$out" && ok "a bad option: usage, exit 2" ||
	fail "bad option: exit $st: $out"
out=$("$EX" -n 0 "$disk" 2>&1); st=$?
[ $st = 2 ] && ok "-n 0: exit 2" || fail "-n 0: exit $st: $out"

json=$(mktemp)
trap 'rm -f "$json"' EXIT
for args in "-n 32 -r 3 -s 7" "-n 1 -r 1 -s 3" "-n 64 -b 8192 -r 1 -s 11"; do
	# shellcheck disable=SC2086
	out=$("$EX" $args -j "$json" "$disk" 2>&1); st=$?
	echo "$out" | sed 's/^/    /'
	if [ $st != 0 ]; then
		fail "vblk_chain $args $disk: exit $st"
		continue
	fi
	n=$(sed 's/.*-n \([0-9]*\).*/\1/' <<<"$args")
	grep -qE '^  bpf +[0-9.]+ +1 +in list order, match$' <<<"$out" &&
	grep -qE "^  user +[0-9.]+ +$n +in list order, match$" <<<"$out" &&
		ok "$args: bpf walked $n blocks in 1 enter, user in $n" ||
		fail "$args: table: $out"
	python3 - "$json" "$n" "$disk" "/dev/${name}c0" <<'PY' && ok "$args: JSON" || fail "$args: JSON: $(cat "$json")"
import json, sys
j = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
assert j["disk"] == sys.argv[3] and j["char_device"] == sys.argv[4], j
assert j["blocks"] == n and j["bpf_enters"] == 1 and j["user_enters"] == n, j
assert j["visited_in_order"] and j["data_ok"], j
assert len(j["sectors"]) == n and len(set(j["sectors"])) == n, j
assert j["bpf_us_per_block"] > 0 and j["user_us_per_block"] > 0, j
PY
done

# the list really is on the disk: block 0 of the last run, read back through
# the block device, starts with the sector of block 1
python3 - "$json" "$disk" <<'PY' && ok "block 0 on $disk links to block 1" || fail "block 0 on disk"
import json, os, struct, sys
j = json.load(open(sys.argv[1]))
fd = os.open(sys.argv[2], os.O_RDONLY | os.O_DIRECT)
import mmap
buf = mmap.mmap(-1, 8192)
os.preadv(fd, [buf], j["sectors"][0] * 512)
nxt, idx, own = struct.unpack_from("<QQQ", buf)
assert (nxt, idx, own) == (j["sectors"][1], 0, j["sectors"][0]), (nxt, idx, own)
PY

# a block device without a passthrough device (a loop device) is refused
img=$(mktemp)
truncate -s 16M "$img"
loopdev=$(losetup -f --show "$img" 2>/dev/null)
if [ -n "$loopdev" ]; then
	out=$("$EX" -n 4 "$loopdev" 2>&1); st=$?
	[ $st = 1 ] && grep -q 'no passthrough character device' <<<"$out" &&
		ok "a loop device: refused, naming why" || fail "loop device: exit $st: $out"
	losetup -d "$loopdev"
else
	echo "(no loop device here: that check skipped)"
fi
rm -f "$img"

[ "$fails" = 0 ] && { echo "all checks passed"; exit 0; }
echo "$fails check(s) failed"
exit 1
