#!/usr/bin/env bash
# kernel/kselftest (VM): the series' kselftest targets (ublk_uapi,
# virtio_blk in tools/testing/selftests), built from the patched tree and
# installed by kernel/build.sh kselftests, run by the kernel's own
# run_kselftest.sh. virtio_blk gets the scratch disk with serial vblk1
# (its data is destroyed; the vblk/ tests zero it again in the next boot).
#
# Every test of the install's kselftest-list.txt must be reported "ok"
# without a SKIP: on this kernel each feature is there, so a skip is a
# failure too, as are "not ok", a timeout, or a test that never reported.
set -u
install=${IOURING_BPF_KSELFTEST_DIR:-$IOURING_BPF_BUILD/kernel/kselftests/install}
log=${IOURING_BPF_TEST_LOG_DIR:-/tmp}/kselftest.log

[ -x "$install/run_kselftest.sh" ] || {
	echo "FAIL: $install/run_kselftest.sh is missing: make check builds it (kernel/build.sh kselftests)"
	exit 1
}
mapfile -t want < "$install/kselftest-list.txt"
# the list is pinned here: a test the build lost (or gained) is a failure,
# not a shorter run
pinned=(ublk_uapi:test_auto_buf_reg.sh ublk_uapi:test_backing_error.sh ublk_uapi:test_copy_mode.sh
	ublk_uapi:test_ctrl.sh virtio_blk:test_passthru.sh)
[ "$(printf '%s\n' "${want[@]}" | sort | xargs)" = "$(printf '%s\n' "${pinned[@]}" | sort | xargs)" ] || {
	echo "FAIL: $install/kselftest-list.txt names ${want[*]}, not the pinned ${pinned[*]}"
	exit 1
}

disk=
for d in /sys/block/vd*; do
	[ "$(cat "$d/serial" 2>/dev/null)" = vblk1 ] && disk=/dev/${d##*/}
done
[ -n "$disk" ] || { echo "FAIL: no virtio-blk disk with serial vblk1 in this VM"; exit 1; }

echo "running run_kselftest.sh (${#want[@]} tests), VIRTIO_BLK_TEST_DEV=$disk"
(cd "$install" && VIRTIO_BLK_TEST_DEV=$disk ./run_kselftest.sh) > "$log" 2>&1
rc=$?
cat "$log"

fail=0
for t in "${want[@]}"; do
	target=${t%%:*} script=${t#*:}
	line=$(grep -E "^(not )?ok [0-9]+ selftests: $target: $script( |$)" "$log" | tail -n1)
	case $line in
	"ok "*"# SKIP"*) echo "FAIL: $t skipped on a kernel that has the feature: $line"; fail=1 ;;
	"ok "*) ;;
	"") echo "FAIL: $t never reported"; fail=1 ;;
	*) echo "FAIL: $t: $line"; fail=1 ;;
	esac
done
echo "run_kselftest.sh exit $rc; ${#want[@]} tests, $([ $fail = 0 ] && echo "all ok" || echo "failures above")"
[ $fail = 0 ] && [ $rc = 0 ]
