# SPDX-License-Identifier: Apache-2.0
# Reliability targets (sanitizers, valgrind, Oclgrind): see docs/testing.md.
#
#   make test-asan       AddressSanitizer + UBSan build (build-asan), every test
#   make test-tsan       ThreadSanitizer build (build-tsan), the threads test
#   make test-valgrind   memcheck over the memcheck set (build-valgrind),
#                        small sizes (CLMAD_TEST_SMALL=1); VALGRIND_TESTS=.
#                        runs every test program
#   make test-oclgrind   the kernel-level tests on Oclgrind (build-oclgrind),
#                        small sizes (CLMAD_TEST_SMALL=1)
#   make test-reliability  all four, one after the other
#   make coverage-memcheck  line coverage of src/ by the memcheck set against
#                        every test program (build-coverage; fails past 5 points)
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
OCLGRIND_TESTS ?= ^test_(broadcast_(cell|kepler|paper_p|random)|flat_kernels|fusion|vocabulary|tape|tape_random|tensor|lean_pipeline_items(1|32)|regions_sizes|half|half_compute|grad_scaler)$$

.PHONY: test-asan test-tsan test-valgrind test-oclgrind test-reliability deps-reliability coverage-memcheck

# $(call install_missing,PACKAGES): installs the Debian packages, named as
# their commands, that are not on the PATH.
define install_missing
	@missing=; for p in $(1); do command -v $$p >/dev/null || missing="$$missing $$p"; done; \
	[ -z "$$missing" ] || { echo "installing$$missing"; \
	  sudo_=$$(command -v sudo >/dev/null && [ "$$(id -u)" != 0 ] && echo sudo); \
	  $$sudo_ apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo_ apt-get install -y -qq $$missing; }
endef

deps-reliability:
	$(call install_missing,valgrind oclgrind)

# $(call check_run,MODE,BUILD_DIR,CMAKE_ARGS,CTEST_ARGS,EXTRA_ENV,CACHES)
# CACHES = seed: before the checked pass, POCL's kernel cache of each test
# program is seeded from the plain build's ($(BUILD)/pocl-cache, filled by
# `make test`) where that one exists and the checking build has none yet:
# POCL keys its cache by the preprocessed source, the options and the
# device, so the kernels the tests build are found there and POCL's LLVM
# compiler does not run under the checker. clmad's own program cache
# (clmad-cache) is not seeded: clmad's compile path, clBuildProgram
# included, still runs checked. The copy is whole or not at all (a full
# disk leaves no half cache).
# CACHES = warm: one plain ctest pass first (no checker, with EXTRA_ENV),
# which fills the caches where the checked pass sees another device than
# `make test` did (memcheck: CHECK_VALGRIND_POCL_ENV below).
define check_run
	@start=$$(date +%s); \
	cmake -S . -B $(2) -DCLMAD_WERROR=ON -DCLMAD_TEST_LAUNCHER=$(CHECK_LAUNCHER) $(3) >/dev/null && \
	cmake --build $(2) -j $(JOBS) && \
	{ if [ "$(6)" = seed ] && [ -d $(BUILD)/pocl-cache ] && [ ! -d $(2)/pocl-cache ]; then \
	    if cp -a $(BUILD)/pocl-cache $(2)/pocl-cache.part && mv $(2)/pocl-cache.part $(2)/pocl-cache; then \
	      echo "clmad: test-$(1): POCL's kernel caches seeded from $(BUILD)"; \
	    else rm -rf $(2)/pocl-cache.part; echo "clmad: test-$(1): POCL's kernel caches not seeded (the copy failed)"; fi; fi; \
	  [ "$(6)" != warm ] || { echo "clmad: test-$(1): warming the program caches (plain run)"; \
	    env $(5) ctest --test-dir $(2) -j $(CHECK_JOBS) $(4) $(CHECK_CTEST_ARGS) >/dev/null || \
	    echo "clmad: test-$(1): the plain run failed (the checked run follows)"; }; \
	  warm=$$(date +%s); echo "clmad: test-$(1): build (and warm-up) $$((warm - start)) s"; \
	  status=0; \
	  env CLMAD_CHECK=$(1) $(5) ctest --test-dir $(2) --output-on-failure -j $(CHECK_JOBS) $(4) $(CHECK_CTEST_ARGS) || status=$$?; \
	  end=$$(date +%s); \
	  echo "clmad: test-$(1) wall time: $$((end - start)) s (status $$status)"; \
	  scripts/slowest-tests.sh $(2) 5; \
	  exit $$status; }
endef

# Every test program, under ASan + UBSan, with POCL's caches seeded from
# `make test` (above) where it ran first, as in CI; cold otherwise (the
# compiles then take most of its time). LeakSanitizer's tracer crashes that
# once made a warm-up and retries necessary had one cause, now avoided
# (intercept_tls_get_addr=0, tests/sanitizers/check-run.sh says why);
# checker_reports_leaks checks that a lost block is still reported.
test-asan: deps
	$(call check_run,asan,build-asan,-DCLMAD_SANITIZE=address,,,seed)

test-tsan: deps
	$(call check_run,tsan,build-tsan,-DCLMAD_SANITIZE=thread,,,seed)

# The memcheck set, chosen by lines of src/ reached per second under
# memcheck (scripts/coverage-report.py --suggest): it reaches every file of
# src/ that the whole suite reaches, and 85.4% of src/'s lines with warm
# caches against 89.1% for all the test programs (make coverage-memcheck
# checks it, and fails past 5 points). Left out are programs whose lines it
# mostly reaches already, among them those that compile kernels on purpose
# (test_broadcast_errors, test_program_cache, test_disk_cache_trust: POCL's
# compiler under memcheck, 100-160 s each; ASan runs every program), the
# shell-script tests (outside programs, not clmad's) and
# test_lean_pipeline_items* (for Oclgrind). VALGRIND_TESTS=. runs every
# test program but those.
VALGRIND_TESTS ?= ^(test_abi|test_bmm|test_broadcast_int_params|test_context_misuse|test_context_params|test_device|test_hvp|test_index_ops|test_interop|test_kernel_names|test_limits|test_log|test_lower|test_optim_group|test_optimizer_state|test_print|test_safetensors|test_safetensors_bad|test_staging|test_train_optim|test_tuning|test_variant_cache)$$
# Valgrind's CPU has no AVX-512, so on an AVX-512 host POCL under memcheck
# is another device (pthread-haswell) than in a plain run
# (pthread-skylake-avx512) and would compile every kernel under memcheck
# (hours). Both passes therefore take POCL's AVX2 kernel library and
# LLVM's haswell target, which is what valgrind's CPU is on every host with
# AVX2: the warm-up then fills the very cache entries the checked pass
# looks up, and memcheck runs the same way on AVX2 and AVX-512 hosts. On a
# CPU without AVX2 both passes take POCL's own choice.
CHECK_VALGRIND_POCL_ENV := $(if $(shell grep -qw avx2 /proc/cpuinfo 2>/dev/null && echo y),POCL_KERNELLIB_NAME=avx2 POCL_LLVM_CPU_NAME=haswell)
test-valgrind: deps deps-reliability
	$(call check_run,valgrind,build-valgrind,,-R '$(VALGRIND_TESTS)' -E '^(install_outside|readme_snippets|test_lean_pipeline_items(1|32))$$',CLMAD_TEST_SMALL=1 $(CHECK_VALGRIND_POCL_ENV),warm)

test-oclgrind: deps deps-reliability
	$(call check_run,oclgrind,build-oclgrind,,-R '$(OCLGRIND_TESTS)',CLMAD_TEST_SMALL=1)

test-reliability: test-asan test-tsan test-valgrind test-oclgrind

coverage-memcheck: deps
	$(call install_missing,gcovr)
	@scripts/coverage-by-test.sh build-coverage build-coverage/by-test
	@scripts/coverage-report.py build-coverage/by-test '$(VALGRIND_TESTS)'
