"""A loaded source before splitting: images of any size, their labels, and names for error messages."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lifelong.core.datasets import check_labels
from lifelong.core.tasks import TaskKind

OFFICIAL_SPLIT_NAMES = ("train", "val", "test")


@dataclass
class LabeledImages:
    """Images with labels, as a source yields them (any sizes, uint8 HWC), validated at construction.

    `images` is a list of uint8 [H, W, C] arrays (sizes may differ) or one uint8 [N, H, W, C] array.
    `labels` is int [N] (multi-class) or uint8 multi-hot [N, num_classes] (multi-label). `ids` names each
    item (a file path, or e.g. "digits[12]") so that every error can point at it. `official_split` holds
    "train" / "val" / "test" per item when the source defines one, else None. `notes` records what the
    loader did (e.g. corrupt files skipped).
    """

    images: list[np.ndarray] | np.ndarray
    labels: np.ndarray
    ids: list[str]
    class_names: tuple[str, ...]
    kind: TaskKind
    official_split: np.ndarray | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.kind = TaskKind(self.kind)
        self.class_names = tuple(str(c) for c in self.class_names)
        self.ids = list(self.ids)
        n = len(self.ids)
        if len(self.images) != n:
            raise ValueError(f"{len(self.images)} images but {n} ids: every image needs exactly one id")
        self._validate_class_names()
        self._validate_images()
        self.labels = self._validated_labels(np.asarray(self.labels))
        if self.official_split is not None:
            self.official_split = self._validated_official_split(np.asarray(self.official_split))

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        split = "" if self.official_split is None else ", official split"
        return f"LabeledImages(n={len(self)}, {self.num_classes} classes, {self.kind.value}{split})"

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    def image(self, i: int) -> np.ndarray:
        """The i-th image, uint8 [H, W, C]."""
        return self.images[i]

    def subset(self, indices: Sequence[int] | np.ndarray) -> LabeledImages:
        """The items at `indices` (in that order), with the same classes and a copy of the notes."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        if isinstance(self.images, np.ndarray):
            images: list[np.ndarray] | np.ndarray = self.images[idx]
        else:
            images = [self.images[i] for i in idx]
        return LabeledImages(
            images=images,
            labels=self.labels[idx],
            ids=[self.ids[i] for i in idx],
            class_names=self.class_names,
            kind=self.kind,
            official_split=None if self.official_split is None else self.official_split[idx],
            notes=dict(self.notes),
        )

    # -- validation -------------------------------------------------------------------------------------

    def _validate_class_names(self) -> None:
        if not self.class_names:
            raise ValueError("class_names is empty: a labeled source needs at least one class name")
        seen: set[str] = set()
        for name in self.class_names:
            if name in seen:
                raise ValueError(f"class name {name!r} appears twice in class_names; class names must be unique")
            seen.add(name)

    def _validate_images(self) -> None:
        if isinstance(self.images, np.ndarray):
            if self.images.ndim != 4 or self.images.dtype != np.uint8:
                raise ValueError(
                    f"an image array must be uint8 [N, H, W, C], got {self.images.dtype} {self.images.shape}; "
                    "add a channel axis to grayscale arrays (images[..., None])"
                )
            return
        for i, image in enumerate(self.images):
            if not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.ndim != 3:
                got = f"{image.dtype} {image.shape}" if isinstance(image, np.ndarray) else type(image).__name__
                raise ValueError(
                    f"item {self.ids[i]!r}: images must be uint8 [H, W, C] arrays, got {got}; "
                    "decode files with lifelong.data.images.decode_image"
                )
            if min(image.shape) < 1:
                raise ValueError(f"item {self.ids[i]!r}: empty image of shape {image.shape}")

    def _validated_labels(self, labels: np.ndarray) -> np.ndarray:
        n = len(self.ids)
        if len(labels) != n:
            raise ValueError(f"{n} items but {len(labels)} labels")
        return check_labels(labels, self.kind, self.num_classes, lambda row: f"item {self.ids[row]!r}")

    def _validated_official_split(self, split: np.ndarray) -> np.ndarray:
        n = len(self.ids)
        if split.shape != (n,):
            raise ValueError(f"official_split must have shape ({n},) for {n} items, got {split.shape}")
        split = split.astype(str)
        bad = ~np.isin(split, OFFICIAL_SPLIT_NAMES)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"item {self.ids[row]!r}: official split {str(split[row])!r} is not one of {OFFICIAL_SPLIT_NAMES}"
            )
        return split
