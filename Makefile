# fox: the commands users and CI rely on (see README.md and DESIGN.md).
#   make deps    install the Debian packages the build and tests need
#   make         build native images (build/native) and hosted programs (build/host)
#   make test    everything above, then the whole CTest suite
#   make run     the default job: build/bin/fox run ring --nodes NODES (3)
#   make boot    boot one node that runs APP (apps/hello), then stop it
#   make iso     build/fox.iso, bootable through GRUB
#   make bench [B=NAME]   run tests/bench programs; figures as `NAME.metric value unit`
#   make faults  the fault campaign (tests/faults/campaign.py): apps through kills and pauses, a table
#   make fuzz    every libFuzzer target for FUZZ_RUNS executions (10 million; tests/fuzz/run_all.py)
#   make debug   boot a node paused under QEMU's gdb stub and attach gdb
#   make format  apply .clang-format to the tree (format-check: list what differs)
SHELL := /bin/bash
BUILD := build
NATIVE := $(BUILD)/native
HOST := $(BUILD)/host
APP ?= hello
ARGS ?=
NODES ?= 3
B ?=
JOBS ?= $(shell nproc)

DEB_PACKAGES := dpkg-dev clang lld llvm cmake ninja-build g++ libstdc++-12-dev musl-dev libgtest-dev libcereal-dev clang-format \
  libclang-rt-14-dev qemu-system-x86 grub-pc-bin grub-common xorriso mtools gdb python3 cpio iproute2 \
  libmemcached-tools python3-pymemcache memcached dnsmasq-base ipxe \
  prometheus chromium chromium-driver python3-selenium slurmctld slurmd slurm-client munge \
  dropbear-bin openssh-client mypy
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps native host test run boot iso bench faults fuzz debug clean format format-check
all: native host $(BUILD)/bin/fox

# The frontend (boot/fox, a Python package): build/bin/fox runs it, with the interpreter it
# picks. Its modules compiled here (an environment with PYTHONDONTWRITEBYTECODE would compile
# them on every command: 12 ms of each `fox run`).
FOX_PY := $(wildcard boot/fox/*.py) boot/qemu_run.py boot/build_id.py
$(BUILD)/bin/fox: boot/fox.sh $(FOX_PY)
	install -D -m 755 boot/fox.sh $@
	$$([ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3) -m compileall -q $(FOX_PY) >/dev/null

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing $$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "deps: all packages present"; fi

$(NATIVE)/build.ninja: CMakeLists.txt cmake/native-toolchain.cmake
	cmake -S . -B $(NATIVE) -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/native-toolchain.cmake >/dev/null

$(HOST)/build.ninja: CMakeLists.txt
	CC=clang CXX=clang++ cmake -S . -B $(HOST) -G Ninja -DFOX_NATIVE_DIR=$(abspath $(NATIVE)) >/dev/null

native: $(NATIVE)/build.ninja
	ninja -C $(NATIVE) -j $(JOBS)

host: $(HOST)/build.ninja
	ninja -C $(HOST) -j $(JOBS)

iso: native
	boot/make_iso.sh $(NATIVE)/$(APP).elf $(BUILD)/fox.iso

test: deps
	$(MAKE) all iso
	cd $(HOST) && ctest --output-on-failure -j $(JOBS) --timeout 600 || { python3 $(CURDIR)/tests/ctest_digest.py .; exit 1; }

# The default job through the frontend: a cluster of NODES nodes made for the
# job (place 0 is a Linux process here), removed after. No root needed.
run: deps all
	$(BUILD)/bin/fox run ring --nodes $(NODES) --name make-run-$$$$ --timeout 300 -- $(if $(ARGS),$(patsubst --,,$(ARGS)),laps=100)

boot: deps native
	python3 boot/qemu_run.py --image $(NATIVE)/$(APP).elf --append "$(ARGS)"

bench: all
	ninja -C $(NATIVE) -j $(JOBS) bench_images
	@set -e; for b in $(if $(B),$(B),$(filter-out am_cluster tcp_sink,$(notdir $(basename $(wildcard tests/bench/*.py))))); do \
	  echo "== bench $$b"; python3 tests/bench/$$b.py; done

# FAULTS_ARGS: campaign.py's options (--runs N --seed S --apps ... --kinds ... --only APP:KIND:RUN).
faults: all
	python3 tests/faults/campaign.py --chart $(FAULTS_ARGS)

FUZZ_RUNS ?= 10000000
fuzz: host
	python3 tests/fuzz/run_all.py --runs $(FUZZ_RUNS)

debug: native
	python3 boot/qemu_run.py --image $(NATIVE)/$(APP).elf --append "$(ARGS)" --gdb & \
	sleep 1; gdb -q $(NATIVE)/$(APP).elf -ex 'set architecture i386:x86-64' \
	  -ex 'target remote localhost:1234' -ex 'hbreak KernelMain' -ex 'continue'; \
	kill %1 2>/dev/null || true

# .clang-format (Google, 120 columns) over every C++ file git tracks.
FORMAT_FILES = $$(git ls-files '*.cc' '*.h')
format:
	clang-format -i $(FORMAT_FILES)
format-check:
	@bad=$$(for f in $(FORMAT_FILES); do clang-format "$$f" | cmp -s - "$$f" || echo "$$f"; done); \
	if [ -n "$$bad" ]; then echo "format-check: not formatted (make format):"; echo "$$bad"; exit 1; fi; echo "format-check: ok"

clean:
	rm -rf $(BUILD)
