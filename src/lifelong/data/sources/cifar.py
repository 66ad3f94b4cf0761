"""CIFAR-10 / CIFAR-100 in their "python version" pickle layout, with the official train/test split.

CIFAR-10: `data_batch_1` .. `data_batch_5` (train), `test_batch` (test), optional `batches.meta`
(label_names). CIFAR-100: `train`, `test`, optional `meta` (fine_label_names, coarse_label_names).
Each batch is a pickled dict with `data` (uint8 [N, 3072], channel-major 32x32) and `labels` (CIFAR-10) or
`fine_labels` / `coarse_labels` (CIFAR-100). Pickles are read with `lifelong.core.safe_pickle`, which only
builds plain containers and numpy arrays within size budgets, so a tampered file cannot run code or exhaust memory.
"""

from __future__ import annotations

import pickle
import re
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.core.safe_pickle import UnsafePickleError, load_data_pickle
from lifelong.core.tasks import TaskKind
from lifelong.data.images import CorruptImageError
from lifelong.data.labeled import LabeledImages

CIFAR10_BATCH = re.compile(r"^data_batch_\d+$")
_SIDE = 32


def cifar_layout(directory: str | Path) -> str | None:
    """The layout `directory` holds, cifar10 or cifar100, from file names alone (nothing is read); else None."""
    directory = Path(directory)
    if (directory / "test_batch").is_file() and any(CIFAR10_BATCH.match(p.name) for p in directory.iterdir()):
        return "cifar10"
    if (directory / "train").is_file() and (directory / "test").is_file():
        return "cifar100"
    return None


def load_cifar_dir(directory: str | Path, *, label: str = "fine") -> LabeledImages:
    """A CIFAR-10 or CIFAR-100 pickle folder (layout detected); `label` picks CIFAR-100's fine or coarse labels."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"CIFAR folder not found: {str(directory)!r}")
    layout = cifar_layout(directory)
    if layout is None:
        raise FileNotFoundError(
            f"no CIFAR pickles in {str(directory)!r}: expected data_batch_1..5 + test_batch (CIFAR-10) "
            "or train + test (CIFAR-100), as in the 'python version' archives"
        )
    if label not in ("fine", "coarse"):
        raise ValueError(f"label must be 'fine' or 'coarse' (CIFAR-100's label sets), got {label!r}")
    if layout == "cifar10":
        train = sorted((p for p in directory.iterdir() if CIFAR10_BATCH.match(p.name)), key=lambda p: p.name)
        parts = [(p, "train") for p in train] + [(directory / "test_batch", "test")]
        label_key, meta_file, names_key, count = "labels", "batches.meta", "label_names", 10
    else:
        parts = [(directory / "train", "train"), (directory / "test", "test")]
        label_key, meta_file, names_key = f"{label}_labels", "meta", f"{label}_label_names"
        count = 100 if label == "fine" else 20
    images, labels, ids, splits = [], [], [], []
    for path, split in parts:
        batch = _read_pickle(path)
        data, part_labels = _batch_arrays(path, batch, label_key)
        images.append(data)
        labels.append(part_labels)
        ids.extend(f"{path.name}[{i}]" for i in range(len(data)))
        splits.append(np.full(len(data), split))
    meta = directory / meta_file
    class_names = _class_names(meta, names_key, count) if meta.is_file() else [str(k) for k in range(count)]
    return LabeledImages(
        images=np.concatenate(images),
        labels=np.concatenate(labels),
        ids=ids,
        class_names=tuple(class_names),
        kind=TaskKind.MULTI_CLASS,
        official_split=np.concatenate(splits),
        notes={"source": f"cifar:{directory}", "layout": layout, "files": [p.name for p, _ in parts]},
    )


def _read_pickle(path: Path) -> dict[str, Any]:
    """A CIFAR batch as a dict with str keys (Python 2 pickles are read as bytes and their keys decoded)."""
    try:
        content = load_data_pickle(path, what=f"the CIFAR file {str(path)!r}", encoding="bytes")
    except UnsafePickleError as exc:  # code, or beyond a budget: the message names the file and the budget
        raise CorruptImageError(f"{exc}; re-download it") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as exc:
        message = f"CIFAR file {str(path)!r} is not a readable CIFAR pickle: {exc}; re-download it"
        raise CorruptImageError(message) from exc
    if not isinstance(content, dict):
        raise CorruptImageError(f"CIFAR file {str(path)!r} holds a {type(content).__name__}, not a dict of arrays")
    return {(k.decode() if isinstance(k, bytes) else str(k)): v for k, v in content.items()}


def _batch_arrays(path: Path, batch: dict[str, Any], label_key: str) -> tuple[np.ndarray, np.ndarray]:
    """Images uint8 [N, 32, 32, 3] and int64 labels of one batch, checked."""
    if "data" not in batch or label_key not in batch:
        raise CorruptImageError(
            f"CIFAR file {str(path)!r} lacks 'data' or {label_key!r} (keys: {sorted(batch)}); "
            "is it a CIFAR-10 batch in a CIFAR-100 folder or the other way round?"
        )
    data = np.asarray(batch["data"])
    labels = np.asarray(batch[label_key], dtype=np.int64)
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3 * _SIDE * _SIDE:
        raise CorruptImageError(f"CIFAR file {str(path)!r}: data is {data.dtype} {data.shape}, not uint8 [N, 3072]")
    if len(labels) != len(data):
        raise CorruptImageError(f"CIFAR file {str(path)!r}: {len(data)} images but {len(labels)} labels")
    return data.reshape(-1, 3, _SIDE, _SIDE).transpose(0, 2, 3, 1).copy(), labels


def _class_names(meta: Path, key: str, count: int) -> list[str]:
    names = _read_pickle(meta).get(key)
    if names is None or len(names) != count:
        raise CorruptImageError(f"CIFAR meta file {str(meta)!r} has no {count} {key!r}; remove it or re-download it")
    return [n.decode() if isinstance(n, bytes) else str(n) for n in names]
