# SPDX-License-Identifier: Apache-2.0
"""The binding checks itself (clmad/_abi.py): the structs and constants copied
from clmad.h by hand agree with the library's, and a difference is refused
with a message that names it. Needs no device."""
import ctypes
import ctypes.util
import os
import re
import subprocess
import sys

import pytest

import clmad
from clmad import _abi, _lib, errors

HEADER = os.path.join(os.path.dirname(__file__), "..", "..", "include", "clmad.h")


def test_the_copies_agree_with_the_library():
    assert _abi.mismatches() == []
    _abi.check()  # (import ran it too)
    # Every struct the package mirrors, and every constant it copies, is checked.
    assert set(_abi.copied_structs()) == {"clmad_device_info", "clmad_options", "clmad_tuning", "clmad_stats",
                                          "clmad_optimizer_options", "clmad_safetensors_entry",
                                          "clmad_grad_scaler_options"}
    assert len(_abi.copied_constants()) >= 39


def test_a_wrong_constant_is_refused_by_name(monkeypatch):
    monkeypatch.setattr(_lib, "F64", 7)
    monkeypatch.setattr(errors.ShapeError, "status", 70)
    with pytest.raises(ImportError) as e:
        _abi.check()
    text = str(e.value)
    assert "CLMAD_F64 is 1 in the library, 7 here" in text
    assert "CLMAD_ERR_SHAPE is 7 in the library, 70 here" in text
    assert _lib.path in text and "CLMAD_F32" not in text


def test_a_wrong_struct_is_refused_by_name(monkeypatch):
    fields = list(_lib.Stats._fields_)
    fields[0], fields[1] = fields[1], fields[0]  # two counters swapped: same size, other offsets
    Swapped = type("Stats", (ctypes.Structure,), {"_fields_": fields})
    Short = type("Tuning", (ctypes.Structure,), {"_fields_": _lib.Tuning._fields_[:-1]})
    Wide = type("Options", (ctypes.Structure,), {"_fields_": _lib.Options._fields_ + [("later", ctypes.c_int)]})
    monkeypatch.setattr(_lib, "Stats", Swapped)
    monkeypatch.setattr(_lib, "Tuning", Short)
    monkeypatch.setattr(_lib, "Options", Wide)
    found = _abi.mismatches()
    assert "clmad_stats.programs_from_disk is at offset 8, 8 bytes, in the library; at 0, 8 bytes, here" in found
    assert any(f.startswith("clmad_tuning is 268 bytes in the library") for f in found), found
    assert "the library's clmad_options has no field later" in found
    with pytest.raises(ImportError, match="clmad_stats.programs_compiled"):
        _abi.check()


def test_names_the_library_lacks_are_reported():
    found = _abi.mismatches(structs={"clmad_widget": _lib.Stats}, constants={"CLMAD_F8": 5, "CLMAD_F32": 0})
    assert found == ["the library has no struct clmad_widget", "the library has no constant CLMAD_F8"]


def test_a_library_without_a_function_is_refused_at_import():
    env = dict(os.environ, CLMAD_LIBRARY=ctypes.util.find_library("m") or "libm.so.6")
    p = subprocess.run([sys.executable, "-c", "import clmad"], env=env, capture_output=True, text=True)
    assert p.returncode != 0
    assert "ImportError: clmad: the C library" in p.stderr and "has no function clmad_" in p.stderr, p.stderr


def _header():
    if not os.path.exists(HEADER):
        pytest.skip("include/clmad.h is not beside these tests (an installed copy of them)")
    with open(HEADER) as f:
        return re.sub(r"/\*.*?\*/", " ", f.read(), flags=re.S)


def test_every_constant_of_the_header_is_the_librarys():
    text = _header()
    constants = {m[0]: int(m[1]) for m in re.findall(r"\b(CLMAD_[A-Z0-9_]+) = (\d+)", text)}
    constants.update({m[0]: int(m[1]) for m in re.findall(r"X\((CLMAD_[A-Z0-9_]+), (\d+),", text)})
    constants["CLMAD_MAX_DIMS"] = int(re.search(r"#define CLMAD_MAX_DIMS (\d+)", text)[1])
    assert len(constants) >= 40 and constants["CLMAD_ERR_CONCURRENT_USE"] == 11
    assert _abi.mismatches(structs={}, constants=constants) == []
    # and the package's copies are a part of them, with the header's values
    for name, value in _abi.copied_constants().items():
        assert constants[name] == value, name


def test_the_mirrored_structs_have_the_headers_fields_in_order():
    text = _header()
    for c_name, struct in _abi.copied_structs().items():
        body = re.search(r"typedef struct " + c_name + r" \{(.*?)\} " + c_name + ";", text, re.S)[1]
        fields = []
        for declaration in body.split(";")[:-1]:
            # "uint64_t a", "double beta1, beta2", "char name[128]", "const char *device"
            for part in declaration.split(","):
                fields.append(re.search(r"(\w+)\s*(\[[^\]]*\])?\s*$", part.strip())[1])
        assert [f for f, _ in struct._fields_] == fields, c_name


def test_the_device_reports_its_memory_model():
    info = clmad.devices()[0]
    assert isinstance(info.host_unified_memory, bool)
    if info.type == "cpu":
        assert info.host_unified_memory
