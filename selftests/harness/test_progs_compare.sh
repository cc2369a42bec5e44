#!/usr/bin/env bash
# harness/test-progs-compare (host): selftests/kernel/test_progs.sh, which
# judges the kernel's test_progs in kernel/bpf-regression(-ci), fails on
# each way a result can differ from the stored baseline of the unpatched
# kernel, and passes when nothing does. A stand-in test_progs prints canned
# result lines in test_progs' format; the real one runs in the VM tests.
# Also the parser of those lines (scripts/test-progs-results) on a log with
# a test run twice, as scripts/bpf-baseline-guest writes after a guest death.
set -u
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
judge=$IOURING_BPF_SRC/selftests/kernel/test_progs.sh

mkdir -p "$work/out"
# the stand-in prints $work/output, whatever it is asked to run
printf '#!/bin/sh\ncat "%s/output"\n[ ! -e "%s/exit1" ]\n' "$work" "$work" > "$work/out/test_progs"
chmod +x "$work/out/test_progs"
printf 'st_a\nst_b\n' > "$work/list"
printf 'st_a\tOK\nst_a/one\tOK\nst_a/two\tOK\nst_b\tOK\nst_b/x\tOK\nst_b/x @unpriv\tSKIP\nother\tFAIL\n' > "$work/baseline"
# the output that matches the baseline ("other" is not listed: not judged)
good='#1/1     st_a/one:OK
#1/2     st_a/two:OK
#1       st_a:OK
#2/1     st_b/x:OK
#2/2     st_b/x @unpriv:SKIP
#2       st_b:OK (SKIP: 1/2)
Summary: 2/3 PASSED, 1 SKIPPED, 0 FAILED'

# judge NAME OUTPUT: test_progs.sh regression's verdict (0 pass) on OUTPUT
judge() {
	printf '%s\n' "$2" > "$work/output"
	IOURING_BPF_TEST_PROGS_DIR=$work/out IOURING_BPF_TEST_LOG_DIR=$work \
		IOURING_BPF_REGRESSION_LIST=$work/list IOURING_BPF_BASELINE_RESULTS=$work/baseline \
		"$judge" regression > "$work/$1.log" 2>&1
}

judge same "$good" || { cat "$work/same.log"; fail "results equal to the baseline were refused"; }
grep -q '^compared 6 test and subtest result(s)' "$work/same.log" ||
	fail "the judge did not compare the 6 baseline results of the listed tests: $(cat "$work/same.log")"
echo "ok: results equal to the baseline pass ($(grep '^compared' "$work/same.log"))"

# expect NAME PATTERN OUTPUT: OUTPUT must fail, saying PATTERN
expect() {
	if judge "$1" "$3"; then
		cat "$work/$1.log"
		fail "$1: passed"
	fi
	grep -qF -- "$2" "$work/$1.log" || { cat "$work/$1.log"; fail "$1: no line saying '$2'"; }
	echo "ok: $1 fails: $(grep -F -m1 -- "$2" "$work/$1.log")"
}

# a subtest that passed without the series fails here (its test too)
expect subtest-fails 'FAIL: st_a/two: FAIL here, OK on the unpatched kernel' \
	"$(sed -e 's|st_a/two:OK|st_a/two:FAIL|' -e 's|#1       st_a:OK|#1       st_a:FAIL|' <<<"$good")"
# a subtest that stops running, its test still OK
expect subtest-gone 'FAIL: st_a/two: did not run here, OK on the unpatched kernel' \
	"$(grep -v 'st_a/two' <<<"$good")"
# a subtest the baseline does not have
expect subtest-new 'FAIL: st_a/three: OK here, not run on the unpatched kernel' \
	"$(sed 's|#1       st_a:OK|#1/3     st_a/three:OK\n&|' <<<"$good")"
# a skip where the baseline has a pass, pinned or not
expect subtest-skips 'FAIL: st_b/x: SKIP here, OK on the unpatched kernel' \
	"$(sed 's|#2/1     st_b/x:OK|#2/1     st_b/x:SKIP|' <<<"$good")"
# a listed test that did not run at all
expect test-gone 'FAIL: st_b did not run' "$(grep -v 'st_b' <<<"$good")"
# test_progs' own exit status
touch "$work/exit1"
expect exit-status 'FAIL: test_progs exited 1' "$good"
rm -f "$work/exit1"
echo "ok: test_progs.sh passes only results equal to the stored baseline"

# The parser both judges use (scripts/test-progs-results), on a log as
# scripts/bpf-baseline-guest writes it: invocations appended, a test run
# again after the guest died in it, test_progs' closing error log.
cat > "$work/retried.log" <<'LOG'
#1/1     st_a/one:OK
#1/2     st_a/two:FAIL
#1       st_a:FAIL
#2/1     st_b/x:OK
#2/2     st_b/x:SKIP
#2       st_b:OK (SKIP: 1/2)

All error logs:
#1/2     st_a/two:FAIL
#1       st_a:FAIL
Summary: 1/2 PASSED, 1 SKIPPED, 1 FAILED
#3       st_c:FAIL
bpf-baseline: the guest died running st_c; once more
#3/1     st_c/k:OK
#3       st_c:OK
#4/1     st_d/k:OK
#4       st_d:OK
#4/1     st_d/k:FAIL
#4       st_d:FAIL
LOG
# st_a and st_b: one run; st_c: the guest's record of a death, then the
# run that passed; st_d: run twice, the second failed
printf 'st_a\tFAIL\nst_a/one\tOK\nst_a/two\tFAIL\nst_b\tOK\nst_b/x\tOK\nst_b/x (2)\tSKIP\nst_c\tOK\nst_c/k\tOK\nst_d\tFAIL\nst_d/k\tFAIL\n' \
	> "$work/retried.want"
"$IOURING_BPF_SRC/scripts/test-progs-results" "$work/retried.log" > "$work/retried.got" ||
	fail "test-progs-results failed on $work/retried.log"
diff -u "$work/retried.want" "$work/retried.got" ||
	fail "test-progs-results: a test's last run does not give its results alone"
echo "ok: test-progs-results keeps each test's last run, numbers repeated names within one"
