/* SPDX-License-Identifier: Apache-2.0 */
/* roundtrip: create a context on the default device, send a tensor to it and
 * read it back. The smallest complete clmad program. */
#include <clmad.h>

#include <stdio.h>

int main(void)
{
    clmad_context *ctx = NULL;
    clmad_status st = clmad_context_create(NULL, &ctx);
    if (st != CLMAD_OK) {
        fprintf(stderr, "context: %s: %s\n", clmad_status_string(st), clmad_last_error(NULL));
        return 1;
    }
    clmad_device_info dev;
    clmad_context_device(ctx, &dev);
    printf("device: %s (%s)\n", dev.name, dev.platform_name);

    float host[6] = {1, 2, 3, 4, 5, 6}, back[6] = {0};
    size_t shape[2] = {2, 3};
    clmad_tensor *t = NULL;
    st = clmad_tensor_create(ctx, CLMAD_F32, 2, shape, host, &t);
    if (st == CLMAD_OK)
        st = clmad_tensor_read(t, back, sizeof back);
    if (st != CLMAD_OK) {
        fprintf(stderr, "tensor: %s: %s\n", clmad_status_string(st), clmad_last_error(ctx));
        clmad_tensor_release(t);
        clmad_context_release(ctx);
        return 1;
    }
    int same = 1;
    for (int i = 0; i < 6; i++)
        same &= back[i] == host[i];
    printf("tensor 2x3 round trip: %s\n", same ? "identical" : "DIFFERENT");
    clmad_tensor_release(t);
    clmad_context_release(ctx);
    return same ? 0 : 1;
}
