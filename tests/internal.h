/* SPDX-License-Identifier: Apache-2.0 */
/* The library internals that white-box tests and benchmarks reach, and why;
 * the one header of tests/ and bench/ that includes headers of src/ (their
 * programs that include it get src/ on their include path; every other test
 * and benchmark sees the public headers only). Everything else goes through
 * include/clmad.h and include/clmad_cl.h. These are hidden symbols of the
 * shared library: the programs link the static one. */
#ifndef CLMAD_TESTS_INTERNAL_H
#define CLMAD_TESTS_INTERNAL_H

#include <clmad_cl.h>

/* clmad__program_get: the program cache (memory and disk) under test, and
 * the benchmarks' hand-written reference kernels compiled through it; no
 * public call compiles an arbitrary OpenCL source. */
#include "runtime/program.h"

/* clmad__hash_bytes, CLMAD_HASH_INIT: test_disk_cache_trust forges cache
 * files whose checksum is right, to show what the cache trusts beyond it. */
#include "base/hash.h"

/* clmad__embedded_source: the embedded copies of cl/ (test_program_cache
 * checks they are there; benchmarks time copy.cl as a bandwidth floor). */
#include "base/embedded.h"

/* clmad_variant, clmad__generate_program: test_kernel_names checks every
 * identifier of the generated wrapper for each variant, which no public
 * call shows. The kernel's variants (clmad_kernel.variants) and
 * clmad__items_per_work_item: bench_arity asks the device about the
 * compiled variant it timed; bench_hmlstm sizes its hand-written kernels
 * as clmad sizes its own, to compare like with like. */
#include "broadcast/kernel.h"

/* clmad__enqueue_1d: bench_hmlstm launches its hand-written kernels as
 * clmad launches its own (same work-group rounding, same counters). */
#include "runtime/primitives.h"

/* clmad__optimizer_launch_per_parameter: test_optim_group compares the
 * optimizer's grouped launches with one launch per parameter, bit for bit,
 * and bench_optim times the two. */
#include "ops/optim.h"

/* clmad__fusion_enabled and clmad_tensor.held: test_fusion checks that a
 * fused loss's y stays held through the calls that do not read it. */
#include "runtime/held.h"

#endif
