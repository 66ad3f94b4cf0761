"""The on-disk format of a features folder (written by `lifelong.training.features.extract_features`), read with
numpy alone so that streams and reports can open one without torch.

    features.npy   [rows, D] float16 (or float32): one row per readable image, in input order
    labels.npy     [rows] int64: the label of each row (written when extraction completes)
    inputs.json    {"files": [...], "labels": [...]}: every input, written once (its sha256 is in the manifest)
    manifest.json  encoder, resolution, dtype, progress (`files_done`, `rows`), skipped files with reasons
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from lifelong.core.errors import DataError
from lifelong.core.files import atomic_write_bytes

FORMAT = "lifelong-features-v1"
FEATURES_FILE = "features.npy"
LABELS_FILE = "labels.npy"
INPUTS_FILE = "inputs.json"
MANIFEST_FILE = "manifest.json"
DTYPES = ("float16", "float32")


class FeatureFileError(DataError, ValueError):
    """A features folder that is incomplete, inconsistent with itself, or made from other inputs."""


class FeatureSizeError(FeatureFileError):
    """Features of one size where a model or encoder needs another (the message names both and the folder)."""


class Features(NamedTuple):
    """What `load_features` returns: the memory-mapped rows, their labels, and the manifest."""

    features: np.ndarray
    labels: np.ndarray
    manifest: dict[str, Any]


def read_json(path: Path) -> dict[str, Any]:
    """A features folder's JSON file; unreadable -> FeatureFileError naming it."""
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise FeatureFileError(f"cannot read {path} ({exc}); extract them again with --overwrite") from exc


def write_json(path: Path, contents: dict[str, Any]) -> None:
    """Write a features folder's JSON file atomically (a crash leaves the old file or the new one)."""
    atomic_write_bytes(path, json.dumps(contents, indent=1).encode())


def load_features(out_dir: str | os.PathLike) -> Features:
    """(features memory-mapped read-only [rows, D], labels [rows] int64, manifest) of a finished extraction.

    Raises FileNotFoundError without a manifest, FeatureFileError when the extraction is unfinished or the files
    disagree (row counts named). Nothing is read into memory but the labels and the manifest.
    """
    out = Path(out_dir)
    manifest_path = out / MANIFEST_FILE
    if not manifest_path.is_file():
        raise FileNotFoundError(f"no {MANIFEST_FILE} in {out}: not a features folder (`lifelong cog run` makes one)")
    manifest = read_json(manifest_path)
    if manifest.get("format") != FORMAT:
        raise FeatureFileError(f"{manifest_path} has format {manifest.get('format')!r}, expected {FORMAT!r}")
    if not manifest.get("complete"):
        done, count = manifest.get("files_done"), manifest.get("inputs", {}).get("count")
        raise FeatureFileError(
            f"extraction in {out} is unfinished ({done} of {count} files done); run the same `lifelong cog run` "
            "command with --resume to finish it"
        )
    features_path, labels_path = out / FEATURES_FILE, out / LABELS_FILE
    try:
        features = np.load(features_path, mmap_mode="r")
        labels = np.load(labels_path)
    except (OSError, ValueError) as exc:  # numpy's own message suggests allow_pickle: not what to do here
        raise FeatureFileError(
            f"cannot read the features in {out}: {features_path.name} or {labels_path.name} is not a NumPy array "
            "file of numbers (damaged, or written by something else); extract them again with --overwrite"
        ) from exc
    if features.ndim != 2 or labels.ndim != 1:
        raise FeatureFileError(
            f"{features_path} must be [rows, D] and {labels_path} [rows]; got {features.shape}, {labels.shape}"
        )
    if features.shape[0] != labels.shape[0]:
        raise FeatureFileError(
            f"{features_path} has {features.shape[0]} rows but {labels_path} has {labels.shape[0]} labels; "
            "they must match row for row: extract them again with --overwrite"
        )
    if features.shape[0] != manifest.get("rows") or features.shape[1] != manifest.get("feature_dim"):
        raise FeatureFileError(
            f"{features_path} has shape {features.shape} but {manifest_path} records {manifest.get('rows')} rows of "
            f"dimension {manifest.get('feature_dim')}; extract them again with --overwrite"
        )
    return Features(features, labels.astype(np.int64, copy=False), manifest)


def feature_files(out_dir: str | os.PathLike) -> list[str]:
    """The image file of each feature row (the inputs less the skipped ones), in row order."""
    out = Path(out_dir)
    manifest = read_json(out / MANIFEST_FILE)
    files = read_json(out / INPUTS_FILE)["files"]
    skipped = {s["index"] for s in manifest["skipped"]}
    return [f for i, f in enumerate(files[: manifest["files_done"]]) if i not in skipped]
