#!/usr/bin/env bash
# io_uring/liburing-* (vm): one of liburing's own tests, built unchanged from
# its release (selftests/io_uring/liburing_tests_build.sh), run on this
# kernel as root or as an unprivileged user. Its exit code is the verdict:
# 0 passes. 77 (liburing's "skip") fails here: these tests skip only when the
# kernel lacks request filters or task restrictions, and this one has both.
# usage: liburing_tests.sh TEST_BINARY [root|nobody]
set -u
bin=${1:?usage: liburing_tests.sh TEST_BINARY [root|nobody]}
user=${2:-root}
bin=$(realpath -m "$bin")
[ -x "$bin" ] || { echo "FAIL: no $bin (build target liburing_tests)"; exit 1; }

# The tests create files in the working directory and in /tmp: give them
# a directory of their own that the user may write.
work=$(mktemp -d /tmp/liburing-test.XXXXXX) || { echo "FAIL: mktemp"; exit 1; }
trap 'rm -rf "$work"' EXIT
run=()
case $user in
root) ;;
nobody)
	chown 65534:65534 "$work"
	run=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	;;
*) echo "FAIL: user is root or nobody, not $user"; exit 1 ;;
esac

echo "# $(basename "$bin") as $user on $(uname -r)"
(cd "$work" && timeout -k 5 180 "${run[@]}" "$bin") 2>&1
rc=$?
case $rc in
0) echo "ok - $(basename "$bin") as $user: exit 0"; exit 0 ;;
77) echo "not ok - $(basename "$bin") as $user skipped (exit 77): it found no request filters or task restrictions in this kernel" ;;
124|137) echo "not ok - $(basename "$bin") as $user did not finish in 180 s" ;;
*) echo "not ok - $(basename "$bin") as $user: exit $rc" ;;
esac
exit 1
