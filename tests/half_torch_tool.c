/* SPDX-License-Identifier: Apache-2.0 */
/* The C side of the 16-bit test against PyTorch (tests/half_torch.py):
 *   half_torch_tool IN OUT
 * IN, written by PyTorch through safetensors.torch, holds f32 values x and
 * PyTorch's roundings of them (x_f16 = x.half(), x_bf16 = x.bfloat16()),
 * every 16-bit pattern of both types (pat_f16, pat_bf16) and PyTorch's
 * widenings of those (pat_f16_wide, pat_bf16_wide, f32). The tool checks
 * clmad_cast's roundings and widenings against them, bit for bit (a NaN
 * only as a NaN: its payload is the runtime's), and writes its own
 * roundings of x to OUT for PyTorch to compare the same way. */
#include <clmad.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(clmad_context *ctx, const char *what)
{
    fprintf(stderr, "half_torch_tool: %s: %s\n", what, clmad_last_error(ctx));
    return 1;
}

/* Reads name from f into *t and its bits into a new buffer *host. */
static int read_entry(clmad_context *ctx, clmad_safetensors *f, const char *name, clmad_tensor **t, void **host)
{
    if (clmad_safetensors_read(ctx, f, name, t) != CLMAD_OK)
        return fail(ctx, name);
    size_t bytes = clmad_tensor_numel(*t) * clmad_dtype_size(clmad_tensor_dtype(*t));
    *host = malloc(bytes ? bytes : 1);
    if (!*host || clmad_tensor_read(*t, *host, bytes) != CLMAD_OK)
        return fail(ctx, name);
    return 0;
}

static float widen(clmad_dtype dt, uint16_t h)
{
    return dt == CLMAD_F16 ? clmad_f16_to_float(h) : clmad_bf16_to_float(h);
}

/* clmad's cast of src to dt against PyTorch's want (dt's bits); *mine
 * keeps the cast for OUT. */
static int same_rounding(clmad_context *ctx, clmad_tensor *src, clmad_dtype dt, const uint16_t *want,
                         clmad_tensor **mine)
{
    size_t n = clmad_tensor_numel(src), bad = 0;
    uint16_t *got = malloc(2 * n + 1);
    if (!got || clmad_cast(ctx, src, dt, mine) != CLMAD_OK || clmad_tensor_read(*mine, got, 2 * n) != CLMAD_OK)
        return free(got), fail(ctx, "clmad_cast");
    for (size_t i = 0; i < n; i++) {
        int nans = isnan(widen(dt, got[i])) && isnan(widen(dt, want[i]));
        if (got[i] != want[i] && !nans && bad++ < 5)
            fprintf(stderr, "%s rounding of element %zu: clmad %04x, PyTorch %04x\n", clmad_dtype_name(dt), i,
                    got[i], want[i]);
    }
    free(got);
    return bad != 0;
}

/* clmad's widening of every pattern (pats, of dt) against PyTorch's. */
static int same_widening(clmad_context *ctx, clmad_tensor *pats, clmad_dtype dt, const float *want)
{
    size_t n = clmad_tensor_numel(pats), bad = 0;
    clmad_tensor *wide = NULL;
    float *got = malloc(4 * n + 1);
    if (!got || clmad_cast(ctx, pats, CLMAD_F32, &wide) != CLMAD_OK || clmad_tensor_read(wide, got, 4 * n))
        return free(got), clmad_tensor_release(wide), fail(ctx, "clmad_cast");
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], 4) != 0 && !(isnan(got[i]) && isnan(want[i])) && bad++ < 5)
            fprintf(stderr, "%s widening of pattern %zu: clmad %a, PyTorch %a\n", clmad_dtype_name(dt), i,
                    (double)got[i], (double)want[i]);
    free(got);
    clmad_tensor_release(wide);
    return bad != 0 || n != 65536;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: half_torch_tool IN OUT\n");
        return 2;
    }
    clmad_context *ctx = NULL;
    clmad_safetensors *f = NULL;
    if (clmad_context_create(NULL, &ctx) != CLMAD_OK)
        return fail(NULL, "clmad_context_create");
    if (clmad_safetensors_open(argv[1], &f) != CLMAD_OK)
        return fail(NULL, argv[1]);
    static const char *const names[7] = {"x", "x_f16", "x_bf16", "pat_f16", "pat_bf16", "pat_f16_wide",
                                         "pat_bf16_wide"};
    clmad_tensor *t[7] = {0}, *mine[2] = {0};
    void *host[7] = {0};
    int bad = 0;
    for (int k = 0; k < 7 && !bad; k++)
        bad = read_entry(ctx, f, names[k], &t[k], &host[k]);
    if (!bad) {
        bad |= same_rounding(ctx, t[0], CLMAD_F16, host[1], &mine[0]);
        bad |= same_rounding(ctx, t[0], CLMAD_BF16, host[2], &mine[1]);
        bad |= same_widening(ctx, t[3], CLMAD_F16, host[5]);
        bad |= same_widening(ctx, t[4], CLMAD_BF16, host[6]);
    }
    const char *out_names[2] = {"x_f16", "x_bf16"};
    if (!bad && clmad_save(argv[2], out_names, mine, 2, NULL) != CLMAD_OK)
        bad = fail(ctx, "clmad_save");
    for (int k = 0; k < 7; k++) {
        clmad_tensor_release(t[k]);
        free(host[k]);
    }
    clmad_tensor_release(mine[0]);
    clmad_tensor_release(mine[1]);
    clmad_safetensors_close(f);
    clmad_context_release(ctx);
    if (!bad)
        printf("half_torch_tool %s: the roundings and widenings are PyTorch's\n", argv[1]);
    return bad;
}
