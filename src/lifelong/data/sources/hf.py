"""Hugging Face datasets: a dataset saved with `save_to_disk` (offline), or one loaded from the hub by name.

`hf:DIR` loads a saved DatasetDict or Dataset; `hf:hub/NAME` calls `datasets.load_dataset(NAME)`, which needs
a network or the local cache (HF_HUB_OFFLINE=1 is honoured by `datasets` itself). Columns: `image` (an Image
feature) and `label` (an int or ClassLabel: multi-class) or `labels` (a list of ints: multi-label); an optional
`group` column gives each item's group value for group split rules (COIL-100 angle, DomainNet domain).
Split names train / validation (or val, valid) / test become the official split (a lone train split is none).
The `datasets` package is optional (`pip install 'lifelong[hf]'`) and imported only here, when a dataset is loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from lifelong.core.tasks import TaskKind
from lifelong.data.images import CorruptImageError, decode_image
from lifelong.data.labeled import LabeledImages

HUB_PREFIX = "hub/"
IMAGE_COLUMNS = ("image", "img")
SPLIT_ALIASES = {"train": "train", "validation": "val", "valid": "val", "val": "val", "test": "test"}
# Files save_to_disk writes: a DatasetDict has dataset_dict.json; a Dataset has state.json + dataset_info.json.
DICT_MARKER = "dataset_dict.json"
DATASET_MARKERS = ("state.json", "dataset_info.json")


def is_saved_dataset(directory: str | Path) -> bool:
    """True when `directory` looks like a `save_to_disk` output (file names only, nothing read)."""
    directory = Path(directory)
    return (directory / DICT_MARKER).is_file() or all((directory / m).is_file() for m in DATASET_MARKERS)


def load_hf(where: str, *, skip_corrupt: bool = False, config: str | None = None) -> LabeledImages:
    """Load `where` (a save_to_disk folder, or `hub/NAME` from the hub; `config` names a hub configuration)."""
    datasets = _import_datasets()
    if where.startswith(HUB_PREFIX):
        name = where[len(HUB_PREFIX) :]
        try:
            loaded = datasets.load_dataset(name, config)
        except Exception as exc:  # the hub client raises many types (network, auth, missing cache)
            raise FileNotFoundError(
                f"cannot load Hugging Face hub dataset {name!r}: {exc}; without a network (or with HF_HUB_OFFLINE=1) "
                "only datasets already in the local cache load: save one with `save_to_disk` and use hf:DIR"
            ) from exc
    else:
        if config is not None:
            raise ValueError(f"`config` applies to hub datasets (hf:hub/NAME) only, not to the saved folder {where!r}")
        directory = Path(where).expanduser()
        if not is_saved_dataset(directory):
            raise FileNotFoundError(
                f"{str(directory)!r} is not a dataset saved with `save_to_disk`: expected {DICT_MARKER} or "
                f"{' + '.join(DATASET_MARKERS)}"
            )
        loaded = datasets.load_from_disk(str(directory))
    parts = dict(loaded.items()) if isinstance(loaded, datasets.DatasetDict) else {None: loaded}
    return _to_labeled(where, parts, skip_corrupt, datasets)


def _import_datasets() -> Any:
    try:
        import datasets
    except ImportError as exc:
        raise ImportError(
            "the Hugging Face source needs the optional `datasets` package: pip install 'lifelong[hf]'"
        ) from exc
    return datasets


def _to_labeled(where: str, parts: dict[str | None, Any], skip_corrupt: bool, datasets: Any) -> LabeledImages:
    """Every split's rows as one LabeledImages, official split from the split names (none for a single Dataset)."""
    unknown = [name for name in parts if name is not None and name not in SPLIT_ALIASES]
    if unknown:
        raise ValueError(f"{where!r}: split(s) {unknown} are not one of {sorted(SPLIT_ALIASES)}; rename or drop them")
    first = next(iter(parts.values()))
    image_column = next((c for c in IMAGE_COLUMNS if c in first.column_names), None)
    if image_column is None:
        raise ValueError(f"{where!r} has no image column {IMAGE_COLUMNS} (columns: {first.column_names})")
    if ("label" in first.column_names) == ("labels" in first.column_names):
        raise ValueError(
            f"{where!r} needs exactly one of the columns 'label' (multi-class) or 'labels' (multi-label), "
            f"found {first.column_names}"
        )
    multi_label = "labels" in first.column_names
    label_column = "labels" if multi_label else "label"
    images: list[np.ndarray] = []
    labels: list[Any] = []
    ids: list[str] = []
    splits: list[str] = []
    groups: dict[str, str] = {}
    skipped: list[str] = []
    for split_name, part in parts.items():
        missing = [c for c in (image_column, label_column) if c not in part.column_names]
        if missing:
            raise ValueError(f"{where!r}: split {split_name!r} lacks column(s) {missing}")
        raw = part.cast_column(image_column, datasets.Image(decode=False))
        for i, row in enumerate(raw):
            item = f"{where}:{split_name or 'all'}[{i}]"
            try:
                images.append(_decode(row[image_column], item))
            except CorruptImageError:
                if not skip_corrupt:
                    raise
                skipped.append(item)
                continue
            labels.append(row[label_column])
            ids.append(item)
            splits.append(SPLIT_ALIASES.get(split_name or "", ""))
            if "group" in row:
                groups[item] = str(row["group"])
    class_names = _class_names(first.features[label_column], labels, multi_label)
    label_array = _label_array(labels, len(class_names), multi_label)
    notes: dict[str, Any] = {"source": f"hf:{where}", "corrupt_skipped": len(skipped), "corrupt_files": skipped}
    if groups:
        notes["groups"] = groups
    return LabeledImages(
        images=images,
        labels=label_array,
        ids=ids,
        class_names=class_names,
        kind=TaskKind.MULTI_LABEL if multi_label else TaskKind.MULTI_CLASS,
        official_split=None if set(splits) <= {"", "train"} else np.asarray(splits),
        notes=notes,
    )


def _decode(value: Any, item: str) -> np.ndarray:
    """An Image cell (with decode=False: {"bytes", "path"}) as uint8 [H, W, C]."""
    if isinstance(value, dict) and value.get("bytes"):
        return decode_image(value["bytes"], item=item)
    if isinstance(value, dict) and value.get("path"):
        return decode_image(value["path"], item=item)
    raise CorruptImageError(f"item {item!r}: empty image cell (no bytes and no path)")


def _class_names(feature: Any, labels: list[Any], multi_label: bool) -> tuple[str, ...]:
    """ClassLabel names when the feature has them, else "0".."K-1" with K = largest label + 1."""
    inner = getattr(feature, "feature", feature) if multi_label else feature
    if isinstance(inner, list) and inner:
        inner = inner[0]
    names = getattr(inner, "names", None)
    if names:
        return tuple(str(n) for n in names)
    values = [v for row in labels for v in row] if multi_label else labels
    return tuple(str(k) for k in range(int(max(values, default=0)) + 1))


def _label_array(labels: list[Any], num_classes: int, multi_label: bool) -> np.ndarray:
    if not multi_label:
        return np.asarray(labels, dtype=np.int64)
    hot = np.zeros((len(labels), num_classes), dtype=np.uint8)
    for i, row in enumerate(labels):
        positives = np.asarray(row, dtype=np.int64)
        if positives.size and (positives.min() < 0 or positives.max() >= num_classes):
            raise ValueError(f"row {i}: labels {positives.tolist()} outside 0..{num_classes - 1}")
        hot[i, positives] = 1
    return hot
