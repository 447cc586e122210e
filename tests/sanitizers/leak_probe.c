/* SPDX-License-Identifier: Apache-2.0 */
/* The checker's own test (make test-asan): a program that runs a kernel on
 * POCL, as every test does, then loses one malloc'ed block on purpose.
 * LeakSanitizer must report it through check-run.sh (ctest expects the
 * report): the ASan options there (intercept_tls_get_addr=0 among them)
 * keep leak checking working. */
#include <clmad.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *SOURCE = "T twice(T x) { return ad_add(x, x); }\n";

int main(void)
{
    clmad_context *ctx = NULL;
    if (clmad_context_create(NULL, &ctx) != CLMAD_OK) {
        fprintf(stderr, "leak_probe: %s\n", clmad_last_error(NULL));
        return 1;
    }
    clmad_kernel *k = NULL;
    clmad_tensor *x = NULL, *y = NULL;
    const size_t n = 64;
    float host[64] = {0};
    clmad_status st = clmad_kernel_create(ctx, SOURCE, "twice", 1, 1, &k);
    if (st == CLMAD_OK)
        st = clmad_tensor_create(ctx, CLMAD_F32, 1, &n, host, &x);
    if (st == CLMAD_OK)
        st = clmad_broadcast(ctx, k, &x, &y);
    if (st == CLMAD_OK)
        st = clmad_tensor_read(y, host, sizeof host);
    if (st != CLMAD_OK)
        fprintf(stderr, "leak_probe: %s\n", clmad_last_error(ctx));
    clmad_tensor_release(y);
    clmad_tensor_release(x);
    clmad_kernel_release(k);
    clmad_context_release(ctx);

    /* The leak: the only pointer to the block is overwritten. */
    char *volatile lost = malloc(4096);
    if (lost)
        memset(lost, 1, 4096);
    lost = NULL;
    printf("leak_probe: ran a kernel, lost 4096 bytes on purpose\n");
    return st == CLMAD_OK ? 0 : 1;
}
