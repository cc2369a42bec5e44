#!/usr/bin/env bash
# lib/version (host): one version everywhere: the newest node of
# liburing-bpf.map, LIBURING_BPF_VERSION, the pkg-config file and
# `iouring-bpf --version` (text and JSON) all say the same.
set -u
fail() { echo "FAIL: $*"; exit 1; }
src=$IOURING_BPF_SRC
user=$IOURING_BPF_BUILD/user
tool=$1

map=$(grep -oE '^LIBURING_BPF_[0-9]+\.[0-9]+' "$src/liburing-bpf/liburing-bpf.map" |
	sed 's/LIBURING_BPF_//' | sort -V | tail -n1)
[ -n "$map" ] || fail "no version node in liburing-bpf.map"
hdr=$(sed -n 's/^#define LIBURING_BPF_VERSION "\(.*\)"$/\1/p' "$src/liburing-bpf/include/liburing-bpf.h")
pc=$(sed -n 's/^Version: //p' "$user/liburing-bpf/liburing-bpf.pc")
txt=$("$tool" --version | head -n1 | awk '{ print $2 }')
json=$("$tool" --json --version | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
echo "map $map, header $hdr, pkg-config $pc, --version $txt, JSON $json"
[ "$hdr" = "$map" ] || fail "LIBURING_BPF_VERSION $hdr, newest map node $map"
case $pc in "$map" | "$map".*) ;; *) fail "pkg-config says $pc, the map $map" ;; esac
[ "$txt" = "$map" ] || fail "iouring-bpf --version says $txt, the map $map"
[ "$json" = "$map" ] || fail "iouring-bpf --json --version says $json, the map $map"
echo "one version: $map"
