# SPDX-License-Identifier: Apache-2.0
"""The binding checks itself: the struct layouts and the constants that this
package copies from include/clmad.h by hand, against those the loaded
library was built with (clmad_abi_struct_size, clmad_abi_field,
clmad_abi_constant). `import clmad` runs check(), which refuses a library
that differs, naming every difference."""
from ctypes import byref, c_int64, c_size_t, sizeof


def copied_structs():
    """C name -> the ctypes Structure of this package that mirrors it."""
    from . import _lib
    return {"clmad_device_info": _lib.DeviceInfo, "clmad_options": _lib.Options, "clmad_tuning": _lib.Tuning,
            "clmad_stats": _lib.Stats, "clmad_optimizer_options": _lib.OptimizerOptions,
            "clmad_grad_scaler_options": _lib.GradScalerOptions, "clmad_safetensors_entry": _lib.SafetensorsEntry}


def copied_constants():
    """C name -> the value this package uses for it, wherever it keeps it."""
    from . import _lib, errors
    from .context import Context, _TYPES
    constants = {"CLMAD_MAX_DIMS": _lib.MAX_DIMS, "CLMAD_OK": 0}
    constants.update({"CLMAD_WARM_UP_PROGRAMS": _lib.WARM_UP_PROGRAMS, "CLMAD_WARM_UP_GEMM": _lib.WARM_UP_GEMM,
                      "CLMAD_WARM_UP_TRAINING": _lib.WARM_UP_TRAINING})
    for name in ("F32", "F64", "I32", "I64", "U8", "F16", "BF16", "LT", "LE", "GT", "GE", "EQ", "NE",
                 "OPTIM_SGD", "OPTIM_ADAM", "OPTIM_ADAMW"):
        constants["CLMAD_" + name] = getattr(_lib, name)
    for name in ("CHUNK_CAP", "POOL_LIMIT_BYTES", "RETAIN_TAPE", "DISABLE_GRAD", "PARTIALS_POLICY"):
        constants["CLMAD_PARAM_" + name] = getattr(_lib, "PARAM_" + name)
    for cls, name in ((errors.InvalidArgumentError, "INVALID_ARGUMENT"), (errors.NoDeviceError, "NO_DEVICE"),
                      (errors.OpenCLError, "OPENCL"), (errors.OutOfMemoryError, "OUT_OF_MEMORY"),
                      (errors.BuildError, "BUILD"), (errors.UnsupportedError, "UNSUPPORTED"),
                      (errors.ShapeError, "SHAPE"), (errors.DtypeError, "DTYPE"), (errors.IOError, "IO"),
                      (errors.StateError, "STATE"), (errors.ConcurrentUseError, "CONCURRENT_USE")):
        constants["CLMAD_ERR_" + name] = cls.status
    for value, name in _TYPES.items():
        constants["CLMAD_DEVICE_" + name.upper()] = value
    for value, name in enumerate(Context._POLICIES):
        constants["CLMAD_PARTIALS_" + name.upper()] = value
    return constants


def mismatches(structs=None, constants=None):
    """The differences between this package's copies (copied_structs(),
    copied_constants() unless given) and the library's, as a list of texts
    (empty when they agree)."""
    from . import _lib
    lib = _lib.lib
    structs = copied_structs() if structs is None else structs
    constants = copied_constants() if constants is None else constants
    found = []
    size, offset = c_size_t(), c_size_t()
    for c_name, struct in structs.items():
        if lib.clmad_abi_struct_size(c_name.encode(), byref(size)):
            found.append(f"the library has no struct {c_name}")
            continue
        if size.value != sizeof(struct):
            found.append(f"{c_name} is {size.value} bytes in the library, {sizeof(struct)} here")
        for field, _ in struct._fields_:
            mine = getattr(struct, field)
            if lib.clmad_abi_field(c_name.encode(), field.encode(), byref(offset), byref(size)):
                found.append(f"the library's {c_name} has no field {field}")
            elif (offset.value, size.value) != (mine.offset, mine.size):
                found.append(f"{c_name}.{field} is at offset {offset.value}, {size.value} bytes, in the "
                             f"library; at {mine.offset}, {mine.size} bytes, here")
    value = c_int64()
    for c_name, mine in constants.items():
        if lib.clmad_abi_constant(c_name.encode(), byref(value)):
            found.append(f"the library has no constant {c_name}")
        elif value.value != mine:
            found.append(f"{c_name} is {value.value} in the library, {mine} here")
    return found


def check():
    """Raises ImportError, naming each difference, when the library's layouts or
    constants differ from this package's copies."""
    from . import _lib
    found = mismatches()
    if found:
        raise ImportError(f"clmad: the C library {_lib.path} does not match this package (built from another "
                          "clmad.h): " + "; ".join(found) + ". Reinstall the package, or set CLMAD_LIBRARY "
                          "to a library built from the same sources")
