# SPDX-License-Identifier: Apache-2.0
"""The exceptions: one class per clmad_status, all under clmad.Error.

Each carries the status (`.status`, its C name in `.status_name`) and the
library's message (clmad_last_error), which is also the text of the
exception. Where a Python built-in exception means the same, the class
derives from it too (ShapeError is a ValueError, OutOfMemoryError a
MemoryError, ...), so that generic handlers catch them.
"""
from . import _lib


class Error(Exception):
    """A clmad call failed. status: the clmad_status value; message: clmad_last_error."""
    status = -1

    def __init__(self, message, status=None):
        super().__init__(message)
        if status is not None:
            self.status = status
        self.message = message

    @property
    def status_name(self):
        if self.status < 0:
            return "(python)"
        return _lib.lib.clmad_status_string(self.status).decode()


class InvalidArgumentError(Error, ValueError):
    status = 1


class NoDeviceError(Error):
    status = 2


class OpenCLError(Error):
    status = 3


class OutOfMemoryError(Error, MemoryError):
    status = 4


class BuildError(Error):
    """A kernel's source was refused or did not compile: the message has the compiler's log."""
    status = 5


class UnsupportedError(Error):
    status = 6


class ShapeError(Error, ValueError):
    status = 7


class DtypeError(Error, TypeError):
    status = 8


class IOError(Error, OSError):  # noqa: A001 (clmad.IOError, not the builtin)
    status = 9


class StateError(Error):
    status = 10


class ConcurrentUseError(Error):
    status = 11


class ReleasedError(StateError):
    """The object was released (release(), close(), or the end of its scope)."""


_BY_STATUS = {c.status: c for c in (InvalidArgumentError, NoDeviceError, OpenCLError, OutOfMemoryError,
                                    BuildError, UnsupportedError, ShapeError, DtypeError, IOError,
                                    StateError, ConcurrentUseError)}


# The library's advice names C calls; from Python it reads in Python's terms.
_PYTHON_TERMS = (("after clmad_backward", "after backward()"), ("by clmad_backward", "by backward()"),
                 ("(clmad_tape_clear)", "(ctx.tape_clear())"), ("or clmad_tape_clear", "or ctx.tape_clear()"),
                 ("with clmad_set_retain_tape", "with ctx.retain_tape() or Context(retain_tape=True)"),
                 ("clmad_set_retain_tape)", "ctx.retain_tape() or Context(retain_tape=True))"),
                 ("use clmad_mul for a scalar", "use * for a scalar"))


def python_terms(message):
    """message with the advice of the C library in Python's terms; the name of the
    call that failed, "clmad_xxx: " at its start, stays."""
    call, sep, rest = message.partition(": ")
    if not sep or not call.startswith("clmad_") or " " in call:
        call, sep, rest = "", "", message
    for c_terms, python in _PYTHON_TERMS:
        rest = rest.replace(c_terms, python)
    return call + sep + rest


def raise_for(status, ctx_handle=None):
    """Raises the exception of a failed status, with clmad_last_error's message
    (its advice in Python's terms)."""
    raw = _lib.lib.clmad_last_error(ctx_handle)
    message = python_terms(raw.decode(errors="replace")) if raw else ""
    cls = _BY_STATUS.get(status, Error)
    raise cls(message or _lib.lib.clmad_status_string(status).decode(), status)


def check(status, ctx_handle=None):
    if status != 0:
        raise_for(status, ctx_handle)
