"""Where images come from: `load_source("KIND:WHERE", **options)` and `describe` for `lifelong data inspect`.

Sources: `builtin:NAME` (offline generators, see BUILTIN_SOURCES), `idx:DIR` (MNIST-format files),
`fashion-mnist` (Debian's package), `folder:DIR` (one sub-folder per class), `csv:FILE` (a manifest).
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.core.tasks import TaskKind
from lifelong.data.labeled import LabeledImages
from lifelong.data.sources.builtin import BUILTIN_SOURCES, BuiltinSource
from lifelong.data.sources.csv_manifest import load_csv_manifest
from lifelong.data.sources.idx import load_fashion_mnist, load_idx_dir
from lifelong.data.sources.imagefolder import load_image_folder

SOURCE_FORMS = ("builtin:NAME", "idx:DIR", "fashion-mnist", "folder:DIR", "csv:FILE")

__all__ = ["BUILTIN_SOURCES", "SOURCE_FORMS", "BuiltinSource", "describe", "load_source"]


def load_source(spec: str, *, skip_corrupt: bool = False, **options: Any) -> LabeledImages:
    """Load the source named by `spec` (one of SOURCE_FORMS), passing `options` to its loader.

    `skip_corrupt` applies to file sources (folder, csv): corrupt images are left out and listed in
    notes["corrupt_files"] (count in notes["corrupt_skipped"]); without it the first one raises.
    """
    kind, _, where = spec.partition(":")
    if kind == "builtin":
        if where not in BUILTIN_SOURCES:
            raise ValueError(f"unknown builtin source {where!r}; available: {sorted(BUILTIN_SOURCES)}")
        return _call(spec, BUILTIN_SOURCES[where].generate, (), options)
    if kind == "fashion-mnist" and not where:
        return _call(spec, load_fashion_mnist, (), options)
    loaders: dict[str, Callable[..., LabeledImages]] = {
        "idx": load_idx_dir,
        "folder": load_image_folder,
        "csv": load_csv_manifest,
    }
    if kind not in loaders or not where:
        raise ValueError(f"unknown source {spec!r}; expected one of {list(SOURCE_FORMS)}")
    location = Path(where).expanduser()
    if not location.exists():
        raise FileNotFoundError(f"source {spec!r}: path not found: {str(location)!r}")
    if kind != "idx":
        options = {**options, "skip_corrupt": skip_corrupt}
    return _call(spec, loaders[kind], (location,), options)


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
    return {
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
        "notes": {k: v for k, v in labeled.notes.items() if k != "corrupt_files"},
    }
