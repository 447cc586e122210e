# SPDX-License-Identifier: Apache-2.0
"""The notebook-friendly surface (issue 36, item 6): repr through
clmad_tensor_format, the first run's compile notice on sys.stderr (once, only
when something compiles, off with quiet=True), warm_up, and the digits example
(scikit-learn's 8x8 digits: trains, checkpoints, reloads)."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import clmad
from conftest import new_context

NOTICE = "clmad: compiling OpenCL programs for "
EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")


def test_repr_shows_values_shape_dtype_device(ctx):
    t = ctx.tensor(np.array([[1, 2, 3], [4, 5, 6]], np.float32), requires_grad=True)
    text = repr(t)
    assert text.startswith("clmad.Tensor([[1.0000, 2.0000, 3.0000],\n"), text
    # the second row lines up under the first
    assert "\n              [4.0000, 5.0000, 6.0000]]" in text, text
    assert f'shape=(2, 3), dtype=f32, device="{ctx.device.name}", requires_grad=True)' in text, text
    long = repr(ctx.zeros(5000))
    assert "..." in long and long.count("0.0000") == 6 and "shape=(5000,)" in long, long


def test_repr_of_a_tensor_whose_context_closed():
    c = new_context(quiet=True)
    t = c.tensor(np.float32(2.5))
    c.close()
    assert repr(t) == "clmad.Tensor(2.5000, shape=(), dtype=f32)"


def _work(c):
    x = c.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    return clmad.sum(clmad.exp(x) * 0.5, axis=1).numpy()


def test_compile_notice_once_and_only_when_compiling(tmp_path, capsys):
    c = new_context(cache_dir=tmp_path)
    _work(c)
    compiled = c.stats()["programs_compiled"]
    c.close()
    err = capsys.readouterr().err
    assert compiled > 1 and err.count(NOTICE) == 1, (compiled, err)
    assert "first run only" in err
    # the same work on the filled cache compiles nothing and says nothing
    c = new_context(cache_dir=tmp_path)
    _work(c)
    assert c.stats()["programs_compiled"] == 0
    c.close()
    assert NOTICE not in capsys.readouterr().err


def test_quiet_context_says_nothing(tmp_path, capsys):
    c = new_context(cache_dir=tmp_path, quiet=True)
    _work(c)
    assert c.stats()["programs_compiled"] > 0
    c.close()
    assert NOTICE not in capsys.readouterr().err


def test_warm_up_then_a_first_run_compiles_no_internal_program(tmp_path, capsys):
    c = new_context(cache_dir=tmp_path)
    done = c.warm_up(gemm=False, training=False)
    c.close()
    programs = 14 if _fp64() else 10  # ops, axis, train, index per float dtype; ops, index per integer one
    assert done["programs_compiled"] == programs and done["seconds"] > 0, done
    err = capsys.readouterr().err
    assert f"{programs} of {programs}: index.cl for u8" in err and NOTICE not in err, err
    c = new_context(cache_dir=tmp_path)
    t = c.rand_uniform((4, 5), seed=3)
    assert float(clmad.sum(t).item()) == pytest.approx(t.numpy().sum(), rel=1e-5)
    assert c.stats()["programs_compiled"] == 0 and c.stats()["programs_from_disk"] > 0
    c.close()


def _fp64():
    with new_context(quiet=True) as c:
        return c.fp64


def test_warm_up_function_refuses_an_unknown_device():
    with pytest.raises(clmad.NoDeviceError):
        clmad.warm_up(device="no such device anywhere")


def test_digits_example_learns_and_reloads(tmp_path):
    pytest.importorskip("sklearn")
    p = subprocess.run([sys.executable, os.path.join(EXAMPLES, "digits.py"), "3", str(tmp_path)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    accuracies = [float(a) for a in re.findall(r"^epoch .* test accuracy (\d\.\d+)", p.stdout, re.M)]
    # three epochs reach 0.95 (0.9556 on POCL); a wrong gradient stays near 0.1
    assert len(accuracies) == 3 and accuracies[-1] >= 0.9, p.stdout
    reloaded = float(re.search(r"reloaded model's test accuracy (\d\.\d+)", p.stdout).group(1))
    assert reloaded == accuracies[-1], p.stdout
    assert os.path.exists(tmp_path / "digits.safetensors")
    assert clmad.read_metadata(str(tmp_path / "digits.safetensors"), "epochs") == "3"
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "no plot" in p.stdout
    else:
        assert (tmp_path / "digits.png").stat().st_size > 1000


def test_warm_up_training_step_needs_an_empty_tape(tmp_path):
    with new_context(cache_dir=tmp_path, quiet=True) as c:
        w = c.tensor(np.ones(3, np.float32), requires_grad=True)
        y = clmad.exp(w)
        with pytest.raises(clmad.StateError, match="the tape holds"):
            c.warm_up(programs=False, gemm=False)
        del y
