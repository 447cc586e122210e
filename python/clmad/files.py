# SPDX-License-Identifier: Apache-2.0
"""Safetensors files (clmad_save, clmad_load, clmad_safetensors_*): the format
of PyTorch, JAX and Hugging Face models, read and written by the C library."""
import os
from ctypes import byref, c_void_p

from . import _lib
from .errors import InvalidArgumentError, raise_for
from .tensor import Tensor

L = _lib.lib


def _path(path):
    return os.fsencode(os.fspath(path))


def _named_tensors(tensors, call):
    """(names, Tensors) of a dict name -> Tensor (or of (name, Tensor) pairs)."""
    items = list(tensors.items() if hasattr(tensors, "items") else tensors)
    for name, t in items:
        if not isinstance(name, str):
            raise TypeError(f"{call}: tensor names are strings, not {type(name).__name__}")
        if not isinstance(t, Tensor):
            raise TypeError(f"{call}: {name!r} is a {type(t).__name__}, not a clmad.Tensor")
    return [name for name, _ in items], [t for _, t in items]


def save(path, tensors, metadata=None):
    """Writes tensors (a dict name -> Tensor) to a safetensors file at path, whole or
    not at all; metadata: a dict of strings, the file's "__metadata__"."""
    names, ts = _named_tensors(tensors, "save")
    meta = None
    if metadata:
        flat = []
        for key, value in metadata.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise TypeError(f"save: metadata keys and values are strings, not {key!r}: {value!r}")
            flat += [key, value]
        meta = _lib.string_array(flat, terminated=True)
    status = L.clmad_save(_path(path), _lib.string_array(names), _lib.tensor_array([t._handle for t in ts]),
                          len(ts), meta)
    if status:
        raise_for(status, ts[0]._ctx._raw if ts else None)


def load_into(path, tensors):
    """Overwrites the existing tensors (a dict name -> Tensor) with the file's tensors
    of those names, which must have their shapes and dtypes; all are checked before
    any is written (a "load_state_dict"). Returns tensors."""
    names, ts = _named_tensors(tensors, "load")
    if not ts:
        return tensors
    ctx = ts[0]._ctx
    status = L.clmad_load(ctx._live, _path(path), _lib.string_array(names),
                          _lib.tensor_array([t._handle for t in ts]), len(ts))
    if status:
        raise_for(status, ctx._raw)
    return tensors


class _File:
    """An open safetensors file (its checked header), closed on exit."""

    def __init__(self, path):
        self._h = c_void_p()
        status = L.clmad_safetensors_open(_path(path), byref(self._h))
        if status:
            raise_for(status, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        L.clmad_safetensors_close(self._h)

    def names(self):
        entry = _lib.SafetensorsEntry()
        out = []
        for i in range(L.clmad_safetensors_count(self._h)):
            if L.clmad_safetensors_entry_at(self._h, i, byref(entry)) == 0:
                out.append(entry.name.decode())
        return out

    def metadata(self, key):
        value = L.clmad_safetensors_metadata(self._h, key.encode())
        return None if value is None else value.decode()

    def read(self, ctx, name):
        out = _lib.tensor_p()
        status = L.clmad_safetensors_read(ctx._live, self._h, name.encode(), byref(out))
        if status:
            raise_for(status, ctx._raw)
        return Tensor(ctx, out.value)


def load(path, ctx=None, names=None, into=None):
    """The tensors of a safetensors file: new tensors of ctx, as a dict name ->
    Tensor in the file's order (names: only those), or, with into (a dict name ->
    existing Tensor), those overwritten in place (load_into)."""
    if into is not None:
        if ctx is not None or names is not None:
            raise InvalidArgumentError("load: into= loads into existing tensors; give no ctx or names with it")
        return load_into(path, into)
    if ctx is None:
        raise InvalidArgumentError("load: give the context for the new tensors (ctx.load(path)), or into=")
    with _File(path) as f:
        wanted = f.names() if names is None else list(names)
        return {name: f.read(ctx, name) for name in wanted}


def read_metadata(path, key):
    """The value of key in the file's "__metadata__", or None."""
    with _File(path) as f:
        return f.metadata(key)
