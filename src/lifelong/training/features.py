"""Frozen-encoder features of image files (docs/protocols/cog.md#features), memory-mapped and resumable.

`extract_features` decodes images batch by batch (shorter side resized to S, bicubic; centre crop S; or, for an
encoder whose own preprocessing keeps a smaller centre share, that square resized to S; scaled to [-1, 1] like
every toolkit input, which the encoder normalises its own way), runs the encoder, L2-normalises and writes each
batch into a pre-allocated `.npy` through a memory map of that batch's rows only, so memory stays O(batch) for
any N x D. The folder's format, and `load_features` that reads it without torch, live in
`lifelong.data.feature_files`.

The forward pass runs at the current accelerator's precision for the device (bf16 autocast where it asks for it),
and the manifest records the encoder's identity with that precision (`lifelong.training.feature_cache`), so a
folder of fp32 CPU features is never continued with bf16 GPU rows. `cached_features` puts the folder in the shared
feature cache under a key of (identity, inputs): a second run with the same encoder and images reads it.

The manifest is rewritten atomically after each batch's rows are flushed, so a killed run resumes at the first
unfinished batch; with the same batch size the batches are the same and the features bit-identical. Unreadable
images are skipped (`skip_corrupt=True`, the default): later rows move up, labels stay aligned, and the manifest
lists each file with its reason; with `skip_corrupt=False` the first one is an UnreadableImageError instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from lifelong.core.progress import ProgressUpdate, progress_bar
from lifelong.data.feature_files import (
    DTYPES,
    FEATURES_FILE,
    MANIFEST_FILE,
    Features,
    FeatureSizeError,
    load_features,
    write_json,
)
from lifelong.data.images import CorruptImageError, decode_image, to_channels
from lifelong.training.devices import device_for
from lifelong.training.encoders import (
    Encoder,
    check_encoder_spec,
    inference_layout,
    load_encoder,
    square_image,
    weights_sha256,
)
from lifelong.training.feature_cache import (
    autocast,
    cache_key,
    cache_root,
    encoder_identity,
    files_sha256,
    forward_precision,
    locked,
)
from lifelong.training.feature_folder import finish_folder, folder_settings, npy_header, start_folder, write_rows
from lifelong.training.inputs import prepare_batch

TRANSFORM = "shorter side resized to S (bicubic), centre crop S x S, pixels scaled to [-1, 1]"


def transform(crop_fraction: float = 1.0) -> str:
    """How a file becomes an S x S input (recorded in the manifest and the cache key)."""
    if crop_fraction == 1.0:
        return TRANSFORM
    return (
        f"centre square of {crop_fraction:g} x the shorter side, resized to S x S (bicubic), pixels scaled to [-1, 1]"
    )


def _crop_fraction(encoder: Encoder) -> float:
    """The share of the shorter side the encoder's own preprocessing keeps (1.0 when it declares none)."""
    return float(getattr(getattr(encoder, "preprocessing", None), "crop_fraction", 1.0))


def load_square(path: str | os.PathLike, size: int, crop_fraction: float = 1.0) -> np.ndarray:
    """uint8 [size, size, C] (C = 1 or 3): the shorter side resized to `size` (bicubic), then a centre crop; with
    `crop_fraction` < 1 (an encoder's own eval crop, e.g. R / (R + 32)) the centre square of that share of the
    shorter side, resized to `size`.

    Raises CorruptImageError or FileNotFoundError (naming the file) for an unreadable image.
    """
    image = decode_image(path)
    if crop_fraction != 1.0:
        return square_image(image, size, crop_fraction)
    h, w, channels = image.shape
    scale = size / min(h, w)
    new_w, new_h = max(size, round(w * scale)), max(size, round(h * scale))
    if (new_w, new_h) != (w, h):
        pil = Image.fromarray(image[:, :, 0] if channels == 1 else image)
        image = np.asarray(pil.resize((new_w, new_h), Image.Resampling.BICUBIC)).reshape(new_h, new_w, channels)
    top, left = (new_h - size) // 2, (new_w - size) // 2
    return np.ascontiguousarray(image[top : top + size, left : left + size])


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _resolve_encoder(
    encoder: Encoder | str | os.PathLike, resolution: int | None, precision: str
) -> tuple[Encoder, dict, dict, int]:
    """(Encoder, its description for the manifest, its identity (the cache key's half), input side S)."""
    if isinstance(encoder, Encoder):
        identity: dict[str, Any] = {"spec": None, "file_sha256": None}
    elif isinstance(encoder, str | os.PathLike):
        kind = check_encoder_spec(encoder)
        identity = {"spec": str(encoder), "file_sha256": _file_sha256(Path(encoder)) if kind == "file" else None}
        encoder = load_encoder(encoder, resolution=resolution)
    else:
        raise TypeError(
            f"encoder must be an Encoder or a spec (checkpoint file, TorchScript file, 'package.module:factory'); "
            f"got {type(encoder).__name__}: wrap a module as Encoder(module, feature_dim=D)"
        )
    side = resolution if resolution is not None else encoder.resolution
    if side is None or int(side) < 1:
        raise ValueError(f"give resolution= (the side S images are cropped to, e.g. 224); got {side!r}")
    weights = weights_sha256(encoder)
    identity |= {
        "description": encoder.description,
        "weights_sha256": weights,
        "in_channels": encoder.in_channels,
        "feature_dim": encoder.feature_dim,
        "precision": precision,
    }
    preprocessing = {"resolution": int(side), "transform": transform(_crop_fraction(encoder))}
    key = encoder_identity(encoder, precision=precision, preprocessing=preprocessing, weights_sha256=weights)
    return encoder, identity, key, int(side)


@torch.inference_mode()
def _embed(
    encoder: Encoder, images: np.ndarray, device: torch.device, dtype: str, precision: str, layout: Any = None
) -> np.ndarray:
    """uint8 [B, S, S, C] -> L2-normalised features [B, D] in `dtype`, the forward pass at `precision`; `layout`
    lays the batch out as the encoder is (`encoders.inference_layout`)."""
    x = prepare_batch(to_channels(images, encoder.in_channels), channels=encoder.in_channels).to(device)
    if layout is not None:
        x = layout(x)
    with autocast(precision, device):
        out = encoder(x)
    if out.ndim == 2 and out.shape[0] == len(images) and out.shape[1] != encoder.feature_dim:
        raise FeatureSizeError(
            f"the encoder returned features of size {out.shape[1]} but declares feature_dim={encoder.feature_dim}"
        )
    if out.ndim != 2 or out.shape != (len(images), encoder.feature_dim):
        raise ValueError(
            f"the encoder returned shape {tuple(out.shape)}; expected ({len(images)}, {encoder.feature_dim})"
        )
    out = F.normalize(out.float(), dim=1)
    return out.to(getattr(torch, dtype)).cpu().numpy()


class UnreadableImageError(CorruptImageError):
    """An image that cannot be read while unreadable images are not to be skipped; `file` and `reason` say which."""

    def __init__(self, file: str, reason: str) -> None:
        super().__init__(f"cannot read image {file!r}: {reason}")
        self.file, self.reason = file, reason


def _decode(path: str, side: int, crop_fraction: float) -> np.ndarray | BaseException:
    """The prepared image, or the error that says why it cannot be read."""
    try:
        return load_square(path, side, crop_fraction)
    except (CorruptImageError, FileNotFoundError) as exc:
        return exc


def _reason(exc: BaseException) -> str:
    """Why an image is unreadable, for the manifest."""
    return f"{type(exc).__name__}: {exc}"


def _plain_reason(exc: BaseException) -> str:
    """Why an image is unreadable, without the decoder's advice (the caller says what to do)."""
    if isinstance(exc, CorruptImageError) and exc.__cause__ is not None:
        return str(exc.__cause__) or type(exc.__cause__).__name__
    if isinstance(exc, FileNotFoundError):
        return "file not found"
    return str(exc)


def extract_features(
    encoder: Encoder | str | os.PathLike,
    files: Sequence[str | os.PathLike],
    labels: Sequence[int] | np.ndarray,
    out_dir: str | os.PathLike | None,
    *,
    resolution: int | None = None,
    dtype: str = "float16",
    batch_size: int = 256,
    resume: bool = True,
    progress: bool | ProgressUpdate = False,
    device: str | torch.device | None = None,
    workers: int | None = None,
    skip_corrupt: bool = True,
    description: str | None = None,
    precision: str | None = None,
    cache: str | os.PathLike | None = None,
) -> Features:
    """Penultimate, L2-normalised features of `files` into `out_dir` (see the module doc); returns `load_features`.

    `encoder`: an Encoder or a spec `load_encoder` reads (our checkpoints, TorchScript, 'package.module:factory').
    `resolution`: the side S (default: the encoder's). `resume`: continue a matching folder (a finished one is
    returned as is); False starts over. `progress`: True for a bar, or a function called like the bar's update
    after each committed batch; `description` names the bar (default: `features <out_dir name>`). `device`: default
    the current accelerator's. `workers`: decoding threads (default <= 8). `skip_corrupt`: leave unreadable images
    out (listed in the manifest); False raises UnreadableImageError for the first one, also for a folder that
    already left some out. `precision`: "fp32", "tf32" or "bf16" (default: what the current accelerator uses on
    the device, `feature_cache.forward_precision`); it is part of the folder's identity. `out_dir` None: a
    folder of the shared cache under the root `cache` (see `cached_features`).
    """
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    files = [str(f) for f in files]
    labels = np.asarray(labels)
    if labels.ndim != 1 or len(labels) != len(files) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(
            f"need one integer label per file: got {len(files)} files and labels of shape {labels.shape} "
            f"dtype {labels.dtype}"
        )
    if not files:
        raise ValueError("no files to extract features from")
    labels = labels.astype(np.int64)
    device = device_for(device)
    precision = forward_precision(device) if precision is None else precision
    encoder, described, identity, side = _resolve_encoder(encoder, resolution, precision)
    inputs = json.dumps({"files": files, "labels": labels.tolist()}).encode()
    settings = folder_settings(described, identity, side, dtype, hashlib.sha256(inputs).hexdigest(), len(files))
    if out_dir is None:  # the shared cache (`cached_features`): a folder named by identity and inputs, locked
        out = cache_root(cache) / cache_key(identity, files_sha256(files, labels.tolist()))
        guard: contextlib.AbstractContextManager = locked(out)
    else:
        out, guard = Path(out_dir), contextlib.nullcontext()
    with guard:
        _fill(
            encoder,
            files,
            labels,
            out,
            settings,
            inputs,
            resume=resume,
            skip_corrupt=skip_corrupt,
            side=side,
            crop_fraction=_crop_fraction(encoder),
            dtype=dtype,
            precision=precision,
            batch_size=batch_size,
            device=device,
            progress=progress,
            workers=workers,
            description=description,
        )
    return load_features(out)


def cached_features(
    encoder: Encoder | str | os.PathLike,
    files: Sequence[str | os.PathLike],
    labels: Sequence[int] | np.ndarray,
    *,
    root: str | os.PathLike | None = None,
    overwrite: bool = False,
    **options: Any,
) -> Features:
    """`extract_features` into the shared feature cache (`lifelong.training.feature_cache`): the folder
    `<root>/<key>`, key = hash of (encoder identity with the forward precision, inputs). A second call with the
    same encoder and files (another run, another seed) returns the memory-mapped features without running the
    encoder; an interrupted one resumes. `overwrite`: extract again from scratch. Options: as `extract_features`.
    """
    return extract_features(encoder, files, labels, None, cache=root, resume=not overwrite, **options)


def _fill(
    encoder: Encoder,
    files: list[str],
    labels: np.ndarray,
    out: Path,
    settings: dict[str, Any],
    inputs: bytes,
    *,
    resume: bool,
    skip_corrupt: bool,
    description: str | None,
    **batches: Any,
) -> None:
    """Start, continue or reuse the extraction in `out` (see `extract_features`)."""
    manifest = start_folder(out, settings, inputs, resume)
    if manifest["skipped"] and not skip_corrupt:
        first = manifest["skipped"][0]
        raise UnreadableImageError(first["file"], f"{first['reason']} (left out by an earlier extraction into {out})")
    if manifest["complete"]:
        return
    manifest["batch_size"] = batches["batch_size"]
    encoder.to(batches["device"])
    was_training = encoder.training
    encoder.eval()
    try:
        with inference_layout(encoder) as layout:
            _run_batches(
                encoder,
                layout,
                files,
                out,
                manifest,
                skip_corrupt=skip_corrupt,
                description=description or f"features {out.name}",
                **batches,
            )
    finally:
        encoder.train(was_training)
    finish_folder(out, manifest, labels)


def _run_batches(
    encoder: Encoder,
    layout: Any,
    files: list[str],
    out: Path,
    manifest: dict[str, Any],
    *,
    side: int,
    crop_fraction: float,
    dtype: str,
    precision: str,
    batch_size: int,
    device: torch.device,
    progress: bool | ProgressUpdate,
    workers: int | None,
    skip_corrupt: bool,
    description: str,
) -> None:
    """Extract the batches not yet done, committing each (rows flushed, then the manifest) before the next."""
    path = out / FEATURES_FILE
    _, _, data_offset, _ = npy_header(path)
    starts = range(manifest["files_done"], len(files), batch_size)
    threads = workers if workers is not None else min(8, os.cpu_count() or 1)
    bar = (
        contextlib.nullcontext(progress)
        if callable(progress)
        else progress_bar(bool(progress), len(files), done=manifest["files_done"], description=description)
    )
    with bar as update, ThreadPoolExecutor(max(1, threads)) as pool:

        def submit(start: int) -> list[Future]:
            return [pool.submit(_decode, f, side, crop_fraction) for f in files[start : start + batch_size]]

        pending = submit(starts[0]) if starts else []
        for k, start in enumerate(starts):
            decoded = [future.result() for future in pending]
            if not skip_corrupt:  # before this batch is committed: a rerun with --skip-corrupt resumes here
                for i, image in enumerate(decoded):
                    if not isinstance(image, np.ndarray):
                        raise UnreadableImageError(files[start + i], _plain_reason(image))
            pending = submit(starts[k + 1]) if k + 1 < len(starts) else []  # decode ahead while the encoder runs
            kept = [image for image in decoded if isinstance(image, np.ndarray)]
            block = _embed(encoder, _stack(kept), device, dtype, precision, layout) if kept else np.zeros((0, 0))
            write_rows(path, data_offset, manifest["rows"], block)
            manifest["skipped"] += [
                {"index": start + i, "file": files[start + i], "reason": _reason(error)}
                for i, error in enumerate(decoded)
                if not isinstance(error, np.ndarray)
            ]
            manifest["rows"] += len(kept)
            manifest["files_done"] = start + len(decoded)
            write_json(out / MANIFEST_FILE, manifest)  # only after the rows are on disk
            update(len(decoded))


def _stack(images: list[np.ndarray]) -> np.ndarray:
    """One uint8 batch; grayscale images become RGB when the batch mixes 1 and 3 channels."""
    if len({image.shape[-1] for image in images}) > 1:
        images = [to_channels(image, 3) for image in images]
    return np.stack(images)
