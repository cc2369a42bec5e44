#!/usr/bin/env bash
# lib/packaging (host): liburing-bpf installs as a shared + static library
# with a pkg-config file; the shared object exports exactly the symbols of
# the version map, each documented by a man page, and a program builds
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

exported=$(nm -D --defined-only "$so" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | sort)
mapped=$(grep -oE 'iouring_bpf_[a-z_]+' "$src/liburing-bpf/liburing-bpf.map" | sort)
[ "$exported" = "$mapped" ] || fail "exports differ from the map: $(diff <(echo "$mapped") <(echo "$exported") | tr '\n' ' ')"
nm -D "$so" | grep -q 'LIBURING_BPF_0.1' || fail "symbols are not versioned"
for f in $mapped; do
	[ -f "$dest/usr/share/man/man3/$f.3" ] || fail "no man page for $f"
	grep -q "$f" "$src/liburing-bpf/include/liburing-bpf.h" || fail "$f not in liburing-bpf.h"
done
echo "$(echo "$mapped" | wc -l) exported symbols, all versioned, all with man pages"

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
# installed under $dest, not the configured prefix: derive it from the .pc path
flags=$(PKG_CONFIG_PATH=$pc:$IOURING_BPF_BUILD/tools/root/lib/pkgconfig pkg-config --define-prefix --cflags --libs liburing-bpf) ||
	fail "pkg-config does not know liburing-bpf"
cc -std=c11 -Wall -Werror -o "$dest/t" "$dest/t.c" -I"$IOURING_BPF_BUILD/tools/root/include" $flags \
	-Wl,-rpath,"$(dirname "$so")" -Wl,-rpath,"$IOURING_BPF_BUILD/tools/root/lib" ||
	fail "a program does not build against the installed library"
"$dest/t" || fail "the program built against the installed library failed"
echo "a program built with pkg-config --cflags --libs liburing-bpf runs"
exit 0
