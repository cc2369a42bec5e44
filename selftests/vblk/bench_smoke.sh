#!/usr/bin/env bash
# vblk/bench-smoke (VM): bench/vblk_bench on the scratch disk with serial
# vblk0 (the one with a poll queue), briefly, in every mode: block device and
# passthrough, plain, registered buffers, IOPOLL, registered file, page
# cache (block device), QD1 and QD8. Each run must exit 0, print its result
# line, write JSON that parses and says what was run, and have done I/O. Not a timing check: no figure is
# compared with anything but zero (and, at QD1, the reads with the calls:
# at most one read per io_uring_enter() with one in flight; an IOPOLL call may
# return before its read completes). Also the data (-V on a MiB written
# first), --help, a bad option, a missing device and -n.
# usage: bench_smoke.sh VBLK_BENCH
set -u
EX=$1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

disk=
for s in /sys/block/vd*/serial; do
	[ "$(cat "$s" 2>/dev/null)" = vblk0 ] && disk=/dev/$(basename "$(dirname "$s")")
done
[ -n "$disk" ] || { echo "FAIL: no virtio-blk disk with serial vblk0"; exit 1; }
name=${disk#/dev/}
chr=/dev/${name}c0
[ -c "$chr" ] || { echo "FAIL: $disk has no $chr"; exit 1; }
[ "$(cat "/sys/block/$name/queue/io_poll")" = 1 ] ||
	{ echo "FAIL: $disk has no poll queue (queue/io_poll is not 1)"; exit 1; }
echo "scratch disk $disk, passthrough $chr, $(ls "/sys/block/$name/mq" | wc -l) hardware queues"

out=$("$EX" --help 2>&1); st=$?
[ $st = 0 ] && grep -q '^usage: .*DEVICE' <<<"$out" && grep -q 'IOPOLL' <<<"$out" &&
	ok "--help exits 0 and explains" || fail "--help: exit $st: $out"
out=$("$EX" -h 2>&1); st=$?
[ $st = 0 ] && grep -q '^usage:' <<<"$out" && ok "-h exits 0" || fail "-h: exit $st: $out"
out=$("$EX" -x "$chr" 2>&1); st=$?
[ $st = 2 ] && grep -q '^usage:' <<<"$out" && ok "a bad option: usage, exit 2" ||
	fail "bad option: exit $st: $out"
out=$("$EX" -d 0 "$chr" 2>&1); st=$?
[ $st = 2 ] && ok "-d 0: exit 2" || fail "-d 0: exit $st: $out"
out=$("$EX" -t 1 /dev/vblk-bench-missing 2>&1); st=$?
[ $st = 1 ] && grep -q '/dev/vblk-bench-missing: No such file or directory' <<<"$out" &&
	ok "a missing device: exit 1, names the file and the errno" ||
	fail "missing device: exit $st: $out"
out=$("$EX" -t 1 /dev/null 2>&1); st=$?
[ $st = 1 ] && grep -q '/dev/null' <<<"$out" && ok "not a virtio-blk device: exit 1" ||
	fail "/dev/null: exit $st: $out"

json=$(mktemp)
trap 'rm -f "$json"' EXIT
line_re='^vblk_bench: [^ ]+ (block|passthrough)( buffered)?( iopoll)?( fixed)?( regfile)?, depth [0-9]+, batch [0-9]+/[0-9]+, 4096 B: [0-9]+ IOPS, [0-9.]+ MB/s, [0-9.]+ IOs/call \([0-9]+ IOs, [0-9]+ calls, [0-9.]+ s\)$'
for dev in "$disk" "$chr"; do
	for opts in "" "-p" "-B" "-p -B" "-F" "-p -B -F"; do
		for depth in "-d 1 -s 1 -c 1" "-d 8 -s 4 -c 4"; do
			args="$depth $opts -t 0.5 -r 64"
			# shellcheck disable=SC2086
			out=$("$EX" $args -j "$json" "$dev" 2>&1); st=$?
			echo "    $out"
			if [ $st != 0 ]; then
				fail "$dev $args: exit $st"
				continue
			fi
			grep -qE "$line_re" <<<"$out" || { fail "$dev $args: result line: $out"; continue; }
			python3 - "$json" "$dev" "$opts" "$depth" <<'PY' && ok "$dev $args: JSON, I/O done" ||
import json, sys
j = json.load(open(sys.argv[1]))
dev, opts, depth = sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
assert j["device"] == dev, j
assert j["mode"] == ("passthrough" if dev.endswith("c0") else "block"), j
assert j["iopoll"] == ("-p" in opts) and j["fixed"] == ("-B" in opts), j
assert j["regfile"] == ("-F" in opts) and j["poll_queue"] is True, j
assert j["page_cache"] is False and j["verified_byte"] is None, j
assert j["depth"] == int(depth[1]) and j["submit_batch"] == int(depth[3]), j
assert j["complete_batch"] == int(depth[5]) and j["bs"] == 4096, j
assert j["range_bytes"] == 64 << 20, j
assert j["ios"] > 0 and j["enters"] > 0 and j["iops"] > 0 and j["mb_s"] > 0, j
if j["depth"] == 1:	# one read in flight: at most one completes per call
    assert j["ios"] <= j["enters"] and j["ios_per_enter"] <= 1, j
PY
				fail "$dev $args: JSON: $(cat "$json")"
		done
	done
done

# through the page cache (-P): the block device only, never with IOPOLL
for depth in "-d 1 -s 1 -c 1" "-d 8 -s 4 -c 4"; do
	# shellcheck disable=SC2086
	out=$("$EX" $depth -P -F -t 0.5 -r 64 -j "$json" "$disk" 2>&1); st=$?
	echo "    $out"
	[ $st = 0 ] && grep -qE "$line_re" <<<"$out" &&
		python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); assert j["page_cache"] is True and j["mode"] == "block" and j["ios"] > 0, j' "$json" &&
		ok "$disk $depth -P: JSON, I/O done" || fail "$disk $depth -P: exit $st: $out"
done
out=$("$EX" -P -t 0.5 "$chr" 2>&1); st=$?
[ $st = 1 ] && grep -q "$chr: -P is for a block device" <<<"$out" && ok "-P on $chr: refused" ||
	fail "-P on $chr: exit $st: $out"
out=$("$EX" -P -p -t 0.5 "$disk" 2>&1); st=$?
[ $st = 2 ] && grep -q 'IOPOLL needs O_DIRECT' <<<"$out" && ok "-P -p: refused" ||
	fail "-P -p: exit $st: $out"

# the data: the first MiB filled with 0x5a through the block device, read back
# in every mode with -V (each byte of each read checked)
if head -c 1048576 /dev/zero | tr '\0' '\132' | dd of="$disk" bs=1M oflag=direct status=none; then
	for dev in "$disk" "$chr"; do
		opts_list=("" "-p" "-B" "-p -B -F")
		[ "$dev" = "$disk" ] && opts_list+=("-P" "-P -B")
		for opts in "${opts_list[@]}"; do
			# shellcheck disable=SC2086
			out=$("$EX" -d 8 -s 4 -c 4 $opts -n 500 -t 0 -r 1 -V 0x5a -j "$json" "$dev" 2>&1); st=$?
			[ $st = 0 ] && python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); assert j["ios"] == 500 and j["verified_byte"] == 0x5a, j' "$json" &&
				ok "$dev $opts: 500 reads returned the data written" ||
				fail "$dev $opts -V 0x5a: exit $st: $out"
		done
		# and a mismatch is reported, not hidden
		out=$("$EX" -d 8 -n 50 -t 0 -r 1 -V 0x5b "$dev" 2>&1); st=$?
		[ $st = 1 ] && grep -q "read on $dev: byte 0 is 0x5a, not 0x5b" <<<"$out" &&
			ok "$dev -V 0x5b: the mismatch fails the run" ||
			fail "$dev -V 0x5b: exit $st: $out"
	done
else
	fail "writing the first MiB of $disk"
fi

# a count instead of a time: exactly that many reads
for dev in "$disk" "$chr"; do
	out=$("$EX" -d 8 -s 4 -c 4 -p -B -n 100 -t 0 -j - "$dev" 2>&1); st=$?
	[ $st = 0 ] && python3 -c 'import json, sys; j = json.loads(sys.stdin.read().splitlines()[-1]); assert j["ios"] == 100, j' <<<"$out" &&
		ok "$dev -n 100: 100 reads, JSON on stdout" || fail "$dev -n 100: exit $st: $out"
done

[ $fails = 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"
