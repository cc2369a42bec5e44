#!/usr/bin/env bash
# harness/deb-install (host, then a VM): make deb's packages install and
# work. scripts/deb builds the kernel packages (the kernel's bindeb-pkg) of
# the variant under test and the iouring-bpf package; they are unpacked into
# a scratch root (dpkg-deb -x), and the packaged kernel image is booted with
# nothing of the build tree: the installed tool runs a ready policy it finds
# in the package's LIBDIR/iouring-bpf, serves a ublk loop device with the
# installed ublk_loop policy, and pkg-config reads the installed .pc file.
set -u
fail() { echo "FAIL: $*"; exit 1; }
build=$IOURING_BPF_BUILD
variant=$IOURING_BPF_VARIANT
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

t0=$SECONDS
"$IOURING_BPF_SRC/scripts/deb" --build-dir "$build" --variant "$variant" > "$root.log" 2>&1 ||
	{ tail -n 30 "$root.log"; rm -f "$root.log"; fail "scripts/deb failed"; }
tail -n 3 "$root.log"
rm -f "$root.log"
echo "packages built in $((SECONDS - t0)) s"

release=$("$IOURING_BPF_SRC/kernel/build.sh" --build-dir "$build" release "$variant")
debs=("$build"/deb/linux-image-"$release"_*.deb "$build"/deb/linux-libc-dev_*.deb \
      "$build"/deb/iouring-bpf_*_amd64.deb)
for d in "${debs[@]}"; do
	[ -f "$d" ] || fail "no package $d"
	dpkg-deb -I "$d" > /dev/null || fail "$d is not a Debian package"
	dpkg-deb -x "$d" "$root/sys" || fail "unpacking $d"
	echo "$(dpkg-deb -f "$d" Package Version | tr '\n' ' ')($(du -k "$d" | cut -f1) KiB)"
done
image=$root/sys/boot/vmlinuz-$release
[ -f "$image" ] || fail "linux-image has no /boot/vmlinuz-$release"
cmp -s "$image" "$build/kernel/$variant/arch/x86/boot/bzImage" ||
	fail "the packaged image is not the $variant bzImage"
grep -q IORING_SETUP_SQ_REWIND "$root/sys/usr/include/linux/io_uring.h" ||
	fail "linux-libc-dev does not carry the patched io_uring UAPI"
u=$root/sys/usr
for f in bin/iouring-bpf bin/iouring-bpf-bpftool lib/liburing-bpf.so.0 lib/liburing-bpf.a \
	lib/pkgconfig/liburing-bpf.pc lib/iouring-bpf/nops.bpf.o lib/iouring-bpf/ublk_loop.bpf.o \
	include/liburing-bpf.h include/iouring_bpf/vmlinux.h include/iouring_bpf/ring.bpf.h \
	share/man/man3/iouring_bpf_policy_find.3 share/man/man8/iouring-bpf.8; do
	[ -e "$u/$f" ] || fail "the iouring-bpf package has no /usr/$f"
done
cflags=$(env -i PATH=/usr/bin:/bin PKG_CONFIG_PATH="$u/lib/pkgconfig" pkg-config --cflags liburing-bpf) ||
	fail "pkg-config on the unpacked package"
[[ $cflags == *"$u"/lib/pkgconfig/../../include* ]] || fail "the .pc file does not follow its install: $cflags"
echo "package contents and pkg-config checked"

# in the VM: only the unpacked root's files
cat > "$root/guest.sh" <<EOF
set -u
export PATH=$u/bin:/usr/sbin:/usr/bin:/sbin:/bin
echo "kernel \$(uname -r)"
iouring-bpf --version
iouring-bpf load $u/lib/iouring-bpf/nops.bpf.o --ring --set nop_total=100 --set nop_inflight=4 || exit 1
img=\$(mktemp /dev/shm/deb-test.XXXXXX)
truncate -s 16M "\$img"
export IOURING_BPF_UBLK_DIR=\$(mktemp -d)
out=\$(iouring-bpf -j ublk add --target loop --file "\$img") || { echo "ublk add: \$out"; exit 1; }
id=\$(echo "\$out" | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
head -c 1M /dev/urandom > "\$img.pat"
dd if="\$img.pat" of=/dev/ublkb\$id bs=1M oflag=direct status=none &&
	cmp "\$img.pat" <(head -c 1M "\$img") && echo "ublk \$id: 1 MiB through the installed loop policy"
rc=\$?
iouring-bpf ublk del \$id
exit \$rc
EOF
"$IOURING_BPF_SRC/scripts/vm" --kernel "$image" --build-dir "$build" --out "$root/vm" --timeout 300 -- \
	bash "$root/guest.sh" > "$root/vm.out" 2>&1
rc=$?
cat "$root/vm.out"
[ $rc = 0 ] || fail "the guest run failed (scripts/vm exit $rc)"
grep -qx "kernel $release" "$root/vm.out" || fail "the guest did not run the packaged kernel"
grep -q "nop_completed.*100" "$root/vm.out" || fail "the installed tool did not run 100 NOPs"
grep -q "1 MiB through the installed loop policy" "$root/vm.out" || fail "ublk through the installed policy"
echo "ok: the packaged kernel booted; the installed tool ran nops and a ublk loop device"
exit 0
