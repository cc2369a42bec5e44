#!/usr/bin/env bash
# loader/args (host): argument parsing, help, and every error that needs no
# io_uring_bpf_ops kernel: bad objects, bad --set, missing pins; JSON output.
# usage: args.sh TOOL NOPS.bpf.o GLOBALS.bpf.o NO_OPS.bpf.o COMPLETION MANPAGE
set -u
T=$1 NOPS=$2 GLOBALS=$3 NO_OPS=$4 COMPLETION=$5 MANPAGE=$6
. "$(dirname "$0")/lib.sh"
IOURING_BPF_PIN_ROOT=$(mktemp -d)/iouring-bpf
export IOURING_BPF_PIN_ROOT
trap 'rm -rf "$(dirname "$IOURING_BPF_PIN_ROOT")"' EXIT

# help and usage
expect 0 'usage: .* COMMAND' "$T" --help
expect 0 '^iouring-bpf [0-9]' "$T" --version
for c in load list unload inspect sandbox; do expect 0 "usage: .*$c" "$T" "$c" --help; done
expect 2 'usage:' "$T"
expect 2 "unknown command 'frob'" "$T" frob
expect 2 "unknown option '--frob'" "$T" --frob list
expect 2 'which object' "$T" load --ring
expect 2 '--ring is required' "$T" load "$NOPS"
expect 2 "'12:x' is not PID:FD" "$T" load "$NOPS" --ring 12:x
expect 2 "'0:3' is not PID:FD" "$T" load "$NOPS" --ring 0:3
expect 2 '--set wants VAR=VALUE' "$T" load "$NOPS" --ring --set nop_total
expect 2 '--pin needs --ring PID:FD' "$T" load "$NOPS" --ring --pin x
expect 2 '--entries wants a power of two' "$T" load "$NOPS" --ring --entries 3
expect 2 '--entries is for a ring of our own' "$T" load "$NOPS" --ring 1:3 --entries 8
expect 2 "pin name 'a/b' must be" "$T" load "$NOPS" --ring 1:3 --pin a/b
expect 2 'one object only' "$T" load "$NOPS" "$NOPS" --ring
expect 2 'no arguments expected' "$T" list extra
expect 2 'one NAME expected' "$T" unload
# every command parses with getopt_long(): --opt=value too; --ring's value
# is optional, given as the next word or after '='
expect 2 "'12:x' is not PID:FD" "$T" load "$NOPS" --ring=12:x
expect 2 "'x.o' is not PID:FD" "$T" load --ring x.o
expect 2 '--pin needs --ring PID:FD' "$T" load "$NOPS" --ring --pin=x
expect 2 '--entries is for a ring of our own' "$T" load "$NOPS" --ring=1:3 --entries=8
expect 2 '--pin needs a value' "$T" load "$NOPS" --ring 1:3 --pin
expect 2 "unknown option '--frob'" "$T" load "$NOPS" --ring --frob
expect 2 "--pid: not a process id 'abc'" "$T" inspect --pid=abc
expect 2 'unknown target' "$T" ublk add --target=nope --file=/etc/hostname
expect 2 "--path wants 'daemon' or 'kernel'" "$T" ublk add --target loop --path=both
expect 2 'one ID expected' "$T" ublk del --force
expect 2 "unexpected '2'" "$T" ublk del 1 2
expect 2 "sandbox: unknown option '--frob'" "$T" sandbox --frob -- true
expect 2 'sandbox: --allow needs a value' "$T" sandbox --allow
expect 2 '--profile must come first' "$T" sandbox --allow nop --profile x.json -- true
expect 1 'profile /nonexistent.json: No such file or directory' "$T" sandbox --profile=/nonexistent.json -- true
# a program that cannot run: the reason, whatever the kernel (no rules to register)
expect 1 'cannot run /nonexistent/prog: No such file or directory' "$T" sandbox -- /nonexistent/prog

# objects
expect 1 'not a BPF ELF object' "$T" load /etc/passwd --ring
expect 1 'No such file' "$T" load /nonexistent.bpf.o --ring
expect 1 'no io_uring_bpf_ops map' "$T" load "$NO_OPS" --ring

# --set
expect 1 "has no global 'nope'" "$T" load "$NOPS" --ring --set nope=1
expect 1 'is const, not const volatile' "$T" load "$GLOBALS" --ring --set g_const=1
# inspect calls statics not settable: --set refuses them too
expect 0 'g_static +\.bss +u32 +static' "$T" inspect "$GLOBALS"
expect 1 "global 'g_static' is static: private to the policy" "$T" load "$GLOBALS" --ring --set g_static=1
expect 1 "'4294967296' does not fit global 'nop_inflight' \(unsigned 32-bit" \
	"$T" load "$NOPS" --ring --set nop_inflight=4294967296
expect 1 "'-1' does not fit" "$T" load "$NOPS" --ring --set nop_total=-1
expect 1 "'abc' is not an integer" "$T" load "$NOPS" --ring --set nop_total=abc
expect 1 "'iou_geom' is not an integer" "$T" load "$NOPS" --ring --set iou_geom=1

# a kernel without io_uring_bpf_ops: a BTF without the type (an object's)...
IOURING_BPF_KERNEL_BTF=$NO_OPS expect 1 'has no io_uring_bpf_ops: io_uring BPF policies need' \
	"$T" load "$NOPS" --ring --set nop_total=10
# ...and this host's own kernel, when it lacks it (the usual case)
if ! "$T" inspect "$NOPS" | grep -q 'has io_uring_bpf_ops: yes'; then
	expect 1 "this kernel \($(uname -r)\) has no io_uring_bpf_ops" "$T" load "$NOPS" --ring
fi

# the default pin name (the object's file name) is checked as --pin is,
# before anything is loaded: never truncated
long=$(dirname "$IOURING_BPF_PIN_ROOT")/$(printf 'n%.0s' {1..65}).bpf.o
cp "$NOPS" "$long"
expect 1 "the pin name from the object's file name \('nnnnnnnnnnnnnnnnnnnnnnnn\.\.\.', 65 characters\) is longer than 64: choose one with --pin NAME" \
	"$T" load "$long" --ring 1:3
json_one 1 'j["errno"] == -36 and "longer than 64" in j["error"]' "$T" -j load "$long" --ring 1:3
rm -f "$long"

# pins
expect 1 "no pinned policy 'ghost'" "$T" unload ghost
expect 1 "'a/b' is not a pin name" "$T" unload a/b
expect 0 'NAME +RING +STATE' "$T" list
json_check 'j == []' "$T" --json list

# unload removes only a pin directory of ours on bpffs: a PIN_ROOT elsewhere
# (regular files, a symlink to a directory with files) loses nothing
v=$(mktemp -d)
mkdir -p "$v/x/victim" "$v/real"
for f in link meta bss data a; do echo keep >"$v/x/victim/$f"; echo keep >"$v/real/$f"; done
ln -s "$v/real" "$v/x/victim2"
before=$(cd "$v" && find . -exec stat -c '%n %F %s' {} + | sort)
IOURING_BPF_PIN_ROOT=$v/x expect 1 "$v/x is not on a BPF file system \(bpffs\)" "$T" unload victim
IOURING_BPF_PIN_ROOT=$v/x expect 1 "$v/x is not on a BPF file system" "$T" unload victim2
IOURING_BPF_PIN_ROOT=$v/x/victim2 expect 1 "is not on a BPF file system" "$T" unload link
IOURING_BPF_PIN_ROOT=$v/x json_one 1 'j["errno"] == -20 and "not on a BPF file system" in j["error"]' \
	"$T" -j unload victim
IOURING_BPF_PIN_ROOT=$v/x json_one 1 'j["errno"] == -20 and "not on a BPF file system" in j["error"]' \
	"$T" -j list
after=$(cd "$v" && find . -exec stat -c '%n %F %s' {} + | sort)
if [ "$before" = "$after" ] && ! grep -q " $v" /proc/self/mounts; then
	echo "ok: nothing under a non-bpffs PIN_ROOT removed, nothing mounted"
else
	echo "FAIL: the unload attempts changed $v:"; diff <(echo "$before") <(echo "$after")
	fails=$((fails + 1))
fi
rm -rf "$v"

# JSON: errors, inspect
json_check 'j["errno"] == -22 and "not a BPF ELF" in j["error"]' "$T" -j load /etc/passwd --ring
json_check '[p["name"] for p in j["programs"]] == ["nops_step"] and
	j["struct_ops"][0]["type"] == "io_uring_bpf_ops" and
	any(g["name"] == "nop_total" and g["settable"] and g["default"] == 1000 for g in j["globals"]) and
	any(k["name"] == "bpf_io_uring_submit_sqes" for k in j["kfuncs"])' "$T" -j inspect "$NOPS"
json_check 'any(g["name"] == "g_const" and not g["settable"] and "const" in g["why_not"] for g in j["globals"])' \
	"$T" --json inspect "$GLOBALS"
expect 0 'nop_total +\.rodata +u32 +settable +default 1000' "$T" inspect "$NOPS"
# u64 globals are unsigned: ~0ULL is 18446744073709551615, not -1 (text and JSON)
expect 0 'g_u64 +\.rodata +u64 +settable +default 18446744073709551615$' "$T" inspect "$GLOBALS"
expect 0 'g_s64 +\.rodata +s64 +settable +default -4$' "$T" inspect "$GLOBALS"
json_check 'any(g["name"] == "g_u64" and g["default"] == 18446744073709551615 for g in j["globals"]) and
	any(g["name"] == "g_s64" and g["default"] == -4 for g in j["globals"])' "$T" -j inspect "$GLOBALS"

# ublk: usage errors (exit 2) and refusals made before any device exists
# (this host has no ublk driver: the VM tests cover the rest)
for c in "" add list del; do expect 0 "usage: .*ublk" "$T" ublk $c --help; done
expect 2 'which subcommand' "$T" ublk
expect 2 'unknown subcommand' "$T" ublk frob
expect 2 "unknown option '--frob'" "$T" ublk --frob
expect 2 '--target is required' "$T" ublk add
expect 2 'unknown target' "$T" ublk add --target nope --file /etc/hostname
expect 2 'exactly one --file' "$T" ublk add --target loop-user
expect 2 'exactly two' "$T" ublk add --target split --file /etc/hostname
expect 2 'needs --policy' "$T" ublk add --target bpf --size 1M
expect 2 '--policy is for --target bpf' "$T" ublk add --target loop --file /etc/hostname --policy x
expect 2 'not a multiple of 512' "$T" ublk add --target bpf --policy "$NOPS" --size 1000
expect 2 'queues' "$T" ublk add --target loop --file /etc/hostname --queues 5
expect 2 'depth' "$T" ublk add --target loop --file /etc/hostname --depth 129
ublk_tmp=$(mktemp -d)
head -c 1000 /dev/zero > "$ublk_tmp/odd.img"
expect 1 'No such file' "$T" ublk add --target loop --file "$ublk_tmp/none.img"
expect 1 'is 1000 bytes, not a multiple of 512' "$T" ublk add --target loop --file "$ublk_tmp/odd.img"
expect 1 'not a regular file or a block device' "$T" ublk add --target loop --file "$ublk_tmp"
expect 1 'is not a ublk policy' "$T" ublk add --target bpf --policy "$NOPS" --size 1M
json_check 'j["errno"] == -2 and "No such file" in j["error"]' \
	"$T" -j ublk add --target loop --file "$ublk_tmp/none.img"
rm -rf "$ublk_tmp"

# --json: always exactly one JSON document, in valid UTF-8 (strict decoding)
J='j["errno"] == -22 and j["usage"] is True'
json_one 2 "$J and 'which object' in j['error']" "$T" -j load --ring
json_one 2 "$J and \"unknown option '--frob'\" in j['error']" "$T" --json --frob list
json_one 2 "$J and \"unknown option '--frob'\" in j['error']" "$T" --frob --json list
json_one 2 "$J and 'which command' in j['error']" "$T" -j
json_one 2 "$J and \"unknown command 'frob'\" in j['error']" "$T" -j frob
json_one 2 "$J and 'no arguments expected' in j['error']" "$T" -j list extra
json_one 2 "$J and 'one NAME expected' in j['error']" "$T" -j unload
json_one 2 "$J and 'one object expected' in j['error']" "$T" -j inspect
json_one 2 "$J and 'which subcommand' in j['error']" "$T" -j ublk
json_one 2 "$J and '--target is required' in j['error']" "$T" -j ublk add
json_one 2 "$J and 'no arguments expected' in j['error']" "$T" -j ublk list x
json_one 2 "$J and \"unknown option '--frob'\" in j['error']" "$T" sandbox --frob -j -- true
json_one 1 'j["errno"] == -2 and "cannot run /nonexistent/prog: No such file" in j["error"]' \
	"$T" --json sandbox -- /nonexistent/prog
json_one 0 'j["version"] and j["libbpf"]' "$T" -j --version
# usage errors stay text without --json
expect 2 '^iouring-bpf load: which object' "$T" load --ring
# non-UTF-8 bytes and control characters in names: escaped, U+FFFD for bad bytes
odd=$(dirname "$IOURING_BPF_PIN_ROOT")/$'bad\xff\xc3(\x01\x7f\xed\xa0\x80tab\there\nnl\xe2\x82\xac'.bpf.o
cp "$NOPS" "$odd"
json_one 0 'j["object"].startswith("/") and "bad\ufffd\ufffd(\x01\x7f\ufffd\ufffd\ufffdtab\there\nnl\u20ac" in j["object"]' \
	"$T" -j inspect "$odd"
json_one 1 '"bad\ufffd" in j["error"] and j["errno"] == -2' "$T" -j load "${odd%.bpf.o}.none" --ring
json_one 1 'j["errno"] == -22 and "not a pin name" in j["error"] and "\ufffd" in j["error"]' \
	"$T" -j unload $'x\xff'
# list: the list, or an error object; never "[]" and then an error
json_one 0 'j == []' "$T" -j list
IOURING_BPF_PIN_ROOT=/etc/hostname json_one 1 'j["errno"] == -20 and "/etc/hostname" in j["error"]' \
	"$T" -j list
# ublk list (no driver on this host, or devices): one document either way
if [ -e /dev/ublk-control ]; then json_one 0 'isinstance(j, list)' "$T" -j ublk list; else
	json_one 1 'j["errno"] == -19' "$T" -j ublk list; fi

# man page and bash completion
if man -l "$MANPAGE" 2>/dev/null | grep -q 'pidfd_getfd'; then
	echo "ok: man page renders"
else
	echo "FAIL: man -l $MANPAGE does not render or lacks pidfd_getfd"; fails=$((fails + 1))
fi
# shellcheck disable=SC1090
. "$COMPLETION"
COMP_WORDS=(iouring-bpf lo); COMP_CWORD=1; _iouring_bpf
if [ "${COMPREPLY[*]}" = load ]; then echo "ok: completes 'lo' to load"; else
	echo "FAIL: completion of 'lo': ${COMPREPLY[*]}"; fails=$((fails + 1)); fi
COMP_WORDS=(iouring-bpf load x.bpf.o --r); COMP_CWORD=3; _iouring_bpf
if [ "${COMPREPLY[*]}" = --ring ]; then echo "ok: completes --r to --ring"; else
	echo "FAIL: completion of '--r': ${COMPREPLY[*]}"; fails=$((fails + 1)); fi
finish
