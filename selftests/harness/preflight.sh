#!/usr/bin/env bash
# harness/preflight (host): make stops within seconds, with one line naming
# the problem, when it is run by a user other than root or from a checkout
# whose path has a space -- before it installs or builds anything. Each
# case runs `make check` in a scratch copy of the tracked files.
set -u
fail() { echo "FAIL: $*"; exit 1; }
src=$IOURING_BPF_SRC
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"

# copy DEST: the tracked files of the checkout (no build tree)
copy() {
	mkdir -p "$1"
	git -C "$src" ls-files -z | (cd "$src" && xargs -0 cp --parents -t "$1") ||
		fail "copying the checkout to $1"
}

# expect NAME PATTERN CMD...: CMD stops in under 20 s with one line on
# stderr, from the preflight, matching PATTERN
expect() {
	local name=$1 pattern=$2 t0 rc lines
	shift 2
	t0=$SECONDS
	timeout 60 "$@" > "$work/out" 2> "$work/err" < /dev/null
	rc=$?
	echo "--- $name: exit $rc after $((SECONDS - t0)) s; stderr:"
	cat "$work/err"
	[ $rc != 0 ] && [ $rc != 124 ] || fail "$name: make exited $rc"
	[ $((SECONDS - t0)) -lt 20 ] || fail "$name: took $((SECONDS - t0)) s to stop"
	lines=$(wc -l < "$work/err")
	[ "$lines" = 1 ] || fail "$name: $lines lines on stderr, want 1"
	grep -q -- "preflight: .*$pattern" "$work/err" || fail "$name: the line does not say '$pattern'"
}

copy "$work/plain"
copy "$work/with space/iouring-bpf"
chmod -R a+rX "$work"

# the machine itself passes, so each case below fails for its own reason
IOURING_BPF_NEED_GIB=0 "$src/scripts/preflight" "$work/plain/build" ||
	fail "this machine fails the preflight as root with a plain path"

expect "not root" "run as root" runuser -u nobody -- env IOURING_BPF_NEED_GIB=0 make -C "$work/plain" check
[ ! -e "$work/plain/build" ] || fail "not root: a build tree was created"
expect "space in the path" "has a space" env IOURING_BPF_NEED_GIB=0 make -C "$work/with space/iouring-bpf" check
[ ! -e "$work/with space/iouring-bpf/build" ] || fail "space: a build tree was created"
# too little disk: the same check with a need no disk meets
expect "too little disk" "GiB free" env IOURING_BPF_NEED_GIB=100000 make -C "$work/plain" check
echo "ok: not root, a space in the path and too little disk each stop make at once with one line"
exit 0
