#!/usr/bin/env bash
# harness/custom-policy-build (host): the commands the docs give for
# building your own policy work as written. The test takes them from the
# documents (the fenced blocks after the "custom-policy-build: installed" and
# "custom-policy-build: build-tree" markers in docs/loop-and-library.md, and
# "custom-policy-build: ublk-null" in docs/ublk.md), installs into a scratch
# prefix, and runs them in a clean environment on two small policies: the
# minimal policy and the ublk null target. Each object must be a BPF object
# holding a sleepable loop_step program and an io_uring_bpf_ops struct_ops
# map, and the installed build must use only installed files.
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }

src=$IOURING_BPF_SRC
build=$IOURING_BPF_BUILD
# where each marked block lives
readme=$src/docs/loop-and-library.md
ublk_doc=$src/docs/ublk.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

# block MARKER [FILE]: the fenced block that follows the line
# <!-- custom-policy-build: MARKER ... in FILE (default: $readme); fail if
# there is none
block() {
	local file=${2:-$readme} out
	out=$(block_of "$1" "$file")
	[ -n "$out" ] || fail "no block after a custom-policy-build: $1 marker in $file"
	printf '%s\n' "$out"
}
block_of() {
	awk -v m="<!-- custom-policy-build: $1 " '
		index($0, m) == 1 { found = 1; next }
		found && !open && /^```/ { open = 1; next }
		open && /^```/ { exit }
		open { print }
		found && !open && NF { exit }	# prose between marker and block
	' "$2"
}

# set_vars SCRIPT NAME=VALUE...: replace the document's "NAME=..." line with
# the test's value; each must be there exactly once
set_vars() {
	local script=$1 kv name value n
	shift
	for kv in "$@"; do
		name=${kv%%=*} value=${kv#*=}
		n=$(grep -c "^$name=" "$script" || true)
		[ "$n" = 1 ] || fail "the document's block sets $name $n times, want once"
		NAME=$name VALUE=$value awk '
			index($0, ENVIRON["NAME"] "=") == 1 { print ENVIRON["NAME"] "=\"" ENVIRON["VALUE"] "\""; next }
			{ print }' "$script" > "$script.new"
		mv "$script.new" "$script"
	done
}

# check_object OBJ BPFTOOL: a BPF ELF object with the loop_step program and
# the struct_ops map of type io_uring_bpf_ops
check_object() {
	local obj=$1 bpftool=$2 header sections btf
	[ -s "$obj" ] || fail "$obj was not produced"
	# (whole outputs in variables: grep -q on a pipe would fail it under pipefail)
	header=$(llvm-readelf-19 -h "$obj") || fail "llvm-readelf-19 cannot read $obj"
	grep -Eq 'Machine:[[:space:]]*EM_BPF$' <<< "$header" || fail "$obj is not a BPF object: $header"
	sections=$(llvm-objdump-19 -h "$obj") || fail "llvm-objdump-19 cannot read $obj"
	grep -q ' struct_ops\.s/loop_step ' <<< "$sections" || fail "$obj has no struct_ops.s/loop_step program: $sections"
	grep -q ' \.struct_ops\.link ' <<< "$sections" || fail "$obj has no .struct_ops.link section: $sections"
	btf=$("$bpftool" btf dump file "$obj") || fail "$bpftool cannot read the BTF of $obj"
	grep -q "^\[[0-9]*\] STRUCT 'io_uring_bpf_ops' " <<< "$btf" || fail "$obj's BTF has no struct io_uring_bpf_ops"
	grep -q "DATASEC '\.struct_ops\.link'" <<< "$btf" || fail "$obj's BTF has no .struct_ops.link datasec"
}

# run_block MARKER POLICY SOURCE NAME=VALUE...: the document's block, with
# my_policy replaced by POLICY, run in an empty directory holding only
# POLICY.bpf.c, with a minimal environment (plus CCC_OVERRIDE_OPTIONS, which
# makes clang write a dependency list without changing the commands)
run_block() {
	local marker=$1 policy=$2 source=$3 dir
	shift 3
	dir=$tmp/$marker-$policy
	mkdir -p "$dir"
	block "$marker" > "$dir/cmds.sh"
	grep -q '^clang-19 ' "$dir/cmds.sh" || fail "no clang-19 command in the document's $marker block: $(cat "$dir/cmds.sh")"
	grep -q 'my_policy\.bpf\.c' "$dir/cmds.sh" || fail "the document's $marker block does not build my_policy.bpf.c"
	set_vars "$dir/cmds.sh" "$@"
	sed -i "s/my_policy/$policy/g" "$dir/cmds.sh"
	cp "$source" "$dir/$policy.bpf.c"
	echo "--- $marker, $policy:"
	cat "$dir/cmds.sh"
	(cd "$dir" && env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$dir" \
		CCC_OVERRIDE_OPTIONS=+-MD bash -euo pipefail cmds.sh) || fail "the document's $marker commands failed for $policy"
	[ -s "$dir/$policy.bpf.o" ] || fail "the document's $marker commands made no $policy.bpf.o"
}

policies=("my_policy:$src/examples/minimal/minimal.bpf.c"
	  "ublk_null:$src/examples/ublk_null/ublk_null.bpf.c")

# 1. after make install (cmake --install is what it runs)
cmake --install "$build/user" --prefix "$prefix" > "$tmp/install.log" ||
	{ cat "$tmp/install.log"; fail "cmake --install"; }
bpftool=$prefix/bin/iouring-bpf-bpftool
[ -x "$bpftool" ] || fail "no $bpftool installed"
for p in "${policies[@]}"; do
	name=${p%%:*}
	run_block installed "$name" "${p#*:}" PREFIX="$prefix"
	obj=$tmp/installed-$name/$name.bpf.o
	check_object "$obj" "$bpftool"
	# only installed files went in: clang's dependency list (asked for
	# through CCC_OVERRIDE_OPTIONS, the commands are as written) names the
	# installed vmlinux.h and libbpf headers, and nothing else
	dep=$tmp/installed-$name/$name.bpf.d
	[ -s "$dep" ] || fail "$name: clang wrote no dependency list"
	sed -e 's/^[^:]*://' -e 's/\\$//' "$dep" | tr -s ' ' '\n' | grep -v '^$' |
		grep -vxF "$name.bpf.c" > "$tmp/$name.deps" || true
	for h in vmlinux.h ring.bpf.h sys/bpf/bpf_helpers.h sys/bpf/bpf_tracing.h sys/bpf/bpf_core_read.h; do
		grep -qxF "$prefix/include/iouring_bpf/$h" "$tmp/$name.deps" ||
			fail "$name: not built with the installed iouring_bpf/$h: $(cat "$tmp/$name.deps")"
	done
	other=$(awk -v p="$prefix/include/iouring_bpf/" 'index($0, p) != 1' "$tmp/$name.deps")
	[ -z "$other" ] || fail "$name: headers not from the installed files: $other"
	echo "installed: $name.bpf.o has loop_step and io_uring_bpf_ops, built from $prefix only"
done

# the ublk section repeats the installed commands for ublk_null: they must
# be the same commands
block ublk-null "$ublk_doc" > "$tmp/ublk-null.sh"
grep -q '^clang-19 ' "$tmp/ublk-null.sh" || fail "no clang-19 command in the document's ublk-null block"
block installed | sed 's/my_policy/ublk_null/g' > "$tmp/installed-ublk_null.sh"
while IFS= read -r line; do
	case $line in "iouring-bpf "*) continue ;; esac
	grep -qxF -- "$line" "$tmp/installed-ublk_null.sh" ||
		fail "the document's ublk-null block differs from the installed block: $line"
done < "$tmp/ublk-null.sh"

# 2. from the build tree, without installing
for p in "${policies[@]}"; do
	name=${p%%:*}
	run_block build-tree "$name" "${p#*:}" SRC="$src" BUILD="$build"
	check_object "$tmp/build-tree-$name/$name.bpf.o" "$build/tools/bin/bpftool"
	echo "build tree: $name.bpf.o has loop_step and io_uring_bpf_ops"
done
exit 0
