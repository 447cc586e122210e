/* SPDX-License-Identifier: Apache-2.0 */
/* Operations along one axis: clmad_max, clmad_logsumexp, clmad_softmax and
 * clmad_log_softmax (kernels in cl/axis.cl). Each records one node that keeps
 * its output, from which backward computes the adjoint in one kernel. */
#include "ops/ops.h"
#include "ops/region.h"
#include "tape/tape.h"
#include "runtime/context_guard.h"

#include <math.h>
#include <stdlib.h>

typedef enum axis_kind { AXIS_MAX, AXIS_LOGSUMEXP, AXIS_SOFTMAX, AXIS_LOG_SOFTMAX } axis_kind;

typedef struct axis_data {
    axis_kind kind;
    int axis;                /* of x, in [0, x's rank) */
    size_t outer, n, inner;  /* x seen as outer x n x inner, the axis in the middle */
    clmad_tensor *y;         /* the output (a reference): backward reads it */
} axis_data;

static void axis_free(clmad_node *node)
{
    axis_data *d = node->data;
    clmad__tensor_unref(d->y);
    free(d);
    node->data = NULL;
}

/* Work-items per row in the *_groups kernels (cl/axis.cl's AXIS_GROUP). */
enum { AXIS_GROUP = 64 };

/* Rows along the last axis, long enough to share out, go one work-group
 * each on GPUs (cl/axis.cl: one work-item per row reads addresses n apart,
 * which GPUs do not coalesce); CPUs stream one row per work-item. Tests
 * reach the GPU form through clmad__sum_as_gpus. */
static int rows_by_groups(const clmad_context *ctx, size_t n, size_t inner)
{
    return inner == 1 && n >= AXIS_GROUP && ctx->info.max_work_group_size >= AXIS_GROUP &&
           (ctx->info.type != CLMAD_DEVICE_CPU || ctx->sums_interleaved);
}

clmad_status clmad__axis_pullback(clmad_context *ctx, const clmad_node *node, clmad_tensor *adj,
                                  clmad_tensor **g)
{
    const axis_data *d = node->data;
    clmad_tensor *x = node->inputs[0];
    clmad_status st = clmad_tensor_create(ctx, x->dtype, x->ndim, x->shape, NULL, g);
    if (st != CLMAD_OK || x->numel == 0)
        return st;
    cl_ulong rows = d->outer * d->inner, n = d->n, inner = d->inner;
    cl_int take_log = d->kind == AXIS_LOG_SOFTMAX;
    uint64_t bytes = (uint64_t)(3 * x->numel + 2 * rows) * clmad_dtype_size(x->dtype);
    const size_t m = sizeof(cl_mem), u = sizeof(cl_ulong);
    const int groups = rows_by_groups(ctx, d->n, d->inner);
    if (groups && d->kind == AXIS_LOGSUMEXP) {
        const size_t sizes[] = {m, m, m, u};
        const void *values[] = {&(*g)->mem, &x->mem, &adj->mem, &n};
        st = clmad__launch_cached_groups(ctx, x->dtype, CLMAD_OPS_AXIS_LOGSUMEXP_GRAD_GROUPS, 4, sizes, values, rows,
                                             AXIS_GROUP, bytes);
    } else if (groups && d->kind != AXIS_MAX) {
        const size_t sizes[] = {m, m, m, u, sizeof take_log};
        const void *values[] = {&(*g)->mem, &d->y->mem, &adj->mem, &n, &take_log};
        st = clmad__launch_cached_groups(ctx, x->dtype, CLMAD_OPS_AXIS_SOFTMAX_GRAD_GROUPS, 5, sizes, values, rows,
                                             AXIS_GROUP, bytes);
    } else if (d->kind == AXIS_MAX) {
        const size_t sizes[] = {m, m, m, m, u, u, u};
        const void *values[] = {&(*g)->mem, &x->mem, &d->y->mem, &adj->mem, &rows, &n, &inner};
        st = clmad__launch_cached(ctx, x->dtype, CLMAD_OPS_AXIS_MAX_GRAD, 7, sizes, values, rows, bytes);
    } else if (d->kind == AXIS_LOGSUMEXP) {
        const size_t sizes[] = {m, m, m, u, u, u};
        const void *values[] = {&(*g)->mem, &x->mem, &adj->mem, &rows, &n, &inner};
        st = clmad__launch_cached(ctx, x->dtype, CLMAD_OPS_AXIS_LOGSUMEXP_GRAD, 6, sizes, values, rows, bytes);
    } else {
        const size_t sizes[] = {m, m, m, u, u, u, sizeof take_log};
        const void *values[] = {&(*g)->mem, &d->y->mem, &adj->mem, &rows, &n, &inner, &take_log};
        st = clmad__launch_cached(ctx, x->dtype, CLMAD_OPS_AXIS_SOFTMAX_GRAD, 7, sizes, values, rows, bytes);
    }
    if (st != CLMAD_OK) {
        clmad_tensor_release(*g);
        *g = NULL;
    }
    return st;
}

static clmad_status axis_backward(clmad_context *ctx, clmad_node *node)
{
    clmad_tensor *g;
    clmad_status st = clmad__axis_pullback(ctx, node, node->out_adj[0], &g);
    return st == CLMAD_OK ? clmad__accumulate_input(ctx, node, 0, g) : st;
}

/* One backward for the four; they differ in name and in what fusion sees. */
#define AXIS_OP(name_, kind_, reduction_)                                                                      \
    {.name = name_, .backward = axis_backward, .free_data = axis_free, .kind = kind_, .reduction = reduction_}
const clmad_op clmad__op_max = AXIS_OP("clmad_max", CLMAD_OP_REDUCTION, CLMAD_REDUCTION_MAX);
const clmad_op clmad__op_logsumexp = AXIS_OP("clmad_logsumexp", CLMAD_OP_REDUCTION, CLMAD_REDUCTION_LOGSUMEXP);
const clmad_op clmad__op_softmax = AXIS_OP("clmad_softmax", CLMAD_OP_OPAQUE, CLMAD_REDUCTION_NONE);
const clmad_op clmad__op_log_softmax = AXIS_OP("clmad_log_softmax", CLMAD_OP_OPAQUE, CLMAD_REDUCTION_NONE);

/* By axis_kind. */
static const clmad_op *const AXIS_OPS[] = {&clmad__op_max, &clmad__op_logsumexp, &clmad__op_softmax,
                                           &clmad__op_log_softmax};

clmad_axis_op clmad__axis_node(const clmad_node *node, int *axis, clmad_tensor **y)
{
    const clmad_axis_op op = node->op == &clmad__op_max           ? CLMAD_AXIS_MAX
                             : node->op == &clmad__op_logsumexp   ? CLMAD_AXIS_LOGSUMEXP
                             : node->op == &clmad__op_softmax     ? CLMAD_AXIS_SOFTMAX
                             : node->op == &clmad__op_log_softmax ? CLMAD_AXIS_LOG_SOFTMAX
                                                                  : CLMAD_AXIS_NONE;
    const axis_data *d = node->data;
    if (op == CLMAD_AXIS_NONE || !d)
        return CLMAD_AXIS_NONE;
    *axis = d->axis;
    *y = d->y;
    return op;
}

/* The forward of kind into *y (new), x seen as outer x n x inner. */
static clmad_status axis_forward(clmad_context *ctx, axis_kind kind, clmad_tensor *x, size_t outer,
                                 size_t n, size_t inner, int ndim, const size_t *shape, clmad_tensor **y)
{
    clmad_status st = clmad_tensor_create(ctx, x->dtype, ndim, shape, NULL, y);
    if (st != CLMAD_OK || (*y)->numel == 0)
        return st;
    if (x->numel == 0) /* logsumexp over an empty axis: log(0) */
        st = clmad__fill(ctx, (*y)->mem, x->dtype, (*y)->numel, -INFINITY);
    else {
        cl_ulong rows = outer * inner, nn = n, in = inner;
        cl_int mode = kind == AXIS_LOGSUMEXP || kind == AXIS_LOG_SOFTMAX;
        const size_t sizes[] = {sizeof(cl_mem), sizeof(cl_mem), sizeof rows, sizeof nn, sizeof in,
                                sizeof mode};
        const void *values[] = {&(*y)->mem, &x->mem, &rows, &nn, &in, &mode};
        int reduce = kind == AXIS_MAX || kind == AXIS_LOGSUMEXP;
        uint64_t bytes = (uint64_t)((reduce ? 2 : 3) * x->numel + rows) * clmad_dtype_size(x->dtype);
        if (rows_by_groups(ctx, n, inner)) {
            const size_t gsizes[] = {sizeof(cl_mem), sizeof(cl_mem), sizeof nn, sizeof mode};
            const void *gvalues[] = {&(*y)->mem, &x->mem, &nn, &mode};
            st = clmad__launch_cached_groups(ctx, x->dtype,
                                             reduce ? CLMAD_OPS_AXIS_REDUCE_GROUPS : CLMAD_OPS_AXIS_SOFTMAX_GROUPS, 4,
                                             gsizes, gvalues, rows, AXIS_GROUP, bytes);
        } else
            st = clmad__launch_cached(ctx, x->dtype, reduce ? CLMAD_OPS_AXIS_REDUCE : CLMAD_OPS_AXIS_SOFTMAX, 6,
                                      sizes, values, rows, bytes);
    }
    if (st != CLMAD_OK) {
        clmad_tensor_release(*y);
        *y = NULL;
    }
    return st;
}

static clmad_status axis_op(clmad_context *ctx, axis_kind kind, clmad_tensor *x, int axis, int keepdims,
                            clmad_tensor **out);

static clmad_status axis_f32(clmad_context *ctx, clmad_tensor *const *in, const void *args, clmad_tensor **out)
{
    const int *a = args; /* kind, axis, keepdims */
    return axis_op(ctx, (axis_kind)a[0], in[0], a[1], a[2], out);
}

static clmad_status axis_op(clmad_context *ctx, axis_kind kind, clmad_tensor *x, int axis, int keepdims,
                            clmad_tensor **out)
{
    const clmad_op *op = AXIS_OPS[kind];
    const char *name = op->name;
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", name);
    if (!x || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s is NULL", name, !x ? "x" : "out");
    clmad_status st = clmad__check_same_context(ctx, x, name, "x");
    if (st == CLMAD_OK && clmad__widens(x, NULL)) {
        const int args[3] = {(int)kind, axis, keepdims};
        return clmad__through_f32(ctx, 1, &x, axis_f32, args, 1, out);
    }
    if (st == CLMAD_OK)
        st = clmad__require_float(ctx, x, name, "x");
    if (st != CLMAD_OK)
        return st;
    int a = axis < 0 ? axis + x->ndim : axis;
    if (a < 0 || a >= x->ndim)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: axis %d is out of range for a rank-%d tensor",
                           name, axis, x->ndim);
    if (kind == AXIS_MAX && x->shape[a] == 0)
        return clmad__fail(ctx, CLMAD_ERR_SHAPE, "%s: axis %d is empty: its max has no value", name, axis);
    size_t outer = 1, inner = 1, shape[CLMAD_MAX_DIMS];
    int ndim = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (i < a)
            outer *= x->shape[i];
        else if (i > a)
            inner *= x->shape[i];
        int reduces = kind == AXIS_MAX || kind == AXIS_LOGSUMEXP;
        if (i != a || !reduces)
            shape[ndim++] = x->shape[i];
        else if (keepdims)
            shape[ndim++] = 1;
    }
    clmad_tensor *y;
    st = axis_forward(ctx, kind, x, outer, x->shape[a], inner, ndim, shape, &y);
    if (st != CLMAD_OK)
        return st;
    if (clmad__should_record(ctx, &x, 1)) {
        axis_data *d = malloc(sizeof *d);
        clmad_node *node;
        if (d)
            *d = (axis_data){kind, a, outer, x->shape[a], inner, clmad_tensor_retain(y)};
        st = d ? clmad__record_op(ctx, op, &x, 1, &y, 1, d, &node)
               : clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory in %s", name);
        if (st != CLMAD_OK) {
            clmad_tensor_release(y);
            return st;
        }
        clmad__node_keeps(ctx, node, y->capacity);
    }
    *out = y;
    return CLMAD_OK;
}

clmad_status clmad_max(clmad_context *ctx, clmad_tensor *x, int axis, int keepdims, clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_max");
    READS_ONLY(ctx, x, NULL);
    return axis_op(ctx, AXIS_MAX, x, axis, keepdims, out);
}

clmad_status clmad_logsumexp(clmad_context *ctx, clmad_tensor *x, int axis, int keepdims, clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_logsumexp");
    READS_ONLY(ctx, x, NULL);
    return axis_op(ctx, AXIS_LOGSUMEXP, x, axis, keepdims, out);
}

clmad_status clmad_softmax(clmad_context *ctx, clmad_tensor *x, int axis, clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_softmax");
    READS_ONLY(ctx, x, NULL);
    return axis_op(ctx, AXIS_SOFTMAX, x, axis, 0, out);
}

clmad_status clmad_log_softmax(clmad_context *ctx, clmad_tensor *x, int axis, clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_log_softmax");
    READS_ONLY(ctx, x, NULL);
    return axis_op(ctx, AXIS_LOG_SOFTMAX, x, axis, 0, out);
}
