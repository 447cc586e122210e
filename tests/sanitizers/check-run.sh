#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs one test program under a checker and fails when the checker reported
# anything, in the program itself or in any of its Criterion workers.
#
#   check-run.sh TEST_PROGRAM [ARGS...]
#
# It is the CROSSCOMPILING_EMULATOR of the test targets in the checking
# builds (tests/CMakeLists.txt, CLMAD_TEST_LAUNCHER), so ctest runs every
# test through it with the test environment already set. The checker comes
# from CLMAD_CHECK:
#   asan      AddressSanitizer + UBSan build: reports go to log files
#   tsan      ThreadSanitizer build: reports go to log files
#   valgrind  memcheck over the program and every worker it spawns
#   oclgrind  the OpenCL calls go to Oclgrind (its ICD, in a vendors folder
#             of its own under the build folder) with API checks, data-race
#             and uninitialised-value detection, kernels unoptimised
#   (empty)   the program runs as is
#
# Why log files: Criterion runs each test in a worker process and takes the
# test's result from it before the worker exits, so a sanitizer report made
# at exit (LeakSanitizer) or after the result (valgrind's error summary), and
# the exit status that goes with it, never reach Criterion or ctest. Every
# process writes its own file (the sanitizers' log_path, valgrind's %p), and
# this script fails the test when one holds a report, and prints it.
#
# Logs: BUILD/check-logs/<test program>[-<items>]/, kept after the run (a
# program registered twice runs with CLMAD_ITEMS_PER_WORK_ITEM set: a folder
# each, as ctest may run both at once).
set -u

prog=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
name=$(basename "$prog")
build=$(cd "$(dirname "$prog")/.." && pwd)
logs="$build/check-logs/$name${CLMAD_ITEMS_PER_WORK_ITEM:+-$CLMAD_ITEMS_PER_WORK_ITEM}"
rm -rf "$logs"
mkdir -p "$logs"
mode=${CLMAD_CHECK:-}

case "$mode" in
asan)
    # detect_leaks: LSan at the exit of every process. UBSan aborts on its
    # first finding (the build uses -fno-sanitize-recover=undefined), which
    # fails the test, and prints to stderr (ctest shows it).
    # use_sigaltstack=0: LLVM (POCL's kernel compiler) installs an alternate
    # signal stack of its own, malloc'ed (llvm::sys CreateSigAltStack, 64 KiB
    # + MINSIGSTKSZ = 80064 bytes), in the thread that first initialises it.
    # ASan, at the exit of that thread, takes the stack for the one it
    # mmap'ed itself and aborts when munmap fails ("failed to deallocate
    # 0x138c0 bytes ... unable to unmap" in UnsetAlternateSignalStack; seen
    # in test_threads, whose threads create the first contexts). Without its
    # own alternate stack ASan only loses its report of a stack overflow.
    # intercept_tls_get_addr=0: the cause of LeakSanitizer's "Tracer caught
    # signal 11" at the exit of programs that ran POCL. The runtime of GCC 12
    # (and of LLVM up to 16) guesses the bounds of each dynamic TLS block in
    # its __tls_get_addr interceptor: a block whose address is 16 modulo
    # 4096 is taken for one with glibc 2.19's header, and the two words
    # before it (here an allocator chunk header) are read as its start and
    # size. LSan's tracer then scans that range and faults. Whether a block
    # lands at such an address depends on the heap layout, hence the flakes
    # (with verbosity=2, test_program_cache logged "glibc >=2.19 suspected;
    # tls={0x781 0x1800001102}" and "Tracer caught signal 11: addr=0x788" in
    # every run; none with the option). What the option costs: LSan no
    # longer takes dynamic TLS blocks for roots, so a block pointed to only
    # from a dlopen'ed library's thread-local variable would be reported (a
    # false alarm, never a missed leak; none is reported here). The
    # checker_reports_leaks test (leak_probe.c) shows a lost block is still
    # reported after POCL ran.
    export ASAN_OPTIONS="log_path=$logs/asan:detect_leaks=1:print_suppressions=0:use_sigaltstack=0:intercept_tls_get_addr=0:${ASAN_OPTIONS:-}"
    export LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
    "$@"
    status=$?
    ;;
tsan)
    export TSAN_OPTIONS="log_path=$logs/tsan:suppressions=$here/tsan.supp:print_suppressions=0:second_deadlock_stack=1:${TSAN_OPTIONS:-}"
    "$@"
    status=$?
    ;;
valgrind)
    # --trace-children: Criterion's workers are new executions of the
    # program (fork + exec). The tools that POCL and the tests run (the
    # linker POCL calls to make a kernel's shared object, the shell and rm
    # of system()) are not traced: they are not the program under test.
    # Leaks: only "definitely lost" blocks count as errors; the driver's
    # are suppressed in valgrind.supp.
    valgrind --tool=memcheck --trace-children=yes --log-file="$logs/vg.%p" \
        --trace-children-skip='*/ld,*/ld.*,*-ld,*-ld.*,*/sh,*/bash,*/dash,*/rm,*/mkdir,*/clang*' \
        --suppressions="$here/valgrind.supp" --error-exitcode=1 --num-callers=40 \
        --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite \
        --gen-suppressions=all "$@"
    status=$?
    ;;
oclgrind)
    export OCL_ICD_VENDORS="$build/oclgrind-icd"
    # Uninitialised-value tracking needs unoptimised kernels: the Oclgrind
    # of Debian 12 (21.10) aborts in its Uninitialized plugin on LLVM's
    # `freeze` instruction ("OCLGRIND FATAL ERROR (Uninitialized.cpp:1805)
    # Unsupported instruction: freeze"), which its clang emits for the
    # index arithmetic of optimised kernels (clmad's and CLBlast's alike).
    # So every program is built with -cl-opt-disable, and with
    # CLMAD_NO_FORCE_INLINE: forced inlining of the dual-number functions
    # (which return structs) emits llvm.experimental.noalias.scope.decl even
    # at -O0, an intrinsic the interpreter lacks (cl/clmad_ad.clh).
    # CLMAD_OCLGRIND_UNINITIALIZED=0 turns the tracking off again.
    export OCLGRIND_CHECK_API=1 OCLGRIND_DATA_RACES=1
    export OCLGRIND_UNINITIALIZED=${CLMAD_OCLGRIND_UNINITIALIZED:-1}
    export OCLGRIND_BUILD_OPTIONS="-cl-opt-disable -DCLMAD_NO_FORCE_INLINE ${OCLGRIND_BUILD_OPTIONS:-}"
    # clmad's disk cache does not see these options: a folder of its own.
    export CLMAD_CACHE_DIR="$build/clmad-cache-oclgrind-O0"
    # Oclgrind prints its findings on stderr and keeps the exit status;
    # keep a copy to look for them.
    "$@" 2> >(tee "$logs/stderr.log" >&2)
    status=$?
    wait
    ;;
"")
    exec "$@"
    ;;
*)
    echo "check-run.sh: unknown CLMAD_CHECK '$mode'" >&2
    exit 2
    ;;
esac

# ---- what the checker said -------------------------------------------------
found=0
report() { # file: prints it (the first 200 lines) as a finding
    found=1
    echo "==== $mode report: $1" >&2
    head -n 200 "$1" >&2
}
case "$mode" in
asan|tsan)
    # Any file is a report: with print_suppressions=0 the sanitizers write
    # nothing when every finding was suppressed.
    for f in "$logs"/*; do
        [ -s "$f" ] && report "$f"
    done
    ;;
valgrind)
    for f in "$logs"/vg.*; do
        [ -f "$f" ] || continue
        if grep -qE "ERROR SUMMARY: [1-9]" "$f"; then
            report "$f"
        fi
    done
    ;;
oclgrind)
    # Oclgrind's messages: invalid accesses, data races, uninitialised
    # values, API errors, and a kernel that it had to stop.
    if grep -qE "Invalid (read|write)|data race|Uninitiali[sz]ed|OpenCL runtime error|OCLGRIND FATAL|Oclgrind - " "$logs/stderr.log"; then
        grep -nE -A12 "Invalid (read|write)|data race|Uninitiali[sz]ed|OpenCL runtime error|OCLGRIND FATAL|Oclgrind - " "$logs/stderr.log" | head -n 200 >&2
        found=1
    fi
    ;;
esac
if [ "$found" = 1 ]; then
    echo "check-run.sh: $mode reported errors in $name (logs: $logs)" >&2
    [ "$status" = 0 ] && status=1
fi
exit "$status"
