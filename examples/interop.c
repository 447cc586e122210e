/* SPDX-License-Identifier: Apache-2.0 */
/*
 * interop: an existing OpenCL program hands clmad its context, queue and
 * buffers, and gets gradients back in its own buffers (clmad_cl.h).
 *
 * The program fits y = tanh(a x + b) to samples of tanh(0.8 x - 0.3). It
 * owns everything OpenCL: the context, an in-order queue, the buffers x, y,
 * p = [a, b] and grad (2 floats), and its own SGD kernel p -= lr * grad.
 * Each step:
 *   1. clmad computes loss = mean((tanh(a x + b) - y)^2) on the program's
 *      buffers (wrapped as tensors, no copy) and its gradient, and copies
 *      the gradient into the program's grad buffer (clmad_tensor_copy);
 *   2. the program enqueues its SGD kernel on its queue, without waiting:
 *      the queue is clmad's too, so the kernel runs after clmad's copy, and
 *      the next step's forward pass after the kernel.
 * The first step's gradient is checked against the same computation
 * through the plain API (clmad's own context and tensors, from host
 * arrays), and the loss must fall; exit status 1 otherwise.
 */
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120 /* the OpenCL 1.2 API, as clmad uses */
#endif
#include <clmad_cl.h>

#include <math.h>
#include <stdio.h>

#define N 256
#define STEPS 60

static const char *APP_SOURCE =
    "__kernel void sgd(__global float *p, __global const float *grad, float lr)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    p[i] -= lr * grad[i];\n"
    "}\n";

#define CHECK_CL(call)                                                          \
    do {                                                                        \
        cl_int e_ = (call);                                                     \
        if (e_ != CL_SUCCESS) {                                                 \
            fprintf(stderr, "%s failed: OpenCL error %d\n", #call, (int)e_);    \
            return 1;                                                           \
        }                                                                       \
    } while (0)

#define TRY(ctx, call)                                                          \
    do {                                                                        \
        clmad_status st_ = (call);                                              \
        if (st_ != CLMAD_OK) {                                                  \
            fprintf(stderr, "%s failed: %s: %s\n", #call,                       \
                    clmad_status_string(st_), clmad_last_error(ctx));           \
            return 1;                                                           \
        }                                                                       \
    } while (0)

/* loss = mean((tanh(p[0] x + p[1]) - y)^2), recorded on ctx's tape. */
static int model_loss(clmad_context *ctx, clmad_tensor *p, clmad_tensor *x, clmad_tensor *y,
                      clmad_tensor **loss)
{
    clmad_tensor *a = NULL, *b = NULL, *ax = NULL, *z = NULL, *h = NULL, *d = NULL, *d2 = NULL;
    TRY(ctx, clmad_slice(ctx, p, 0, 0, 1, &a));
    TRY(ctx, clmad_slice(ctx, p, 0, 1, 2, &b));
    TRY(ctx, clmad_mul(ctx, a, x, &ax));
    TRY(ctx, clmad_add(ctx, ax, b, &z));
    TRY(ctx, clmad_tanh(ctx, z, &h));
    TRY(ctx, clmad_sub(ctx, h, y, &d));
    TRY(ctx, clmad_mul(ctx, d, d, &d2));
    TRY(ctx, clmad_mean(ctx, d2, 0, NULL, 0, loss));
    clmad_tensor *tmp[] = {a, b, ax, z, h, d, d2}; /* the tape keeps what it needs */
    for (int i = 0; i < 7; i++)
        clmad_tensor_release(tmp[i]);
    return 0;
}

/* The same gradient through the plain API, on the same device. */
static int plain_gradient(const clmad_device_info *dev, const float *xs, const float *ys,
                          const float *p0, float *grad)
{
    char spec[32];
    snprintf(spec, sizeof spec, "%d:%d", dev->platform_index, dev->device_index);
    clmad_options opt;
    clmad_options_init(&opt);
    opt.device = dev->platform_index >= 0 ? spec : NULL;
    clmad_context *ctx = NULL;
    TRY(NULL, clmad_context_create(&opt, &ctx));
    size_t n = N, two = 2;
    clmad_tensor *x = NULL, *y = NULL, *p = NULL, *loss = NULL, *g = NULL;
    TRY(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, xs, &x));
    TRY(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, ys, &y));
    TRY(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &two, p0, &p));
    TRY(ctx, clmad_tensor_set_requires_grad(p, 1));
    if (model_loss(ctx, p, x, y, &loss))
        return 1;
    TRY(ctx, clmad_backward(ctx, loss, NULL));
    TRY(ctx, clmad_tensor_grad(p, &g));
    TRY(ctx, clmad_tensor_read(g, grad, 2 * sizeof *grad));
    clmad_tensor *all[] = {x, y, p, loss, g};
    for (int i = 0; i < 5; i++)
        clmad_tensor_release(all[i]);
    clmad_context_release(ctx);
    return 0;
}

int main(void)
{
    /* --- The OpenCL program, as it was before clmad --------------------- */
    cl_platform_id platform;
    cl_device_id device;
    cl_int err;
    CHECK_CL(clGetPlatformIDs(1, &platform, NULL));
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_GPU, 1, &device, NULL) != CL_SUCCESS)
        CHECK_CL(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL));
    cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK_CL(err);
    cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err);
    CHECK_CL(err);
    cl_program program = clCreateProgramWithSource(context, 1, &APP_SOURCE, NULL, &err);
    CHECK_CL(err);
    CHECK_CL(clBuildProgram(program, 1, &device, "", NULL, NULL));
    cl_kernel sgd = clCreateKernel(program, "sgd", &err);
    CHECK_CL(err);

    float xs[N], ys[N], p0[2] = {0.1f, 0.0f};
    for (int i = 0; i < N; i++) {
        xs[i] = -2.0f + 4.0f * (float)i / (N - 1);
        ys[i] = tanhf(0.8f * xs[i] - 0.3f);
    }
    cl_mem xbuf = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof xs, xs, &err);
    CHECK_CL(err);
    cl_mem ybuf = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof ys, ys, &err);
    CHECK_CL(err);
    cl_mem pbuf = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof p0, p0, &err);
    CHECK_CL(err);
    cl_mem gbuf = clCreateBuffer(context, CL_MEM_READ_WRITE, sizeof p0, NULL, &err);
    CHECK_CL(err);

    /* --- clmad on the program's objects ---------------------------------- */
    clmad_context *ctx = NULL;
    TRY(NULL, clmad_context_create_cl(context, device, queue, NULL, &ctx));
    clmad_device_info dev;
    TRY(ctx, clmad_context_device(ctx, &dev));
    printf("device: %s\n", dev.name);
    size_t n = N, two = 2;
    clmad_tensor *x = NULL, *y = NULL, *p = NULL, *grad = NULL;
    TRY(ctx, clmad_tensor_wrap_cl(ctx, xbuf, 0, CLMAD_F32, 1, &n, &x));
    TRY(ctx, clmad_tensor_wrap_cl(ctx, ybuf, 0, CLMAD_F32, 1, &n, &y));
    TRY(ctx, clmad_tensor_wrap_cl(ctx, pbuf, 0, CLMAD_F32, 1, &two, &p));
    TRY(ctx, clmad_tensor_wrap_cl(ctx, gbuf, 0, CLMAD_F32, 1, &two, &grad));
    TRY(ctx, clmad_tensor_set_requires_grad(p, 1));

    const float lr = 0.5f;
    float first_grad[2] = {0, 0}, first_loss = 0, last_loss = 0;
    for (int step = 0; step < STEPS; step++) {
        clmad_tensor *loss = NULL, *g = NULL;
        if (model_loss(ctx, p, x, y, &loss))
            return 1;
        TRY(ctx, clmad_backward(ctx, loss, NULL));
        TRY(ctx, clmad_tensor_grad(p, &g));
        TRY(ctx, clmad_tensor_copy(grad, g)); /* into the program's gbuf */
        clmad_tensor_release(g);
        clmad_tensor_zero_grad(p);
        if (step == 0) /* the program reads its own buffer */
            CHECK_CL(clEnqueueReadBuffer(queue, gbuf, CL_TRUE, 0, sizeof first_grad, first_grad,
                                         0, NULL, NULL));
        if (step == 0 || step == STEPS - 1) {
            float l;
            TRY(ctx, clmad_tensor_read(loss, &l, sizeof l));
            printf("step %2d: loss %.3g\n", step, l);
            *(step == 0 ? &first_loss : &last_loss) = l;
        }
        clmad_tensor_release(loss);
        /* The program's own kernel, after clmad's copy on the same queue. */
        size_t global = 2;
        CHECK_CL(clSetKernelArg(sgd, 0, sizeof pbuf, &pbuf));
        CHECK_CL(clSetKernelArg(sgd, 1, sizeof gbuf, &gbuf));
        CHECK_CL(clSetKernelArg(sgd, 2, sizeof lr, &lr));
        CHECK_CL(clEnqueueNDRangeKernel(queue, sgd, 1, NULL, &global, NULL, 0, NULL, NULL));
    }
    float pf[2];
    CHECK_CL(clEnqueueReadBuffer(queue, pbuf, CL_TRUE, 0, sizeof pf, pf, 0, NULL, NULL));
    printf("a = %.4f, b = %.4f (the samples' 0.8, -0.3)\n", pf[0], pf[1]);

    clmad_tensor *mine[] = {x, y, p, grad};
    for (int i = 0; i < 4; i++)
        clmad_tensor_release(mine[i]);
    clmad_context_release(ctx); /* drops clmad's references, not the program's */

    /* --- Checks ------------------------------------------------------------ */
    float want[2];
    if (plain_gradient(&dev, xs, ys, p0, want))
        return 1;
    int failed = !(last_loss < 0.01f * first_loss);
    for (int i = 0; i < 2; i++) {
        double diff = fabs((double)first_grad[i] - want[i]);
        printf("gradient[%d]: %.7g in the program's buffer, %.7g through the plain API\n", i,
               first_grad[i], want[i]);
        if (!(diff <= 1e-6 * (1 + fabs(want[i])))) {
            fprintf(stderr, "MISMATCH gradient[%d]\n", i);
            failed = 1;
        }
    }
    if (!(last_loss < 0.01f * first_loss))
        fprintf(stderr, "the loss fell from %g to %g only\n", first_loss, last_loss);

    clReleaseMemObject(xbuf);
    clReleaseMemObject(ybuf);
    clReleaseMemObject(pbuf);
    clReleaseMemObject(gbuf);
    clReleaseKernel(sgd);
    clReleaseProgram(program);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
    return failed;
}
