# SPDX-License-Identifier: Apache-2.0
"""The examples of python/examples run (small sizes) and pass their own checks
(exit status 0: the loss fell, the gradients matched)."""
import os
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")


@pytest.mark.parametrize("name, args", [("mlp.py", []), ("newton.py", ["200"]),
                                        ("hmlstm.py", ["60", "6", "16", "8"])])
def test_example_runs_and_checks_itself(name, args):
    p = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *args], capture_output=True, text=True,
                       timeout=600)
    if p.returncode == 77:  # the example said why (a device without fp64)
        pytest.skip(p.stderr.strip())
    assert p.returncode == 0, p.stdout + p.stderr


def test_mlp_example_is_short():
    with open(os.path.join(EXAMPLES, "mlp.py")) as f:
        assert len(f.readlines()) <= 30
