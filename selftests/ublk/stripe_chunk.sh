#!/usr/bin/env bash
# ublk/stripe-chunk, ublk/stripe-chunk-refused (vm, root): a policy that
# declares its chunk (IOU_UBLK_CHUNK_BYTES) gets chunk_sectors, so a map
# that needs one extent per chunk serves 512 KiB requests; bad chunks are
# refused by add, before any device exists.
#  layout:  the 64 KiB stripe over two files: chunk_sectors 128, list shows
#           the chunk; one 512 KiB write reaches the device as 9 requests
#           and each piece lands in the right file at the right offset; fio
#           verify (512 KiB, and 4 KiB-512 KiB mixed) over the whole device,
#           then every chunk of the device is the file chunk the map names.
#           A 192 KiB chunk (not a power of two) works too. The same map
#           without the declaration fails a 512 KiB write (the failure the
#           declaration prevents).
#  refused: chunks of 1000 bytes, 1 MiB (> 512 KiB requests) and 0: add
#           fails with -EINVAL naming the value; no device, block node or
#           state file is left; the good chunk with the same files works.
# usage: stripe_chunk.sh TOOL OBJDIR layout|refused     Exit 0 pass, 1 fail, 77 skip.
#   OBJDIR holds stripe_chunk*.bpf.o (selftests/CMakeLists.txt builds them)
set -u
T=$(realpath "$1")
objdir=$2
mode=$3
. "$(dirname "$0")/lib.sh"
ublk_require

K=1024
for o in stripe_chunk stripe_chunk_192k stripe_undeclared stripe_chunk_1000 stripe_chunk_1m \
	 stripe_chunk_0; do
	[ -f "$objdir/$o.bpf.o" ] || { echo "FAIL: no $objdir/$o.bpf.o (build the tests)"; exit 1; }
done

# stripe_py CHUNK FILE_A FILE_B ...: python helpers over the stripe layout
# (device chunk k is file k % 2 at (k // 2) * CHUNK)
stripe_py() {
	python3 - "$@" <<'EOF'
import sys
cmd, chunk, fa, fb = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
files = [open(fa, 'rb'), open(fb, 'rb')]
def file_bytes(devoff, n):
    """n device bytes from devoff, read from the files where the map puts them"""
    out = b''
    while n:
        k, inside = divmod(devoff, chunk)
        take = min(chunk - inside, n)
        f = files[k % 2]
        f.seek((k // 2) * chunk + inside)
        got = f.read(take)
        out += got + bytes(take - len(got))     # past a file's end: zeros
        devoff += take
        n -= take
    return out
if cmd == 'whole':      # IMG SIZE: the SIZE-byte device image; each chunk is its file chunk, none zero
    img = open(sys.argv[5], 'rb').read()
    if len(img) != int(sys.argv[6]):
        print(f"the device image has {len(img)} bytes, the device {sys.argv[6]}")
        sys.exit(1)
    nchunks = (len(img) + chunk - 1) // chunk
    for k in range(nchunks):
        data = img[k * chunk:(k + 1) * chunk]
        if data != file_bytes(k * chunk, len(data)):
            print(f"chunk {k} (device byte {k * chunk}) is not file {'AB'[k % 2]} at {(k // 2) * chunk}")
            sys.exit(1)
        if data.count(0) == len(data):
            print(f"chunk {k} is all zeros: the device was not written there")
            sys.exit(1)
    print(f"{nchunks} chunks of {chunk} bytes, each in file A/B at its offset, none zero")
elif cmd == 'piece':    # PATTERN DEVOFF: PATTERN written at DEVOFF is in the files where the map says
    pat = open(sys.argv[5], 'rb').read()
    devoff = int(sys.argv[6])
    pos = 0
    while pos < len(pat):
        k, inside = divmod(devoff + pos, chunk)
        take = min(chunk - inside, len(pat) - pos)
        if file_bytes(devoff + pos, take) != pat[pos:pos + take]:
            print(f"piece at device byte {devoff + pos} ({take} bytes) is not in file "
                  f"{'AB'[k % 2]} at {(k // 2) * chunk + inside}")
            sys.exit(1)
        pos += take
    print(f"{len(pat)} bytes from device byte {devoff}: each piece in file A/B at its offset")
EOF
}

# writes completed by block device DEV (/sys/block/DEV/stat field 5)
writes_done() { awk '{ print $5 }' "/sys/block/$1/stat"; }

# one_write ID CHUNK A B OFFSET WANT_REQUESTS: one 512 KiB direct write at
# OFFSET through ublkbID (files A and B): it reaches the driver as
# WANT_REQUESTS requests (cut at chunk boundaries), each piece lands in its
# file at its offset, and the device reads it back
one_write() {
	local id=$1 chunk=$2 a=$3 b=$4 off=$5 want=$6 w0 w1 msg
	head -c $((512 * K)) /dev/urandom > "$work/pat"
	w0=$(writes_done "ublkb$id")
	dd if="$work/pat" of="/dev/ublkb$id" bs=512k oflag=direct,seek_bytes seek="$off" \
		status=none || { bad "512 KiB write at $off (chunk $chunk)"; return; }
	w1=$(writes_done "ublkb$id")
	[ $((w1 - w0)) = "$want" ] &&
		ok "a 512 KiB write at $off reached the device as $want requests (chunk $chunk)" ||
		bad "a 512 KiB write at $off: $((w1 - w0)) write requests, want $want (chunk $chunk)"
	msg=$(stripe_py piece "$chunk" "$a" "$b" "$work/pat" "$off") && ok "$msg" || bad "$msg"
	cmp -s "$work/pat" <(dd if="/dev/ublkb$id" bs=512k count=1 iflag=direct,skip_bytes \
		skip="$off" status=none) &&
		ok "the device reads the 512 KiB back" || bad "reading back the 512 KiB at $off differs"
}

# whole_device ID CHUNK A B: fio verify over all of ublkbID, 512 KiB blocks
# then 4 KiB-512 KiB, then every chunk of the device is the file chunk the
# map names (and was written)
whole_device() {
	local id=$1 chunk=$2 a=$3 b=$4 dev=/dev/ublkb$1 msg
	fio_verify "$dev" "stripe$id-512k" --rw=randwrite --bs=512k --iodepth=32 &&
		ok "chunk $chunk: fio randwrite 512k iodepth 32 over the whole device, verified" ||
		bad "chunk $chunk: fio 512k over the stripe"
	fio_verify "$dev" "stripe$id-mix" --rw=randwrite --bsrange=4k-512k --iodepth=16 &&
		ok "chunk $chunk: fio randwrite 4k-512k iodepth 16 over the whole device, verified" ||
		bad "chunk $chunk: fio 4k-512k over the stripe"
	dd if="$dev" of="$work/dev.img" bs=1M iflag=direct status=none || bad "reading $dev"
	msg=$(stripe_py whole "$chunk" "$a" "$b" "$work/dev.img" "$(blockdev --getsize64 "$dev")") &&
		ok "chunk $chunk: $msg" ||
		bad "chunk $chunk: $msg"
	rm -f "$work/dev.img"
}

# add_stripe OBJ A B: a device of the stripe policy OBJ over files A and B;
# prints its id
add_stripe() {
	local out
	out=$(ublk_add --target bpf --policy "$objdir/$1.bpf.o" --file "$2" --file "$3") || return 1
	jget '["id"]' <<<"$out"
}

# chunk_sectors ID
chunk_sectors() { cat "/sys/block/ublkb$1/queue/chunk_sectors"; }

layout() {
	local id a b chunk=$((64 * K))
	a=$work/a64.img b=$work/b64.img
	truncate -s 32M "$a" "$b"
	id=$(add_stripe stripe_chunk "$a" "$b") || { bad "add the 64 KiB stripe"; return; }
	[ "$(chunk_sectors "$id")" = 128 ] && ok "chunk_sectors 128 (64 KiB)" ||
		bad "chunk_sectors $(chunk_sectors "$id"), want 128"
	[ "$(cat "/sys/block/ublkb$id/queue/discard_max_bytes")" = $chunk ] &&
		ok "discards kept to one chunk" ||
		bad "discard_max_bytes $(cat "/sys/block/ublkb$id/queue/discard_max_bytes"), want $chunk"
	"$T" -j ublk list | json "[d['chunk_bytes'] for d in j if d['id'] == $id] == [$chunk]" &&
		ok "list --json: chunk_bytes $chunk" || bad "list --json: $("$T" -j ublk list)"
	"$T" ublk list | grep -A3 "^$id " | grep -qx "     chunk: 64 KiB" &&
		ok "list: chunk: 64 KiB" || bad "list: $("$T" ublk list)"
	# 16 KiB before a chunk boundary: 16 KiB + 7 x 64 KiB + 48 KiB
	one_write "$id" $chunk "$a" "$b" $((5 * chunk - 16 * K)) 9
	whole_device "$id" $chunk "$a" "$b"
	"$T" ublk del "$id" > /dev/null && ok "del $id" || bad "del $id"

	# a chunk that is not a power of two: 192 KiB, files of 128 chunks
	chunk=$((192 * K)) a=$work/a192.img b=$work/b192.img
	truncate -s 24M "$a" "$b"
	id=$(add_stripe stripe_chunk_192k "$a" "$b") || { bad "add the 192 KiB stripe"; return; }
	[ "$(chunk_sectors "$id")" = 384 ] && ok "192 KiB chunk: chunk_sectors 384" ||
		bad "192 KiB chunk: chunk_sectors $(chunk_sectors "$id"), want 384"
	# 16 KiB + 192 KiB + 192 KiB + 112 KiB
	one_write "$id" $chunk "$a" "$b" $((3 * chunk - 16 * K)) 4
	whole_device "$id" $chunk "$a" "$b"
	"$T" ublk del "$id" > /dev/null && ok "del $id" || bad "del $id"

	# the same map without the declaration: what chunk_sectors prevents
	a=$work/a0.img b=$work/b0.img
	truncate -s 8M "$a" "$b"
	id=$(add_stripe stripe_undeclared "$a" "$b") || { bad "add the undeclared stripe"; return; }
	[ "$(chunk_sectors "$id")" = 0 ] && ok "undeclared: chunk_sectors 0" ||
		bad "undeclared: chunk_sectors $(chunk_sectors "$id"), want 0"
	"$T" -j ublk list | json "[d['chunk_bytes'] for d in j if d['id'] == $id] == [None]" &&
		ok "undeclared: list --json: chunk_bytes null" || bad "undeclared: list --json"
	dd if=/dev/urandom of="/dev/ublkb$id" bs=512k count=1 oflag=direct status=none 2> /dev/null &&
		bad "undeclared: a 512 KiB write over 8 chunks succeeded" ||
		ok "undeclared: a 512 KiB write over 8 chunks fails (it needs 8 extents, 4 fit)"
	head -c $((64 * K)) /dev/urandom > "$work/p64"
	dd if="$work/p64" of="/dev/ublkb$id" bs=64k seek=3 oflag=direct status=none &&
		cmp -s "$work/p64" <(dd if="$b" bs=64k skip=1 count=1 status=none) &&
		ok "undeclared: a 64 KiB write inside chunk 3 works, in B at 64 KiB" ||
		bad "undeclared: 64 KiB write inside chunk 3"
	"$T" ublk del "$id" > /dev/null && ok "del $id" || bad "del $id"
}

# what exists of ublk: devices, block nodes, state files
# shellcheck disable=SC2011 # ls | xargs: the kernel's and our names, one line
ublk_snapshot() {
	ls /sys/class/ublk-char 2>/dev/null | xargs
	ls /dev/ublkb* 2>/dev/null | xargs
	ls "$IOURING_BPF_UBLK_DIR" 2>/dev/null | xargs
	"$T" -j ublk list | jget ''
}

refused() {
	local before after o out rc want err a=$work/a.img b=$work/b.img
	truncate -s 32M "$a" "$b"
	for o in stripe_chunk_1000 stripe_chunk_1m stripe_chunk_0; do
		before=$(ublk_snapshot)
		case $o in
		stripe_chunk_1000) want='IOU_UBLK_CHUNK_BYTES(1000): the chunk is not a multiple of 4096 bytes' ;;
		stripe_chunk_1m) want="IOU_UBLK_CHUNK_BYTES(1048576): the chunk is larger than the device's largest request (524288 bytes)" ;;
		stripe_chunk_0) want='IOU_UBLK_CHUNK_BYTES(0): a chunk of 0 bytes' ;;
		esac
		out=$("$T" -j ublk add --target bpf --policy "$objdir/$o.bpf.o" --file "$a" --file "$b")
		rc=$?
		err=$(jget '["error"]' <<<"$out" 2>/dev/null)
		if [ $rc = 1 ] && [ "$(jget '["errno"]' <<<"$out" 2>/dev/null)" = -22 ] &&
		   grep -qF "$o.bpf.o: $want" <<<"$err"; then
			ok "$o: add refused, errno -22: $err"
		else
			bad "$o: add exit $rc, want 1, errno -22 and '$want': $out"
			ublk_remember "$(jget '["id"]' <<<"$out" 2>/dev/null)"
		fi
		after=$(ublk_snapshot)
		[ "$after" = "$before" ] && ok "$o: no device, node or state file left" ||
			bad "$o: left behind: before [$before], after [$after]"
	done
	# text: the message on stderr, exit 1
	before=$(ublk_snapshot)
	out=$("$T" ublk add --target bpf --policy "$objdir/stripe_chunk_1000.bpf.o" --file "$a" \
		--file "$b" 2>&1)
	rc=$?
	[ $rc = 1 ] && grep -qF "stripe_chunk_1000.bpf.o: IOU_UBLK_CHUNK_BYTES(1000): the chunk is not a multiple of 4096 bytes" <<<"$out" &&
		ok "text: exit 1: $out" || bad "text: exit $rc: $out"
	[ $rc = 0 ] && ublk_remember "$(awk '/^ublk [0-9]+ /{ print $2 }' <<<"$out")"
	[ "$(ublk_snapshot)" = "$before" ] && ok "text: nothing left" || bad "text: left something behind"
	# the control: the same files and map with a good chunk are accepted
	if out=$(ublk_add --target bpf --policy "$objdir/stripe_chunk.bpf.o" --file "$a" --file "$b"); then
		ok "the 64 KiB chunk with the same files is accepted"
		"$T" ublk del "$(jget '["id"]' <<<"$out")" > /dev/null || bad "del"
	else
		bad "the 64 KiB chunk with the same files is refused"
	fi
}

case $mode in
layout) layout ;;
refused) refused ;;
*) echo "FAIL: mode '$mode' (layout or refused)"; exit 1 ;;
esac
finish
