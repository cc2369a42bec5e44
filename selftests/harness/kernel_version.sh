#!/usr/bin/env bash
# harness/kernel-version (VM): the guest runs the kernel this tree built.
set -u
release_file=$IOURING_BPF_BUILD/kernel/$IOURING_BPF_VARIANT/include/config/kernel.release
want=$(cat "$release_file") || { echo "cannot read $release_file"; exit 1; }
got=$(uname -r)
echo "guest uname -r: $got; built: $want"
case $got in
*-iouring-bpf) ;;
*) echo "FAIL: release $got does not end in -iouring-bpf"; exit 1 ;;
esac
[ "$got" = "$want" ] || { echo "FAIL: guest runs $got, the build made $want"; exit 1; }
# KBUILD_BUILD_USER/HOST are fixed by kernel/build.sh: this is our build,
# not a stock kernel that happens to share the name.
grep -q 'iouring-bpf@build' /proc/version ||
	{ echo "FAIL: /proc/version is not from our build: $(cat /proc/version)"; exit 1; }
exit 0
