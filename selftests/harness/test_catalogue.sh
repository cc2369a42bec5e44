#!/usr/bin/env bash
# harness/test-catalogue (host): selftests/README.md's test catalogue is what
# selftests/catalogue writes from the test registry (the build's manifest and
# full-only.txt) and the tests' header comments: no test missing, none left
# over, every limit, place and full-only mark as registered; and the figures
# README.md and docs/reliability.md quote (how many tests, how many make
# check runs) are the registry's. On a difference it prints the diff;
# `selftests/catalogue` rewrites the files.
# usage: test_catalogue.sh [MANIFEST]   (default: the build's tests.tsv; a
# copy elsewhere needs its full-only.txt beside it)
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }

src=${IOURING_BPF_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${IOURING_BPF_BUILD:-$src/build}
manifest=${1:-$build/user/selftests/tests.tsv}
readme=$src/selftests/README.md
[ -s "$manifest" ] || fail "no test manifest $manifest (build first)"
[ -f "$readme" ] || fail "no $readme"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$src/selftests/catalogue" --manifest "$manifest" --user-build "$build/user" \
	--readme "$readme" --output "$tmp/README.md" || fail "selftests/catalogue failed"
if ! diff -u "$readme" "$tmp/README.md" > "$tmp/diff"; then
	cat "$tmp/diff"
	fail "selftests/README.md is not what selftests/catalogue writes (run selftests/catalogue)"
fi
tests=$(grep -c . "$manifest")
rows=$(grep -c '^| [a-z0-9_-]*/[^ ]* | \(host\|vm\) |' "$readme")
[ "$tests" = "$rows" ] || fail "the manifest has $tests tests, the catalogue $rows rows"
# the figures other documents quote (<!-- tests:KEY -->N<!-- /tests -->)
"$src/selftests/catalogue" --manifest "$manifest" --check-figures > "$tmp/figures" ||
	fail "figures that differ from the registry (run selftests/catalogue): $(cat "$tmp/figures")"
echo "selftests/README.md lists all $tests tests as registered; the documents quote its figures"
