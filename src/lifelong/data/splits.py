"""Deterministic split rules of spec/nevis22.md section 5: train / dev / dev_test / test for one task."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lifelong.data.labeled import OFFICIAL_SPLIT_NAMES

SPLIT_NAMES = ("train", "dev", "dev_test", "test")

# Percentages (integers, so boundaries are exact) of each pool that goes to each split.
NO_OFFICIAL_SPLIT = {"train": 56, "dev": 12, "dev_test": 12, "test": 20}
FROM_OFFICIAL_TRAIN = {"train": 70, "dev": 15, "dev_test": 15}  # official train/test
FROM_OFFICIAL_TRAIN_WITH_VAL = {"train": 80, "dev": 20}  # official train/val/test


def split_indices(items: int | np.ndarray | Sequence[str], seed: int = 0) -> dict[str, np.ndarray]:
    """Assign every item to exactly one of train / dev / dev_test / test, by the rule its official split implies.

    `items` is the number of items (no official split) or each item's official split ("train" / "val" /
    "test"). Rules: no official split -> 56/12/12/20 %; official train/test -> official train is divided
    70/15/15 % into train/dev/dev_test and test is the official test; official train/val/test -> official
    train is divided 80/20 % into train/dev, dev_test is the official val and test the official test.
    Method: each pool that is divided (all items, or the official train items in ascending order) is
    shuffled with `np.random.default_rng(seed).permutation`, and consecutive runs of the shuffled order
    go to the splits, in the order listed, with boundaries round_half_up(n * cumulative percent / 100).
    So every split size is within one item of its share, sizes sum to n, and the same seed gives the
    same assignment. Returned indices are sorted ascending; the dict always has all four splits.
    """
    if isinstance(items, int | np.integer):
        n = int(items)
        if n < 0:
            raise ValueError(f"the number of items must be >= 0, got {n}")
        return _complete(_divide(np.arange(n), NO_OFFICIAL_SPLIT, seed))
    official = np.asarray(items)
    if official.ndim != 1:
        raise ValueError(f"official splits must be a 1-D sequence of strings, got shape {official.shape}")
    official = official.astype(str)
    bad = ~np.isin(official, OFFICIAL_SPLIT_NAMES)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"item {row}: official split {str(official[row])!r} is not one of {OFFICIAL_SPLIT_NAMES}")
    present = {str(s) for s in np.unique(official)}
    train = np.flatnonzero(official == "train")
    test = np.flatnonzero(official == "test")
    if present == {"train", "test"}:
        splits = _divide(train, FROM_OFFICIAL_TRAIN, seed)
    elif present == {"train", "val", "test"}:
        splits = _divide(train, FROM_OFFICIAL_TRAIN_WITH_VAL, seed)
        splits["dev_test"] = np.flatnonzero(official == "val")
    else:
        raise ValueError(
            f"official splits {sorted(present)} are not a supported combination: expected train+test or "
            "train+val+test; pass the number of items instead to split without an official split"
        )
    splits["test"] = test
    return _complete(splits)


def _divide(pool: np.ndarray, percents: dict[str, int], seed: int) -> dict[str, np.ndarray]:
    """Shuffle `pool` with the seed and cut it at round-half-up cumulative percentage boundaries."""
    n = len(pool)
    shuffled = pool[np.random.default_rng(seed).permutation(n)]
    out: dict[str, np.ndarray] = {}
    start = cumulative = 0
    for name, percent in percents.items():
        cumulative += percent
        stop = (n * cumulative * 2 + 100) // 200  # round half up of n * cumulative / 100, in integers
        out[name] = np.sort(shuffled[start:stop])
        start = stop
    if cumulative != 100:
        raise AssertionError(f"split percentages {percents} sum to {cumulative}, not 100")
    return out


def _complete(splits: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name: splits.get(name, np.empty(0, dtype=np.int64)).astype(np.int64) for name in SPLIT_NAMES}
