#!/usr/bin/env bash
# harness/vm-hang (host): a test that wedges the guest -- a read stuck in D
# state, which timeout(1) cannot end -- ends the VM run within its bounds,
# with the test named and the closing line printed. First the runner in the
# guest: the reader outlives the kill at the test's limit, so the test is
# reported hung with the blocked task's stack in its log, the guest powers
# off, and the test after it is reported not run. Then, with the grace held
# far off, the host's cap ends the run and names the test that was running. Runs in a scratch build directory that borrows
# the build's kernel.
set -u
. "$(dirname "$0")/scratch_build.sh"

# a null_blk disk whose every I/O completes after 10 minutes: the first
# reader (the kernel's partition scan when the disk appears, in the writer
# of "power", or the dd after it) waits in D state, unkillable
cat > "$work/stuck.sh" <<'EOF'
nb=/sys/kernel/config/nullb/stuck$$
[ -d /sys/kernel/config/nullb ] || mount -t configfs none /sys/kernel/config
mkdir "$nb" && echo 64 > "$nb/size" && echo 2 > "$nb/irqmode" &&
	echo 600000000000 > "$nb/completion_nsec" && echo 1 > "$nb/power" || exit 1
for i in $(seq 50); do [ -b "/dev/stuck$$" ] && break; sleep 0.1; done
echo 600000 > "/sys/block/stuck$$/queue/io_timeout"
echo "reading /dev/stuck$$ (completes in 10 minutes)"
dd if="/dev/stuck$$" of=/dev/null bs=4k count=1 iflag=direct
EOF
printf '%s\n' \
	$'t/before\tvm\t30\ttrue' \
	$'t/stuck\tvm\t5\tbash '"$work/stuck.sh" \
	$'t/after\tvm\t30\ttrue' > "$work/m.tsv"

# run NAME ARGS...: the runner on the manifest; its output in $work/NAME
run() {
	local name=$1 t0=$SECONDS
	shift
	"$IOURING_BPF_SRC/selftests/run" --build-dir "$work/build" --variant "$IOURING_BPF_VARIANT" \
		--manifest "$work/m.tsv" "$@" > "$work/$name" 2>&1 < /dev/null
	rc=$?
	took=$((SECONDS - t0))
	echo "--- $name: selftests/run exit $rc after $took s:"
	cat "$work/$name"
}

# 1. grace 10 s: the test is declared hung about 5 + 5 + 10 s after it
# started and the guest powers off; the cap (300 s) is far away
IOURING_BPF_HANG_GRACE=10 run watchdog --vm-cap 300
out=$work/watchdog
[ $rc = 1 ] || fail "watchdog: the runner exited $rc, want 1"
[ $took -lt 240 ] || fail "watchdog: the run took $took s"
grep -qE '^ok 1 - t/before # \[' "$out" || fail "watchdog: no line for t/before"
grep -qE "^not ok 2 - t/stuck # hung: task\(s\) [0-9 ]+ still there 10s after it was killed at its limit; guest powered off" "$out" ||
	fail "watchdog: t/stuck is not reported hung"
grep -qE "^#   task [0-9]+/[0-9]+ \(.*\) in D state:" "$out" ||
	fail "watchdog: no blocked task named with its stack"
grep -qE '^not ok 3 - t/after # not run: the VM ended first' "$out" ||
	fail "watchdog: t/after is not reported as not run"
grep -qE '^not ok 4 - vm/boot-and-dmesg' "$out" || fail "watchdog: no vm/boot-and-dmesg line"
[ "$(tail -n 1 "$out")" = "1 passed, 3 failed, 0 skipped" ] || fail "watchdog: closing line: $(tail -n 1 "$out")"
log=$work/build/vm/$IOURING_BPF_VARIANT/logs/t/stuck.log
grep -qE 'blk|bio|io_schedule|folio|bdev' "$log" || fail "watchdog: no block-layer frame in the stack in $log"
echo "ok: the watchdog reported t/stuck hung after $took s, with the blocked task's stack"

# 2. the host's cap (90 s), the watchdog held off (grace 3600 s)
IOURING_BPF_HANG_GRACE=3600 run cap --vm-cap 90
out=$work/cap
[ $rc = 1 ] || fail "cap: the runner exited $rc, want 1"
[ $took -lt 150 ] || fail "cap: the run took $took s with a cap of 90 s"
grep -qE '^not ok 2 - t/stuck # running when the VM run reached its limit of 90s' "$out" ||
	fail "cap: t/stuck is not named as the running test"
grep -qE '^not ok 3 - t/after # not run: the VM ended first' "$out" || fail "cap: t/after"
[ "$(tail -n 1 "$out")" = "1 passed, 3 failed, 0 skipped" ] || fail "cap: closing line: $(tail -n 1 "$out")"
echo "ok: the cap ended the run after $took s and named t/stuck"
exit 0
