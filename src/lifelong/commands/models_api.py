"""The `lifelong models` workflows from Python: the encoders the toolkit can run (registered names and every other
encoder spec), their features, and ImageNet-1K predictions for those with a classifier head (the check that weights
and preprocessing load right)."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.commands.outputs import OutputExistsError
from lifelong.commands.terminal import fail
from lifelong.core.errors import DataError, UsageError
from lifelong.core.progress import Progress, progress_bar

GROUP = "lifelong.encoders"
SIDECAR_FORMAT = "lifelong-model-features-v1"
SPEC_HELP = (
    "A model name (lifelong models list), a checkpoint file, torchscript:FILE, hf:FOLDER_OR_ID or "
    "package.module:factory."
)


def _set_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(int(threads))


def _check_sizes(threads: int, batch_size: int, top: int = 1) -> None:
    """The bounds the command line's options have (--threads, --batch-size, --top >= 1), for Python callers."""
    for option, value in (("--threads", threads), ("--batch-size", batch_size), ("--top", top)):
        if value < 1:
            raise UsageError(f"{option} must be at least 1, got {value}")


def _load(spec: str):
    """The encoder of `spec`; an unknown or broken spec is a UsageError in CLI words."""
    from lifelong.training.encoders import load_encoder

    try:
        return load_encoder(spec)
    except (ValueError, FileNotFoundError, ImportError, TypeError) as exc:
        raise fail(exc) from None


def _packages() -> dict[str, str]:
    """Registered name -> the distribution that registers it."""
    found: dict[str, str] = {}
    for ep in entry_points(group=GROUP):
        found.setdefault(ep.name, ep.dist.name if ep.dist is not None else "-")
    return found


def _describe(name: str, encoder: Any, package: str | None = None) -> dict[str, Any]:
    from lifelong.training.encoders import weights_sha256

    return {
        "name": name,
        "package": package,
        "description": encoder.description,
        "source": encoder.source or None,
        "licence": encoder.licence or None,
        "resolution": encoder.resolution,
        "preprocessing": encoder.preprocessing.to_dict(),
        "preprocessing_text": encoder.preprocessing.describe(),
        "feature_dim": encoder.feature_dim,
        "in_channels": encoder.in_channels,
        "head": encoder.head is not None,
        "classes": len(encoder.labels) if encoder.labels else None,
        "parameters": sum(p.numel() for p in encoder.parameters()),
        "weights_sha256": weights_sha256(encoder),
    }


@dataclass
class ModelsListResult:
    """Every registered model, one dict per model (`lifelong models list --json`'s rows): package, input side,
    feature size, head, weights sha256, licence; a model that does not load has only name, package and `error`."""

    rows: list[dict[str, Any]]

    def frame(self):
        """The rows as a pandas DataFrame (one row per model)."""
        import pandas as pd

        return pd.DataFrame(self.rows)


def models_list() -> ModelsListResult:
    """Every registered model (`lifelong models list`); one whose package is missing is listed, saying why."""
    from lifelong.training.encoders.specs import load_registered

    rows = []
    for name, package in _packages().items():
        try:
            rows.append(_describe(name, load_registered(name), package) | {"error": None})
        except Exception as exc:  # a model whose package is missing is listed, saying why
            rows.append({"name": name, "package": package, "error": str(exc)})
    return ModelsListResult(rows)


@dataclass(frozen=True)
class ModelsInfoSpec:
    """`lifelong models info NAME`: `name` is any encoder spec (SPEC_HELP)."""

    name: str


@dataclass
class ModelsInfoResult:
    """One model (`lifelong models info --json`'s document): where its weights come from, preprocessing, feature
    size, head, identity, and its layer groups (what `-o frozen_groups=K` counts)."""

    name: str
    info: dict[str, Any]


def models_info(spec: ModelsInfoSpec) -> ModelsInfoResult:
    """Load one model and describe it."""
    from lifelong.training.encoders import layer_groups

    encoder = _load(spec.name)
    info = _describe(spec.name, encoder, _packages().get(spec.name))
    info["layer_groups"] = [group.name for group in layer_groups(encoder)]
    return ModelsInfoResult(spec.name, info)


def _image_paths(source: Path) -> list[Path]:
    from lifelong.data.images import is_image_file

    if source.is_file():
        return [source]
    if source.is_dir():
        paths = sorted(p for p in source.rglob("*") if p.is_file() and is_image_file(p))
        if not paths:
            raise DataError(f"{source} holds no image files (.png, .jpg, ...)")
        return paths
    raise DataError(f"image or folder not found: {source}")


def _decode(paths: list[Path], skip_corrupt: bool) -> tuple[list, list[Path], list[dict[str, str]]]:
    from lifelong.data.images import CorruptImageError, decode_image

    images, kept, skipped = [], [], []
    for path in paths:
        try:
            images.append(decode_image(path))
            kept.append(path)
        except (CorruptImageError, FileNotFoundError) as exc:
            if not skip_corrupt:
                raise fail(exc) from None
            skipped.append({"image": str(path), "reason": str(exc)})
    return images, kept, skipped


def _atomic_write(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class ModelsFeaturesSpec:
    """`lifelong models features NAME IMAGE_OR_FOLDER --out FILE.npy`; `out` None: return the features, write
    nothing (Python only)."""

    name: str
    source: str | Path
    out: str | Path | None = None
    overwrite: bool = False
    skip_corrupt: bool = False
    threads: int = 1
    batch_size: int = 32

    def __post_init__(self) -> None:
        _check_sizes(self.threads, self.batch_size)
        if self.out is not None and Path(self.out).suffix != ".npy":
            raise UsageError(f"--out must end in .npy, got {self.out}")


@dataclass
class ModelsFeaturesResult:
    """Features [N, D] float32 of the readable images (sorted paths) and the images skipped; `out` and `sidecar`
    (FILE.json: images, skipped, the model's identity) when written."""

    features: np.ndarray
    images: list[Path]
    skipped: list[dict[str, str]]
    identity: dict[str, Any]
    out: Path | None = None
    sidecar: Path | None = None
    feature_dim: int = 0


def models_features(spec: ModelsFeaturesSpec, *, progress: Progress = False) -> ModelsFeaturesResult:
    """Features of one image or every image in a folder (sorted paths), with the model's own preprocessing; the
    output files are written at the end, in one step each (an interrupted call leaves nothing)."""
    from lifelong.training.encoders import encode_images

    out = None if spec.out is None else Path(spec.out)
    sidecar = None if out is None else out.with_suffix(".json")
    existing = [p for p in (out, sidecar) if p is not None and p.exists()]
    if existing and not spec.overwrite:
        raise OutputExistsError(
            f"{existing[0]} already exists; pass --overwrite to replace it, or --out to write elsewhere"
        )
    paths = _image_paths(Path(spec.source))
    encoder = _load(spec.name)
    _set_threads(spec.threads)
    features = np.zeros((0, encoder.feature_dim), dtype=np.float32)
    kept: list[Path] = []
    skipped: list[dict[str, str]] = []
    chunks = []
    size = spec.batch_size
    with progress_bar(progress, len(paths), description=f"{spec.name}: features of {len(paths)} images") as advance:
        for s in range(0, len(paths), size):
            images, ok, bad = _decode(paths[s : s + size], spec.skip_corrupt)
            kept += ok
            skipped += bad
            if images:
                chunks.append(encode_images(encoder, images, batch_size=size))
            advance(len(paths[s : s + size]))
    if chunks:
        features = np.concatenate(chunks).astype(np.float32)
    result = ModelsFeaturesResult(features, kept, skipped, encoder.identity(), out, sidecar, encoder.feature_dim)
    if out is None or sidecar is None:
        return result
    meta = {
        "format": SIDECAR_FORMAT,
        "model": spec.name,
        "features": out.name,
        "shape": list(features.shape),
        "images": [str(p) for p in kept],
        "skipped": skipped,
        "identity": result.identity,
        "threads": spec.threads,
    }
    _atomic_write(out, lambda f: np.save(f, features))
    _atomic_write(sidecar, lambda f: f.write((json.dumps(meta, indent=2) + "\n").encode()))
    return result


@dataclass(frozen=True)
class ModelsPredictSpec:
    """`lifelong models predict NAME IMAGE... --top K`: ImageNet-1K classes of each image, in the order given."""

    name: str
    images: tuple[str | Path, ...] | list[str | Path]
    top: int = 5
    skip_corrupt: bool = False
    threads: int = 1
    batch_size: int = 32

    def __post_init__(self) -> None:
        _check_sizes(self.threads, self.batch_size, self.top)
        if not self.images:
            raise UsageError("give at least one image to predict")


@dataclass
class ModelsPredictResult:
    """Per readable image its `top` classes, most probable first: {"image", "top": [{"wnid", "name",
    "probability"}]} (`lifelong models predict --json`'s rows); `skipped`: unreadable images (with skip_corrupt)."""

    predictions: list[dict[str, Any]]
    skipped: list[dict[str, str]] = field(default_factory=list)


def models_predict(spec: ModelsPredictSpec, *, progress: Progress = False) -> ModelsPredictResult:
    """ImageNet-1K classes of each image, for a model with a classifier head."""
    from lifelong.training.encoders import encode_images
    from lifelong.training.encoders.imagenet import label_name

    encoder = _load(spec.name)
    if encoder.head is None:
        with_head = [name for name, row in _heads().items() if row]
        raise UsageError(
            f"model {spec.name!r} has no classifier head, so `lifelong models predict` cannot name classes; models "
            f"with one: {', '.join(with_head) or 'none'}; `lifelong models features` gives its features"
        )
    decoded, images, skipped = _decode([Path(p) for p in spec.images], spec.skip_corrupt)
    if not decoded:
        return ModelsPredictResult([], skipped)
    _set_threads(spec.threads)
    size, chunks = spec.batch_size, []
    with progress_bar(progress, len(decoded), description=f"{spec.name}: classes of {len(decoded)} images") as advance:
        for s in range(0, len(decoded), size):  # the batches encode_images would make, one at a time
            chunks.append(encode_images(encoder, decoded[s : s + size], batch_size=size, logits=True))
            advance(len(decoded[s : s + size]))
    logits = np.concatenate(chunks).astype(np.float64)
    logits -= logits.max(axis=1, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    k = min(spec.top, probs.shape[1])
    predictions = []
    for path, row in zip(images, probs, strict=True):
        order = np.argsort(-row, kind="stable")[:k]
        top = [
            {"wnid": encoder.labels[i], "name": label_name(encoder.labels[i]), "probability": round(float(row[i]), 6)}
            for i in order
        ]
        predictions.append({"image": str(path), "top": top})
    return ModelsPredictResult(predictions, skipped)


def _heads() -> dict[str, bool]:
    """Registered name -> whether it loads with a classifier head (False when it does not load)."""
    from lifelong.training.encoders.specs import load_registered

    heads = {}
    for name in _packages():
        try:
            heads[name] = load_registered(name).head is not None
        except Exception:
            heads[name] = False
    return heads


__all__ = [
    "SPEC_HELP",
    "ModelsFeaturesResult",
    "ModelsFeaturesSpec",
    "ModelsInfoResult",
    "ModelsInfoSpec",
    "ModelsListResult",
    "ModelsPredictResult",
    "ModelsPredictSpec",
    "models_features",
    "models_info",
    "models_list",
    "models_predict",
]
