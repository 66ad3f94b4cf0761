"""Reading pickles that come from elsewhere (CIFAR batches, ImageNet-CoG's released files) without running code,
and without letting a few forged bytes take the machine's memory, stack or time.

`load_data_pickle` is the way in. It reads the file into memory once (at most `max_bytes`), pre-scans its opcodes
(lifelong.core.pickle_limits: every length field must fit in the bytes left and every memo index in the objects
built before it, the objects built are counted and their nesting depth tracked), unpickles it with `DataUnpickler`
(the C unpickler,
which builds the data kinds pickle encodes by itself (dict, list, tuple, str, bytes, numbers, bool, None), sets,
and numpy arrays and scalars, refuses every other class or function by name before anything runs, and checks each
array's claimed size before numpy allocates it), then walks the result once (`_walk`: an explicit stack; a shared
object is walked once but its items count each time it is reached) to bound its items and depth.

The budgets are keyword parameters of `load_data_pickle`; the defaults fit CIFAR batches (<= 160 MB) and
ImageNet-CoG's files (5 x 1,000 wnids; ~6.75M image paths) with room to spare:
- max_bytes = 2 GiB: the file's size.
- max_items = 20,000,000: objects the pickle builds, and items reached walking the result (shared ones each time).
- max_depth = 100: containers nested in containers.
Every refusal, and a MemoryError or RecursionError on the way, is a `PickleLimitError` (an `UnsafePickleError`)
whose message names the file, what was passed, and the parameter that sets it.
"""

from __future__ import annotations

import codecs
import io
import math
import operator
import os
import pickle
from itertools import chain
from typing import Any

import numpy as np

from lifelong.core.pickle_limits import (  # noqa: F401 (the errors and budgets are public here too)
    MAX_BYTES,
    MAX_DEPTH,
    MAX_ITEMS,
    Limits,
    PickleLimitError,
    UnsafePickleError,
    scan,
)

_NUMPY_SCALAR = np.float64(0).__reduce__()[0]


# ---------------------------------------------------------------------------------------------------------------
# The classes and functions a pickle may name. Arrays are checked before numpy sizes them from their claims.


class _CheckedArray(np.ndarray):
    """The array `_reconstruct` gives a pickle: its state is checked before numpy allocates it (an object array's
    allocation follows its claimed shape, not its data); `_walk` turns it back into a plain ndarray."""

    _limits: Limits

    def __setstate__(self, state: Any) -> None:
        if not isinstance(state, tuple) or len(state) not in (4, 5):
            raise TypeError(f"{self._limits.what}: an array's pickled state is a {type(state).__name__}, not a tuple")
        shape, dtype, _, data = state[-4:]
        _check_claim(self._limits, shape, dtype, data)
        np.ndarray.__setstate__(self, state)


def _check_claim(lim: Limits, shape: Any, dtype: Any, data: Any) -> None:
    """Refuse an array whose items have size 0, whose shape claims more than its data holds, or which holds
    objects other than through a plain object dtype and a list with one item per element."""
    if not isinstance(dtype, np.dtype):
        raise TypeError(f"{lim.what}: an array's dtype is a {type(dtype).__name__}")
    dims = [operator.index(d) for d in (shape if isinstance(shape, tuple | list) else (shape,))]
    count = math.prod(dims)  # numpy refuses a negative dimension
    array = f"an array of shape {tuple(dims)} and dtype {dtype}"
    if dtype.itemsize == 0:
        raise lim.refuse(f"holds {array}: its {count:,} items have size 0, so any length costs nothing to claim")
    if dtype.hasobject:
        if dtype != np.dtype(object):
            raise lim.refuse(f"holds {array}: only plain object arrays are read, not structured ones holding objects")
        if not isinstance(data, list) or len(data) != count:
            listed = f"a list of {len(data):,} items" if isinstance(data, list) else f"a {type(data).__name__}"
            raise lim.refuse(f"holds {array} whose data is {listed}, not one item per element")
        if count > lim.max_items:
            raise lim.refuse(f"holds {array} of more than {lim.max_items:,} items", "max_items")
        return
    held = len(data) if isinstance(data, bytes | str) else memoryview(data).nbytes
    if held != count * dtype.itemsize:
        raise lim.refuse(f"holds {array}: {count * dtype.itemsize:,} bytes claimed, {held:,} in the file")


def _hooks(lim: Limits) -> dict[tuple[str, str], Any]:
    """What each allowed (module, name) gives this load: closures, so a BUILD on one changes nothing shared."""

    def ndarray(*args: Any, **kwargs: Any) -> Any:  # only ever _reconstruct's first argument
        raise lim.refuse("calls numpy.ndarray directly, which allocates any shape asked")

    def reconstruct(subtype: Any, shape: Any, code: Any) -> _CheckedArray:
        if subtype is not ndarray or shape != (0,) or code not in (b"b", "b"):
            raise lim.refuse(f"calls numpy's _reconstruct with {shape!r} and {code!r}, not as numpy pickles arrays")
        array = _CheckedArray((0,), np.int8)
        array._limits = lim
        return array

    def frombuffer(buf: Any, dtype: Any, shape: Any, order: str, axis_order: Any = None) -> np.ndarray:
        _check_claim(lim, shape, dtype, buf)
        array = np.frombuffer(buf, dtype=dtype)
        if order == "K" and axis_order is not None:
            return array.reshape(shape, order="C").transpose(axis_order)
        return array.reshape(shape, order=order)

    def scalar(dtype: Any, data: Any = None) -> Any:
        size = len(data) if isinstance(data, bytes | str) else -1
        if not isinstance(dtype, np.dtype) or dtype.hasobject or size < dtype.itemsize:
            given = f"{size:,} bytes" if size >= 0 else f"a {type(data).__name__}"
            raise lim.refuse(f"calls numpy's scalar with {dtype!r} and {given}, not a dtype of numbers and its bytes")
        return _NUMPY_SCALAR(dtype, data)

    def latin1(text: str = "", encoding: str = "latin1") -> bytes:  # Python 3's bytes in protocol-2 pickles
        if not isinstance(text, str | bytes) or encoding not in ("latin1", "latin-1"):
            given = f"a {type(text).__name__} and {encoding!r}"
            raise lim.refuse(f"makes bytes of {given}: only latin1 text is read (bytes of a number allocate it)")
        return text if isinstance(text, bytes) else codecs.encode(text, "latin1")

    def to_bytearray(*args: Any) -> bytearray:
        return bytearray(latin1(*args))

    hooks = {("numpy", "ndarray"): ndarray, ("numpy", "dtype"): np.dtype, ("_codecs", "encode"): latin1}
    for package in ("numpy.core", "numpy._core"):  # numpy 1 and numpy 2
        hooks[(f"{package}.multiarray", "_reconstruct")] = reconstruct
        hooks[(f"{package}.multiarray", "scalar")] = scalar
        hooks[(f"{package}.numeric", "_frombuffer")] = frombuffer
    for module in ("builtins", "__builtin__"):  # Python 2 pickles name __builtin__
        hooks |= {(module, "set"): set, (module, "frozenset"): frozenset, (module, "bytes"): latin1}
        hooks[(module, "bytearray")] = to_bytearray
    return hooks


class DataUnpickler(pickle.Unpickler):
    """An Unpickler that builds data only (see the module docstring); `what` names the file in its errors. Use it
    through `load_data_pickle`, which adds the pre-scan and the walk that bound resources."""

    def __init__(
        self, file: Any, *, what: str = "this pickle", max_items: int = MAX_ITEMS, max_depth: int = MAX_DEPTH,
        **kwargs: Any,
    ) -> None:  # fmt: skip
        super().__init__(file, **kwargs)
        self.what = what
        self._hooks = _hooks(Limits(what, max_items=max_items, max_depth=max_depth))

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self._hooks:
            return self._hooks[(module, name)]
        raise UnsafePickleError(
            f"{self.what} references {module}.{name}; only plain data (lists, dicts, strings, numbers, numpy "
            "arrays) is read from a pickle that comes from elsewhere, since unpickling anything else runs code"
        )


# ---------------------------------------------------------------------------------------------------------------
# The walk of the result: items counted with multiplicity (each shared object walked once, its count reused),
# depth, cycles; checked arrays become plain ndarrays (tuples holding them are rebuilt).

_LEAVES = frozenset({str, bytes, bytearray, int, float, complex, bool, type(None)})


def _parts(obj: Any) -> tuple[Any, int, bool] | None:
    """(iterable of the items in `obj`, their number, whether all are leaves), or None for a leaf."""
    kind = type(obj)
    if kind is dict:
        types = set(map(type, obj)) | set(map(type, obj.values()))
        return chain(obj, obj.values()), 2 * len(obj), types <= _LEAVES
    if kind is list or kind is tuple or kind is set or kind is frozenset:
        return obj, len(obj), set(map(type, obj)) <= _LEAVES
    if isinstance(obj, np.ndarray) and obj.dtype.hasobject:  # checked when built, by _check_claim
        return obj.flat, obj.size, set(map(type, obj.flat)) <= _LEAVES
    return None


def _walk(root: Any, lim: Limits) -> Any:
    """`root`, refused if it holds more than max_items items (shared objects counted each time they are reached),
    nests deeper than max_depth or holds itself; checked arrays in it replaced by plain ndarrays."""
    counts: dict[int, tuple[int, int]] = {}  # id -> (items with multiplicity, height) of each object walked
    new: dict[int, Any] = {}  # id -> replacement of a checked array, or of a tuple holding one
    keep: list[Any] = []  # the replaced objects, alive so that their ids stay unique during the walk
    frames: list[list[Any]] = []  # [object, its items' iterator, items, height, whether an item was replaced]
    path: set[int] = set()

    def enter(obj: Any) -> bool:
        """Count `obj` if its items are all leaves (True), else open a frame for it (False)."""
        parts = _parts(obj)
        items, n, leafy = parts if parts is not None else ((), 0, True)
        if leafy:
            counts[id(obj)] = (1 + n, 0 if parts is None else 1)
            if type(obj) is _CheckedArray:
                new[id(obj)] = obj.view(np.ndarray)
                keep.append(obj)
            return True
        if len(frames) >= lim.max_depth:
            raise lim.refuse(f"nests containers more than {lim.max_depth} deep", "max_depth")
        frames.append([obj, iter(items), 1 + n, 1, False])
        path.add(id(obj))
        return False

    def close(frame: list[Any]) -> None:
        obj, _, items, height, replaced = frame
        path.discard(id(obj))
        if replaced:
            if type(obj) is tuple:
                new[id(obj)] = tuple(new.get(id(x), x) for x in obj)
                keep.append(obj)
            elif type(obj) is list:
                obj[:] = [new.get(id(x), x) for x in obj]
            elif type(obj) is dict:
                obj.update({k: new[id(v)] for k, v in obj.items() if id(v) in new})
            else:  # an object array
                for index, x in enumerate(obj.flat):
                    if id(x) in new:
                        obj.flat[index] = new[id(x)]
        if type(obj) is _CheckedArray:
            new[id(obj)] = obj.view(np.ndarray)
            keep.append(obj)
        counts[id(obj)] = (items, height)

    def add(frame: list[Any], kid: Any) -> None:
        items, height = counts[id(kid)]
        frame[2] += items - 1
        frame[3] = max(frame[3], height + 1)
        frame[4] = frame[4] or id(kid) in new
        if frame[2] > lim.max_items:
            raise lim.refuse(f"holds more than {lim.max_items:,} items, counting each reference to a shared one",
                             "max_items")  # fmt: skip
        if len(frames) + height > lim.max_depth:
            raise lim.refuse(f"nests containers more than {lim.max_depth} deep", "max_depth")

    if type(root) in _LEAVES or enter(root):
        return new.get(id(root), root)
    while frames:
        frame = frames[-1]
        for kid in frame[1]:
            if type(kid) in _LEAVES:
                continue
            if id(kid) not in counts:
                if id(kid) in path:
                    raise lim.refuse("holds itself (a cycle), so its items have no count")
                if not enter(kid):
                    break
            add(frame, kid)
        else:
            frames.pop()
            close(frame)
            if frames:
                add(frames[-1], frame[0])
    return new.get(id(root), root)


def load_data_pickle(
    source: str | os.PathLike | bytes, *, what: str | None = None, encoding: str = "ASCII",
    max_bytes: int = MAX_BYTES, max_items: int = MAX_ITEMS, max_depth: int = MAX_DEPTH,
) -> Any:  # fmt: skip
    """The data a pickle file (or its bytes) holds, read within the budgets of the module docstring. `encoding`:
    "bytes" keeps Python 2 strings as bytes (CIFAR). Raises UnsafePickleError for a pickle that would run code,
    PickleLimitError (one) for one beyond a budget, pickle.UnpicklingError (or EOFError, ValueError, TypeError)
    for one that is not a pickle of data."""
    lim = Limits(what or ("this pickle" if isinstance(source, bytes) else repr(os.fspath(source))), max_bytes,
                  max_items, max_depth)  # fmt: skip
    try:
        data = source if isinstance(source, bytes) else _read(source, lim)
        if len(data) > max_bytes:
            raise lim.refuse(f"is {len(data):,} bytes, more than {max_bytes:,}", "max_bytes")
        scan(data, lim)
        file = io.BufferedReader(io.BytesIO(data))  # buffered: the unpickler reads ahead instead of per opcode
        unpickler = DataUnpickler(file, what=lim.what, max_items=max_items, max_depth=max_depth, encoding=encoding)
        return _walk(unpickler.load(), lim)
    except MemoryError:
        raise lim.refuse("needs more memory than this machine gives (MemoryError); lower max_bytes or max_items "
                         "to refuse such a file sooner") from None  # fmt: skip
    except RecursionError:
        raise lim.refuse(f"nests too deep for Python (RecursionError); max_depth={max_depth} refuses such a file "
                         "sooner") from None  # fmt: skip


def _read(path: str | os.PathLike, lim: Limits) -> bytes:
    """The file's bytes, read at once; refused unread when larger than max_bytes."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > lim.max_bytes:
            raise lim.refuse(f"is {size:,} bytes, more than {lim.max_bytes:,}", "max_bytes")
        chunks: list[bytes] = []  # one chunk for a regular file; a pipe or the like (size 0) grows up to the cap
        while sum(map(len, chunks)) <= lim.max_bytes and (chunk := f.read(max(size, 1 << 20))):
            chunks.append(chunk)
        return b"".join(chunks)
