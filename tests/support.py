"""Files the tests write: tiny PNGs, corrupt images, a two-task stream manifest (shared by data, suite, CLI tests)."""

from __future__ import annotations

import gzip
import struct
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


def idx_bytes(array: np.ndarray) -> bytes:
    """An IDX file's bytes (MNIST's format, uint8 payload)."""
    header = bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(np.uint8).tobytes()


def write_idx(path: Path, array: np.ndarray, compress: bool = True) -> None:
    """An IDX file (uint8 payload), gzipped by default."""
    data = idx_bytes(array)
    path.write_bytes(gzip.compress(data) if compress else data)


def write_mnist(folder: Path, n_train: int = 30, n_test: int = 8) -> None:
    """A tiny MNIST in IDX files: distinct random 28x28 digits, labels 0..9 in turn."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        write_idx(folder / f"{prefix}-images-idx3-ubyte.gz", rng.integers(0, 256, (n, 28, 28)))
        write_idx(folder / f"{prefix}-labels-idx1-ubyte.gz", np.arange(n) % 10)


TWO_TASKS = """meta_test_from_year: 2002
tasks:
  - {name: digits, source: "builtin:digits", year: 2001, domain: ocr, resolution: 8,
     options: {n_per_class: 20, seed: 0}}
  - {name: shapes, source: "builtin:shapes", year: 2002, resolution: 8, options: {n_per_class: 12, seed: 1, size: 8}}
"""


def write_two_task_manifest(folder: Path, name: str) -> Path:
    """`folder/<name>.yaml`: a 2-task stream of builtin digits (2001) and shapes (2002, meta-test) at 8 px."""
    path = folder / f"{name}.yaml"
    path.write_text(f"name: {name}\n{TWO_TASKS}")
    return path


def save_tiny_hf_resnet(folder: Path, side: int) -> Path:
    """A tiny randomly initialised transformers ResNet (features of size 12) and its image processor (shorter side
    `side`, crop 0.875) saved to `folder`, seeded: an `hf:FOLDER` encoder that loads offline."""
    import torch
    import transformers

    config = transformers.ResNetConfig(embedding_size=8, hidden_sizes=[8, 12], depths=[1, 1])
    torch.manual_seed(0)
    transformers.AutoModel.from_config(config).save_pretrained(folder)
    transformers.ConvNextImageProcessor(size={"shortest_edge": side}, crop_pct=0.875).save_pretrained(folder)
    return folder
