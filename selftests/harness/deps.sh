#!/usr/bin/env bash
# harness/deps (host): `scripts/deps --tests` on a machine that lacks
# everything it installs -- every Debian package of its lists, virtme-ng,
# the libublk crates, liburing's tarball -- installs all of it and exits 0,
# and `scripts/deps --tests --check` there exits 1 naming each missing
# thing; plain `scripts/deps` (what make demo, install, deb and shell run)
# on another such machine installs the product's packages only: no test
# package, no cargo, no crates, no tarball. The
# package tools are recorders on PATH (dpkg-query, apt-get, python3 -m pip,
# cargo, curl, id), HOME, CARGO_HOME and XDG_CACHE_HOME temporary
# directories, so nothing is installed or downloaded: CI's machine has
# everything, and deps's install branch would otherwise never run (it once
# died at its first step, on a variable never set). The test checks what
# each tool was asked for: apt-get update, then apt-get install of every
# package of deps's list; pip install of virtme-ng at deps's version; cargo
# fetch of the libublk crates; the tarball by its URL and sha256 (the fake
# curl copies the real one from the cache, ~/.cache/iouring-bpf, which
# scripts/deps fills on this machine); deps's progress lines while apt-get
# and pip run. A second run, with everything now there, prints nothing.
# usage: deps.sh [DEPS]   (default: scripts/deps of this checkout; another
# copy needs progress beside it and ../selftests/ublk/libublk as here)
set -u
fail() { echo "FAIL: $*"; exit 1; }

src=${IOURING_BPF_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
deps=${1:-$src/scripts/deps}
deps=$(realpath "$deps") || fail "no deps script ${1:-}"
[ -x "$deps" ] || fail "$deps is not executable"
libublk_dir=$(dirname "$deps")/../selftests/ublk/libublk
[ -f "$libublk_dir/Cargo.lock" ] || fail "no $libublk_dir/Cargo.lock beside $deps"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "deps script: $deps"

# ---- what deps installs, read from deps itself
# read_list NAME: the words of deps's NAME=( ... ) array, comments left out
read_list() { sed -n "/^$1=(/,/^)/p" "$deps" | sed '1d; $d; s/#.*//' | tr -s ' \t' '\n' | grep .; }
mapfile -t product_debs < <(read_list debs)
mapfile -t test_debs < <(read_list test_debs)
[ ${#test_debs[@]} -ge 3 ] || fail "read ${#test_debs[@]} packages from deps's test_debs=( ... ) list"
debs=("${product_debs[@]}" "${test_debs[@]}")
vng_version=$(sed -n 's/^virtme_ng_version=//p' "$deps")
tarball_name=$(sed -n 's/^liburing_tarball_name=//p' "$deps")
tarball_sha=$(sed -n 's/^liburing_tarball_sha256=//p' "$deps")
[ ${#debs[@]} -ge 10 ] || fail "read ${#debs[@]} packages from deps's debs=( ... ) list: ${debs[*]}"
[ -n "$vng_version" ] && [ -n "$tarball_name" ] && [ -n "$tarball_sha" ] ||
	fail "cannot read virtme_ng_version, liburing_tarball_name or liburing_tarball_sha256 from $deps"
# the libublk crate's version, as Cargo.lock pins it (the fake cargo puts
# that .crate into its cache)
crate_ver=$(awk '$1 == "name" && $3 == "\"libublk\"" { getline; gsub(/"/, "", $3); print $3; exit }' \
	"$libublk_dir/Cargo.lock")
[ -n "$crate_ver" ] || fail "no libublk version in $libublk_dir/Cargo.lock"
echo "deps's list: ${#debs[@]} Debian packages, virtme-ng $vng_version, libublk $crate_ver, $tarball_name"

# the real tarball, which the fake curl hands out: where the build took it
# from (it needs it to configure), else where scripts/deps puts it
build_tarball=$(sed -n 's/^LIBURING_TESTS_TARBALL:FILEPATH=//p' \
	"${IOURING_BPF_BUILD:-$src/build}/user/CMakeCache.txt" 2>/dev/null)
real_tarball=
for t in "$build_tarball" "${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/iouring-bpf/$tarball_name" \
	"/root/.cache/iouring-bpf/$tarball_name"; do
	if [ -n "$t" ] && [ -f "$t" ] && [ "$(basename "$t")" = "$tarball_name" ]; then
		real_tarball=$t
		break
	fi
done
[ -n "$real_tarball" ] ||
	fail "no $tarball_name in ~/.cache/iouring-bpf: this test's fake curl hands out the real one; run scripts/deps first"
echo "$tarball_sha  $real_tarball" | sha256sum --quiet -c - 2>/dev/null ||
	fail "$real_tarball's sha256 is not deps's $tarball_sha; run scripts/deps"

# ---- the fake tools: each appends "NAME ARGS" (ARGS %q-quoted) to calls;
# apt-get install and pip install run until deps's output ($FAKE/out) shows
# the progress line of their step
bin=$work/bin
mkdir -p "$bin" "$work/home" "$work/cargo" "$work/cache" "$work/tmp" "$work/stdlib"
: > "$work/installed"
: > "$work/cargo-fetched"
# Debian's python3 is EXTERNALLY-MANAGED: deps must pass --break-system-packages
touch "$work/stdlib/EXTERNALLY-MANAGED"

cat > "$bin/record" <<'EOF'
#!/usr/bin/env bash
# record NAME ARGS...: one line in the call log
name=$1; shift
{ printf '%s' "$name"; [ $# = 0 ] || printf ' %q' "$@"; echo; } >> "$FAKE/calls"
EOF

cat > "$bin/dpkg-query" <<'EOF'
#!/usr/bin/env bash
# dpkg-query -W -f='${Status}' PKG: installed only if the fake apt-get installed it
"$FAKE/bin/record" dpkg-query "$@"
pkg=${!#}
if grep -qxF -- "$pkg" "$FAKE/installed"; then
	printf 'install ok installed'
else
	echo "dpkg-query: no packages found matching $pkg" >&2
	exit 1
fi
EOF

cat > "$bin/apt-get" <<'EOF'
#!/usr/bin/env bash
"$FAKE/bin/record" apt-get "DEBIAN_FRONTEND=${DEBIAN_FRONTEND:-}" "$@"
case " $* " in
*" update "*) echo "Reading package lists..." ;;
*" install "*)
	seen=0
	for a in "$@"; do
		case $a in
		install) seen=1 ;;
		-*) ;;
		*) [ $seen = 1 ] && echo "$a" >> "$FAKE/installed" && echo "Setting up $a ..." ;;
		esac
	done
	# run until deps's progress line shows (IOURING_BPF_PROGRESS_S=1), 30 s at most
	for _ in $(seq 300); do
		grep -q '^deps: apt-get: ' "$FAKE/out" && break
		sleep 0.1
	done
	echo "Processing triggers for man-db ..." ;;
*) echo "fake apt-get: unexpected: $*" >&2; exit 100 ;;
esac
EOF

cat > "$bin/python3" <<'EOF'
#!/usr/bin/env bash
"$FAKE/bin/record" python3 "$@"
case $* in
"-m pip install --help")
	echo "  --break-system-packages     Allow pip to modify an EXTERNALLY-MANAGED Python installation" ;;
"-c "*sysconfig*stdlib*)
	echo "$FAKE/stdlib" ;;
"-m pip install "*)
	spec=${!#}
	echo "Collecting $spec"
	# the install puts vng on PATH
	printf '#!/bin/sh\necho "virtme-ng %s"\n' "${spec##*==}" > "$FAKE/bin/vng"
	chmod +x "$FAKE/bin/vng"
	for _ in $(seq 300); do	# until deps's progress line shows
		grep -q '^deps: pip: ' "$FAKE/out" && break
		sleep 0.1
	done
	echo "Successfully installed ${spec/==/-}" ;;
*) echo "fake python3: unexpected: $*" >&2; exit 99 ;;
esac
EOF

# cargo fetch [--offline] --manifest-path M: offline, succeeds only for a
# manifest fetched online before (a cache); online, "downloads": for our
# libublk manifest it also puts the published libublk .crate into the
# registry cache, as cargo does, which deps unpacks for the crate's own
# Cargo.lock
cat > "$bin/cargo" <<'EOF'
#!/usr/bin/env bash
[ "${1:-}" = --version ] && { echo "cargo ${FAKE_CARGO_VERSION:-1.85.0} (fake)"; exit 0; }
"$FAKE/bin/record" cargo "$@"
[ "${1:-}" = fetch ] || { echo "fake cargo: unexpected: $*" >&2; exit 101; }
offline=0 manifest=
while [ $# -gt 0 ]; do
	case $1 in
	--offline) offline=1 ;;
	--manifest-path) manifest=$2; shift ;;
	esac
	shift
done
[ -f "$manifest" ] || { echo "error: manifest path \`$manifest\` does not exist" >&2; exit 101; }
key=$(basename "$(dirname "$manifest")")/Cargo.toml
if [ $offline = 1 ]; then
	grep -qxF "$key" "$FAKE/cargo-fetched" && exit 0
	echo "error: failed to download \`$key\` (offline)" >&2
	exit 101
fi
if [ "$key" = libublk/Cargo.toml ]; then
	crate=$CARGO_HOME/registry/cache/index.crates.io-6f17d22bba15001f/libublk-$CRATE_VER.crate
	mkdir -p "$(dirname "$crate")" "$FAKE/crate/libublk-$CRATE_VER"
	printf '[package]\nname = "libublk"\nversion = "%s"\n' "$CRATE_VER" > "$FAKE/crate/libublk-$CRATE_VER/Cargo.toml"
	tar -czf "$crate" -C "$FAKE/crate" "libublk-$CRATE_VER"
fi
echo "$key" >> "$FAKE/cargo-fetched"
EOF

cat > "$bin/curl" <<'EOF'
#!/usr/bin/env bash
# curl ... -o FILE URL: FILE gets the real tarball
"$FAKE/bin/record" curl "$@"
out=
while [ $# -gt 1 ]; do
	[ "$1" = -o ] && { out=$2; shift; }
	shift
done
[ -n "$out" ] || { echo "fake curl: no -o FILE" >&2; exit 2; }
case $1 in
*/"$(basename "$REAL_TARBALL")") cp "$REAL_TARBALL" "$out" ;;
*) echo "fake curl: (22) The requested URL returned error: 404: $1" >&2; exit 22 ;;
esac
EOF

cat > "$bin/id" <<'EOF'
#!/usr/bin/env bash
# root, whoever runs the test
[ "$*" = -u ] && { echo 0; exit 0; }
exec /usr/bin/id "$@"
EOF
chmod +x "$bin"/*

# run_deps ARGS...: deps in the fake machine; output in $work/out, status in rc
run_deps() {
	: > "$work/calls"
	env -i PATH="$bin:/usr/bin:/bin" HOME="$work/home" CARGO_HOME="$work/cargo" \
		XDG_CACHE_HOME="$work/cache" TMPDIR="$work/tmp" LANG=C.UTF-8 \
		IOURING_BPF_PROGRESS_S=1 FAKE="$work" CRATE_VER="$crate_ver" REAL_TARBALL="$real_tarball" \
		FAKE_CARGO_VERSION="${FAKE_CARGO_VERSION:-}" \
		timeout 120 "$deps" "$@" > "$work/out" 2>&1 < /dev/null
	rc=$?
	echo "--- scripts/deps${*:+ $*}: exit $rc"
	cat "$work/out"
}
# called TOOL ARGS-REGEX: TOOL was called with arguments matching the regex
called() { grep -qE "^$1( |\$)${2:-}" "$work/calls"; }
# same_set WHAT LIST1 LIST2: the two newline-separated lists hold the same words
same_set() {
	local d
	d=$(diff <(sort -u <<<"$2") <(sort -u <<<"$3")) ||
		fail "$1 differ from deps's list (< list, > $1):"$'\n'"$d"
}

[ -z "$(PATH="$bin:/usr/bin:/bin" command -v vng)" ] ||
	fail "vng is on the fake machine's PATH before the install: $(PATH="$bin:/usr/bin:/bin" command -v vng)"
tarball=$work/cache/iouring-bpf/$tarball_name
list=$(printf '%s\n' "${debs[@]}")

# ---- 1. --check on a machine that lacks everything: exit 1, all named
run_deps --tests --check
[ $rc = 1 ] || fail "deps --check with everything missing exited $rc, want 1"
missing=$(sed -n 's/^deps: missing Debian packages: //p' "$work/out" | tr ' ' '\n')
[ -n "$missing" ] || fail "deps --check names no missing Debian package"
same_set "the packages --check names as missing" "$list" "$missing"
same_set "the packages dpkg-query was asked about" "$list" \
	"$(sed -n 's/^dpkg-query .* //p' "$work/calls")"
grep -qxF "deps: missing virtme-ng $vng_version (PyPI)" "$work/out" || fail "--check does not name virtme-ng $vng_version"
grep -q '^deps: missing Rust crates of selftests/ublk/libublk' "$work/out" || fail "--check does not name the libublk crates"
grep -qF "deps: missing $tarball " "$work/out" || fail "--check does not name $tarball"
! called apt-get && ! called curl && ! called python3 '-m pip install [^-]' ||
	fail "deps --check installed or fetched something:"$'\n'"$(cat "$work/calls")"
! grep '^cargo' "$work/calls" | grep -qv -- --offline || fail "deps --check ran cargo fetch online"
echo "ok: --check exits 1 and names all ${#debs[@]} packages, virtme-ng, the crates and the tarball"

# ---- 2. the install
t0=$SECONDS
run_deps --tests
[ $rc = 0 ] || fail "deps with everything missing exited $rc, want 0 (its output above)"
tail -n 1 "$work/out" | grep -qxF "deps: all dependencies present" || fail "deps's last line is not 'deps: all dependencies present'"
echo "(the install took $((SECONDS - t0)) s)"

# apt-get: update, then install of the whole list, non-interactive
upd=$(grep -nE '^apt-get .* update( |$)' "$work/calls" | head -1 | cut -d: -f1)
ins=$(grep -n '^apt-get .* install ' "$work/calls" | head -1 | cut -d: -f1)
[ -n "$upd" ] || fail "apt-get update was not run"
[ -n "$ins" ] || fail "apt-get install was not run"
[ "$upd" -lt "$ins" ] || fail "apt-get install ran before apt-get update"
install_line=$(sed -n "${ins}p" "$work/calls")
grep -q '^apt-get DEBIAN_FRONTEND=noninteractive ' <<<"$install_line" || fail "apt-get ran without DEBIAN_FRONTEND=noninteractive: $install_line"
grep -q ' -y ' <<<"$install_line" || fail "apt-get install without -y: $install_line"
same_set "the packages given to apt-get install" "$list" \
	"$(sed 's/.* install //' <<<"$install_line" | tr ' ' '\n' | grep -v '^-')"
grep -qxF "deps: apt-get install ${debs[*]}" "$work/out" || fail "deps did not say 'deps: apt-get install' with the list"
echo "ok: apt-get update, then apt-get install -y of all ${#debs[@]} packages"

# pip: virtme-ng at deps's version, --break-system-packages for an
# EXTERNALLY-MANAGED python; vng then on PATH
called python3 "-m pip install --break-system-packages virtme-ng==$vng_version\$" ||
	fail "pip was not asked for virtme-ng==$vng_version with --break-system-packages:"$'\n'"$(grep ^python3 "$work/calls")"
grep -qxF "deps: pip install virtme-ng==$vng_version" "$work/out" || fail "deps did not say 'deps: pip install virtme-ng==$vng_version'"
echo "ok: python3 -m pip install --break-system-packages virtme-ng==$vng_version"

# the progress lines of the long steps, from scripts/progress
grep -qE '^deps: apt-get: 0 min, last: (Setting up|Processing)' "$work/out" ||
	fail "no progress line 'deps: apt-get: 0 min, last: ...' while apt-get ran"
grep -qE '^deps: pip: 0 min, last: Collecting virtme-ng' "$work/out" ||
	fail "no progress line 'deps: pip: 0 min, last: ...' while pip ran"
echo "ok: progress lines while apt-get and pip ran"

# cargo: the libublk manifest, then the crate's own Cargo.lock, online
called cargo "fetch --locked --manifest-path [^ ]*/selftests/ublk/libublk/Cargo.toml\$" ||
	fail "cargo fetch of selftests/ublk/libublk was not run:"$'\n'"$(grep ^cargo "$work/calls")"
called cargo "fetch --locked --manifest-path [^ ]*/libublk-$crate_ver/Cargo.toml\$" ||
	fail "cargo fetch of the libublk-$crate_ver crate's own manifest was not run:"$'\n'"$(grep ^cargo "$work/calls")"
echo "ok: cargo fetch of selftests/ublk/libublk and of the libublk-$crate_ver crate"

# the tarball: fetched by its URL, in XDG_CACHE_HOME, the right sha256
called curl ".* http://[^ ]*/$tarball_name\$" || fail "curl did not fetch $tarball_name:"$'\n'"$(grep ^curl "$work/calls")"
echo "$tarball_sha  $tarball" | sha256sum --quiet -c - || fail "$tarball is missing or has the wrong sha256"
others=$(find "$work/cache/iouring-bpf" -mindepth 1 ! -name "$tarball_name")
[ -z "$others" ] || fail "deps left other files in its cache: $others"
echo "ok: $tarball_name fetched into XDG_CACHE_HOME, sha256 checked"

# ---- 3. again, with everything there: a quick no-op, silent
run_deps --tests --check
[ $rc = 0 ] && [ ! -s "$work/out" ] || fail "deps --check after the install: exit $rc, want 0 and no output"
run_deps --tests
[ $rc = 0 ] && [ ! -s "$work/out" ] || fail "deps after the install: exit $rc, want 0 and no output"
run_deps
[ $rc = 0 ] && [ ! -s "$work/out" ] || fail "deps without --tests after the install: exit $rc, want 0 and no output"
! called apt-get && ! called curl && ! called python3 ||
	fail "deps installed or fetched again:"$'\n'"$(cat "$work/calls")"
echo "ok: with everything installed, deps and deps --check exit 0 and print nothing"

# ---- 4. a cargo older than 1.80 (bookworm's own): Debian's cargo-web instead
FAKE_CARGO_VERSION=1.63.0 run_deps --tests --check
[ $rc = 1 ] || fail "deps --check with cargo 1.63 exited $rc, want 1"
missing=$(sed -n 's/^deps: missing Debian packages: //p' "$work/out" | tr ' ' '\n')
same_set "the packages --check names with cargo 1.63" "$(printf 'rustc-web\ncargo-web\n')" "$missing"
grep -q '^deps: missing cargo 1.80 or newer' "$work/out" || fail "--check does not say cargo is too old"
echo "ok: with cargo 1.63, deps --check asks for Debian's rustc-web and cargo-web"
FAKE_CARGO_VERSION=1.63.0 run_deps --check
[ $rc = 0 ] && [ ! -s "$work/out" ] ||
	fail "deps --check without --tests, cargo 1.63: exit $rc, want 0 and no output (cargo is the tests' need)"
echo "ok: without --tests, an old cargo is nobody's business"

# ---- 5. a new machine, the product only: plain deps installs the product's
# packages and virtme-ng, and nothing of the test suite's
: > "$work/installed"
: > "$work/cargo-fetched"
rm -rf "$work/bin/vng" "$work/cache" "$work/cargo"
mkdir -p "$work/cache" "$work/cargo"
product=$(printf '%s\n' "${product_debs[@]}")
run_deps --check
[ $rc = 1 ] || fail "deps --check (product) with everything missing exited $rc, want 1"
same_set "the packages deps --check (product) names as missing" "$product" \
	"$(sed -n 's/^deps: missing Debian packages: //p' "$work/out" | tr ' ' '\n')"
! grep -qE 'crates|cargo|liburing_' "$work/out" || fail "deps --check (product) asks for a test need"
run_deps
[ $rc = 0 ] || fail "deps (product) with everything missing exited $rc, want 0"
same_set "the packages given to apt-get install (product)" "$product" \
	"$(grep '^apt-get .* install ' "$work/calls" | sed 's/.* install //' | tr ' ' '\n' | grep -v '^-')"
called python3 "-m pip install --break-system-packages virtme-ng==$vng_version\$" ||
	fail "deps (product) did not install virtme-ng"
! called cargo && ! called curl || fail "deps (product) ran cargo or curl:"$'\n'"$(cat "$work/calls")"
[ ! -e "$tarball" ] || fail "deps (product) fetched $tarball"
tail -n 1 "$work/out" | grep -q '^deps: all dependencies present (without the test suite' ||
	fail "deps (product)'s last line: $(tail -n 1 "$work/out")"
echo "ok: plain deps installs the ${#product_debs[@]} product packages and virtme-ng, no test need"
exit 0
