/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_dot: the sum over every element of a * b, with no full-size product
 * in between, and its adjoint, which hands on s * b and s * a as lazy
 * adjoints (tape.h): a loss sum(y * w) costs one read of y and w forward
 * and nothing of its own backward. */
#include "ops/ops.h"
#include "ops/fused_loss.h"
#include "tape/tape.h"
#include "runtime/context_guard.h"

#include <stdlib.h>

/* A fused dot keeps which operand was the held broadcast. */
typedef struct dot_data {
    clmad_fused_loss *fused; /* first, for clmad__free_fused_data */
    int y_input;
} dot_data;

static clmad_status dot_backward(clmad_context *ctx, clmad_node *node)
{
    dot_data *d = node->data;
    int done = 0;
    clmad_status st0 = d ? clmad__fused_loss_backward(ctx, node, d->y_input, d->fused, &done) : CLMAD_OK;
    if (st0 == CLMAD_OK && !done)
        st0 = clmad__adjoint_ready(node, 0);
    if (st0 == CLMAD_OK && !done && node->out_adj_scale[0])
        st0 = clmad__materialize_adjoint(ctx, node, 0); /* one value times a scale: s is one value */
    if (st0 != CLMAD_OK || done)
        return st0;
    /* Each input's adjoint is the other: a fused operand may still be held
     * (its loss kernel's gradients were not used, or were used before). */
    st0 = clmad__tensors_ready(node->inputs, 2);
    if (st0 != CLMAD_OK)
        return st0;
    clmad_tensor *s = node->out_adj[0];
    clmad_status st = clmad__give_adjoint(ctx, node, 0, node->inputs[1], s);
    return st == CLMAD_OK ? clmad__give_adjoint(ctx, node, 1, node->inputs[0], s) : st;
}

const clmad_op clmad__op_dot = {
    .name = "clmad_dot", .backward = dot_backward, .free_data = clmad__free_fused_data, .kind = CLMAD_OP_REDUCTION,
    .reduction = CLMAD_REDUCTION_DOT, .reads_adjoint_late = 1};

/* The first pass of the sum of a * b into dst: the parts (or ranges) of
 * clmad__reduce's first pass over a contiguous product, so that the result
 * is bitwise that of clmad_sum(clmad_mul(a, b)). */
static clmad_status dot_pass(clmad_context *ctx, clmad_tensor *dst, clmad_tensor *a, clmad_tensor *b,
                             size_t parts, int ranges)
{
    if (ranges)
        return clmad__range_pass(ctx, CLMAD_OPS_DOT_RANGES, dst->mem, a->mem, b->mem, a->dtype, a->numel,
                                 parts);
    cl_kernel k;
    clmad_status st = clmad__cached_kernel(ctx, a->dtype, CLMAD_OPS_DOT_PARTS, &k);
    if (st != CLMAD_OK)
        return st;
    cl_ulong n = a->numel, np = parts;
    const size_t sizes[] = {sizeof(cl_mem), sizeof(cl_mem), sizeof(cl_mem), sizeof n, sizeof np};
    const void *values[] = {&dst->mem, &a->mem, &b->mem, &n, &np};
    st = clmad__set_kernel_args(ctx, k, 5, sizes, values);
    if (st != CLMAD_OK)
        return st;
    uint64_t bytes = (2 * (uint64_t)n + parts) * clmad_dtype_size(a->dtype);
    return clmad__enqueue_1d(ctx, k, parts, bytes);
}

static clmad_status dot_value(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, clmad_tensor **out)
{
    clmad_tensor *y;
    clmad_status st = clmad_tensor_create(ctx, a->dtype, 0, NULL, NULL, &y);
    if (st != CLMAD_OK)
        return st;
    if (a->numel == 0) {
        st = clmad__fill(ctx, y->mem, a->dtype, 1, 0.0);
    } else {
        size_t one = 1;
        int ranges = clmad__sum_by_ranges(ctx, 1, 1, &one);
        size_t parts = ranges ? clmad__range_parts(a->numel) : clmad__reduce_parts(1, a->numel);
        if (parts == 1) {
            st = dot_pass(ctx, y, a, b, 1, ranges);
        } else {
            clmad_tensor *partial, *sum;
            int reduce_all[1] = {1};
            st = clmad_tensor_create(ctx, a->dtype, 1, &parts, NULL, &partial);
            if (st == CLMAD_OK) {
                st = dot_pass(ctx, partial, a, b, parts, ranges);
                if (st == CLMAD_OK)
                    st = clmad__reduce(ctx, partial, reduce_all, 1.0, 0, NULL, &sum);
                clmad_tensor_release(partial);
                if (st == CLMAD_OK) {
                    clmad_tensor_release(y);
                    y = sum;
                }
            }
        }
    }
    if (st != CLMAD_OK) {
        clmad_tensor_release(y);
        return st;
    }
    *out = y;
    return CLMAD_OK;
}

/* The fused loss over whichever operand is a held broadcast (a * b is
 * b * a, bitwise), into *y and *data; else *y NULL and nothing held. */
static clmad_status try_fused(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, clmad_tensor **y,
                              dot_data **data)
{
    *data = NULL;
    int y_input = a->held ? 0 : 1;
    clmad_fused_loss *fused;
    clmad_status st = clmad__fused_loss(ctx, y_input ? b : a, y_input ? a : b, 1.0, 0, NULL, &fused, y);
    if (st != CLMAD_OK || !*y)
        return st;
    dot_data *d = malloc(sizeof *d);
    if (!d) {
        clmad__fused_loss_free(fused);
        clmad_tensor_release(*y);
        *y = NULL;
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory in clmad_dot");
    }
    d->y_input = y_input;
    d->fused = fused;
    *data = d;
    return CLMAD_OK;
}

static clmad_status dot_f32(clmad_context *ctx, clmad_tensor *const *in, const void *args, clmad_tensor **out)
{
    (void)args;
    return clmad_dot(ctx, in[0], in[1], out);
}

clmad_status clmad_dot(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_dot");
    clmad_status st = clmad__check_operands(ctx, "clmad_dot", a, b, out);
    if (st != CLMAD_OK)
        return st;
    if (clmad__widens(a, b)) {
        clmad_tensor *in[2] = {a, b};
        return clmad__through_f32(ctx, 2, in, dot_f32, NULL, 1, out);
    }
    if (a->dtype != b->dtype)
        return clmad__fail(ctx, CLMAD_ERR_DTYPE, "clmad_dot: a is %s, b is %s",
                           clmad_dtype_name(a->dtype), clmad_dtype_name(b->dtype));
    int same = a->ndim == b->ndim;
    for (int d = 0; same && d < a->ndim; d++)
        same = a->shape[d] == b->shape[d];
    if (!same)
        return clmad__fail(ctx, CLMAD_ERR_SHAPE,
                           "clmad_dot: a and b must have the same shape (ranks %d and %d; no broadcasting)",
                           a->ndim, b->ndim);
    st = clmad__require_float(ctx, a, "clmad_dot", "a");
    if (st == CLMAD_OK)
        st = clmad__check_dtype(ctx, a->dtype);
    if (st != CLMAD_OK)
        return st;
    clmad_tensor *y = NULL;
    dot_data *data = NULL;
    st = try_fused(ctx, a, b, &y, &data);
    if (st == CLMAD_OK && !y)
        st = dot_value(ctx, a, b, &y);
    if (st != CLMAD_OK)
        return st;
    clmad_tensor *in[2] = {a, b};
    st = clmad__finish_op(ctx, &clmad__op_dot, in, 2, y, data, st, out);
    if (st == CLMAD_OK && (*out)->node)
        (*out)->node->lazy_adjoints = 1; /* a seed handed on stays the seed (dot_backward) */
    return st;
}
