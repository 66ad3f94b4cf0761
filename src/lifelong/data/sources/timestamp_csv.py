"""A temporal source from a CSV of path,label,timestamp rows (TimestampCsv): rows sorted by time, cut into buckets."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.data.labeled import LabeledImages
from lifelong.data.sources.file_stream import FileStream
from lifelong.data.temporal import equal_count_buckets, iso_date, parse_timestamps, window_buckets


class TimestampCsv(FileStream):
    """A stream from a CSV with columns path,label,timestamp: rows sorted by time and cut into buckets.

    Paths are relative to the CSV's folder; an empty label marks an unlabeled image. Buckets are equal
    counts of all rows (`num_buckets`, default 11) or time windows (`edges`, N + 1 ascending dates for N
    buckets; rows outside are dropped and counted in notes). Bucket 0 is pretraining only: its labeled
    rows join its unlabeled pool. Classes are `class_names` or the sorted label names seen.
    """

    def __init__(
        self,
        csv_path: str | Path,
        *,
        num_buckets: int | None = None,
        edges: Sequence[Any] | None = None,
        class_names: Sequence[str] | None = None,
        unlabeled_size: int = 32,
        skip_corrupt: bool = False,
        channels: int = 3,
        domain: str = "object",
    ) -> None:
        super().__init__(unlabeled_size, skip_corrupt, channels)
        self.path = Path(csv_path)
        self.name = f"csv:{self.path}"
        self.domain = domain
        if num_buckets is not None and edges is not None:
            raise ValueError("give num_buckets (equal-count buckets) or edges (time windows), not both")
        rows = self._read_rows()
        where = [at for at, _ in rows]
        files = [self._resolve(row["path"], at) for at, row in rows]
        times = parse_timestamps([row["timestamp"] for _, row in rows], rows=where)
        names = [row.get("label", "") for _, row in rows]
        seen = sorted({n for n in names if n})
        self.class_names = tuple(str(c) for c in class_names) if class_names is not None else tuple(seen)
        if not self.class_names:
            raise ValueError(f"{str(self.path)!r} has no labeled row; give class_names or label some rows")
        index = {c: k for k, c in enumerate(self.class_names)}
        for (at, _), label in zip(rows, names, strict=True):
            if label and label not in index:
                raise ValueError(
                    f"{at}: label {label!r} is not one of the {len(self.class_names)} class_names "
                    f"{list(self.class_names)}"
                )
        if edges is not None:
            bucket = window_buckets(times, edges)
            self.num_buckets = len(edges) - 1
        else:
            self.num_buckets = 11 if num_buckets is None else int(num_buckets)
            bucket = equal_count_buckets(times, self.num_buckets)
        dropped = [where[i] for i in np.flatnonzero(bucket < 0)]
        self.notes.update({"rows": len(rows), "outside_edges": len(dropped), "outside_edges_rows": dropped[:20]})
        windows = []
        for b in range(self.num_buckets):
            members = times[bucket == b]
            windows.append((iso_date(members.min()), iso_date(members.max())) if len(members) else ("", ""))
            for i in np.flatnonzero(bucket == b):
                if names[i] and b > 0:
                    self._labeled_files.setdefault(b, []).append((files[i], index[names[i]]))
                else:
                    self._unlabeled_files.setdefault(b, []).append(files[i])
        self.windows = tuple(windows)
        self.labeled_buckets = tuple(sorted(self._labeled_files))
        if not self.labeled_buckets:
            raise ValueError(
                f"{str(self.path)!r}: no labeled row falls in buckets 1..{self.num_buckets - 1} "
                "(bucket 0 is pretraining only, its labels are dropped)"
            )
        self.notes["labeled_per_bucket"] = {b: len(v) for b, v in self._labeled_files.items()}

    def __repr__(self) -> str:
        return f"TimestampCsv({str(self.path)!r}, buckets={self.num_buckets})"

    def _read_rows(self) -> list[tuple[str, dict[str, str]]]:
        if not self.path.is_file():
            raise FileNotFoundError(f"timestamp CSV not found: {str(self.path)!r}")
        with self.path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            columns = [c.strip() for c in reader.fieldnames or []]
            missing = [c for c in ("path", "label", "timestamp") if c not in columns]
            if missing:
                raise ValueError(
                    f"timestamp CSV {str(self.path)!r} lacks column(s) {missing} (columns: {columns}); "
                    "the header must be path,label,timestamp"
                )
            rows = [
                (f"{self.path}:{reader.line_num}", {k.strip(): (v or "").strip() for k, v in row.items() if k})
                for row in reader
            ]
        if not rows:
            raise ValueError(f"timestamp CSV {str(self.path)!r} has no rows")
        return rows

    def _resolve(self, name: str, at: str) -> Path:
        if not name:
            raise ValueError(f"{at}: empty path; every row needs an image path")
        file = Path(name) if Path(name).is_absolute() else self.path.parent / name
        if not file.is_file():
            raise FileNotFoundError(f"{at}: image file not found: {str(file)!r}")
        return file

    def labeled(self, bucket: int) -> LabeledImages:
        """Bucket `bucket`'s labeled images (ids = file paths), of any sizes."""
        self._check_labeled(bucket)
        return self._labeled_images(bucket)
