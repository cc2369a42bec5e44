#!/usr/bin/env bash
# kernel/bpf-series, kernel/bpf-regression(-ci) (VM): the kernel's own BPF
# selftest runner, test_progs, built from the patched tree against this
# kernel (kernel/build.sh bpf-selftests).
#
#   series      the series' own tests in tools/testing/selftests/bpf
#               (io_uring_bpf_ops, ublk_bpf_ops and their _verifier tests),
#               every one OK, and none of their subtests skipped.
#   regression  the kernel's BPF tests that pass on the same tree and
#               configuration without the series
#               (selftests/kernel/bpf-regression.list), every one OK and
#               every subtest with its result there (bpf-baseline.results).
#   regression-ci  the part of that list make check runs
#               (selftests/kernel/bpf-regression-ci.list: struct_ops with
#               bpf_testmod, trampolines, sleepable programs, printk),
#               judged the same way.
#
# Each name of the list must be reported OK: a FAIL, a SKIP or a name
# test_progs did not run at all fails the test, and so does a skipped
# subtest of a listed test (a test's "OK (SKIP: n/m)"), unless the subtest
# is in the reviewed list selftests/kernel/bpf-subtest-skips.list with the
# reason this kernel lacks what it needs. The regression modes also compare
# subtest by subtest with the stored baseline of the unpatched kernel
# (selftests/kernel/bpf-baseline.results, from scripts/bpf-baseline): every
# subtest of a listed test must have the result it has there, so a subtest
# that stops running, or one that skipped there and fails here, fails the
# test. IOURING_BPF_REGRESSION_LIST names another list (to see the check
# fail on a test that fails here); IOURING_BPF_BASELINE_RESULTS another
# stored baseline and IOURING_BPF_TEST_PROGS_DIR another test_progs (the
# host test harness/test-progs-compare feeds it canned results).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mode=${1:-}
out=${IOURING_BPF_TEST_PROGS_DIR:-$IOURING_BPF_BUILD/kernel/$IOURING_BPF_VARIANT-bpf-selftests/out}
log=${IOURING_BPF_TEST_LOG_DIR:-/tmp}/test_progs-$mode.log

# the test names of a list file: comments and blank lines dropped
names() { sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$1"; }

case $mode in
series) list=$(mktemp); printf '%s\n' io_uring_bpf_ops io_uring_bpf_ops_verifier \
	ublk_bpf_ops ublk_bpf_ops_verifier > "$list" ;;
regression) list=${IOURING_BPF_REGRESSION_LIST:-$here/bpf-regression.list} ;;
regression-ci)
	list=$here/bpf-regression-ci.list
	# a subset: a name outside the full list was never compared
	missing=$(comm -23 <(names "$list" | sort -u) <(names "$here/bpf-regression.list" | sort -u))
	[ -z "$missing" ] || {
		echo "FAIL: $list names tests bpf-regression.list does not: $missing"
		exit 1
	} ;;
*) echo "usage: $0 series|regression|regression-ci" >&2; exit 2 ;;
esac

[ -x "$out/test_progs" ] || {
	echo "FAIL: $out/test_progs is missing: make check builds it (kernel/build.sh bpf-selftests $IOURING_BPF_VARIANT)"
	exit 1
}
mapfile -t want < <(names "$list")
[ ${#want[@]} -gt 0 ] || { echo "FAIL: $list names no test"; exit 1; }

# test_progs finds its BPF objects and helpers in its own directory. A
# test that hangs is bounded by the runner's timeout for this test.
echo "running $out/test_progs on ${#want[@]} name(s) of $list"
(cd "$out" && ./test_progs -a "@$list") > "$log" 2>&1
rc=$?
summary=$(grep -E '^Summary:' "$log" | tail -n1)
echo "test_progs exit $rc; ${summary:-no summary line}"
grep -E '^#[0-9]+(/[0-9]+)?[[:space:]]' "$log"

declare -A result
while IFS=$'\t' read -r name res; do
	result[$name]=$res
done < <("$here/../../scripts/test-progs-results" "$log")

fail=0 ok=0
for name in "${want[@]}"; do
	case ${result[$name]:-missing} in
	OK) ok=$((ok + 1)) ;;
	missing)
		echo "FAIL: $name did not run (not built for this kernel? see kernel/build.sh bpf-selftests' dropped list)"
		fail=1 ;;
	*)
		echo "FAIL: $name: ${result[$name]}"
		fail=1 ;;
	esac
done
# a skipped subtest (a test's "OK (SKIP: n/m)") of a listed test is a
# failure, unless the reviewed list pins it; the series' own tests skip
# nothing on the kernel they were written for
declare -A listed
for name in "${want[@]}"; do listed[$name]=1; done
pinned=()
if [ "$mode" != series ]; then
	mapfile -t pinned < <(names "$here/bpf-subtest-skips.list" | cut -f1)
fi
# is_pinned NAME: NAME matches a pattern of the reviewed list
is_pinned() {
	local p
	for p in "${pinned[@]}"; do
		# shellcheck disable=SC2053 # the list's entries are glob patterns
		[[ $1 == $p ]] && return 0
	done
	return 1
}
for name in "${!result[@]}"; do
	[ "${result[$name]}" = SKIP ] && [ -n "${listed[${name%%/*}]:-}" ] || continue
	is_pinned "$name" && continue
	echo "FAIL: $name skipped, and not in the reviewed list selftests/kernel/bpf-subtest-skips.list"
	fail=1
done
# subtest by subtest against the unpatched kernel's stored results
if [ "$mode" != series ]; then
	baseline=${IOURING_BPF_BASELINE_RESULTS:-$here/bpf-baseline.results}
	declare -A base
	while IFS=$'\t' read -r name res; do
		[ -n "${listed[${name%%/*}]:-}" ] && base[$name]=$res
	done < "$baseline"
	for name in "${!base[@]}"; do
		[ "${result[$name]:-missing}" = "${base[$name]}" ] && continue
		echo "FAIL: $name: ${result[$name]:-did not run} here, ${base[$name]} on the unpatched kernel ($baseline)"
		fail=1
	done
	for name in "${!result[@]}"; do
		[ -n "${listed[${name%%/*}]:-}" ] && [ -z "${base[$name]:-}" ] || continue
		echo "FAIL: $name: ${result[$name]} here, not run on the unpatched kernel ($baseline)"
		fail=1
	done
	echo "compared ${#base[@]} test and subtest result(s) with $baseline"
fi
if [ $fail = 1 ] || [ $rc != 0 ]; then
	[ $rc = 0 ] || echo "FAIL: test_progs exited $rc"
	# test_progs prints the log of every test that failed
	echo "--- $log"
	cat "$log"
	exit 1
fi
echo "$ok of ${#want[@]} listed tests OK"
exit 0
