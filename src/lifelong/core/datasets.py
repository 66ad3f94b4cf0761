"""One split of one task: uint8 HWC images (or pre-extracted float features) with integer or multi-hot labels."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from lifelong.core.arrays import first_non_finite_row
from lifelong.core.tasks import TaskKey, TaskKind


@dataclass(frozen=True)
class Batch:
    """A batch: images [B, H, W, C] uint8; labels [B] int64 or [B, C] uint8 multi-hot; row indices [B]."""

    images: np.ndarray
    labels: np.ndarray
    indices: np.ndarray


@runtime_checkable
class Dataset(Protocol):
    """What a learner may read: its task, its size, and batches in a fixed or seeded order."""

    task: TaskKey
    split: str

    def __len__(self) -> int: ...

    @property
    def image_shape(self) -> tuple[int, ...]: ...

    def batches(
        self, batch_size: int, *, shuffle: bool = False, seed: int | None = None, drop_last: bool = False
    ) -> Iterator[Batch]: ...

    def labels(self) -> np.ndarray: ...


def check_labels(
    labels: np.ndarray, kind: TaskKind, num_classes: int, item: Callable[[int], str], where: str = ""
) -> np.ndarray:
    """Labels for `kind` in canonical dtype (int64 class indices, or uint8 multi-hot rows), else a ValueError.

    Errors start with `where` (e.g. the task and split) and name the first offending item by `item(row)`.
    """
    labels = np.asarray(labels)
    n, c = len(labels), num_classes
    if kind is TaskKind.MULTI_LABEL:
        if labels.ndim != 2 or labels.shape[1] != c:
            raise ValueError(f"{where}multi-label targets must be multi-hot with shape (N, {c}), got {labels.shape}")
        bad = ~np.isin(labels, (0, 1))
        if bad.any():
            row, col = (int(v) for v in np.argwhere(bad)[0])
            raise ValueError(
                f"{where}{item(row)}: multi-hot entry for class {col} is {labels[row, col].item()!r}, "
                f"expected 0 or 1 ({c} classes)"
            )
        return labels.astype(np.uint8, copy=False)
    if labels.ndim != 1:
        raise ValueError(f"{where}multi-class labels must have shape (N,), got {labels.shape}")
    if labels.size and labels.dtype.kind not in "iu":
        integral = np.mod(labels, 1) == 0 if labels.dtype.kind == "f" else np.zeros(n, dtype=bool)
        if not integral.all():
            row = int(np.flatnonzero(~integral)[0])
            raise ValueError(
                f"{where}{item(row)}: label {labels[row].item()!r} is not an integer class index "
                f"(labels dtype {labels.dtype}); map class names to indices 0..{c - 1} first"
            )
    labels = labels.astype(np.int64, copy=False)
    out_of_range = (labels < 0) | (labels >= c)
    if out_of_range.any():
        row = int(np.flatnonzero(out_of_range)[0])
        raise ValueError(
            f"{where}{item(row)}: label {int(labels[row])} is out of range for {c} classes (expected 0..{c - 1})"
        )
    return labels


FEATURE_DTYPES = (np.dtype(np.float32), np.dtype(np.float16))


class ArrayDataset:
    """A split held in memory (or a memory-mapped array): images [N, H, W, C] uint8 and labels.

    Items may instead be pre-extracted features [N, D], float32 or float16 (CLEAR's released feature files, CoG's
    memory-mapped feature sets): then `is_features` is True, `image_shape` is (D,), `batches` yields float32
    rows, and the array is never copied whole; learners that need pixels say so.
    """

    def __init__(self, task: TaskKey, split: str, images: np.ndarray, labels: np.ndarray) -> None:
        images = images if isinstance(images, np.ndarray) else np.asarray(images)
        is_features = images.ndim == 2 and images.dtype in FEATURE_DTYPES
        if not is_features and (images.ndim != 4 or images.dtype != np.uint8):
            raise ValueError(
                f"task {task.uid!r} split {split!r}: images must be uint8 [N, H, W, C] (or features float32/float16 "
                f"[N, D]), got {images.dtype} {images.shape}"
            )
        if is_features and (row := first_non_finite_row(images)) is not None:
            raise ValueError(f"task {task.uid!r} split {split!r}: item {row} has non-finite feature values")
        self.task = task
        self.split = split
        self.images = images
        if len(labels) != len(images):
            raise ValueError(f"task {task.uid!r} split {split!r}: {len(images)} images but {len(labels)} labels")
        where = f"task {task.uid!r} split {split!r}: "
        self._labels = check_labels(labels, task.kind, task.num_classes, lambda row: f"item {row}", where)

    def __len__(self) -> int:
        return len(self.images)

    def __repr__(self) -> str:
        return f"ArrayDataset(task={self.task.uid!r}, split={self.split!r}, n={len(self)}, shape={self.image_shape})"

    @property
    def image_shape(self) -> tuple[int, ...]:
        return tuple(int(s) for s in self.images.shape[1:])

    @property
    def is_features(self) -> bool:
        """True when items are pre-extracted float32 feature vectors rather than uint8 images."""
        return self.images.ndim == 2

    def labels(self) -> np.ndarray:
        return self._labels

    def subset(self, indices: np.ndarray, split: str | None = None) -> ArrayDataset:
        """The rows at `indices`, as a new dataset (used for splits and subsampling)."""
        indices = np.asarray(indices, dtype=np.int64)
        return ArrayDataset(self.task, split or self.split, self.images[indices], self._labels[indices])

    def batches(
        self, batch_size: int, *, shuffle: bool = False, seed: int | None = None, drop_last: bool = False
    ) -> Iterator[Batch]:
        """Batches in stored order, or in a seeded random order (`shuffle=True` requires `seed`)."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        n = len(self)
        if shuffle:
            if seed is None:
                raise ValueError("shuffle=True needs a seed: every random choice is seeded")
            order = np.random.default_rng(seed).permutation(n)
        else:
            order = np.arange(n)
        stop = n - n % batch_size if drop_last else n
        for start in range(0, stop, batch_size):
            idx = order[start : start + batch_size]
            if not shuffle:  # contiguous slices avoid a copy through fancy indexing
                sl = slice(start, start + len(idx))
                images, labels = self.images[sl], self._labels[sl]
            else:
                images, labels = self.images[idx], self._labels[idx]
            if self.is_features and images.dtype != np.float32:
                images = images.astype(np.float32)
            yield Batch(images, labels, idx)


class LazyDataset:
    """A dataset loaded on first use, so a stream of many tasks holds only what is being used."""

    def __init__(self, task: TaskKey, split: str, load: Callable[[], ArrayDataset]) -> None:
        self.task = task
        self.split = split
        self._load = load
        self._lock = threading.Lock()

    def materialize(self) -> ArrayDataset:
        with self._lock:
            data = self._load()
        if data.task != self.task:
            raise ValueError(f"loader for {self.task.uid!r} returned data of task {data.task.uid!r}")
        return data

    def __len__(self) -> int:
        return len(self.materialize())

    def __repr__(self) -> str:
        return f"LazyDataset(task={self.task.uid!r}, split={self.split!r})"

    @property
    def image_shape(self) -> tuple[int, ...]:
        return self.materialize().image_shape

    @property
    def is_features(self) -> bool:
        return self.materialize().is_features

    def labels(self) -> np.ndarray:
        return self.materialize().labels()

    def batches(
        self, batch_size: int, *, shuffle: bool = False, seed: int | None = None, drop_last: bool = False
    ) -> Iterator[Batch]:
        return self.materialize().batches(batch_size, shuffle=shuffle, seed=seed, drop_last=drop_last)
