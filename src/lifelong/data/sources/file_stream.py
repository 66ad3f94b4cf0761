"""The shared base of the file-backed temporal sources (ClearFolder, TimestampCsv): lists of files per bucket,
decoded lazily into labeled images or resized unlabeled pools."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from lifelong.core.tasks import TaskKind
from lifelong.data.images import decode_files, resize_all
from lifelong.data.labeled import LabeledImages
from lifelong.data.temporal import OfficialSplits


class FileStream:
    """Shared file handling: decoding labeled buckets and unlabeled pools from lists of files."""

    name: str
    class_names: tuple[str, ...]
    num_buckets: int
    labeled_buckets: tuple[int, ...]
    windows: tuple[tuple[str, str], ...]
    resolution: int | None = None
    domain: str = "object"
    official_splits: OfficialSplits | None = None  # none released with a CSV

    def __init__(self, unlabeled_size: int, skip_corrupt: bool, channels: int) -> None:
        if not isinstance(unlabeled_size, int | np.integer) or unlabeled_size < 1:
            raise ValueError(f"unlabeled_size must be an integer >= 1, got {unlabeled_size!r}")
        if channels not in (1, 3):
            raise ValueError(f"channels must be 1 or 3, got {channels!r}")
        self.unlabeled_size = int(unlabeled_size)
        self.skip_corrupt = bool(skip_corrupt)
        self.channels = channels
        self.notes: dict[str, Any] = {"corrupt_skipped": 0, "corrupt_files": []}
        self._labeled_files: dict[int, list[tuple[Path, int]]] = {}
        self._unlabeled_files: dict[int, list[Path]] = {}

    def _check_bucket(self, bucket: int) -> None:
        if not isinstance(bucket, int | np.integer) or not 0 <= bucket < self.num_buckets:
            raise ValueError(f"{self.name}: bucket must be an integer in 0..{self.num_buckets - 1}, got {bucket!r}")

    def _check_labeled(self, bucket: int) -> None:
        self._check_bucket(bucket)
        if bucket not in self.labeled_buckets:
            raise ValueError(
                f"{self.name}: bucket {bucket} has no labeled data; labeled buckets are {list(self.labeled_buckets)}"
            )

    def _record_skipped(self, skipped: list[str]) -> None:
        new = [s for s in skipped if s not in self.notes["corrupt_files"]]
        self.notes["corrupt_files"].extend(new)
        self.notes["corrupt_skipped"] = len(self.notes["corrupt_files"])

    def _labeled_images(self, bucket: int) -> LabeledImages:
        files = self._labeled_files.get(bucket, [])
        decoded, kept, skipped = decode_files([f for f, _ in files], skip_corrupt=self.skip_corrupt)
        self._record_skipped(skipped)
        return LabeledImages(
            images=decoded,
            labels=np.asarray([files[i][1] for i in kept], dtype=np.int64),
            ids=[str(files[i][0]) for i in kept],
            class_names=self.class_names,
            kind=TaskKind.MULTI_CLASS,
            notes={
                "source": self.name,
                "bucket": int(bucket),
                "corrupt_skipped": len(skipped),
                "corrupt_files": skipped,
            },
        )

    def unlabeled(self, bucket: int) -> np.ndarray:
        """uint8 [N, unlabeled_size, unlabeled_size, channels] of bucket `bucket`'s unlabeled files (N may be 0)."""
        self._check_bucket(bucket)
        files = self._unlabeled_files.get(bucket, [])
        decoded, _, skipped = decode_files(files, skip_corrupt=self.skip_corrupt)
        self._record_skipped(skipped)
        return resize_all(decoded, self.unlabeled_size, self.channels)
