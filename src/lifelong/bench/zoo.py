"""A zoo of varied small models and their correctness on clean and corrupted test samples: a real samples x models
matrix with the layout of the paper's released matrices (rows = models, columns = samples, dense uint8 0/1).

Every model's configuration (architecture, width, epochs, training subset, augmentation, learning rate) is drawn
from (seed, model id) alone, so growing `n_models` keeps the models already built. The test set is a seeded
subset of the source's test split; each corruption at each severity adds a corrupted copy of it (a domain).
Each finished model is written to OUT/models/<id>.npz and reused when the build is run again.

Outputs in OUT: correctness.npy (uint8 [models, samples]), confidence.npy (float16 probability of the true
class), samples.csv, models.csv, images.npy (the evaluated images, uint8 [samples, H, W, C], so new models can
be evaluated on the same samples) and zoo.json (settings, notes and a summary).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import math
import time
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lifelong.core.datasets import ArrayDataset
from lifelong.core.tasks import TaskKey, TaskKind
from lifelong.data.dedup import content_hash
from lifelong.data.labeled import LabeledImages
from lifelong.data.sources import load_source
from lifelong.core.files import atomic_write_bytes
from lifelong.core.executors import Executor, make_executor
from lifelong.training.loop import derive_seed, predict_scores, train_model
from lifelong.training.models import initialise, resnet

DEFAULT_SOURCE = "fashion-mnist"
FALLBACK_SOURCE = "builtin:letters"
DEFAULT_CORRUPTIONS = ("noise", "blur", "contrast", "rotation", "occlusion")
DEFAULT_SEVERITIES = (1, 2, 3)
CLEAN = "clean"

ARCHITECTURES = ("mlp", "cnn", "resnet_mini")
BATCH_SIZE = 32
WARMUP_EPOCHS = 0.25
EVAL_BATCH_SIZE = 512
_GLYPH_SOURCES = ("builtin:letters", "builtin:chars", "builtin:digits")  # mirroring changes their classes
# derive_seed tags
_SPEC, _SUBSET, _INIT, _TRAIN, _TEST, _CORRUPT = 11, 12, 13, 14, 15, 16


# ---------------------------------------------------------------------------------------------------------
# corruptions: uint8 [N, H, W, C] -> uint8 of the same shape, deterministic under the generator


def _to_uint8(x: np.ndarray | torch.Tensor) -> np.ndarray:
    x = x.numpy() if isinstance(x, torch.Tensor) else x
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)


def _nchw(images: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).to(torch.float32)


def _nhwc(x: torch.Tensor) -> np.ndarray:
    return _to_uint8(x.permute(0, 2, 3, 1).contiguous())


def gaussian_noise(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """Additive Gaussian pixel noise with standard deviation `level` x 255."""
    return _to_uint8(images + rng.normal(0.0, level * 255.0, images.shape))


def gaussian_blur(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """Separable Gaussian blur with standard deviation `level` pixels (reflected borders)."""
    radius = max(1, math.ceil(3 * level))
    t = torch.arange(-radius, radius + 1, dtype=torch.float32)
    kernel = torch.exp(-0.5 * (t / level) ** 2)
    kernel /= kernel.sum()
    x = _nchw(images)
    c = x.shape[1]
    x = F.pad(x, (radius, radius, radius, radius), mode="reflect")
    x = F.conv2d(x, kernel.view(1, 1, 1, -1).expand(c, 1, 1, -1), groups=c)
    x = F.conv2d(x, kernel.view(1, 1, -1, 1).expand(c, 1, -1, 1), groups=c)
    return _nhwc(x)


def reduce_contrast(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """Pixels pulled towards each image's mean: x' = mean + `level` x (x - mean)."""
    x = images.astype(np.float32)
    mean = x.mean(axis=(1, 2, 3), keepdims=True)
    return _to_uint8(mean + level * (x - mean))


def rotate(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """Rotation by +-`level` degrees (random sign per image, bilinear, black corners)."""
    n = len(images)
    angle = np.deg2rad(level) * rng.choice((-1.0, 1.0), size=n)
    cos, sin = torch.from_numpy(np.cos(angle)).float(), torch.from_numpy(np.sin(angle)).float()
    zero = torch.zeros(n)
    theta = torch.stack([torch.stack([cos, -sin, zero], 1), torch.stack([sin, cos, zero], 1)], 1)
    x = _nchw(images)
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    return _nhwc(F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False))


def occlude(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """A mid-gray square of side `level` x the image side, at a random position in each image."""
    n, height, width, _ = images.shape
    side = max(1, round(level * min(height, width)))
    top = rng.integers(0, height - side + 1, size=n)
    left = rng.integers(0, width - side + 1, size=n)
    rows = np.arange(height)[None, :, None]
    cols = np.arange(width)[None, None, :]
    in_rows = (rows >= top[:, None, None]) & (rows < (top + side)[:, None, None])
    inside = in_rows & (cols >= left[:, None, None]) & (cols < (left + side)[:, None, None])
    out = images.copy()
    out[inside] = 128
    return out


@dataclass(frozen=True)
class Corruption:
    """A corruption function and its level (noise std, blur sigma, ...) at severities 1..5."""

    apply: Callable[[np.ndarray, float, np.random.Generator], np.ndarray]
    levels: tuple[float, ...]


CORRUPTIONS: dict[str, Corruption] = {
    "noise": Corruption(gaussian_noise, (0.06, 0.12, 0.2, 0.3, 0.45)),
    "blur": Corruption(gaussian_blur, (0.5, 0.8, 1.1, 1.5, 2.0)),
    "contrast": Corruption(reduce_contrast, (0.6, 0.45, 0.3, 0.2, 0.12)),
    "rotation": Corruption(rotate, (10.0, 20.0, 30.0, 45.0, 60.0)),
    "occlusion": Corruption(occlude, (0.2, 0.3, 0.4, 0.5, 0.6)),
}


def corruption_level(name: str, severity: int) -> float:
    """The level (noise std, blur sigma, ...) of corruption `name` at `severity`; an error for unknown ones."""
    if name not in CORRUPTIONS:
        raise ValueError(f"unknown corruption {name!r}; choose from {sorted(CORRUPTIONS)}")
    levels = CORRUPTIONS[name].levels
    if not isinstance(severity, int | np.integer) or not 1 <= severity <= len(levels):
        raise ValueError(f"corruption {name!r}: severity must be an integer in 1..{len(levels)}, got {severity!r}")
    return levels[severity - 1]


def corrupt(images: np.ndarray, name: str, severity: int, seed: int = 0) -> np.ndarray:
    """`images` (uint8 [N, H, W, C]) under corruption `name` at `severity` (1..5); the same seed, the same pixels."""
    level = corruption_level(name, severity)
    images = np.asarray(images)
    if images.ndim != 4 or images.dtype != np.uint8:
        raise ValueError(f"images must be uint8 [N, H, W, C], got {images.dtype} {images.shape}")
    rng = np.random.default_rng(derive_seed(seed, _CORRUPT, zlib.crc32(name.encode()), int(severity)))
    return CORRUPTIONS[name].apply(images, level, rng)


# ---------------------------------------------------------------------------------------------------------
# model configurations and architectures


@dataclass(frozen=True)
class ModelSpec:
    """One zoo member's configuration; `seed` drives its training subset, initialisation and training order."""

    id: int
    architecture: str
    width: int
    epochs: int
    train_size: int
    augment: bool
    lr: float
    seed: int

    @property
    def name(self) -> str:
        """A readable unique name, e.g. m0007-cnn16-e3-n1000-aug-lr0.042."""
        aug = "aug" if self.augment else "noaug"
        return f"m{self.id:04d}-{self.architecture}{self.width}-e{self.epochs}-n{self.train_size}-{aug}-lr{self.lr:.2g}"


@dataclass(frozen=True)
class ZooSpace:
    """The configuration space a zoo member is drawn from (defaults: each model trains in seconds on one core).

    `architectures`: name -> sampling weight; `widths`: hidden units (mlp) or base channels (cnn, resnet_mini);
    `lr_ranges`: log-uniform learning-rate range per architecture (the small CNN diverges above ~0.05).
    """

    architectures: Mapping[str, float] = field(default_factory=lambda: {"mlp": 0.3, "cnn": 0.35, "resnet_mini": 0.35})
    widths: Mapping[str, tuple[int, ...]] = field(
        default_factory=lambda: {"mlp": (32, 64, 128, 256), "cnn": (8, 16, 24), "resnet_mini": (4, 8, 16)}
    )
    lr_ranges: Mapping[str, tuple[float, float]] = field(
        default_factory=lambda: {"mlp": (0.01, 0.2), "cnn": (0.002, 0.05), "resnet_mini": (0.01, 0.3)}
    )
    train_sizes: tuple[int, ...] = (250, 500, 1000, 2000, 4000)
    max_epochs: int = 4
    augment_probability: float = 0.3

    def __post_init__(self) -> None:
        names = set(self.architectures)
        unknown = names - set(ARCHITECTURES)
        if not names or unknown or any(w < 0 for w in self.architectures.values()):
            raise ValueError(
                f"architectures must map some of {sorted(ARCHITECTURES)} to weights >= 0, "
                f"got {dict(self.architectures)}"
            )
        missing = [a for a in names if not self.widths.get(a) or a not in self.lr_ranges]
        if missing:
            raise ValueError(f"architectures {missing} need widths and an lr range in the zoo space")
        if not self.train_sizes or min(self.train_sizes) < 1 or self.max_epochs < 1:
            raise ValueError(f"need train sizes >= 1 and max_epochs >= 1, got {self.train_sizes}, {self.max_epochs}")
        if not 0.0 <= self.augment_probability <= 1.0:
            raise ValueError(f"augment_probability must be in [0, 1], got {self.augment_probability}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (recorded in zoo.json)."""
        return {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in asdict(self).items()}


def draw_spec(model_id: int, seed: int, n_train: int, space: ZooSpace | None = None) -> ModelSpec:
    """Model `model_id`'s configuration, drawn from (seed, model_id) alone; train sizes are capped at `n_train`."""
    space = space or ZooSpace()
    rng = np.random.default_rng(derive_seed(seed, _SPEC, model_id))
    names = list(space.architectures)
    weights = np.array([space.architectures[a] for a in names], dtype=np.float64)
    architecture = names[int(rng.choice(len(names), p=weights / weights.sum()))]
    width = int(rng.choice(space.widths[architecture]))
    epochs = int(rng.integers(1, space.max_epochs + 1))
    train_size = min(int(rng.choice(space.train_sizes)), n_train)
    augment = bool(rng.random() < space.augment_probability)
    lo, hi = np.log(space.lr_ranges[architecture])
    lr = float(np.round(np.exp(rng.uniform(lo, hi)), 5))
    return ModelSpec(model_id, architecture, width, epochs, train_size, augment, lr, derive_seed(seed, model_id))


class MLP(nn.Module):
    """Flattened pixels -> two ReLU hidden layers of `width` units (`backbone`) -> linear `head`."""

    def __init__(self, image_shape: tuple[int, int, int], num_classes: int, width: int, seed: int) -> None:
        super().__init__()
        height, wide, channels = image_shape
        self.in_channels = channels
        self.backbone = nn.Sequential(
            nn.Flatten(), nn.Linear(channels * height * wide, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU()
        )
        self.head = nn.Linear(width, num_classes)
        initialise(self, seed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x))


class SmallCNN(nn.Module):
    """Two conv-BN-ReLU-maxpool stages (`width`, 2 x `width` channels) as `backbone`, flattened into a linear `head`."""

    def __init__(self, image_shape: tuple[int, int, int], num_classes: int, width: int, seed: int) -> None:
        super().__init__()
        height, wide, channels = image_shape
        self.in_channels = channels
        layers: list[nn.Module] = []
        for out in (width, 2 * width):
            layers += [nn.Conv2d(channels, out, 3, padding=1, bias=False), nn.BatchNorm2d(out), nn.ReLU()]
            layers.append(nn.MaxPool2d(2))
            channels = out
        self.backbone = nn.Sequential(*layers, nn.Flatten())
        self.head = nn.Linear(channels * (height // 4) * (wide // 4), num_classes)
        initialise(self, seed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x))


def make_zoo_model(spec: ModelSpec, image_shape: tuple[int, int, int], num_classes: int) -> nn.Module:
    """The network of `spec` for images of `image_shape` (H, W, C), seeded from the spec."""
    seed = derive_seed(spec.seed, _INIT)
    channels = image_shape[2]
    if spec.architecture == "mlp":
        return MLP(image_shape, num_classes, spec.width, seed)
    if spec.architecture == "cnn":
        return SmallCNN(image_shape, num_classes, spec.width, seed)
    if spec.architecture == "resnet_mini":  # resnet_mini's 1-1-1-1 blocks at base width `width` (16 = resnet_mini)
        widths = tuple(spec.width * k for k in (1, 2, 4, 8))
        return resnet(num_classes, blocks=(1, 1, 1, 1), widths=widths, in_channels=channels, seed=seed)
    raise ValueError(f"unknown zoo architecture {spec.architecture!r}; choose from {sorted(ARCHITECTURES)}")


# ---------------------------------------------------------------------------------------------------------
# the data: a training pool and the evaluated samples (clean test subset + corrupted copies)


@dataclass
class ZooData:
    """The training pool and the evaluated samples with their per-sample metadata."""

    source: str
    train: ArrayDataset
    samples: ArrayDataset
    sample_domains: list[str]
    sample_items: list[str]
    hashes: list[str]
    notes: list[str]

    @property
    def fingerprint(self) -> str:
        """SHA-1 over the samples' content hashes: equal iff the same images and labels in the same order."""
        return hashlib.sha1("\n".join(self.hashes).encode()).hexdigest()


def _stacked(labeled: LabeledImages, spec: str) -> np.ndarray:
    if isinstance(labeled.images, np.ndarray):
        return labeled.images
    shapes = {image.shape for image in labeled.images}
    if len(shapes) != 1:
        raise ValueError(
            f"source {spec!r} has images of {len(shapes)} different shapes (e.g. {sorted(shapes)[:3]}); the zoo needs "
            "one size: resize them first (lifelong.data.images.resize_all) or use another source"
        )
    return np.stack(labeled.images)


def load_zoo_data(
    source: str,
    n_test: int,
    corruptions: Sequence[str],
    severities: Sequence[int],
    seed: int,
    options: Mapping[str, Any] | None = None,
    fallback_train: int = max(ZooSpace().train_sizes),
) -> ZooData:
    """Load `source` (falling back to builtin:letters when Fashion-MNIST is absent), split it, corrupt the test set.

    The fallback renders enough letters for `n_test` test items plus `fallback_train` training items.
    """
    notes: list[str] = []
    options = dict(options or {})
    try:
        labeled = load_source(source, **options)
    except FileNotFoundError as exc:
        if source != DEFAULT_SOURCE:
            raise
        per_class = math.ceil((n_test + fallback_train) / 10)  # letters A-J: 10 classes
        notes.append(f"{source} not found ({exc}); using {FALLBACK_SOURCE} with n_per_class={per_class} instead")
        source, labeled = FALLBACK_SOURCE, load_source(FALLBACK_SOURCE, n_per_class=per_class, seed=seed)
    if labeled.kind is not TaskKind.MULTI_CLASS:
        raise ValueError(f"source {source!r} is {labeled.kind.value}: the zoo needs single-label classification")
    images = _stacked(labeled, source)
    split = labeled.official_split
    if split is not None and (split == "test").any() and (split != "test").any():
        test_pool, train_pool = np.flatnonzero(split == "test"), np.flatnonzero(split != "test")
    else:  # no official test split: a seeded hold-out of n_test items
        order = np.random.default_rng(derive_seed(seed, _TEST)).permutation(len(labeled))
        test_pool, train_pool = np.sort(order[:n_test]), np.sort(order[n_test:])
        notes.append(f"{source} has no official test split: {min(n_test, len(order))} items held out with the seed")
    if len(test_pool) < n_test or len(train_pool) == 0:
        raise ValueError(
            f"source {source!r} has {len(test_pool)} test and {len(train_pool)} training items but n_test={n_test} "
            "test items were asked for: lower n_test or use a larger source"
        )
    rng = np.random.default_rng(derive_seed(seed, _TEST, 1))
    test = np.sort(rng.choice(test_pool, size=n_test, replace=False))
    task = TaskKey("zoo", TaskKind.MULTI_CLASS, labeled.num_classes, labeled.class_names)
    labels = labeled.labels
    clean = images[test]
    parts, domains, items = [clean], [CLEAN] * n_test, [labeled.ids[i] for i in test]
    for name in corruptions:
        for severity in severities:
            parts.append(corrupt(clean, name, severity, seed))
            domains += [f"{name}-{severity}"] * n_test
            items += items[:n_test]
    all_images = np.concatenate(parts)
    all_labels = np.tile(labels[test], len(parts))
    hashes = [content_hash(image, label) for image, label in zip(all_images, all_labels, strict=True)]
    return ZooData(
        source=source,
        train=ArrayDataset(task, "train", images[train_pool], labels[train_pool]),
        samples=ArrayDataset(task, "test", all_images, all_labels),
        sample_domains=domains,
        sample_items=items,
        hashes=hashes,
        notes=notes,
    )


# ---------------------------------------------------------------------------------------------------------
# one model: train on its subset, evaluate on every sample


@dataclass(frozen=True)
class ZooJob:
    """Train and evaluate one zoo member: a picklable callable ModelSpec -> result dict (for any executor)."""

    train: ArrayDataset
    samples: ArrayDataset
    threads: int = 1
    flip: bool = True

    def __call__(self, spec: ModelSpec) -> dict[str, Any]:
        """Correct (uint8 [n]) and confidence (float16 [n], P(true class)) of `spec`'s model on every sample."""
        previous = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            return self._run(spec)
        finally:
            torch.set_num_threads(previous)

    def _run(self, spec: ModelSpec) -> dict[str, Any]:
        start = time.perf_counter()
        num_classes = self.train.task.num_classes
        subset_rng = np.random.default_rng(derive_seed(spec.seed, _SUBSET))
        subset = self.train.subset(np.sort(subset_rng.choice(len(self.train), size=spec.train_size, replace=False)))
        model = make_zoo_model(spec, self.train.image_shape, num_classes)
        train_model(
            model,
            subset,
            None,
            kind=TaskKind.MULTI_CLASS,
            epochs=spec.epochs,
            batch_size=BATCH_SIZE,
            lr=spec.lr,
            warmup_epochs=WARMUP_EPOCHS,
            seed=derive_seed(spec.seed, _TRAIN),
            augment=spec.augment,
            flip=self.flip,
            eval_every_epoch=False,
        )
        logits = torch.from_numpy(predict_scores(model, self.samples, TaskKind.MULTI_CLASS, EVAL_BATCH_SIZE))
        labels = torch.from_numpy(self.samples.labels())
        confidence = torch.softmax(logits, dim=1).gather(1, labels[:, None])[:, 0]
        return {
            "id": spec.id,
            "correct": (logits.argmax(dim=1) == labels).numpy().astype(np.uint8),
            "confidence": confidence.numpy().astype(np.float16),
            "seconds": time.perf_counter() - start,
        }


# ---------------------------------------------------------------------------------------------------------
# the build: resumable, fanned out through an executor


def _result_key(spec: ModelSpec, fingerprint: str) -> str:
    return json.dumps({"spec": asdict(spec), "samples": fingerprint}, sort_keys=True)


def _save_npz(path: Path, **arrays: np.ndarray) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    atomic_write_bytes(path, buffer.getvalue())


def _save_npy(path: Path, array: np.ndarray) -> None:
    buffer = io.BytesIO()
    np.save(buffer, array)
    atomic_write_bytes(path, buffer.getvalue())


def _load_result(path: Path, key: str, n_samples: int) -> dict[str, Any] | None:
    """A finished model's saved result, None if absent; an error if it was built under other settings."""
    if not path.exists():
        return None
    with np.load(path) as saved:
        if str(saved["key"]) != key:
            raise ValueError(
                f"{path} was built with other settings or other samples than this build; rebuild into another "
                "output folder, or delete that folder's models/ to start over"
            )
        result = {"correct": saved["correct"], "confidence": saved["confidence"], "seconds": float(saved["seconds"])}
    if result["correct"].shape != (n_samples,):
        raise ValueError(f"{path} holds {result['correct'].shape} cells, expected ({n_samples},): delete it")
    return result


def _write_csv(path: Path, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    atomic_write_bytes(path, text.getvalue().encode())


@contextlib.contextmanager
def _progress(enabled: bool, total: int, done: int) -> Iterator[Callable[[int, str], None]]:
    if not enabled:
        yield lambda advance, description: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("[bold]{task.description:<44}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns) as bar:
        task_id = bar.add_task("zoo", total=total, completed=done)
        yield lambda advance, description: bar.update(task_id, advance=advance, description=description)


def build_zoo(
    out_dir: str | Path,
    *,
    n_models: int = 120,
    source: str = DEFAULT_SOURCE,
    n_test: int = 2000,
    corruptions: Sequence[str] = DEFAULT_CORRUPTIONS,
    severities: Sequence[int] = DEFAULT_SEVERITIES,
    seed: int = 0,
    executor: str | Executor = "local",
    threads: int = 1,
    num_cpus: int | None = None,
    address: str | None = None,
    source_options: Mapping[str, Any] | None = None,
    space: ZooSpace | None = None,
    flip: bool | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Train and evaluate `n_models` zoo members (resuming from OUT/models/), then write the matrices and tables.

    `executor`: "local", "ray" (`num_cpus` for a local Ray, `address` to join a cluster) or an Executor; each model
    is one item and uses `threads` torch threads (results are reproducible for a fixed thread count). `flip`:
    mirror augmented images (None: yes, except glyph sources). `space`: the configurations drawn from.
    Returns a summary (also saved in OUT/zoo.json).
    """
    started = time.perf_counter()
    corruptions, severities = tuple(corruptions), tuple(int(s) for s in severities)
    if not isinstance(n_models, int) or n_models < 1 or not isinstance(n_test, int) or n_test < 1:
        raise ValueError(f"n_models and n_test must be positive integers, got {n_models!r}, {n_test!r}")
    if threads < 1 or seed < 0:
        raise ValueError(f"threads must be >= 1 and seed >= 0, got threads={threads}, seed={seed}")
    for name in corruptions:
        for severity in severities:
            corruption_level(name, severity)
    if len(set(corruptions)) != len(corruptions) or len(set(severities)) != len(severities):
        raise ValueError(f"corruptions {corruptions} and severities {severities} must not repeat")
    out = Path(out_dir)
    settings = {"n_models": n_models, "source": source, "n_test": n_test, "corruptions": list(corruptions)}
    space = space or ZooSpace()
    settings |= {"severities": list(severities), "seed": seed, "threads": threads, "space": space.to_dict()}
    data = load_zoo_data(source, n_test, corruptions, severities, seed, source_options, max(space.train_sizes))
    n_samples = len(data.samples)
    specs = [draw_spec(i, seed, len(data.train), space) for i in range(n_models)]
    keys = {spec.id: _result_key(spec, data.fingerprint) for spec in specs}
    results: dict[int, dict[str, Any]] = {}
    for spec in specs:
        saved = _load_result(out / "models" / f"{spec.id}.npz", keys[spec.id], n_samples)
        if saved is not None:
            results[spec.id] = saved
    reused = len(results)
    todo = [spec for spec in specs if spec.id not in results]
    flip = flip if flip is not None else data.source not in _GLYPH_SOURCES
    job = ZooJob(data.train, data.samples, threads=threads, flip=flip)
    own_runner = isinstance(executor, str)
    if isinstance(executor, str):
        runner = make_executor(executor, address=address, num_cpus=num_cpus, cpus_per_item=threads)
    else:
        runner = executor
    # local: one model per map call (a progress step each); otherwise batches that keep every worker busy
    batch = 1 if runner.name == "local" else max(4, 4 * (num_cpus or 4))
    try:
        with _progress(progress, n_models, reused) as advance:
            for start in range(0, len(todo), batch):
                part = todo[start : start + batch]
                advance(0, f"training {part[0].name}" if len(part) == 1 else f"training {len(part)} models")
                for spec, result in zip(part, runner.map(job, part), strict=True):
                    _save_npz(
                        out / "models" / f"{spec.id}.npz",
                        key=np.array(keys[spec.id]),
                        correct=result["correct"],
                        confidence=result["confidence"],
                        seconds=np.array(result["seconds"]),
                    )
                    results[spec.id] = result
                advance(len(part), f"done {part[-1].name}")
    finally:
        if own_runner and hasattr(runner, "shutdown"):
            runner.shutdown()
    return _write_outputs(out, data, specs, results, reused, started, settings | {"flip": flip})


def _write_outputs(
    out: Path,
    data: ZooData,
    specs: Sequence[ModelSpec],
    results: Mapping[int, dict[str, Any]],
    reused: int,
    started: float,
    settings: dict[str, Any],
) -> dict[str, Any]:
    """Write the matrices, the sample and model tables and zoo.json; return the summary."""
    correctness = np.stack([results[s.id]["correct"] for s in specs])
    confidence = np.stack([results[s.id]["confidence"] for s in specs])
    domains = np.array(data.sample_domains)
    clean = correctness[:, domains == CLEAN].mean(axis=1)
    _save_npy(out / "correctness.npy", correctness)
    _save_npy(out / "confidence.npy", confidence)
    _save_npy(out / "images.npy", data.samples.images)
    labels = data.samples.labels()
    _write_csv(
        out / "samples.csv",
        ("id", "source", "source_item", "domain", "label", "hash"),
        [
            (j, data.source, data.sample_items[j], data.sample_domains[j], int(labels[j]), data.hashes[j])
            for j in range(len(labels))
        ],
    )
    _write_csv(
        out / "models.csv",
        ("id", "name", "architecture", "width", "epochs", "train_size", "augment", "lr", "clean_accuracy", "seed"),
        [
            (s.id, s.name, s.architecture, s.width, s.epochs, s.train_size, int(s.augment), s.lr, f"{acc:.4f}", s.seed)
            for s, acc in zip(specs, clean, strict=True)
        ],
    )
    ordered_domains = list(dict.fromkeys(data.sample_domains))
    summary = {
        "out_dir": str(out),
        "source": data.source,
        "notes": data.notes,
        "n_models": len(specs),
        "n_samples": int(correctness.shape[1]),
        "trained": len(specs) - reused,
        "reused": reused,
        "wall_seconds": round(time.perf_counter() - started, 2),
        "model_seconds": round(sum(float(results[s.id]["seconds"]) for s in specs), 2),
        "clean_accuracy": {
            "min": float(clean.min()),
            "median": float(np.median(clean)),
            "max": float(clean.max()),
        },
        "domain_accuracy": {d: float(correctness[:, domains == d].mean()) for d in ordered_domains},
        "samples_fingerprint": data.fingerprint,
        "settings": settings,
    }
    atomic_write_bytes(out / "zoo.json", json.dumps(summary, indent=2).encode())
    return summary


def build_zoo_command(
    out: str | Path,
    *,
    n_models: int = 120,
    source: str = DEFAULT_SOURCE,
    n_test: int = 2000,
    corruptions: str | Sequence[str] = DEFAULT_CORRUPTIONS,
    severities: str | Sequence[int] = DEFAULT_SEVERITIES,
    seed: int = 0,
    executor: str = "local",
    threads: int = 1,
    num_cpus: int | None = None,
    address: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What `lifelong bench build-zoo` runs: comma-separated lists accepted; returns the JSON-ready summary."""
    if isinstance(corruptions, str):
        corruptions = tuple(c.strip() for c in corruptions.split(",") if c.strip())
    if isinstance(severities, str):
        try:
            severities = tuple(int(s) for s in severities.split(",") if s.strip())
        except ValueError:
            raise ValueError(f"severities must be comma-separated integers such as 1,2,3, got {severities!r}") from None
    return build_zoo(
        out,
        n_models=n_models,
        source=source,
        n_test=n_test,
        corruptions=corruptions,
        severities=severities,
        seed=seed,
        executor=executor,
        threads=threads,
        num_cpus=num_cpus,
        address=address,
        source_options=options,
        progress=True,
    )
