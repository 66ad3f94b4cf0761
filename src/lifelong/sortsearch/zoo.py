"""A zoo of varied small models and their correctness on clean and corrupted test samples: a real samples x models
matrix with the layout of the paper's released matrices (rows = models, columns = samples, dense uint8 0/1).

Every model's configuration (architecture, width, epochs, training subset, augmentation, learning rate) is drawn
from (seed, model id) alone, so growing `n_models` keeps the models already built. The test set is a seeded
subset of the source's test split; each corruption at each severity adds a corrupted copy of it (a domain).
Each finished model is written to OUT/models/<id>.npz and reused when the build is run again.
What a zoo is (`ZooSettings`) is decided once and handed to `build_zoo`; the members and their architectures are
in `zoo_models`, the corruptions in `corruptions`.

Outputs in OUT: correctness.npy (uint8 [models, samples]), confidence.npy (float16 probability of the true
class), samples.csv (the schema of `samples_csv`), models.csv, images.npy (the evaluated images, uint8 [samples, H,
W, C], so new models can be evaluated on the same samples) and zoo.json (settings, notes and a summary).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from lifelong.core.datasets import ArrayDataset
from lifelong.core.errors import LifelongError
from lifelong.core.executors import Executor, make_executor
from lifelong.core.files import atomic_write_bytes
from lifelong.core.progress import Progress, progress_bar
from lifelong.core.seeds import derive_seed
from lifelong.core.tasks import TaskKey, TaskKind
from lifelong.data.dedup import content_hash
from lifelong.data.labeled import LabeledImages
from lifelong.data.sources import load_source
from lifelong.sortsearch.corruptions import corrupt, corruption_level
from lifelong.sortsearch.samples_csv import SampleRow, write_samples_csv
from lifelong.sortsearch.zoo_models import ModelSpec, ZooSpace, draw_spec, make_zoo_model
from lifelong.training.devices import Accelerator, accelerator_scope, current_accelerator, seeded_torch_rng
from lifelong.training.loop import predict_scores, train_model

DEFAULT_SOURCE = "fashion-mnist"
FALLBACK_SOURCE = "builtin:letters"
DEFAULT_CORRUPTIONS = ("noise", "blur", "contrast", "rotation", "occlusion")
DEFAULT_SEVERITIES = (1, 2, 3)
CLEAN = "clean"
# what a build writes in OUT: models/ keeps each finished model, the rest is written at the end
ZOO_FILES = ("models", "correctness.npy", "confidence.npy", "images.npy", "samples.csv", "models.csv", "zoo.json")

SETTINGS_FILE = "settings.json"  # in OUT/models: the settings of the build that started them (with its first model)
BATCH_SIZE = 32
WARMUP_EPOCHS = 0.25
EVAL_BATCH_SIZE = 512
_GLYPH_SOURCES = ("builtin:letters", "builtin:chars", "builtin:digits")  # mirroring changes their classes
_SUBSET, _TRAIN, _TEST, _RANDOM_OPS = 12, 14, 15, 17  # derive_seed tags (zoo_models has 11 and 13, corruptions 16)


@dataclass(frozen=True)
class ZooSettings:
    """What a zoo is: its models (`n_models` drawn from `space` with `seed`) and its samples (`n_test` test items of
    `source`, loaded with `source_options`, plus a copy per corruption and severity). `flip`: mirror augmented
    images (None: yes, except glyph sources). `fallback_source`: the source to use instead when `source`'s data
    are not installed (None: a missing source is an error). `preset`: the named size these settings came from
    (`lifelong bench build-zoo --preset`; recorded, None: none). Sequences become tuples; a `space` of None is the
    default space."""

    n_models: int = 120
    source: str = DEFAULT_SOURCE
    n_test: int = 2000
    corruptions: Sequence[str] = DEFAULT_CORRUPTIONS
    severities: Sequence[int] = DEFAULT_SEVERITIES
    seed: int = 0
    source_options: Mapping[str, Any] | None = None
    space: ZooSpace = field(default_factory=ZooSpace)
    flip: bool | None = None
    fallback_source: str | None = None
    preset: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "corruptions", tuple(self.corruptions))
        object.__setattr__(self, "severities", tuple(int(s) for s in self.severities))
        if self.space is None:
            object.__setattr__(self, "space", ZooSpace())


# ---------------------------------------------------------------------------------------------------------
# the data: a training pool and the evaluated samples (clean test subset + corrupted copies)


class SourceMissing(LifelongError, FileNotFoundError):
    """The zoo's source is not installed (and no fallback source was given): its loader's message says what to
    install."""

    def __init__(self, source: str, why: str) -> None:
        super().__init__(f"source {source} is not installed: {why}")
        self.source = source


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
    on_note: Callable[[str], None] | None = None,
    fallback: str | None = None,
) -> ZooData:
    """Load `source`, split it, corrupt the test set. A source whose data are not installed raises
    FileNotFoundError (naming what to install) unless `fallback` names a source to use instead.

    A glyph fallback (builtin:letters, ...) renders enough images for `n_test` test items plus `fallback_train`
    training items. Each note (the fallback, a seeded hold-out) is kept in `ZooData.notes` and, as it happens,
    passed to `on_note`; `ZooData.source` is the source that was loaded.
    """
    notes: list[str] = []
    options = dict(options or {})
    try:
        labeled = load_source(source, **options)
    except FileNotFoundError as exc:
        if fallback is None:
            raise SourceMissing(source, str(exc)) from None
        fallback_options: dict[str, Any] = {}
        if fallback in _GLYPH_SOURCES:
            per_class = math.ceil((n_test + fallback_train) / 10)  # e.g. letters A-J: 10 classes
            fallback_options = {"n_per_class": per_class, "seed": seed}
        notes.append(f"{source} not found ({exc}); built on the fallback source {fallback} instead")
        if on_note is not None:
            on_note(notes[-1])
        source, labeled = fallback, load_source(fallback, **fallback_options)
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
        if on_note is not None:
            on_note(notes[-1])
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
    accelerator: Accelerator = field(default_factory=current_accelerator)  # the maker's, resolved on the worker

    def __call__(self, spec: ModelSpec) -> dict[str, Any]:
        """Correct (uint8 [n]) and confidence (float16 [n], P(true class)) of `spec`'s model on every sample."""
        previous = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            with accelerator_scope(self.accelerator):
                return self._run(spec)
        finally:
            torch.set_num_threads(previous)

    def _run(self, spec: ModelSpec) -> dict[str, Any]:
        start = time.perf_counter()
        num_classes = self.train.task.num_classes
        subset_rng = np.random.default_rng(derive_seed(spec.seed, _SUBSET))
        subset = self.train.subset(np.sort(subset_rng.choice(len(self.train), size=spec.train_size, replace=False)))
        model = make_zoo_model(spec, self.train.image_shape, num_classes)
        # the global RNG (a network's own random ops) seeded per model: the same spec, the same record
        with seeded_torch_rng(derive_seed(spec.seed, _RANDOM_OPS)):
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
                f"{path} was built with other settings or other samples than this build: build into another "
                "output folder, or start this one over (`--overwrite`)"
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


def build_zoo(
    out_dir: str | Path,
    settings: ZooSettings | None = None,
    *,
    executor: str | Executor = "local",
    threads: int = 1,
    num_cpus: int | None = None,
    address: str | None = None,
    gpus_per_model: float = 0.0,
    progress: Progress = True,
    on_note: Callable[[str], None] | None = None,
    start_over: bool = False,
    **fields: Any,
) -> dict[str, Any]:
    """Train and evaluate the zoo of `settings` (resuming from OUT/models/), then write the matrices and tables.

    Keywords naming ZooSettings fields (n_models=..., seed=..., space=...) replace those of `settings` (default:
    ZooSettings()). `executor`: "local", "ray" (`num_cpus` for a local Ray, `address` to join a cluster) or an
    Executor; each model is one item and uses `threads` torch threads (results are reproducible for a fixed thread
    count) and, on Ray, `gpus_per_model` GPUs; models train on the current accelerator (carried to workers).
    Notes on the data (e.g. a fallback source) go to `on_note` as they happen and into the summary, and the
    summary's settings name the source that ran.
    `start_over`: delete the zoo's files in OUT (`ZOO_FILES`) once the settings and the data are checked, instead
    of reusing its finished models. Returns a summary (also saved in OUT/zoo.json).
    """
    started = time.perf_counter()
    settings = replace(settings or ZooSettings(), **fields)
    n_models, n_test, seed, space = settings.n_models, settings.n_test, settings.seed, settings.space
    corruptions, severities = settings.corruptions, settings.severities
    if not isinstance(n_models, int) or n_models < 1 or not isinstance(n_test, int) or n_test < 1:
        raise ValueError(f"n_models and n_test must be positive integers, got {n_models!r}, {n_test!r}")
    if threads < 1 or seed < 0:
        raise ValueError(f"threads must be >= 1 and seed >= 0, got threads={threads}, seed={seed}")
    for name in corruptions:
        for severity in severities:
            corruption_level(name, severity)
    if len(set(corruptions)) != len(corruptions) or len(set(severities)) != len(severities):
        raise ValueError(
            f"corruptions ({', '.join(corruptions)}) and severities ({', '.join(map(str, severities))}) must not repeat"
        )
    out = Path(out_dir)
    data = load_zoo_data(
        settings.source,
        n_test,
        corruptions,
        severities,
        seed,
        settings.source_options,
        max(space.train_sizes),
        on_note=on_note,
        fallback=settings.fallback_source,
    )
    recorded: dict[str, Any] = {"n_models": n_models, "source": data.source}  # the source that ran
    if data.source != settings.source:
        recorded["requested_source"] = settings.source
    recorded |= {"n_test": n_test, "corruptions": list(corruptions), "severities": list(severities), "seed": seed}
    recorded |= {"threads": threads, "space": space.to_dict()}
    if settings.preset is not None:
        recorded["preset"] = settings.preset
    if start_over:
        for name in ZOO_FILES:
            path = out / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
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
    flip = settings.flip if settings.flip is not None else data.source not in _GLYPH_SOURCES
    job = ZooJob(data.train, data.samples, threads=threads, flip=flip)
    own_runner = isinstance(executor, str)
    if isinstance(executor, str):
        runner = make_executor(
            executor, address=address, num_cpus=num_cpus, cpus_per_item=threads, gpus_per_item=gpus_per_model
        )
    else:
        runner = executor
    # local: one model per map call (a progress step each); otherwise batches that keep every worker busy
    batch = 1 if runner.name == "local" else max(4, 4 * (num_cpus or 4))
    try:
        with progress_bar(progress, n_models, done=reused, description="zoo", width=44) as advance:
            for start in range(0, len(todo), batch):
                part = todo[start : start + batch]
                advance(0, f"training {part[0].name}" if len(part) == 1 else f"training {len(part)} models")
                for spec, result in zip(part, runner.map(job, part), strict=True):
                    if not (out / "models" / SETTINGS_FILE).exists():  # what a resume is checked against
                        atomic_write_bytes(out / "models" / SETTINGS_FILE, json.dumps(recorded, indent=2).encode())
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
    return _write_outputs(out, data, specs, results, reused, started, recorded | {"flip": flip})


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
    write_samples_csv(
        out / "samples.csv",
        (
            SampleRow(j, data.source, data.sample_items[j], data.sample_domains[j], int(labels[j]), data.hashes[j])
            for j in range(len(labels))
        ),
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
