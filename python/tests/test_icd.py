# SPDX-License-Identifier: Apache-2.0
"""clmad/_icd.py: the pip POCL (pocl-binary-distribution) is given to the
OpenCL loader only when the loader would find no other ICD, and an ICD the
user has is never hidden. A stand-in of that package in a temporary
site folder (its ICD file, its library) plays the pip POCL."""
import importlib
import os
import sys

import pytest

from clmad import _icd


@pytest.fixture
def pip_pocl(tmp_path, monkeypatch):
    """A fake pocl-binary-distribution on sys.path; returns its library."""
    site = tmp_path / "site"
    (site / "pocl_binary_distribution").mkdir(parents=True)
    (site / "pocl_binary_distribution" / "__init__.py").write_text("")
    libs = site / "pyopencl" / ".libs"
    libs.mkdir(parents=True)
    (libs / "pocl.icd").write_text("libpocl-test.so\n")
    (libs / "libpocl-test.so").write_bytes(b"")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    yield str(libs / "libpocl-test.so")
    sys.modules.pop("pocl_binary_distribution", None)


@pytest.fixture
def vendors(tmp_path, monkeypatch):
    """An empty vendors folder named by OCL_ICD_VENDORS."""
    folder = tmp_path / "vendors"
    folder.mkdir()
    monkeypatch.setenv("OCL_ICD_VENDORS", str(folder))
    monkeypatch.delenv("OPENCL_VENDOR_PATH", raising=False)
    return folder


def test_no_other_icd_gives_the_loader_the_pip_pocl(vendors, pip_pocl):
    assert _icd.use_pip_pocl_if_alone() == pip_pocl
    assert os.environ["OCL_ICD_VENDORS"] == pip_pocl


def test_an_icd_in_the_vendors_folder_is_not_hidden(vendors, pip_pocl):
    (vendors / "system.icd").write_text("libsomething.so\n")
    assert _icd.use_pip_pocl_if_alone() is None
    assert os.environ["OCL_ICD_VENDORS"] == str(vendors)


def test_an_icd_named_by_ocl_icd_vendors_is_not_hidden(vendors, pip_pocl, monkeypatch):
    icd = vendors / "mine.icd"
    icd.write_text("libmine.so\n")
    monkeypatch.setenv("OCL_ICD_VENDORS", str(icd))
    assert _icd.use_pip_pocl_if_alone() is None
    assert os.environ["OCL_ICD_VENDORS"] == str(icd)


def test_opencl_vendor_path_counts_when_ocl_icd_vendors_is_unset(vendors, pip_pocl, monkeypatch):
    (vendors / "system.icd").write_text("libsomething.so\n")
    monkeypatch.delenv("OCL_ICD_VENDORS")
    monkeypatch.setenv("OPENCL_VENDOR_PATH", str(vendors))
    assert _icd.configured_vendors() == str(vendors)
    assert _icd.use_pip_pocl_if_alone() is None
    assert "OCL_ICD_VENDORS" not in os.environ


def test_files_that_are_not_icds_do_not_count(vendors, pip_pocl):
    (vendors / "README").write_text("not an ICD\n")
    assert _icd.use_pip_pocl_if_alone() == pip_pocl


def test_without_the_package_nothing_changes(vendors, monkeypatch):
    monkeypatch.setattr(_icd, "find_spec", lambda name: None)
    assert _icd.use_pip_pocl_if_alone() is None
    assert os.environ["OCL_ICD_VENDORS"] == str(vendors)


def test_a_missing_library_is_not_chosen(vendors, pip_pocl):
    os.remove(pip_pocl)
    assert _icd.use_pip_pocl_if_alone() is None
    assert os.environ["OCL_ICD_VENDORS"] == str(vendors)
