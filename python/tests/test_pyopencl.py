# SPDX-License-Identifier: Apache-2.0
"""PyOpenCL interop (clmad/pyopencl_interop.py): a clmad context on PyOpenCL's
queue, PyOpenCL Arrays as tensors and tensors as Arrays, without copies.
Shared memory is shown by writing on one side and reading on the other;
lifetimes by dropping each side first and checking OpenCL's reference
counts and clmad's live tensor bytes."""
import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

os.environ.setdefault("PYOPENCL_NO_CACHE", "1")  # no kernel cache of PyOpenCL's in the user's home
cl = pytest.importorskip("pyopencl", reason="pyopencl is not installed (pip install pyopencl; "
                         "scripts/test-python.sh installs it): the PyOpenCL interop is not tested")
import pyopencl.array as cla  # noqa: E402
import pyopencl.tools  # noqa: E402

import clmad  # noqa: E402
from clmad import _opencl  # noqa: E402

from conftest import NO_FP64, released  # noqa: E402

SCALE = """__kernel void scale(__global float *x, float by) { x[get_global_id(0)] *= by; }"""


def first_device():
    for p in cl.get_platforms():
        devices = p.get_devices()
        if devices:
            return devices[0]
    pytest.skip("PyOpenCL lists no OpenCL device")


@pytest.fixture(scope="module")
def pctx():
    return cl.Context([first_device()])


@pytest.fixture
def queue(pctx):
    return cl.CommandQueue(pctx)


@pytest.fixture
def ctx(queue):
    c = clmad.Context.from_pyopencl(queue, disable_fp64=NO_FP64)
    yield c
    c.close()


def scale_kernel(context):
    return cl.Program(context, SCALE).build().scale


def refcount(obj):
    info = {cl.CommandQueue: cl.command_queue_info, cl.Context: cl.context_info}.get(type(obj), cl.mem_info)
    return obj.get_info(info.REFERENCE_COUNT)


def live_bytes(ctx):
    gc.collect()
    return ctx.stats()["live_tensor_bytes"]


# --- the shared context ---------------------------------------------------------------------
def test_context_is_the_queues(ctx, queue):
    context, device, q = _opencl.context_objects(ctx._live)
    assert (context, device, q) == (queue.context.int_ptr, queue.device.int_ptr, queue.int_ptr)
    assert ctx.device.name == queue.device.name
    assert isinstance(ctx, clmad.Context)


def test_refusals(ctx, queue, pctx):
    with pytest.raises(clmad.InvalidArgumentError, match="CommandQueue"):
        clmad.Context.from_pyopencl(pctx)
    with pytest.raises(clmad.InvalidArgumentError, match="device"):
        clmad.Context.from_pyopencl(queue, device="0:0")
    ooo = cl.CommandQueue(pctx, properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
    with pytest.raises(clmad.UnsupportedError, match="out of order"):
        clmad.Context.from_pyopencl(ooo)
    with pytest.raises(clmad.InvalidArgumentError, match="Array"):
        ctx.from_pyopencl(queue)
    with pytest.raises(clmad.InvalidArgumentError, match="pyopencl.array.Array"):
        ctx.from_pyopencl(np.zeros(3, np.float32))
    with pytest.raises(clmad.InvalidArgumentError, match="CommandQueue"):
        ctx.tensor(np.zeros(3, np.float32)).to_pyopencl(pctx)


def test_other_opencl_context_is_refused(ctx):
    other = cl.Context([first_device()])
    arr = cla.zeros(cl.CommandQueue(other), 4, np.float32)
    with pytest.raises(clmad.InvalidArgumentError, match="another OpenCL context"):
        ctx.from_pyopencl(arr)
    with pytest.raises(clmad.InvalidArgumentError, match="another OpenCL context"):
        ctx.tensor(np.zeros(4, np.float32)).to_pyopencl(cl.CommandQueue(other))


# --- shared memory, both ways ------------------------------------------------------------------
def test_pyopencl_writes_clmad_reads(ctx, queue):
    arr = cla.to_device(queue, np.arange(6, dtype=np.float32).reshape(2, 3))
    t = ctx.from_pyopencl(arr)
    np.testing.assert_array_equal(t.numpy(), np.arange(6).reshape(2, 3))
    arr.set(np.full((2, 3), 5, np.float32))  # a blocking write on the shared queue
    np.testing.assert_array_equal(t.numpy(), np.full((2, 3), 5))
    scale_kernel(queue.context)(queue, (6,), None, arr.data, np.float32(3))  # enqueued, not finished
    np.testing.assert_array_equal(t.numpy(), np.full((2, 3), 15))  # clmad's read waits on the same queue
    np.testing.assert_array_equal((t * 2).numpy(), np.full((2, 3), 30))


def test_clmad_writes_pyopencl_reads(ctx, queue):
    x = ctx.tensor(np.arange(4, dtype=np.float32))
    y = ctx.kernel("T f(T x) { return x * x + 1; }", "f")(x)  # maybe held back for fusion: to_pyopencl enqueues it
    arr = y.to_pyopencl()
    assert arr.queue.int_ptr == queue.int_ptr and arr.shape == (4,) and arr.dtype == np.float32
    np.testing.assert_array_equal(arr.get(), [1, 2, 5, 10])
    y.write(np.array([7, 8, 9, 10], np.float32))
    np.testing.assert_array_equal(arr.get(), [7, 8, 9, 10])
    # and PyOpenCL writes into clmad's own buffer
    scale_kernel(queue.context)(queue, (4,), None, arr.data, np.float32(-1))
    np.testing.assert_array_equal(y.numpy(), [-7, -8, -9, -10])


def test_held_back_output_is_computed_for_pyopencl(ctx):
    """A kernel's output that fusion may hold back (docs/fusion.md) is computed when
    exported; backward still gives the gradient."""
    xv = np.linspace(-1, 1, 8).astype(np.float32)
    x = ctx.tensor(xv, requires_grad=True)
    y = ctx.kernel("T f(T x) { return x * x + 1; }", "f")(x)
    np.testing.assert_allclose(y.to_pyopencl().get(), xv * xv + 1, rtol=1e-6)
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * xv * (xv * xv + 1), rtol=1e-5)


def test_clmad_context_and_another_queue():
    """clmad on its own context and queue; PyOpenCL on a second queue of that
    context: to_pyopencl finishes clmad's work; the caller finishes its own."""
    ctx = clmad.Context(disable_fp64=NO_FP64)
    context, device, _ = _opencl.context_objects(ctx._live)
    other = cl.CommandQueue(cl.Context.from_int_ptr(context, retain=True),
                            cl.Device.from_int_ptr(device, retain=False))
    y = ctx.kernel("T f(T x) { return 2 * x; }", "f")(ctx.tensor(np.arange(1024, dtype=np.float32)))
    arr = y.to_pyopencl(other)
    assert arr.queue is other
    np.testing.assert_array_equal(arr.get(), 2 * np.arange(1024))
    scale_kernel(other.context)(other, (1024,), None, arr.data, np.float32(0.5))
    other.finish()  # the caller's rule: commands on another queue than clmad's are finished before clmad reads
    np.testing.assert_array_equal(y.numpy(), np.arange(1024))
    wrapped = ctx.from_pyopencl(arr)
    np.testing.assert_array_equal((wrapped + 1).numpy(), np.arange(1024) + 1)
    ctx.close()


# --- dtypes, layouts -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8])
def test_dtypes_both_ways(ctx, queue, dtype):
    if dtype is np.float64 and not ctx.fp64:
        pytest.skip("the device has no fp64")
    values = np.arange(12).reshape(3, 4).astype(dtype)
    t = ctx.from_pyopencl(cla.to_device(queue, values))
    assert t.dtype == np.dtype(dtype) and t.shape == (3, 4)
    np.testing.assert_array_equal(t.numpy(), values)
    back = ctx.tensor(values[::-1].copy()).to_pyopencl()
    assert back.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(back.get(), values[::-1])


def test_bad_dtypes_and_layouts(ctx, queue):
    with pytest.raises(clmad.DtypeError):
        ctx.from_pyopencl(cla.zeros(queue, 4, np.int16))
    base = cla.to_device(queue, np.arange(12, dtype=np.float32).reshape(3, 4))
    with pytest.raises(clmad.InvalidArgumentError, match="not C-contiguous"):
        ctx.from_pyopencl(base.T)
    with pytest.raises(clmad.InvalidArgumentError, match="not a multiple"):
        ctx.from_pyopencl(base[1:])  # 16 bytes in: not aligned for a sub-buffer


def test_aligned_offset_is_shared(ctx, queue):
    align = queue.device.mem_base_addr_align // 8  # bytes
    n = align // 4
    arr = cla.to_device(queue, np.arange(4 * n, dtype=np.float32))
    t = ctx.from_pyopencl(arr[n:2 * n])
    np.testing.assert_array_equal(t.numpy(), np.arange(n, 2 * n))
    arr.set(-np.arange(4 * n, dtype=np.float32))
    np.testing.assert_array_equal(t.numpy(), -np.arange(n, 2 * n))
    back = t.to_pyopencl()  # a sub-buffer of the array's buffer, at the same place
    np.testing.assert_array_equal(back.get(), -np.arange(n, 2 * n))


def test_empty_and_0d(ctx, queue):
    t = ctx.from_pyopencl(cla.empty(queue, (0, 3), np.float32))
    assert t.shape == (0, 3)
    assert ctx.zeros((0, 2)).to_pyopencl().shape == (0, 2)
    s = ctx.from_pyopencl(cla.to_device(queue, np.array(2.5, np.float32)))
    assert s.shape == () and s.item() == 2.5
    np.testing.assert_array_equal(ctx.scalar(4.0).to_pyopencl().get(), 4.0)


def test_read_only_buffer(ctx, queue):
    buf = cl.Buffer(queue.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                    hostbuf=np.arange(3, dtype=np.float32))
    t = ctx.from_pyopencl(cla.Array(queue, 3, np.float32, data=buf))
    np.testing.assert_array_equal((t + 1).numpy(), [1, 2, 3])
    with pytest.raises(clmad.InvalidArgumentError, match="read-only"):
        t.write(np.zeros(3, np.float32))


# --- gradients ---------------------------------------------------------------------------------------
def test_gradients_through_wrapped_tensors(ctx, queue):
    rng = np.random.default_rng(7)
    xv = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
    av = rng.uniform(0.5, 2, 3).astype(np.float32)
    x = ctx.from_pyopencl(cla.to_device(queue, xv), requires_grad=True)
    a = ctx.from_pyopencl(cla.to_device(queue, av), requires_grad=True)
    y = ctx.kernel("T f(T x, T a) { return a * sin(x) + x * x; }", "f")(x, a)  # a broadcast over rows
    loss = (y * x).sum()
    loss.backward()
    # loss = sum(a sin x * x + x^3): d/dx = a (sin x + x cos x) + 3 x^2; d/da = column sums of x sin x
    dx = av * (np.sin(xv) + xv * np.cos(xv)) + 3 * xv ** 2
    da = (xv * np.sin(xv)).sum(axis=0)
    np.testing.assert_allclose(x.grad.numpy(), dx, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), da, rtol=1e-5, atol=1e-6)
    grad = x.grad.to_pyopencl()
    np.testing.assert_allclose(grad.get(), dx, rtol=1e-5, atol=1e-6)


# --- lifetimes ---------------------------------------------------------------------------------------
def test_pyopencl_objects_dropped_first(pctx):
    device = first_device()

    def make():
        context = cl.Context([device])
        return clmad.Context.from_pyopencl(cl.CommandQueue(context), disable_fp64=NO_FP64)

    ctx = make()  # the PyOpenCL context and queue are gone: clmad holds its own references
    gc.collect()
    _, _, q = _opencl.context_objects(ctx._live)
    queue = cl.CommandQueue.from_int_ptr(q, retain=True)
    assert refcount(queue) >= 2  # clmad's and this one
    x = ctx.tensor(np.arange(5, dtype=np.float64 if ctx.fp64 else np.float32), requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * np.arange(5))
    del queue
    ctx.close()


def test_clmad_context_dropped_first(pctx):
    queue = cl.CommandQueue(pctx)
    arr = cla.to_device(queue, np.arange(3, dtype=np.float32))

    def counts():
        gc.collect()  # (PyOpenCL's events hold references too, until collected)
        queue.finish()
        return refcount(queue), refcount(pctx)

    before = counts()
    ctx = clmad.Context.from_pyopencl(queue)
    t = ctx.tensor(np.ones(4, np.float32))
    assert refcount(queue) > before[0] and refcount(pctx) > before[1]
    ctx.close()
    np.testing.assert_array_equal(t.numpy(), 1)  # a tensor keeps the C context
    del ctx, t
    gc.collect()
    assert counts() == before  # clmad released exactly what it took
    scale_kernel(pctx)(queue, (3,), None, arr.data, np.float32(2))
    np.testing.assert_array_equal(arr.get(), [0, 2, 4])


def test_wrapped_array_dropped_before_tensor(ctx, queue):
    pool = cl.tools.MemoryPool(cl.tools.ImmediateAllocator(queue))
    arr = cla.to_device(queue, np.arange(256, dtype=np.float32), allocator=pool)
    t = ctx.from_pyopencl(arr, requires_grad=True)
    del arr
    gc.collect()
    # The pool would hand the same memory to the next array of that size, were it free.
    other = cla.to_device(queue, np.full(256, -1, np.float32), allocator=pool)
    np.testing.assert_array_equal(t.numpy(), np.arange(256))
    (t * t).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), 2 * np.arange(256))
    np.testing.assert_array_equal(other.get(), -1)
    assert pool.active_blocks == 2  # the wrapped array's block is still in use
    del t
    gc.collect()
    again = ctx.tensor(np.arange(256, dtype=np.float32), requires_grad=True)
    # it went back to the pool with the tensor (and the cached kernels' references)
    assert released(ctx, lambda: pool.active_blocks == 1, lambda: (again * again).sum().backward())


def sub_buffers_counted(buf):
    """Whether a sub-buffer shows in its parent's CL_MEM_REFERENCE_COUNT: on POCL
    it does, on Intel's CPU runtime it does not (the count is the implementation's
    to report)."""
    before = refcount(buf)
    probe = buf.get_sub_region(0, 4)
    counted = refcount(buf) > before
    probe.release()
    return counted


def test_wrapped_array_dropped_after_tensor(ctx, queue):
    arr = cla.to_device(queue, np.arange(8, dtype=np.float32))
    before = refcount(arr.base_data)
    counted = sub_buffers_counted(arr.base_data)
    t = ctx.from_pyopencl(arr)
    u = t + 1
    if counted:
        assert refcount(arr.base_data) > before  # clmad's sub-buffer holds the buffer
    t.release()
    del u
    gc.collect()
    assert released(ctx, lambda: refcount(arr.base_data) == before,
                    lambda: ctx.tensor(np.arange(8, dtype=np.float32)) + 1)
    arr.set(np.zeros(8, np.float32))
    np.testing.assert_array_equal(arr.get(), 0)


def test_exported_array_outlives_tensor_and_context(queue):
    ctx = clmad.Context.from_pyopencl(queue)
    t = ctx.tensor(np.arange(64, dtype=np.float32))
    base = live_bytes(ctx)
    arr = t.to_pyopencl()
    own_queue = clmad.Context().tensor(np.zeros(2, np.float32)).to_pyopencl()  # on clmad's own queue
    del t
    assert live_bytes(ctx) == base  # the Array keeps the tensor
    ctx.tensor(np.full(64, -1, np.float32))  # would take the tensor's pooled memory, were it free
    np.testing.assert_array_equal(arr.get(), np.arange(64))
    del arr
    assert live_bytes(ctx) == base - 64 * 4  # the tensor went with the Array
    t = ctx.tensor(np.arange(64, dtype=np.float32))
    arr = t.to_pyopencl()
    del t
    ctx.close()
    del ctx
    gc.collect()
    scale_kernel(queue.context)(queue, (64,), None, arr.data, np.float32(2))
    np.testing.assert_array_equal(arr.get(), 2 * np.arange(64))
    del arr
    gc.collect()
    own_queue.set(np.array([3, 4], np.float32))  # its clmad context is gone: the Array keeps its queue
    np.testing.assert_array_equal(own_queue.get(), [3, 4])


# --- two ICD loaders -------------------------------------------------------------------------------
MISMATCH = textwrap.dedent("""
    import os, sys, pytest
    empty, icd, which = sys.argv[1:]
    import numpy as np
    os.environ["OCL_ICD_VENDORS"] = empty if which == "clmad" else icd
    import clmad
    try:
        clmad.devices()
    except clmad.Error:
        pass
    os.environ["OCL_ICD_VENDORS"] = icd if which == "clmad" else empty
    import pyopencl as cl
    if which == "clmad":  # clmad's loader lists nothing, PyOpenCL's lists the driver
        queue = cl.CommandQueue(cl.Context([cl.get_platforms()[0].get_devices()[0]]))
        with pytest.raises(clmad.UnsupportedError, match="OCL_ICD_VENDORS"):
            clmad.Context.from_pyopencl(queue)
    else:  # the other way round
        t = clmad.Context().tensor(np.zeros(2, np.float32))
        with pytest.raises(clmad.UnsupportedError, match="OCL_ICD_VENDORS"):
            t.to_pyopencl()
    print("refused")
""")


@pytest.mark.parametrize("unlisted_by", ["clmad", "pyopencl"])
def test_loaders_that_disagree_are_refused(tmp_path, unlisted_by):
    icd = os.environ.get("OCL_ICD_VENDORS")
    if not icd or not os.path.isdir(icd):
        pytest.skip("needs OCL_ICD_VENDORS set to a folder (scripts/test-python.sh sets build/test-icd)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    run = subprocess.run([sys.executable, "-c", MISMATCH, str(tmp_path), icd, unlisted_by], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "refused" in run.stdout, run.stdout + run.stderr


def test_readme_example():
    """The example of python/README.md's "PyOpenCL interop", as it is there."""
    readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "README.md")
    with open(readme) as f:
        text = f.read()
    section = text[text.index("## PyOpenCL interop"):]
    code = section[section.index("```python\n") + len("```python\n"):section.index("```\n", 10)]
    assert "from_pyopencl" in code and "to_pyopencl" in code
    exec(compile(code, "python/README.md (PyOpenCL interop)", "exec"), {})
