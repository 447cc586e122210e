/* SPDX-License-Identifier: Apache-2.0 */
/* The call graph of the source's functions, and its cycles: OpenCL C does
 * not allow recursion, and POCL's compiler accepted a recursive kernel at
 * creation and then killed the process compiling its derivatives (issue
 * 24). The front end refuses it at the call that closes the cycle. */
#include "lower/lower.h"

#include <stdio.h>

void clmad__lower_record_call(lower_parser *p, const lower_function *f, int tok)
{
    if (p->fn_current < 0)
        return;
    p->calls = clmad__lower_grow(p, p->calls, &p->cap_calls, p->n_calls + 1, sizeof *p->calls);
    p->calls[p->n_calls++] = (lower_call){p->fn_current, (int)(f - p->fns), tok};
}

typedef struct {
    int fn, next, taken; /* the function, its next call to follow, the call followed */
} frame;

static const char *fn_name(const lower_parser *p, int k, int *len)
{
    *len = (int)p->fns[k].name_len;
    return p->lx.src + p->fns[k].name;
}

/* The cycle stack[at..depth): stack[at] calls itself through the others. */
static void refuse(lower_parser *p, const lower_call *calls, const frame *stack, int at, int depth)
{
    int len;
    const char *name = fn_name(p, stack[at].fn, &len);
    int tok = calls[stack[at].taken].tok;
    if (at == depth - 1)
        clmad__lower_fail(p, LOWER_TYPE_ERROR, tok,
                          "function %.*s calls itself (recursion is not allowed in OpenCL C)", len, name);
    char through[256];
    size_t used = 0;
    through[0] = 0;
    for (int i = at + 1; i < depth && used < sizeof through; i++) {
        int n;
        const char *s = fn_name(p, stack[i].fn, &n);
        used += (size_t)snprintf(through + used, sizeof through - used, "%s%.*s", i > at + 1 ? ", " : "", n, s);
    }
    clmad__lower_fail(p, LOWER_TYPE_ERROR, tok,
                      "function %.*s calls itself through %s (recursion is not allowed in OpenCL C)", len, name,
                      through);
}

/* A depth-first walk with a stack of its own (a chain of calls may be as
 * long as the source has functions); a call to a function on the stack
 * closes a cycle. Functions and calls are taken in source order, so the
 * cycle reported is the first one written. */
void clmad__lower_check_recursion(lower_parser *p)
{
    int n = p->n_fns;
    if (!p->n_calls)
        return;
    /* The calls grouped by caller, in source order within each. */
    int *first = clmad__lower_alloc(p, (size_t)(n + 1) * sizeof *first);
    lower_call *calls = clmad__lower_alloc(p, (size_t)p->n_calls * sizeof *calls);
    for (int k = 0; k <= n; k++)
        first[k] = 0;
    for (int c = 0; c < p->n_calls; c++)
        first[p->calls[c].caller + 1]++;
    for (int k = 0; k < n; k++)
        first[k + 1] += first[k];
    int *fill = clmad__lower_alloc(p, (size_t)n * sizeof *fill);
    for (int k = 0; k < n; k++)
        fill[k] = first[k];
    for (int c = 0; c < p->n_calls; c++)
        calls[fill[p->calls[c].caller]++] = p->calls[c];

    enum { UNSEEN, ON_STACK, DONE };
    unsigned char *state = clmad__lower_alloc(p, (size_t)n);
    frame *stack = clmad__lower_alloc(p, (size_t)n * sizeof *stack);
    for (int k = 0; k < n; k++)
        state[k] = UNSEEN;
    for (int root = 0; root < n; root++) {
        if (state[root] != UNSEEN)
            continue;
        int depth = 0;
        stack[depth++] = (frame){root, first[root], -1};
        state[root] = ON_STACK;
        while (depth) {
            frame *top = &stack[depth - 1];
            if (top->next == first[top->fn + 1]) {
                state[top->fn] = DONE;
                depth--;
                continue;
            }
            top->taken = top->next++;
            int callee = calls[top->taken].callee;
            if (state[callee] == ON_STACK) {
                int at = depth - 1;
                while (stack[at].fn != callee)
                    at--;
                refuse(p, calls, stack, at, depth);
            }
            if (state[callee] == UNSEEN) {
                stack[depth++] = (frame){callee, first[callee], -1};
                state[callee] = ON_STACK;
            }
        }
    }
}
