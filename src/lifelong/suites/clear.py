"""CLEAR temporal streams (spec/clear.md): buckets of one fixed label space under the IID or streaming protocol.

Every labeled bucket (1..N; bucket 0 is unlabeled, for self-supervised pretraining only) is one task of a
`Stream` that evaluates every task after each training event, so a run fills the accuracy matrix R[i, j].

- IID: the bucket is split 70/30 at random (not stratified; seeded by the run's seed): 2,310 train / 990 test at
  3,300. The learner trains on the 70% (`train_and_dev`; `train`/`dev` divide it 90/10 for learners that select
  models) and every bucket's 30% is evaluated.
- streaming ("train on today, test on tomorrow"): the learner trains on the whole bucket and every whole bucket
  is evaluated; the diagonal is training accuracy, so only next-domain accuracy and FwT are reported.

CLEAR has no separate development test set: `dev_test` and `test` are the same evaluation data.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lifelong.core.datasets import ArrayDataset
from lifelong.core.streams import Stream, StreamTask, TaskSplits
from lifelong.core.tasks import TaskKey, TaskKind

PROTOCOLS = ("iid", "streaming")
TRAIN_FRACTION = 0.7  # spec section 2: 70/30 per bucket
DEV_FRACTION = 0.1  # share of a bucket's training data the learner may hold out for its own model selection
DATA_ENV = "LIFELONG_DATA"
CLEAR_FOLDER = "clear10"  # default folder under the data root for `--stream clear`


def iid_split(n: int, seed: int, bucket: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded random 70/30 split of n items (train = round(0.7 n)): 2,310 / 990 at 3,300."""
    if n < 2:
        raise ValueError(f"bucket {bucket} has {n} labeled item(s); the IID protocol needs at least 2")
    order = np.random.default_rng([seed, bucket]).permutation(n)
    n_train = min(n - 1, max(1, round(TRAIN_FRACTION * n)))
    return np.sort(order[:n_train]), np.sort(order[n_train:])


def _dev_split(indices: np.ndarray, seed: int, bucket: int) -> tuple[np.ndarray, np.ndarray]:
    """Split training indices into train/dev (dev = 10%, at least one item each when possible)."""
    order = np.random.default_rng([seed, bucket, 1]).permutation(indices)
    n_dev = min(len(order) - 1, max(1, round(DEV_FRACTION * len(order)))) if len(order) > 1 else 0
    return np.sort(order[n_dev:]), np.sort(order[:n_dev])


def _items(labeled, resolution: int | None) -> np.ndarray:
    """uint8 [N, r, r, 3] images (centre crop + resize) or the float32 [N, D] features as given."""
    features = getattr(labeled, "features", None)
    if features is not None:
        return np.ascontiguousarray(features, dtype=np.float32)
    from lifelong.data.images import resize_all

    if resolution is None:
        first = labeled.images[0]
        resolution = int(min(first.shape[:2]))
    return resize_all(labeled.images, resolution, 3)


@dataclass(frozen=True)
class _BucketLoader:
    """Loads one bucket's splits under a protocol (a class, so that streams stay picklable)."""

    source: object
    key: TaskKey
    bucket: int
    protocol: str
    seed: int
    resolution: int | None

    def __call__(self) -> TaskSplits:
        labeled = self.source.labeled(self.bucket)
        if tuple(labeled.class_names) != self.key.class_names:
            raise ValueError(
                f"bucket {self.bucket} of {self.source.name!r} has classes {list(labeled.class_names)}, expected the "
                f"stream's fixed label space {list(self.key.class_names)}"
            )
        items = _items(labeled, self.resolution)
        labels = np.asarray(labeled.labels)
        n = len(labels)
        if self.protocol == "iid":
            train_part, test_part = iid_split(n, self.seed, self.bucket)
        else:
            train_part, test_part = np.arange(n), np.arange(n)
        train, dev = _dev_split(train_part, self.seed, self.bucket)

        def part(split: str, idx: np.ndarray) -> ArrayDataset:
            return ArrayDataset(self.key, split, items[idx], labels[idx])

        evaluation = part("test", test_part)
        notes = {
            "protocol": self.protocol,
            "bucket": self.bucket,
            "split_sizes": {
                "train_and_dev": len(train_part),
                "train": len(train),
                "dev": len(dev),
                "eval": len(test_part),
            },
            "corrupt_skipped": int(getattr(labeled, "notes", {}).get("corrupt_skipped", 0)),
        }
        return TaskSplits(
            train=part("train", train),
            dev=part("dev", dev),
            dev_test=ArrayDataset(self.key, "dev_test", evaluation.images, evaluation.labels()),
            test=evaluation,
            notes=notes,
        )


def _year(window: tuple[str, str]) -> int | None:
    start = window[0] if window else ""
    return int(start[:4]) if start[:4].isdigit() else None


def temporal_stream(
    source,
    *,
    protocol: str = "iid",
    split_seed: int = 0,
    eval_split: str = "dev_test",
    resolution: int | None = None,
    name: str | None = None,
) -> Stream:
    """A stream over the labeled buckets of a `lifelong.data.temporal.TemporalSource` under `protocol`.

    The stream's name is `<name>-<protocol>` (e.g. clear-mini-iid): runs under the two protocols are not comparable.
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {PROTOCOLS}")
    buckets = tuple(source.labeled_buckets)
    if len(buckets) < 2:
        raise ValueError(f"{source.name!r} has {len(buckets)} labeled bucket(s); an accuracy matrix needs at least 2")
    resolution = resolution if resolution is not None else getattr(source, "resolution", None)
    classes = tuple(source.class_names)
    windows = tuple(source.windows) or (("", ""),) * source.num_buckets
    tasks = []
    for bucket in buckets:
        key = TaskKey(
            name=f"bucket{bucket}",
            kind=TaskKind.MULTI_CLASS,
            num_classes=len(classes),
            class_names=classes,
            year=_year(windows[bucket]),
            domain=getattr(source, "domain", "photos"),
            metadata={
                "resolution": resolution,
                "bucket": bucket,
                "window": list(windows[bucket]),
                "source": source.name,
            },
        )
        loader = _BucketLoader(source, key, bucket, protocol, int(split_seed), resolution)
        tasks.append(StreamTask(key, loader, source=source.name))
    return Stream(
        f"{name or source.name}-{protocol}",  # the protocol is part of the stream: results group by stream
        tasks,
        eval_split=eval_split,
        evaluation="all",
        protocol=protocol,
        metadata={"unlabeled_buckets": [b for b in range(source.num_buckets) if b not in buckets]},
    )


# ----------------------------------------------------------------------------------------------------------
# the temporal sources behind stream names


def clear_mini_source(**options):
    """`clear-mini`: offline drifting glyphs, 1 + 10 buckets, 11 classes (lifelong.data.sources.drifting)."""
    from lifelong.data.sources.drifting import ClearMini

    return ClearMini(**options)


def clear_folder_source(data_root: str | os.PathLike | None = None, **options):
    """`clear`: CLEAR's released layout under DATA_ROOT (or DATA_ROOT/clear10, or $LIFELONG_DATA/clear10)."""
    from lifelong.data.sources.clear import ClearFolder

    root = Path(data_root) if data_root else Path(os.environ.get(DATA_ENV, "data"))
    if not (root / "labeled_images").exists() and (root / CLEAR_FOLDER).exists():
        root = root / CLEAR_FOLDER
    if not root.exists():
        raise FileNotFoundError(
            f"no CLEAR data at {root}: pass --data-root pointing at the folder holding labeled_images/ "
            f"(or set ${DATA_ENV} to a folder containing {CLEAR_FOLDER}/)"
        )
    return ClearFolder(root, **options)


def timestamp_csv_source(path: str | os.PathLike, **options):
    """Any image collection with one timestamp per image: a CSV with path,label,timestamp columns."""
    from lifelong.data.sources.clear import TimestampCsv

    return TimestampCsv(path, **options)


SOURCES: dict[str, Callable[..., object]] = {"clear-mini": clear_mini_source, "clear": clear_folder_source}
STREAM_OPTIONS = ("protocol", "split_seed", "eval_split", "resolution")


def is_temporal(name_or_path: str | os.PathLike) -> bool:
    """True for CLEAR-style stream names and timestamped CSV files."""
    name = os.fspath(name_or_path)
    return name in SOURCES or name.endswith(".csv")


def temporal_source(name_or_path: str | os.PathLike, *, data_root=None, skip_corrupt: bool = False, **options):
    """The TemporalSource behind a stream name or CSV path (also used to reach bucket 0 for pretraining)."""
    name = os.fspath(name_or_path)
    if skip_corrupt:
        options["skip_corrupt"] = True
    try:
        if name == "clear-mini":
            return clear_mini_source(**options)
        if name == "clear":
            return clear_folder_source(data_root, **options)
        if name.endswith(".csv"):
            return timestamp_csv_source(name, **options)
    except TypeError as exc:
        raise ValueError(f"stream {name!r} does not accept options {sorted(options)}: {exc}") from exc
    raise ValueError(f"{name!r} is not a temporal stream: give one of {sorted(SOURCES)} or a .csv file")


def get_temporal_stream(
    name_or_path: str | os.PathLike,
    *,
    data_root=None,
    allow_missing=None,
    skip_corrupt: bool = False,
    **options,
) -> Stream:
    """Stream `name_or_path` under options: protocol, split_seed, eval_split, resolution; the rest go to the source."""
    stream_options = {k: options.pop(k) for k in STREAM_OPTIONS if k in options}
    source = temporal_source(name_or_path, data_root=data_root, skip_corrupt=skip_corrupt, **options)
    name = Path(os.fspath(name_or_path)).stem if os.fspath(name_or_path).endswith(".csv") else os.fspath(name_or_path)
    return temporal_stream(source, name=name, **stream_options)


def pretrain_ssl_command(
    stream: str,
    out: str | os.PathLike,
    *,
    bucket: int = 0,
    architecture: str = "resnet_mini",
    epochs: int | None = None,
    resolution: int | None = None,
    seed: int = 0,
    threads: int = 1,
    data_root: str | None = None,
    source_options: dict | None = None,
) -> dict:
    """SimCLR on `stream`'s bucket `bucket` unlabeled pool (CLEAR: bucket 0), saved as an encoder at `out`.

    Resumable: finished epochs are kept in OUT.work and a rerun of the same command continues from them.
    """
    import shutil

    from rich.progress import Progress

    from lifelong.core.learner import THREADS_ENV
    from lifelong.training.encoders import save_encoder
    from lifelong.training.loop import configure_torch_threads
    from lifelong.training.ssl import pretrain_simclr

    os.environ[THREADS_ENV] = str(threads)
    configure_torch_threads()
    source = temporal_source(stream, data_root=data_root, **dict(source_options or {}))
    if not 0 <= bucket < source.num_buckets:
        raise ValueError(f"bucket {bucket} is out of range: {source.name!r} has buckets 0..{source.num_buckets - 1}")
    images = source.unlabeled(bucket)
    if len(images) == 0:
        raise ValueError(f"bucket {bucket} of {source.name!r} has no unlabeled images to pretrain on")
    resolution = resolution or getattr(source, "resolution", None) or int(images.shape[1])
    out = Path(out)
    workdir = out.with_name(out.name + ".work")
    options = {"epochs": epochs} if epochs else {}
    with Progress() as bar:
        task = bar.add_task(f"SimCLR on {source.name} bucket {bucket} ({len(images)} images)", total=epochs or 1)

        def progress(epoch: int, total: int, loss: float) -> None:
            bar.update(task, completed=epoch, total=total, description=f"SimCLR epoch {epoch}/{total} loss {loss:.3f}")

        checkpoint = pretrain_simclr(
            images,
            architecture=architecture,
            resolution=resolution,
            seed=seed,
            progress=progress,
            workdir=workdir,
            source=f"{source.name} bucket {bucket}",
            **options,
        )
    path = save_encoder(checkpoint, out)
    shutil.rmtree(workdir, ignore_errors=True)
    return {
        "encoder": str(path),
        "images": len(images),
        "epochs": checkpoint.epochs,
        "feature_dim": checkpoint.feature_dim,
        "resolution": checkpoint.resolution,
        "train_flops": checkpoint.train_flops,
        "final_loss": checkpoint.history[-1]["loss"] if checkpoint.history else None,
        "use": f"lifelong run --stream {stream} --learner finetune -o encoder={path}",
    }
