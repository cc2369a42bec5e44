#!/usr/bin/env bash
# ublk/ext4 (vm, root): a file system on a BPF loop device: mkfs.ext4
# (which discards), mount, copy a tree, umount, fsck -f clean, mount again
# and compare the tree.
# usage: ext4.sh TOOL TREE     Exit 0 pass, 1 fail, 77 skip.
set -u
T=$(realpath "$1")
tree=$2
. "$(dirname "$0")/lib.sh"
ublk_require
need_program mkfs.ext4

img=$work/fs.img
truncate -s 128M "$img"
out=$(ublk_add --target loop --file "$img" --queues 2) || { bad "add loop"; finish; }
id=$(jget '["id"]' <<<"$out")
dev=/dev/ublkb$id
mnt=$work/mnt
mkdir -p "$mnt"
mkfs.ext4 -q -F "$dev" && ok "mkfs.ext4 $dev" || bad "mkfs.ext4"
mount "$dev" "$mnt" && ok "mount" || { bad "mount"; finish; }
cp -a "$tree" "$mnt/tree" && ok "copied $(find "$tree" | wc -l) entries of $tree" || bad "cp -a"
sync
umount "$mnt" && ok "umount" || bad "umount"
fsck.ext4 -f -n "$dev" > "$work/fsck.log" 2>&1 && ok "fsck.ext4 -f -n: clean" ||
	{ cat "$work/fsck.log"; bad "fsck.ext4 found problems"; }
# the same bytes through the backing file, with the device still live
fsck.ext4 -f -n "$img" > /dev/null 2>&1 && ok "the backing file holds the same clean file system" ||
	bad "fsck of the backing file"
mount "$dev" "$mnt" && diff -r "$tree" "$mnt/tree" > /dev/null && ok "tree identical after remount" ||
	bad "tree differs after remount"
umount "$mnt" 2>/dev/null
"$T" ublk del "$id" > /dev/null && ok "del" || bad "del $id"
finish
