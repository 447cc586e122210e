/* SPDX-License-Identifier: Apache-2.0 */
/* Random broadcast functions over T for test_plain_random, in three parallel
 * forms from one random program:
 *   pg_print(..., PG_PLAIN)  plain OpenCL C: operators, math names, (T)r, ...
 *   pg_print(..., PG_AD)     the ad_ form, written by the canonical rules of
 *                            the lowering (PLAIN_SPEC.md / README), so that it
 *                            computes exactly what the lowered plain form does
 *   pg_eval                  a host interpreter in double (the reference)
 *
 * A program is a main function `T f(T x0, ...)` (one output) or
 * `void f(T x0, ..., T *y0, ...)` (several), optionally preceded by a helper
 * `T h(T a, T b)`. Bodies hold T locals, compound assignments, if/else on
 * comparisons of T, a `for` with an int counter, a `while` on a T condition
 * with a bounded count, early returns; expressions mix T with real and int
 * operands (literals, `int n`, `real w`, the loop counter, real builtins).
 * Arguments of log, sqrt, pow's base, divisors, ... are built positive by
 * construction. The evaluator records how close each sample point lies to
 * a branch threshold or a kink (pg_eval.margin) and which way every branch
 * went (pg_eval.trace), so that the test keeps finite differences away from
 * non-smooth points. Header-only (static), included by one test. */
#ifndef CLMAD_TEST_PLAIN_GEN_H
#define CLMAD_TEST_PLAIN_GEN_H

#include "bcast_support.h"

#include <stdarg.h>
#include <stdio.h>

#define PG_MAX_NODES 1024
#define PG_MAX_STMTS 160
#define PG_MAX_CONDS 64
#define PG_MAX_TVARS 16 /* params + locals of one function */
#define PG_MAX_IN 4
#define PG_MAX_OUT 3

typedef enum pg_form { PG_PLAIN, PG_AD } pg_form;

/* ---- features (coverage of the generated set) --------------------------- */

enum {
    F_ADD_TT, F_SUB_TT, F_MUL_TT, F_DIV_TT, /* a op b */
    F_ADD_TR, F_SUB_TR, F_MUL_TR, F_DIV_TR, /* a op r */
    F_ADD_RT, F_SUB_RT, F_MUL_RT, F_DIV_RT, /* r op a */
    F_NEG, F_PLUS, F_CAST, F_PAREN,
    F_CALL1, F_CALL2_TT, F_CALL2_TR, F_CALL2_RT, F_POW_TT, F_POW_TR, F_POW_RT, F_POWN,
    F_FMA, F_MAD_REAL, F_CLAMP, F_SELECT, F_SELECT_REAL, F_HELPER, F_HELPER_REAL_ARG,
    F_DECL_REAL, F_ASSIGN, F_ASSIGN_REAL, F_CADD, F_CSUB, F_CMUL, F_CDIV, F_CREAL,
    F_IF, F_ELSE, F_FOR, F_COUNTER_OPERAND, F_WHILE, F_RETURN_EARLY, F_RETURN_REAL,
    F_CMP_TT, F_CMP_TR, F_CMP_RT, F_CMP_EQ, F_NOT,
    F_INT_LIT, F_FLOAT_LIT, F_DOUBLE_LIT, F_NEG_LIT, F_INT_VAR, F_REAL_VAR, F_REAL_EXPR,
    F_REAL_BUILTIN, F_REAL_CLMAD_NAME, F_MULTI_OUT,
    F_COUNT
};

static const char *const PG_FEATURE_NAMES[F_COUNT] = {
    "a+b", "a-b", "a*b", "a/b", "a+r", "a-r", "a*r", "a/r", "r+a", "r-a", "r*a", "r/a",
    "-a", "+a", "(T)r", "(redundant parens)",
    "f(a)", "f(a,b)", "f(a,r)", "f(r,a)", "pow(a,b)", "pow(a,r)", "pow(r,a)", "pown",
    "fma", "mad with a real", "clamp", "?:", "?: with a real", "helper", "helper with a real",
    "T t = r", "t = e", "t = r", "+=", "-=", "*=", "/=", "op= r",
    "if", "else", "for", "loop counter operand", "while", "early return", "return r",
    "a < b", "a < r", "r < a", "a == r", "!",
    "int literal", "float literal", "double literal", "negative literal", "int n", "real w",
    "(n + 1)", "exp((real)r)", "sigmoid((real)r)", "several outputs",
};

/* ---- the program -------------------------------------------------------- */

/* Math names over T. dom: what the argument(s) must be. */
enum { D_ANY, D_POS, D_UNIT, D_GT1, D_KINK };
typedef struct pg_fn {
    const char *name;
    int dom;
} pg_fn;

static const pg_fn PG_FN1[] = {
    {"exp", D_ANY},      {"exp2", D_ANY},   {"expm1", D_ANY},   {"log", D_POS},     {"log2", D_POS},
    {"log10", D_POS},    {"log1p", D_POS},  {"sqrt", D_POS},    {"rsqrt", D_POS},   {"cbrt", D_POS},
    {"sin", D_ANY},      {"cos", D_ANY},    {"tan", D_UNIT},    {"asin", D_UNIT},   {"acos", D_UNIT},
    {"atan", D_ANY},     {"sinh", D_ANY},   {"cosh", D_ANY},    {"tanh", D_ANY},    {"asinh", D_ANY},
    {"acosh", D_GT1},    {"atanh", D_UNIT}, {"erf", D_ANY},     {"erfc", D_ANY},    {"fabs", D_KINK},
    {"sigmoid", D_ANY},  {"softplus", D_ANY}, {"relu", D_KINK}, {"square", D_ANY},  {"recip", D_POS},
};
#define PG_N_FN1 (int)(sizeof PG_FN1 / sizeof PG_FN1[0])

/* Two-argument names: pow (base positive), the rest with a margin rule. */
static const char *const PG_FN2[] = {"pow", "fmax", "fmin", "max", "min", "hypot", "atan2", "copysign"};
#define PG_N_FN2 (int)(sizeof PG_FN2 / sizeof PG_FN2[0])

/* A real (or int) operand, passed by the lowering exactly as written. */
typedef enum {
    R_INT,     /* 2 */
    R_FLOAT,   /* 0.3f */
    R_DOUBLE,  /* 0.5 (dyadic: the same value in float) */
    R_NEG,     /* -2 */
    R_N,       /* the int variable n */
    R_W,       /* the real variable w */
    R_K,       /* the loop counter (int) */
    R_N1,      /* (n + 1) */
    R_BUILTIN, /* exp((real)0.5): an OpenCL builtin on a real */
    R_CLMAD,   /* sigmoid((real)0.5): a clmad name on a real */
} pg_rkind;

typedef struct pg_real {
    pg_rkind kind;
    double v;    /* the literal's value (float-rounded for R_FLOAT) */
    int counter; /* R_K: which loop counter */
} pg_real;

/* An operand: a T expression (node >= 0) or a real (node < 0). */
typedef struct pg_opnd {
    int node;
    pg_real r;
} pg_opnd;

typedef enum {
    E_VAR,    /* a T parameter or local */
    E_CAST,   /* (T)r */
    E_BIN,    /* o[0] op o[1]: at least one T */
    E_NEG,    /* -a */
    E_PLUS,   /* +a */
    E_CALL1,  /* PG_FN1[fn](a) */
    E_CALL2,  /* PG_FN2[fn](o[0], o[1]): at least one T */
    E_FMA,    /* fma or mad (fn 0/1) (o[0], o[1], o[2]) */
    E_CLAMP,  /* clamp(a, lo, hi), real bounds */
    E_POWN,   /* pown(a, n) */
    E_SELECT, /* cond ? o[0] : o[1] */
    E_HELPER, /* h(o[0], o[1]) */
} pg_ekind;

typedef struct pg_node {
    pg_ekind kind;
    int op; /* '+', '-', '*', '/' (E_BIN) or the function's index */
    int var;
    int cond;
    int paren; /* redundant parentheses in the plain form */
    pg_opnd o[3];
} pg_node;

/* A comparison: o[0] op o[1] (at least one T); negated: !(...). */
typedef struct pg_cond {
    const char *op;
    int negated;
    pg_opnd o[2];
} pg_cond;

typedef enum { S_DECL, S_ASSIGN, S_IF, S_FOR, S_WHILE, S_RETURN, S_OUT } pg_skind;

typedef struct pg_stmt {
    pg_skind kind;
    int var;     /* S_DECL, S_ASSIGN, S_WHILE: the T local; S_OUT: output index */
    int op;      /* S_ASSIGN: '=', '+', '-', '*', '/' */
    pg_opnd e;   /* the value */
    int cond;    /* S_IF, S_WHILE */
    int body;    /* first statement of the then-block / loop body, -1: none */
    int els;     /* first statement of the else-block, -1: none */
    int count;   /* S_FOR: iterations; S_WHILE: bound */
    int counter; /* S_FOR, S_WHILE: the int counter's index */
    int next;    /* the next statement of the block, -1: end */
} pg_stmt;

typedef struct pg_func {
    int n_params, n_locals; /* T vars: params 0..n_params-1, then locals */
    int n_out;              /* 1: returns T; more: void with T *y outputs */
    int first;              /* first statement */
    int is_helper;
} pg_func;

typedef struct pg_prog {
    uint64_t seed;
    pg_func main, helper;
    int has_helper;
    int n_value; /* the int n */
    float w;     /* the real w */
    int n_counters;
    pg_node node[PG_MAX_NODES];
    int n_nodes;
    pg_stmt stmt[PG_MAX_STMTS];
    int n_stmts;
    pg_cond cond[PG_MAX_CONDS];
    int n_conds;
    unsigned char feature[F_COUNT];
} pg_prog;

/* ---- the generator ------------------------------------------------------ */

typedef struct pg_gen {
    pg_prog *p;
    uint64_t *rng;
    const pg_func *fn; /* the function being generated */
    int n_tvars;       /* T vars in scope: params + locals declared so far */
    int counter;       /* loop counter in scope (R_K), -1: none */
} pg_gen;

static int pg_chance(pg_gen *g, int percent) { return bs_int(g->rng, 0, 99) < percent; }

static int pg_new_node(pg_gen *g, pg_ekind kind)
{
    cr_assert_lt(g->p->n_nodes, PG_MAX_NODES, "seed %llu: too many nodes", (unsigned long long)g->p->seed);
    pg_node *n = &g->p->node[g->p->n_nodes];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    for (int i = 0; i < 3; i++)
        n->o[i].node = -1;
    n->paren = bs_int(g->rng, 0, 19) == 0;
    return g->p->n_nodes++;
}

static pg_opnd pg_t(int node) { return (pg_opnd){.node = node}; }
static pg_opnd pg_r(pg_real r) { return (pg_opnd){.node = -1, .r = r}; }

/* Real literals: (printed, value). Floats print with %.9g and the suffix f. */
static pg_real pg_lit(pg_gen *g, int positive, int nonzero)
{
    static const double FLOATS[] = {0.5, 0.25, 0.3, 0.7, 1.5, 2.5, 0.125, 1.75, 0.1};
    static const double DOUBLES[] = {0.5, 0.25, 1.5, 2.0, 0.75};
    pg_real r = {0};
    int pick = bs_int(g->rng, 0, 9);
    if (pick < 3) {
        r.kind = R_INT;
        r.v = bs_int(g->rng, nonzero || positive ? 1 : 0, 4);
    } else if (pick < 7) {
        r.kind = R_FLOAT;
        r.v = (double)(float)FLOATS[bs_int(g->rng, 0, (int)(sizeof FLOATS / sizeof *FLOATS) - 1)];
    } else if (pick < 9 || positive) {
        r.kind = R_DOUBLE;
        r.v = DOUBLES[bs_int(g->rng, 0, (int)(sizeof DOUBLES / sizeof *DOUBLES) - 1)];
    } else {
        r.kind = R_NEG;
        r.v = -bs_int(g->rng, 1, 3);
    }
    return r;
}

/* A real operand: a literal, or (in main) n, w, (n + 1), the loop counter, a
 * builtin or clmad name applied to a real. */
static pg_real pg_real_opnd(pg_gen *g, int positive, int nonzero)
{
    pg_real r = {0};
    if (g->fn->is_helper || pg_chance(g, 55))
        return pg_lit(g, positive, nonzero);
    int pick = bs_int(g->rng, 0, 5);
    if (pick == 0 && g->counter >= 0 && !positive && !nonzero) {
        r.kind = R_K;
        r.counter = g->counter;
    } else if (pick <= 1) {
        r.kind = R_N;
    } else if (pick == 2) {
        r.kind = R_W;
    } else if (pick == 3) {
        r.kind = R_N1;
    } else if (pick == 4) {
        r.kind = R_BUILTIN;
    } else {
        r.kind = R_CLMAD;
    }
    return r;
}

static int pg_expr(pg_gen *g, int depth);

static int pg_leaf(pg_gen *g)
{
    if (pg_chance(g, 6)) {
        int n = pg_new_node(g, E_CAST);
        g->p->node[n].o[0] = pg_r(pg_real_opnd(g, 0, 0));
        return n;
    }
    int n = pg_new_node(g, E_VAR);
    /* Locals are picked more often than parameters, so that statements matter. */
    int locals = g->n_tvars - g->fn->n_params;
    if (locals > 0 && pg_chance(g, 50))
        g->p->node[n].var = g->fn->n_params + bs_int(g->rng, 0, locals - 1);
    else
        g->p->node[n].var = bs_int(g->rng, 0, g->fn->n_params - 1);
    return n;
}

static int pg_bin(pg_gen *g, int op, pg_opnd a, pg_opnd b)
{
    int n = pg_new_node(g, E_BIN);
    g->p->node[n].op = op;
    g->p->node[n].o[0] = a;
    g->p->node[n].o[1] = b;
    return n;
}

static int pg_call1(pg_gen *g, const char *name, int arg)
{
    int fn = 0;
    while (strcmp(PG_FN1[fn].name, name))
        fn++;
    int n = pg_new_node(g, E_CALL1);
    g->p->node[n].op = fn;
    g->p->node[n].o[0] = pg_t(arg);
    return n;
}

static pg_real pg_lit_value(pg_rkind kind, double v)
{
    pg_real r = {0};
    r.kind = kind;
    r.v = kind == R_FLOAT ? (double)(float)v : v;
    return r;
}

/* An expression whose value is at least about 1/4 (argument of log, sqrt,
 * rsqrt, recip, pow's base; a divisor). */
static int pg_pos(pg_gen *g, int depth)
{
    int e = pg_expr(g, depth);
    switch (bs_int(g->rng, 0, 8)) {
    case 0: /* e * e + 0.5f */
        return pg_bin(g, '+', pg_t(pg_bin(g, '*', pg_t(e), pg_t(e))), pg_r(pg_lit_value(R_FLOAT, 0.5)));
    case 1: /* 1 + square(e) */
        return pg_bin(g, '+', pg_r(pg_lit_value(R_INT, 1)), pg_t(pg_call1(g, "square", e)));
    case 2:
        return pg_call1(g, "cosh", e);
    case 3: /* softplus(e) + 0.25f */
        return pg_bin(g, '+', pg_t(pg_call1(g, "softplus", e)), pg_r(pg_lit_value(R_FLOAT, 0.25)));
    case 4: /* 2 - tanh(e) */
        return pg_bin(g, '-', pg_r(pg_lit_value(R_INT, 2)), pg_t(pg_call1(g, "tanh", e)));
    case 5: { /* hypot(e, 1.0f) */
        int n = pg_new_node(g, E_CALL2);
        g->p->node[n].op = 5;
        g->p->node[n].o[0] = pg_t(e);
        g->p->node[n].o[1] = pg_r(pg_lit_value(R_FLOAT, 1.0));
        return n;
    }
    case 6: /* sigmoid(e) + 0.5 */
        return pg_bin(g, '+', pg_t(pg_call1(g, "sigmoid", e)), pg_r(pg_lit_value(R_DOUBLE, 0.5)));
    case 7: /* fabs(e) + 0.5f */
        return pg_bin(g, '+', pg_t(pg_call1(g, "fabs", e)), pg_r(pg_lit_value(R_FLOAT, 0.5)));
    default: /* exp(0.5f * e) */
        return pg_call1(g, "exp", pg_bin(g, '*', pg_r(pg_lit_value(R_FLOAT, 0.5)), pg_t(e)));
    }
}

/* The argument of a function with domain dom. */
static int pg_arg(pg_gen *g, int dom, int depth)
{
    switch (dom) {
    case D_POS:
        return pg_pos(g, depth);
    case D_UNIT: /* 0.75f * tanh(e) */
        return pg_bin(g, '*', pg_r(pg_lit_value(R_FLOAT, 0.75)), pg_t(pg_call1(g, "tanh", pg_expr(g, depth))));
    case D_GT1: /* pos + 1 */
        return pg_bin(g, '+', pg_t(pg_pos(g, depth)), pg_r(pg_lit_value(R_INT, 1)));
    default:
        return pg_expr(g, depth);
    }
}

static int pg_condition(pg_gen *g, int depth);

/* A T operand, or with probability percent a real one. */
static pg_opnd pg_mixed(pg_gen *g, int depth, int percent)
{
    return pg_chance(g, percent) ? pg_r(pg_real_opnd(g, 0, 0)) : pg_t(pg_expr(g, depth));
}

static int pg_expr(pg_gen *g, int depth)
{
    if (depth <= 0 || pg_chance(g, 15))
        return pg_leaf(g);
    int pick = bs_int(g->rng, 0, 99);
    int d = depth - 1;
    if (pick < 30) { /* binary operator */
        int op = "+-*/"[bs_int(g->rng, 0, 3)];
        int form = bs_int(g->rng, 0, 2); /* T op T, T op r, r op T */
        pg_opnd a, b;
        if (form == 0) {
            a = pg_t(pg_expr(g, d));
            b = pg_t(op == '/' ? pg_pos(g, d - 1) : pg_expr(g, d));
        } else if (form == 1) {
            a = pg_t(pg_expr(g, d));
            b = pg_r(pg_real_opnd(g, 0, op == '/'));
        } else {
            a = pg_r(pg_real_opnd(g, 0, 0));
            b = pg_t(op == '/' ? pg_pos(g, d - 1) : pg_expr(g, d));
        }
        return pg_bin(g, op, a, b);
    }
    if (pick < 34) {
        int n = pg_new_node(g, pick < 33 ? E_NEG : E_PLUS);
        g->p->node[n].o[0] = pg_t(pg_expr(g, d));
        return n;
    }
    if (pick < 56) {
        int fn = bs_int(g->rng, 0, PG_N_FN1 - 1);
        return pg_call1(g, PG_FN1[fn].name, pg_arg(g, PG_FN1[fn].dom, d));
    }
    if (pick < 70) {
        int n = pg_new_node(g, E_CALL2);
        int fn = bs_int(g->rng, 0, PG_N_FN2 - 1), form = bs_int(g->rng, fn == 0, 3); /* TT TT Tr rT */
        pg_opnd a, b;
        if (fn == 0) { /* pow: the base positive; pow(r, a) with r > 0 */
            a = form == 3 ? pg_r(pg_lit(g, 1, 1)) : pg_t(pg_pos(g, d - 1));
            b = form == 2 ? pg_r(pg_real_opnd(g, 0, 0)) : pg_t(pg_expr(g, d - 1));
        } else {
            a = form == 3 ? pg_r(pg_real_opnd(g, 0, 0)) : pg_t(pg_expr(g, d));
            b = form == 2 ? pg_r(pg_real_opnd(g, 0, 0)) : pg_t(pg_expr(g, d));
        }
        g->p->node[n].op = fn;
        g->p->node[n].o[0] = a;
        g->p->node[n].o[1] = b;
        return n;
    }
    if (pick < 74) { /* fma / mad, sometimes with a real operand */
        int n = pg_new_node(g, E_FMA);
        g->p->node[n].op = bs_int(g->rng, 0, 1);
        int real_at = bs_int(g->rng, 0, 4); /* 0..2: that operand is real */
        for (int i = 0; i < 3; i++)
            g->p->node[n].o[i] = i == real_at ? pg_r(pg_real_opnd(g, 0, 0)) : pg_t(pg_expr(g, d - 1));
        return n;
    }
    if (pick < 77) {
        int n = pg_new_node(g, E_CLAMP);
        g->p->node[n].o[0] = pg_t(pg_expr(g, d));
        g->p->node[n].o[1] = pg_r(pg_lit_value(R_FLOAT, -0.5));
        g->p->node[n].o[2] = pg_r(pg_chance(g, 50) ? pg_lit_value(R_FLOAT, 0.7) : pg_lit_value(R_INT, 1));
        return n;
    }
    if (pick < 80) {
        int n = pg_new_node(g, E_POWN);
        g->p->node[n].o[0] = pg_t(pg_expr(g, d));
        if (!g->fn->is_helper && pg_chance(g, 50))
            g->p->node[n].o[1] = pg_r((pg_real){.kind = R_N});
        else
            g->p->node[n].o[1] = pg_r(pg_lit_value(R_INT, bs_int(g->rng, 2, 3)));
        return n;
    }
    if (pick < 90) {
        int n = pg_new_node(g, E_SELECT);
        int c = pg_condition(g, d - 1);
        g->p->node[n].cond = c;
        int real_at = bs_int(g->rng, 0, 4); /* 0, 1: that branch is real */
        for (int i = 0; i < 2; i++)
            g->p->node[n].o[i] = i == real_at ? pg_r(pg_real_opnd(g, 0, 0)) : pg_t(pg_expr(g, d));
        return n;
    }
    if (g->p->has_helper && !g->fn->is_helper) {
        int n = pg_new_node(g, E_HELPER);
        g->p->node[n].o[0] = pg_t(pg_expr(g, d));
        g->p->node[n].o[1] = pg_mixed(g, d, 25);
        return n;
    }
    return pg_leaf(g);
}

static int pg_condition(pg_gen *g, int depth)
{
    static const char *const OPS[] = {"<", "<=", ">", ">=", "<", ">", "==", "!="};
    cr_assert_lt(g->p->n_conds, PG_MAX_CONDS);
    int c = g->p->n_conds++;
    pg_cond cd = {0};
    cd.op = OPS[bs_int(g->rng, 0, 7)];
    cd.negated = pg_chance(g, 10);
    int form = bs_int(g->rng, 0, 3); /* T op T, T op r (twice as often), r op T */
    int d = depth < 0 ? 0 : depth;
    if (cd.op[0] == '=' || cd.op[0] == '!') {
        form = 1;
    }
    if (form == 0) {
        cd.o[0] = pg_t(pg_expr(g, d));
        cd.o[1] = pg_t(pg_expr(g, d));
    } else if (form <= 2) {
        cd.o[0] = pg_t(pg_expr(g, d));
        cd.o[1] = pg_r(pg_real_opnd(g, 0, 0));
    } else {
        cd.o[0] = pg_r(pg_real_opnd(g, 0, 0));
        cd.o[1] = pg_t(pg_expr(g, d));
    }
    g->p->cond[c] = cd;
    return c;
}

static int pg_new_stmt(pg_gen *g, pg_skind kind)
{
    cr_assert_lt(g->p->n_stmts, PG_MAX_STMTS, "seed %llu: too many statements", (unsigned long long)g->p->seed);
    pg_stmt *s = &g->p->stmt[g->p->n_stmts];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->body = s->els = s->next = -1;
    return g->p->n_stmts++;
}

/* An assignment to a local: t = e, t op= e (T or real e). */
static int pg_assign(pg_gen *g, int var, int depth)
{
    int s = pg_new_stmt(g, S_ASSIGN);
    int op = "=+-*/"[bs_int(g->rng, 0, 4)];
    g->p->stmt[s].var = var;
    g->p->stmt[s].op = op;
    if (pg_chance(g, 30))
        g->p->stmt[s].e = pg_r(pg_real_opnd(g, 0, op == '/'));
    else
        g->p->stmt[s].e = pg_t(op == '/' ? pg_pos(g, depth - 1) : pg_expr(g, depth));
    return s;
}

static int pg_random_local(pg_gen *g)
{
    return g->fn->n_params + bs_int(g->rng, 0, g->fn->n_locals - 1);
}

/* A block of n assignments (and, if nest, one nested if). Returns its first
 * statement. */
static int pg_block(pg_gen *g, int n, int nest, int allow_return);

static int pg_if(pg_gen *g, int nest, int allow_return)
{
    int s = pg_new_stmt(g, S_IF);
    g->p->stmt[s].cond = pg_condition(g, 1);
    int then = -1;
    if (allow_return == 2 || (allow_return && pg_chance(g, 50))) {
        then = pg_new_stmt(g, S_RETURN);
        g->p->stmt[then].e = pg_mixed(g, 2, 40);
    } else {
        then = pg_block(g, bs_int(g->rng, 1, 2), nest, 0);
    }
    g->p->stmt[s].body = then;
    if (pg_chance(g, 60))
        g->p->stmt[s].els = pg_block(g, bs_int(g->rng, 1, 2), nest, 0);
    return s;
}

static int pg_block(pg_gen *g, int n, int nest, int allow_return)
{
    int first = -1, last = -1;
    for (int i = 0; i < n; i++) {
        int s = nest > 0 && pg_chance(g, 25) ? pg_if(g, nest - 1, allow_return) : pg_assign(g, pg_random_local(g), 2);
        if (last >= 0)
            g->p->stmt[last].next = s;
        else
            first = s;
        last = s;
    }
    return first;
}

/* A top-level statement of a function body. */
static int pg_top_stmt(pg_gen *g, int allow_return)
{
    int pick = bs_int(g->rng, 0, 9);
    if (pick < 3)
        return pg_assign(g, pg_random_local(g), 3);
    if (pick < 6)
        return pg_if(g, 1, allow_return);
    if (pick < 8) {
        int s = pg_new_stmt(g, S_FOR);
        g->p->stmt[s].count = bs_int(g->rng, 2, 4);
        g->p->stmt[s].counter = g->p->n_counters++;
        g->counter = g->p->stmt[s].counter;
        g->p->stmt[s].body = pg_block(g, bs_int(g->rng, 1, 2), 1, 0);
        g->counter = -1;
        return s;
    }
    /* while (t <cmp> r && c < M) { t = <e>; c++; } */
    int s = pg_new_stmt(g, S_WHILE);
    int var = pg_random_local(g);
    g->p->stmt[s].var = var;
    g->p->stmt[s].count = bs_int(g->rng, 2, 5);
    g->p->stmt[s].counter = g->p->n_counters++;
    int c = g->p->n_conds++;
    cr_assert_lt(c, PG_MAX_CONDS);
    int v = pg_new_node(g, E_VAR);
    g->p->node[v].var = var;
    g->p->node[v].paren = 0;
    g->p->cond[c] = (pg_cond){.op = pg_chance(g, 50) ? ">" : "<", .o = {pg_t(v), pg_r(pg_lit(g, 0, 0))}};
    g->p->stmt[s].cond = c;
    int body = pg_new_stmt(g, S_ASSIGN);
    g->p->stmt[body].var = var;
    g->p->stmt[body].op = "=+*"[bs_int(g->rng, 0, 2)];
    g->p->stmt[body].e = pg_t(pg_expr(g, 2));
    g->p->stmt[s].body = body;
    return s;
}

/* An output: mostly a local combined with a fresh expression, so that what
 * the statements computed reaches the outputs. */
static int pg_output(pg_gen *g)
{
    int e = pg_expr(g, 3);
    if (g->fn->n_locals == 0 || pg_chance(g, 25))
        return g->p->node[e].kind == E_VAR ? pg_call1(g, "tanh", e) : e;
    int v = pg_new_node(g, E_VAR);
    g->p->node[v].var = pg_random_local(g);
    return pg_bin(g, "+-*"[bs_int(g->rng, 0, 2)], pg_t(v), pg_t(e));
}

/* Generates the body of g->fn into *fn (params and outputs already set). */
static void pg_function(pg_gen *g, pg_func *fn, int n_locals, int n_stmts)
{
    g->fn = fn;
    g->n_tvars = fn->n_params;
    g->counter = -1;
    fn->n_locals = n_locals;
    int first = -1, last = -1;
#define PG_LINK(s)                                                                       \
    do {                                                                                 \
        int s_ = (s);                                                                    \
        if (last >= 0)                                                                   \
            g->p->stmt[last].next = s_;                                                  \
        else                                                                             \
            first = s_;                                                                  \
        last = s_;                                                                       \
    } while (0)
    for (int i = 0; i < n_locals; i++) {
        int s = pg_new_stmt(g, S_DECL);
        g->p->stmt[s].var = fn->n_params + i;
        g->p->stmt[s].e = i > 0 ? pg_mixed(g, 3, 15) : pg_t(pg_expr(g, 3));
        g->n_tvars++;
        PG_LINK(s);
    }
    int allow_return = fn->n_out == 1;
    if (fn->is_helper) /* if (...) return <T or real>; */
        PG_LINK(pg_if(g, 0, 2));
    for (int i = 0; i < n_stmts; i++)
        PG_LINK(pg_top_stmt(g, allow_return));
    for (int o = 0; o < fn->n_out; o++) {
        int s = pg_new_stmt(g, fn->n_out == 1 ? S_RETURN : S_OUT);
        g->p->stmt[s].var = o;
        g->p->stmt[s].e = pg_t(pg_output(g));
        PG_LINK(s);
    }
#undef PG_LINK
    fn->first = first;
}

/* A random program from seed: n_in T inputs, n_out outputs. */
static void pg_generate(pg_prog *p, uint64_t seed, int n_in, int n_out)
{
    memset(p, 0, sizeof *p);
    p->seed = seed;
    uint64_t rng = seed;
    pg_gen g = {.p = p, .rng = &rng, .counter = -1};
    p->n_value = bs_int(&rng, 2, 3);
    p->w = bs_int(&rng, 0, 1) ? 0.75f : 1.25f;
    p->has_helper = bs_int(&rng, 0, 2) > 0;
    if (p->has_helper) {
        p->helper = (pg_func){.n_params = 2, .n_out = 1, .is_helper = 1};
        pg_function(&g, &p->helper, bs_int(&rng, 1, 2), bs_int(&rng, 0, 2));
    }
    p->main = (pg_func){.n_params = n_in, .n_out = n_out};
    pg_function(&g, &p->main, bs_int(&rng, 1, 3), bs_int(&rng, 2, 4));
}

/* ---- printing ----------------------------------------------------------- */

typedef struct pg_buf {
    char *s;
    size_t len, cap;
} pg_buf;

static void pg_put(pg_buf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        cr_assert_geq(n, 0);
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        b->cap = (b->cap + (size_t)n + 1) * 2;
        b->s = realloc(b->s, b->cap);
        cr_assert_not_null(b->s);
        if (b->len == 0)
            b->s[0] = '\0';
    }
}

typedef struct pg_printer {
    const pg_prog *p;
    const pg_func *fn;
    pg_form form;
    pg_buf *b;
    unsigned char *feature; /* set while printing the plain form (may be NULL) */
} pg_printer;

static void pg_feat(pg_printer *pr, int f)
{
    if (pr->feature)
        pr->feature[f] = 1;
}

static void pg_print_var(pg_printer *pr, int var)
{
    const pg_func *fn = pr->fn;
    if (var < fn->n_params)
        pg_put(pr->b, fn->is_helper ? "%c" : "x%d", fn->is_helper ? 'a' + var : var);
    else
        pg_put(pr->b, fn->is_helper ? "s%d" : "t%d", var - fn->n_params);
}

/* A floating literal: the shortest digits that give v back in float (v is
 * float-rounded), always with a point ("1.0f", not "1f"). */
static void pg_put_fraction(pg_buf *b, double v, const char *suffix)
{
    char text[40];
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, v);
        if ((float)strtod(text, NULL) == (float)v)
            break;
    }
    pg_put(b, "%s%s%s", text, strpbrk(text, ".e") ? "" : ".0", suffix);
}

/* A real operand, as written (the same text in both forms, except a clmad
 * name applied to a real). */
static void pg_print_real(pg_printer *pr, pg_real r)
{
    switch (r.kind) {
    case R_INT: pg_put(pr->b, "%d", (int)r.v); pg_feat(pr, F_INT_LIT); break;
    case R_FLOAT: pg_put_fraction(pr->b, r.v, "f"); pg_feat(pr, F_FLOAT_LIT); break;
    case R_DOUBLE: pg_put_fraction(pr->b, r.v, ""); pg_feat(pr, F_DOUBLE_LIT); break;
    case R_NEG: pg_put(pr->b, "%d", (int)r.v); pg_feat(pr, F_NEG_LIT); break;
    case R_N: pg_put(pr->b, "n"); pg_feat(pr, F_INT_VAR); break;
    case R_W: pg_put(pr->b, "w"); pg_feat(pr, F_REAL_VAR); break;
    case R_K: pg_put(pr->b, "k%d", r.counter); pg_feat(pr, F_COUNTER_OPERAND); break;
    case R_N1: pg_put(pr->b, "(n + 1)"); pg_feat(pr, F_REAL_EXPR); break;
    case R_BUILTIN: pg_put(pr->b, "exp((real)0.5)"); pg_feat(pr, F_REAL_BUILTIN); break;
    case R_CLMAD:
        pg_put(pr->b, pr->form == PG_PLAIN ? "sigmoid((real)0.5)" : "ad_val(ad_sigmoid(ad_const((real)0.5)))");
        pg_feat(pr, F_REAL_CLMAD_NAME);
        break;
    }
}

/* Precedence levels of the plain form (C's). */
enum { P_COND = 3, P_AND = 5, P_EQ = 9, P_REL = 10, P_ADD = 12, P_MUL = 13, P_UNARY = 14, P_PRIMARY = 16 };

static int pg_prec(const pg_prog *p, pg_opnd o)
{
    if (o.node < 0)
        return o.r.kind == R_NEG ? P_UNARY : P_PRIMARY;
    const pg_node *n = &p->node[o.node];
    if (n->paren)
        return P_PRIMARY;
    switch (n->kind) {
    case E_BIN: return n->op == '+' || n->op == '-' ? P_ADD : P_MUL;
    case E_NEG:
    case E_PLUS:
    case E_CAST: return P_UNARY;
    case E_SELECT: return P_COND;
    default: return P_PRIMARY;
    }
}

static void pg_print_node(pg_printer *pr, int node);
static void pg_print_cond(pg_printer *pr, int c);

/* An operand in the plain form, parenthesised when its precedence is below min. */
static void pg_print_opnd(pg_printer *pr, pg_opnd o, int min)
{
    int wrap = pr->form == PG_PLAIN && pg_prec(pr->p, o) < min;
    if (wrap)
        pg_put(pr->b, "(");
    if (o.node >= 0)
        pg_print_node(pr, o.node);
    else
        pg_print_real(pr, o.r);
    if (wrap)
        pg_put(pr->b, ")");
}

/* An operand where the ad_ form needs a T: a real r becomes ad_const(r)
 * (PLAIN_SPEC.md: "r passed to a T parameter", "c ? a : r", "a real operand
 * is wrapped ad_const(r)"). */
static void pg_print_targ(pg_printer *pr, pg_opnd o)
{
    if (o.node < 0 && pr->form == PG_AD) {
        pg_put(pr->b, "ad_const(");
        pg_print_real(pr, o.r);
        pg_put(pr->b, ")");
    } else {
        pg_print_opnd(pr, o, P_COND);
    }
}

static void pg_print_bin(pg_printer *pr, const pg_node *n)
{
    pg_opnd a = n->o[0], b = n->o[1];
    int op = n->op, prec = op == '+' || op == '-' ? P_ADD : P_MUL;
    int ta = a.node >= 0, tb = b.node >= 0;
    int base = op == '+' ? 0 : op == '-' ? 1 : op == '*' ? 2 : 3;
    pg_feat(pr, (ta && tb ? F_ADD_TT : ta ? F_ADD_TR : F_ADD_RT) + base);
    if (pr->form == PG_PLAIN) {
        pg_print_opnd(pr, a, prec);
        pg_put(pr->b, " %c ", op);
        pg_print_opnd(pr, b, prec + 1);
        return;
    }
    static const char *const TT[] = {"add", "sub", "mul", "div"};
    if (ta && tb) { /* ad_add(a, b) ... */
        pg_put(pr->b, "ad_%s(", TT[base]);
        pg_print_opnd(pr, a, 0);
        pg_put(pr->b, ", ");
        pg_print_opnd(pr, b, 0);
        pg_put(pr->b, ")");
    } else if (ta || op == '+' || op == '*') {
        /* a + r, r + a: ad_addr(a, r); a - r: ad_subr; a * r, r * a: ad_mulr; a / r: ad_divr */
        static const char *const TR[] = {"addr", "subr", "mulr", "divr"};
        pg_put(pr->b, "ad_%s(", TR[base]);
        pg_print_opnd(pr, ta ? a : b, 0);
        pg_put(pr->b, ", ");
        pg_print_opnd(pr, ta ? b : a, 0);
        pg_put(pr->b, ")");
    } else { /* r - a: ad_rsub(r, a); r / a: ad_rdiv(r, a) */
        pg_put(pr->b, op == '-' ? "ad_rsub(" : "ad_rdiv(");
        pg_print_opnd(pr, a, 0);
        pg_put(pr->b, ", ");
        pg_print_opnd(pr, b, 0);
        pg_put(pr->b, ")");
    }
}

static void pg_print_node(pg_printer *pr, int node)
{
    const pg_node *n = &pr->p->node[node];
    int plain = pr->form == PG_PLAIN;
    if (plain && n->paren) {
        pg_feat(pr, F_PAREN);
        pg_put(pr->b, "(");
    }
    switch (n->kind) {
    case E_VAR:
        pg_print_var(pr, n->var);
        break;
    case E_CAST:
        pg_feat(pr, F_CAST);
        pg_put(pr->b, plain ? "(T)" : "ad_const(");
        pg_print_opnd(pr, n->o[0], P_UNARY);
        pg_put(pr->b, plain ? "" : ")");
        break;
    case E_BIN:
        pg_print_bin(pr, n);
        break;
    case E_NEG:
    case E_PLUS:
        pg_feat(pr, n->kind == E_NEG ? F_NEG : F_PLUS);
        if (plain) { /* "-(...)" for anything but a primary: never "--x" */
            pg_put(pr->b, n->kind == E_NEG ? "-" : "+");
            pg_print_opnd(pr, n->o[0], P_PRIMARY);
        } else if (n->kind == E_NEG) {
            pg_put(pr->b, "ad_neg(");
            pg_print_opnd(pr, n->o[0], 0);
            pg_put(pr->b, ")");
        } else { /* +a is a */
            pg_print_opnd(pr, n->o[0], 0);
        }
        break;
    case E_CALL1:
        pg_feat(pr, F_CALL1);
        pg_put(pr->b, plain ? "%s(" : "ad_%s(", PG_FN1[n->op].name);
        pg_print_opnd(pr, n->o[0], P_COND);
        pg_put(pr->b, ")");
        break;
    case E_CALL2: {
        const char *name = PG_FN2[n->op];
        int ta = n->o[0].node >= 0, tb = n->o[1].node >= 0;
        int is_pow = n->op == 0;
        pg_feat(pr, is_pow ? (ta && tb ? F_POW_TT : ta ? F_POW_TR : F_POW_RT)
                           : (ta && tb ? F_CALL2_TT : ta ? F_CALL2_TR : F_CALL2_RT));
        if (plain) {
            pg_put(pr->b, "%s(", name);
            pg_print_opnd(pr, n->o[0], P_COND);
            pg_put(pr->b, ", ");
            pg_print_opnd(pr, n->o[1], P_COND);
            pg_put(pr->b, ")");
            break;
        }
        if (is_pow) { /* pow(a, b) / pow(a, r) / pow(r, a): ad_pow / ad_powr / ad_rpow */
            pg_put(pr->b, ta && tb ? "ad_pow(" : ta ? "ad_powr(" : "ad_rpow(");
            pg_print_opnd(pr, n->o[0], 0);
            pg_put(pr->b, ", ");
            pg_print_opnd(pr, n->o[1], 0);
            pg_put(pr->b, ")");
            break;
        }
        /* min/max lower to ad_fmin/ad_fmax; a real operand is wrapped ad_const(r) */
        const char *ad = !strcmp(name, "min") ? "fmin" : !strcmp(name, "max") ? "fmax" : name;
        pg_put(pr->b, "ad_%s(", ad);
        pg_print_targ(pr, n->o[0]);
        pg_put(pr->b, ", ");
        pg_print_targ(pr, n->o[1]);
        pg_put(pr->b, ")");
        break;
    }
    case E_FMA:
        pg_feat(pr, F_FMA);
        for (int i = 0; i < 3; i++)
            if (n->o[i].node < 0 && n->op == 1)
                pg_feat(pr, F_MAD_REAL);
        pg_put(pr->b, plain ? (n->op ? "mad(" : "fma(") : "ad_fma(");
        for (int i = 0; i < 3; i++) {
            pg_put(pr->b, i ? ", " : "");
            pg_print_targ(pr, n->o[i]);
        }
        pg_put(pr->b, ")");
        break;
    case E_CLAMP: /* real bounds stay as written */
        pg_feat(pr, F_CLAMP);
        pg_put(pr->b, plain ? "clamp(" : "ad_clamp(");
        for (int i = 0; i < 3; i++) {
            pg_put(pr->b, i ? ", " : "");
            pg_print_opnd(pr, n->o[i], P_COND);
        }
        pg_put(pr->b, ")");
        break;
    case E_POWN:
        pg_feat(pr, F_POWN);
        pg_put(pr->b, plain ? "pown(" : "ad_pown(");
        pg_print_opnd(pr, n->o[0], P_COND);
        pg_put(pr->b, ", ");
        pg_print_real(pr, n->o[1].r);
        pg_put(pr->b, ")");
        break;
    case E_SELECT:
        pg_feat(pr, F_SELECT);
        if (n->o[0].node < 0 || n->o[1].node < 0)
            pg_feat(pr, F_SELECT_REAL);
        pg_print_cond(pr, n->cond);
        pg_put(pr->b, " ? ");
        if (plain) {
            pg_print_opnd(pr, n->o[0], P_COND + 1);
            pg_put(pr->b, " : ");
            pg_print_opnd(pr, n->o[1], P_COND);
        } else {
            pg_print_targ(pr, n->o[0]);
            pg_put(pr->b, " : ");
            pg_print_targ(pr, n->o[1]);
        }
        break;
    case E_HELPER:
        pg_feat(pr, F_HELPER);
        if (n->o[1].node < 0)
            pg_feat(pr, F_HELPER_REAL_ARG);
        pg_put(pr->b, "h(");
        pg_print_targ(pr, n->o[0]);
        pg_put(pr->b, ", ");
        pg_print_targ(pr, n->o[1]);
        pg_put(pr->b, ")");
        break;
    }
    if (plain && n->paren)
        pg_put(pr->b, ")");
}

/* A comparison operand: a T a is ad_val(a) in the ad_ form. */
static void pg_print_cmp_opnd(pg_printer *pr, pg_opnd o)
{
    if (o.node >= 0 && pr->form == PG_AD) {
        pg_put(pr->b, "ad_val(");
        pg_print_node(pr, o.node);
        pg_put(pr->b, ")");
    } else {
        pg_print_opnd(pr, o, P_REL + 1);
    }
}

static void pg_print_cond(pg_printer *pr, int c)
{
    const pg_cond *cd = &pr->p->cond[c];
    int ta = cd->o[0].node >= 0, tb = cd->o[1].node >= 0;
    pg_feat(pr, ta && tb ? F_CMP_TT : ta ? F_CMP_TR : F_CMP_RT);
    if (cd->op[0] == '=' || cd->op[0] == '!')
        pg_feat(pr, F_CMP_EQ);
    if (cd->negated) {
        pg_feat(pr, F_NOT);
        pg_put(pr->b, "!(");
    }
    pg_print_cmp_opnd(pr, cd->o[0]);
    pg_put(pr->b, " %s ", cd->op);
    pg_print_cmp_opnd(pr, cd->o[1]);
    if (cd->negated)
        pg_put(pr->b, ")");
}

static void pg_indent(pg_printer *pr, int level)
{
    pg_put(pr->b, "%*s", 4 * level, "");
}

static void pg_print_block(pg_printer *pr, int first, int level);

/* t op= e in the ad_ form: t = <t op e lowered> (PLAIN_SPEC.md). */
static void pg_print_assign(pg_printer *pr, const pg_stmt *s)
{
    static const int CFEAT[] = {['+'] = F_CADD, ['-'] = F_CSUB, ['*'] = F_CMUL, ['/'] = F_CDIV};
    if (s->op == '=')
        pg_feat(pr, s->e.node >= 0 ? F_ASSIGN : F_ASSIGN_REAL);
    else {
        pg_feat(pr, CFEAT[s->op]);
        if (s->e.node < 0)
            pg_feat(pr, F_CREAL);
    }
    pg_print_var(pr, s->var);
    if (pr->form == PG_PLAIN) {
        pg_put(pr->b, s->op == '=' ? " = " : " %c= ", s->op);
        pg_print_opnd(pr, s->e, 0);
    } else if (s->op == '=') {
        pg_put(pr->b, " = ");
        pg_print_targ(pr, s->e);
    } else { /* t = ad_add(t, e) ...; a real e: t = ad_addr(t, r) ... */
        static const char *const TT[] = {"add", "sub", "mul", "div"};
        static const char *const TR[] = {"addr", "subr", "mulr", "divr"};
        int base = s->op == '+' ? 0 : s->op == '-' ? 1 : s->op == '*' ? 2 : 3;
        pg_put(pr->b, " = ad_%s(", s->e.node >= 0 ? TT[base] : TR[base]);
        pg_print_var(pr, s->var);
        pg_put(pr->b, ", ");
        pg_print_opnd(pr, s->e, 0);
        pg_put(pr->b, ")");
    }
    pg_put(pr->b, ";\n");
}

static void pg_print_stmt(pg_printer *pr, int si, int level)
{
    const pg_stmt *s = &pr->p->stmt[si];
    pg_indent(pr, level);
    switch (s->kind) {
    case S_DECL:
        pg_put(pr->b, "T ");
        pg_print_var(pr, s->var);
        pg_put(pr->b, " = ");
        if (s->e.node < 0)
            pg_feat(pr, F_DECL_REAL);
        pg_print_targ(pr, s->e);
        pg_put(pr->b, ";\n");
        break;
    case S_ASSIGN:
        pg_print_assign(pr, s);
        break;
    case S_IF:
        pg_feat(pr, F_IF);
        pg_put(pr->b, "if (");
        pg_print_cond(pr, s->cond);
        pg_put(pr->b, ") {\n");
        pg_print_block(pr, s->body, level + 1);
        if (s->els >= 0) {
            pg_feat(pr, F_ELSE);
            pg_indent(pr, level);
            pg_put(pr->b, "} else {\n");
            pg_print_block(pr, s->els, level + 1);
        }
        pg_indent(pr, level);
        pg_put(pr->b, "}\n");
        break;
    case S_FOR:
        pg_feat(pr, F_FOR);
        pg_put(pr->b, "for (int k%d = 0; k%d < %d; k%d++) {\n", s->counter, s->counter, s->count, s->counter);
        pg_print_block(pr, s->body, level + 1);
        pg_indent(pr, level);
        pg_put(pr->b, "}\n");
        break;
    case S_WHILE:
        pg_feat(pr, F_WHILE);
        pg_put(pr->b, "int c%d = 0;\n", s->counter);
        pg_indent(pr, level);
        pg_put(pr->b, "while (");
        pg_print_cond(pr, s->cond);
        pg_put(pr->b, " && c%d < %d) {\n", s->counter, s->count);
        pg_print_block(pr, s->body, level + 1);
        pg_indent(pr, level + 1);
        pg_put(pr->b, "c%d++;\n", s->counter);
        pg_indent(pr, level);
        pg_put(pr->b, "}\n");
        break;
    case S_RETURN:
        if (level > 1)
            pg_feat(pr, F_RETURN_EARLY);
        if (s->e.node < 0)
            pg_feat(pr, F_RETURN_REAL);
        pg_put(pr->b, "return ");
        pg_print_targ(pr, s->e);
        pg_put(pr->b, ";\n");
        break;
    case S_OUT:
        pg_feat(pr, F_MULTI_OUT);
        pg_put(pr->b, "*y%d = ", s->var);
        pg_print_targ(pr, s->e);
        pg_put(pr->b, ";\n");
        break;
    }
}

static void pg_print_block(pg_printer *pr, int first, int level)
{
    for (int s = first; s >= 0; s = pr->p->stmt[s].next)
        pg_print_stmt(pr, s, level);
}

static void pg_print_func(pg_printer *pr, const pg_func *fn, const char *name)
{
    pr->fn = fn;
    pg_put(pr->b, "%s %s(", fn->n_out == 1 ? "T" : "void", name);
    for (int j = 0; j < fn->n_params; j++) {
        pg_put(pr->b, j ? ", T " : "T ");
        pg_print_var(pr, j);
    }
    for (int o = 0; fn->n_out > 1 && o < fn->n_out; o++)
        pg_put(pr->b, ", T *y%d", o);
    pg_put(pr->b, ")\n{\n");
    if (!fn->is_helper)
        pg_put(pr->b, "    int n = %d;\n    real w = %.2ff;\n", pr->p->n_value, (double)pr->p->w);
    pg_print_block(pr, fn->first, 1);
    pg_put(pr->b, "}\n");
}

/* The source of p in form (a new string, caller frees). The main function is
 * named `name`, the helper `h`. feature (may be NULL) receives the features
 * the source uses. */
static char *pg_print(const pg_prog *p, pg_form form, const char *name, unsigned char *feature)
{
    pg_buf b = {0};
    pg_printer pr = {.p = p, .form = form, .b = &b, .feature = feature};
    pg_put(&b, "/* seed %llu, %s form */\n", (unsigned long long)p->seed, form == PG_PLAIN ? "plain" : "ad_");
    if (p->has_helper) {
        pg_print_func(&pr, &p->helper, "h");
        pg_put(&b, "\n");
    }
    pg_print_func(&pr, &p->main, name);
    return b.s;
}

/* ---- the host reference -------------------------------------------------- */

typedef struct pg_eval {
    double margin;  /* smallest distance of a branch or kink argument to its threshold */
    double maxabs;  /* largest magnitude of a T value met */
    uint64_t trace; /* which way every branch and choice went */
} pg_eval;

typedef struct pg_frame {
    const pg_func *fn;
    double t[PG_MAX_TVARS];
    int counter[16];
    int returned;
    double ret;
    double out[PG_MAX_OUT];
} pg_frame;

static void pg_near(pg_eval *ev, double distance)
{
    if (fabs(distance) < ev->margin)
        ev->margin = fabs(distance);
}

static void pg_choose(pg_eval *ev, int way) { ev->trace = ev->trace * 1000003u + (uint64_t)way + 1; }

static double pg_sigmoid(double x) { return 1 / (1 + exp(-x)); }

static double pg_real_value(const pg_prog *p, const pg_frame *fr, pg_real r)
{
    switch (r.kind) {
    case R_N: return p->n_value;
    case R_W: return (double)p->w;
    case R_K: return fr->counter[r.counter];
    case R_N1: return p->n_value + 1;
    case R_BUILTIN: return exp(0.5);
    case R_CLMAD: return pg_sigmoid(0.5);
    default: return r.v;
    }
}

static double pg_eval_node(const pg_prog *p, pg_frame *fr, pg_eval *ev, int node);
static int pg_eval_cond(const pg_prog *p, pg_frame *fr, pg_eval *ev, int c);
static double pg_call(const pg_prog *p, const pg_func *fn, const double *args, pg_eval *ev);

static double pg_eval_opnd(const pg_prog *p, pg_frame *fr, pg_eval *ev, pg_opnd o)
{
    return o.node >= 0 ? pg_eval_node(p, fr, ev, o.node) : pg_real_value(p, fr, o.r);
}

static double pg_fn1(const char *name, double x, pg_eval *ev)
{
    if (!strcmp(name, "exp")) return exp(x);
    if (!strcmp(name, "exp2")) return exp2(x);
    if (!strcmp(name, "expm1")) return expm1(x);
    if (!strcmp(name, "log")) return log(x);
    if (!strcmp(name, "log2")) return log2(x);
    if (!strcmp(name, "log10")) return log10(x);
    if (!strcmp(name, "log1p")) return log1p(x);
    if (!strcmp(name, "sqrt")) return sqrt(x);
    if (!strcmp(name, "rsqrt")) return 1 / sqrt(x);
    if (!strcmp(name, "cbrt")) return cbrt(x);
    if (!strcmp(name, "sin")) return sin(x);
    if (!strcmp(name, "cos")) return cos(x);
    if (!strcmp(name, "tan")) return tan(x);
    if (!strcmp(name, "asin")) return asin(x);
    if (!strcmp(name, "acos")) return acos(x);
    if (!strcmp(name, "atan")) return atan(x);
    if (!strcmp(name, "sinh")) return sinh(x);
    if (!strcmp(name, "cosh")) return cosh(x);
    if (!strcmp(name, "tanh")) return tanh(x);
    if (!strcmp(name, "asinh")) return asinh(x);
    if (!strcmp(name, "acosh")) return acosh(x);
    if (!strcmp(name, "atanh")) return atanh(x);
    if (!strcmp(name, "erf")) return erf(x);
    if (!strcmp(name, "erfc")) return erfc(x);
    if (!strcmp(name, "sigmoid")) return pg_sigmoid(x);
    if (!strcmp(name, "softplus")) return log1p(exp(-fabs(x))) + fmax(x, 0);
    if (!strcmp(name, "square")) return x * x;
    if (!strcmp(name, "recip")) return 1 / x;
    /* kinks at 0 */
    pg_near(ev, x);
    pg_choose(ev, x > 0);
    if (!strcmp(name, "fabs")) return fabs(x);
    if (!strcmp(name, "relu")) return x > 0 ? x : 0;
    cr_assert_fail("unknown function %s", name);
    return 0;
}

static double pg_fn2(int fn, double a, double b, pg_eval *ev)
{
    const char *name = PG_FN2[fn];
    if (!strcmp(name, "pow"))
        return pow(a, b);
    if (!strcmp(name, "hypot") || !strcmp(name, "atan2")) {
        pg_near(ev, hypot(a, b));
        if (name[0] == 'a' && b < 0) { /* atan2's cut along the negative b axis */
            pg_near(ev, a);
            pg_choose(ev, a > 0);
        }
        return name[0] == 'h' ? hypot(a, b) : atan2(a, b);
    }
    if (!strcmp(name, "copysign")) {
        pg_near(ev, a);
        pg_near(ev, b);
        pg_choose(ev, (a > 0) * 2 + (b > 0));
        return copysign(a, b);
    }
    /* fmax fmin max min: the tie */
    pg_near(ev, a - b);
    pg_choose(ev, a > b);
    return name[1] == 'a' || name[2] == 'a' ? fmax(a, b) : fmin(a, b);
}

static double pg_eval_node(const pg_prog *p, pg_frame *fr, pg_eval *ev, int node)
{
    const pg_node *n = &p->node[node];
    double v = 0;
    switch (n->kind) {
    case E_VAR: v = fr->t[n->var]; break;
    case E_CAST: v = pg_eval_opnd(p, fr, ev, n->o[0]); break;
    case E_BIN: {
        double a = pg_eval_opnd(p, fr, ev, n->o[0]), b = pg_eval_opnd(p, fr, ev, n->o[1]);
        v = n->op == '+' ? a + b : n->op == '-' ? a - b : n->op == '*' ? a * b : a / b;
        break;
    }
    case E_NEG: v = -pg_eval_opnd(p, fr, ev, n->o[0]); break;
    case E_PLUS: v = pg_eval_opnd(p, fr, ev, n->o[0]); break;
    case E_CALL1: v = pg_fn1(PG_FN1[n->op].name, pg_eval_opnd(p, fr, ev, n->o[0]), ev); break;
    case E_CALL2: {
        double a = pg_eval_opnd(p, fr, ev, n->o[0]), b = pg_eval_opnd(p, fr, ev, n->o[1]);
        v = pg_fn2(n->op, a, b, ev);
        break;
    }
    case E_FMA: {
        double a = pg_eval_opnd(p, fr, ev, n->o[0]), b = pg_eval_opnd(p, fr, ev, n->o[1]);
        v = fma(a, b, pg_eval_opnd(p, fr, ev, n->o[2]));
        break;
    }
    case E_CLAMP: {
        double a = pg_eval_opnd(p, fr, ev, n->o[0]);
        double lo = pg_eval_opnd(p, fr, ev, n->o[1]), hi = pg_eval_opnd(p, fr, ev, n->o[2]);
        pg_near(ev, a - lo);
        pg_near(ev, a - hi);
        pg_choose(ev, (a > lo) + (a > hi));
        v = a < lo ? lo : a > hi ? hi : a;
        break;
    }
    case E_POWN: {
        double a = pg_eval_opnd(p, fr, ev, n->o[0]);
        int k = (int)pg_real_value(p, fr, n->o[1].r);
        v = 1;
        for (int i = 0; i < k; i++)
            v *= a;
        break;
    }
    case E_SELECT: {
        int c = pg_eval_cond(p, fr, ev, n->cond);
        v = pg_eval_opnd(p, fr, ev, n->o[c ? 0 : 1]);
        break;
    }
    case E_HELPER: {
        double args[2] = {pg_eval_opnd(p, fr, ev, n->o[0]), pg_eval_opnd(p, fr, ev, n->o[1])};
        v = pg_call(p, &p->helper, args, ev);
        break;
    }
    }
    if (!(fabs(v) <= ev->maxabs))
        ev->maxabs = isnan(v) ? INFINITY : fabs(v);
    return v;
}

static int pg_eval_cond(const pg_prog *p, pg_frame *fr, pg_eval *ev, int c)
{
    const pg_cond *cd = &p->cond[c];
    double a = pg_eval_opnd(p, fr, ev, cd->o[0]), b = pg_eval_opnd(p, fr, ev, cd->o[1]);
    const char *op = cd->op;
    int r;
    if (!strcmp(op, "<")) r = a < b;
    else if (!strcmp(op, "<=")) r = a <= b;
    else if (!strcmp(op, ">")) r = a > b;
    else if (!strcmp(op, ">=")) r = a >= b;
    else if (!strcmp(op, "==")) r = a == b;
    else r = a != b;
    if (op[0] != '=' && op[0] != '!')
        pg_near(ev, a - b);
    pg_choose(ev, r);
    return cd->negated ? !r : r;
}

/* Runs a block; returns 1 when it returned. */
static int pg_exec(const pg_prog *p, pg_frame *fr, pg_eval *ev, int first)
{
    for (int si = first; si >= 0; si = p->stmt[si].next) {
        const pg_stmt *s = &p->stmt[si];
        switch (s->kind) {
        case S_DECL:
            fr->t[s->var] = pg_eval_opnd(p, fr, ev, s->e);
            break;
        case S_ASSIGN: {
            double e = pg_eval_opnd(p, fr, ev, s->e), *t = &fr->t[s->var];
            *t = s->op == '=' ? e : s->op == '+' ? *t + e : s->op == '-' ? *t - e : s->op == '*' ? *t * e : *t / e;
            if (!(fabs(*t) <= ev->maxabs))
                ev->maxabs = isnan(*t) ? INFINITY : fabs(*t);
            break;
        }
        case S_IF:
            if (pg_eval_cond(p, fr, ev, s->cond)) {
                if (pg_exec(p, fr, ev, s->body))
                    return 1;
            } else if (pg_exec(p, fr, ev, s->els)) {
                return 1;
            }
            break;
        case S_FOR:
            for (fr->counter[s->counter] = 0; fr->counter[s->counter] < s->count; fr->counter[s->counter]++)
                if (pg_exec(p, fr, ev, s->body))
                    return 1;
            break;
        case S_WHILE:
            fr->counter[s->counter] = 0;
            while (pg_eval_cond(p, fr, ev, s->cond) && fr->counter[s->counter] < s->count) {
                if (pg_exec(p, fr, ev, s->body))
                    return 1;
                fr->counter[s->counter]++;
            }
            break;
        case S_RETURN:
            fr->ret = pg_eval_opnd(p, fr, ev, s->e);
            fr->returned = 1;
            return 1;
        case S_OUT:
            fr->out[s->var] = pg_eval_opnd(p, fr, ev, s->e);
            break;
        }
    }
    return 0;
}

static double pg_call(const pg_prog *p, const pg_func *fn, const double *args, pg_eval *ev)
{
    pg_frame fr;
    memset(&fr, 0, sizeof fr);
    fr.fn = fn;
    for (int j = 0; j < fn->n_params; j++)
        fr.t[j] = args[j];
    pg_exec(p, &fr, ev, fn->first);
    cr_assert(fr.returned, "seed %llu: the helper did not return", (unsigned long long)p->seed);
    return fr.ret;
}

/* The outputs of p's main function at x; ev (reset here) receives the margin,
 * the largest magnitude and the trace of branches. */
static void pg_eval_main(const pg_prog *p, const double *x, double *y, pg_eval *ev)
{
    *ev = (pg_eval){.margin = INFINITY, .maxabs = 0, .trace = 0};
    pg_frame fr;
    memset(&fr, 0, sizeof fr);
    fr.fn = &p->main;
    for (int j = 0; j < p->main.n_params; j++)
        fr.t[j] = x[j];
    pg_exec(p, &fr, ev, p->main.first);
    if (p->main.n_out == 1) {
        cr_assert(fr.returned, "seed %llu: main did not return", (unsigned long long)p->seed);
        y[0] = fr.ret;
    } else {
        for (int o = 0; o < p->main.n_out; o++)
            y[o] = fr.out[o];
    }
    for (int o = 0; o < p->main.n_out; o++)
        if (!(fabs(y[o]) <= ev->maxabs))
            ev->maxabs = isnan(y[o]) ? INFINITY : fabs(y[o]);
}

#endif
