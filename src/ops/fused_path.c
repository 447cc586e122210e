/* SPDX-License-Identifier: Apache-2.0 */
/* Whether a fused loss's gradients are the only ones that reach its chain
 * when the loss is not the root of backward (ops/fused_loss.c). */
#include "ops/fused_loss.h"
#include "tape/tape.h"

/* Every tensor node reads that either is the chain's (below: the output of
 * the next node down) or needs a gradient (a target of the loss kernel) is
 * read by node alone on the tape. */
static int read_once(clmad_context *ctx, const clmad_node *node, const clmad_node *below)
{
    for (int j = 0; j < node->n_inputs; j++) {
        const clmad_tensor *t = node->inputs[j];
        const int chain = below && t->node == below;
        if ((chain || clmad__needs_grad(ctx, t)) && t->tape_refs != 1)
            return 0;
    }
    return 1;
}

int clmad__fused_sole_path(clmad_context *ctx, const clmad_node *loss, clmad_node *const *stages, int n_stages,
                           const clmad_node *head)
{
    const clmad_node *above = loss;
    for (int i = n_stages - 1; i >= 0; above = stages[i--])
        if (!read_once(ctx, above, stages[i]))
            return 0;
    return read_once(ctx, above, head) && read_once(ctx, head, NULL);
}
