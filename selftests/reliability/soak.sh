#!/usr/bin/env bash
# reliability/soak (vm, root): ublk loop and split devices with 2 queues,
# killed and deleted under I/O again and again, for a time budget
# ($IOURING_BPF_SOAK_SECONDS, default 60; `make soak MINUTES=N`). Each cycle
# takes the next of loop/split x daemon/kernel path x kill -9/del:
#  1. add the device over the cycle's backing files; ackcheck overwrites
#     random 4 KiB blocks from 4 threads and records what was acknowledged;
#  2. after 1.5 s, kill -9 the daemon or `ublk del` the device under that
#     I/O: the writer must stop with errors within 60 s, the daemon exit, the
#     device go away;
#  3. add a fresh device of the same target over the same files: every
#     acknowledged write reads back through it (ackcheck verify), then fio
#     writes and verifies (crc32c) on it, and it is deleted cleanly.
# The last line gives cycles, kills, deletes and verified blocks.
# usage: soak.sh TOOL ACKCHECK     Exit 0 pass, 1 fail, 77 skip.
set -u
T=$(realpath "$1")
A=$(realpath "$2")
. "$(dirname "$0")/../ublk/lib.sh"
ublk_require

budget=${IOURING_BPF_SOAK_SECONDS:-60}
[[ $budget =~ ^[0-9]+$ ]] || { echo "FAIL: IOURING_BPF_SOAK_SECONDS=$budget is not a number"; exit 1; }
blocks=2048	# 8 MiB of 4 KiB blocks
cycles=0 kills=0 deletes=0 verified=0
t_end=$((SECONDS + budget))

# add_dev TARGET PATH: prints "ID PID" of a new 2-queue device on the files
add_dev() {
	local files=() out
	if [ "$1" = split ]; then
		files=(--file "$work/a.img" --file "$work/b.img")
	else
		files=(--file "$work/f.img")
	fi
	out=$(UBLK_PATH=$2 ublk_add --target "$1" "${files[@]}" --queues 2 --depth 32) || return 1
	echo "$(jget '["id"]' <<<"$out") $(jget '["pid"]' <<<"$out")"
}

# gone ID PID: the device and its daemon are gone within 20 s
gone() {
	local i
	for i in $(seq 200); do
		[ -e "/sys/class/ublk-char/ublkc$1" ] || [ -e "/dev/ublkb$1" ] || break
		sleep 0.1
	done
	[ ! -e "/sys/class/ublk-char/ublkc$1" ] && wait_gone "$2"
}

while [ $SECONDS -lt $t_end ] || [ $cycles = 0 ]; do
	c=$cycles
	targets=(loop split); paths=(daemon kernel); actions=(kill del)
	target=${targets[$((c % 2))]}
	path=${paths[$((c / 2 % 2))]}
	action=${actions[$((c / 4 % 2))]}
	what="cycle $c ($target, $path path, $action)"
	# fresh backing files each cycle: 8 MiB, split 3 MiB + 4 KiB / the rest
	rm -f "$work"/*.img "$work/ack"
	truncate -s 8M "$work/f.img"
	truncate -s $(( (3 << 20) + 4096 )) "$work/a.img"
	truncate -s $(( (5 << 20) - 4096 )) "$work/b.img"

	read -r id dpid < <(add_dev "$target" "$path") || { bad "$what: add"; break; }
	[ -n "${id:-}" ] || { bad "$what: add"; break; }
	timeout 120 "$A" write "/dev/ublkb$id" "$work/ack" --blocks $blocks --threads 4 \
		--seconds 8 --max-errors 20 --seed "$c" > "$work/write.out" 2>&1 &
	wpid=$!
	sleep 1.5
	if [ "$action" = kill ]; then
		kill -9 "$dpid"
		kills=$((kills + 1))
	else
		timeout 60 "$T" ublk del "$id" > "$work/del.out" 2>&1 ||
			bad "$what: del under I/O: $(cat "$work/del.out")"
		deletes=$((deletes + 1))
	fi
	wait "$wpid"
	rc=$?
	[ $rc = 124 ] || [ $rc = 137 ] && bad "$what: the writer hung (killed after 120 s)"
	[ $rc = 0 ] || [ $rc = 124 ] || [ $rc = 137 ] ||
		bad "$what: ackcheck write exit $rc: $(cat "$work/write.out")"
	if [ "$action" = kill ]; then
		wait_gone "$dpid" || bad "$what: daemon $dpid still there after kill -9"
		timeout 60 "$T" ublk del "$id" > "$work/del.out" 2>&1 ||
			bad "$what: del after kill: $(cat "$work/del.out")"
	fi
	gone "$id" "$dpid" || bad "$what: device $id or daemon $dpid stayed"

	# everything acknowledged before the kill/del reads back through a new device
	read -r id2 dpid2 < <(add_dev "$target" "$path") || { bad "$what: re-add"; break; }
	[ -n "${id2:-}" ] || { bad "$what: re-add"; break; }
	if timeout 120 "$A" verify "/dev/ublkb$id2" "$work/ack" > "$work/verify.out" 2>&1; then
		verified=$((verified + $(grep -o 'checked=[0-9]*' "$work/verify.out" | cut -d= -f2)))
	else
		bad "$what: acknowledged writes lost: $(cat "$work/write.out"); $(cat "$work/verify.out")"
	fi
	timeout 180 bash -c "$(declare -f fio_verify); work=$(printf %q "$work");
		fio_verify /dev/ublkb$id2 soak$c --rw=randwrite --bs=4k --iodepth=16 --size=4M --numjobs=2 \
			--offset_increment=4M --cpus_allowed_policy=split" ||
		bad "$what: fio verify on the re-added device"
	timeout 60 "$T" ublk del "$id2" > /dev/null 2>&1 && gone "$id2" "$dpid2" ||
		bad "$what: del of the re-added device"
	cycles=$((cycles + 1))
	echo "$what: $(cat "$work/write.out"); $(cat "$work/verify.out" 2>/dev/null)"
	[ "$fails" = 0 ] || break
done
[ $cycles -gt 0 ] && { [ $kills -gt 0 ] || [ $cycles -lt 4 ]; } || bad "no full cycle ran"
echo "soak: seconds=$SECONDS cycles=$cycles kills=$kills deletes=$deletes verified_blocks=$verified"
[ -n "${IOURING_BPF_FUZZ_STATS:-}" ] &&
	echo -e "soak\t$cycles\tcycles\t$((kills + deletes))\t$fails\t$SECONDS\tkills=$kills,deletes=$deletes,verified=$verified" \
		>> "$IOURING_BPF_FUZZ_STATS"
finish
