#!/usr/bin/env bash
# harness/runner (host): the runner counts pass/fail/skip, prints TAP and the
# closing line, filters by prefix, and exits non-zero on a failure. Each TAP
# line ends in the test's duration, the count done and the time elapsed. A
# skip passes only if the list of allowed skips names the test; any other
# skip fails. With --ci, each test left to check-all gets a "# SKIP
# check-all only" line.
set -u
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run=$IOURING_BPF_SRC/selftests/run

printf 'a/pass\thost\t10\ttrue\na/skip\thost\t10\techo skipping: no feature; exit 77\nb/fail\thost\t10\techo boom; exit 1\nb/hang\thost\t1\tsleep 30\n' > "$work/m.tsv"

printf '# allowed here\na/skip  the test machine has no such feature\n' > "$work/skips"
export IOURING_BPF_SKIP_LIST=$work/skips
out=$(IOURING_BPF_BUILD=$work "$run" --manifest "$work/m.tsv" --no-vm 2>&1)
rc=$?
echo "$out"
[ $rc != 0 ] || fail "runner exited 0 with failing tests"
[ "$(echo "$out" | tail -n1)" = "1 passed, 2 failed, 1 skipped" ] || fail "wrong closing line"
echo "$out" | grep -qx '1..4' || fail "no TAP plan"
# tap N: the end of TAP line N, "[0.1 s, N/4 done, 0:00 elapsed]"
tap() { echo " \[[0-9]+\.[0-9] s, $1/4 done, [0-9]+:[0-5][0-9] elapsed\]\$"; }
echo "$out" | grep -qE "^ok 1 - a/pass #$(tap 1)" || fail "pass line"
echo "$out" | grep -qE "^ok 2 - a/skip # SKIP skipping: no feature \(allowed: the test machine has no such feature\)$(tap 2)" ||
	fail "skip line"
echo "$out" | grep -qE "^not ok 3 - b/fail # exit status 1$(tap 3)" || fail "fail line"
echo "$out" | grep -q '^#   boom' || fail "failure log not shown"
echo "$out" | grep -qE "^not ok 4 - b/hang # timed out after 1s \[[1-9]\.[0-9] s, 4/4" || fail "timeout line"

out=$(IOURING_BPF_BUILD=$work "$run" --manifest "$work/m.tsv" --no-vm -t a/ 2>&1) ||
	fail "prefix a/ should pass: $out"
[ "$(echo "$out" | tail -n1)" = "1 passed, 0 failed, 1 skipped" ] || fail "prefix filter: $out"

# a skip nobody allowed is a failure
out=$(IOURING_BPF_SKIP_LIST=/dev/null IOURING_BPF_BUILD=$work "$run" --manifest "$work/m.tsv" \
	--no-vm -t a/ 2>&1) && fail "an unlisted skip passed: $out"
echo "$out" | grep -qE "^not ok 2 - a/skip # skipped \(skipping: no feature\), and not in the reviewed list" ||
	fail "unlisted skip line: $out"
[ "$(echo "$out" | tail -n1)" = "1 passed, 1 failed, 0 skipped" ] || fail "unlisted skip count: $out"

# --ci names what it leaves to check-all, in lines that are not tests
echo a/skip > "$work/full-only.txt"
out=$(IOURING_BPF_BUILD=$work "$run" --manifest "$work/m.tsv" --no-vm --ci -t a/ 2>&1) ||
	fail "--ci -t a/: $out"
echo "$out" | grep -qx '# SKIP check-all only: a/skip' || fail "no check-all-only line: $out"
echo "$out" | grep -qx '1..1' || fail "--ci plan: $out"
rm "$work/full-only.txt"

IOURING_BPF_BUILD=$work "$run" --manifest "$work/m.tsv" --no-vm -t zzz > /dev/null 2>&1 &&
	fail "a prefix matching nothing should be an error"
exit 0
