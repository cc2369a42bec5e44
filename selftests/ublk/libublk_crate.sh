#!/usr/bin/env bash
# ublk/libublk-crate-tests (vm, root): the libublk crate's own integration
# tests (tests/basic.rs of the published crate, unchanged; built by
# selftests/ublk/libublk/crate_tests_build.sh) run on this kernel, one at a time.
# All must pass. The crate's tests skip themselves, with a line saying so,
# where GET_FEATURES lacks what they need; here that may only be the ublk
# features this kernel does not have (kernel/README lists them), never
# anything it has. The zero-copy and auto-registration tests must run and
# pass by name.
# usage: libublk_crate.sh TOOL TESTS     Exit 0 pass, 1 fail, 77 skip.
set -u
T=$1
tests=${2:?usage: libublk_crate.sh TOOL TESTS}
tests=$(realpath -m "$tests")
. "$(dirname "$0")/lib.sh"
ublk_require
[ -x "$tests" ] || { echo "FAIL: no libublk test binary at $tests (build target libublk_crate_tests)"; exit 1; }
need_program mkfs.ext4
# the crate keeps each device's JSON in /run/ublksrvd (hard-coded)
mkdir -p /run/ublksrvd || { echo "FAIL: cannot create /run/ublksrvd, which libublk needs"; exit 1; }

log=$work/libublk-tests.log
timeout -k 10 900 "$tests" --test-threads=1 --show-output > "$log" 2>&1
rc=$?
grep -E '^test |^test result|skipping' "$log"
[ $rc = 0 ] && ok "the crate's test suite exit 0" ||
	{ bad "the crate's test suite: exit $rc"; tail -60 "$log"; }
grep -q '^test result: ok\.' "$log" && ok "$(grep '^test result' "$log")" ||
	bad "no 'test result: ok' line"

for t in test_ublk_null_zc test_ublk_null_zc_fallback test_ublk_null_zc_bad_idx_fallback \
	test_ublk_null_zc_bad_idx_no_fallback test_ublk_null_sync_auto_buf_reg \
	test_ublk_null_sync_auto_buf_reg_fallback test_ublk_ramdisk_recovery test_ublk_null \
	test_ublk_ramdisk; do
	grep -q "^test integration::$t \.\.\. ok$" "$log" && ok "$t passed" || bad "$t did not pass"
done

# skipped only for what this kernel does not have
absent='UBLK_F_PER_IO_DAEMON|UBLK_F_BATCH_IO|UBLK_F_UPDATE_SIZE|UBLK_F_QUIESCE'
n=$(grep -ci 'skipping' "$log")
other=$(grep -i 'skipping' "$log" | grep -vE "$absent")
[ -z "$other" ] && ok "$n self-skip(s), each for a flag this kernel does not have" ||
	bad "tests skipped for something else: $other"
finish
