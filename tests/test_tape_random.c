/* SPDX-License-Identifier: Apache-2.0 */
/* Randomised tape programs (fixed seeds: reproducible), f64.
 *
 * Each program draws a few leaf tensors (rank 0..2, dimensions 1 or 2..4,
 * values in [-1, 1], requires_grad at random), then 3..9 operations,
 * each on earlier values (so values fan out and leaves are reused) or on
 * new leaves of a compatible shape:
 *   broadcasts of four small kernels (1 input; 2 inputs; 3 inputs and two
 *   outputs, sometimes only one of them used; 4 inputs), with a branch on
 *   ad_val whose two sides compute the same function;
 *   clmad_add, sub, mul (NumPy broadcasting), neg, tanh, sigmoid;
 *   clmad_sum and clmad_mean over random axes (negative ones too, keepdims
 *   or not, or every axis); clmad_matmul with random transposes;
 *   clmad_slice, clmad_concat (2 or 3 pieces, a value with itself too),
 *   clmad_reshape, clmad_transpose (random permutation or NULL).
 * The loss is the sum over every value no operation used of sum(v * W_v),
 * W_v a random constant. A random chunk cap (default, 1, 2, 3) is set per
 * program, and before every operation a partials policy (AUTO, STORE,
 * RECOMPUTE): the program's, or at times another, so that one tape mixes
 * them. Then clmad_backward.
 *
 * Checks, against a host reference in double: every value of the forward
 * pass (1e-12, mixed absolute/relative); the gradient of every leaf that
 * requires one against central finite differences of the host program
 * (1e-6); leaves without requires_grad have no gradient; which values
 * require a gradient; a loss computed from no leaf that requires one makes
 * backward fail with CLMAD_ERR_STATE; some programs keep the tape and run
 * backward twice (the gradients double). After each program every tensor
 * is released, the tape is cleared and the device bytes held by live
 * tensors are back to where they started.
 *
 * 120 programs in two batches (Criterion runs them in parallel): 16
 * structures (operations, operands, ranks, which dimensions are 1,
 * activity, policies, chunk cap), each drawn 8 times with other sizes (2..4
 * where not 1), slices and values. Every new kernel variant is a compile on
 * POCL, and variants depend on the structure, not on the sizes: this keeps
 * a cold run (about 50 distinct programs per batch) within a minute.
 *
 * CLMAD_TEST_SMALL=1 (make test-valgrind, test-oclgrind) runs 6 programs
 * per batch. */
#include "bcast_support.h"

#include <stdio.h>

#define MAXV 64       /* values per program */
#define MAXLEAF 24    /* leaves per program */
#define MAXNUMEL 256  /* elements per value */
#define DRAWS 8       /* programs per structure */

/* ---- kernels ------------------------------------------------------------- */

static const char *K_SRC[4] = {
    /* sigmoid, by one formula or the other depending on the sign */
    "T rk1(T x)\n"
    "{\n"
    "    if (ad_val(x) > 0)\n"
    "        return ad_rdiv(1, ad_addr(ad_exp(ad_neg(x)), 1));\n"
    "    T e = ad_exp(x);\n"
    "    return ad_div(e, ad_addr(e, 1));\n"
    "}\n",
    "T rk2(T x, T y) { return ad_add(ad_mul(x, ad_sin(y)), ad_mulr(ad_tanh(y), 0.5)); }\n",
    "void rk3(T a, T b, T c, T *y0, T *y1)\n"
    "{\n"
    "    *y0 = ad_tanh(ad_add(ad_mul(a, b), c));\n"
    "    *y1 = ad_sub(ad_mul(a, ad_sigmoid(c)), ad_mulr(b, 0.5));\n"
    "}\n",
    "T rk4(T a, T b, T c, T d) { return ad_add(ad_mul(a, ad_cos(b)), ad_mul(ad_mulr(c, 0.5), ad_tanh(d))); }\n",
};
static const char *K_NAME[4] = {"rk1", "rk2", "rk3", "rk4"};
static const int K_IN[4] = {1, 2, 3, 4};
static const int K_OUT[4] = {1, 1, 2, 1};

static double sigm(double x) { return 1 / (1 + exp(-x)); }

/* Host versions: y[0..K_OUT) from x[0..K_IN). */
static void host_kernel(int k, const double *x, double *y)
{
    switch (k) {
    case 0: y[0] = sigm(x[0]); break;
    case 1: y[0] = x[0] * sin(x[1]) + 0.5 * tanh(x[1]); break;
    case 2:
        y[0] = tanh(x[0] * x[1] + x[2]);
        y[1] = x[0] * sigm(x[2]) - 0.5 * x[1];
        break;
    default: y[0] = x[0] * cos(x[1]) + 0.5 * x[2] * tanh(x[3]); break;
    }
}

/* ---- programs ------------------------------------------------------------ */

typedef enum op_kind {
    OP_BCAST, OP_ADD, OP_SUB, OP_MUL, OP_NEG, OP_TANH, OP_SIGMOID, OP_SUM, OP_MEAN,
    OP_MATMUL, OP_SLICE, OP_CONCAT, OP_RESHAPE, OP_TRANSPOSE, N_OP_KINDS
} op_kind;

typedef struct shape {
    int ndim;
    size_t d[CLMAD_MAX_DIMS];
} shape;

typedef struct op {
    op_kind kind;
    int n_in, in[4];   /* value ids */
    int n_out, out[2]; /* value ids; out[1] = -1: second output unused */
    int kernel;        /* OP_BCAST */
    int policy;        /* clmad_partials_policy set before the call */
    int naxes, axes[CLMAD_MAX_DIMS], keepdims; /* SUM, MEAN */
    int trans_a, trans_b;                      /* MATMUL */
    int axis;                                  /* SLICE, CONCAT */
    size_t start, stop;                        /* SLICE */
    shape to;                                  /* RESHAPE */
    int perm_null, perm[CLMAD_MAX_DIMS];       /* TRANSPOSE */
} op;

typedef struct value {
    shape s;
    int leaf, requires_grad, used;
    double *data;  /* leaves: their elements */
} value;

typedef struct program {
    int nv, nops, cap;
    value v[MAXV];
    op ops[MAXV];
    int n_loss, loss_v[MAXV]; /* the values that make up the loss */
    double *w[MAXV];          /* their weights (same shape) */
    int twice;                /* retain the tape, backward twice */
    int policy;               /* clmad_partials_policy of the program */
    uint64_t *rv;             /* the generator of sizes and values (see make_program) */
} program;

static size_t numel(const shape *s) { return bs_numel(s->ndim, s->d); }

static void describe_shape(char *buf, size_t cap, const shape *s)
{
    size_t u = (size_t)snprintf(buf, cap, "(");
    for (int i = 0; i < s->ndim && u < cap; i++)
        u += (size_t)snprintf(buf + u, cap - u, i ? ",%zu" : "%zu", s->d[i]);
    if (u < cap)
        snprintf(buf + u, cap - u, ")");
}

static double *random_data(uint64_t *rng, size_t n)
{
    double *d = malloc((n ? n : 1) * sizeof *d);
    cr_assert_not_null(d);
    for (size_t i = 0; i < n; i++)
        d[i] = bs_uniform(rng, -1, 1);
    return d;
}

static int new_value(program *p, const shape *s)
{
    cr_assert_lt(p->nv, MAXV);
    value *v = &p->v[p->nv];
    memset(v, 0, sizeof *v);
    v->s = *s;
    return p->nv++;
}

static int new_leaf(program *p, uint64_t *rng, const shape *s)
{
    int id = new_value(p, s);
    p->v[id].leaf = 1;
    p->v[id].requires_grad = bs_int(rng, 0, 9) < 6;
    p->v[id].data = random_data(p->rv, numel(s));
    return id;
}

/* A dimension: whether it is 1 comes from the structure's generator, its
 * size (2..4) otherwise from the sizes' one. */
static size_t draw_dim(program *p, uint64_t *rng)
{
    return bs_int(rng, 0, 3) == 0 ? 1 : (size_t)bs_int(p->rv, 2, 4);
}

static void random_shape(program *p, uint64_t *rng, shape *s)
{
    s->ndim = bs_int(rng, 0, 2);
    for (int i = 0; i < s->ndim; i++)
        s->d[i] = draw_dim(p, rng);
}

/* An existing value, often the latest one. */
static int pick(program *p, uint64_t *rng)
{
    return bs_int(rng, 0, 1) ? p->nv - 1 : bs_int(rng, 0, p->nv - 1);
}

/* A shape that broadcasts with s into s: leading axes dropped, some set to 1. */
static void sub_shape(uint64_t *rng, const shape *s, shape *o)
{
    int drop = bs_int(rng, 0, 3) == 0 ? bs_int(rng, 0, s->ndim) : 0;
    o->ndim = s->ndim - drop;
    for (int i = 0; i < o->ndim; i++)
        o->d[i] = bs_int(rng, 0, 2) == 0 ? 1 : s->d[i + drop];
}

static int broadcasts_into(const shape *a, const shape *s)
{
    if (a->ndim > s->ndim)
        return 0;
    for (int i = 1; i <= a->ndim; i++)
        if (a->d[a->ndim - i] != 1 && a->d[a->ndim - i] != s->d[s->ndim - i])
            return 0;
    return 1;
}

/* An operand for an elementwise operation whose result has shape s: an
 * existing value that broadcasts into s, or a new leaf. */
static int operand_for(program *p, uint64_t *rng, const shape *s)
{
    if (bs_int(rng, 0, 1)) {
        int start = bs_int(rng, 0, p->nv - 1);
        for (int i = 0; i < p->nv; i++) {
            int id = (start + i) % p->nv;
            if (broadcasts_into(&p->v[id].s, s))
                return id;
        }
    }
    shape o;
    sub_shape(rng, s, &o);
    return new_leaf(p, rng, &o);
}

static void shuffle(uint64_t *rng, int *a, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = bs_int(rng, 0, i), t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* Appends one random operation; returns 0 when the draw did not fit (the
 * caller draws again). */
static int add_op(program *p, uint64_t *rng)
{
    if (p->nv + 6 > MAXV || p->nops >= MAXV)
        return 0;
    op o;
    memset(&o, 0, sizeof o);
    o.kind = (op_kind)bs_int(rng, 0, N_OP_KINDS - 1);
    if (bs_int(rng, 0, 2) == 0)
        o.kind = OP_BCAST; /* the broadcasts more often */
    o.policy = bs_int(rng, 0, 3) ? p->policy : bs_int(rng, 0, 2);
    o.out[1] = -1;
    o.n_out = 1;
    int a = pick(p, rng);
    const shape *sa = &p->v[a].s;
    shape out;
    switch (o.kind) {
    case OP_BCAST: {
        o.kernel = bs_int(rng, 0, 3);
        o.n_in = K_IN[o.kernel];
        /* The result's shape is a's; the other inputs broadcast into it,
         * in random positions. */
        o.in[0] = a;
        for (int j = 1; j < o.n_in; j++)
            o.in[j] = operand_for(p, rng, sa);
        shuffle(rng, o.in, o.n_in);
        out = *sa;
        o.n_out = K_OUT[o.kernel];
        break;
    }
    case OP_ADD:
    case OP_SUB:
    case OP_MUL:
        o.n_in = 2;
        o.in[0] = a;
        o.in[1] = operand_for(p, rng, sa);
        shuffle(rng, o.in, 2);
        out = *sa;
        break;
    case OP_NEG:
    case OP_TANH:
    case OP_SIGMOID:
        o.n_in = 1;
        o.in[0] = a;
        out = *sa;
        break;
    case OP_SUM:
    case OP_MEAN: {
        o.n_in = 1;
        o.in[0] = a;
        o.keepdims = bs_int(rng, 0, 1);
        o.naxes = sa->ndim ? bs_int(rng, 0, sa->ndim) : 0;
        int ax[CLMAD_MAX_DIMS];
        for (int i = 0; i < sa->ndim; i++)
            ax[i] = i;
        shuffle(rng, ax, sa->ndim);
        int summed[CLMAD_MAX_DIMS] = {0};
        for (int i = 0; i < o.naxes; i++) {
            summed[ax[i]] = 1;
            o.axes[i] = bs_int(rng, 0, 1) ? ax[i] : ax[i] - sa->ndim;
        }
        if (o.naxes == 0)
            for (int i = 0; i < sa->ndim; i++)
                summed[i] = 1;
        out.ndim = 0;
        for (int i = 0; i < sa->ndim; i++)
            if (!summed[i])
                out.d[out.ndim++] = sa->d[i];
            else if (o.keepdims)
                out.d[out.ndim++] = 1;
        break;
    }
    case OP_MATMUL: {
        o.n_in = 2;
        o.trans_a = bs_int(rng, 0, 1);
        o.trans_b = bs_int(rng, 0, 1);
        if (sa->ndim != 2) {
            shape s = {2, {draw_dim(p, rng), draw_dim(p, rng)}};
            a = new_leaf(p, rng, &s);
            sa = &p->v[a].s;
        }
        size_t m = o.trans_a ? sa->d[1] : sa->d[0], k = o.trans_a ? sa->d[0] : sa->d[1];
        size_t n = draw_dim(p, rng);
        shape sb = {2, {o.trans_b ? n : k, o.trans_b ? k : n}};
        int b = -1;
        for (int i = 0; i < p->nv && bs_int(rng, 0, 1); i++)
            if (p->v[i].s.ndim == 2 && p->v[i].s.d[o.trans_b ? 1 : 0] == k) {
                b = i;
                n = p->v[i].s.d[o.trans_b ? 0 : 1];
                break;
            }
        if (b < 0)
            b = new_leaf(p, rng, &sb);
        o.in[0] = a;
        o.in[1] = b;
        out.ndim = 2;
        out.d[0] = m;
        out.d[1] = n;
        break;
    }
    case OP_SLICE: {
        int cand[CLMAD_MAX_DIMS], nc = 0;
        for (int i = 0; i < sa->ndim; i++)
            if (sa->d[i] >= 2)
                cand[nc++] = i;
        if (!nc)
            return 0;
        o.n_in = 1;
        o.in[0] = a;
        o.axis = cand[bs_int(rng, 0, nc - 1)];
        o.start = (size_t)bs_int(p->rv, 0, (int)sa->d[o.axis] - 1);
        o.stop = (size_t)bs_int(p->rv, (int)o.start + 1, (int)sa->d[o.axis]);
        out = *sa;
        out.d[o.axis] = o.stop - o.start;
        break;
    }
    case OP_CONCAT: {
        if (sa->ndim == 0)
            return 0;
        o.axis = bs_int(rng, 0, sa->ndim - 1);
        o.n_in = bs_int(rng, 2, 3);
        o.in[0] = a;
        out = *sa;
        for (int j = 1; j < o.n_in; j++) {
            if (bs_int(rng, 0, 2) == 0) {
                o.in[j] = a; /* the same value again */
            } else {
                shape s = *sa;
                s.d[o.axis] = (size_t)bs_int(p->rv, 1, 3);
                o.in[j] = new_leaf(p, rng, &s);
            }
            out.d[o.axis] += p->v[o.in[j]].s.d[o.axis];
        }
        shuffle(rng, o.in, o.n_in);
        if (numel(&out) > MAXNUMEL)
            return 0;
        break;
    }
    case OP_RESHAPE: {
        o.n_in = 1;
        o.in[0] = a;
        /* A random factorisation of the element count, rank 0..3. */
        size_t n = numel(sa), rest = n;
        shape s = {0, {0}};
        int rank = bs_int(rng, n == 1 ? 0 : 1, 2);
        for (int i = 0; i + 1 < rank; i++) {
            size_t divs[64];
            int nd = 0;
            for (size_t f = 1; f <= rest && nd < 64; f++)
                if (rest % f == 0)
                    divs[nd++] = f;
            s.d[s.ndim++] = divs[bs_int(p->rv, 0, nd - 1)];
            rest /= s.d[s.ndim - 1];
        }
        if (rank > 0)
            s.d[s.ndim++] = rest;
        o.to = s;
        out = s;
        break;
    }
    case OP_TRANSPOSE:
    default:
        if (sa->ndim < 2)
            return 0;
        o.n_in = 1;
        o.in[0] = a;
        o.perm_null = bs_int(rng, 0, 3) == 0;
        for (int i = 0; i < sa->ndim; i++)
            o.perm[i] = o.perm_null ? sa->ndim - 1 - i : i;
        if (!o.perm_null)
            shuffle(rng, o.perm, sa->ndim);
        out.ndim = sa->ndim;
        for (int i = 0; i < sa->ndim; i++)
            out.d[i] = sa->d[o.perm[i]];
        break;
    }
    if (numel(&out) > MAXNUMEL)
        return 0;
    for (int j = 0; j < o.n_in; j++)
        p->v[o.in[j]].used = 1;
    o.out[0] = new_value(p, &out);
    if (o.n_out == 2 && bs_int(rng, 0, 2)) /* sometimes the second output is dropped */
        o.out[1] = new_value(p, &out);
    p->ops[p->nops++] = o;
    return 1;
}

/* rng draws the structure (operations, operands, ranks, which dimensions
 * are 1, activity, policy, chunk cap), rv the sizes and the values. */
static void make_program(program *p, uint64_t *rng, uint64_t *rv)
{
    memset(p, 0, sizeof *p);
    p->rv = rv;
    p->policy = bs_int(rng, 0, 2);
    int n_leaves = bs_int(rng, 1, 2);
    for (int i = 0; i < n_leaves; i++) {
        shape s;
        random_shape(p, rng, &s);
        new_leaf(p, rng, &s);
    }
    int n_ops = bs_int(rng, 3, 9);
    for (int tries = 0; p->nops < n_ops && tries < 200; tries++)
        add_op(p, rng);
    /* At least one leaf requires a gradient. */
    int any = 0, first_leaf = -1;
    for (int i = 0; i < p->nv; i++)
        if (p->v[i].leaf) {
            any |= p->v[i].requires_grad;
            if (first_leaf < 0)
                first_leaf = i;
        }
    if (!any)
        p->v[first_leaf].requires_grad = 1;
    /* The loss: every value no operation used (results, and leaves that
     * were drawn but never used), weighted. */
    for (int i = 0; i < p->nv; i++)
        if (!p->v[i].used && !p->v[i].leaf) {
            p->loss_v[p->n_loss] = i;
            p->w[p->n_loss] = random_data(p->rv, numel(&p->v[i].s));
            p->n_loss++;
        }
    static const int caps[4] = {0, 1, 2, 3};
    p->cap = caps[bs_int(rng, 0, 3)];
    p->twice = bs_int(rng, 0, 7) == 0;
}

static void free_program(program *p)
{
    for (int i = 0; i < p->nv; i++)
        free(p->v[i].data);
    for (int i = 0; i < p->n_loss; i++)
        free(p->w[i]);
}

/* ---- host reference (double) -------------------------------------------- */

static void unravel(size_t flat, const shape *s, size_t *c)
{
    for (int i = s->ndim - 1; i >= 0; i--) {
        c[i] = flat % s->d[i];
        flat /= s->d[i];
    }
}

static size_t ravel(const size_t *c, const shape *s)
{
    size_t f = 0;
    for (int i = 0; i < s->ndim; i++)
        f = f * s->d[i] + c[i];
    return f;
}

/* Runs the program on the host: vals[i] receives value i (malloc'ed; the
 * leaves' point at their data). Returns the loss. */
static double host_run(const program *p, double **vals)
{
    for (int i = 0; i < p->nv; i++)
        vals[i] = p->v[i].leaf ? p->v[i].data : NULL;
    for (int q = 0; q < p->nops; q++) {
        const op *o = &p->ops[q];
        const shape *so = &p->v[o->out[0]].s;
        size_t n = numel(so);
        double *y0 = calloc(n ? n : 1, sizeof *y0), *y1 = NULL;
        cr_assert_not_null(y0);
        const shape *s0 = &p->v[o->in[0]].s;
        const double *x0 = vals[o->in[0]];
        switch (o->kind) {
        case OP_BCAST:
        case OP_ADD:
        case OP_SUB:
        case OP_MUL:
        case OP_NEG:
        case OP_TANH:
        case OP_SIGMOID:
            if (o->kind == OP_BCAST && K_OUT[o->kernel] == 2) {
                y1 = calloc(n ? n : 1, sizeof *y1);
                cr_assert_not_null(y1);
            }
            for (size_t e = 0; e < n; e++) {
                double x[4] = {0, 0, 0, 0}, y[2] = {0, 0};
                for (int j = 0; j < o->n_in; j++) {
                    const shape *sj = &p->v[o->in[j]].s;
                    x[j] = vals[o->in[j]][bs_bindex(e, so->ndim, so->d, sj->ndim, sj->d)];
                }
                switch (o->kind) {
                case OP_BCAST: host_kernel(o->kernel, x, y); break;
                case OP_ADD: y[0] = x[0] + x[1]; break;
                case OP_SUB: y[0] = x[0] - x[1]; break;
                case OP_MUL: y[0] = x[0] * x[1]; break;
                case OP_NEG: y[0] = -x[0]; break;
                case OP_TANH: y[0] = tanh(x[0]); break;
                default: y[0] = sigm(x[0]); break;
                }
                y0[e] = y[0];
                if (y1)
                    y1[e] = y[1];
            }
            break;
        case OP_SUM:
        case OP_MEAN: {
            int summed[CLMAD_MAX_DIMS] = {0};
            for (int i = 0; i < o->naxes; i++)
                summed[(o->axes[i] + s0->ndim) % s0->ndim] = 1;
            if (o->naxes == 0)
                for (int i = 0; i < s0->ndim; i++)
                    summed[i] = 1;
            size_t nin = numel(s0), c[CLMAD_MAX_DIMS], oc[CLMAD_MAX_DIMS];
            for (size_t e = 0; e < nin; e++) {
                unravel(e, s0, c);
                int k = 0;
                for (int i = 0; i < s0->ndim; i++)
                    if (!summed[i])
                        oc[k++] = c[i];
                    else if (o->keepdims)
                        oc[k++] = 0;
                y0[ravel(oc, so)] += x0[e];
            }
            if (o->kind == OP_MEAN && n) {
                double cnt = (double)nin / (double)n;
                for (size_t e = 0; e < n; e++)
                    y0[e] /= cnt;
            }
            break;
        }
        case OP_MATMUL: {
            const shape *s1 = &p->v[o->in[1]].s;
            const double *x1 = vals[o->in[1]];
            size_t m = so->d[0], nn = so->d[1], k = o->trans_a ? s0->d[0] : s0->d[1];
            for (size_t i = 0; i < m; i++)
                for (size_t j = 0; j < nn; j++) {
                    double acc = 0;
                    for (size_t l = 0; l < k; l++) {
                        double av = o->trans_a ? x0[l * s0->d[1] + i] : x0[i * s0->d[1] + l];
                        double bv = o->trans_b ? x1[j * s1->d[1] + l] : x1[l * s1->d[1] + j];
                        acc += av * bv;
                    }
                    y0[i * nn + j] = acc;
                }
            break;
        }
        case OP_SLICE: {
            size_t c[CLMAD_MAX_DIMS];
            for (size_t e = 0; e < n; e++) {
                unravel(e, so, c);
                c[o->axis] += o->start;
                y0[e] = x0[ravel(c, s0)];
            }
            break;
        }
        case OP_CONCAT: {
            size_t c[CLMAD_MAX_DIMS];
            for (size_t e = 0; e < n; e++) {
                unravel(e, so, c);
                int j = 0;
                while (c[o->axis] >= p->v[o->in[j]].s.d[o->axis]) {
                    c[o->axis] -= p->v[o->in[j]].s.d[o->axis];
                    j++;
                }
                y0[e] = vals[o->in[j]][ravel(c, &p->v[o->in[j]].s)];
            }
            break;
        }
        case OP_RESHAPE:
            memcpy(y0, x0, n * sizeof *y0);
            break;
        case OP_TRANSPOSE:
        default: {
            size_t c[CLMAD_MAX_DIMS], ic[CLMAD_MAX_DIMS];
            for (size_t e = 0; e < n; e++) {
                unravel(e, so, c);
                for (int i = 0; i < so->ndim; i++)
                    ic[o->perm[i]] = c[i];
                y0[e] = x0[ravel(ic, s0)];
            }
            break;
        }
        }
        vals[o->out[0]] = y0;
        if (o->out[1] >= 0)
            vals[o->out[1]] = y1;
        else
            free(y1);
    }
    double loss = 0;
    for (int l = 0; l < p->n_loss; l++) {
        int id = p->loss_v[l];
        size_t n = numel(&p->v[id].s);
        for (size_t e = 0; e < n; e++)
            loss += vals[id][e] * p->w[l][e];
    }
    return loss;
}

static void host_free(const program *p, double **vals)
{
    for (int i = 0; i < p->nv; i++)
        if (!p->v[i].leaf)
            free(vals[i]);
}

static double host_loss(const program *p)
{
    double *vals[MAXV];
    double l = host_run(p, vals);
    host_free(p, vals);
    return l;
}

/* ---- the device run ------------------------------------------------------ */

typedef struct fixture {
    clmad_context *ctx;
    clmad_kernel *k[4];
} fixture;

static void run_op(fixture *f, const program *p, const op *o, clmad_tensor **t)
{
    clmad_context *ctx = f->ctx;
    clmad_tensor *in[4] = {NULL};
    for (int j = 0; j < o->n_in; j++)
        in[j] = t[o->in[j]];
    clmad_tensor *out[2] = {NULL, NULL};
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, (clmad_partials_policy)o->policy));
    switch (o->kind) {
    case OP_BCAST: CHECK_OK(ctx, clmad_broadcast(ctx, f->k[o->kernel], in, out)); break;
    case OP_ADD: CHECK_OK(ctx, clmad_add(ctx, in[0], in[1], &out[0])); break;
    case OP_SUB: CHECK_OK(ctx, clmad_sub(ctx, in[0], in[1], &out[0])); break;
    case OP_MUL: CHECK_OK(ctx, clmad_mul(ctx, in[0], in[1], &out[0])); break;
    case OP_NEG: CHECK_OK(ctx, clmad_neg(ctx, in[0], &out[0])); break;
    case OP_TANH: CHECK_OK(ctx, clmad_tanh(ctx, in[0], &out[0])); break;
    case OP_SIGMOID: CHECK_OK(ctx, clmad_sigmoid(ctx, in[0], &out[0])); break;
    case OP_SUM:
        CHECK_OK(ctx, clmad_sum(ctx, in[0], o->naxes, o->naxes ? o->axes : NULL, o->keepdims, &out[0]));
        break;
    case OP_MEAN:
        CHECK_OK(ctx, clmad_mean(ctx, in[0], o->naxes, o->naxes ? o->axes : NULL, o->keepdims, &out[0]));
        break;
    case OP_MATMUL: CHECK_OK(ctx, clmad_matmul(ctx, in[0], in[1], o->trans_a, o->trans_b, &out[0])); break;
    case OP_SLICE: CHECK_OK(ctx, clmad_slice(ctx, in[0], o->axis, o->start, o->stop, &out[0])); break;
    case OP_CONCAT: CHECK_OK(ctx, clmad_concat(ctx, o->n_in, in, o->axis, &out[0])); break;
    case OP_RESHAPE: CHECK_OK(ctx, clmad_reshape(ctx, in[0], o->to.ndim, o->to.d, &out[0])); break;
    case OP_TRANSPOSE:
    default: CHECK_OK(ctx, clmad_transpose(ctx, in[0], o->perm_null ? NULL : o->perm, &out[0])); break;
    }
    (void)p;
    t[o->out[0]] = out[0];
    if (o->out[1] >= 0)
        t[o->out[1]] = out[1];
    else
        clmad_tensor_release(out[1]);
}

static void describe_program(char *buf, size_t cap, const program *p)
{
    static const char *names[N_OP_KINDS] = {"bcast", "add", "sub", "mul", "neg", "tanh", "sigmoid", "sum",
                                            "mean", "matmul", "slice", "concat", "reshape", "transpose"};
    size_t u = (size_t)snprintf(buf, cap, "cap %d%s; leaves:", p->cap, p->twice ? " twice" : "");
    char sh[64];
    for (int i = 0; i < p->nv && u < cap; i++)
        if (p->v[i].leaf) {
            describe_shape(sh, sizeof sh, &p->v[i].s);
            u += (size_t)snprintf(buf + u, cap - u, " v%d%s%s", i, sh, p->v[i].requires_grad ? "*" : "");
        }
    for (int q = 0; q < p->nops && u < cap; q++) {
        const op *o = &p->ops[q];
        u += (size_t)snprintf(buf + u, cap - u, "; v%d", o->out[0]);
        if (o->out[1] >= 0 && u < cap)
            u += (size_t)snprintf(buf + u, cap - u, ",v%d", o->out[1]);
        if (u < cap)
            u += (size_t)snprintf(buf + u, cap - u, " = %s%s%s(", names[o->kind],
                                  o->kind == OP_BCAST ? ":" : "", o->kind == OP_BCAST ? K_NAME[o->kernel] : "");
        for (int j = 0; j < o->n_in && u < cap; j++)
            u += (size_t)snprintf(buf + u, cap - u, j ? ",v%d" : "v%d", o->in[j]);
        if (u < cap)
            u += (size_t)snprintf(buf + u, cap - u, ") pol %d", o->policy);
    }
}

static void run_program(fixture *f, int index, uint64_t *rng, uint64_t *rv)
{
    clmad_context *ctx = f->ctx;
    program *p = malloc(sizeof *p);
    cr_assert_not_null(p);
    make_program(p, rng, rv);
    char desc[4096];
    describe_program(desc, sizeof desc, p);

    clmad_stats st0;
    CHECK_OK(ctx, clmad_context_stats(ctx, &st0));
    CHECK_OK(ctx, clmad_set_chunk_cap(ctx, p->cap));
    CHECK_OK(ctx, clmad_set_retain_tape(ctx, p->twice));

    clmad_tensor *t[MAXV] = {NULL};
    for (int i = 0; i < p->nv; i++)
        if (p->v[i].leaf) {
            t[i] = bs_tensor(ctx, CLMAD_F64, p->v[i].s.ndim, p->v[i].s.d, p->v[i].data);
            CHECK_OK(ctx, clmad_tensor_set_requires_grad(t[i], p->v[i].requires_grad));
        }
    for (int q = 0; q < p->nops; q++)
        run_op(f, p, &p->ops[q], t);

    /* loss = sum over the loss values of sum(v * W) */
    clmad_tensor *loss = NULL;
    for (int l = 0; l < p->n_loss; l++) {
        const shape *s = &p->v[p->loss_v[l]].s;
        clmad_tensor *w = bs_tensor(ctx, CLMAD_F64, s->ndim, s->d, p->w[l]), *m = NULL, *part = NULL;
        CHECK_OK(ctx, clmad_mul(ctx, t[p->loss_v[l]], w, &m));
        CHECK_OK(ctx, clmad_sum(ctx, m, 0, NULL, 0, &part));
        if (loss) {
            clmad_tensor *sum = NULL;
            CHECK_OK(ctx, clmad_add(ctx, loss, part, &sum));
            clmad_tensor_release(loss);
            clmad_tensor_release(part);
            loss = sum;
        } else {
            loss = part;
        }
        clmad_tensor_release(w);
        clmad_tensor_release(m);
    }
    cr_assert_not_null(loss, "program %d has no loss: %s", index, desc);

    /* Forward values against the host. */
    double *vals[MAXV];
    double want_loss = host_run(p, vals);
    for (int i = 0; i < p->nv; i++) {
        if (p->v[i].leaf)
            continue;
        size_t n = numel(&p->v[i].s);
        double *got = bs_read(ctx, t[i], CLMAD_F64, p->v[i].s.ndim, p->v[i].s.d);
        for (size_t e = 0; e < n; e++)
            cr_assert(bs_close(got[e], vals[i][e], 1e-12), "program %d: v%d[%zu] = %.17g, host %.17g\n%s", index,
                      i, e, got[e], vals[i][e], desc);
        free(got);
    }
    host_free(p, vals);
    double got_loss;
    CHECK_OK(ctx, clmad_tensor_read(loss, &got_loss, sizeof got_loss));
    cr_assert(bs_close(got_loss, want_loss, 1e-12), "program %d: loss %.17g, host %.17g\n%s", index, got_loss,
              want_loss, desc);

    /* Which values require a gradient: the marked leaves and whatever is
     * computed from one. A loss computed from none has no tape behind it. */
    int rg[MAXV], loss_rg = 0;
    for (int i = 0; i < p->nv; i++)
        rg[i] = p->v[i].leaf && p->v[i].requires_grad;
    for (int q = 0; q < p->nops; q++) {
        const op *o = &p->ops[q];
        int any = 0;
        for (int j = 0; j < o->n_in; j++)
            any |= rg[o->in[j]];
        for (int r = 0; r < o->n_out; r++)
            if (o->out[r] >= 0)
                rg[o->out[r]] = any;
    }
    for (int i = 0; i < p->nv; i++)
        cr_assert_eq(clmad_tensor_requires_grad(t[i]), rg[i], "program %d: v%d requires_grad %d, expected %d\n%s",
                     index, i, clmad_tensor_requires_grad(t[i]), rg[i], desc);
    for (int l = 0; l < p->n_loss; l++)
        loss_rg |= rg[p->loss_v[l]];

    int runs = p->twice ? 2 : 1;
    if (!loss_rg) {
        clmad_status bst = clmad_backward(ctx, loss, NULL);
        cr_assert_eq(bst, CLMAD_ERR_STATE, "program %d: backward without a tape: %s\n%s", index,
                     clmad_status_string(bst), desc);
        runs = 0;
    }
    for (int r = 0; r < runs; r++)
        CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    if (p->twice) {
        CHECK_OK(ctx, clmad_set_retain_tape(ctx, 0));
        clmad_tape_clear(ctx);
    }

    /* Gradients against central differences of the host program. */
    for (int i = 0; i < p->nv; i++) {
        if (!p->v[i].leaf)
            continue;
        clmad_tensor *g = NULL;
        CHECK_OK(ctx, clmad_tensor_grad(t[i], &g));
        if (!p->v[i].requires_grad) {
            cr_assert_null(g, "program %d: v%d has a gradient without requires_grad\n%s", index, i, desc);
            continue;
        }
        size_t n = numel(&p->v[i].s);
        double *got = NULL;
        if (g) {
            got = bs_read(ctx, g, CLMAD_F64, p->v[i].s.ndim, p->v[i].s.d);
            clmad_tensor_release(g);
        }
        for (size_t e = 0; e < n; e++) {
            double *x = &p->v[i].data[e], x0 = *x, h = 1e-5 * (fabs(x0) > 1 ? fabs(x0) : 1);
            *x = x0 + h;
            double lp = host_loss(p);
            *x = x0 - h;
            double lm = host_loss(p);
            *x = x0;
            double fd = runs * (lp - lm) / (2 * h), gv = got ? got[e] : 0;
            if (!loss_rg) /* no backward ran: no gradient at all */
                fd = 0;
            cr_assert(bs_close(gv, fd, 1e-6), "program %d: d loss / d v%d[%zu] = %.17g, differences %.17g\n%s",
                      index, i, e, gv, fd, desc);
        }
        free(got);
    }

    clmad_tensor_release(loss);
    for (int i = 0; i < p->nv; i++)
        clmad_tensor_release(t[i]);
    clmad_tape_clear(ctx);
    clmad_stats st1;
    CHECK_OK(ctx, clmad_context_stats(ctx, &st1));
    cr_assert_eq(st1.live_tensor_bytes, st0.live_tensor_bytes, "program %d: %llu live bytes, %llu before\n%s",
                 index, (unsigned long long)st1.live_tensor_bytes, (unsigned long long)st0.live_tensor_bytes,
                 desc);
    cr_assert_eq(st1.tape_nodes, 0);
    free_program(p);
    free(p);
}

static void run_batch(uint64_t seed, int count)
{
    const char *small = getenv("CLMAD_TEST_SMALL");
    if (small && *small && strcmp(small, "0") != 0)
        count = count < 6 ? count : 6;
    if (!test_device_fp64())
        cr_skip_test("the test device has no fp64, which these programs compute in");
    fixture f;
    f.ctx = test_context();
    for (int k = 0; k < 4; k++)
        CHECK_OK(f.ctx, clmad_kernel_create(f.ctx, K_SRC[k], K_NAME[k], K_IN[k], K_OUT[k], &f.k[k]));
    /* Each structure runs DRAWS times with other sizes and values: every
     * new kernel variant is a compile on POCL, and a structure's variants
     * depend mostly on which dimensions are 1 (and on activity and policy),
     * not on the sizes. */
    uint64_t rv = seed ^ 0x5555555555555555ull;
    for (int i = 0; i < count; i++) {
        uint64_t s0 = seed + (uint64_t)(i / DRAWS) * 0x632BE59BD9B4E019ull, rng = bs_next(&s0);
        run_program(&f, i, &rng, &rv);
    }
    clmad_stats stats;
    CHECK_OK(f.ctx, clmad_context_stats(f.ctx, &stats));
    cr_log_info("%d programs: %llu programs compiled, %llu from the disk cache, %llu memory hits", count,
                (unsigned long long)stats.programs_compiled, (unsigned long long)stats.programs_from_disk,
                (unsigned long long)stats.program_memory_hits);
    for (int k = 0; k < 4; k++)
        clmad_kernel_release(f.k[k]);
    clmad_context_release(f.ctx);
}

/* Two batches: Criterion runs them in parallel (--jobs 2). */
Test(tape_random, batch_a, .timeout = 600) { run_batch(0x7A9E5EEDull, 60); }
Test(tape_random, batch_b, .timeout = 600) { run_batch(0xC0FFEE0123ull, 60); }
