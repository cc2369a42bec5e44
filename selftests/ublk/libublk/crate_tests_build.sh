#!/usr/bin/env bash
# Build the libublk crate's own integration tests (tests/basic.rs) and the
# example they start (examples/ramdisk), unchanged, from the crate as
# published: the .crate file in cargo's cache (scripts/deps fetches it and
# the crates its own Cargo.lock pins), at the version selftests/ublk/libublk
# pins. Offline and --locked. Leaves OUT/libublk-tests, a link to the test
# binary in its target directory (the tests find examples/ramdisk next to
# it).
# usage: crate_tests_build.sh CARGO LIBCLANG_DIR CARGO_LOCK OUT
set -euo pipefail
cargo=$1 libclang=$2 lock=$3 out=$4

die() { echo "crate_tests_build: error: $*" >&2; exit 1; }

ver=$(awk '$1 == "name" && $3 == "\"libublk\"" { getline; gsub(/"/, "", $3); print $3; exit }' "$lock")
[ -n "$ver" ] || die "no libublk in $lock"
crate=
for f in "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"libublk-$ver.crate"; do
	[ -f "$f" ] && { crate=$f; break; }
done
[ -n "$crate" ] || die "libublk-$ver.crate is not in cargo's cache; run scripts/deps"

mkdir -p "$out"
src=$out/libublk-$ver
if [ ! -f "$src/Cargo.toml" ] || [ "$crate" -nt "$src/Cargo.toml" ]; then
	rm -rf "$src"
	tar -xzf "$crate" -C "$out"
fi
export LIBCLANG_PATH=$libclang
args=(--release --offline --locked --manifest-path "$src/Cargo.toml" --target-dir "$out/target")
"$cargo" build "${args[@]}" --example ramdisk
exe=$("$cargo" test "${args[@]}" --no-run --test basic --message-format=json |
	python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and \
       m["target"]["name"] == "basic":
        print(m["executable"])')
[ -x "$exe" ] || die "cargo test --no-run gave no test binary for tests/basic.rs"
ln -sfn "$exe" "$out/libublk-tests"
