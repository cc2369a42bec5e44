#!/usr/bin/env bash
# Prove that every patch builds on its own: build the kernel with the first
# 1, 2, ... N patches of kernel/series, in a separate build directory so the
# main builds stay untouched, and run checkpatch --strict on each patch.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
build_dir=${IOURING_BPF_BUILD:-$repo/build}/series-check
variant=default

usage() {
	cat <<EOF2
usage: kernel/check-series.sh [--variant V] [--from N]

Builds variant V (default: $variant) once per prefix of kernel/series in
BUILD/series-check, and runs checkpatch.pl --strict on every patch.
Incremental with ccache: about 1-3 minutes per patch after the first build.
EOF2
}

from=1
while [ $# -gt 0 ]; do
	case $1 in
	--variant) variant=$2; shift 2 ;;
	--from) from=$2; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done

mapfile -t patches < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$here/series")
mkdir -p "$build_dir/k/patches"
cp "$here"/patches/*.patch "$build_dir/k/patches/"

checkpatch=$repo/build/kernel/src/scripts/checkpatch.pl
fail=0
for ((i = from; i <= ${#patches[@]}; i++)); do
	p=${patches[i - 1]}
	if [ -f "$checkpatch" ]; then
		if out=$(perl "$checkpatch" --strict --no-tree -q --ignore FILE_PATH_CHANGES \
				"$here/patches/$p" 2>&1); then
			echo "checkpatch: $p: clean"
		else
			echo "$out"
			echo "checkpatch: $p: NOT clean"
			fail=1
		fi
	fi
	printf '%s\n' "${patches[@]:0:i}" > "$build_dir/k/series"
	echo "series-check: building with patches 1-$i (up to $p)"
	if ! "$here/build.sh" --build-dir "$build_dir" --series "$build_dir/k/series" \
			kernel "$variant"; then
		echo "series-check: FAILED at patch $i: $p"
		exit 1
	fi
done
[ $fail = 0 ] || { echo "series-check: checkpatch complaints above"; exit 1; }
echo "series-check: all ${#patches[@]} prefixes build"
