#!/usr/bin/env bash
# vblk/uapi-fallback (host): liburing-bpf.h's fallback definitions of the
# passthrough UAPI (for systems whose <linux/virtio_blk.h> lacks them) are
# the patched kernel's: the same struct virtblk_uring_cmd layout (sizes and
# offsets of every field, 32 bytes) and the same constants, compiled once
# against the patched UAPI headers and once against the system's; and the
# "From C" program of docs/virtio-blk.md and the header (as C11 with -Wall -Wextra
# -Werror, and as C++) compile against the system's headers alone.
set -u
fail() { echo "FAIL: $*"; exit 1; }
src=$IOURING_BPF_SRC
uapi=$IOURING_BPF_BUILD/tools/root/include
here=$src/selftests/vblk
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
inc=(-I"$src/liburing-bpf/include" -I"$src/bpf/include")
flags=(-std=c11 -Wall -Wextra -Werror)

grep -q VIRTBLK_URING_CMD_IO "$uapi/linux/virtio_blk.h" ||
	fail "$uapi/linux/virtio_blk.h (the patched kernel's) has no VIRTBLK_URING_CMD_IO"
cc "${flags[@]}" -isystem "$uapi" "${inc[@]}" -o "$tmp/kernel" "$here/uapi_layout.c" ||
	fail "uapi_layout.c against the patched UAPI headers"
cc "${flags[@]}" "${inc[@]}" -o "$tmp/system" "$here/uapi_layout.c" ||
	fail "uapi_layout.c against the system's headers"
"$tmp/kernel" > "$tmp/kernel.txt" && "$tmp/system" > "$tmp/system.txt" || fail "running them"
echo "patched kernel headers:"; cat "$tmp/kernel.txt"
echo "system headers:"; cat "$tmp/system.txt"
grep -qx "from uapi" "$tmp/kernel.txt" || fail "the patched header did not define the UAPI"
grep -qx "from fallback" "$tmp/system.txt" ||
	echo "note: the system's <linux/virtio_blk.h> has the passthrough UAPI; the fallback was not compiled"
grep -qx "size 32 align 8" "$tmp/kernel.txt" || fail "struct virtblk_uring_cmd is not 32 bytes"
diff <(tail -n +2 "$tmp/kernel.txt") <(tail -n +2 "$tmp/system.txt") ||
	fail "the fallback definitions differ from the kernel's"

"$here/readme_block.sh" "$src/docs/virtio-blk.md" "$tmp/vblk_read.c" || fail "extracting docs/virtio-blk.md's example"
cc "${flags[@]}" "${inc[@]}" -c -o "$tmp/vblk_read.o" "$tmp/vblk_read.c" ||
	fail "docs/virtio-blk.md's example does not compile against the system's headers"
if command -v c++ > /dev/null; then
	printf '#include <liburing-bpf.h>\nint main() { return sizeof(struct virtblk_uring_cmd) != 32; }\n' > "$tmp/cxx.cc"
	c++ -std=c++11 -Wall -Wextra -Werror "${inc[@]}" -o "$tmp/cxx" "$tmp/cxx.cc" &&
		"$tmp/cxx" || fail "liburing-bpf.h as C++ (system headers)"
	c++ -std=c++11 -Wall -Wextra -Werror -isystem "$uapi" "${inc[@]}" -o "$tmp/cxx2" "$tmp/cxx.cc" &&
		"$tmp/cxx2" || fail "liburing-bpf.h as C++ (patched headers)"
	echo "liburing-bpf.h compiles as C++ against both"
fi
echo "fallback = kernel: layout and constants identical; docs/virtio-blk.md's example compiles (C11, system headers)"
