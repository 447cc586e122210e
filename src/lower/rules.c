/* SPDX-License-Identifier: Apache-2.0 */
/* The front end's tables: how each math name applies to T, the signatures
 * of the ad_ vocabulary (cl/clmad_ad.clh), and the type names it knows. */
#include "lower/lower.h"

#include <string.h>

static const lower_rule RULES[] = {
    {"exp", "ad_exp", LR_UNARY},           {"exp2", "ad_exp2", LR_UNARY},
    {"expm1", "ad_expm1", LR_UNARY},       {"log", "ad_log", LR_UNARY},
    {"log2", "ad_log2", LR_UNARY},         {"log10", "ad_log10", LR_UNARY},
    {"log1p", "ad_log1p", LR_UNARY},       {"sqrt", "ad_sqrt", LR_UNARY},
    {"rsqrt", "ad_rsqrt", LR_UNARY},       {"cbrt", "ad_cbrt", LR_UNARY},
    {"sin", "ad_sin", LR_UNARY},           {"cos", "ad_cos", LR_UNARY},
    {"tan", "ad_tan", LR_UNARY},           {"asin", "ad_asin", LR_UNARY},
    {"acos", "ad_acos", LR_UNARY},         {"atan", "ad_atan", LR_UNARY},
    {"sinh", "ad_sinh", LR_UNARY},         {"cosh", "ad_cosh", LR_UNARY},
    {"tanh", "ad_tanh", LR_UNARY},         {"asinh", "ad_asinh", LR_UNARY},
    {"acosh", "ad_acosh", LR_UNARY},       {"atanh", "ad_atanh", LR_UNARY},
    {"erf", "ad_erf", LR_UNARY},           {"erfc", "ad_erfc", LR_UNARY},
    {"fabs", "ad_fabs", LR_UNARY},
    {"sigmoid", "ad_sigmoid", LR_CLMAD_UNARY}, {"softplus", "ad_softplus", LR_CLMAD_UNARY},
    {"relu", "ad_relu", LR_CLMAD_UNARY},   {"square", "ad_square", LR_CLMAD_UNARY},
    {"recip", "ad_recip", LR_CLMAD_UNARY},
    {"atan2", "ad_atan2", LR_BINARY},      {"hypot", "ad_hypot", LR_BINARY},
    {"fmin", "ad_fmin", LR_BINARY},        {"fmax", "ad_fmax", LR_BINARY},
    {"min", "ad_fmin", LR_BINARY},         {"max", "ad_fmax", LR_BINARY},
    {"copysign", "ad_copysign", LR_BINARY},
    {"pow", "ad_pow", LR_POW},             {"powr", "ad_pow", LR_POW},
    {"pown", "ad_pown", LR_POWN},
    {"fma", "ad_fma", LR_FMA},             {"mad", "ad_fma", LR_FMA},
    {"clamp", "ad_clamp", LR_CLAMP},
    {"isnan", NULL, LR_PREDICATE},         {"isinf", NULL, LR_PREDICATE},
    {"isfinite", NULL, LR_PREDICATE},      {"isnormal", NULL, LR_PREDICATE},
    {"signbit", NULL, LR_PREDICATE},
    {"floor", NULL, LR_STEP},              {"ceil", NULL, LR_STEP},
    {"round", NULL, LR_STEP},              {"trunc", NULL, LR_STEP},
    {"rint", NULL, LR_STEP},               {"sign", NULL, LR_STEP},
    /* OpenCL math builtins that have no rule in the vocabulary. */
    {"acospi", NULL, LR_NO_RULE},  {"asinpi", NULL, LR_NO_RULE},  {"atanpi", NULL, LR_NO_RULE},
    {"atan2pi", NULL, LR_NO_RULE}, {"cospi", NULL, LR_NO_RULE},   {"sinpi", NULL, LR_NO_RULE},
    {"tanpi", NULL, LR_NO_RULE},   {"exp10", NULL, LR_NO_RULE},   {"fdim", NULL, LR_NO_RULE},
    {"fmod", NULL, LR_NO_RULE},    {"remainder", NULL, LR_NO_RULE}, {"lgamma", NULL, LR_NO_RULE},
    {"tgamma", NULL, LR_NO_RULE},  {"logb", NULL, LR_NO_RULE},    {"ldexp", NULL, LR_NO_RULE},
    {"rootn", NULL, LR_NO_RULE},   {"sincos", NULL, LR_NO_RULE},  {"nextafter", NULL, LR_NO_RULE},
    {"maxmag", NULL, LR_NO_RULE},  {"minmag", NULL, LR_NO_RULE},  {"step", NULL, LR_NO_RULE},
    {"smoothstep", NULL, LR_NO_RULE}, {"mix", NULL, LR_NO_RULE},  {"degrees", NULL, LR_NO_RULE},
    {"radians", NULL, LR_NO_RULE}, {"select", NULL, LR_NO_RULE},  {"bitselect", NULL, LR_NO_RULE},
    {"abs", NULL, LR_NO_RULE},
};

static int named(const char *s, const char *name, size_t len)
{
    return strlen(s) == len && !strncmp(s, name, len);
}

const lower_rule *clmad__lower_rule(const char *name, size_t len)
{
    for (size_t k = 0; k < sizeof RULES / sizeof *RULES; k++)
        if (named(RULES[k].name, name, len))
            return &RULES[k];
    /* native_exp, half_sin, ...: builtins without a derivative rule. */
    if ((len > 7 && !strncmp(name, "native_", 7)) || (len > 5 && !strncmp(name, "half_", 5))) {
        static const lower_rule approximate = {"native_ or half_ math", NULL, LR_NO_RULE};
        return &approximate;
    }
    return NULL;
}

/* Return type, then parameters. */
static const struct {
    const char *name, *signature;
} AD_SIGNATURES[] = {
    {"ad_val", "rT"},     {"ad_const", "Tr"},   {"ad_select", "TiTT"}, {"ad_lt", "iTT"},
    {"ad_le", "iTT"},     {"ad_gt", "iTT"},     {"ad_ge", "iTT"},      {"ad_add", "TTT"},
    {"ad_sub", "TTT"},    {"ad_mul", "TTT"},    {"ad_div", "TTT"},     {"ad_neg", "TT"},
    {"ad_fma", "TTTT"},   {"ad_square", "TT"},  {"ad_recip", "TT"},    {"ad_addr", "TTr"},
    {"ad_subr", "TTr"},   {"ad_rsub", "TrT"},   {"ad_mulr", "TTr"},    {"ad_divr", "TTr"},
    {"ad_rdiv", "TrT"},   {"ad_pow", "TTT"},    {"ad_powr", "TTr"},    {"ad_rpow", "TrT"},
    {"ad_pown", "TTi"},   {"ad_sqrt", "TT"},    {"ad_rsqrt", "TT"},    {"ad_cbrt", "TT"},
    {"ad_exp", "TT"},     {"ad_exp2", "TT"},    {"ad_expm1", "TT"},    {"ad_log", "TT"},
    {"ad_log2", "TT"},    {"ad_log10", "TT"},   {"ad_log1p", "TT"},    {"ad_sin", "TT"},
    {"ad_cos", "TT"},     {"ad_tan", "TT"},     {"ad_asin", "TT"},     {"ad_acos", "TT"},
    {"ad_atan", "TT"},    {"ad_atan2", "TTT"},  {"ad_sinh", "TT"},     {"ad_cosh", "TT"},
    {"ad_tanh", "TT"},    {"ad_asinh", "TT"},   {"ad_acosh", "TT"},    {"ad_atanh", "TT"},
    {"ad_erf", "TT"},     {"ad_erfc", "TT"},    {"ad_hypot", "TTT"},   {"ad_fabs", "TT"},
    {"ad_fmin", "TTT"},   {"ad_fmax", "TTT"},   {"ad_copysign", "TTT"}, {"ad_relu", "TT"},
    {"ad_clamp", "TTrr"}, {"ad_sigmoid", "TT"}, {"ad_softplus", "TT"},
};

const char *clmad__lower_ad_signature(const char *name, size_t len)
{
    for (size_t k = 0; k < sizeof AD_SIGNATURES / sizeof *AD_SIGNATURES; k++)
        if (named(AD_SIGNATURES[k].name, name, len))
            return AD_SIGNATURES[k].signature;
    return NULL;
}

int clmad__lower_is_real_constant(const char *name, size_t len)
{
    static const char *const NAMES[] = {"INFINITY", "NAN", "MAXFLOAT", "HUGE_VALF", "HUGE_VAL",
                                        "FLT_MAX", "FLT_MIN", "FLT_EPSILON", "DBL_MAX", "DBL_MIN",
                                        "DBL_EPSILON"};
    if (len > 2 && !strncmp(name, "M_", 2))
        return 1; /* M_PI, M_PI_F, M_E, M_LN2, ... */
    for (size_t k = 0; k < sizeof NAMES / sizeof *NAMES; k++)
        if (named(NAMES[k], name, len))
            return 1;
    return 0;
}

int clmad__lower_type_word(const char *name, size_t len)
{
    static const struct {
        const char *word;
        int base;
    } WORDS[] = {
        {"T", LT_T},          {"real", LT_REAL},    {"float", LT_REAL},   {"double", LT_REAL},
        {"half", LT_REAL},    {"int", LT_INT},      {"uint", LT_INT},     {"long", LT_INT},
        {"ulong", LT_INT},    {"short", LT_INT},    {"ushort", LT_INT},   {"char", LT_INT},
        {"uchar", LT_INT},    {"unsigned", LT_INT}, {"signed", LT_INT},   {"bool", LT_INT},
        {"size_t", LT_INT},   {"ptrdiff_t", LT_INT}, {"intptr_t", LT_INT}, {"uintptr_t", LT_INT},
        {"void", LT_VOID},
    };
    for (size_t k = 0; k < sizeof WORDS / sizeof *WORDS; k++)
        if (named(WORDS[k].word, name, len))
            return WORDS[k].base;
    /* Vector types: float4, int2, uchar16, ... */
    static const char *const SCALARS[] = {"char", "uchar", "short", "ushort", "int", "uint",
                                          "long", "ulong", "float", "double", "half"};
    for (size_t k = 0; k < sizeof SCALARS / sizeof *SCALARS; k++) {
        size_t n = strlen(SCALARS[k]);
        if (len > n && len <= n + 2 && !strncmp(name, SCALARS[k], n)) {
            const char *w = name + n;
            size_t wl = len - n;
            if ((wl == 1 && strchr("2348", w[0])) || (wl == 2 && !strncmp(w, "16", 2)))
                return LT_OTHER;
        }
    }
    return -1;
}
