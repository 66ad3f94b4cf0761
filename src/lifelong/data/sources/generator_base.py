"""What every offline generator shares: the class lists, balanced labels, uint8 conversion, LabeledImages."""

from __future__ import annotations

import string
from collections.abc import Sequence

import numpy as np

from lifelong.core.tasks import TaskKind
from lifelong.data.labeled import LabeledImages

LETTERS = "ABCDEFGHIJ"
DIGITS = string.digits
CHARS = string.digits + string.ascii_uppercase + string.ascii_lowercase
SHAPE_CLASSES = ("circle", "square", "triangle", "cross", "star", "ring", "crescent", "ellipse")
TEXTURE_CLASSES = (
    "grating_0",
    "grating_45",
    "grating_90",
    "grating_135",
    "checkerboard",
    "dots",
    "white_noise",
    "smooth_noise",
)
DEFAULT_PER_CLASS = 100  # images per class when a source is asked for without options
CHUNK = 2048  # images drawn per numpy batch: bounds temporary memory to a few tens of MB


def check_counts(name: str, n_per_class: int, seed: int) -> None:
    if not isinstance(n_per_class, int | np.integer) or n_per_class < 1:
        raise ValueError(f"builtin {name!r}: n_per_class must be an integer >= 1, got {n_per_class!r}")
    if not isinstance(seed, int | np.integer):
        raise ValueError(f"builtin {name!r}: seed must be an integer, got {seed!r}")


def balanced_labels(num_classes: int, n_per_class: int, rng: np.random.Generator) -> np.ndarray:
    """Exactly n_per_class labels of each class, in a seeded random order."""
    return rng.permutation(np.repeat(np.arange(num_classes), n_per_class))


def labeled_images(
    name: str, images: np.ndarray, labels: np.ndarray, classes: Sequence[str], kind: TaskKind, notes: dict
) -> LabeledImages:
    return LabeledImages(
        images=images,
        labels=labels,
        ids=[f"{name}[{i}]" for i in range(len(images))],
        class_names=tuple(classes),
        kind=kind,
        notes={"generator": name, **notes},
    )


def to_uint8(values: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(values), 0, 255).astype(np.uint8)
