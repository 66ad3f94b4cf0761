"""Temporal streams: buckets of data ordered by time (CLEAR), the protocol sources implement, and time bucketing.

A stream has buckets 0..N; bucket 0 is unlabeled only (self-supervised pretraining), buckets 1..N hold
labeled data over one fixed label space. Timestamps are float seconds since the Unix epoch (UTC).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from lifelong.data.labeled import LabeledImages

# CLEAR's bucket edges (upload dates in YFCC100M): [edges[k], edges[k + 1]) is bucket k, 11 buckets.
CLEAR_EDGES: tuple[str, ...] = (
    "2004-01-01",
    "2007-04-09",
    "2008-03-21",
    "2008-12-23",
    "2009-09-07",
    "2010-06-03",
    "2011-02-05",
    "2011-09-24",
    "2012-06-05",
    "2013-02-03",
    "2013-09-08",
    "2014-04-28",
)


@dataclass
class LabeledFeatures:
    """Pre-extracted features of one bucket: float32 [N, D] with int64 labels over fixed class_names."""

    features: np.ndarray
    labels: np.ndarray
    ids: list[str]
    class_names: tuple[str, ...]
    notes: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.features = np.ascontiguousarray(np.asarray(self.features, dtype=np.float32))
        self.labels = np.asarray(self.labels)
        self.ids = [str(i) for i in self.ids]
        self.class_names = tuple(str(c) for c in self.class_names)
        n = len(self.ids)
        if self.features.ndim != 2 or len(self.features) != n:
            raise ValueError(f"features must be [N, D] with N = {n} ids, got shape {self.features.shape}")
        if self.labels.shape != (n,) or (n and not np.issubdtype(self.labels.dtype, np.integer)):
            raise ValueError(f"labels must be integers of shape ({n},), got {self.labels.dtype} {self.labels.shape}")
        self.labels = self.labels.astype(np.int64)
        bad = np.flatnonzero((self.labels < 0) | (self.labels >= len(self.class_names)))
        if len(bad):
            i = int(bad[0])
            raise ValueError(
                f"item {self.ids[i]!r}: label {int(self.labels[i])} is outside 0..{len(self.class_names) - 1} "
                f"({len(self.class_names)} classes)"
            )
        if not np.isfinite(self.features).all():
            i = int(np.flatnonzero(~np.isfinite(self.features).all(axis=1))[0])
            raise ValueError(f"item {self.ids[i]!r}: features hold NaN or infinite values; re-extract them")

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    def subset(self, indices: Sequence[int] | np.ndarray) -> LabeledFeatures:
        """The items at `indices` (in that order), same classes, a copy of the notes."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        return LabeledFeatures(
            self.features[idx], self.labels[idx], [self.ids[i] for i in idx], self.class_names, dict(self.notes)
        )


OFFICIAL_KINDS = ("seeded", "test-folder")


@dataclass(frozen=True)
class OfficialSplits:
    """The train/test splits released with a temporal source, so that the IID protocol need not draw its own.

    `kind` "seeded": one split per seed, each bucket's labeled data divided by files (CLEAR's original
    `training_folder/testset_ratio_0.3/split_<seed>/`); `seeds` lists the released ones. `kind` "test-folder":
    a separately released test set per bucket (the newer CLEAR's `test/`), the same for every seed.
    `where` is the folder they came from; `problem`, when set, says why they cannot be used.
    """

    kind: str
    where: str
    seeds: tuple[int, ...] = ()
    problem: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in OFFICIAL_KINDS:
            raise ValueError(f"official split kind must be one of {OFFICIAL_KINDS}, got {self.kind!r}")

    def name(self, seed: int) -> str:
        """The split's name as the task notes record it: official:split_<seed> or official:test-folder."""
        return f"official:split_{int(seed)}" if self.kind == "seeded" else "official:test-folder"


@runtime_checkable
class OfficialSplitSource(Protocol):
    """A TemporalSource that may carry official splits (optional: a source without them is split by the suite)."""

    official_splits: OfficialSplits | None  # None: no official split released with the data

    def official_split(
        self, bucket: int, seed: int
    ) -> tuple[LabeledImages | LabeledFeatures, LabeledImages | LabeledFeatures]:
        """(train, test) data of labeled bucket `bucket` under the official split for `seed`."""
        ...


@runtime_checkable
class TemporalSource(Protocol):
    """Buckets of a temporal stream, as suites/clear.py consumes them."""

    name: str
    class_names: tuple[str, ...]  # fixed label space, sorted, includes the background class
    num_buckets: int  # including bucket 0
    labeled_buckets: tuple[int, ...]  # buckets with labels, in time order (1..N for CLEAR)
    windows: tuple[tuple[str, str], ...]  # (start, end) ISO dates per bucket, ("", "") when unknown
    resolution: int | None  # native square side for generated data (None: varies)

    def labeled(self, bucket: int) -> LabeledImages | LabeledFeatures: ...

    def unlabeled(self, bucket: int) -> np.ndarray: ...


# ---------------------------------------------------------------------------------------------------------
# timestamps


def _parse_one(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("a boolean is not a timestamp")
    if isinstance(value, int | float | np.integer | np.floating):
        seconds = float(value)
    elif isinstance(value, dt.datetime):
        seconds = (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).timestamp()
    elif isinstance(value, dt.date):
        seconds = dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC).timestamp()
    elif isinstance(value, np.datetime64):
        seconds = float(value.astype("datetime64[us]").astype(np.int64)) / 1e6
    elif isinstance(value, str):
        text = value.strip()
        try:
            seconds = float(text)
        except ValueError:
            parsed = dt.datetime.fromisoformat(text)  # dates, "T" or " " datetimes, offsets and "Z" (Python 3.11)
            seconds = (parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)).timestamp()
    else:
        raise ValueError(f"unsupported type {type(value).__name__}")
    if not np.isfinite(seconds):
        raise ValueError("not a finite number")
    return seconds


def parse_timestamps(values: Iterable[Any], *, rows: Sequence[str] | None = None) -> np.ndarray:
    """float64 seconds since the epoch from ISO dates ("2008-03-21"), ISO datetimes or unix numbers (int/float/str).

    Naive dates and datetimes are read as UTC. A bad value raises ValueError naming its row: `rows[i]`
    when given (e.g. "file.csv:12"), else "row i" (0-based).
    """
    values = list(values.tolist() if isinstance(values, np.ndarray) and values.dtype.kind in "iuf" else values)
    out = np.empty(len(values), dtype=np.float64)
    for i, value in enumerate(values):
        try:
            out[i] = _parse_one(value)
        except (ValueError, TypeError, OverflowError) as exc:
            where = rows[i] if rows is not None else f"row {i}"
            raise ValueError(
                f"{where}: bad timestamp {value!r} ({exc}); use an ISO date (2008-03-21), an ISO datetime "
                "(2008-03-21T12:30:00) or unix seconds"
            ) from None
    return out


def iso_date(seconds: float) -> str:
    """The UTC calendar date of a timestamp, as "YYYY-MM-DD"."""
    return dt.datetime.fromtimestamp(float(seconds), tz=dt.UTC).date().isoformat()


# ---------------------------------------------------------------------------------------------------------
# bucketing


def equal_count_buckets(timestamps: Sequence[Any] | np.ndarray, num_buckets: int) -> np.ndarray:
    """int64 bucket per item: sorted by time (stable, ties keep input order), cut into equal counts (+-1 item).

    Bucket k holds the items of time rank r with floor(r B / n) = k, so sizes differ by at most one and
    every bucket is non-empty when n >= num_buckets.
    """
    if not isinstance(num_buckets, int | np.integer) or num_buckets < 1:
        raise ValueError(f"num_buckets must be an integer >= 1, got {num_buckets!r}")
    times = _as_seconds(timestamps)
    n = len(times)
    order = np.argsort(times, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    return (rank * int(num_buckets)) // max(n, 1)


def window_buckets(timestamps: Sequence[Any] | np.ndarray, edges: Sequence[Any] | np.ndarray) -> np.ndarray:
    """int64 bucket per item for ascending `edges` (dates or seconds): [edges[k], edges[k+1]) is bucket k.

    len(edges) - 1 buckets (CLEAR_EDGES: 11). Items before edges[0] or at/after edges[-1] get -1; callers
    drop them and say how many in their notes.
    """
    bounds = _as_seconds(edges)
    if len(bounds) < 2:
        raise ValueError(f"edges must hold at least 2 boundaries (one bucket), got {len(bounds)}")
    steps = np.diff(bounds)
    if (steps <= 0).any():
        k = int(np.flatnonzero(steps <= 0)[0])
        raise ValueError(
            f"edges must be strictly ascending: edge {k + 1} ({list(edges)[k + 1]!r}) is not after "
            f"edge {k} ({list(edges)[k]!r})"
        )
    times = _as_seconds(timestamps)
    bucket = np.searchsorted(bounds, times, side="right").astype(np.int64) - 1
    bucket[(times < bounds[0]) | (times >= bounds[-1])] = -1
    return bucket


def _as_seconds(values: Sequence[Any] | np.ndarray) -> np.ndarray:
    if isinstance(values, np.ndarray) and values.dtype.kind in "iuf":
        times = values.astype(np.float64).reshape(-1)
        if not np.isfinite(times).all():
            i = int(np.flatnonzero(~np.isfinite(times))[0])
            raise ValueError(f"row {i}: bad timestamp {times[i]!r}; timestamps must be finite")
        return times
    return parse_timestamps(values)
