#!/usr/bin/env bash
# ublk/tool-options (vm, root): the tool takes -j/--json anywhere up to a
# '--' (after the command too, as the README shows), and keeps its device
# state private:
#  - `ublk add ... --json` and `ublk list -j` print JSON;
#  - the state directory is 0700 and each state file 0600; one an older
#    version made 0755 is tightened to 0700;
#  - a state directory that is a symlink is refused (ENOTDIR), and nothing
#    is added.
# usage: tool_options.sh TOOL     Exit 0 pass, 1 fail, 77 skip.
set -u
T=$(realpath "$1")
. "$(dirname "$0")/lib.sh"
ublk_require

truncate -s 16M "$work/a.img" "$work/b.img"
out=$("$T" ublk add --target loop --file "$work/a.img" --json 2>&1)
id=$(jget '["id"]' <<<"$out" 2>/dev/null)
if [[ $id =~ ^[0-9]+$ ]]; then
	ublk_remember "$id"
	ok "ublk add ... --json: $out"
else
	bad "ublk add ... --json did not print JSON: $out"
fi
"$T" ublk list -j | json "any(d['id'] == ${id:-0} for d in j)" &&
	ok "ublk list -j lists ublk $id" || bad "ublk list -j: $("$T" ublk list -j 2>&1)"

mode=$(stat -c %a "$IOURING_BPF_UBLK_DIR")
[ "$mode" = 700 ] && ok "state directory $IOURING_BPF_UBLK_DIR is 0700" || bad "state directory mode $mode"
mode=$(stat -c %a "$IOURING_BPF_UBLK_DIR/$id" 2>&1)
[ "$mode" = 600 ] && ok "state file $id is 0600" || bad "state file $id mode: $mode"

# an older, looser directory is tightened
loose=$work/loose
mkdir -m 0755 "$loose"
out=$(IOURING_BPF_UBLK_DIR=$loose "$T" -j ublk add --target loop --file "$work/b.img" 2>&1)
bid=$(jget '["id"]' <<<"$out" 2>/dev/null)
[[ $bid =~ ^[0-9]+$ ]] && ublk_remember "$bid"
mode=$(stat -c %a "$loose")
[ "$mode" = 700 ] && ok "a 0755 state directory is made 0700" || bad "the 0755 directory is now $mode ($out)"
[[ $bid =~ ^[0-9]+$ ]] && IOURING_BPF_UBLK_DIR=$loose "$T" ublk del "$bid" > /dev/null

# a symlinked state directory is not used
mkdir -m 0700 "$work/elsewhere"
ln -s "$work/elsewhere" "$work/link"
before=$(ls /sys/class/ublk-char | wc -l)
out=$(IOURING_BPF_UBLK_DIR=$work/link "$T" ublk add --target loop --file "$work/b.img" 2>&1)
rc=$?
[ $rc != 0 ] && [[ $out == *"is not a directory of uid 0"* ]] &&
	ok "a symlinked state directory is refused: $out" || bad "symlinked state directory: exit $rc: $out"
[ "$(ls /sys/class/ublk-char | wc -l)" = "$before" ] && ok "and no device was added" ||
	bad "a device was added anyway"
finish
