#!/usr/bin/env bash
# Turn Debian's linux-source-6.12 into our patched, built kernel, and build
# libbpf, bpftool and the UAPI headers from the same tree.
#
# Every step is incremental: the tree is re-extracted and re-patched only when
# the tarball, kernel/series or a patch changes; a variant is re-configured
# only when its fragments change; make does the rest.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")

build_dir=${IOURING_BPF_BUILD:-$repo/build}
tarball=/usr/src/linux-source-6.12.tar.xz
# The Debian package version the series is tested on. scripts/deps installs
# it while the archive has it; another 6.12.y may well take the series too
# (kernel/apply.sh DIR says which patch first fails), and a build from one
# says so.
tested_source=6.12.117-1~deb12u1
series=$here/series
patch_dir=$here/patches
config_dir=$here/config
jobs=$(nproc)
# the kselftest targets the series adds (tools/testing/selftests/NAME)
kselftest_targets="ublk_uapi virtio_blk"

usage() {
	cat <<EOF
usage: kernel/build.sh [options] COMMAND [ARG]

commands:
  source              extract the tarball and apply kernel/series
  config VARIANT      configure VARIANT only (BUILD/kernel/VARIANT/.config)
  kernel VARIANT      configure and build bzImage + vmlinux for VARIANT
                      (default, or NAME for kernel/config/NAME.config)
  tools               build libbpf, bpftool and UAPI headers into BUILD/tools
  vmlinux-h VARIANT OUT
                      write OUT from VARIANT's vmlinux BTF (only if changed)
  release VARIANT     print the kernel release string of a built VARIANT
  bpf-selftests VARIANT [--suite]
                      build the kernel's BPF selftest runner (test_progs of
                      tools/testing/selftests/bpf) and its test modules
                      (bpf_testmod.ko, ...) against VARIANT's vmlinux
                      into BUILD/kernel/VARIANT-bpf-selftests/out; with
                      --suite also test_progs-no_alu32, test_verifier and
                      test_maps, and every helper file test_progs uses; programs
                      this configuration cannot compile (e.g. netfilter or
                      MPTCP tests) are left out with the tests
                      that use them, listed in .../dropped
  kselftests          build the series' kselftest targets ($kselftest_targets)
                      of tools/testing/selftests against the tree's UAPI
                      headers, installed with run_kselftest.sh into
                      BUILD/kernel/kselftests/install
  deb VARIANT [KCONFIG]
                      Debian packages of VARIANT's kernel (the kernel's own
                      bindeb-pkg) into BUILD/deb; with KCONFIG, of a kernel
                      configured from that file (e.g. /boot/config-$(uname -r))
                      plus our fragments, reporting any of our options lost

options:
  --build-dir DIR     build directory (default: $repo/build)
  --tarball FILE      kernel source tarball (default: $tarball)
  --series FILE       series file (default: kernel/series); patches are
                      looked up in the series file's patches/ sibling
  -j N                parallel jobs (default: $jobs)
  -h, --help          this text
EOF
}

die() {
	echo "kernel/build.sh: error: $*" >&2
	exit 1
}

log() {
	echo "kernel: $*"
}

while [ $# -gt 0 ]; do
	case $1 in
	--build-dir) build_dir=$2; shift 2 ;;
	--tarball) tarball=$2; shift 2 ;;
	--series) series=$2; patch_dir=$(dirname "$2")/patches; shift 2 ;;
	-j) jobs=$2; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	-*) usage >&2; die "unknown option $1" ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || { usage >&2; exit 2; }
cmd=$1; shift

mkdir -p "$build_dir"
build_dir=$(cd "$build_dir" && pwd)
kdir=$build_dir/kernel
src=$kdir/src
tools=$build_dir/tools

# ccache keys must not depend on where the checkout lives, so that a fresh
# clone (CI) hits the cache a developer's tree filled.
export CCACHE_BASEDIR=$build_dir CCACHE_NOHASHDIR=true
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
# Fixed build metadata: same input, same output, better ccache hit rate.
export KBUILD_BUILD_TIMESTAMP='2024-11-17 00:00:00 UTC'
export KBUILD_BUILD_USER=iouring-bpf KBUILD_BUILD_HOST=build

# the kernel's make; LOCALVERSION set (empty) keeps setlocalversion from
# appending "+" when the tree happens to sit inside a git checkout
kmake_cmd() {
	kmake_argv=(make -C "$src" ARCH=x86_64 LOCALVERSION= CC="ccache gcc" HOSTCC="ccache gcc"
		    -j"$jobs")
}
kmake() {
	kmake_cmd
	"${kmake_argv[@]}" "$@"
}

# Series entries: one patch file name per line; blank lines and '#' comments
# are ignored (quilt's format).
series_entries() {
	[ -f "$series" ] || die "series file $series does not exist"
	sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$series"
}

# Files a patch touches, from its ---/+++ lines.
patch_files() {
	sed -n -e 's|^+++ b/||p' -e 's|^--- a/||p' "$1" | sort -u
}

source_stamp() {
	{
		echo "tarball $(realpath "$tarball") $(stat -c '%s %Y' "$tarball")"
		local p
		while read -r p; do
			[ -f "$patch_dir/$p" ] || die "kernel/series names $p, but $patch_dir/$p does not exist"
			echo "patch $p $(sha256sum < "$patch_dir/$p")"
		done < <(series_entries)
	} | sha256sum | cut -d' ' -f1
}

do_source() {
	[ -f "$tarball" ] || die "$tarball is missing; run scripts/deps (Debian package linux-source-6.12)"
	local stamp
	stamp=$(source_stamp)
	if [ -d "$src" ] && [ "$(cat "$kdir/src.stamp" 2>/dev/null)" = "$stamp" ]; then
		return 0
	fi

	local have
	have=$(dpkg-query -W -f '${Version}' linux-source-6.12 2>/dev/null || echo unknown)
	[ "$have" = "$tested_source" ] ||
		log "note: linux-source-6.12 is $have; the series is tested on $tested_source (if a patch does not apply: kernel/apply.sh --check DIR names it)"
	log "extracting $(basename "$tarball")"
	local new=$kdir/src.new
	rm -rf "$new" "$kdir/src.extract"
	mkdir -p "$kdir/src.extract"
	tar -xf "$tarball" -C "$kdir/src.extract"
	mv "$kdir/src.extract"/linux-source-6.12 "$new"
	rm -rf "$kdir/src.extract"

	local p n=0 files=$kdir/src.files.new
	: > "$files"
	while read -r p; do
		n=$((n + 1))
		local f=$patch_dir/$p
		head -n1 "$f" | grep -Eq '^From [0-9a-f]{40} ' ||
			die "patch $p is not a git format-patch file (first line must be 'From <sha1> ...')"
		log "applying $p"
		local out
		if ! out=$(patch -d "$new" -p1 -F0 --batch --forward \
				--no-backup-if-mismatch < "$f" 2>&1); then
			echo "$out" >&2
			die "patch $p (number $n in $(basename "$series")) does not apply"
		fi
		patch_files "$f" >> "$files"
	done < <(series_entries)

	# Extracted files carry the tarball's old mtimes. A file patched by the
	# previous or by the new series must look newer than its objects, or
	# make would keep objects built from the other version.
	local f
	touch "$kdir/src.files"
	sort -u "$files" "$kdir/src.files" | while read -r f; do
		# a file only the previous series had is gone: nothing to touch
		if [ -e "$new/$f" ]; then touch "$new/$f"; fi
	done
	mv "$files" "$kdir/src.files"

	rm -rf "$src"
	mv "$new" "$src"
	echo "$stamp" > "$kdir/src.stamp"
	log "source ready: $n patch(es) applied"
}

# The fragments of variant V, in merge order: base.config, the tree's
# fragments V.config names ("# tree: PATH", relative to the source), and
# V.config. With "own" only this project's, the ones whose every option
# must survive; with "tree" only the tree's, which are checked against
# V-tree-unmet.list instead.
variant_fragments() {
	local v=$1 which=${2:-all} path
	[ "$which" = tree ] || echo "$config_dir/base.config"
	[ -f "$config_dir/$v.config" ] ||
		die "unknown kernel variant '$v' (no $config_dir/$v.config)"
	if [ "$which" != own ]; then
		while read -r path; do
			[ -f "$src/$path" ] || die "$v.config names $path, which the source tree lacks"
			echo "$src/$path"
		done < <(sed -n 's/^# tree: //p' "$config_dir/$v.config")
	fi
	[ "$which" = tree ] || echo "$config_dir/$v.config"
}

# check_tree_config CONFIG V: the options of the tree's fragments that
# CONFIG lacks must be exactly the pinned ones of V-tree-unmet.list
check_tree_config() {
	local cfg=$1 v=$2 list=$config_dir/$2-tree-unmet.list
	local frags=() unmet pinned
	mapfile -t frags < <(variant_fragments "$v" tree)
	[ ${#frags[@]} -gt 0 ] || return 0
	unmet=$(cat "${frags[@]}" | grep -E '^CONFIG_[A-Za-z0-9_]+=' | sort -u | grep -vxF -f "$cfg" |
		sed 's/=.*//' | sort -u)
	pinned=
	if [ -f "$list" ]; then
		pinned=$(sed -e 's/[[:space:]].*//' -e '/^#/d' -e '/^$/d' "$list" | sort -u)
	fi
	[ "$unmet" = "$pinned" ] && return 0
	echo "  options of the tree's fragments the configuration does not keep:" >&2
	comm -23 <(echo "$unmet") <(echo "$pinned") | sed -e '/^$/d' -e 's/^/    not pinned: /' >&2
	comm -13 <(echo "$unmet") <(echo "$pinned") | sed -e '/^$/d' -e 's/^/    pinned but kept now: /' >&2
	die "kernel config $cfg: the tree's BPF selftest fragments and ${list##*/} disagree (see above)"
}

# Every option a fragment asks for must survive olddefconfig; a silently
# dropped option (unmet dependency) would otherwise show up much later as a
# missing feature in the guest.
check_config() {
	local cfg=$1; shift
	local bad=0 line opt want
	while read -r line; do
		case $line in
		CONFIG_*=*)
			opt=${line%%=*}; want=$line
			grep -qxF -- "$want" "$cfg" || {
				echo "  $want requested, got: $(grep -E "^(# )?${opt}[= ]" "$cfg" || echo unset)" >&2
				bad=1
			} ;;
		"# CONFIG_"*" is not set")
			opt=${line#\# }; opt=${opt%% *}
			! grep -q "^$opt=" "$cfg" || {
				echo "  $opt requested off, got: $(grep "^$opt=" "$cfg")" >&2
				bad=1
			} ;;
		esac
	done < <(cat "$@")
	[ $bad = 0 ] || die "kernel config $cfg does not match the fragments (see above)"
}

do_config() {
	local v=$1 out=$kdir/$1
	local frags own
	mapfile -t frags < <(variant_fragments "$v")
	local stamp
	stamp=$( { cat "$kdir/src.stamp"; cat "${frags[@]}"; cat "$config_dir/$v-tree-unmet.list" 2>/dev/null || true; } | sha256sum | cut -d' ' -f1)
	if [ -f "$out/.config" ] && [ "$(cat "$out/config.stamp" 2>/dev/null)" = "$stamp" ]; then
		return 0
	fi
	log "configuring variant $v (tinyconfig + ${frags[*]##*/})"
	mkdir -p "$out"
	kmake -s O="$out" tinyconfig > /dev/null
	"$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "${frags[@]}" > "$out/merge_config.log"
	kmake -s O="$out" olddefconfig > /dev/null
	mapfile -t own < <(variant_fragments "$v" own)
	check_config "$out/.config" "${own[@]}"
	check_tree_config "$out/.config" "$v"
	echo "$stamp" > "$out/config.stamp"
}

do_kernel() {
	local v=${1:?variant required}
	do_source
	do_config "$v"
	local out=$kdir/$v start=$SECONDS
	log "building $v kernel in $out (-j$jobs)"
	: > "$out/build.log"
	kmake_cmd
	# with modules, their Module.symvers too: out-of-tree test modules
	# (the BPF selftests' bpf_testmod) link against it
	local targets=(bzImage)
	grep -qx 'CONFIG_MODULES=y' "$out/.config" && targets+=(modules)
	if ! "$repo/scripts/progress" "kernel: building $v" "$out/build.log" \
			"${kmake_argv[@]}" O="$out" "${targets[@]}"; then
		grep -m 40 -E 'error|Error' "$out/build.log" >&2
		die "kernel build of variant $v failed; full log: $out/build.log"
	fi
	log "built $(kmake -s O="$out" kernelrelease) ($v) in $((SECONDS - start))s"
}

do_tools() {
	do_source
	local stamp
	# "pic": libbpf.a is position-independent, so liburing-bpf.so can carry it
	stamp="$(cat "$kdir/src.stamp") pic"
	if [ -x "$tools/bin/bpftool" ] && [ "$(cat "$tools/tools.stamp" 2>/dev/null)" = "$stamp" ]; then
		return 0
	fi
	log "building libbpf, bpftool and UAPI headers from the kernel tree"
	rm -rf "$tools/libbpf"
	mkdir -p "$tools/libbpf" "$tools/bpftool" "$tools/bin"
	: > "$tools/libbpf.log"
	"$repo/scripts/progress" "kernel: building libbpf" "$tools/libbpf.log" \
		make -C "$src/tools/lib/bpf" -j"$jobs" OUTPUT="$tools/libbpf/" \
		EXTRA_CFLAGS="-g -O2 -fPIC" prefix="$tools/root" libdir_relative=lib install ||
		die "libbpf build failed; log: $tools/libbpf.log"
	: > "$tools/bpftool.log"
	"$repo/scripts/progress" "kernel: building bpftool" "$tools/bpftool.log" \
		make -C "$src/tools/bpf/bpftool" -j"$jobs" OUTPUT="$tools/bpftool/" \
		CLANG=clang-19 LLVM_STRIP=llvm-strip-19 ||
		die "bpftool build failed; log: $tools/bpftool.log"
	cp "$tools/bpftool/bpftool" "$tools/bin/bpftool"
	make -s -C "$src" ARCH=x86_64 O="$kdir/headers" \
		INSTALL_HDR_PATH="$tools/root" headers_install > "$tools/headers.log" 2>&1 ||
		die "headers_install failed; log: $tools/headers.log"
	echo "$stamp" > "$tools/tools.stamp"
	log "tools ready: $("$tools/bin/bpftool" version | sed -n 1p)"
}

do_vmlinux_h() {
	local v=${1:?variant required} dst=${2:?output file required}
	local vmlinux=$kdir/$v/vmlinux
	[ -f "$vmlinux" ] || die "$vmlinux not built; run: kernel/build.sh kernel $v"
	"$tools/bin/bpftool" btf dump file "$vmlinux" format c > "$dst.tmp"
	if cmp -s "$dst.tmp" "$dst"; then
		rm -f "$dst.tmp"
	else
		mv "$dst.tmp" "$dst"
	fi
}

# shadow FROM TO PATH: TO mirrors FROM through symlinks, except that PATH
# (relative, e.g. tools/testing/selftests/bpf) is a tree of real directories
# whose files link to FROM's: a build may add, remove or generate files
# there without touching FROM
shadow() {
	local from=$1 to=$2 keep=$3 first=${3%%/*} e name
	mkdir -p "$to"
	for e in "$from"/* "$from"/.[!.]*; do
		[ -e "$e" ] || [ -L "$e" ] || continue
		name=${e##*/}
		if [ "$name" != "$first" ]; then
			ln -s "$e" "$to/$name"
		elif [ "$keep" = "$first" ]; then
			cp -rs "$e" "$to/$name"
		else
			shadow "$e" "$to/$name" "${keep#*/}"
		fi
	done
}

# The kernel's own BPF selftest runner, built out of tree from a shadow of
# the source, against VARIANT's BTF. The BPF programs of tests that need
# kernel parts our small configurations lack do not compile; they are
# dropped with the prog_tests that include their skeletons, and whatever is
# dropped is listed. A test the regression list names and the build dropped
# shows up as not run (selftests/kernel/test_progs.sh fails on that).
do_bpf_selftests() {
	local v=${1:?variant required} suite=${2:-}
	local vmlinux=$kdir/$v/vmlinux base=$kdir/$v-bpf-selftests
	local tree=$base/src out=$base/out stamp round name f t mjobs=$jobs
	local targets extra=()
	[ -f "$vmlinux" ] || die "$vmlinux not built; run: kernel/build.sh kernel $v"
	[ -z "$suite" ] || [ "$suite" = --suite ] || die "bpf-selftests: unknown argument $suite"
	# test_progs and the suite's test modules, which it loads from its own
	# directory; with --suite the suite's other runners and test_progs'
	# other helper files too, as the Makefile lists them
	targets=("$out/test_progs" "$out/bpf_testmod.ko" "$out/bpf_test_no_cfi.ko"
		"$out/bpf_test_modorder_x.ko" "$out/bpf_test_modorder_y.ko")
	if [ -n "$suite" ]; then
		targets+=("$out/test_progs-no_alu32" "$out/test_verifier" "$out/test_maps")
	else
		extra=(TRUNNER_EXTRA_FILES="${targets[*]:1}")
	fi
	stamp="$(cat "$kdir/src.stamp") $(sha256sum < "$vmlinux" | cut -c1-16) ${suite:-test_progs}"
	if [ -x "$out/test_progs" ] && [ "$(cat "$base/stamp" 2>/dev/null)" = "$stamp" ]; then
		return 0
	fi
	rm -rf "$tree" "$out" "$base/stamp"
	mkdir -p "$out"
	shadow "$src" "$tree" tools/testing/selftests/bpf
	local sdir=$tree/tools/testing/selftests/bpf
	: > "$base/dropped"
	for round in 1 2 3 4; do
		# the compiler's dependency files name lskel/subskel headers by
		# their base name, which the Makefile has no rule for: a second
		# make in the same OUTPUT must not read them
		rm -f "$sdir/prog_tests/tests.h" "$out"/*.test.d "$out"/*/*.test.d
		: > "$base/build.log"
		if PATH=/usr/lib/llvm-19/bin:$PATH "$repo/scripts/progress" \
			"kernel: building test_progs for $v (round $round)" "$base/build.log" \
			make -k -C "$sdir" -j"$mjobs" OUTPUT="$out" VMLINUX_BTF="$vmlinux" \
			KDIR="$kdir/$v" "${extra[@]}" "${targets[@]}"; then
			echo "$stamp" > "$base/stamp"
			log "test_progs for $v: $out/test_progs ($(grep -c . "$base/dropped") file(s) left out: $base/dropped)"
			return 0
		fi
		# the Makefile's rsync of the extra files races with -j: a
		# skeleton's intermediate object it lists can vanish under it.
		# What the rounds before built stays, so finishing with one job
		# is cheap and cannot race again.
		if grep -q 'some files vanished before they could be transferred' "$base/build.log"; then
			log "test_progs for $v: the extra-files copy raced with the build; once more, one job"
			mjobs=1
			continue
		fi
		local failed=()
		# make names itself make[N] when run under another make (make check)
		mapfile -t failed < <(sed -nE "s|^make(\[[0-9]+\])?: \*\*\* \[Makefile:[0-9]+: $out/([^]]*)\] Error.*|\2|p" "$base/build.log" | sort -u)
		[ ${#failed[@]} -gt 0 ] || {
			grep -m 20 -E 'error|Error' "$base/build.log" >&2
			die "test_progs build for $v failed and names no target to leave out; log: $base/build.log"
		}
		# another flavour's objects (no_alu32/x.test.o) come from the same
		# sources as test_progs' own
		mapfile -t failed < <(printf '%s\n' "${failed[@]##*/}" | sort -u)
		for f in "${failed[@]}"; do
			# the series' own tests must build: never drop one of those
			name=${f%%.*}
			if grep -qE "^tools/testing/selftests/bpf/(progs|prog_tests)/$name\.c\$" "$kdir/src.files"; then
				grep -m 20 -E 'error' "$base/build.log" >&2
				die "$f, from a file of the series, does not build; log: $base/build.log"
			fi
			case $f in
			*.bpf.o|*.skel.h|*.lskel.h)
				rm -f "$sdir/progs/$name.c"
				echo "progs/$name.c (does not compile against this vmlinux)" >> "$base/dropped"
				for t in $(grep -lE "[\"/]$name\.(l|sub)?skel\.h\"" "$sdir"/prog_tests/*.c || true); do
					rm -f "$t"
					echo "prog_tests/${t##*/} (uses $name)" >> "$base/dropped"
				done ;;
			*.test.o)
				rm -f "$sdir/prog_tests/${f%.test.o}.c"
				echo "prog_tests/${f%.test.o}.c (does not compile)" >> "$base/dropped" ;;
			*)
				die "test_progs build for $v failed at $f; log: $base/build.log" ;;
			esac
		done
	done
	die "test_progs build for $v still fails after 4 rounds; log: $base/build.log"
}

# The series' kselftest targets, built as a user would build them
# (make -C tools/testing/selftests TARGETS=... install) out of tree, with
# the UAPI headers of the patched tree that kernel/build.sh tools installs.
do_kselftests() {
	local base=$kdir/kselftests stamp
	stamp=$(cat "$kdir/src.stamp")
	if [ -x "$base/install/run_kselftest.sh" ] && [ "$(cat "$base/stamp" 2>/dev/null)" = "$stamp" ]; then
		return 0
	fi
	[ -f "$tools/root/include/linux/ublk_cmd.h" ] ||
		die "$tools/root/include has no UAPI headers; run: kernel/build.sh tools"
	rm -rf "$base"
	mkdir -p "$base/build"
	log "building kselftest targets: $kselftest_targets"
	make -C "$src/tools/testing/selftests" O="$base/build" TARGETS="$kselftest_targets" \
		KHDR_INCLUDES="-isystem $tools/root/include" INSTALL_PATH="$base/install" \
		install > "$base/build.log" 2>&1 || {
		grep -m 20 -E 'error|warning' "$base/build.log" >&2
		die "kselftest build failed; log: $base/build.log"
	}
	echo "$stamp" > "$base/stamp"
	log "kselftests: $base/install ($(grep -c . "$base/install/kselftest-list.txt") tests)"
}

# deb_config KCONFIG OUT: OUT/.config from the user's KCONFIG plus our
# base and default fragments; our options the result lost are reported,
# one line each, and listed in OUT/lost-options (the build goes on: the
# user's config decides, e.g. a distribution's own module choices)
deb_config() {
	local kconfig=$1 out=$2 frags line opt lost=0
	frags=("$config_dir/base.config" "$config_dir/default.config")
	mkdir -p "$out"
	cp "$kconfig" "$out/.config"
	"$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "${frags[@]}" \
		> "$out/merge_config.log"
	kmake -s O="$out" olddefconfig > /dev/null
	: > "$out/lost-options"
	while read -r line; do
		case $line in
		CONFIG_*=*)
			grep -qxF -- "$line" "$out/.config" && continue
			opt=${line%%=*}
			echo "$line (now: $(grep -E "^(# )?${opt}[= ]" "$out/.config" || echo unset))" >> "$out/lost-options" ;;
		esac
	done < <(cat "${frags[@]}")
	lost=$(wc -l < "$out/lost-options")
	if [ "$lost" -gt 0 ]; then
		log "$lost of our options did not survive $kconfig + our fragments (unmet dependencies):"
		sed 's/^/  /' "$out/lost-options"
	else
		log "every option of our fragments is in the configuration from $kconfig"
	fi
}

do_deb() {
	local v=${1:-default} kconfig=${2:-} out start=$SECONDS
	do_source
	if [ -n "$kconfig" ]; then
		[ -f "$kconfig" ] || die "KCONFIG $kconfig is not a file"
		out=$kdir/deb-kconfig
		deb_config "$kconfig" "$out"
	else
		do_config "$v"
		out=$kdir/$v
	fi
	local dest=$build_dir/deb
	mkdir -p "$dest"
	rm -f "$kdir"/linux-*.deb "$kdir"/linux-upstream_*
	log "building Debian packages of the kernel in $out (bindeb-pkg, -j$jobs)"
	: > "$out/deb.log"
	# no -dbg package (vmlinux with DWARF): BTF is in the image
	kmake_cmd
	"$repo/scripts/progress" "kernel: bindeb-pkg" "$out/deb.log" \
		"${kmake_argv[@]}" O="$out" DPKG_FLAGS="-Ppkg.linux-upstream.nokerneldbg" bindeb-pkg ||
		{ tail -n 30 "$out/deb.log" >&2; die "bindeb-pkg failed; log: $out/deb.log"; }
	rm -f "$dest"/linux-*.deb
	mv "$kdir"/linux-*.deb "$dest/"
	rm -f "$kdir"/linux-upstream_*
	log "kernel packages in $dest ($((SECONDS - start))s): $(cd "$dest" && echo linux-*.deb)"
}

case $cmd in
source) do_source ;;
config) do_source; do_config "${1:?variant required}" ;;
deb) do_deb "$@" ;;
kernel) do_kernel "$@" ;;
tools) do_tools ;;
vmlinux-h) do_vmlinux_h "$@" ;;
bpf-selftests) do_source; do_bpf_selftests "$@" ;;
kselftests) do_source; do_kselftests ;;
release)
	[ -f "$kdir/${1:?variant required}/.config" ] || die "variant $1 is not configured"
	kmake -s O="$kdir/$1" kernelrelease ;;
*) usage >&2; die "unknown command $cmd" ;;
esac
