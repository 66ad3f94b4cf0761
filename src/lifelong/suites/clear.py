"""CLEAR temporal streams: buckets of one fixed label space under the IID or streaming protocol
(docs/protocols/clear.md).

Every labeled bucket (1..N; bucket 0 is unlabeled, for self-supervised pretraining only) is one task of a
`Stream` that evaluates every task after each training event, so a run fills the accuracy matrix R[i, j].

- IID: the learner trains on a bucket's training part (`train_and_dev`; `train`/`dev` divide it 90/10 for learners
  that select models) and every bucket's test part is evaluated. The split (`split=`): the official one released
  with the data when there is one ("official:split_<seed>", CLEAR's per-seed split files, seeds 0-4; or
  "official:test-folder", a separately released test set), else ours ("ours": 70/30 at random, not stratified,
  seeded by the run's seed: 2,310 train / 990 test at 3,300). `split="ours"` forces ours.
- streaming ("train on today, test on tomorrow"): the learner trains on the whole bucket and every whole bucket
  is evaluated; the diagonal is training accuracy, so only next-domain accuracy and FwT are reported. With a
  separate test set, the whole bucket is its training set (S_i, both trained on and evaluated, so that today's
  test set is tomorrow's training set); the test set is not used ("whole-bucket").

CLEAR has no separate development test set: `dev_test` and `test` are the same evaluation data.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from lifelong.core.datasets import ArrayDataset
from lifelong.core.streams import Stream, StreamTask, TaskSplits
from lifelong.core.tasks import TaskKey, TaskKind
from lifelong.data.roots import DATA_ENV, resolve_data_root
from lifelong.data.temporal import OfficialSplitSource
from lifelong.suites.names import TEMPORAL_SOURCES, StreamName, classify_stream

PROTOCOLS = ("iid", "streaming")
SPLITS = ("official", "ours")  # the `split` stream option; None: official when the data has one, else ours
WHOLE_BUCKET = "whole-bucket"  # the streaming protocol's "split": no split at all
TRAIN_FRACTION = 0.7  # docs/protocols/clear.md#iid-protocol: 70/30 per bucket
DEV_FRACTION = 0.1  # share of a bucket's training data the learner may hold out for its own model selection
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


def choose_split(source, protocol: str, split: str | None, seed: int) -> str:
    """The split a stream's buckets use: "official:split_<seed>", "official:test-folder", "ours" or "whole-bucket".

    Under IID the official split released with the data is the default (`source.official_splits`, see
    lifelong.data.temporal.OfficialSplits) and `split="ours"` replaces it with our seeded 70/30; a seed without an
    official split, or official splits that cannot be used, is an error saying so. Streaming never splits.
    """
    if split is not None and split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {SPLITS} (-s split=ours: our seeded 70/30 split)")
    if protocol == "streaming":
        return WHOLE_BUCKET
    official = source.official_splits if isinstance(source, OfficialSplitSource) else None
    if split == "ours" or (official is None and split is None):
        return "ours"
    if official is None:
        raise ValueError(
            f"{source.name!r} has no official split (e.g. CLEAR's test/ folder or training_folder/testset_ratio_0.3/); "
            "drop -s split=official to split each bucket 70/30 with the run's seed"
        )
    if official.problem:
        raise ValueError(f"{official.problem}; fix it, or pass -s split=ours to split each bucket 70/30 yourself")
    if official.kind == "seeded" and seed not in official.seeds:
        raise ValueError(
            f"{source.name!r} comes with official splits for seeds {list(official.seeds)} in {official.where!r}, not "
            f"for seed {seed}: run with --seed in {list(official.seeds)}, or pass -s split=ours to use our own "
            "seeded 70/30 split"
        )
    return official.name(seed)


def _items(labeled, resolution: int | None) -> np.ndarray:
    """uint8 [N, r, r, C] images (centre crop + resize; C = 1 when every image is grayscale, else 3) or the float32
    [N, D] features as given. Grayscale stays one channel (a third of the memory and copying); the models that
    take three channels get it replicated per batch (`training.inputs.to_input_tensor`)."""
    features = getattr(labeled, "features", None)
    if features is not None:
        return np.ascontiguousarray(features, dtype=np.float32)
    from lifelong.data.images import resize_all

    return resize_all(labeled.images, _resolution(labeled, resolution), _channels(labeled.images))


def _channels(images) -> int:
    """1 when every image has one channel, else 3."""
    if isinstance(images, np.ndarray):
        return 1 if images.ndim == 4 and images.shape[-1] == 1 else 3
    return 1 if len(images) and all(np.ndim(image) == 3 and image.shape[-1] == 1 for image in images) else 3


def _resolution(labeled, resolution: int | None) -> int | None:
    """The stream's resolution, else the shorter side of the first image (None for features)."""
    if resolution is not None or getattr(labeled, "features", None) is not None or not len(labeled.ids):
        return resolution
    return int(min(labeled.images[0].shape[:2]))


@dataclass(frozen=True)
class _BucketLoader:
    """Loads one bucket's splits under a protocol (a class, so that streams stay picklable)."""

    source: object
    key: TaskKey
    bucket: int
    protocol: str
    seed: int
    resolution: int | None
    split: str  # from choose_split: "official:...", "ours" or "whole-bucket"

    def __call__(self) -> TaskSplits:
        if self.split.startswith("official:"):
            train_data, test_data = self.source.official_split(self.bucket, self.seed)
            parts = (self._checked(train_data), self._checked(test_data))
        else:
            parts = (self._checked(self.source.labeled(self.bucket)),)
        resolution = _resolution(parts[0], self.resolution)  # test images take the training images' size
        arrays = [_items(p, resolution) for p in parts]
        if len(arrays) > 1 and arrays[0].shape[1:] != arrays[1].shape[1:]:
            raise ValueError(
                f"bucket {self.bucket} of {self.source.name!r}: the official test items have shape "
                f"{arrays[1].shape[1:]}, the training items {arrays[0].shape[1:]}; extract both the same way"
            )
        items = np.concatenate(arrays) if len(arrays) > 1 else arrays[0]
        labels = np.concatenate([np.asarray(p.labels) for p in parts])
        n = len(arrays[0])
        if len(parts) > 1:  # official: the training items, then the test items
            train_part, test_part = np.arange(n), np.arange(n, len(labels))
        elif self.split == "ours":
            train_part, test_part = iid_split(n, self.seed, self.bucket)
        else:  # the whole bucket, trained on and evaluated
            train_part, test_part = np.arange(n), np.arange(n)
        train, dev = _dev_split(train_part, self.seed, self.bucket)

        def part(split: str, idx: np.ndarray) -> ArrayDataset:
            return ArrayDataset(self.key, split, items[idx], labels[idx])

        evaluation = part("test", test_part)
        notes = {
            "protocol": self.protocol,
            "bucket": self.bucket,
            "split": self.split,
            "split_sizes": {
                "train_and_dev": len(train_part),
                "train": len(train),
                "dev": len(dev),
                "eval": len(test_part),
            },
            "corrupt_skipped": sum(int(getattr(p, "notes", {}).get("corrupt_skipped", 0)) for p in parts),
        }
        return TaskSplits(
            train=part("train", train),
            dev=part("dev", dev),
            dev_test=ArrayDataset(self.key, "dev_test", evaluation.images, evaluation.labels()),
            test=evaluation,
            notes=notes,
        )

    def _checked(self, labeled):
        if tuple(labeled.class_names) != self.key.class_names:
            raise ValueError(
                f"bucket {self.bucket} of {self.source.name!r} has classes {list(labeled.class_names)}, expected the "
                f"stream's fixed label space {list(self.key.class_names)}"
            )
        return labeled


def _year(window: tuple[str, str]) -> int | None:
    start = window[0] if window else ""
    return int(start[:4]) if start[:4].isdigit() else None


def temporal_stream(
    source,
    *,
    protocol: str = "iid",
    split_seed: int = 0,
    split: str | None = None,
    eval_split: str = "dev_test",
    resolution: int | None = None,
    name: str | None = None,
) -> Stream:
    """A stream over the labeled buckets of a `lifelong.data.temporal.TemporalSource` under `protocol`.

    The stream's name is `<name>-<protocol>` (e.g. clear-mini-iid): runs under the two protocols are not comparable.
    `split` picks IID's train/test split (see choose_split); the split used is in every task's notes as "split".
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {PROTOCOLS}")
    split_name = choose_split(source, protocol, split, int(split_seed))
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
            domain=getattr(source, "domain", "object"),
            metadata={
                "resolution": resolution,
                "bucket": bucket,
                "window": list(windows[bucket]),
                "source": source.name,
                "split": split_name,
                # pixels without a spatial layout (a permuted stream): learners must not crop or mirror them
                **({} if getattr(source, "spatial", True) else {"spatial": False}),
            },
        )
        loader = _BucketLoader(source, key, bucket, protocol, int(split_seed), resolution, split_name)
        tasks.append(StreamTask(key, loader, source=source.name))
    return Stream(
        f"{name or source.name}-{protocol}",  # the protocol is part of the stream: results group by stream
        tasks,
        eval_split=eval_split,
        evaluation="all",
        protocol=protocol,
        metadata={"unlabeled_buckets": [b for b in range(source.num_buckets) if b not in buckets], "split": split_name},
    )


# ----------------------------------------------------------------------------------------------------------
# the temporal sources behind stream names (entry points `lifelong.temporal_sources`)


def clear_mini_source(data_root=None, **options):
    """offline CLEAR in miniature: drifting glyphs, 1 unlabeled + 10 buckets x 11 classes x 300 (accuracy matrix)

    Built by lifelong.data.sources.drifting (no data root: it is rendered); the options go to `ClearMini`.
    """
    from lifelong.data.sources.drifting import ClearMini

    options.pop("skip_corrupt", None)  # rendered images: none is corrupt (--skip-corrupt is accepted and unused)
    return ClearMini(**options)


def clear_folder_source(data_root: str | os.PathLike | None = None, **options):
    """CLEAR-10 from its released layout under --data-root (accuracy matrix)

    The folder holding labeled_images/, or one with a clear10/ folder inside; by default the data root's
    (lifelong.data.roots.resolve_data_root).
    """
    from lifelong.data.sources.clear import ClearFolder

    root = resolve_data_root(data_root)
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


STREAM_OPTIONS = ("protocol", "split_seed", "split", "eval_split", "resolution")


def is_temporal(name_or_path: str | os.PathLike) -> bool:
    """True for CLEAR-style stream names and timestamped CSV files (False for anything else)."""
    try:
        return classify_stream(name_or_path).is_temporal
    except ValueError:
        return False


def temporal_source(
    name_or_path: str | os.PathLike | StreamName, *, data_root=None, skip_corrupt: bool = False, **options
):
    """The TemporalSource behind a stream name or CSV path (also used to reach bucket 0 for pretraining)."""
    name = name_or_path if isinstance(name_or_path, StreamName) else classify_stream(name_or_path)
    if not name.is_temporal:
        raise ValueError(
            f"{name.value!r} is not a temporal stream: give one of {sorted(TEMPORAL_SOURCES.names())} or a .csv file"
        )
    if skip_corrupt:
        options["skip_corrupt"] = True
    if name.kind == "timestamped-csv":
        factory, path = timestamp_csv_source, (name.value,)
    else:
        factory, path = TEMPORAL_SOURCES.load(name.value), ()
        options["data_root"] = data_root  # every registered temporal source takes it (and may ignore it)
    try:
        return factory(*path, **options)
    except TypeError as exc:
        raise ValueError(
            f"--stream {name.value} does not take one of the options {sorted(options)} ({exc}); see "
            f"`lifelong streams {name.value}`"
        ) from exc


def get_temporal_stream(
    name_or_path: str | os.PathLike | StreamName,
    *,
    data_root=None,
    allow_missing=None,
    skip_corrupt: bool = False,
    **options,
) -> Stream:
    """Stream `name_or_path` under options: protocol, split_seed, eval_split, resolution; the rest go to the source."""
    name = name_or_path if isinstance(name_or_path, StreamName) else classify_stream(name_or_path)
    stream_options = {k: options.pop(k) for k in STREAM_OPTIONS if k in options}
    source = temporal_source(name, data_root=data_root, skip_corrupt=skip_corrupt, **options)
    label = getattr(source, "stream_label", None) or name.label  # a source may name its variant (-s dataset=...)
    return temporal_stream(source, name=label, **stream_options)
