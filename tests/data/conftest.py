"""Helpers shared by the data-layer tests: tiny PNG files and LabeledImages built in memory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from support import write_corrupt_png

from lifelong.core.tasks import TaskKind
from lifelong.data.labeled import LabeledImages


def _write_png(path: Path, value: int, size: tuple[int, int] = (6, 5), mode: str = "RGB") -> Path:
    """A small solid-colour PNG (distinct `value`s give distinct images)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    color = value if mode == "L" else (value, 255 - value, value // 2)
    Image.new(mode, size, color).save(path)
    return path


def _make_labeled(images: np.ndarray, labels: np.ndarray, num_classes: int, **kwargs) -> LabeledImages:
    return LabeledImages(
        images=images,
        labels=labels,
        ids=[f"item[{i}]" for i in range(len(images))],
        class_names=tuple(f"c{k}" for k in range(num_classes)),
        kind=kwargs.pop("kind", TaskKind.MULTI_CLASS),
        **kwargs,
    )


@pytest.fixture
def write_png():
    return _write_png


@pytest.fixture
def write_corrupt():
    return write_corrupt_png


@pytest.fixture
def make_labeled():
    return _make_labeled
