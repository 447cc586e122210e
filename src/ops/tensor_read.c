/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_tensor_read in the ops layer, so that reading the last value of a
 * chain whose values between were released runs it as one lazy region
 * (ops/region.h), as a product or a loss over it would. */
#include "ops/region.h"
#include "runtime/context_guard.h"

clmad_status clmad_tensor_read(clmad_tensor *t, void *host, size_t capacity_bytes)
{
    CLMAD_GUARD_HOLDING(t ? t->ctx : NULL, "clmad_tensor_read");
    if (t)
        READS_ONLY(t->ctx, t, NULL);
    return clmad__tensor_read(t, host, capacity_bytes);
}
