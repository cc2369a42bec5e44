#!/usr/bin/env bash
# harness/vm-report (host): scripts/vm fails a run whose kernel log holds a
# WARNING, even when the command itself succeeded, and names the report.
set -u
out_dir=$(mktemp -d)
trap 'rm -rf "$out_dir"' EXIT
out=$("$IOURING_BPF_SRC/scripts/vm" --variant "$IOURING_BPF_VARIANT" \
	--build-dir "$IOURING_BPF_BUILD" --out "$out_dir" --timeout 300 -- \
	sh -c 'echo "WARNING: iouring-bpf selftest report" > /dev/kmsg' 2>&1)
rc=$?
echo "$out"
[ $rc = 126 ] || { echo "FAIL: scripts/vm exit $rc, want 126"; exit 1; }
[ "$(cat "$out_dir/status")" = 0 ] || { echo "FAIL: the command itself should have succeeded"; exit 1; }
echo "$out" | grep -q 'WARNING: iouring-bpf selftest report' ||
	{ echo "FAIL: the report is not shown"; exit 1; }
exit 0
