#!/usr/bin/env bash
# harness/bpf-baseline-guest (host): scripts/bpf-baseline-guest, which runs
# the kernel's BPF selftests in the VM for make bpf-baseline, keeps every
# test's result when a test hangs, when a batch of tests dies, and when the
# guest itself dies in a batch or in one test: the next boot goes on where
# it stopped and the test that took the guest down is recorded as failed.
# Stand-in runners print test_progs' result lines; the guest's death is a
# SIGKILL of its process group.
set -u
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
guest=$IOURING_BPF_SRC/scripts/bpf-baseline-guest

mkdir -p "$work/out"
# tests 1..7; "hang" sleeps, "crash" kills its invocation unless run alone
cat > "$work/out/test_progs" <<'EOS'
#!/usr/bin/env bash
names=(alpha beta hang crash gamma delta eps)
if [ "$1" = -l ]; then printf '%s\n' "${names[@]}"; exit 0; fi
IFS=, read -ra run <<< "$2"
for n in "${run[@]}"; do
	case $n in
	hang) sleep 60 ;;
	crash) [ ${#run[@]} = 1 ] || kill -SEGV $$ ;;
	esac
	for i in "${!names[@]}"; do
		[ "${names[i]}" = "$n" ] && echo "#$((i + 1))      $n:OK"
	done
done
EOS
printf '#!/bin/sh\nsleep "${MAPS_SLEEP:-0}"\necho "test_maps: OK, 0 SKIPPED"\n' > "$work/out/test_maps"
chmod +x "$work/out/test_progs" "$work/out/test_maps"

# run STATE [FILE CONTENT]: the guest (test bound 2 s, runner bound
# RUNNER_LIMIT or 5 s, batches of 3); with FILE, killed with its process
# group as soon as STATE/FILE holds CONTENT (within 60 s)
run() {
	mkdir -p "$1"
	setsid "$guest" "$work/out" "$1" '' 2 "${RUNNER_LIMIT:-5}" 3 test_progs test_maps > "$1.out" 2>&1 &
	local pid=$! i
	if [ -n "${2:-}" ]; then
		for ((i = 0; i < 600; i++)); do
			[ "$(cat "$1/$2" 2>/dev/null)" = "$3" ] && break
			sleep 0.1
		done
		kill -KILL -- -"$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
}

# results STATE: "name:RESULT" of each test in its log, in order
results() {
	sed -n -E 's/^#[0-9]+ +(.*)$/\1/p' "$1/test_progs.log" | tr '\n' ' '
}

all_ok_but_hang='alpha:OK beta:OK hang:FAIL crash:OK gamma:OK delta:OK eps:OK '

# 1. no death: the batch holding "hang" times out (4 s) and is run one test
# at a time, "hang" fails on its bound; the batch "crash" kills is run again
# one at a time; test_maps runs
run "$work/plain"
[ "$(results "$work/plain")" = "$all_ok_but_hang" ] ||
	fail "results of a run with a hang and a crash: '$(results "$work/plain")'"
grep -q 'hang timed out after 2 s' "$work/plain/test_progs.log" || fail "no timeout note"
grep -q 'tests 4-6 in one run: exit 139' "$work/plain/test_progs.log" || fail "no note of the crashed batch"
[ -f "$work/plain/test_progs.done" ] && [ -f "$work/plain/test_maps.done" ] || fail "runners not marked done"
grep -q '^test_maps: OK' "$work/plain/test_maps.log" || fail "test_maps did not run"
echo "ok: a hung test fails on its bound, a crashed batch is run again test by test"

# 2. the guest dies while "hang" runs on its own (after the 4 s batch and
# alpha, beta): --recover runs it once more; when the guest dies in it
# again, it is recorded failed and the next boot goes on
run "$work/single" test_progs.current 3
[ "$(cat "$work/single/test_progs.current" 2>/dev/null)" = 3 ] ||
	fail "the guest was not killed in test 3 (current: $(cat "$work/single/test_progs.current" 2>/dev/null))"
"$guest" --recover "$work/single" test_progs test_maps || fail "--recover failed"
[ ! -s "$work/single/killers" ] && [ "$(cat "$work/single/test_progs.next")" = 3 ] ||
	fail "a test the guest died in once is not run again (next: $(cat "$work/single/test_progs.next"))"
rm "$work/single/test_progs.current"
run "$work/single" test_progs.current 3
"$guest" --recover "$work/single" test_progs test_maps || fail "--recover failed"
grep -qx 'test_progs:hang' "$work/single/killers" || fail "the killer is not recorded after a second death"
run "$work/single"
[ "$(results "$work/single")" = "$all_ok_but_hang" ] ||
	fail "results after the guest died in one test: '$(results "$work/single")'"
grep -q 'the guest died running hang' "$work/single/test_progs.log" || fail "no note of the death"
echo "ok: the guest dying in one test: it is recorded failed, the rest run"

# 3. the guest dies in the first batch: the next boot runs it test by test
run "$work/batch" test_progs.batch "1 3"
"$guest" --recover "$work/batch" test_progs test_maps || fail "--recover failed"
[ "$(cat "$work/batch/test_progs.single")" = 3 ] || fail "the dead batch is not run one at a time"
[ ! -s "$work/batch/killers" ] || fail "a death in a batch blamed a test: $(cat "$work/batch/killers")"
run "$work/batch"
[ "$(results "$work/batch")" = "$all_ok_but_hang" ] ||
	fail "results after the guest died in a batch: '$(results "$work/batch")'"
echo "ok: the guest dying in a batch: the batch is run again test by test"

# 4. the guest dies in test_maps twice: run once more, then recorded failed
MAPS_SLEEP=30 RUNNER_LIMIT=40 run "$work/maps" test_maps.started 1
[ -f "$work/maps/test_maps.started" ] && [ ! -f "$work/maps/test_maps.done" ] ||
	fail "the guest was not killed in test_maps"
"$guest" --recover "$work/maps" test_progs test_maps || fail "--recover failed"
[ ! -f "$work/maps/test_maps.done" ] && [ ! -s "$work/maps/killers" ] ||
	fail "test_maps is not run again after the guest died in it once"
MAPS_SLEEP=30 RUNNER_LIMIT=40 run "$work/maps" test_maps.started 1
"$guest" --recover "$work/maps" test_progs test_maps || fail "--recover failed"
grep -qx 'test_maps:test_maps' "$work/maps/killers" && [ -f "$work/maps/test_maps.done" ] ||
	fail "a death in test_maps is not recorded"
! grep -q '^test_maps: OK' "$work/maps/test_maps.log" || fail "test_maps counted OK"
echo "ok: the guest dying in test_maps: it is recorded failed"
