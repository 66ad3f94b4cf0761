"""One split of one task: uint8 HWC images with integer labels or multi-hot label vectors."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from lifelong.core.tasks import TaskKey


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
    def image_shape(self) -> tuple[int, int, int]: ...

    def batches(
        self, batch_size: int, *, shuffle: bool = False, seed: int | None = None, drop_last: bool = False
    ) -> Iterator[Batch]: ...

    def labels(self) -> np.ndarray: ...


def validate_labels(task: TaskKey, split: str, labels: np.ndarray, n: int) -> np.ndarray:
    """Check labels against the task and return them in canonical dtype; errors name task and label."""
    where = f"task {task.uid!r} split {split!r}"
    labels = np.asarray(labels)
    if task.is_multi_label:
        if labels.shape != (n, task.num_classes):
            raise ValueError(
                f"{where}: multi-label targets must have shape ({n}, {task.num_classes}), got {labels.shape}"
            )
        bad = ~np.isin(labels, (0, 1))
        if bad.any():
            row = int(np.argwhere(bad)[0][0])
            raise ValueError(f"{where}: multi-hot labels must be 0 or 1; item {row} has {labels[row].tolist()}")
        return labels.astype(np.uint8, copy=False)
    if labels.shape != (n,):
        raise ValueError(f"{where}: multi-class labels must have shape ({n},), got {labels.shape}")
    if labels.size and not np.issubdtype(labels.dtype, np.integer):
        if not np.all(np.mod(labels, 1) == 0):
            raise ValueError(f"{where}: labels must be integers, got dtype {labels.dtype}")
    labels = labels.astype(np.int64, copy=False)
    out_of_range = (labels < 0) | (labels >= task.num_classes)
    if out_of_range.any():
        row = int(np.flatnonzero(out_of_range)[0])
        raise ValueError(
            f"{where}: label {int(labels[row])} of item {row} is out of range for "
            f"{task.num_classes} classes (expected 0..{task.num_classes - 1})"
        )
    return labels


class ArrayDataset:
    """A split held in memory (or a memory-mapped array): images [N, H, W, C] uint8 and labels."""

    def __init__(self, task: TaskKey, split: str, images: np.ndarray, labels: np.ndarray) -> None:
        images = np.asarray(images)
        if images.ndim != 4 or images.dtype != np.uint8:
            raise ValueError(
                f"task {task.uid!r} split {split!r}: images must be uint8 [N, H, W, C], "
                f"got {images.dtype} {images.shape}"
            )
        self.task = task
        self.split = split
        self.images = images
        self._labels = validate_labels(task, split, labels, len(images))

    def __len__(self) -> int:
        return len(self.images)

    def __repr__(self) -> str:
        return f"ArrayDataset(task={self.task.uid!r}, split={self.split!r}, n={len(self)}, shape={self.image_shape})"

    @property
    def image_shape(self) -> tuple[int, int, int]:
        return tuple(int(s) for s in self.images.shape[1:])  # type: ignore[return-value]

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
                yield Batch(self.images[sl], self._labels[sl], idx)
            else:
                yield Batch(self.images[idx], self._labels[idx], idx)


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
    def image_shape(self) -> tuple[int, int, int]:
        return self.materialize().image_shape

    def labels(self) -> np.ndarray:
        return self.materialize().labels()

    def batches(
        self, batch_size: int, *, shuffle: bool = False, seed: int | None = None, drop_last: bool = False
    ) -> Iterator[Batch]:
        return self.materialize().batches(batch_size, shuffle=shuffle, seed=seed, drop_last=drop_last)
