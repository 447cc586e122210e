/* SPDX-License-Identifier: Apache-2.0 */
/* Recording on the tape: which tensors need gradients, nodes and their data. */
#include "tape/state.h"

#include <stdlib.h>
#include <string.h>

int clmad__needs_grad(const clmad_context *ctx, const clmad_tensor *t)
{
    if (!t)
        return 0;
    return t->node ? clmad__node_current(ctx, t) : t->requires_grad;
}

int clmad__tape_holds(const clmad_context *ctx, const clmad_tensor *t)
{
    return t->tape_refs > 0 || clmad__node_current(ctx, t);
}

clmad_status clmad__check_not_on_tape(clmad_context *ctx, const clmad_tensor *t, const char *call,
                                      const char *what)
{
    if (!clmad__tape_holds(ctx, t))
        return CLMAD_OK;
    return clmad__fail(ctx, CLMAD_ERR_STATE,
                       "%s: the tape still holds %s (an input or the output of a recorded operation): "
                       "update it after clmad_backward, or clear the tape (clmad_tape_clear)",
                       call, what);
}

int clmad__should_record(const clmad_context *ctx, clmad_tensor *const *inputs, int n)
{
    if (!ctx->tape.grad_enabled)
        return 0;
    for (int j = 0; j < n; j++)
        if (clmad__needs_grad(ctx, inputs[j]))
            return 1;
    return 0;
}

void clmad__discard_data(const clmad_op *op, void *data)
{
    clmad_node owner = {.op = op, .data = data};
    if (data && op->free_data)
        op->free_data(&owner);
}

void clmad__free_node_data(clmad_node *node)
{
    free(node->data);
    node->data = NULL;
}

void clmad__node_keeps(clmad_context *ctx, clmad_node *node, uint64_t bytes)
{
    node->saved_bytes += bytes;
    ctx->stats.tape_saved_bytes += bytes;
}

void clmad__node_drop_saved(clmad_context *ctx, clmad_node *node)
{
    /* Once: backward drops it early, freeing the node drops it again. */
    if (node->data && node->op->free_data)
        node->op->free_data(node);
    node->data = NULL;
    ctx->stats.tape_saved_bytes -= node->saved_bytes;
    node->saved_bytes = 0;
    for (int j = 0; j < node->n_inputs; j++) {
        clmad_tensor *x = node->inputs[j];
        if (!x)
            continue;
        x->tape_refs--;
        node->inputs[j] = NULL;
        clmad__tensor_unref(x);
    }
}

static void node_free(clmad_context *ctx, clmad_node *node)
{
    clmad__node_drop_saved(ctx, node);
    for (int o = 0; o < node->n_outputs; o++) {
        clmad__tensor_unref(node->out_adj[o]);
        clmad__tensor_unref(node->out_adj_scale[o]);
    }
    free(node); /* with its arrays */
}

/* Reserves n objects of size `size` and alignment `align` at the end of a
 * block of *end bytes; returns their offset. */
static size_t carve(size_t *end, size_t n, size_t size, size_t align)
{
    size_t at = (*end + align - 1) / align * align;
    *end = at + n * size;
    return at;
}

/* A zeroed node with its arrays for n_inputs inputs and n_outputs outputs. */
static clmad_node *node_alloc(int n_inputs, int n_outputs)
{
    size_t ni = (size_t)n_inputs, no = (size_t)n_outputs, end = sizeof(clmad_node);
    size_t inputs = carve(&end, ni, sizeof(clmad_tensor *), _Alignof(clmad_tensor *));
    size_t adj = carve(&end, no, sizeof(clmad_tensor *), _Alignof(clmad_tensor *));
    size_t scale = carve(&end, no, sizeof(clmad_tensor *), _Alignof(clmad_tensor *));
    size_t shape = carve(&end, no, sizeof(size_t[CLMAD_MAX_DIMS]), _Alignof(size_t));
    size_t ndim = carve(&end, no, sizeof(int), _Alignof(int));
    size_t scalar = carve(&end, no, 1, 1);
    size_t lazy = carve(&end, no, 1, 1);
    char *block = calloc(1, end);
    if (!block)
        return NULL;
    clmad_node *node = (clmad_node *)block;
    node->inputs = (clmad_tensor **)(block + inputs);
    node->out_adj = (clmad_tensor **)(block + adj);
    node->out_adj_scale = (clmad_tensor **)(block + scale);
    node->out_shape = (size_t(*)[CLMAD_MAX_DIMS])(block + shape);
    node->out_ndim = (int *)(block + ndim);
    node->out_adj_scalar = (unsigned char *)(block + scalar);
    node->out_adj_lazy = (unsigned char *)(block + lazy);
    return node;
}

/* Room for one more node: the tape is made on the first record, and never
 * again once the context is released (its tensors' old generations must
 * not become current again). */
static clmad_status tape_reserve(clmad_context *ctx, const char *name)
{
    struct clmad_tape *tape = ctx->tape.state;
    if (tape && tape->count < tape->cap)
        return CLMAD_OK;
    if (!tape) {
        clmad_status open = clmad__check_open(ctx, name);
        if (open != CLMAD_OK)
            return open;
    }
    size_t cap = tape ? tape->cap * 2 : 64;
    struct clmad_tape *grown = realloc(tape, sizeof *tape + cap * sizeof tape->nodes[0]);
    if (!grown)
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory growing the tape");
    if (!tape)
        *grown = (struct clmad_tape){0};
    grown->cap = cap;
    ctx->tape.state = grown;
    return CLMAD_OK;
}

clmad_status clmad__record_op(clmad_context *ctx, const clmad_op *op, clmad_tensor *const *inputs, int n_inputs,
                              clmad_tensor **outputs, int n_outputs, void *data, clmad_node **out)
{
    clmad_status st = tape_reserve(ctx, op->name);
    clmad_node *node = st == CLMAD_OK ? node_alloc(n_inputs, n_outputs) : NULL;
    if (st == CLMAD_OK && !node)
        st = clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory recording %s", op->name);
    if (st != CLMAD_OK) {
        clmad__discard_data(op, data);
        return st;
    }
    struct clmad_tape *tape = ctx->tape.state;
    node->op = op;
    node->name = op->name;
    node->data = data;
    node->n_inputs = n_inputs;
    for (int j = 0; j < n_inputs; j++) {
        node->inputs[j] = clmad_tensor_retain(inputs[j]);
        if (inputs[j])
            inputs[j]->tape_refs++;
    }
    node->n_outputs = n_outputs;
    node->dtype = outputs[0]->dtype;
    for (int o = 0; o < n_outputs; o++) {
        clmad_tensor *t = outputs[o];
        node->out_ndim[o] = t->ndim;
        memcpy(node->out_shape[o], t->shape, sizeof t->shape);
        t->requires_grad = 1;
        t->node = node;
        t->node_gen = tape->generation;
        t->out_index = o;
    }
    tape->nodes[tape->count++] = node;
    ctx->stats.tape_nodes = tape->count;
    if (out)
        *out = node;
    return CLMAD_OK;
}

clmad_node *const *clmad__tape_nodes(const clmad_context *ctx, size_t *count)
{
    const struct clmad_tape *tape = ctx->tape.state;
    *count = tape ? tape->count : 0;
    return tape ? tape->nodes : NULL;
}

int clmad__output_on_tape(const clmad_context *ctx, const clmad_tensor *t)
{
    return clmad__node_current(ctx, t);
}

void clmad__tape_free_nodes(clmad_context *ctx)
{
    struct clmad_tape *tape = ctx->tape.state;
    if (!tape)
        return;
    for (size_t i = tape->count; i-- > 0;)
        node_free(ctx, tape->nodes[i]);
    tape->count = 0;
    tape->generation++;
    ctx->stats.tape_nodes = 0;
}

void clmad__tape_drop(clmad_context *ctx)
{
    clmad__tape_free_nodes(ctx);
    free(ctx->tape.state);
    ctx->tape.state = NULL;
}
