"""A features folder while `lifelong.training.features` writes it: the manifest a run resumes from (or a fresh
folder), the pre-allocated `.npy` written a batch of rows at a time and trimmed in place, and the final labels."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.core.files import atomic_write_bytes
from lifelong.data.feature_files import (
    FEATURES_FILE,
    FORMAT,
    INPUTS_FILE,
    LABELS_FILE,
    MANIFEST_FILE,
    FeatureFileError,
    read_json,
    write_json,
)
from lifelong.training.feature_cache import check_feature_size


def npy_header(path: Path) -> tuple[tuple[int, ...], np.dtype, int, tuple[int, int]]:
    """(shape, dtype, byte offset of the data, format version) of a .npy file."""
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        if fortran:
            raise FeatureFileError(f"{path} is Fortran-ordered; delete the folder and extract again")
        return tuple(shape), dtype, f.tell(), version


def set_rows(path: Path, rows: int) -> None:
    """Shrink a [N, D] .npy to its first `rows` rows in place: rewrite the header (same length), then truncate.

    Killed between the two steps the file is still readable (numpy ignores trailing bytes), and running it
    again finishes the job.
    """
    shape, dtype, offset, version = npy_header(path)
    if shape[0] != rows:
        prefix = 10 if version == (1, 0) else 12  # magic (6) + version (2) + header length (2 or 4)
        descr = np.lib.format.dtype_to_descr(dtype)
        text = f"{{'descr': {descr!r}, 'fortran_order': False, 'shape': {(rows, shape[1])!r}, }}"
        room = offset - prefix
        if len(text) >= room:
            raise FeatureFileError(f"cannot rewrite the header of {path} in place; delete the folder and extract again")
        with open(path, "r+b") as f:
            f.seek(prefix)
            f.write((text.ljust(room - 1) + "\n").encode("latin1"))
            f.flush()
            os.fsync(f.fileno())
    os.truncate(path, offset + rows * shape[1] * dtype.itemsize)


def write_rows(path: Path, data_offset: int, start: int, block: np.ndarray) -> None:
    """Write `block` as rows start.. of the .npy through a map of those rows only, and flush it to disk."""
    if len(block) == 0:
        return
    window = np.memmap(
        path,
        dtype=block.dtype,
        mode="r+",
        offset=data_offset + start * block.shape[1] * block.itemsize,
        shape=block.shape,
    )
    window[:] = block
    window.flush()
    del window


def folder_settings(
    encoder: dict, identity: dict, side: int, dtype: str, inputs_sha256: str, count: int
) -> dict[str, Any]:
    """The manifest fields that must match for a folder to be resumed (`encoder` describes it for people; it is
    not compared, so the same weights found under another path continue the folder)."""
    return {
        "format": FORMAT,
        "encoder": encoder,
        "identity": identity,
        "precision": identity["precision"],
        "resolution": side,
        "transform": identity["preprocessing"]["transform"],
        "dtype": dtype,
        "feature_dim": identity["feature_dim"],
        "inputs": {"file": INPUTS_FILE, "sha256": inputs_sha256, "count": count},
    }


def start_folder(out: Path, settings: dict, inputs: bytes, resume: bool) -> dict[str, Any]:
    """The manifest to continue from: the folder's own when it matches `settings`, else a fresh extraction."""
    manifest_path = out / MANIFEST_FILE
    if resume and manifest_path.is_file():
        check_feature_size(out, settings["feature_dim"], encoder=encoder_name(settings["encoder"]))
        manifest = read_json(manifest_path)
        differs = [k for k, v in settings.items() if k not in ("encoder", "identity") and manifest.get(k) != v]
        if not differs and manifest.get("identity") != settings["identity"]:
            old = manifest.get("identity") or {}
            differs = [f"encoder {k}" for k, v in settings["identity"].items() if old.get(k) != v] or ["encoder"]
        if differs:
            raise FeatureFileError(
                f"{out} holds features of other inputs or settings (differs in: {', '.join(differs)}); "
                "choose another output folder, or delete this one and extract again"
            )
        features = out / FEATURES_FILE
        if not features.is_file():
            raise FeatureFileError(f"{manifest_path} exists but {features} is missing; delete {out} and extract again")
        shape, dtype, _, _ = npy_header(features)
        count, dim = settings["inputs"]["count"], settings["feature_dim"]
        if dtype != np.dtype(settings["dtype"]) or shape[1:] != (dim,) or shape[0] not in (count, manifest["rows"]):
            raise FeatureFileError(
                f"{features} has shape {shape} {dtype}, expected ({count}, {dim}) {settings['dtype']}; "
                f"delete {out} and extract again"
            )
        return manifest
    out.mkdir(parents=True, exist_ok=True)
    for name in (MANIFEST_FILE, LABELS_FILE, FEATURES_FILE):  # manifest first: no stale progress survives
        (out / name).unlink(missing_ok=True)
    atomic_write_bytes(out / INPUTS_FILE, inputs)
    shape = (settings["inputs"]["count"], settings["feature_dim"])
    created = np.lib.format.open_memmap(out / FEATURES_FILE, mode="w+", dtype=settings["dtype"], shape=shape)
    del created  # a sparse file: no row is held in memory
    manifest = settings | {"batch_size": None, "files_done": 0, "rows": 0, "skipped": [], "complete": False}
    write_json(manifest_path, manifest)
    return manifest


def encoder_name(encoder: dict) -> str:
    """The encoder of a manifest in a few words, for messages."""
    return f"encoder {encoder.get('spec') or encoder.get('description') or encoder.get('weights_sha256', '?')[:12]!r}"


def finish_folder(out: Path, manifest: dict[str, Any], labels: np.ndarray) -> None:
    """Trim the features to the rows written, write the row labels, and mark the manifest complete."""
    set_rows(out / FEATURES_FILE, manifest["rows"])
    kept = np.ones(len(labels), dtype=bool)
    kept[[s["index"] for s in manifest["skipped"]]] = False
    row_labels = labels[kept]
    if len(row_labels) != manifest["rows"]:
        raise FeatureFileError(
            f"{out}: {manifest['rows']} rows written but {len(row_labels)} readable inputs; delete the folder and "
            "extract again"
        )
    buffer = io.BytesIO()
    np.save(buffer, row_labels)
    atomic_write_bytes(out / LABELS_FILE, buffer.getvalue())
    manifest["complete"] = True
    write_json(out / MANIFEST_FILE, manifest)
