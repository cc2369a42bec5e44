#!/usr/bin/env bash
# harness/readme-commands (host): the commands README.md and docs/*.md show
# work as written. A fenced block whose previous line is
# <!-- readme-commands: host --> runs on the build machine; one marked
# <!-- readme-commands: vm --> needs the patched kernel.
#
# Host blocks run one by one with bash -e -o pipefail, each in a scratch view of the
# checkout (its top-level entries linked, build/ pointing at the build
# tree), HOME and TMPDIR in a scratch directory, and a clean environment.
# There `make` is a function: `make help` is the real one, `make install
# [PREFIX=DIR]` is what it runs once built (cmake --install of the build
# tree into DIR), and any other target, which would build or boot, fails
# the block. A block fails the test when it exits non-zero; the block, its
# place and its output are printed.
#
# A block that starts with a prompt ("$ " or "# ") is a transcript: the
# lines after the prompt are the commands (a line ending in \ goes on), the
# others are the output shown. A transcript must show some output, and one
# line of it at least must be among what the block printed, compared with
# every number masked (timings, PIDs and device numbers differ from run to
# run) and runs of blanks made one; a shown "..." line stands for lines
# left out. Other blocks run whole.
#
# usage: readme_commands.sh            run the host blocks
#        readme_commands.sh --vm OUT   write the VM blocks into one guest
#                                      script OUT instead, to run as root on
#                                      the patched kernel from the checkout:
#                                      scripts/vm -- bash OUT
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }

src=${IOURING_BPF_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${IOURING_BPF_BUILD:-$src/build}
vm_out=
case ${1:-} in
--vm) [ $# = 2 ] || fail "usage: $0 [--vm OUT]"; vm_out=$2 ;;
"") ;;
*) fail "usage: $0 [--vm OUT]" ;;
esac

docs=("$src/README.md")
for d in "$src"/docs/*.md; do [ -f "$d" ] && docs+=("$d"); done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# extract: one record per marked block into $tmp/blocks/N.{kind,where,sh}
mkdir "$tmp/blocks"
python3 - "$tmp/blocks" "$src" "${docs[@]}" <<'PY' || fail "the marked blocks could not be read"
import os, re, sys
out, src, docs = sys.argv[1], sys.argv[2], sys.argv[3:]
n = 0
bad = []
for doc in docs:
    lines = open(doc, encoding="utf-8").read().split("\n")
    rel = os.path.relpath(doc, src)
    i = 0
    while i < len(lines):
        m = re.match(r"^<!--\s*readme-commands:\s*(\S+)\s*-->\s*$", lines[i])
        if not m:
            if "readme-commands:" in lines[i] and lines[i].lstrip().startswith("<!--"):
                bad.append("%s:%d: malformed marker: %s" % (rel, i + 1, lines[i]))
            i += 1
            continue
        kind = m.group(1)
        if kind not in ("host", "vm"):
            bad.append("%s:%d: readme-commands: %s is neither host nor vm" % (rel, i + 1, kind))
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            bad.append("%s:%d: the marker is not followed by a fenced block" % (rel, i + 1))
            i += 1
            continue
        start = i + 2
        j = start
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        body = lines[start:j]
        first = next((l for l in body if l.strip()), "")
        cmds = []
        shown = []
        if first.startswith(("$ ", "# ")):
            prompt = first[:2]
            cont = False
            for l in body:
                if cont:
                    cmds.append(l)
                elif l.startswith(prompt):
                    cmds.append(l[2:])
                else:
                    if l.strip() and l.strip() != "...":
                        shown.append(" ".join(re.sub(r"[0-9]+", "N", l).split()))
                    continue
                cont = l.rstrip().endswith("\\")
            if not shown:
                bad.append("%s:%d: a transcript that shows no output" % (rel, start))
        else:
            cmds = body
        n += 1
        with open(os.path.join(out, "%03d.kind" % n), "w") as f:
            f.write(kind + "\n")
        with open(os.path.join(out, "%03d.where" % n), "w") as f:
            f.write("%s:%d\n" % (rel, start))
        with open(os.path.join(out, "%03d.sh" % n), "w") as f:
            f.write("\n".join(cmds).rstrip("\n") + "\n")
        with open(os.path.join(out, "%03d.shown" % n), "w") as f:
            f.write("".join(l + "\n" for l in shown))
        i = j + 1
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY

# masked: stdin with every number as N and runs of blanks as one, as the
# shown output is compared
masked() {
	sed -E 's/[0-9]+/N/g; s/[[:space:]]+/ /g; s/^ //; s/ $//'
}

kinds() { cat "$tmp"/blocks/*.kind 2>/dev/null | sort | uniq -c | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2 }'; }

# ---- --vm: one guest script
if [ -n "$vm_out" ]; then
	{
		echo '#!/usr/bin/env bash'
		echo "# generated by selftests/harness/readme_commands.sh --vm: the blocks of"
		echo "# README.md and docs/*.md marked readme-commands: vm, to run as root on the"
		echo "# patched kernel: scripts/vm -- bash $(printf %q "$vm_out")"
		echo "# (make shell's PATH; each block runs with bash -e -o pipefail in the checkout)"
		echo 'set -u'
		printf 'cd %q || exit 1\n' "$src"
		printf 'export PATH=%q:$PATH\n' "$build/user/loader:$build/user/examples:$build/user/selftests"
		echo 'passed=0 failed=0 out=$(mktemp)'
		declare -f masked
		echo '# block WHERE COMMANDS SHOWN: run COMMANDS; SHOWN, the output lines the'
		echo '# document shows (masked), must have one among those printed'
		echo 'block() {'
		echo '	echo "--- $1"'
		echo '	bash -e -o pipefail -c "$2" > "$out" 2>&1'
		echo '	local rc=$?'
		echo '	cat "$out"'
		echo '	if [ $rc != 0 ]; then echo "FAIL: $1 (exit status $rc)"; failed=$((failed + 1));'
		echo '	elif [ -n "$3" ] && ! masked < "$out" | grep -qFxf <(printf "%s\n" "$3"); then'
		echo '		echo "FAIL: $1: none of the output lines it shows was printed; shown (masked):"'
		echo '		printf "%s\n" "$3"; failed=$((failed + 1))'
		echo '	else echo "ok: $1"; passed=$((passed + 1)); fi'
		echo '}'
		for k in "$tmp"/blocks/*.kind; do
			b=${k%.kind}
			[ "$(cat "$k")" = vm ] || continue
			n=${b##*/}
			printf "block %q \"\$(cat <<'README_BLOCK_%s'\n" "$(cat "$b.where")" "$n"
			cat "$b.sh"
			printf "README_BLOCK_%s\n)\" \"\$(cat <<'README_SHOWN_%s'\n" "$n" "$n"
			cat "$b.shown"
			printf 'README_SHOWN_%s\n)"\n' "$n"
		done
		echo 'echo "readme-commands (vm): $passed passed, $failed failed"'
		echo '[ $failed = 0 ]'
	} > "$vm_out"
	chmod +x "$vm_out"
	echo "readme-commands: $(grep -c '^block ' "$vm_out") VM block(s) written to $vm_out"
	exit 0
fi

# ---- host: run each block
ls "$tmp"/blocks/*.kind > /dev/null 2>&1 || fail "no block marked readme-commands in README.md or docs/*.md"
[ -d "$build/user" ] || fail "no build tree at $build/user (build first)"

# the scratch view of the checkout: top-level entries linked, build/ the
# build tree's
view=$tmp/view
mkdir "$view"
for e in "$src"/* "$src"/.[!.]*; do
	[ -e "$e" ] || continue
	case ${e##*/} in build|.git) continue ;; esac
	ln -s "$e" "$view/${e##*/}"
done
ln -s "$build" "$view/build"

cat > "$tmp/prelude.sh" <<'EOF'
# make as the host blocks may use it (see readme_commands.sh)
make() {
	local target= prefix=/usr/local a
	for a; do
		case $a in
		PREFIX=*) prefix=${a#PREFIX=} ;;
		-*|*=*) ;;
		*) target=$a ;;
		esac
	done
	case $target in
	help) command make --no-print-directory help ;;
	install) cmake --install "$README_BUILD/user" --prefix "$prefix" > /dev/null ;;
	*) echo "readme-commands: 'make $*' builds or boots; it is not run on the host" >&2; return 1 ;;
	esac
}
EOF

ran=0 failed=0
for k in "$tmp"/blocks/*.kind; do
	b=${k%.kind}
	[ "$(cat "$k")" = host ] || continue
	n=${b##*/} where=$(cat "$b.where")
	scratch=$tmp/run-$n
	mkdir -p "$scratch/home" "$scratch/tmp"
	cat "$tmp/prelude.sh" "$b.sh" > "$scratch/block.sh"
	ran=$((ran + 1))
	if (cd "$view" && env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
		HOME="$scratch/home" TMPDIR="$scratch/tmp" LANG=C.UTF-8 TERM=dumb \
		README_BUILD="$build" bash -e -o pipefail "$scratch/block.sh") > "$scratch/out" 2>&1 < /dev/null; then
		if [ -s "$b.shown" ] && ! masked < "$scratch/out" | grep -qFxf "$b.shown"; then
			failed=$((failed + 1))
			echo "FAIL: $where: none of the output lines it shows was printed; its output:"
			sed 's/^/    /' "$scratch/out"
			continue
		fi
		echo "ok: $where"
		sed 's/^/    /' "$scratch/out" | head -n 5
	else
		rc=$?
		failed=$((failed + 1))
		echo "FAIL: $where (exit status $rc); the block:"
		sed 's/^/    /' "$b.sh"
		echo "  its output:"
		sed 's/^/    /' "$scratch/out"
	fi
done
[ $ran -gt 0 ] || fail "no block marked readme-commands: host"
echo "readme-commands: $ran host block(s) run, $failed failed (blocks marked: $(kinds))"
[ $failed = 0 ]
