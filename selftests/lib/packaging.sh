#!/usr/bin/env bash
# lib/packaging (host): liburing-bpf installs as a shared + static library
# with a pkg-config file; the shared object exports exactly the symbols of
# the version map (libbpf inside it stays hidden), each documented by a man page, and a program builds
# against the installed copy with pkg-config alone.
set -u
fail() { echo "FAIL: $*"; exit 1; }
src=$IOURING_BPF_SRC
user=$IOURING_BPF_BUILD/user
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT

cmake --install "$user" --prefix "$dest/usr" > /dev/null || fail "cmake --install"
so=$(ls "$dest"/usr/lib*/liburing-bpf.so.0.* 2>/dev/null | head -n1)
[ -n "$so" ] || fail "no liburing-bpf.so.0.* installed"
[ -f "$(dirname "$so")/liburing-bpf.a" ] || fail "no liburing-bpf.a installed"

# map_nodes MAP: "SYMBOL NODE" for every symbol a node of the version map exports
map_nodes() {
	awk '/^[A-Za-z_][A-Za-z0-9_.]* *\{/ { node = $1 }
	     /^[ \t]*[A-Za-z_][A-Za-z0-9_]* *;/ && node != "" {
		sym = $0; gsub(/[ \t;]/, "", sym); if (sym != "local:" && sym != "global:") print sym, node }
	     /^}/ { node = "" }' "$1" | sort
}
# so_versions SO: "SYMBOL NODE" for every symbol SO defines and exports; NODE
# is "-" for an unversioned symbol, "@NODE" for a non-default version
so_versions() {
	readelf --dyn-syms -W "$1" | awk '$1 ~ /^[0-9]+:$/ && $5 != "LOCAL" && $7 != "UND" && $7 != "ABS" {
		name = $8; node = "-"
		if (name ~ /@@/) { node = name; sub(/^[^@]*@@/, "", node) }
		else if (name ~ /@/) { node = name; sub(/^[^@]*@/, "@", node) }
		sub(/@.*/, "", name); print name, node }' | sort
}
# check_versions SO MAP: SO exports exactly MAP's symbols, each with the
# (default) version of the node MAP lists it in
check_versions() {
	local want got
	want=$(map_nodes "$2")
	got=$(so_versions "$1")
	[ -n "$want" ] || { echo "no symbols in $2"; return 1; }
	[ "$got" = "$want" ] && return 0
	echo "exports and versions differ from the map (< map, > library):" \
		"$(diff <(echo "$want") <(echo "$got") | grep '^[<>]' | tr '\n' ' ')"
	return 1
}

map=$src/liburing-bpf/liburing-bpf.map
mapped=$(map_nodes "$map" | cut -d' ' -f1)
msg=$(check_versions "$so" "$map") || fail "$msg"

# the check itself: libraries with one symbol unversioned, one in the wrong
# node, or no versions at all are refused (the map says a and b are in 0.1,
# c in 0.2)
printf 'V_0.1 {\n\tglobal:\n\t\tt_a;\n\t\tt_b;\n\tlocal:\n\t\t*;\n};\n\nV_0.2 {\n\tglobal:\n\t\tt_c;\n} V_0.1;\n' > "$dest/want.map"
printf 'int t_a(void) { return 1; }\nint t_b(void) { return 2; }\nint t_c(void) { return 3; }\n' > "$dest/v.c"
printf 'V_0.1 { global: t_a; };\nV_0.2 { global: t_c; } V_0.1;\n' > "$dest/unversioned.map"
printf 'V_0.1 { global: t_a; t_b; t_c; local: *; };\n' > "$dest/wrong-node.map"
for bad in unversioned wrong-node none want; do
	ldflags=-Wl,--version-script="$dest/$bad.map"
	[ $bad = none ] && ldflags=
	cc -shared -fPIC -o "$dest/$bad.so" "$dest/v.c" $ldflags || fail "building $bad.so"
	if [ $bad = want ]; then
		msg=$(check_versions "$dest/$bad.so" "$dest/want.map") ||
			fail "the version check refuses a correct library: $msg"
	else
		check_versions "$dest/$bad.so" "$dest/want.map" > /dev/null &&
			fail "the version check accepts a library with $bad symbols: $(so_versions "$dest/$bad.so" | xargs)"
	fi
done
for f in $mapped; do
	[ -f "$dest/usr/share/man/man3/$f.3" ] || fail "no man page for $f"
	grep -q "$f" "$src/liburing-bpf/include/liburing-bpf.h" || fail "$f not in liburing-bpf.h"
done
echo "$(echo "$mapped" | wc -l) exported symbols, each with its node's version, all with man pages"

# what a policy is built with (README.md, "Building your own policy"):
# vmlinux.h of the patched kernel next to the BPF headers, libbpf's and the
# patched UAPI headers in a directory of their own, bpftool under its own name
inc=$dest/usr/include/iouring_bpf
grep -q '^struct io_uring_bpf_ops {' "$inc/vmlinux.h" 2>/dev/null ||
	fail "no vmlinux.h with struct io_uring_bpf_ops installed in $inc"
cmp -s "$inc/vmlinux.h" "$IOURING_BPF_BUILD/vmlinux.h" || fail "the installed vmlinux.h is not the build's"
for h in bpf/bpf_helpers.h bpf/bpf_helper_defs.h bpf/bpf_tracing.h bpf/bpf_core_read.h \
	bpf/bpf_endian.h bpf/libbpf.h bpf/bpf.h bpf/btf.h linux/types.h linux/io_uring.h \
	linux/ublk_cmd.h asm/types.h asm-generic/errno.h; do
	cmp -s "$inc/sys/$h" "$IOURING_BPF_BUILD/tools/root/include/$h" ||
		fail "$inc/sys/$h is missing or not the build's"
done
grep -q IORING_SETUP_SQ_REWIND "$inc/sys/linux/io_uring.h" ||
	fail "the installed linux/io_uring.h is not the patched kernel's"
bpftool=$dest/usr/bin/iouring-bpf-bpftool
"$bpftool" version 2>/dev/null | grep -q '^bpftool v' || fail "no working $bpftool installed"
cmp -s "$bpftool" "$IOURING_BPF_BUILD/tools/bin/bpftool" || fail "$bpftool is not the build's bpftool"
for p in bin/bpftool sbin/bpftool include/bpf include/linux include/asm include/asm-generic \
	include/vmlinux.h; do
	[ ! -e "$dest/usr/$p" ] || fail "installed $p, which would replace or shadow the distribution's"
done
echo "vmlinux.h, libbpf and UAPI headers and iouring-bpf-bpftool installed, none under a distribution's name"

pc=$(dirname "$so")/pkgconfig
cat > "$dest/t.c" <<'C'
#include <liburing-bpf.h>
int main(void)
{
	struct iouring_bpf_dag *dag = iouring_bpf_dag_new();
	int ok = dag && iouring_bpf_dag_add_edge(dag, 0, 1, IOU_DAG_ALWAYS) == -22;

	iouring_bpf_dag_free(dag);
	return !ok;
}
C
# installed under $dest, not the configured prefix: derive it from the .pc
# path; nothing of the build tree or the caller's environment is used
flags=$(env -i PATH=/usr/bin:/bin PKG_CONFIG_PATH="$pc" pkg-config --define-prefix --cflags --libs liburing-bpf) ||
	fail "pkg-config does not know liburing-bpf from the install alone"
env -i PATH=/usr/bin:/bin cc -std=c11 -Wall -Werror -o "$dest/t" "$dest/t.c" $flags \
	-Wl,-rpath,"$(dirname "$so")" || fail "a program does not build against the installed library"
"$dest/t" || fail "the program built against the installed library failed"
echo "a program built with pkg-config --cflags --libs liburing-bpf runs"
exit 0
