"""Data side of the ImageNet-CoG linear probes (docs/protocols/cog.md#linear-probe): input checks, the stratified
20% validation split, few-shot sampling, and minibatches streamed from (possibly memory-mapped) feature rows.

A level's features can be a float16 `np.memmap` bigger than memory: rows are gathered per chunk of a shuffled
index and converted to float32 one minibatch at a time; the whole matrix is never loaded, and for a memmap
opened from a file the gathered pages are dropped from this process after each chunk so its RSS stays small.
"""

from __future__ import annotations

import mmap
import os
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from lifelong.core.arrays import first_non_finite_row, mapping_of, release_pages
from lifelong.core.seeds import derive_seed

VALIDATION_FRACTION = 0.2
FEW_SHOT_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128)
CHUNK_ROWS = 16_384  # rows gathered from the features per read (32 MiB of 1,024-d float16)


def check_features(features: np.ndarray, labels: np.ndarray, name: str) -> np.ndarray:
    """Validate one split's (features, labels); return the labels as int64. Raises with the offending values."""
    if getattr(features, "ndim", None) != 2:
        raise ValueError(f"{name} features must be a 2-D array (rows x dim), got shape {np.shape(features)}")
    if not np.issubdtype(features.dtype, np.floating):
        raise ValueError(f"{name} features must be floating point (float16/32/64), got dtype {features.dtype}")
    labels = np.asarray(labels)
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"{name} labels must be a 1-D integer vector, got shape {labels.shape} dtype {labels.dtype}")
    if features.shape[0] != labels.shape[0]:
        raise ValueError(
            f"{name} features have {features.shape[0]} rows but {name} labels have {labels.shape[0]} entries: "
            "pass one label per feature row, in the same order"
        )
    if labels.size == 0:
        raise ValueError(f"{name} split is empty: pass at least one row")
    if labels.min() < 0:
        raise ValueError(f"{name} labels must be non-negative class indices, got {labels.min()}")
    return labels.astype(np.int64, copy=False)


def check_finite(features: np.ndarray, name: str) -> None:
    """Scan the features block by block (memmaps included) and raise on the first NaN or infinite row."""
    row = first_non_finite_row(features)
    if row is not None:
        raise ValueError(f"{name} features contain NaN or infinite values (first at row {row}): fix extraction")


def stratified_split(labels: np.ndarray, fraction: float = VALIDATION_FRACTION, *, seed: int) -> tuple[np.ndarray, ...]:
    """(train, validation) row indices: `round(fraction * n_c)` rows of every class c go to validation.

    Each class keeps at least one training row; the draw is seeded and both index arrays are sorted.
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must be in (0, 1), got {fraction}")
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    validation = []
    for cls in np.unique(labels):
        rows = np.flatnonzero(labels == cls)
        take = min(int(round(fraction * rows.size)), rows.size - 1)
        validation.append(rng.choice(rows, size=take, replace=False))
    val = np.sort(np.concatenate(validation)) if validation else np.empty(0, np.int64)
    mask = np.ones(labels.size, bool)
    mask[val] = False
    return np.flatnonzero(mask), val


def few_shot_capacity(labels: np.ndarray) -> tuple[int, int]:
    """(most shots every class can give, the class that limits it): shots are drawn from the rows the stratified
    validation split leaves (`stratified_split`'s rule), so a class of n rows gives n - round(0.2 n)."""
    classes, counts = np.unique(np.asarray(labels), return_counts=True)
    if classes.size == 0:
        raise ValueError("no training rows: few-shot sampling needs at least one row per class")
    left = counts - np.minimum(np.rint(VALIDATION_FRACTION * counts).astype(np.int64), counts - 1)
    worst = int(np.argmin(left))
    return int(left[worst]), int(classes[worst])


def few_shot_indices(labels: np.ndarray, shots: int, *, seed: int, names: Sequence[str] | None = None) -> np.ndarray:
    """Sorted indices of `shots` rows per class drawn (seeded, without replacement) from `labels`' rows.

    A class with fewer rows than `shots` is an error naming the class (`names[c]` when given) and its count.
    """
    if isinstance(shots, bool) or not isinstance(shots, int | np.integer) or shots < 1:
        raise ValueError(f"shots must be a positive integer, got {shots!r}")
    labels = np.asarray(labels)
    classes, counts = np.unique(labels, return_counts=True)
    short = counts < shots
    if short.any():
        cls, count = int(classes[short][0]), int(counts[short][0])
        name = names[cls] if names is not None else f"class {cls}"
        raise ValueError(
            f"{shots}-shot sampling needs {shots} training rows per concept, but {name} has only {count} "
            f"({int(short.sum())} concepts are short): use at most {int(counts.min())} shots"
        )
    rng = np.random.default_rng(seed)
    picked = [rng.choice(np.flatnonzero(labels == cls), size=shots, replace=False) for cls in classes]
    return np.sort(np.concatenate(picked))


class _FileRows:
    """Rows of a C-contiguous, file-backed memmap read with `os.preadv` into a fresh buffer.

    Gathering random rows through the mapping would map whole page-cache folios around every row into this
    process (a 16k-row gather maps ~1 GB), so the rows are read from the file instead: the RSS stays the buffer.
    """

    def __init__(self, features: np.memmap, mapping: mmap.mmap) -> None:
        start_in_file = features.offset - features.offset % mmap.ALLOCATIONGRANULARITY
        mapping_address = np.frombuffer(mapping, np.uint8, count=1).ctypes.data
        self.first_byte = start_in_file + features.ctypes.data - mapping_address
        self.row_bytes = features.shape[1] * features.dtype.itemsize
        self.dtype, self.dim = features.dtype, features.shape[1]
        self.fd = os.open(features.filename, os.O_RDONLY)
        weakref.finalize(self, os.close, self.fd)

    @classmethod
    def open(cls, features: np.ndarray) -> _FileRows | None:
        mapping = mapping_of(features)
        shared = getattr(features, "mode", "c") in ("r", "r+", "w+")  # copy-on-write edits are not in the file
        if mapping is None or not shared or not features.flags.c_contiguous or not hasattr(os, "preadv"):
            return None
        return cls(features, mapping)

    def read(self, rows: np.ndarray) -> np.ndarray:
        """The given rows (ascending), runs of consecutive rows in one read each."""
        out = np.empty((rows.size, self.dim), self.dtype)
        view = memoryview(out).cast("B")
        breaks = np.flatnonzero(np.diff(rows) != 1) + 1
        for first, end in zip([0, *breaks.tolist()], [*breaks.tolist(), rows.size], strict=True):
            size = (end - first) * self.row_bytes
            got = os.preadv(
                self.fd,
                [view[first * self.row_bytes : end * self.row_bytes]],
                self.first_byte + int(rows[first]) * self.row_bytes,
            )
            if got != size:
                raise OSError(f"short read from the features file: {got} of {size} bytes at row {int(rows[first])}")
        return out


class FeatureRows:
    """Read float32 minibatches of rows from a 2-D feature array without loading it whole."""

    def __init__(self, features: np.ndarray, labels: np.ndarray, device: torch.device) -> None:
        self.features = features
        self._file = _FileRows.open(features)
        self.labels = torch.from_numpy(np.ascontiguousarray(labels, dtype=np.int64))
        self.device = device

    @property
    def dim(self) -> int:
        return int(self.features.shape[1])

    def _read_sorted(self, rows: np.ndarray) -> np.ndarray:
        if self._file is not None:
            return self._file.read(rows)
        block = np.asarray(self.features[rows])
        release_pages(self.features)  # a memmap that cannot be read by file: drop the pages the gather mapped
        return block

    def _gather(self, rows: np.ndarray) -> np.ndarray:
        """Rows in the given order; read in sorted order (sequential on disk), then put back."""
        if rows.size and np.all(rows[1:] > rows[:-1]):
            return self._read_sorted(rows)
        order = np.argsort(rows, kind="stable")
        block = self._read_sorted(rows[order])
        out = np.empty_like(block)
        out[order] = block
        return out

    def batches(
        self, rows: np.ndarray, batch_size: int, rng: np.random.Generator | None
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """(x float32, y int64) minibatches over `rows`; shuffled by `rng` (None: in the given order)."""
        order = rng.permutation(rows) if rng is not None else np.asarray(rows)
        chunk = max(batch_size, CHUNK_ROWS // batch_size * batch_size)
        for start in range(0, order.size, chunk):
            picked = order[start : start + chunk]
            block = self._gather(picked)
            labels = self.labels[torch.from_numpy(picked)]
            for offset in range(0, picked.size, batch_size):
                x = torch.from_numpy(block[offset : offset + batch_size]).to(self.device, torch.float32)
                yield x, labels[offset : offset + batch_size].to(self.device)


@dataclass(frozen=True)
class TrialRecord:
    """One (lr, weight decay) configuration tried during tuning and its validation top-1 (percent)."""

    lr: float
    weight_decay: float
    epochs: int
    val_top1: float


@dataclass(frozen=True)
class ProbeResult:
    """The outcome of one probe run (one seed): test top-1 in percent, the chosen pair, and how it was found."""

    method: str
    seed: int
    test_top1: float
    lr: float
    weight_decay: float
    epochs: int
    wall_seconds: float
    trials: tuple[TrialRecord, ...]
    shots: int | None = None
    weight: np.ndarray | None = field(default=None, repr=False, compare=False)  # the final classifier [D, C]
    bias: np.ndarray | None = field(default=None, repr=False, compare=False)  # [C]; scores = x @ weight + bias


@dataclass(frozen=True)
class ProbeSplits:
    """Everything a probe trains on: row readers and index sets (into the training features)."""

    train: FeatureRows
    test: FeatureRows
    tune_rows: np.ndarray  # the 80% split, or the shots drawn from it
    validation_rows: np.ndarray  # the full 20% split
    final_rows: np.ndarray  # all training rows, or the same shots
    test_rows: np.ndarray
    classes: int


def prepare_probe(
    train_x: np.ndarray,
    train_y: np.ndarray,
    test_x: np.ndarray,
    test_y: np.ndarray,
    *,
    seed: int,
    shots: int | None,
    device: torch.device,
    class_names: Sequence[str] | None = None,
    check_values: bool = True,
) -> ProbeSplits:
    """Validate the inputs, split 80/20 per class (seeded), draw the few-shot rows, wrap the features."""
    train_labels = check_features(train_x, train_y, "train")
    test_labels = check_features(test_x, test_y, "test")
    if train_x.shape[1] != test_x.shape[1]:
        raise ValueError(f"train features are {train_x.shape[1]}-d but test features are {test_x.shape[1]}-d")
    if check_values:
        check_finite(train_x, "train")
        if test_x is not train_x:  # the learner scores its own training rows: scan a level once, not twice
            check_finite(test_x, "test")

    tune, validation = stratified_split(train_labels, seed=derive_seed(seed, 1))
    if shots is not None:
        tune = tune[few_shot_indices(train_labels[tune], shots, seed=derive_seed(seed, 2), names=class_names)]
    return ProbeSplits(
        train=FeatureRows(train_x, train_labels, device),
        test=FeatureRows(test_x, test_labels, device),
        tune_rows=tune,
        validation_rows=validation,
        final_rows=tune if shots is not None else np.arange(train_labels.size),
        test_rows=np.arange(test_labels.size),
        classes=int(max(train_labels.max(), test_labels.max())) + 1,
    )
