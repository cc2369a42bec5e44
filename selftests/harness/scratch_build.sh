# shellcheck shell=bash
# Sourced by the harness tests that run selftests/run or scripts/vm on a
# manifest of their own: $work, a temporary directory removed on exit;
# fail MESSAGE; and $work/build, a scratch build directory that borrows the
# build's kernel and tools, so the build's own VM output is left alone.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$work/build"
for d in kernel tools; do ln -s "$IOURING_BPF_BUILD/$d" "$work/build/$d"; done
