"""Hostile pickles end in a PickleLimitError naming the file and what was passed; real-shaped files still load.

Each attack runs at full size in a child process under a memory limit and a timeout, so code that regresses to
allocating what a forged pickle claims, or to the C stack overflows of deep structures (a segfault), fails the
test instead of taking the machine. The real-shaped files are look-alikes of CIFAR batches and of ImageNet-CoG's
released levels and split files, written as Python 2's cPickle and Python 3's pickle write them.
"""

from __future__ import annotations

import json
import pickle
import re
import resource
import struct
import subprocess
import sys

import numpy as np
import pytest

from lifelong.concepts.level_files import LevelFileError, read_levels_file, read_split_file
from lifelong.core import safe_pickle
from lifelong.core.safe_pickle import UnsafePickleError, load_data_pickle
from lifelong.data.images import CorruptImageError
from lifelong.data.sources.cifar import load_cifar_dir

RECONSTRUCT = np.ndarray.__reduce__(np.zeros(1))[0]
SCALAR = np.float64(0).__reduce__()[0]
N = 1_000_000


class _Forged:
    """Pickles as whatever (callable, args[, state]) it is given: how a forged file calls numpy."""

    def __init__(self, *reduced):
        self.reduced = reduced

    def __reduce__(self):
        return self.reduced


def _forged(*reduced) -> bytes:
    return pickle.dumps(_Forged(*reduced), protocol=4)


def _array_state(shape, dtype, data) -> bytes:
    return _forged(RECONSTRUCT, (np.ndarray, (0,), b"b"), (1, shape, np.dtype(dtype), False, data))


def _shared_levels(levels: int) -> bytes:
    """L1 = [L0, L0], L2 = [L1, L1]...: a few bytes whose items, counted each time reached, double per level."""
    top: list = []
    for _ in range(levels):
        top = [top, top]
    return pickle.dumps(top, protocol=4)


def _nested_object_arrays(levels: int) -> bytes:
    """Object arrays each holding the one before, `levels` deep: numpy frees them recursively (a segfault)."""
    array = b"cnumpy._core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85C\x01b\x87R"  # _reconstruct(...)
    state = b"(K\x01K\x01\x85cnumpy\ndtype\nX\x02\x00\x00\x00O8\x89\x88\x87R\x89]"  # (1, (1,), dtype('O'), False, [
    out = [b"\x80\x02"]
    for k in range(levels):
        previous = b"K\x00" if k == 0 else b"j" + struct.pack("<I", k - 1)
        out.append(array + state + previous + b"atbr" + struct.pack("<I", k) + b"0")  # ...]) BUILD, PUT k, POP
    return b"".join(out) + b"j" + struct.pack("<I", levels - 1) + b"."


ATTACKS = {  # name -> (pickle bytes, what the message says)
    "an array of 8e9 items of size 0": (
        _array_state((8_000_000_000,), "V0", b""),
        "shape \\(8000000000,\\) and dtype \\|V0: its 8,000,000,000 items have size 0",
    ),
    "one list reached 2^26 times through doubling shares": (
        _shared_levels(25),
        "more than 20,000,000 items, counting each reference to a shared one.*max_items=20,000,000",
    ),
    "one list referenced two million times": (
        pickle.dumps([list(range(10))] * 2_000_000, protocol=4),
        "more than 20,000,000 items.*max_items=20,000,000",
    ),
    "a list nested a million deep": (
        b"\x80\x02" + b"]" * N + b"a" * (N - 1) + b".",
        "nests containers more than 100 deep.*the max_depth=100 budget of load_data_pickle",
    ),
    "a tuple nested a million deep as a dict key": (  # the C unpickler hashes it recursively: a segfault
        b"\x80\x02}" + b")" + b"\x85" * N + b"K\x01s.",
        "nests containers more than 100 deep.*max_depth=100",
    ),
    "object arrays nested 20,000 deep": (_nested_object_arrays(20_000), "more than 100 deep.*max_depth=100"),
    "a BINBYTES8 claiming 2^40 bytes": (
        b"\x80\x04\x8e" + struct.pack("<Q", 2**40) + b"abc.",
        "BINBYTES8 opcode at byte 2 claims 1,099,511,627,776 bytes but 4 remain",
    ),
    "a BINUNICODE8 claiming 2^40 bytes": (
        b"\x80\x04\x8d" + struct.pack("<Q", 2**40) + b"abc.",
        "BINUNICODE8 opcode at byte 2 claims 1,099,511,627,776 bytes",
    ),
    "a BYTEARRAY8 claiming 2^40 bytes": (
        b"\x80\x05\x96" + struct.pack("<Q", 2**40) + b"abc.",
        "BYTEARRAY8 opcode at byte 2 claims 1,099,511,627,776 bytes",
    ),
    "a FRAME claiming 2^40 bytes": (
        b"\x80\x04\x95" + struct.pack("<Q", 2**40) + b"N.",
        "FRAME opcode at byte 2 claims 1,099,511,627,776 bytes",
    ),
    "a memo index of 2^32 - 1": (b"\x80\x02]r\xff\xff\xff\xff.", "memo index 4,294,967,295 .*runs ahead of the 1 "),
    "a million memo slots for one object": (b"\x80\x04N" + b"\x94" * N + b".", "memo index 2 .*runs ahead"),
    "an object array claiming 2^40 items": (
        _array_state((2**40,), object, []),
        "shape \\(1099511627776,\\) and dtype object whose data is a list of 0 items",
    ),
    "a byte array claiming more than the file holds": (
        _array_state((10**12,), "u1", b"abc"),
        "1,000,000,000,000 bytes claimed, 3 in the file",
    ),
    "numpy.ndarray called for 2^33 objects": (
        _forged(np.ndarray, ((2**33,), "O")),
        "calls numpy.ndarray directly",
    ),
    "a numpy scalar of a 1 GB dtype without its bytes": (
        _forged(SCALAR, (np.dtype("V1000000000"),)),
        "calls numpy's scalar with dtype\\('V1000000000'\\)",
    ),
    "a list that holds itself": (b"\x80\x02]q\x00h\x00a.", "changes an object at byte 7 after referring to it"),
}

CHILD = """
import json, sys
from lifelong.core.safe_pickle import UnsafePickleError, load_data_pickle
try:
    load_data_pickle(sys.argv[1])
    print(json.dumps({"error": None}))
except BaseException as exc:
    print(json.dumps({"error": type(exc).__name__, "unsafe": isinstance(exc, UnsafePickleError), "message": str(exc)}))
"""


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 * 1024**3, 3 * 1024**3))


def _load_in_child(path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, timeout=120,
        preexec_fn=_limit_memory,
    )  # fmt: skip
    assert done.returncode == 0, f"the child died ({done.returncode}): {done.stderr[-2000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_hostile_pickle_ends_in_a_limit_error_naming_the_file(tmp_path, attack):
    content, message = ATTACKS[attack]
    path = tmp_path / "hostile.pkl"
    path.write_bytes(content)
    result = _load_in_child(path)
    assert result["error"] == "PickleLimitError" and result["unsafe"], result
    assert result["message"].startswith(repr(str(path))), result
    assert re.search(message, result["message"]), result


def test_a_file_over_the_size_cap_is_refused_unread(tmp_path):
    path = tmp_path / "huge.pkl"
    with open(path, "wb") as f:
        f.truncate(3 * 1024**3)  # sparse: 3 GiB claimed, nothing on disk; reading it would take 3 GiB
    result = _load_in_child(path)
    assert result["error"] == "PickleLimitError", result
    assert "is 3,221,225,472 bytes, more than 2,147,483,648 (the max_bytes=2,147,483,648 budget" in result["message"]
    small = tmp_path / "small.pkl"
    small.write_bytes(pickle.dumps(list(range(1000))))
    with pytest.raises(safe_pickle.PickleLimitError, match=r"small\.pkl' is 2,\d{3} bytes, more than 1,000 "):
        load_data_pickle(small, max_bytes=1000)
    with pytest.raises(safe_pickle.PickleLimitError, match=r"this pickle is 2,\d{3} bytes.*max_bytes=1,000"):
        load_data_pickle(small.read_bytes(), max_bytes=1000)
    assert load_data_pickle(small, max_bytes=small.stat().st_size) == list(range(1000))


def test_each_budget_is_a_parameter():
    deep = pickle.dumps([[[[1]]]])
    assert load_data_pickle(deep, max_depth=4) == [[[[1]]]]
    with pytest.raises(safe_pickle.PickleLimitError, match=r"more than 3 deep.*max_depth=3"):
        load_data_pickle(deep, max_depth=3)
    many = pickle.dumps([[0] * 50] * 4)  # 50 built, 1 + 4 * 51 = 205 reached
    assert len(load_data_pickle(many, max_items=205)) == 4
    with pytest.raises(safe_pickle.PickleLimitError, match=r"more than 204 items, counting each reference.*max_items"):
        load_data_pickle(many, max_items=204)
    with pytest.raises(safe_pickle.PickleLimitError, match=r"builds more than 40 objects.*max_items=40"):
        load_data_pickle(many, max_items=40)


@pytest.mark.parametrize("error", [MemoryError, RecursionError])
@pytest.mark.parametrize("where", ["load", "walk"])
def test_memory_and_recursion_errors_become_the_limit_error(monkeypatch, error, where):
    def fail(*args, **kwargs):
        raise error()

    if where == "load":
        monkeypatch.setattr(safe_pickle.DataUnpickler, "load", fail)
    else:
        monkeypatch.setattr(safe_pickle, "_walk", fail)
    with pytest.raises(safe_pickle.PickleLimitError, match=rf"'x\.pkl' .*\({error.__name__}\).*max_"):
        load_data_pickle(pickle.dumps([1, 2]), what="'x.pkl'")


# ---------------------------------------------------------------------------------------------------------------
# Real-shaped files: what the authors released and CIFAR's batches load, equal to what was pickled.


def _py2_pickle(obj) -> bytes:
    """`obj` (dicts, lists, str) as Python 2's cPickle writes it with protocol 2 (byte for byte for lists of str):
    str as SHORT_BINSTRING / BINSTRING, memo indices from 1, items in batches of 1,000."""
    out, memo = [b"\x80\x02"], [0]

    def put():
        memo[0] += 1
        out.append(b"q" + bytes([memo[0]]) if memo[0] < 256 else b"r" + struct.pack("<I", memo[0]))

    def save(x):
        if isinstance(x, str):
            raw = x.encode("latin1")
            out.append((b"U" + bytes([len(raw)]) if len(raw) < 256 else b"T" + struct.pack("<i", len(raw))) + raw)
            put()
            return
        out.append(b"]" if isinstance(x, list) else b"}")
        put()
        items = [(y,) for y in x] if isinstance(x, list) else list(x.items())
        for k in range(0, len(items), 1000):
            chunk = items[k : k + 1000]
            out.append(b"(" if len(chunk) > 1 else b"")
            for part in (p for item in chunk for p in item):
                save(part)
            one, many = (b"a", b"e") if isinstance(x, list) else (b"s", b"u")
            out.append(many if len(chunk) > 1 else one)

    save(obj)
    return b"".join(out) + b"."


WNIDS = [f"n{1_000_000 + k:08d}" for k in range(5000)]
LEVELS = [WNIDS[k * 1000 : (k + 1) * 1000] for k in range(5)]


def _paths(wnid: str, count: int, prefix: str = "/") -> list[str]:
    return [f"{prefix}{wnid}/{wnid}_{k}.JPEG" for k in range(count)]


def _same(a, b) -> bool:
    """Equal, with plain ndarrays (never a subclass) of the same dtype and shape where `b` has arrays."""
    if isinstance(b, np.ndarray):
        return type(a) is np.ndarray and a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    if isinstance(b, dict):
        return type(a) is dict and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in b)
    if isinstance(b, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("writer", ["python2", 2, 4, 5])
def test_the_authors_levels_and_split_files_load_as_written(tmp_path, writer):
    split = {wnid: _paths(wnid, 20) for wnid in WNIDS}  # the real file: ~1,300 per concept (6.5M paths)
    dump = _py2_pickle if writer == "python2" else (lambda obj: pickle.dumps(obj, protocol=writer))
    levels_file, split_file = tmp_path / "cog_levels_mapping_file.pkl", tmp_path / "cog_concepts_split_file.pkl"
    levels_file.write_bytes(dump(LEVELS))
    split_file.write_bytes(dump(split))
    assert load_data_pickle(levels_file, encoding="latin1") == LEVELS
    assert load_data_pickle(split_file, encoding="latin1") == split
    assert read_levels_file(levels_file) == LEVELS


@pytest.mark.parametrize("protocol", [2, 4, 5])
@pytest.mark.parametrize("dtype", [str, object])
def test_a_split_file_of_arrays_loads_as_plain_arrays(tmp_path, protocol, dtype):
    split = {w: {"train": np.array(_paths(w, 20), dtype=dtype), "test": np.array(_paths(w, 3), dtype=dtype)}
             for w in WNIDS}  # fmt: skip
    path = tmp_path / "cog_concepts_split_file.pkl"
    path.write_bytes(pickle.dumps(split, protocol=protocol))
    assert _same(load_data_pickle(path, encoding="latin1"), split)
    images = read_split_file(path, WNIDS[:2], check_bounds=False)
    assert images[WNIDS[1]].test == tuple(sorted(p.lstrip("/") for p in _paths(WNIDS[1], 3)))


def test_shared_and_nested_arrays_come_back_plain_and_shared():
    shared = np.arange(6).reshape(2, 3)
    holder = np.empty(2, dtype=object)
    holder[0], holder[1] = shared, [shared]
    many = np.array([f"n{k:08d}" for k in range(1000)], dtype=object)
    content = {"a": shared, "b": (shared, [shared]), "c": holder, "d": np.asfortranarray(shared), "e": many}
    for protocol in range(6):
        got = load_data_pickle(pickle.dumps(content, protocol=protocol), encoding="latin1")
        assert _same(got["b"], content["b"]) and _same(got["d"], content["d"]) and got["d"].flags.f_contiguous
        assert _same(got["e"], many)
        assert got["a"] is got["b"][0] is got["b"][1][0] is got["c"][0] is got["c"][1][0]
        assert type(got["c"]) is np.ndarray and type(got["c"][0]) is np.ndarray
        assert type(load_data_pickle(pickle.dumps(shared, protocol=protocol))) is np.ndarray


def _cifar_batch(count: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {
        b"batch_label": b"training batch 1 of 5",
        b"labels": rng.integers(0, 10, count).tolist(),
        b"data": rng.integers(0, 256, (count, 3072), dtype=np.uint8),
        b"filenames": [b"img_%d.png" % k for k in range(count)],
    }


def test_a_cifar_shaped_batch_loads_and_a_hostile_one_is_named(tmp_path):
    batch = _cifar_batch(10_000, 0)
    (tmp_path / "data_batch_1").write_bytes(pickle.dumps(batch, protocol=2))
    (tmp_path / "test_batch").write_bytes(pickle.dumps(_cifar_batch(10, 1), protocol=2))
    assert _same(load_data_pickle(tmp_path / "data_batch_1", encoding="bytes"), batch)
    data = load_cifar_dir(tmp_path)
    assert data.images.shape == (10_010, 32, 32, 3) and list(data.labels[:10_000]) == batch[b"labels"]
    (tmp_path / "test_batch").write_bytes(ATTACKS["a list nested a million deep"][0])
    with pytest.raises(CorruptImageError, match=r"the CIFAR file '.*test_batch' nests .*max_depth=100.*re-download"):
        load_cifar_dir(tmp_path)


def test_a_hostile_split_file_is_a_level_file_error_naming_it(tmp_path):
    path = tmp_path / "cog_concepts_split_file.pkl"
    path.write_bytes(_shared_levels(25))
    with pytest.raises(LevelFileError, match=r"the split file '.*cog_concepts_split_file\.pkl' holds more than"):
        read_split_file(path)
    path.write_bytes(b"\x80\x04\x8e" + struct.pack("<Q", 2**40) + b".")
    with pytest.raises(LevelFileError, match=r"split file .* claims 1,099,511,627,776 bytes"):
        read_split_file(path)
    with pytest.raises(UnsafePickleError):
        load_data_pickle(path.read_bytes())
