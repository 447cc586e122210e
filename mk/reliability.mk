# SPDX-License-Identifier: Apache-2.0
# Reliability targets (sanitizers, valgrind, Oclgrind): see docs/testing.md.
#
#   make test-asan       AddressSanitizer + UBSan build (build-asan), every test
#   make test-tsan       ThreadSanitizer build (build-tsan), every test
#   make test-valgrind   memcheck over every test program (build-valgrind)
#   make test-oclgrind   the kernel-level tests on Oclgrind (build-oclgrind),
#                        small sizes (CLMAD_TEST_SMALL=1)
#   make test-reliability  all four, one after the other
#
# Each target configures its own build folder, builds it, runs ctest with
# every test program started through tests/sanitizers/check-run.sh (the
# CROSSCOMPILING_EMULATOR of the tests, CLMAD_TEST_LAUNCHER), which fails a
# test when the checker reported anything, and prints its wall time.
# Suppressions (driver code only, each one explained): tests/sanitizers/.

CHECK_LAUNCHER := $(CURDIR)/tests/sanitizers/check-run.sh
CHECK_JOBS ?= 2
# ctest arguments for one checking run (e.g. CHECK_CTEST_ARGS='-R tape').
CHECK_CTEST_ARGS ?=
# The kernel-level tests that run on Oclgrind: the ones whose work is the
# library's own OpenCL kernels (broadcast wrappers, duals, reductions,
# copies; CLBlast's GEMM in the tape tests). Not test_broadcast_errors: its
# kernels are meant not to compile, and it checks that the compiler's
# messages point into the user's source, which Oclgrind's compiler does not
# do (it ignores the #line directives: "input.cl:418:14" for "source:3:14").
OCLGRIND_TESTS ?= ^test_(broadcast_(cell|kepler|paper_p|random)|vocabulary|tape|tape_random|tensor|lean_pipeline_items(1|32))$$

.PHONY: test-asan test-tsan test-valgrind test-valgrind-run test-oclgrind test-reliability deps-reliability

deps-reliability:
	@command -v valgrind >/dev/null && command -v oclgrind >/dev/null || \
	  { echo "installing valgrind and oclgrind"; \
	    sudo_=$$(command -v sudo >/dev/null && [ "$$(id -u)" != 0 ] && echo sudo); \
	    $$sudo_ apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo_ apt-get install -y -qq valgrind oclgrind; }

# $(call check_run,MODE,BUILD_DIR,CMAKE_ARGS,CTEST_ARGS,EXTRA_ENV,WARM)
# WARM non-empty: one plain ctest pass first (no checker, with EXTRA_ENV),
# which fills the build folder's POCL and clmad program caches, so that the checked pass
# loads the kernels instead of running POCL's LLVM compiler under the checker
# (hours under memcheck; LLVM is driver code, and the compile path of clmad
# itself still runs checked in the tests that use fresh caches).
define check_run
	@start=$$(date +%s); \
	cmake -S . -B $(2) -DCLMAD_WERROR=ON -DCLMAD_TEST_LAUNCHER=$(CHECK_LAUNCHER) $(3) >/dev/null && \
	cmake --build $(2) -j $(JOBS) && \
	{ [ -z "$(6)" ] || { echo "clmad: test-$(1): warming the program caches (plain run)"; \
	    env $(5) ctest --test-dir $(2) -j $(CHECK_JOBS) $(4) $(CHECK_CTEST_ARGS) >/dev/null || \
	    echo "clmad: test-$(1): the plain run failed (the checked run follows)"; }; \
	  warm=$$(date +%s); echo "clmad: test-$(1): build (and warm-up) $$((warm - start)) s"; \
	  status=0; \
	  env CLMAD_CHECK=$(1) $(5) ctest --test-dir $(2) --output-on-failure -j $(CHECK_JOBS) $(4) $(CHECK_CTEST_ARGS) || status=$$?; \
	  end=$$(date +%s); \
	  echo "clmad: test-$(1) wall time: $$((end - start)) s (status $$status)"; \
	  exit $$status; }
endef

# No warm-up: the checked pass compiles every kernel itself, so clmad's
# compile paths run under ASan too (POCL's LLVM is not instrumented and
# compiles at its usual speed). LeakSanitizer's tracer crashes that once
# made a warm-up and retries necessary had one cause, now avoided
# (intercept_tls_get_addr=0, tests/sanitizers/check-run.sh says why);
# checker_reports_leaks checks that a lost block is still reported.
test-asan: deps
	$(call check_run,asan,build-asan,-DCLMAD_SANITIZE=address,,,)

test-tsan: deps
	$(call check_run,tsan,build-tsan,-DCLMAD_SANITIZE=thread,,)

# Every test program; the shell-script tests (install_outside,
# readme_snippets) build and run outside programs, not clmad's: left out,
# and so are test_lean_pipeline_items* (for Oclgrind; on POCL parts of
# test_lean_pipeline).
# CLMAD_TEST_SMALL=1: test_tape_random runs 12 of its 120 programs.
# Skipped on AVX-512 hosts (CLMAD_VALGRIND_FORCE=1 runs it anyway): valgrind
# hides AVX-512, so POCL under memcheck sees another device than in the
# warm-up (pthread-haswell, not pthread-skylake-avx512), misses its caches
# (also with POCL_LLVM_CPU_NAME=haswell in both runs: its cache key holds
# more) and compiles every kernel under memcheck: tests past their 900 s
# limit, and LLVM's leaks reported. ASan, TSan and Oclgrind still run.
test-valgrind: deps deps-reliability
	@if grep -qw avx512f /proc/cpuinfo && [ "$${CLMAD_VALGRIND_FORCE:-0}" != 1 ]; then \
	  echo "clmad: test-valgrind: skipped on this AVX-512 host (POCL would compile every kernel under memcheck; CLMAD_VALGRIND_FORCE=1 runs it)"; \
	else $(MAKE) --no-print-directory test-valgrind-run; fi

test-valgrind-run:
	$(call check_run,valgrind,build-valgrind,,-E '^(install_outside|readme_snippets|test_lean_pipeline_items(1|32))$$',CLMAD_TEST_SMALL=1,warm)

test-oclgrind: deps deps-reliability
	$(call check_run,oclgrind,build-oclgrind,,-R '$(OCLGRIND_TESTS)',CLMAD_TEST_SMALL=1)

test-reliability: test-asan test-tsan test-valgrind test-oclgrind
