# SPDX-License-Identifier: Apache-2.0
"""The package's names: `from clmad import *` brings every public function and
class but those that would shadow Python's built-ins. Needs no device."""
import builtins
import types

import clmad

SHADOWING = {"max", "sum", "pow", "slice", "IOError"}


def test_star_import_does_not_shadow_builtins():
    namespace = {}
    exec("from clmad import *", namespace)
    for name in SHADOWING:
        assert name not in namespace, name
    assert namespace["Context"] is clmad.Context and namespace["exp"] is clmad.exp
    assert namespace["optim"] is clmad.optim
    # and the shadowing ones stay reachable as clmad.<name>
    assert clmad.max is not builtins.max and clmad.sum is not builtins.sum and clmad.IOError is not builtins.IOError


def test_all_is_complete_and_shadows_nothing():
    public = {name for name, value in vars(clmad).items()
              if not name.startswith("_") and not isinstance(value, types.ModuleType)}
    public.add("optim")  # the one submodule of the API
    assert set(clmad.__all__) == public - SHADOWING
    assert not set(clmad.__all__) & set(dir(builtins))
    assert len(clmad.__all__) == len(set(clmad.__all__))
