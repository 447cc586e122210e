# SPDX-License-Identifier: Apache-2.0
"""Safetensors files from Python (clmad_save, clmad_load, clmad_safetensors_*):
round trips bit for bit, loading into existing tensors, the errors; and files
of the Python package safetensors both ways, where it is installed."""
import numpy as np
import pytest

import clmad
from conftest import F64_SKIP


def arrays(ctx, rng):
    """One array of each dtype the context takes, and the corner shapes."""
    out = {"w": rng.normal(size=(3, 4)).astype(np.float32), "scalar": np.array(2.5, np.float32),
           "empty": np.zeros((0, 3), np.float32), "labels": rng.integers(-5, 5, 6).astype(np.int32),
           "ids": rng.integers(0, 2**40, (2, 2)).astype(np.int64), "mask": np.array([0, 1, 255], np.uint8),
           "caf\u00e9 \"quoted\"": np.arange(2, dtype=np.float32)}
    if ctx.fp64:
        out["b"] = rng.normal(size=5)
    return out


def same_bits(x, y):
    return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


def test_round_trip_bit_for_bit(ctx, rng, tmp_path):
    data = arrays(ctx, rng)
    path = tmp_path / "model.safetensors"
    clmad.save(path, {name: ctx.tensor(a) for name, a in data.items()}, metadata={"epoch": "3"})
    loaded = ctx.load(path)
    assert list(loaded) == list(data)  # the file's order, the order given
    for name, a in data.items():
        assert isinstance(loaded[name], clmad.Tensor) and same_bits(loaded[name].numpy(), a), name
    assert clmad.read_metadata(path, "epoch") == "3" and clmad.read_metadata(str(path), "other") is None
    some = clmad.load(path, ctx, names=["ids", "w"])
    assert list(some) == ["ids", "w"] and same_bits(some["w"].numpy(), data["w"])


def test_load_into_existing_tensors(ctx, rng, tmp_path):
    w, b = rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=4).astype(np.float32)
    path = tmp_path / "params.safetensors"
    clmad.save(path, [("w", ctx.tensor(w)), ("b", ctx.tensor(b))])
    params = {"w": ctx.zeros((3, 4), requires_grad=True), "b": ctx.zeros(4)}
    assert clmad.load(path, into=params) is params
    assert same_bits(params["w"].numpy(), w) and same_bits(params["b"].numpy(), b)
    # A mismatch changes nothing: every entry is checked before any is written.
    wrong = {"b": ctx.zeros(4), "w": ctx.zeros((4, 3))}
    with pytest.raises(clmad.ShapeError, match="w"):
        clmad.load_into(path, wrong)
    assert not wrong["b"].numpy().any()
    with pytest.raises(clmad.InvalidArgumentError, match="nothere"):
        clmad.load_into(path, {"nothere": ctx.zeros(4)})
    # The tape holds a tensor: refused, as C refuses it.
    x = ctx.zeros(4, requires_grad=True)
    y = (x * 2).sum()
    with pytest.raises(clmad.StateError):
        clmad.load_into(path, {"b": x})
    ctx.tape_clear()
    del y


def test_errors(ctx, tmp_path):
    with pytest.raises(clmad.IOError, match="missing.safetensors") as e:
        ctx.load(tmp_path / "missing.safetensors")
    assert isinstance(e.value, OSError)
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all")
    with pytest.raises(clmad.IOError, match="bad.safetensors"):
        ctx.load(bad)
    t = ctx.zeros(2)
    with pytest.raises(TypeError, match="'a' is a ndarray"):
        clmad.save(tmp_path / "x.safetensors", {"a": np.zeros(2)})
    with pytest.raises(TypeError, match="names are strings"):
        clmad.save(tmp_path / "x.safetensors", {1: t})
    with pytest.raises(clmad.InvalidArgumentError, match="__metadata__"):
        clmad.save(tmp_path / "x.safetensors", {"__metadata__": t})
    with pytest.raises(clmad.InvalidArgumentError, match="context"):
        clmad.load(tmp_path / "x.safetensors")
    with pytest.raises(clmad.IOError, match="no/such/folder"):
        clmad.save(tmp_path / "no/such/folder/x.safetensors", {"a": t})


def test_files_of_the_safetensors_package_both_ways(ctx, rng, tmp_path):
    st = pytest.importorskip("safetensors.numpy", reason="the package safetensors is not installed")
    from safetensors import safe_open
    data = arrays(ctx, rng)
    # clmad -> safetensors
    ours = tmp_path / "from_clmad.safetensors"
    clmad.save(ours, {name: ctx.tensor(a) for name, a in data.items()}, metadata={"written_by": "clmad"})
    theirs_read = st.load_file(str(ours))
    assert sorted(theirs_read) == sorted(data)
    for name, a in data.items():
        assert same_bits(theirs_read[name], a), name
    with safe_open(str(ours), framework="numpy") as f:
        assert f.metadata() == {"written_by": "clmad"}
    # safetensors -> clmad, float16 (test_half.py) and an int16 tensor among them (a dtype clmad has not)
    theirs = tmp_path / "from_python.safetensors"
    halves = np.arange(4, dtype=np.float16) / 3
    st.save_file({**data, "halves": halves, "shorts": np.arange(4, dtype=np.int16)}, str(theirs),
                 metadata={"by": "them"})
    names = [n for n in data] + ["halves"]
    loaded = ctx.load(theirs, names=names)
    for name, a in {**data, "halves": halves}.items():
        assert same_bits(loaded[name].numpy(), a), name
    assert clmad.read_metadata(theirs, "by") == "them"
    with pytest.raises(clmad.UnsupportedError, match="shorts"):
        ctx.load(theirs)


def test_float64_entries_need_fp64(ctx, tmp_path):
    if ctx.fp64:
        pytest.skip("the device has fp64 (this checks the refusal without it)")
    with clmad.Context() as c:
        if not c.fp64:
            pytest.skip(F64_SKIP)
        path = tmp_path / "f64.safetensors"
        clmad.save(path, {"x": c.tensor(np.ones(2))})
    with pytest.raises(clmad.UnsupportedError, match="f64"):
        ctx.load(path)
