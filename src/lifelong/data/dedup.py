"""De-duplication before splitting (docs/protocols/nevis.md#de-duplication), so that no example lands in two splits."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lifelong.data.labeled import LabeledImages


def _image_md5(image: np.ndarray) -> hashlib._Hash:
    h = hashlib.md5(np.asarray(image.shape, dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(image).tobytes())
    return h


def image_digest(image: np.ndarray) -> bytes:
    """MD5 of an image's shape and raw bytes: equal for identical pixel arrays, whatever their source."""
    return _image_md5(image).digest()


def content_hash(image: np.ndarray, label: np.ndarray | int) -> str:
    """The example key (hex): MD5 of image shape, image bytes and label bytes, as the reference keys examples."""
    h = _image_md5(image)
    h.update(np.asarray(label, dtype=np.int64).tobytes())
    return h.hexdigest()


@dataclass(frozen=True)
class DedupReport:
    """What de-duplication removed: exact duplicates, and repeats of an image under a different label."""

    n_input: int
    n_kept: int
    duplicates_removed: int
    conflicting_labels: int
    conflict_examples: list[tuple[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_input": self.n_input,
            "n_kept": self.n_kept,
            "duplicates_removed": self.duplicates_removed,
            "conflicting_labels": self.conflicting_labels,
            "conflict_examples": [list(pair) for pair in self.conflict_examples],
        }


def deduplicate(labeled: LabeledImages, *, max_examples: int = 5) -> tuple[np.ndarray, DedupReport]:
    """Indices (ascending) of first occurrences of each distinct image, and a report of what was dropped.

    A later copy of an image with the same label is a duplicate; with a different label it is a conflict:
    it is dropped too (the first label wins) but counted separately, with up to `max_examples`
    (first id, dropped id) pairs, so label noise is visible rather than silently merged.
    """
    first: dict[bytes, int] = {}
    kept: list[int] = []
    duplicates = conflicts = 0
    examples: list[tuple[str, str]] = []
    labels = labeled.labels
    for i in range(len(labeled)):
        digest = image_digest(labeled.image(i))
        j = first.setdefault(digest, i)
        if j == i:
            kept.append(i)
        elif np.array_equal(labels[i], labels[j]):
            duplicates += 1
        else:
            conflicts += 1
            if len(examples) < max_examples:
                examples.append((labeled.ids[j], labeled.ids[i]))
    report = DedupReport(len(labeled), len(kept), duplicates, conflicts, examples)
    return np.asarray(kept, dtype=np.int64), report
