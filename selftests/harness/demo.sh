#!/usr/bin/env bash
# harness/demo (host): scripts/demo on the kernel under test prints a summary
# with every field filled, the kernel field equal to the release this tree
# built; and the demo fails, naming the field, when a field is empty or wrong.
set -u
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
demo=$IOURING_BPF_SRC/scripts/demo
args=(--variant "$IOURING_BPF_VARIANT" --build-dir "$IOURING_BPF_BUILD")

want=$("$IOURING_BPF_SRC/kernel/build.sh" --build-dir "$IOURING_BPF_BUILD" release "$IOURING_BPF_VARIANT") ||
	fail "kernel/build.sh release $IOURING_BPF_VARIANT failed"
[ -n "$want" ] || fail "no release for $IOURING_BPF_VARIANT"

out=$("$demo" "${args[@]}" 2>&1)
rc=$?
echo "$out"
[ $rc = 0 ] || fail "scripts/demo exit $rc"
echo "$out" | grep -q '^demo OK' || fail "no 'demo OK' line"

line() { echo "$out" | sed -n "s/^  $1   *//p"; }
kernel=$(line kernel | awk '{ print $1 }')
nop=$(line io_uring)
bpf=$(line BPF)
log=$(line 'kernel log')
[ "$kernel" = "$want" ] || fail "summary kernel '$kernel', the build made '$want'"
[[ $nop =~ ^NOP\ round\ trip:\ submitted\ 1,\ completed\ 1,\ res\ 0,\ user_data\ 0x[0-9a-f]+$ ]] ||
	fail "summary io_uring line '$nop'"
[ "$bpf" = 'skeleton loaded and ran: retval 42, run_count 1' ] || fail "summary BPF line '$bpf'"
[ "$log" = 'command exited 0, kernel log clean' ] || fail "summary kernel log line '$log'"

# The demo's own check must be able to fail: damage one field at a time in a
# copy of the output this run left and check that it is refused by name.
good=$IOURING_BPF_BUILD/vm/demo
"$demo" "${args[@]}" --check-only "$good" > /dev/null || fail "the run's own output does not pass --check-only"
# refuse FIELD SED_EXPR [RESULT]: demo.txt edited with SED_EXPR must fail naming FIELD
refuse() {
	local name=$1 expr=$2 result=${3:-}
	rm -rf "$work/case" && mkdir "$work/case"
	sed "$expr" "$good/demo.txt" > "$work/case/demo.txt"
	if [ -n "$result" ]; then echo "$result" > "$work/case/result"; else cp "$good/result" "$work/case/"; fi
	local msg
	msg=$("$demo" "${args[@]}" --check-only "$work/case" 2>&1) && fail "accepted with $name damaged ($expr)"
	echo "refused ($expr): $msg"
	echo "$msg" | grep -q "field '$name'" || fail "the refusal does not name field '$name': $msg"
}
refuse kernel 's/^kernel=.*/kernel=/'
refuse kernel 's/^kernel=.*/kernel=6.1.0-amd64/'
refuse 'NOP round trip' 's/^nop=.*/nop=/'
refuse 'NOP round trip' 's/res 0/res -22/'
refuse skeleton 's/^bpf=.*/bpf=/'
refuse skeleton 's/retval 42/retval 0/'
refuse 'kernel log' 's/x/x/' 'kernel log not clean'
exit 0
