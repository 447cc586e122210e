/* SPDX-License-Identifier: Apache-2.0 */
/* Compile notices: a first run's compiles say so, once per context, so that
 * their pause does not look like a hang (clmad.h, clmad_context_set_notice). */
#include "runtime/notice.h"
#include "runtime/context.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CLMAD_COMPILE_NOTICE: '0' (off), '1' (stderr where no function is set),
 * or 0 when unset or another value. Read at each notice: there are few. */
static char environment_setting(void)
{
    const char *v = getenv("CLMAD_COMPILE_NOTICE");
    return v && (strcmp(v, "0") == 0 || strcmp(v, "1") == 0) ? v[0] : 0;
}

void clmad__notice(clmad_context *ctx, const char *fmt, ...)
{
    const char env = environment_setting();
    clmad_notice_fn fn = ctx->notice_fn;
    void *user = ctx->notice_user;
    if (env == '0' || (!fn && env != '1'))
        return;
    if (!fn)
        fn = clmad_notice_stderr;
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fn(user, text);
}

void clmad__notice_compile(clmad_context *ctx)
{
    if (ctx->warm_up_step[0]) {
        clmad__notice(ctx, "%s", ctx->warm_up_step);
        ctx->warm_up_step[0] = '\0';
        return;
    }
    if (ctx->compile_noticed)
        return;
    ctx->compile_noticed = 1;
    clmad__notice(ctx,
                  "compiling OpenCL programs for \"%s\", first run only (later runs read them from the caches; "
                  "clmad-info --warm-up builds them ahead)",
                  ctx->info.name);
}

clmad_status clmad_context_set_notice(clmad_context *ctx, clmad_notice_fn fn, void *user)
{
    /* No guard and no check of release: a binding clears its function as it
     * lets go of ctx, which may be released and still alive. */
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_context_set_notice: ctx is NULL");
    ctx->notice_fn = fn;
    ctx->notice_user = user;
    return CLMAD_OK;
}

void clmad_notice_stderr(void *user, const char *text)
{
    (void)user;
    /* One fprintf per line, so that lines of threads do not interleave. */
    fprintf(stderr, "clmad: %s\n", text ? text : "");
}
