#!/usr/bin/env bash
# readme_block.sh DOC OUT: write the "From C" example of DOC
# (docs/virtio-blk.md; the fenced block after the
# <!-- vblk-readme-example: ... --> marker) to OUT; fail if there is none,
# so the build stops rather than test something else.
set -euo pipefail
readme=$1 out=$2
awk '
	index($0, "<!-- vblk-readme-example: ") == 1 { found = 1; next }
	found && !open && /^```c$/ { open = 1; next }
	open && /^```/ { exit }
	open { print }
	found && !open && NF { exit }	# prose between marker and block
' "$readme" > "$out.tmp"
if ! grep -q 'int main' "$out.tmp"; then
	echo "readme_block.sh: no C block with main() after the vblk-readme-example marker in $readme" >&2
	rm -f "$out.tmp"
	exit 1
fi
mv "$out.tmp" "$out"
