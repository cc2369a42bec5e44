#!/usr/bin/env bash
# harness/bpf-baseline-report (host): scripts/bpf-baseline's verdict on the
# logs of a run (--reuse-logs). It fails on a result that differs between
# the kernels and on a suite test that fails on both, unless the reviewed
# lists give the cause; it passes when they do, names each difference with
# its cause, and names a pin whose test no longer fails. It stores the
# unpatched kernel's results and compares a run of the patched kernel alone
# with them, and refuses stored results made from another configuration.
# Canned logs in the runners' formats stand in for the VM's.
set -u
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
report=$work/build/bpf-baseline/suite-bpf

# logs KERNEL TEST_PROGS_LINES: the four runners' logs of one kernel
logs() {
	local d=$report/vm-$1
	mkdir -p "$d"
	printf '%s\n' "$2" > "$d/test_progs.log"
	printf '%s\n' "$2" > "$d/test_progs-no_alu32.log"
	printf '#0/u invalid and of negative number OK\n#0/p invalid and of negative number OK\n' > "$d/test_verifier.log"
	echo 'test_maps: OK, 0 SKIPPED' > "$d/test_maps.log"
	# one boot with a kernel report on its console, one with none
	printf 'boot 1: VM died without a status\nboot 2: command exited 0, kernel log clean\n' > "$d/boots"
	printf '[   61.9] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI\n' > "$d/boot1.console"
	printf '[    1.0] a clean boot\n' > "$d/boot2.dmesg"
}
same='#1/1     st_a/one:OK
#1/2     st_a/two:OK
#1       st_a:OK
#2       broken:FAIL
#3       flaky:OK
#4       skipper:SKIP'

# verdict NAME: the report's exit status on the logs as they are
verdict() {
	IOURING_BPF_BUILD=$work/build IOURING_BPF_VM_FAILURES=$work/pinned \
		IOURING_BPF_BASELINE_DIFFERENCES=$work/differences IOURING_BPF_VM_SKIPS=$work/skips \
		IOURING_BPF_SUITE_UNPATCHED=$work/stored.results \
		"$IOURING_BPF_SRC/scripts/bpf-baseline" --reuse-logs "${@:2}" > "$work/$1.log" 2>&1
}
pins() { printf '# pinned\n'; printf '%s\tthe VM has no device for it\n' "$@"; }

logs unpatched "$same"
logs patched "$same"
pins test_progs:broken test_progs-no_alu32:broken > "$work/pinned"
: > "$work/differences"
# a pattern covers both runners
printf 'test_progs*:skip*\tneeds hardware\n' > "$work/skips"
verdict same || { cat "$work/same.log"; fail "equal results with their failures pinned were refused"; }
grep -q 'test_progs  *patched  *tests: *2 OK *1 FAIL *1 SKIP; subtests: *2 OK' "$work/same.log" ||
	fail "the counts are wrong: $(cat "$work/same.log")"
grep -q '^  boot1.console: Oops: int3' "$work/same.log" ||
	fail "the console's kernel report is not in the report: $(cat "$work/same.log")"
echo "ok: equal results, failures and skips on both explained: exit 0; console reports listed"

: > "$work/skips"
verdict unskipped && fail "a skip on both kernels without a reason passed"
grep -q '^  test_progs:skipper$' "$work/unskipped.log" ||
	fail "the unexplained skip is not named: $(cat "$work/unskipped.log")"
echo "ok: a skip on both kernels without a reason fails the run, and is named"
printf 'test_progs*:skip*\tneeds hardware\n' > "$work/skips"

pins test_progs:broken > "$work/pinned"
verdict unpinned && fail "a failure on both kernels without a pin passed"
grep -q '^  test_progs-no_alu32:broken$' "$work/unpinned.log" ||
	fail "the unpinned failure is not named: $(cat "$work/unpinned.log")"
echo "ok: a failure on both kernels without a pin fails the run, and is named"

pins test_progs:broken test_progs-no_alu32:broken test_progs:flaky > "$work/pinned"
verdict stale || { cat "$work/stale.log"; fail "a stale pin failed the run"; }
sed -n '/^Entries of the two lists that matched no/,$p' "$work/stale.log" | grep -q '^  test_progs:flaky$' ||
	fail "the stale pin is not named: $(cat "$work/stale.log")"
echo "ok: a pin whose test passes is named as stale"

pins test_progs:broken test_progs-no_alu32:broken > "$work/pinned"
logs patched "${same/st_a\/two:OK/st_a/two:FAIL}"
verdict differs && fail "a subtest that fails only with the series passed"
grep -q '^  test_progs:st_a/two: OK -> FAIL  (UNEXPLAINED)$' "$work/differs.log" ||
	fail "the difference is not reported as unexplained: $(cat "$work/differs.log")"
echo "ok: a subtest OK -> FAIL with the series fails the run"

printf 'test_progs:st_a/two\ttiming under TCG\ntest_progs-no_alu32:st_a/two\ttiming under TCG\n' > "$work/differences"
verdict explained || { cat "$work/explained.log"; fail "an explained difference failed the run"; }
grep -q '^  test_progs:st_a/two: OK -> FAIL  (timing under TCG)$' "$work/explained.log" ||
	fail "the difference is not given its cause: $(cat "$work/explained.log")"
echo "ok: a difference with its cause in the list passes, and the report gives the cause"

# an entry restricted to one change explains only that change
printf 'test_progs*:st_a/two\tthe series adds it\tabsent->OK\n' > "$work/differences"
verdict restricted && fail "an entry for absent->OK explained OK->FAIL"
grep -q '^  test_progs:st_a/two: OK -> FAIL  (UNEXPLAINED)$' "$work/restricted.log" ||
	fail "the restricted entry explained another change: $(cat "$work/restricted.log")"
echo "ok: an entry for one change (absent->OK) does not explain another (OK->FAIL)"

logs patched "${same/\#3       flaky:OK/}"
verdict absent && fail "a test that stopped running with the series passed"
grep -q '^  test_progs:flaky: OK -> absent  (UNEXPLAINED)$' "$work/absent.log" ||
	fail "the missing test is not reported: $(cat "$work/absent.log")"
echo "ok: a test that no longer runs with the series fails the run"

# the unpatched kernel's results, stored; then the patched kernel alone
logs patched "$same"
: > "$work/differences"
verdict store --kernel unpatched --update || { cat "$work/store.log"; fail "storing the unpatched results failed"; }
grep -q '^# made with: linux-source-6.12 .*, variant bpf, fragments [0-9a-f]\{16\}$' "$work/stored.results" ||
	fail "the stored results do not say what they were made with: $(head -6 "$work/stored.results")"
grep -q '^test_progs:st_a/two	OK$' "$work/stored.results" ||
	fail "the stored results lack a subtest: $(cat "$work/stored.results")"
mv "$report/vm-unpatched" "$work/unpatched-logs"
verdict stored || { cat "$work/stored.log"; fail "the patched kernel alone, equal to the stored results, was refused"; }
grep -q '^unpatched kernel: not run here; its stored results' "$work/stored.log" ||
	fail "the report does not say the unpatched results are stored ones: $(cat "$work/stored.log")"
logs patched "${same/st_a\/two:OK/st_a/two:FAIL}"
verdict stored-differs && fail "a subtest that fails only with the series passed against the stored results"
grep -q '^  test_progs:st_a/two: OK -> FAIL  (UNEXPLAINED)$' "$work/stored-differs.log" ||
	fail "the difference from the stored results is not reported: $(cat "$work/stored-differs.log")"
sed -i 's/^# made with: .*/# made with: linux-source-6.12 6.12.1-1, variant bpf, fragments 0123456789abcdef/' \
	"$work/stored.results"
verdict stored-stale && fail "stored results made from another source and configuration were used"
grep -q 'was made with linux-source-6.12 6.12.1-1' "$work/stored-stale.log" ||
	fail "the refusal does not say why: $(cat "$work/stored-stale.log")"
echo "ok: a run of the patched kernel alone is judged against the stored unpatched results, if they are current"
echo "PASS"
