#!/usr/bin/env bash
# loader/errors (VM): every kernel-side refusal in plain words: rings that
# cannot take a loop, a ring that has one, PID:FD that is not an io_uring,
# no permission, a verifier rejection, a pin name in use.
# usage: errors.sh TOOL RING_OWNER NOPS.bpf.o BAD.bpf.o GEOM_V2.bpf.o
set -u
T=$1 OWNER=$2 NOPS=$3 BAD=$4 GEOM_V2=$5
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/owner.sh"

start_owner nd no-defer
expect 1 'without IORING_SETUP_DEFER_TASKRUN' "$T" load "$NOPS" --ring "$ring"
start_owner sq sqpoll
expect 1 'uses SQPOLL' "$T" load "$NOPS" --ring "$ring"
start_owner io iopoll
expect 1 'uses IOPOLL' "$T" load "$NOPS" --ring "$ring"

# rings whose shape a loop cannot use: refused before loading, the owner
# not hung (before the check, a plain liburing owner's next enter never
# returned: the policy submitted from the SQ array and waited forever)
start_owner lu liburing
expect 1 "ring $ring was set up without IORING_SETUP_SQ_REWIND \(and IORING_SETUP_NO_SQARRAY\), which a BPF loop needs" \
	"$T" load "$NOPS" --ring "$ring" --pin t-lu
json_one 1 'j["errno"] == -95 and "without IORING_SETUP_SQ_REWIND" in j["error"]' \
	"$T" -j load "$NOPS" --ring "$ring" --pin t-lu
check "liburing owner: no policy attached" "$(grep BpfLoop "/proc/${ring%%:*}/fdinfo/${ring##*:}")" 'BpfLoop:[[:space:]]*0'
check "liburing owner: not hung, its NOP completes" "$(owner_cmd lu nop)" '^nop 1 res 0 user_data 42$'
check "liburing owner: enter returns" "$(owner_cmd lu enter)" '^enter 0 cq 0$'
[ ! -e /sys/fs/bpf/iouring-bpf/t-lu ] && echo "ok: nothing pinned for t-lu" ||
	{ echo "FAIL: t-lu pinned"; fails=$((fails + 1)); }
start_owner c32 cqe32
expect 1 "ring $ring uses 32-byte CQEs \(IORING_SETUP_CQE32\)" "$T" load "$NOPS" --ring "$ring"
check "cqe32 owner: not hung" "$(owner_cmd c32 nop)" '^nop 1 res 0 user_data 42$'
# 128-byte SQEs: refused for a policy whose geometry cannot say so (it would
# write 64-byte SQEs), taken by one that can, which then runs right there
start_owner s128 sqe128
expect 1 "the ring has 128-byte SQEs \(IORING_SETUP_SQE128\); global 'iou_geom' \(56 bytes\) has no sqe_size" \
	"$T" load "$GEOM_V2" --ring "$ring" --pin t-s128-old
check "sqe128 owner: no policy attached" "$(grep BpfLoop "/proc/${ring%%:*}/fdinfo/${ring##*:}")" 'BpfLoop:[[:space:]]*0'
check "sqe128 owner: not hung" "$(owner_cmd s128 nop)" '^nop 1 res 0 user_data 42$'
expect 0 "attached to ring $ring" "$T" load "$NOPS" --ring "$ring" --pin t-s128 \
	--set nop_total=64 --set nop_inflight=8
check "sqe128 owner runs the policy" "$(owner_cmd s128 enter)" '^enter 0 cq 0$'
expect 0 'nop_completed=64 nop_bad_cqes=0' "$T" list
expect 0 'detached and unpinned' "$T" unload t-s128

start_owner a loop
pid=${ring%%:*}
expect 1 "no process 999999" "$T" load "$NOPS" --ring 999999:3
expect 1 "process $pid has no fd 99" "$T" load "$NOPS" --ring "$pid:99"
expect 1 "$pid:0 is not an io_uring \(it is " "$T" load "$NOPS" --ring "$pid:0"

# pidfd_getfd() as an unprivileged user on root's process. nobody may not
# reach the checkout (one in a 0700 directory: under /root, mktemp -d), so
# it runs copies of the tool and the object from a directory of its own that
# it can read: the refusal it meets is then the ptrace one, wherever the
# tree lives.
pub=$(mktemp -d)
chmod 755 "$pub"
install -m 755 "$T" "$pub/iouring-bpf"
install -m 644 "$NOPS" "$pub/nops.bpf.o"
expect 1 'not allowed to take fd .* rights of ptrace attach' \
	setpriv --reuid=65534 --regid=65534 --clear-groups "$pub/iouring-bpf" load "$pub/nops.bpf.o" \
	--ring "$ring"
rm -rf "$pub"

# verifier: the end of the log, not all of it; -d gives all of it
expect 1 'the verifier rejected the policy' "$T" load "$BAD" --ring "$ring" --pin t-bad
out=$("$T" load "$BAD" --ring "$ring" --pin t-bad 2>&1)
lines=$(wc -l <<<"$out")
if grep -q 'end of the verifier log' <<<"$out" && grep -qi 'invalid\|access\|bounds' <<<"$out" &&
   [ "$lines" -le 25 ]; then echo "ok: verifier log tail ($lines lines)"; else
	echo "FAIL: verifier tail ($lines lines): $out"; fails=$((fails + 1)); fi
full=$("$T" -d load "$BAD" --ring "$ring" --pin t-bad 2>&1 | wc -l)
if [ "$full" -gt "$lines" ]; then echo "ok: -d prints more ($full lines)"; else
	echo "FAIL: -d printed $full lines, no more than $lines"; fails=$((fails + 1)); fi

# a ring that already has a policy; a pin name in use
expect 0 'pinned at' "$T" load "$NOPS" --ring "$ring" --pin t-first
expect 1 "ring $ring already has a policy attached" "$T" load "$NOPS" --ring "$ring" --pin t-second
start_owner b loop
expect 1 "pin name 't-first' is already used" "$T" load "$NOPS" --ring "$ring" --pin t-first
expect 0 'detached and unpinned' "$T" unload t-first

# a PIN_ROOT that is not on bpffs: refused before anything is attached, and
# no bpffs is mounted over its parent (only /sys/fs/bpf is ever mounted)
pt=$(mktemp -d)
mkdir "$pt/parent"
IOURING_BPF_PIN_ROOT=$pt/parent/x expect 1 "$pt/parent is not on a BPF file system" \
	"$T" load "$NOPS" --ring "$ring" --pin t-mnt
if [ "$(stat -f -c %t "$pt/parent")" != cafe4a11 ] && [ ! -e "$pt/parent/x" ]; then
	echo "ok: nothing mounted on $pt/parent, nothing created"
else
	echo "FAIL: $pt/parent: $(stat -f -c %T "$pt/parent"), $(ls -a "$pt/parent")"
	fails=$((fails + 1)); umount "$pt/parent" 2>/dev/null
fi
check "the refused ring has no policy" "$(grep BpfLoop /proc/${ring%%:*}/fdinfo/${ring##*:})" 'BpfLoop:[[:space:]]*0'
check "the refused ring's owner runs as before" "$(owner_cmd b nop)" '^nop 1 res 0 user_data 42$'
# a bpffs PIN_ROOT holding a symlink and a directory without our record:
# unload removes neither (nor what the symlink points to); list skips them
mkdir "$pt/bpf" "$pt/real" && mount -t bpf bpf "$pt/bpf"
echo keep >"$pt/real/link"; echo keep >"$pt/real/meta"
ln -s "$pt/real" "$pt/bpf/sym"; mkdir "$pt/bpf/nometa"
IOURING_BPF_PIN_ROOT=$pt/bpf expect 1 "$pt/bpf/sym is not a pin directory \(a symbolic link\)" \
	"$T" unload sym
IOURING_BPF_PIN_ROOT=$pt/bpf expect 1 "$pt/bpf/nometa has no attachment record of iouring-bpf" \
	"$T" unload nometa
IOURING_BPF_PIN_ROOT=$pt/bpf expect 0 "nometa: not a pin directory of iouring-bpf" "$T" list
IOURING_BPF_PIN_ROOT=$pt/bpf json_one 0 'j == []' "$T" -j list
if [ -L "$pt/bpf/sym" ] && [ -d "$pt/bpf/nometa" ] && [ "$(cat "$pt/real/link" "$pt/real/meta")" = "keep
keep" ]; then echo "ok: symlink, its target's files and the foreign directory all stay"; else
	echo "FAIL: unload removed something: $(ls -la "$pt/bpf" "$pt/real")"; fails=$((fails + 1)); fi
# ...and pins there work as under /sys/fs/bpf
IOURING_BPF_PIN_ROOT=$pt/bpf expect 0 "pinned at $pt/bpf/t-own" "$T" load "$NOPS" --ring "$ring" --pin t-own
IOURING_BPF_PIN_ROOT=$pt/bpf expect 0 't-own +[0-9]+:[0-9]+ +attached' "$T" list
IOURING_BPF_PIN_ROOT=$pt/bpf expect 0 'detached and unpinned' "$T" unload t-own
[ ! -e "$pt/bpf/t-own" ] && echo "ok: t-own removed" || { echo "FAIL: t-own left"; fails=$((fails + 1)); }
umount "$pt/bpf"; rm -rf "$pt"
[ -z "$(ls /sys/fs/bpf/iouring-bpf/)" ] && echo "ok: nothing left pinned" ||
	{ echo "FAIL: left pinned: $(ls /sys/fs/bpf/iouring-bpf/)"; fails=$((fails + 1)); }
finish
