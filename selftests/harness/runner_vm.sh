#!/usr/bin/env bash
# harness/runner-vm (host): what `make check` shows of the VM tests. The
# runner boots the kernel under test for a passing, a slow and a failing VM
# test; its stdout must carry every TAP line (each as soon as the guest
# printed it), the failing test's log tail (a marker computed in the guest),
# the vm/boot-and-dmesg line and the closing count -- also on a machine
# without udevd, whose guest has no /dev/virtio-ports/ links. Runs in a
# scratch build directory that borrows the build's kernel, so the build's
# own VM output is left alone.
set -u
. "$(dirname "$0")/scratch_build.sh"
printf '%s\n' \
	$'t/pass\tvm\t30\techo "pass-marker-$((6 * 7))"' \
	$'t/slow\tvm\t90\tsleep 45' \
	$'t/fail\tvm\t30\techo "tail-marker-$((6 * 7))-from-the-guest"; exit 1' > "$work/m.tsv"

"$IOURING_BPF_SRC/selftests/run" --build-dir "$work/build" --variant "$IOURING_BPF_VARIANT" \
	--manifest "$work/m.tsv" > "$work/out" 2> "$work/err" < /dev/null &
run_pid=$!
# while t/slow runs, t/pass's line has already arrived: lines are passed on
# as they come, not when the VM is done (our stdout is a file here)
streamed=
while kill -0 "$run_pid" 2>/dev/null; do
	if grep -q '^ok 1 - t/pass # \[' "$work/out" && ! grep -q ' - t/slow' "$work/out"; then
		streamed=1
		break
	fi
	sleep 0.5
done
wait "$run_pid"
rc=$?
echo "--- selftests/run exit $rc; stdout:"
cat "$work/out"
echo "--- stderr:"
cat "$work/err"
[ $rc = 1 ] || fail "the runner exited $rc with a failing test, want 1"
# each line ends in "[duration, N/4 done, m:ss elapsed]"
tap() { echo " \[[0-9]+\.[0-9] s, $1/4 done, [0-9]+:[0-5][0-9] elapsed\]\$"; }
grep -qE "^ok 1 - t/pass #$(tap 1)" "$work/out" || fail "no TAP line for the passing VM test"
[ -n "$streamed" ] || fail "t/pass's TAP line did not arrive while the next test ran (held back)"
grep -qE "^ok 2 - t/slow # \[(4[5-9]|[5-8][0-9])\.[0-9] s, 2/4 done" "$work/out" ||
	fail "no TAP line for the slow VM test, with its 45 s"
grep -qE "^not ok 3 - t/fail # exit status 1$(tap 3)" "$work/out" || fail "no TAP line for the failing VM test"
grep -qx '#   tail-marker-42-from-the-guest' "$work/out" || fail "the failing test's log tail is not shown"
grep -q '^#   full log: ' "$work/out" || fail "the failing test's log path is not shown"
grep -qx 'ok 4 - vm/boot-and-dmesg' "$work/out" || fail "no vm/boot-and-dmesg line"
[ "$(tail -n 1 "$work/out")" = "3 passed, 1 failed, 0 skipped" ] || fail "closing line: $(tail -n 1 "$work/out")"
! grep -q 'not run: the VM ended first' "$work/out" || fail "the runner did not see the guest's results"
echo "ok: TAP lines (as they come), the failing test's log tail and the count reach the runner's stdout"
exit 0
