#!/usr/bin/env bash
# ublk/policy-search (host): where `ublk add --target loop` finds
# ublk_loop.bpf.o. An installed copy of the tool (cmake --install --prefix
# DEST) looks in DEST's lib/iouring-bpf and the configured install
# directory, never in the build tree it was built in; the build tree's
# binary uses the build tree; $IOURING_BPF_POLICY_DIR comes first for both.
# Which object was taken shows in the error about it (the ones planted here
# are not BPF objects); nothing gets as far as creating a device.
set -u
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
build_tool=$IOURING_BPF_BUILD/user/loader/iouring-bpf
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT

cmake --install "$IOURING_BPF_BUILD/user" --prefix "$dest/usr" > /dev/null || { echo "FAIL: cmake --install"; exit 1; }
tool=$dest/usr/bin/iouring-bpf
pol=$(ls -d "$dest"/usr/lib*/iouring-bpf)
[ -x "$tool" ] && [ -f "$pol/ublk_loop.bpf.o" ] || { echo "FAIL: no installed tool or policy"; exit 1; }
[ -f "$IOURING_BPF_BUILD/user/bpf/ublk_loop.bpf.o" ] || { echo "FAIL: no ublk_loop.bpf.o in the build tree"; exit 1; }
truncate -s 8M "$dest/img"
# the configured install directory may hold a real policy (make install):
# then an installed copy takes that one, and what is checked is only that
# it never takes the build tree's
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:[A-Z]*=//p' "$IOURING_BPF_BUILD/user/CMakeCache.txt")
configured=
ls "$prefix"/lib*/iouring-bpf/ublk_loop.bpf.o > /dev/null 2>&1 && configured=1

# add TOOL [ENV...]: the error of `ublk add --target loop`
add() {
	local t=$1
	shift
	env -u IOURING_BPF_POLICY_DIR "$@" "$t" ublk add --target loop --file "$dest/img" 2>&1
}

# 1. installed, its policy gone: not found, and the build tree is not tried
rm "$pol/ublk_loop.bpf.o"
out=$(add "$tool")
if { [ -n "$configured" ] || grep -q "ublk_loop.bpf.o is in none of: $pol" <<<"$out"; } &&
   ! grep -qF "$IOURING_BPF_BUILD" <<<"$out"; then
	ok "installed tool, policy not installed: $out"
else
	bad "installed tool without its policy went elsewhere: $out"
fi

# 2. installed, its policy there (planted, not a BPF object): that one is taken
: > "$pol/ublk_loop.bpf.o"
out=$(add "$tool")
grep -q "^iouring-bpf: $pol/ublk_loop.bpf.o: not a BPF ELF object" <<<"$out" &&
	ok "installed tool takes the installed policy: $out" ||
	bad "installed tool did not take $pol/ublk_loop.bpf.o: $out"

# 3. $IOURING_BPF_POLICY_DIR first, for both
mkdir "$dest/env"
: > "$dest/env/ublk_loop.bpf.o"
for t in "$tool" "$build_tool"; do
	out=$(add "$t" IOURING_BPF_POLICY_DIR="$dest/env")
	grep -q "^iouring-bpf: $dest/env/ublk_loop.bpf.o: not a BPF ELF object" <<<"$out" &&
		ok "$t: \$IOURING_BPF_POLICY_DIR first" || bad "$t with \$IOURING_BPF_POLICY_DIR: $out"
done

# 4. the build tree's binary: the build tree's policy (a real one, so the
# error is a later one, not about the object), never the installed one
out=$(add "$build_tool" IOURING_BPF_POLICY_DIR="$dest/nothing-here")
if ! grep -q "ublk_loop.bpf.o" <<<"$out"; then
	ok "build tree binary takes the build tree's policy: $out"
else
	bad "build tree binary: $out"
fi

# 5. a copy of the build tree's binary elsewhere is not the build tree's
cp "$build_tool" "$dest/copy"
out=$(add "$dest/copy")
{ [ -n "$configured" ] || grep -q "ublk_loop.bpf.o is in none of" <<<"$out"; } &&
	! grep -qF "$IOURING_BPF_BUILD" <<<"$out" &&
	ok "a copy of the binary does not use the build tree: $out" ||
	bad "a copy of the build tree's binary: $out"

[ "$fails" = 0 ] && { echo "all checks passed"; exit 0; }
echo "$fails check(s) failed"
exit 1
