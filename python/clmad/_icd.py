# SPDX-License-Identifier: Apache-2.0
"""The POCL from pip (pocl-binary-distribution, the extra clmad[pocl]) as
the OpenCL platform of last resort.

The wheel bundles the ocl-icd loader, which finds OpenCL implementations
through ICD files: those of the folder OCL_ICD_VENDORS names (else
OPENCL_VENDOR_PATH, else /etc/OpenCL/vendors), or the one ICD that
OCL_ICD_VENDORS names when it is not a folder. When that source holds no
ICD at all, and only then, OCL_ICD_VENDORS is set to the pip POCL's
library, the way PyOpenCL's wheels find it: an ICD the user has, in the
system folder or named by OCL_ICD_VENDORS, is never hidden. This must run
before the first OpenCL call, which is when the loader reads the variable.
"""
import os
from importlib.util import find_spec

SYSTEM_VENDORS = "/etc/OpenCL/vendors"


def configured_vendors():
    """Where the ocl-icd loader looks for ICDs (its own order of variables)."""
    return os.environ.get("OCL_ICD_VENDORS") or os.environ.get("OPENCL_VENDOR_PATH") or SYSTEM_VENDORS


def has_icd(vendors):
    """Whether the loader has an ICD to try: a folder with a *.icd file in
    it, or anything else that exists (OCL_ICD_VENDORS naming one ICD)."""
    if os.path.isdir(vendors):
        try:
            return any(name.endswith(".icd") for name in os.listdir(vendors))
        except OSError:
            return False
    return os.path.exists(vendors)


def pip_pocl_library():
    """The absolute path of pocl-binary-distribution's libpocl, or None when
    that package is not installed. Its ICD file (pyopencl/.libs/pocl.icd,
    beside the package in site-packages) names the library, which lies in
    the same folder."""
    try:
        spec = find_spec("pocl_binary_distribution")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    site = os.path.dirname(os.path.dirname(spec.origin))
    icd = os.path.join(site, "pyopencl", ".libs", "pocl.icd")
    try:
        with open(icd) as f:
            name = f.readline().strip()
    except OSError:
        return None
    library = name if os.path.isabs(name) else os.path.join(os.path.dirname(icd), name)
    return library if name and os.path.isfile(library) else None


def use_pip_pocl_if_alone():
    """Points the loader at the pip POCL when it would find no ICD otherwise.
    Returns the library it chose, or None (nothing changed)."""
    if has_icd(configured_vendors()):
        return None
    library = pip_pocl_library()
    if library:
        os.environ["OCL_ICD_VENDORS"] = library
    return library


pip_pocl = use_pip_pocl_if_alone()
