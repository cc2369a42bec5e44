#!/usr/bin/env bash
# ublk/require (vm, root): the ublk tests cannot pass by skipping on our own
# kernel. Every ublk test script is run (a) with /dev/ublk-control hidden
# (a private mount namespace with a /dev of a few nodes) and (b) with fio
# hidden (/dev/null, not executable, bound over it): each must fail (exit
# 1) saying what is missing, not skip (77) -- this kernel has ublk, and fio
# is a dependency.
# usage: require.sh TOOL MAINLINE_ZC_SERVER     Exit 0 pass, 1 fail.
set -u
T=$(realpath "$1")
srv=$(realpath "$2")
dir=$(cd "$(dirname "$0")" && pwd)
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

case $(uname -r) in *-iouring-bpf) ;; *) echo "FAIL: not the iouring-bpf kernel: $(uname -r)"; exit 1 ;; esac
[ -e /dev/ublk-control ] || { echo "FAIL: this kernel has no /dev/ublk-control"; exit 1; }
fio=$(command -v fio) || { echo "FAIL: no fio"; exit 1; }

# every script here that checks for ublk and fio (calls ublk_require), so
# that a new test is covered without anyone editing a list
mapfile -t scripts < <(cd "$dir" && grep -l '^[[:space:]]*ublk_require' -- *.sh |
	grep -vxE 'lib.sh|require.sh' | sed 's/\.sh$//' | sort)
[ "${#scripts[@]}" -ge 10 ] || bad "only ${#scripts[@]} ublk test scripts found in $dir: ${scripts[*]}"

# args SCRIPT: its command line (only what runs before ublk_require matters)
args() {
	case $1 in
	mainline_zc) echo "$srv null" ;;
	ext4) echo "$T $dir" ;;
	custom_policy | serve_library) echo "$T $T" ;;
	libublk) echo "$T $T null-copy" ;;	# the server is checked after ublk_require
	libublk_crate) echo "$T $T" ;;
	stripe_chunk) echo "$T $dir layout" ;;
	hook) echo "$T $T $dir $dir $T refusals" ;;
	*) echo "$T loop" ;;
	esac
}

# /dev without ublk-control: the nodes the scripts use before they give up
# shellcheck disable=SC2034 # no_ctl and no_fio are read as ${!what} below
no_ctl='mount -t tmpfs tmpfs /dev && mknod -m 666 /dev/null c 1 3 &&
	mknod -m 666 /dev/zero c 1 5 && mknod -m 666 /dev/urandom c 1 9 &&
	mkdir /dev/shm && mount -t tmpfs tmpfs /dev/shm && ln -s /proc/self/fd /dev/fd'
# shellcheck disable=SC2034 # read as ${!what} below
no_fio="mount --bind /dev/null $(printf %q "$fio")"

for s in "${scripts[@]}"; do
	for what in no_ctl no_fio; do
		out=$(unshare -m bash -c "${!what} && exec bash $(printf %q "$dir/$s.sh") $(args "$s")" 2>&1 < /dev/null)
		rc=$?
		last=$(tail -n 1 <<<"$out")
		want='FAIL: no /dev/ublk-control'
		[ $what = no_fio ] && want='FAIL: no fio'
		if [ $rc = 1 ] && grep -q "$want" <<<"$out"; then
			ok "$s, $what: exit 1: $last"
		else
			bad "$s, $what: exit $rc (want 1 and '$want'): $out"
		fi
	done
done

[ "$fails" = 0 ] && { echo "all checks passed"; exit 0; }
echo "$fails check(s) failed"
exit 1
