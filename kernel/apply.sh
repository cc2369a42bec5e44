#!/usr/bin/env bash
# apply.sh [--check] DIR: apply the series (kernel/series, kernel/patches/)
# to the Linux 6.12.y tree in DIR, in order, the way kernel/build.sh does
# (patch -p1, no fuzz), and stop at the first patch that does not apply,
# naming it and showing patch's complaint; DIR then holds every patch
# before it. With --check, the patches go to a scratch copy of DIR.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() {
	cat <<EOF
usage: kernel/apply.sh [--check] DIR

Applies kernel/patches/ in kernel/series order to the Linux 6.12.y source
tree DIR (a kernel.org tarball, a git checkout, or Debian's linux-source-6.12)
with patch -p1 and no fuzz, and says which patch first fails. The series is
tested on the linux-source-6.12 version that kernel/build.sh names
(tested_source).

  --check     apply to a scratch copy of DIR; DIR is left as it is
  -h, --help  this text

exit status: 0 all applied; 1 a patch did not apply; 2 usage.
EOF
}

check=0
case ${1:-} in
-h|--help) usage; exit 0 ;;
--check) check=1; shift ;;
esac
[ $# = 1 ] || { usage >&2; exit 2; }
dir=$1
if ! [ -f "$dir/Makefile" ] || ! grep -q '^VERSION = 6$' "$dir/Makefile" ||
	! grep -q '^PATCHLEVEL = 12$' "$dir/Makefile"; then
	echo "apply.sh: $dir is not a Linux 6.12 source tree (see its Makefile)" >&2
	exit 2
fi
sub=$(awk '$1 == "SUBLEVEL" { print $3 }' "$dir/Makefile")
tmp=
if [ $check = 1 ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	cp -a "$dir/." "$tmp/"
	dir=$tmp
fi

entries=$(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$here/series")
total=$(echo "$entries" | wc -l)
n=0
while read -r p; do
	n=$((n + 1))
	if ! out=$(patch -d "$dir" -p1 -F0 --batch --forward --no-backup-if-mismatch \
			< "$here/patches/$p" 2>&1); then
		echo "apply.sh: patch $n of $total, $p, does not apply to 6.12.$sub:" >&2
		echo "$out" | sed 's/^/  /' >&2
		echo "apply.sh: patches 1-$((n - 1)) applied${tmp:+ (to a scratch copy)}" >&2
		exit 1
	fi
done <<< "$entries"
echo "apply.sh: all $total patches apply to 6.12.$sub${tmp:+ (checked on a scratch copy)}"
