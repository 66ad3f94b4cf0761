"""Files the tests write: tiny PNGs and corrupt images (shared by the data, suite and CLI tests)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image


def write_png(path: Path, seed: int, height: int, width: int, gray: bool = False) -> Path:
    """A tiny random PNG (distinct seeds give distinct images)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shape = (height, width) if gray else (height, width, 3)
    Image.fromarray(np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)).save(path)
    return path


def write_corrupt_png(path: Path) -> Path:
    """A .png holding the first half of a real PNG: Pillow opens it but cannot decode it."""
    full = write_png(path.with_name("full_" + path.name), 999, 40, 40)
    data = full.read_bytes()
    full.unlink()
    path.write_bytes(data[: len(data) // 2])
    return path
