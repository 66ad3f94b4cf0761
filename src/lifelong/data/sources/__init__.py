"""Where images come from: `load_source("KIND:WHERE", **options)` and `describe` for `lifelong data inspect`.

Sources: `builtin:NAME` (offline generators, see BUILTIN_SOURCES), `idx:DIR` (MNIST-format files),
`fashion-mnist` (Debian's package), `folder:DIR` (one sub-folder per class, optionally under train/ val/ test/),
`csv:FILE` (a manifest), `cifar:DIR` (CIFAR-10/100 python pickles), `hf:DIR` (a Hugging Face dataset saved with
`save_to_disk`) or `hf:hub/NAME` (from the hub, needs a network). `detect_source(DIR)` names the source a folder
holds from its file names alone.
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.core.suggest import did_you_mean
from lifelong.core.tasks import TaskKind
from lifelong.data.labeled import LabeledImages
from lifelong.data.sources.builtin import BUILTIN_SOURCES, BuiltinSource
from lifelong.data.sources.cifar import cifar_layout, load_cifar_dir
from lifelong.data.sources.csv_manifest import load_csv_manifest
from lifelong.data.sources.hf import HUB_PREFIX, is_saved_dataset, load_hf
from lifelong.data.sources.idx import IDX_FILE_NAME, load_fashion_mnist, load_idx_dir
from lifelong.data.sources.imagefolder import SPLIT_FOLDERS, load_image_folder

SOURCE_FORMS = (
    "builtin:NAME",
    "idx:DIR",
    "fashion-mnist",
    "folder:DIR",
    "csv:FILE",
    "cifar:DIR",
    "hf:DIR",
    "hf:hub/NAME",
)
CSV_MANIFEST_NAME = "labels.csv"
# What detect_source recognises in a folder, in the order it checks (the first match wins).
LAYOUTS = (
    ("idx", "IDX files: PREFIX-images-idx3-ubyte[.gz] + PREFIX-labels-idx1-ubyte[.gz] (train / t10k prefixes)"),
    ("cifar", "CIFAR python pickles: data_batch_1..5 + test_batch (CIFAR-10) or train + test (CIFAR-100)"),
    ("hf", "a Hugging Face dataset saved with save_to_disk (columns image + label or labels)"),
    ("csv", f"a CSV manifest {CSV_MANIFEST_NAME} (columns path, label or labels, optional split)"),
    ("folder", "an image folder: <class>/<images>, optionally under train/ val/ test/ split folders"),
)

__all__ = [
    "BUILTIN_SOURCES",
    "LAYOUTS",
    "SOURCE_FORMS",
    "BuiltinSource",
    "conform_classes",
    "describe",
    "detect_source",
    "load_source",
]


def load_source(
    spec: str, *, skip_corrupt: bool = False, expect_classes: Sequence[str] | None = None, **options: Any
) -> LabeledImages:
    """Load the source named by `spec` (one of SOURCE_FORMS), passing `options` to its loader.

    `skip_corrupt` applies to file sources (folder, csv, hf): corrupt images are left out and listed in
    notes["corrupt_files"] (count in notes["corrupt_skipped"]); without it the first one raises.
    `expect_classes` makes the result use exactly those classes (see `conform_classes`).
    """
    labeled = _load(spec, skip_corrupt, options)
    return labeled if expect_classes is None else conform_classes(labeled, expect_classes, where=spec)


def _load(spec: str, skip_corrupt: bool, options: dict[str, Any]) -> LabeledImages:
    kind, _, where = spec.partition(":")
    if kind == "builtin":
        if where not in BUILTIN_SOURCES:
            raise ValueError(
                f"unknown builtin source {where!r}{did_you_mean(where, BUILTIN_SOURCES)}; available: "
                + ", ".join(sorted(BUILTIN_SOURCES))
            )
        return _call(spec, BUILTIN_SOURCES[where].generate, (), options)
    if kind == "fashion-mnist" and not where:
        return _call(spec, load_fashion_mnist, (), options)
    if kind == "hf" and where.startswith(HUB_PREFIX) and len(where) > len(HUB_PREFIX):
        return _call(spec, load_hf, (where,), {**options, "skip_corrupt": skip_corrupt})
    loaders: dict[str, Callable[..., LabeledImages]] = {
        "idx": load_idx_dir,
        "folder": load_image_folder,
        "csv": load_csv_manifest,
        "cifar": load_cifar_dir,
        "hf": load_hf,
    }
    if kind not in loaders or not where:
        raise ValueError(f"unknown source {spec!r}; expected one of: {', '.join(SOURCE_FORMS)}")
    location = Path(where).expanduser()
    if not location.exists():
        raise FileNotFoundError(f"source {spec!r}: path not found: {str(location)!r}")
    if kind in ("folder", "csv", "hf"):
        options = {**options, "skip_corrupt": skip_corrupt}
    return _call(spec, loaders[kind], (str(location) if kind == "hf" else location,), options)


def detect_source(directory: str | Path) -> str | None:
    """The source spec for the data in `directory` (one of LAYOUTS), from file and folder names only; else None.

    A folder holding nothing but one sub-folder (an unpacked archive, e.g. cifar-10-batches-py/) is looked into.
    """
    directory = Path(directory).expanduser()
    if not directory.is_dir():
        return None
    entries = [p for p in directory.iterdir() if not p.name.startswith(".")]
    found = _detect_files(directory)
    if found is None and len(entries) == 1 and entries[0].is_dir() and entries[0].name.lower() not in SPLIT_FOLDERS:
        found = _detect_files(entries[0]) or (f"folder:{entries[0]}" if _subfolders(entries[0]) else None)
    if found is None and _subfolders(directory):
        found = f"folder:{directory}"
    return found


def _subfolders(directory: Path) -> bool:
    return any(p.is_dir() and not p.name.startswith(".") for p in directory.iterdir())


def _detect_files(directory: Path) -> str | None:
    """The layouts recognised by file names (all but the image folder) in `directory`, or None."""
    if any(IDX_FILE_NAME.match(p.name) for p in directory.iterdir()):
        return f"idx:{directory}"
    if cifar_layout(directory):
        return f"cifar:{directory}"
    if is_saved_dataset(directory):
        return f"hf:{directory}"
    if (directory / CSV_MANIFEST_NAME).is_file():
        return f"csv:{directory / CSV_MANIFEST_NAME}"
    return None


def conform_classes(labeled: LabeledImages, classes: Sequence[str], *, where: str = "the source") -> LabeledImages:
    """`labeled` re-expressed over exactly `classes` (same items, labels re-indexed), or a ValueError.

    In order: the same names -> unchanged; the same names in another order -> labels re-indexed by name;
    classes named by integers below len(classes) (IDX, numeric CSV labels) -> integer k becomes class k
    (classes absent from the data are allowed); `classes` "0".."C-1" (names unknown) and C classes in the
    data -> the data's classes in its own order become 0..C-1 (their names kept in notes["source_class_names"]).
    """
    classes = tuple(str(c) for c in classes)
    source = tuple(labeled.class_names)
    if source == classes:
        return labeled
    index = {name: k for k, name in enumerate(classes)}
    if set(source) == set(classes):
        mapping = [index[name] for name in source]
    elif all(name.isdigit() and int(name) < len(classes) for name in source):
        mapping = [int(name) for name in source]
    elif classes == tuple(str(k) for k in range(len(classes))) and len(source) == len(classes):
        mapping = list(range(len(classes)))
    else:
        raise ValueError(
            f"{where} has {len(source)} classes {list(source)[:10]} but the task expects {len(classes)} "
            f"{list(classes)[:10]}; provide data with exactly the task's classes"
        )
    to_new = np.asarray(mapping, dtype=np.int64)
    if labeled.kind is TaskKind.MULTI_LABEL:
        labels = np.zeros((len(labeled), len(classes)), dtype=np.uint8)
        labels[:, to_new] = labeled.labels
    else:
        labels = to_new[labeled.labels]
    return LabeledImages(
        images=labeled.images,
        labels=labels,
        ids=labeled.ids,
        class_names=classes,
        kind=labeled.kind,
        official_split=labeled.official_split,
        notes={**labeled.notes, "source_class_names": list(source)},
    )


def _call(
    spec: str, loader: Callable[..., LabeledImages], args: tuple[Any, ...], options: dict[str, Any]
) -> LabeledImages:
    """Call `loader`, turning unknown or missing options into an error that lists what the source accepts."""
    params = list(inspect.signature(loader).parameters.values())[len(args) :]
    accepted = [p.name for p in params]
    unknown = sorted(set(options) - set(accepted))
    missing = [p.name for p in params if p.default is inspect.Parameter.empty and p.name not in options]
    if unknown or missing:
        problem = f"unknown option(s) {unknown}" if unknown else f"missing option(s) {missing}"
        raise ValueError(f"source {spec!r}: {problem}; it accepts {accepted or 'no options'}")
    return loader(*args, **options)


def describe(labeled: LabeledImages) -> dict[str, Any]:
    """Summary of a loaded source (counts, classes, sizes, channels, official split) for `lifelong data inspect`."""
    if isinstance(labeled.images, np.ndarray):
        shapes = Counter({tuple(labeled.images.shape[1:]): len(labeled)}) if len(labeled) else Counter()
    else:
        shapes = Counter(image.shape for image in labeled.images)
    if labeled.kind is TaskKind.MULTI_LABEL:
        counts = labeled.labels.sum(axis=0)
    else:
        counts = np.bincount(labeled.labels, minlength=labeled.num_classes)
    heights = [s[0] for s in shapes]
    widths = [s[1] for s in shapes]
    summary = {
        "count": len(labeled),
        "kind": labeled.kind.value,
        "num_classes": labeled.num_classes,
        "class_names": list(labeled.class_names),
        "per_class": {name: int(c) for name, c in zip(labeled.class_names, counts, strict=True)},
        "image_size": {
            "min_height": min(heights, default=0),
            "max_height": max(heights, default=0),
            "min_width": min(widths, default=0),
            "max_width": max(widths, default=0),
            "distinct_shapes": len(shapes),
        },
        "channels": sorted({s[2] for s in shapes}),
        "official_split": None
        if labeled.official_split is None
        else {str(k): int(v) for k, v in zip(*np.unique(labeled.official_split, return_counts=True), strict=True)},
        "notes": {k: v for k, v in labeled.notes.items() if k not in ("corrupt_files", "groups")},
    }
    if "groups" in labeled.notes:  # per-item groups (split rules): their distinct values, not the mapping
        summary["groups"] = sorted({str(g) for g in labeled.notes["groups"].values()})
    return summary
