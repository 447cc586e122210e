# SPDX-License-Identifier: Apache-2.0
"""16-bit tensors from Python (CLMAD_F16, CLMAD_BF16). float16 is
NumPy's; bfloat16 is ml_dtypes.bfloat16 where that package is installed, else
the dtype "bfloat16" with np.uint16 bit patterns on the host. The device's
rounding is checked against NumPy, ml_dtypes and a rounding written here."""
import sys

import numpy as np
import pytest

import clmad
from clmad import dlpack

F16_MAX = 65504.0


@pytest.fixture
def no_ml_dtypes(monkeypatch):
    """As where ml_dtypes is not installed: importing it fails (clmad tries on each use)."""
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)


def f32_values(rng, n=1_000_000):
    """float32 values for rounding to 16 bits: random bit patterns (every exponent,
    NaNs of many payloads), random values in float16's range, and the corners."""
    every = rng.integers(0, 2**32, n // 2, dtype=np.uint64).astype(np.uint32)
    sign = rng.integers(0, 2, n // 2, dtype=np.uint32) << 31
    exponent = rng.integers(127 - 27, 127 + 17, n // 2, dtype=np.uint32) << 23  # 2^-27 .. 2^16
    in_range = sign | exponent | rng.integers(0, 2**23, n // 2, dtype=np.uint32)
    ulp16 = 2.0 ** -24  # float16's smallest subnormal
    corners = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0,
               1 + 2**-11, 1 + 3 * 2**-11, -(1 + 2**-11), 2048 + 1, 2048 + 3,  # ties: to even
               ulp16, ulp16 / 2, 3 * ulp16 / 2, ulp16 / 2 * (1 + 2**-20), ulp16 / 4, 2**-14 - ulp16 / 2,
               F16_MAX, 65519.99, 65520.0, 65536.0, -65520.0, 1e30, 3.4028235e38, 1e-45,
               1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20]  # (bfloat16's ties and near-ties)
    return np.concatenate([every.view(np.float32), in_range.view(np.float32), np.array(corners, np.float32)])


def bf16_reference(x):
    """float32 -> bfloat16 bits, nearest, ties to even, written here in integers:
    the upper half of the float32 after adding just under half of its lower half's
    unit (a carry runs into the exponent, to infinity too); NaNs stay NaNs."""
    b = x.view(np.uint32).astype(np.uint64)
    rounded = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return np.where(np.isnan(x), (b >> 16) | 0x40, rounded).astype(np.uint16)


def bf16_nan(bits):
    return (bits & 0x7F80 == 0x7F80) & (bits & 0x7F != 0)


def assert_same(got, want, isnan=np.isnan, uint=np.uint16):
    """Bit for bit, but NaNs only as NaNs (of any payload or sign)."""
    assert got.shape == want.shape
    nan_got, nan_want = isnan(got), isnan(want)
    assert (nan_got == nan_want).all(), np.flatnonzero(nan_got != nan_want)[:5]
    g, w = got.view(uint)[~nan_want], want.view(uint)[~nan_want]
    bad = np.flatnonzero(g != w)
    assert not bad.size, f"{bad.size} differ, the first: {g[bad[0]]:#x}, not {w[bad[0]]:#x}"


# --- float16 ---------------------------------------------------------------------------
def test_float16_round_trip_and_facts(ctx, rng):
    bits = np.arange(2**16, dtype=np.uint16).reshape(256, 256)  # every pattern, NaNs too
    t = ctx.tensor(bits.view(np.float16))
    assert t.dtype == np.float16 and t.shape == (256, 256)
    back = t.numpy()
    assert back.dtype == np.float16 and back.view(np.uint16).tobytes() == bits.tobytes()
    assert ctx.tensor(np.float16(1 / 3)).item() == float(np.float16(1 / 3))
    assert "dtype=f16" in repr(ctx.tensor(np.ones(2, np.float16)))
    # Filled on the device, rounded as NumPy rounds.
    assert ctx.full((2, 3), 1 / 3, np.float16).numpy().tobytes() == np.full((2, 3), 1 / 3, np.float16).tobytes()
    assert ctx.zeros(4, np.float16).numpy().tobytes() == bytes(8)
    assert ctx.scalar(65519.0, np.float16).numpy().view(np.uint16) == np.float16(65519.0).view(np.uint16)
    t.write(np.full((256, 256), -2.5, np.float16))
    assert (t.numpy() == -2.5).all()


def test_float16_storage_operations(ctx, rng):
    a = rng.normal(size=(4, 6)).astype(np.float16)
    t = ctx.tensor(a)
    for got, want in ((t[1:3], a[1:3]), (t.T, a.T), (t.reshape(3, 8), a.reshape(3, 8)),
                      (clmad.concat([t, t[:1]]), np.concatenate([a, a[:1]])),
                      (clmad.index_select(t, 1, ctx.tensor(np.array([5, 0, 5], np.int64))), a[:, [5, 0, 5]])):
        assert got.dtype == np.float16 and got.numpy().tobytes() == np.ascontiguousarray(want).tobytes()


def test_cast_float32_to_float16_as_numpy(ctx, rng):
    x = f32_values(rng)
    got = clmad.cast(ctx.tensor(x), np.float16).numpy()
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    assert got.dtype == np.float16
    assert_same(got, want)
    # Some corners' roundings spelled out, should NumPy be wrong too.
    ulp16 = 2.0 ** -24
    x = np.array([1 + 2**-11, 1 + 3 * 2**-11, 2049, ulp16 / 2, 3 * ulp16 / 2, 65519.99, 65520, -np.inf], np.float32)
    got = clmad.cast(ctx.tensor(x), np.float16).numpy()
    assert got.tolist() == [1.0, 1 + 2**-9, 2048, 0.0, 2 * ulp16, F16_MAX, np.inf, -np.inf]


def test_cast_float64_to_float16_rounds_once(ctx64):
    """f64 -> f16 directly, as NumPy: through float32 the first value would tie to 1."""
    x = np.array([1 + 2**-11 + 2**-40, 1 + 2**-11, 2.0**-25 * (1 + 2**-40), 1e300, -1e-300])
    got = clmad.cast(ctx64.tensor(x), np.float16).numpy()
    assert got.tolist() == [1 + 2**-10, 1.0, 2.0**-24, np.inf, -0.0]
    assert np.signbit(got[-1])
    with np.errstate(over="ignore"):
        assert_same(got, x.astype(np.float16))


def test_widen_every_float16(ctx):
    h = np.arange(2**16, dtype=np.uint16).view(np.float16)
    t = ctx.tensor(h)
    assert_same(clmad.cast(t, np.float32).numpy(), h.astype(np.float32), uint=np.uint32)
    if ctx.fp64:
        assert_same(clmad.cast(t, np.float64).numpy(), h.astype(np.float64), uint=np.uint64)
    # And back: every float16 survives float32 unchanged (NaNs as NaNs).
    assert_same(clmad.cast(clmad.cast(t, np.float32), np.float16).numpy(), h)


# --- bfloat16 with ml_dtypes -------------------------------------------------------------
def test_bfloat16_with_ml_dtypes(ctx, rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = np.dtype(ml_dtypes.bfloat16)
    x = f32_values(rng)
    t = clmad.cast(ctx.tensor(x), "bfloat16")
    assert t.dtype == bf16 and t.dtype == "bfloat16" and "dtype=bf16" in repr(t[:2])
    got = t.numpy()
    assert got.dtype == bf16
    with np.errstate(over="ignore", invalid="ignore"):  # (ml_dtypes' NaNs and infinities)
        assert_same(got, x.astype(bf16))
    assert_same(got.view(np.uint16), bf16_reference(x), isnan=bf16_nan)
    # Values given for a bf16 tensor round as the cast does, under either name of the dtype.
    assert ctx.tensor(x, dtype=ml_dtypes.bfloat16).numpy().tobytes() == got.tobytes()
    # Widening every pattern, and a bfloat16 array in and out as it is.
    every = np.arange(2**16, dtype=np.uint16).view(bf16)
    w = ctx.tensor(every)
    assert w.dtype == bf16 and w.numpy().tobytes() == every.tobytes()
    assert_same(clmad.cast(w, np.float32).numpy(), every.astype(np.float32), uint=np.uint32)
    assert ctx.scalar(1 / 3, ml_dtypes.bfloat16).item() == float(np.float32(1 / 3).astype(bf16))


# --- bfloat16 without ml_dtypes: "bfloat16" and np.uint16 bit patterns --------------------------
def test_bfloat16_without_ml_dtypes(ctx, rng, no_ml_dtypes):
    with pytest.raises(ImportError):
        import ml_dtypes  # noqa: F401 (the fixture hides it)
    bits = np.arange(2**16, dtype=np.uint16)
    t = ctx.tensor(bits, dtype="bfloat16")
    assert t.dtype == "bfloat16" and str(t.dtype) == "bfloat16"
    back = t.numpy()
    assert back.dtype == np.uint16 and back.tobytes() == bits.tobytes()
    # Widening: the bits are float32's upper half (np.asarray with a dtype: values, not bits).
    wide = (bits.astype(np.uint32) << 16).view(np.float32)
    assert_same(clmad.cast(t, np.float32).numpy(), wide, uint=np.uint32)
    assert_same(np.asarray(t, dtype=np.float32), wide, uint=np.uint32)
    assert np.asarray(t, dtype=np.uint16).tobytes() == bits.tobytes()
    x = f32_values(rng)
    want = bf16_reference(x)
    assert_same(clmad.cast(ctx.tensor(x), "bfloat16").numpy(), want, isnan=bf16_nan)
    assert_same(ctx.tensor(x, dtype="bfloat16").numpy(), want, isnan=bf16_nan)  # values, not bits
    third = bf16_reference(np.array([1 / 3], np.float32))[0]
    assert third == 0x3EAB  # 0x3EAAAAAB rounds up
    assert (ctx.full((2, 2), 1 / 3, "bfloat16").numpy() == third).all()
    assert ctx.scalar(2.5, "bfloat16").item() == 2.5 and ctx.zeros(3, "bfloat16").numpy().tobytes() == bytes(6)
    # Writing: np.uint16 as bits, anything else as values.
    z = ctx.zeros(3, dtype=t.dtype)
    z.write(np.array([0x3F80, 0x7F80, 0xFF80], np.uint16))
    assert clmad.cast(z, np.float32).numpy().tolist() == [1.0, np.inf, -np.inf]
    z.write([1.0, 1 + 2**-8, 1 + 3 * 2**-8])
    assert z.numpy().tolist() == [0x3F80, 0x3F80, 0x3F82]
    with pytest.raises(clmad.ShapeError):
        z.write([1.0, 2.0])


def test_dtype_error_names_the_16_bit_dtypes(ctx, no_ml_dtypes):
    with pytest.raises(clmad.DtypeError, match="float16 or bfloat16"):
        ctx.zeros(3, np.uint16)
    with pytest.raises(clmad.DtypeError, match="float16 or bfloat16"):
        ctx.tensor(np.zeros(3, np.int16))


# --- computing on them -----------------------------------------------------------------
def _wide(t):
    """A 16-bit tensor's values, exactly, as float64."""
    return clmad.cast(t, np.float32).numpy().astype(np.float64)


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_kernels_and_gradients_compute_in_f32(ctx, rng, dtype):
    """A kernel over T runs unchanged on 16-bit tensors: it computes in f32 and
    rounds each value and gradient once on store (tests/test_half_compute.c
    states the bounds: within 2 u of the f64 reference on the same inputs,
    u = 2^-11 for float16, 2^-8 for bfloat16, plus the f32 arithmetic's error)."""
    u = 2.0 ** -11 if dtype is np.float16 else 2.0 ** -8
    k = ctx.kernel("T f(T x, T a) { return a * exp(x) / (1 + x * x); }", "f")
    tx = clmad.cast(ctx.tensor(rng.uniform(-1, 1, (3, 40)).astype(np.float32)), dtype)
    ta = clmad.cast(ctx.tensor(rng.uniform(0.5, 1, (3, 40)).astype(np.float32)), dtype)
    tx.requires_grad = ta.requires_grad = True
    y = k(tx, ta)
    assert y.dtype == tx.dtype
    y.sum().backward()
    x, a = _wide(tx), _wide(ta)
    ref = a * np.exp(x) / (1 + x * x)
    np.testing.assert_allclose(_wide(y), ref, rtol=u, atol=1e-6)
    dx = a * np.exp(x) * (1 / (1 + x * x) - 2 * x / (1 + x * x) ** 2)
    da = np.exp(x) / (1 + x * x)
    assert tx.grad.dtype == tx.dtype
    np.testing.assert_allclose(_wide(tx.grad), dx, rtol=2 * u, atol=1e-6)
    np.testing.assert_allclose(_wide(ta.grad), da, rtol=2 * u, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_sums_accumulate_in_f32(ctx, dtype):
    """32768 ones: 16-bit accumulation would stop at 256 (bfloat16) or 2048 (float16)."""
    ones = ctx.full(32768, 1.0, dtype)
    assert _wide(ones.sum()) == 32768.0
    assert _wide(ones + ones).tolist()[:2] == [2.0, 2.0]


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_gradients_cross_casts(ctx, dtype):
    """f32 master weights cast to 16 bits for the forward get their gradient widened."""
    w = ctx.tensor(np.array([0.1, -1.7, 3.0], np.float32), requires_grad=True)
    h = clmad.cast(w, dtype)
    assert h.requires_grad
    clmad.cast(h * h, np.float32).sum().backward()
    assert w.grad.dtype == np.float32
    np.testing.assert_array_equal(w.grad.numpy(), 2 * _wide(h))


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_products_and_losses_widen(ctx, rng, dtype):
    """matmul, softmax and the losses take 16-bit operands: widened to float32,
    computed, the result rounded once; gradients flow back through the casts."""
    u = 2.0 ** -11 if dtype is np.float16 else 2.0 ** -8
    a = clmad.cast(ctx.tensor(rng.uniform(-1, 1, (6, 8)).astype(np.float32)), dtype)
    b = clmad.cast(ctx.tensor(rng.uniform(-1, 1, (8, 5)).astype(np.float32)), dtype)
    a.requires_grad = True
    c = a @ b
    assert c.dtype == a.dtype
    ref = _wide(a) @ _wide(b)
    assert np.all(np.abs(_wide(c) - ref) <= u * np.abs(ref) + 8 * 2.0 ** -23 * np.abs(_wide(a)) @ np.abs(_wide(b)))
    s = clmad.softmax(c, 1)
    assert s.dtype == a.dtype
    e = np.exp(_wide(c) - _wide(c).max(1, keepdims=True))
    np.testing.assert_allclose(_wide(s), e / e.sum(1, keepdims=True), rtol=u, atol=1e-6)
    loss = clmad.mse_loss(c, clmad.cast(ctx.tensor(np.zeros((6, 5), np.float32)), dtype))
    np.testing.assert_allclose(_wide(loss), (_wide(c) ** 2).mean(), rtol=u)
    loss.backward()
    dc = (2 * _wide(c) / c.size).astype(np.float32)
    # dc rounded by the cast's backward, then the product rounded: within 2 u of the magnitudes
    ga = dc.astype(np.float64) @ _wide(b).T
    assert np.all(np.abs(_wide(a.grad) - ga) <= 2 * u * np.abs(dc) @ np.abs(_wide(b).T) + 1e-7)


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_what_they_refuse(ctx, dtype):
    a = ctx.full((2, 3), 1.5, dtype)
    # The elementwise operators promote mixed float dtypes (to float32 here), kernels do not.
    assert (a * ctx.full((2, 3), 2.0, np.float32)).dtype == np.float32
    with pytest.raises(clmad.DtypeError):
        ctx.kernel("T f(T a, T b) { return a * b; }", "f")(a, ctx.full((2, 3), 1.0, np.float32))
    with pytest.raises(clmad.DtypeError, match="master weights"):
        clmad.optim.SGD([a], lr=0.1)
    assert clmad.cast(a, np.float32).numpy().tolist() == [[1.5] * 3] * 2


# --- DLPack ------------------------------------------------------------------------------
@pytest.fixture(params=["as the device is", "as on a discrete GPU"])
def shared(request, ctx, monkeypatch):
    """Whether DLPack shares memory in this run (as test_core's fixture)."""
    if request.param == "as on a discrete GPU":
        monkeypatch.setattr(dlpack, "_objects", lambda ctx: None)
        return False
    return ctx.device.host_unified_memory


def test_dlpack_float16_both_ways(ctx, rng, shared):
    a = rng.normal(size=(3, 5)).astype(np.float16)
    t = ctx.tensor(a)
    dt = dlpack.capsule_dtype(t.__dlpack__())
    assert (dt.code, dt.bits, dt.lanes) == (dlpack.KDL_FLOAT, 16, 1)
    out = np.from_dlpack(t)
    assert out.dtype == np.float16 and out.tobytes() == a.tobytes()
    out[0, 0] = 7.0
    assert t.numpy()[0, 0] == (7.0 if shared else a[0, 0])
    u = ctx.from_dlpack(a)
    assert u.dtype == np.float16 and u.numpy().tobytes() == a.tobytes()


def test_dlpack_bfloat16_is_kdlbfloat(ctx, no_ml_dtypes, shared):
    """Exported as kDLBfloat (which NumPy does not import); imported from it."""
    bits = np.array([[0x3F80, 0xC000], [0x7FC0, 0x0001]], np.uint16)
    t = ctx.tensor(bits, dtype="bfloat16")
    for capsule in (t.__dlpack__(), t.__dlpack__(max_version=(1, 0))):
        dt = dlpack.capsule_dtype(capsule)
        assert (dt.code, dt.bits, dt.lanes) == (dlpack.KDL_BFLOAT, 16, 1)
    u = ctx.from_dlpack(t)
    assert u.dtype == "bfloat16" and u.numpy().tobytes() == bits.tobytes()
    t.write(np.array([[0x4000, 0x4040], [0, 0]], np.uint16))
    assert u.numpy()[0].tolist() == ([0x4000, 0x4040] if shared else [0x3F80, 0xC000])
    if shared:
        view = np.asarray(t, copy=False)
        assert view.dtype == np.uint16 and view[0].tolist() == [0x4000, 0x4040]


def test_dlpack_bfloat16_with_ml_dtypes(ctx, shared):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = np.array([1.0, -2.0, 0.33], ml_dtypes.bfloat16)
    u = ctx.from_dlpack(a)  # (NumPy exports no bfloat16: taken as its bits)
    assert u.dtype == ml_dtypes.bfloat16 and u.numpy().tobytes() == a.tobytes()
    assert ctx.from_dlpack(u).numpy().tobytes() == a.tobytes()
    if shared:
        assert np.asarray(u, copy=False).dtype == ml_dtypes.bfloat16


# --- safetensors -------------------------------------------------------------------------
def test_safetensors_round_trip(ctx, rng, tmp_path):
    h = rng.normal(size=(4, 3)).astype(np.float16)
    b = rng.integers(0, 2**16, (2, 5), dtype=np.uint16)  # any bits, NaNs included
    path = tmp_path / "half.safetensors"
    clmad.save(path, {"h": ctx.tensor(h), "b": ctx.tensor(b, dtype="bfloat16"), "s": ctx.scalar(2.0, np.float16)})
    loaded = ctx.load(path)
    assert list(loaded) == ["h", "b", "s"]
    assert loaded["h"].dtype == np.float16 and loaded["h"].numpy().tobytes() == h.tobytes()
    assert str(loaded["b"].dtype) == "bfloat16" and loaded["b"].numpy().view(np.uint16).tobytes() == b.tobytes()
    assert loaded["s"].shape == () and loaded["s"].item() == 2.0
    into = {"h": ctx.zeros((4, 3), np.float16), "b": ctx.zeros((2, 5), "bfloat16")}
    clmad.load_into(path, into)
    assert into["b"].numpy().view(np.uint16).tobytes() == b.tobytes()
    # The package safetensors reads the float16 tensor with the same bits (its NumPy
    # side has no bfloat16), and writes one that clmad reads.
    st = pytest.importorskip("safetensors")
    import safetensors.numpy
    with st.safe_open(str(path), framework="np") as f:
        assert f.get_tensor("h").dtype == np.float16 and f.get_tensor("h").tobytes() == h.tobytes()
    theirs = tmp_path / "theirs.safetensors"
    safetensors.numpy.save_file({"h": h}, str(theirs))
    assert ctx.load(theirs)["h"].numpy().tobytes() == h.tobytes()


# --- PyOpenCL ----------------------------------------------------------------------------
def test_pyopencl_arrays_both_ways(monkeypatch):
    cl = pytest.importorskip("pyopencl", reason="pyopencl is not installed: the PyOpenCL interop is not tested")
    import pyopencl.array as cla
    monkeypatch.setenv("PYOPENCL_NO_CACHE", "1")
    device = next((p.get_devices()[0] for p in cl.get_platforms() if p.get_devices()), None)
    if device is None:
        pytest.skip("PyOpenCL lists no OpenCL device")
    pctx = cl.Context([device])  # (held here: Intel's runtime fails clRetainContext on a collected one)
    queue = cl.CommandQueue(pctx)
    h = (np.arange(6, dtype=np.float16) / 3).reshape(2, 3)
    with clmad.Context.from_pyopencl(queue) as ctx:
        x = cla.to_device(queue, h)
        t = ctx.from_pyopencl(x)
        assert t.dtype == np.float16 and t.numpy().tobytes() == h.tobytes()
        x.set(np.full((2, 3), 1.5, np.float16))  # one memory (PyOpenCL computes nothing in float16)
        assert (t.numpy() == 1.5).all()
        b = clmad.cast(ctx.tensor(h), "bfloat16")
        got = b.to_pyopencl().get()  # ml_dtypes.bfloat16, or np.uint16 without it: as b.numpy()
        assert got.dtype == b.numpy().dtype and got.tobytes() == b.numpy().tobytes()
        assert got.view(np.uint16).tobytes() == bf16_reference(h.astype(np.float32)).tobytes()


# --- loss scaling (clmad.optim.GradScaler, tests/test_grad_scaler.c) ----------------------
def amp_update_scale(scale, tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    """PyTorch's GradScaler.update (_amp_update_scale_, aten/src/ATen/native/cuda/AmpKernels.cu),
    in float32 as its scale is: backoff after an inf or NaN; growth after growth_interval
    good steps in a row, kept only if finite. Returns (scale, tracker)."""
    if found_inf:
        return np.float32(scale * np.float32(backoff_factor)), 0
    if tracker + 1 == growth_interval:
        grown = np.float32(scale * np.float32(growth_factor))
        return (grown if np.isfinite(grown) else scale), 0
    return scale, tracker + 1


def test_grad_scaler_follows_pytorchs_rule(ctx):
    """Twelve steps of SGD on loss = sum(w * c), c finite but at the scripted steps: the
    steps taken, the scale after each against PyTorch's rule, w against SGD on c."""
    options = dict(init_scale=1024.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=3)  # 3: f32 rounding
    scaler = clmad.optim.GradScaler(ctx, **options)
    assert scaler.get_scale() == 1024.0
    inf_at = [0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1]
    host_w = np.array([0.5, -1.25, 2.0, 3.5], np.float32)
    w = ctx.tensor(host_w, requires_grad=True)
    opt = clmad.optim.SGD([w], lr=0.125)
    scale, tracker, taken = np.float32(1024.0), 0, 0
    for step, found in enumerate(inf_at):
        c = (np.arange(1, 5) * 0.375 - step * 0.0625).astype(np.float32)
        if found:
            c[step % 4] = np.inf if step % 2 else np.nan
        scaled = scaler.scale(clmad.sum(w * ctx.tensor(c)))
        scaled.backward()
        stepped = scaler.step(opt)
        scaler.update()  # (a no-op: step() updated the scale)
        assert stepped == (not found), step
        if stepped:
            taken += 1
            host_w = host_w - np.float32(0.125) * c
        scale, tracker = amp_update_scale(scale, tracker, found, options["growth_factor"], options["backoff_factor"],
                                          options["growth_interval"])
        assert scaler.get_scale() == scale, (step, scaler.get_scale(), scale)
        assert opt.steps == taken
        # on a skipped step w is as it was (host_w did not move either)
        np.testing.assert_allclose(w.numpy(), host_w, rtol=0, atol=16 * 2.0 ** -23 * max(1, np.abs(host_w).max()))
        opt.zero_grad()
    assert scale != 1024.0


def _tiny_step(ctx, tiny, scaler=None):
    """f32 master weights cast to f16 for y = 1e-8 x, summed: w.grad, and whether the
    step was taken (lr 0: the unscaled gradient stays to be read)."""
    w = ctx.tensor(np.array([1, 2, 3], np.float32), requires_grad=True)
    loss = clmad.sum(tiny(clmad.cast(w, np.float16)))
    if scaler is None:
        loss.backward()
        return w.grad.numpy(), None
    scaled = scaler.scale(loss)
    assert scaled.dtype == np.float32  # a 16-bit loss scales in float32
    scaled.backward()
    stepped = scaler.step(clmad.optim.SGD([w], lr=0.0))
    return w.grad.numpy(), stepped


def test_grad_scaler_keeps_f16_gradients(ctx):
    """1e-8 is below float16's smallest subnormal (2^-24): unscaled, the gradient is 0.
    The default scale, 2^16, is above float16's largest value (65504): the first step
    finds an inf and is skipped, the scale halves; the second brings 1e-8 back."""
    tiny = ctx.kernel("T tiny(T x) { return x * 1e-8f; }", "tiny")
    g, _ = _tiny_step(ctx, tiny)
    assert (g == 0).all(), g
    scaler = clmad.optim.GradScaler(ctx)
    assert scaler.get_scale() == 65536.0
    g, stepped = _tiny_step(ctx, tiny, scaler)
    assert not stepped and np.isinf(g[0]), g
    assert scaler.get_scale() == 32768.0
    g, stepped = _tiny_step(ctx, tiny, scaler)
    assert stepped
    assert np.all(np.abs(g - np.float32(1e-8)) <= np.float32(1e-8) * 2.0 ** -10), g


def test_grad_scaler_refusals(ctx):
    for bad in (dict(growth_factor=1.0), dict(backoff_factor=1.0), dict(init_scale=1e39), dict(growth_interval=0)):
        with pytest.raises(clmad.InvalidArgumentError, match=next(iter(bad))):
            clmad.optim.GradScaler(ctx, **bad)
    with pytest.raises(clmad.InvalidArgumentError, match="Context"):
        clmad.optim.GradScaler(None)
    scaler = clmad.optim.GradScaler(ctx)
    opt = clmad.optim.SGD([ctx.zeros((2,), requires_grad=True)], lr=0.1)
    with pytest.raises(clmad.StateError, match="no parameter"):
        scaler.step(opt)
    assert scaler.get_scale() == 65536.0  # a refused step leaves the scale
    with pytest.raises(clmad.InvalidArgumentError):
        scaler.scale(np.float32(1.0))
    with pytest.raises(clmad.InvalidArgumentError):
        scaler.step(None)
    with clmad.Context() as other:  # a loss of another context
        with pytest.raises(clmad.InvalidArgumentError, match="another context"):
            scaler.scale(other.scalar(1.0))
    scaler.release()
    with pytest.raises(clmad.ReleasedError):
        scaler.get_scale()
