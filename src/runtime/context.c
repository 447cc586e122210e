/* SPDX-License-Identifier: Apache-2.0 */
#include "runtime/context.h"
#include "runtime/context_guard.h"
#include "base/strings.h"
#include "runtime/device.h"
#include "runtime/scope.h"
#include "runtime/tuning.h"
#include "runtime/context_guard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void clmad_options_init(clmad_options *opt)
{
    if (opt)
        memset(opt, 0, sizeof *opt);
}

/* Resolves the on-disk cache folder; NULL (off) when none can be named. */
static char *resolve_cache_dir(const char *option)
{
    if (option)
        return option[0] ? clmad__strdup(option) : NULL;
    const char *env = getenv("CLMAD_CACHE_DIR");
    if (env)
        return env[0] ? clmad__strdup(env) : NULL;
    char buf[4096];
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (xdg && xdg[0] == '/')
        snprintf(buf, sizeof buf, "%s/clmad", xdg);
    else if (home && home[0])
        snprintf(buf, sizeof buf, "%s/.cache/clmad", home);
    else
        return NULL;
    return clmad__strdup(buf);
}

static clmad_status choose_device(const clmad_options *opt, clmad_device_entry *chosen)
{
    clmad_device_entry *entries = NULL;
    size_t n = 0;
    clmad_status st = clmad__enumerate_devices(&entries, &n);
    if (st != CLMAD_OK)
        return st;
    const char *spec = opt->device;
    const char *origin = "the device option";
    if (!spec) {
        spec = getenv("CLMAD_DEVICE");
        origin = "CLMAD_DEVICE";
    }
    clmad_device_info *infos = n ? malloc(n * sizeof *infos) : NULL;
    if (n && !infos) {
        free(entries);
        return clmad__fail(NULL, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory choosing a device");
    }
    for (size_t i = 0; i < n; i++)
        infos[i] = entries[i].info;
    size_t index = 0;
    st = clmad_device_choose(infos, n, spec, &index);
    if (st == CLMAD_OK) {
        *chosen = entries[index];
    } else if (spec && spec[0]) {
        char msg[4096];
        snprintf(msg, sizeof msg, "%s: %s", origin, clmad_last_error(NULL));
        clmad__fail(NULL, st, "%s", msg);
    }
    free(infos);
    free(entries);
    return st;
}

clmad_status clmad_context_create(const clmad_options *options, clmad_context **out)
{
    clmad__clear_thread_error();
    if (!out)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_context_create: ctx is NULL");
    clmad_options defaults;
    clmad_options_init(&defaults);
    const clmad_options *opt = options ? options : &defaults;
    clmad_status st = clmad__check_options(opt, "clmad_context_create");
    if (st != CLMAD_OK)
        return st;

    clmad_device_entry dev;
    st = choose_device(opt, &dev);
    if (st != CLMAD_OK)
        return st;
    return clmad__context_new(opt, &dev, NULL, NULL, out);
}

clmad_status clmad__context_new(const clmad_options *opt, const clmad_device_entry *dev,
                                cl_context cl, cl_command_queue queue, clmad_context **out)
{
    clmad_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory creating a context");
    ctx->refcount = 1;
    ctx->platform = dev->platform;
    ctx->device = dev->device;
    ctx->info = dev->info;
    ctx->fp64 = dev->info.fp64 && !opt->disable_fp64;

    if (cl) {
        /* The caller's objects: clmad holds a reference to each and drops
         * only that one (context_destroy). */
        clRetainContext(cl);
        ctx->cl = cl;
        clRetainDevice(dev->device);
        ctx->device_retained = 1;
        if (queue) {
            clRetainCommandQueue(queue);
            ctx->queue = queue;
        }
    }
    cl_int err = CL_SUCCESS;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)dev->platform, 0};
    if (!ctx->cl)
        ctx->cl = clCreateContext(props, 1, &dev->device, NULL, NULL, &err);
    if (err == CL_SUCCESS && !ctx->queue)
        ctx->queue = clCreateCommandQueue(ctx->cl, dev->device, 0, &err);
    if (err != CL_SUCCESS) {
        clmad_status st = clmad__fail_cl(ctx, err, cl ? "creating an OpenCL queue" :
                                                        "creating the OpenCL context and queue");
        clmad__fail(NULL, st, "%s", clmad_last_error(ctx));
        clmad__context_release_begin(ctx); /* nothing above runtime exists yet */
        clmad__context_release_end(ctx);
        return st;
    }

    const char *poison = getenv("CLMAD_POISON_BUFFERS");
    ctx->pool.poison = poison && strcmp(poison, "1") == 0;
    ctx->cache_dir = resolve_cache_dir(opt->cache_dir);
    clmad__disk_cache_open(ctx);
    clmad__tuning_resolve(ctx);
    clmad__apply_options(ctx, opt);
    *out = ctx;
    return CLMAD_OK;
}

/* Frees what the context holds itself; its tape, builtins and staging
 * area are gone already (clmad_context_release), and so are its tensors
 * and kernels. */
static void context_destroy(clmad_context *ctx)
{
    if (ctx->queue)
        clFinish(ctx->queue);
    clmad__scope_free(ctx);
    for (int d = 0; d < CLMAD__DTYPE_COUNT; d++)
        for (int i = 0; i < CLMAD_KERNEL_COUNT; i++)
            if (ctx->kernels[d][i])
                clReleaseKernel(ctx->kernels[d][i]);
    clmad__program_cache_clear(&ctx->programs);
    clmad__buffer_pool_clear(ctx);
    if (ctx->queue)
        clReleaseCommandQueue(ctx->queue);
    if (ctx->cl)
        clReleaseContext(ctx->cl);
    if (ctx->device_retained)
        clReleaseDevice(ctx->device);
    clmad__disk_cache_close(ctx);
    free(ctx->cache_dir);
    free(ctx->compiler_env);
    free(ctx->error.text);
    clmad__guard_forget(ctx); /* destroyed inside a call of this thread (its last release) */
    clmad__forget_refusal(ctx);
    free(ctx);
}

void clmad__context_retain(clmad_context *ctx)
{
    ctx->refcount++;
}

void clmad__context_unref(clmad_context *ctx)
{
    if (--ctx->refcount == 0)
        context_destroy(ctx);
}

clmad_status clmad__check_open(const clmad_context *ctx, const char *call)
{
    if (!ctx->released)
        return CLMAD_OK;
    return clmad__fail(ctx, CLMAD_ERR_STATE,
                       "%s: the context was released (its remaining tensors and kernels can only be "
                       "read, written and released)",
                       call);
}

void clmad__context_release_begin(clmad_context *ctx)
{
    ctx->released = 1;
    if (ctx->queue)
        clFinish(ctx->queue);
}

void clmad__context_release_end(clmad_context *ctx)
{
    clmad__buffer_pool_clear(ctx);
    clmad__context_unref(ctx);
}

clmad_status clmad_context_device(const clmad_context *ctx, clmad_device_info *info)
{
    CLMAD_GUARD(ctx, "clmad_context_device");
    if (!ctx || !info)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_context_device: NULL argument");
    *info = ctx->info;
    return CLMAD_OK;
}

clmad_status clmad_context_stats(const clmad_context *ctx, clmad_stats *stats)
{
    CLMAD_GUARD(ctx, "clmad_context_stats");
    if (!ctx || !stats)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_context_stats: NULL argument");
    *stats = ctx->stats;
    return CLMAD_OK;
}

clmad_status clmad_finish(clmad_context *ctx)
{
    CLMAD_GUARD(ctx, "clmad_finish");
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_finish: ctx is NULL");
    cl_int err = clFinish(ctx->queue);
    return err == CL_SUCCESS ? CLMAD_OK : clmad__fail_cl(ctx, err, "clFinish");
}
