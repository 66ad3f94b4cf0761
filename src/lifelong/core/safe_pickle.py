"""Reading pickles that come from elsewhere (CIFAR batches, ImageNet-CoG's released files) without running code.

Unpickling calls whatever a pickle names, so a file from elsewhere is read by `DataUnpickler`, which builds the
data kinds pickle encodes by itself (dict, list, tuple, str, bytes, numbers, bool, None), sets, and numpy arrays
and scalars, and refuses every other class or function by name before anything runs.
"""

from __future__ import annotations

import codecs
import io
import os
import pickle
from typing import Any

import numpy as np

_NUMPY_RECONSTRUCT = np.ndarray.__reduce__(np.zeros(1))[0]
_NUMPY_SCALAR = np.float64(0).__reduce__()[0]
ALLOWED: dict[tuple[str, str], Any] = {
    ("numpy.core.multiarray", "_reconstruct"): _NUMPY_RECONSTRUCT,
    ("numpy._core.multiarray", "_reconstruct"): _NUMPY_RECONSTRUCT,
    ("numpy.core.multiarray", "scalar"): _NUMPY_SCALAR,
    ("numpy._core.multiarray", "scalar"): _NUMPY_SCALAR,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("_codecs", "encode"): codecs.encode,  # bytes in protocol-2 pickles written by Python 3
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("__builtin__", "set"): set,  # Python 2 pickles
    ("__builtin__", "frozenset"): frozenset,
}


class UnsafePickleError(pickle.UnpicklingError):
    """A pickle that references a class or function outside the data kinds `DataUnpickler` builds."""


class DataUnpickler(pickle.Unpickler):
    """An Unpickler that builds data only (see the module docstring); `what` names the file in its error."""

    def __init__(self, file: Any, *, what: str = "this pickle", **kwargs: Any) -> None:
        super().__init__(file, **kwargs)
        self.what = what

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in ALLOWED:
            return ALLOWED[(module, name)]
        raise UnsafePickleError(
            f"{self.what} references {module}.{name}; only plain data (lists, dicts, strings, numbers, numpy "
            "arrays) is read from a pickle that comes from elsewhere, since unpickling anything else runs code"
        )


def load_data_pickle(source: str | os.PathLike | bytes, *, what: str | None = None, encoding: str = "ASCII") -> Any:
    """The data a pickle file (or its bytes) holds, read by `DataUnpickler`. `encoding`: "bytes" keeps Python 2
    strings as bytes (CIFAR). Raises UnsafePickleError for a pickle that would run code, pickle.UnpicklingError
    (or EOFError, ValueError) for one that is not a pickle."""
    if isinstance(source, bytes):
        return DataUnpickler(io.BytesIO(source), what=what or "this pickle", encoding=encoding).load()
    with open(source, "rb") as f:
        return DataUnpickler(f, what=what or repr(os.fspath(source)), encoding=encoding).load()
