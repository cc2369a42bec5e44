#!/usr/bin/env bash
# harness/vm-hung-task (host): the debug kernel's hung-task detector is on,
# and a task it reports fails the test that left it blocked, not the one
# after it. The test freezes an ext4 file system and starts a writer, which
# waits in uninterruptible sleep until the thaw; with the detector's limit
# lowered to 3 s, the kernel reports the writer well before the thaw 12 s
# later. The test itself exits 0: only the kernel log can fail it. Runs in
# a scratch build directory that borrows the build's kernel.
set -u
. "$(dirname "$0")/scratch_build.sh"

cat > "$work/blocked.sh" <<'EOF'
set -e
limit=/proc/sys/kernel/hung_task_timeout_secs
[ -f $limit ] || { echo "no hung-task detector in this kernel"; exit 1; }
nb=/sys/kernel/config/nullb/frozen$$
[ -d /sys/kernel/config/nullb ] || mount -t configfs none /sys/kernel/config
mkdir "$nb"
echo 64 > "$nb/size"; echo 1 > "$nb/memory_backed"; echo 1 > "$nb/power"
for i in $(seq 50); do [ -b "/dev/frozen$$" ] && break; sleep 0.1; done
mnt=$(mktemp -d)
mkfs.ext4 -q "/dev/frozen$$"
mount "/dev/frozen$$" "$mnt"
old=$(cat $limit)
echo 3 > $limit
fsfreeze --freeze "$mnt"
touch "$mnt/written-while-frozen" &
writer=$!
sleep 12
echo "writer $writer: $(cat /proc/$writer/wchan 2>/dev/null) state $(awk '{print $3}' /proc/$writer/stat)"
fsfreeze --unfreeze "$mnt"
wait $writer
echo "$old" > $limit
umount "$mnt"
echo 0 > "$nb/power"; rmdir "$nb"
EOF
printf '%s\n' \
	$'t/blocked\tvm\t120\tbash '"$work/blocked.sh" \
	$'t/after\tvm\t30\ttrue' > "$work/m.tsv"

"$IOURING_BPF_SRC/selftests/run" --build-dir "$work/build" --variant "$IOURING_BPF_VARIANT" \
	--manifest "$work/m.tsv" > "$work/out" 2>&1 < /dev/null
rc=$?
echo "--- selftests/run exit $rc:"
cat "$work/out"
log=$work/build/vm/$IOURING_BPF_VARIANT/logs/t/blocked.log
echo "--- t/blocked's log:"
cat "$log"
[ $rc = 1 ] || fail "the runner exited $rc, want 1"
grep -qE '^not ok 1 - t/blocked # kernel log report \[' "$work/out" ||
	fail "t/blocked is not failed for the kernel's report"
grep -qE 'INFO: task touch:[0-9]+ blocked for more than [0-9]+ seconds' "$log" ||
	fail "the hung-task report is not in t/blocked's log"
grep -qE '^ok 2 - t/after # \[' "$work/out" || fail "t/after is blamed too"
grep -qE '^not ok 3 - vm/boot-and-dmesg' "$work/out" || fail "scripts/vm did not see the report"
[ "$(tail -n 1 "$work/out")" = "1 passed, 2 failed, 0 skipped" ] ||
	fail "closing line: $(tail -n 1 "$work/out")"
echo "ok: the blocked writer was reported by the kernel and failed t/blocked only"
exit 0
