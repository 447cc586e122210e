# SPDX-License-Identifier: Apache-2.0
# Thin wrapper over CMake. The two commands: `make demo` and `make test`.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
# No "Entering directory" lines, here or in the make that CMake's build runs
# (it inherits MAKEFLAGS).
MAKEFLAGS += --no-print-directory

.PHONY: all deps configure build test demo bench bench-peers check-vector install clean ci-time \
        deps-portability test-portability bench-portability deps-torch test-unfused wheel test-wheel

all: build

deps:
	@scripts/install-deps.sh

# Debian's python3-torch, so that `make test` also checks clmad_hvp against
# PyTorch's double backward (the test hvp_torch skips, saying so, without it).
deps-torch:
	@CLMAD_DEPS_TORCH=1 scripts/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

configure: deps $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	@scripts/run-tests.sh $(BUILD)

# The suite with fusion off in every context (CLMAD_FUSE=0): each result
# must be the same without it. Not the tests that compare fusion on with
# off (they need it on), nor the Python suite (its own fusion test).
test-unfused: build
	cd $(BUILD) && CLMAD_FUSE=0 ctest --output-on-failure -j $(JOBS) -E '^(test_fusion|test_fusion_random|test_held_calls|python)$$'

# Lists the devices, then runs the HM-LSTM example (gradient check, training,
# fused vs unfused timing): about 7 s on POCL, about 80 s on a first run while
# the OpenCL programs (CLBlast's GEMM above all) compile into the caches
# (`CLMAD_LOG=info make demo` says when each compile runs and how long it takes).
demo: build
	@echo; echo "== $(BUILD)/clmad-info"
	@$(BUILD)/clmad-info
	@echo; echo "== $(BUILD)/example_roundtrip"
	@$(BUILD)/example_roundtrip
	@echo; echo "== $(BUILD)/example_hmlstm"
	@$(BUILD)/example_hmlstm

# Benchmarks on every OpenCL implementation installed here; writes bench/results/.
bench:
	@CLMAD_DEPS_EXTRA=1 scripts/install-deps.sh
	$(MAKE) build
	@scripts/run-bench.sh $(BUILD)

# clmad's HM-LSTM benchmark next to PyTorch (eager, torch.compile), JAX and
# NumPy on the same inputs, on this CPU; writes bench/results/peers.*. The
# first run installs them into $(BUILD)/peers-venv from PyPI (torch: several GB).
bench-peers:
	@CLMAD_DEPS_PEERS=1 scripts/install-deps.sh
	$(MAKE) build
	@scripts/run-peers.sh $(BUILD)

# Are the generated kernels of the HM-LSTM cell packed SIMD code on POCL?
# Disassembles what POCL built (also a test of `make test`).
check-vector: build
	@scripts/check-vector.sh $(BUILD)

# The OpenCL implementations besides POCL that the portability targets
# run on: rusticl on llvmpipe and Oclgrind (Debian), Intel's OpenCL CPU
# runtime (PyPI, in a venv under $(BUILD)/portability).
deps-portability:
	@scripts/install-portability.sh $(BUILD)

# The test suite on each implementation installed (POCL, POCL's AVX2
# library on AVX-512 hosts, rusticl, Intel's runtime, Oclgrind), one line
# each; logs in $(BUILD)/portability/.
test-portability: deps-portability
	@scripts/test-portability.sh $(BUILD)

# The HM-LSTM benchmark on each implementation installed, beside the best
# peer (torch.compile, JAX jit) on the same host, in interleaved rounds;
# writes bench/results/portability.{md,json,svg}. Installs the
# implementations and the peers first (several GB, once).
bench-portability: deps-portability
	@CLMAD_DEPS_PEERS=1 scripts/install-deps.sh
	$(MAKE) build
	@scripts/install-peers.sh $(BUILD)
	@scripts/run-portability.sh $(BUILD)

# A self-contained manylinux wheel of the Python package in $(BUILD)/wheel/:
# libclmad.so (built again, in Release, under $(BUILD)/wheel-cmake) with the
# CLBlast and OpenCL loader it links, bundled by auditwheel (PyPI tools in
# $(BUILD)/wheel-tools).
wheel: deps
	@JOBS=$(JOBS) scripts/build-wheel.sh $(BUILD)

# Installs that wheel with the extra [pocl] into a fresh venv and runs the
# examples with no OpenCL of the system's (scripts/test-wheel.sh); not part
# of `make test` (PyPI downloads, a second build of the library).
test-wheel: wheel
	@scripts/test-wheel.sh $(BUILD)

# Header, libclmad.so and .a, clmad-info, CMake package, clmad.pc under PREFIX.
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)

# The phase times of the last .ci/run, and a failure naming the slowest
# tests when they add up to more than CI's budget (scripts/ci-time.sh).
ci-time:
	@scripts/ci-time.sh $(BUILD)/ci-phases.tsv

# Sanitizers, valgrind and Oclgrind targets.
-include mk/reliability.mk
