"""Files that say which concepts form ImageNet-CoG's levels and which images each concept uses.

Levels come as our CSV (`lifelong cog levels --out`: wnid, name, similarity, level) or as the authors' released
`cog_levels_mapping_file.pkl` (a pickled sequence of 5 lists of 1,000 wnids, level 1 first). The authors'
`cog_concepts_split_file.pkl` is a pickled dict wnid -> {"train": array of image paths relative to the IN-21K
root, "test": array}: 732 to 1,300 train and exactly 50 test images per concept (naver/cog's checks); a leading
"/" is stripped. Both pickles are read with `lifelong.core.safe_pickle`, which builds plain data and numpy arrays
only, within size, item and depth budgets: a file from elsewhere cannot run code here or exhaust memory.
"""

from __future__ import annotations

import csv
import os
import pickle
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lifelong.concepts.wnids import ConceptError, check_wnid
from lifelong.core.safe_pickle import UnsafePickleError, load_data_pickle

MIN_TRAIN_IMAGES = 732
MAX_TRAIN_IMAGES = 1300
TEST_IMAGES = 50
MIN_IMAGES = MIN_TRAIN_IMAGES + TEST_IMAGES  # 782: the paper's count filter and the smallest concept it uses
PICKLE_MAGIC = (b"\x80", b"(")  # protocol >= 2 starts with PROTO; protocol 0/1 pickles of a list or dict with MARK


class LevelFileError(ConceptError):
    """A levels or split file that cannot be read or breaks the format; the message names the file and the item."""


def _is_pickle(path: Path) -> bool:
    if path.suffix.lower() in (".pkl", ".pickle"):
        return True
    with open(path, "rb") as f:
        return f.read(1) in PICKLE_MAGIC


def _unpickle(path: Path, what: str):
    try:
        return load_data_pickle(path, what=f"the {what} {str(path)!r}", encoding="latin1")
    except UnsafePickleError as exc:
        raise LevelFileError(str(exc)) from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as exc:
        raise LevelFileError(f"the {what} {str(path)!r} is not a readable pickle: {exc}") from None


def _strings(value, where: str) -> list[str]:
    """A list/tuple/1-D array of strings as a list (bytes decoded), else a LevelFileError naming `where`."""
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise LevelFileError(f"{where} is an array of shape {value.shape}; expected a 1-D list of strings")
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise LevelFileError(f"{where} is a {type(value).__name__}; expected a list of strings")
    out = []
    for i, item in enumerate(value):
        if isinstance(item, bytes):
            item = item.decode()
        if not isinstance(item, str):
            raise LevelFileError(f"{where}[{i}] is a {type(item).__name__} ({item!r}); expected a string")
        out.append(item)
    return out


def read_levels_file(path: str | os.PathLike) -> list[list[str]]:
    """The wnids of each level, level 1 first, from our CSV or the authors' pkl (told apart by content).

    Every entry must be a wnid, and no wnid may sit in two levels (each a LevelFileError naming the file, the
    level and the entry). Levels of any size are accepted; the authors' file has 5 of 1,000.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"levels file {str(path)!r} not found; write one with `lifelong cog levels`")
    levels = _levels_from_pickle(path) if _is_pickle(path) else _levels_from_csv(path)
    if not levels or not any(levels):
        raise LevelFileError(f"the levels file {str(path)!r} holds no concept")
    placed: dict[str, int] = {}
    for number, wnids in enumerate(levels, start=1):
        for wnid in wnids:
            try:
                check_wnid(wnid, where=f"{path} level {number}")
            except ConceptError as exc:
                raise LevelFileError(str(exc)) from None
            if wnid in placed and placed[wnid] != number:
                raise LevelFileError(f"{path}: {wnid} is in level {placed[wnid]} and in level {number}")
            placed[wnid] = number
    return [list(dict.fromkeys(wnids)) for wnids in levels]


def _levels_from_pickle(path: Path) -> list[list[str]]:
    content = _unpickle(path, "levels file")
    if isinstance(content, (dict, str, bytes)) or not isinstance(content, (Sequence, np.ndarray)):
        raise LevelFileError(
            f"the levels file {str(path)!r} holds a {type(content).__name__}; expected a sequence of levels, each a "
            "list of wnids (level 1 first), as in cog_levels_mapping_file.pkl"
        )
    return [_strings(level, f"{path} level {i}") for i, level in enumerate(content, start=1)]


def _levels_from_csv(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows or not {"wnid", "level"} <= set(rows[0]):
        raise LevelFileError(
            f"{path} needs wnid and level columns (the output of `lifelong cog levels`), or is the authors' "
            "cog_levels_mapping_file.pkl"
        )
    by_level: dict[int, list[str]] = {}
    for line, row in enumerate(rows, start=2):
        try:
            number = int(row["level"])
        except (TypeError, ValueError):
            raise LevelFileError(f"{path} line {line}: level {row['level']!r} is not a whole number") from None
        if number < 1:
            raise LevelFileError(f"{path} line {line}: level {number}; levels count from 1")
        by_level.setdefault(number, []).append((row["wnid"] or "").strip())
    return [by_level.get(number, []) for number in range(1, max(by_level) + 1)]


@dataclass(frozen=True)
class ConceptImages:
    """One concept's image paths (relative to the images root, sorted) for training and testing."""

    train: tuple[str, ...]
    test: tuple[str, ...]


def read_split_file(
    path: str | os.PathLike, concepts: Sequence[str] | None = None, *, check_bounds: bool = True
) -> dict[str, ConceptImages]:
    """{wnid: ConceptImages} of the authors' cog_concepts_split_file.pkl (only `concepts` when given, each of
    which must be in it). With `check_bounds`, 732 <= train <= 1,300 and test == 50 per concept (naver/cog's
    checks), else a LevelFileError naming the concept and its counts."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"split file {str(path)!r} not found (the authors' cog_concepts_split_file.pkl)")
    content = _unpickle(path, "split file")
    if not isinstance(content, dict):
        raise LevelFileError(
            f"the split file {str(path)!r} holds a {type(content).__name__}; expected a dict wnid -> "
            '{"train": [...], "test": [...]}, as in cog_concepts_split_file.pkl'
        )
    content = {(k.decode() if isinstance(k, bytes) else k): v for k, v in content.items()}
    wanted = list(content) if concepts is None else list(concepts)
    missing = [wnid for wnid in wanted if wnid not in content]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise LevelFileError(f"the split file {str(path)!r} has no entry for {shown}")
    out = {}
    for wnid in wanted:
        entry = content[wnid]
        if not isinstance(entry, dict) or not {"train", "test"} <= set(entry):
            raise LevelFileError(f"{path}: the entry of {wnid} is not a dict with 'train' and 'test'")
        splits = {
            split: tuple(sorted(p.lstrip("/") for p in _strings(entry[split], f"{path} {wnid} {split}")))
            for split in ("train", "test")
        }
        images = ConceptImages(**splits)
        if check_bounds and not (
            MIN_TRAIN_IMAGES <= len(images.train) <= MAX_TRAIN_IMAGES and len(images.test) == TEST_IMAGES
        ):
            raise LevelFileError(
                f"{path}: concept {wnid} has {len(images.train)} train and {len(images.test)} test images; "
                f"ImageNet-CoG needs {MIN_TRAIN_IMAGES} to {MAX_TRAIN_IMAGES} train and {TEST_IMAGES} test images"
            )
        out[wnid] = images
    return out
