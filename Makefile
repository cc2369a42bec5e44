# Front door: installs dependencies, builds the patched kernel and the tools
# from its tree (kernel/build.sh), then user space and BPF (CMake), and runs
# the demo or the tests. All real logic lives in those scripts and CMake.

BUILD ?= build
T ?=
# make check boots the debug kernel (lockdep & co.); demo and bench the default.
CHECK_VARIANT ?= debug
DEMO_VARIANT ?= default

abs_build := $(abspath $(BUILD))
kbuild := kernel/build.sh --build-dir $(abs_build)

# kernel-% and user-% are pattern rules, which make never applies to .PHONY
# targets; FORCE makes them always run instead (the scripts are incremental).
.PHONY: all help preflight deps source tools user check check-all check-host bpf-baseline fuzz soak demo bench install shell deb clean distclean FORCE
FORCE:

all: user-$(DEMO_VARIANT)

help:
	@echo "make demo          build everything, boot the kernel, run the demo"
	@echo "make check [T=p/]  build everything, run host tests then VM tests (prefix filter T) on the"
	@echo "                   debug (KASAN + lockdep) kernel; the tests listed as full-only are left out"
	@echo "make check-all [T=p/]  the same with every test (selftests/README.md)"
	@echo "make check-host    host tests only"
	@echo "make kselftests    the series' kselftest targets (ublk_uapi, virtio_blk), installed"
	@echo "make bpf-baseline  the kernel's whole BPF selftest suite (test_progs, -no_alu32, test_verifier,"
	@echo "                   test_maps) on the tree with and without the series (bpf kernel variant);"
	@echo "                   KERNEL=patched|unpatched runs one tree, RESUME=1 goes on with a stopped run;"
	@echo "                   KERNEL=patched alone compares with the unpatched tree's stored results,"
	@echo "                   which KERNEL=unpatched UPDATE=1 rewrites"
	@echo "make bpf-baseline GROUPS=1 [UPDATE=1]  only make check's test_progs groups, on its kernel;"
	@echo "                   UPDATE=1 rewrites the regression list and results make check compares with"
	@echo "make fuzz [SECONDS=600]  every fuzz/ test for SECONDS each, debug (KASAN) kernel"
	@echo "make soak [MINUTES=10]   ublk kill/delete soak under fio verify for MINUTES"
	@echo "make bench         benchmarks in the VM (default kernel), JSON in $(BUILD)/bench/"
	@echo "make shell         an interactive shell on the patched kernel, the tools on PATH"
	@echo "make deb [KCONFIG=/boot/config-...]  Debian packages: the kernel (bindeb-pkg) and"
	@echo "                   iouring-bpf (library, tool, policies, headers), in $(BUILD)/deb"
	@echo "make install [PREFIX=/usr/local]  liburing-bpf, its headers, pkg-config file and man pages,"
	@echo "                   the iouring-bpf tool, and what a policy is built with: vmlinux.h of"
	@echo "                   the patched kernel, libbpf headers, iouring-bpf-bpftool (docs/loop-and-library.md)"
	@echo "make kernel-default | kernel-debug   build one kernel variant"
	@echo "make user-default | user-debug [TESTS=1]  user space + BPF against that variant's BTF;"
	@echo "                   TESTS=1 (what the check targets set) adds the test suite"
	@echo "make clean         remove user-space build; make distclean removes $(BUILD)/"

# root, Debian 12 x86-64, no space in the path, disk: checked before any
# target is made, so a machine that cannot run this stops at once, with one
# line (scripts/preflight)
ifeq ($(filter-out help clean distclean,$(or $(MAKECMDGOALS),all)),)
else ifneq ($(IOURING_BPF_PREFLIGHT),0)
preflight_problems := $(shell scripts/preflight "$(abs_build)" 2>&1)
$(if $(preflight_problems),$(error $(preflight_problems)))
endif

preflight:
	@scripts/preflight "$(abs_build)"

# The test targets build the test suite too (CMake's IOURING_BPF_TESTS) and
# have deps install what only it needs (cargo and the libublk crates,
# liburing's test tarball, shellcheck). Make passes the setting on to the
# prerequisites (deps, user-*); a build directory once configured with the
# suite keeps it, so a later make demo or make shell does not drop it.
check check-all check-host fuzz soak bpf-baseline: TESTS := 1

deps:
	@scripts/deps $(if $(TESTS),--tests)

source: deps
	@$(kbuild) source

tools: source
	@$(kbuild) tools

kernel-%: source FORCE
	@$(kbuild) kernel $*

# vmlinux.h follows the variant being tested; CO-RE makes the objects run on
# either, and the file is rewritten only when it changes.
user-%: kernel-% tools FORCE
	@$(kbuild) vmlinux-h $* $(abs_build)/vmlinux.h
	@cmake -S . -B $(abs_build)/user -G Ninja -DIOURING_BPF_BUILD=$(abs_build) \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo $(if $(TESTS),-DIOURING_BPF_TESTS=ON) \
		> $(abs_build)/cmake-configure.log || \
		{ cat $(abs_build)/cmake-configure.log; exit 1; }
	@cmake --build $(abs_build)/user

user: user-$(DEMO_VARIANT)

# the kernel's BPF selftest runner (test_progs) from the patched tree
bpf-selftests-%: kernel-% FORCE
	@$(kbuild) bpf-selftests $*

# the series' kselftest targets (ublk_uapi, virtio_blk), installed
kselftests: source tools FORCE
	@$(kbuild) kselftests

# the kernel's BPF selftests with and without the series (scripts/bpf-baseline)
bpf-baseline: deps FORCE
	@IOURING_BPF_BUILD=$(abs_build) scripts/bpf-baseline $(if $(GROUPS),--groups --variant $(CHECK_VARIANT)) $(if $(UPDATE),--update) \
		$(if $(KERNEL),--kernel $(KERNEL)) $(if $(RESUME),--resume)

check: user-$(CHECK_VARIANT) bpf-selftests-$(CHECK_VARIANT) kselftests
	@selftests/run --build-dir $(abs_build) --variant $(CHECK_VARIANT) --ci $(if $(T),-t $(T))

check-all: user-$(CHECK_VARIANT) bpf-selftests-$(CHECK_VARIANT) kselftests
	@selftests/run --build-dir $(abs_build) --variant $(CHECK_VARIANT) $(if $(T),-t $(T))

check-host: user-$(CHECK_VARIANT)
	@selftests/run --build-dir $(abs_build) --variant $(CHECK_VARIANT) --no-vm $(if $(T),-t $(T))

# long reliability runs (scripts/reliability): counters in $(BUILD)/reliability/
SECONDS ?= 600
MINUTES ?= 10
fuzz: user-$(CHECK_VARIANT)
	@scripts/reliability --build-dir $(abs_build) --variant $(CHECK_VARIANT) fuzz $(SECONDS)

soak: user-$(CHECK_VARIANT)
	@scripts/reliability --build-dir $(abs_build) --variant $(CHECK_VARIANT) soak $(MINUTES)

demo: user-$(DEMO_VARIANT)
	@scripts/demo --build-dir $(abs_build) --variant $(DEMO_VARIANT)

# an interactive shell on the patched kernel, the tools on PATH
shell: user-$(DEMO_VARIANT)
	@scripts/vm --variant $(DEMO_VARIANT) --build-dir $(abs_build) --shell

# liburing-bpf (shared + static, pkg-config file, man pages), the BPF headers,
# the tool, and for building policies: vmlinux.h, libbpf/UAPI headers, bpftool
PREFIX ?= /usr/local
install: user-$(DEMO_VARIANT)
	@cmake --install $(abs_build)/user --prefix $(PREFIX)

# Debian packages of the patched kernel and of the user side, in $(BUILD)/deb;
# KCONFIG=/boot/config-... configures the kernel from that file plus ours
KCONFIG ?=
deb: user-$(DEMO_VARIANT)
	@scripts/deb --build-dir $(abs_build) --variant $(DEMO_VARIANT) $(if $(KCONFIG),--kconfig $(KCONFIG))

bench: user-$(DEMO_VARIANT)
	@scripts/bench --build-dir $(abs_build) --variant $(DEMO_VARIANT)

clean:
	rm -rf $(abs_build)/user $(abs_build)/test-logs $(abs_build)/vm

distclean:
	rm -rf $(abs_build)
