#!/usr/bin/env bash
# harness/vm-output (host): what a command writes in the VM reaches the
# caller of scripts/vm, stdout on stdout and stderr on stderr, each line once,
# carriage returns removed, nothing lost at the end, and its exit status.
set -u
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The markers are computed in the guest: the literal strings appear nowhere
# in the command line, so finding them proves the guest's output came back.
guest_cmd='echo "out-marker-$((6 * 7))-stdout"; echo "err-marker-$((6 * 7))-stderr" >&2;
printf "carriage-%s\r\n" return; seq 1 20000; echo "out-marker-last-$((20000 + 1))"; exit 7'

"$IOURING_BPF_SRC/scripts/vm" --variant "$IOURING_BPF_VARIANT" \
	--build-dir "$IOURING_BPF_BUILD" --out "$work/vm" --timeout 300 -- \
	bash -c "$guest_cmd" > "$work/stdout" 2> "$work/stderr"
rc=$?
echo "--- scripts/vm exit $rc; stderr:"
cat "$work/stderr"
echo "--- stdout (first and last lines):"
head -n 3 "$work/stdout"
echo "..."
tail -n 2 "$work/stdout"

[ $rc = 7 ] || fail "scripts/vm exit $rc, want the command's 7"
[ "$(grep -cx 'out-marker-42-stdout' "$work/stdout")" = 1 ] ||
	fail "stdout does not hold the stdout marker exactly once"
[ "$(grep -cx 'err-marker-42-stderr' "$work/stderr")" = 1 ] ||
	fail "stderr does not hold the stderr marker exactly once"
! grep -q 'err-marker' "$work/stdout" || fail "the stderr marker reached stdout"
! grep -q 'out-marker' "$work/stderr" || fail "the stdout marker reached stderr"
grep -qx 'carriage-return' "$work/stdout" || fail "the line ending in \\r\\n is missing or keeps its \\r"
! grep -q $'\r' "$work/stdout" "$work/stderr" || fail "a carriage return reached the caller"
# every line, in order, and the last one after them (nothing cut at the end)
[ "$(grep -cx '[0-9]*' "$work/stdout")" = 20000 ] || fail "seq 1 20000: $(grep -cx '[0-9]*' "$work/stdout") lines arrived"
[ "$(grep -x '[0-9]*' "$work/stdout" | md5sum)" = "$(seq 1 20000 | md5sum)" ] ||
	fail "seq 1 20000 arrived altered or out of order"
[ "$(tail -n1 "$work/stdout")" = 'out-marker-last-20001' ] || fail "the last line is missing"
[ "$(wc -l < "$work/stdout")" = 20003 ] || fail "stdout has $(wc -l < "$work/stdout") lines, want 20003"
grep -q '^vm: command exited 7, kernel log clean' "$work/stderr" ||
	fail "no verdict line from scripts/vm on stderr"
exit 0
