/* SPDX-License-Identifier: Apache-2.0 */
/* The HM-LSTM cell update of the paper (Revels et al., 2018), as the
 * benchmarks build it: three branches on the controls z and zb (FLUSH,
 * COPY, UPDATE), in the ad_ vocabulary. */
#ifndef CLMAD_BENCH_HMLSTM_CELL_H
#define CLMAD_BENCH_HMLSTM_CELL_H

static const char *const CELL_SOURCE =
    "T cell_update(T z, T zb, T c, T f, T i, T g)\n"
    "{\n"
    "    if (ad_val(z) == 1)  return ad_mul(ad_sigmoid(i), ad_tanh(g));\n"
    "    if (ad_val(zb) == 0) return c;\n"
    "    return ad_add(ad_mul(ad_sigmoid(f), c), ad_mul(ad_sigmoid(i), ad_tanh(g)));\n"
    "}\n";

#endif
