"""A CSV manifest: one row per image with its path, its label(s) and optionally its official split."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from lifelong.core.tasks import TaskKind
from lifelong.data.images import decode_files
from lifelong.data.labeled import OFFICIAL_SPLIT_NAMES, LabeledImages


def load_csv_manifest(
    path: str | Path, *, skip_corrupt: bool = False, class_names: Sequence[str] | None = None
) -> LabeledImages:
    """Rows of `path,label` (multi-class) or `path,labels` with ';'-separated names (multi-label); optional `split`.

    Relative paths resolve against the CSV's folder. Classes are `class_names` when given (any other
    label is an error naming its row), else the label names seen, sorted (numerically if all integers).
    An empty `labels` cell is an image with no positive class.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"CSV manifest not found: {str(path)!r}")
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        columns = [c.strip() for c in reader.fieldnames or []]
        rows = [
            ({k.strip(): (v or "").strip() for k, v in row.items() if k is not None}, reader.line_num) for row in reader
        ]
    multi_label = _check_columns(path, columns)
    label_column = "labels" if multi_label else "label"
    where = [f"{path}:{line}" for _, line in rows]
    names_per_row: list[list[str]] = []
    for (row, _), at in zip(rows, where, strict=True):
        if not row.get("path"):
            raise ValueError(f"{at}: empty path; every row needs an image path")
        cell = row.get(label_column, "")
        names = [n.strip() for n in cell.split(";") if n.strip()] if multi_label else [cell]
        if not multi_label and not cell:
            raise ValueError(f"{at}: empty label for {row['path']!r}; every row of a multi-class manifest needs one")
        names_per_row.append(names)
    classes = _class_names(names_per_row, class_names)
    index = {name: k for k, name in enumerate(classes)}
    for names, at in zip(names_per_row, where, strict=True):
        unknown = [n for n in names if n not in index]
        if unknown:
            raise ValueError(f"{at}: label {unknown[0]!r} is not one of the {len(classes)} class_names {list(classes)}")
    if multi_label:
        labels = np.zeros((len(rows), len(classes)), dtype=np.uint8)
        for i, names in enumerate(names_per_row):
            labels[i, [index[n] for n in names]] = 1
    else:
        labels = np.asarray([index[names[0]] for names in names_per_row], dtype=np.int64)
    split = None
    if "split" in columns:
        split = np.asarray([row["split"] for row, _ in rows])
        bad = ~np.isin(split, OFFICIAL_SPLIT_NAMES)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{where[i]}: split {str(split[i])!r} is not one of {OFFICIAL_SPLIT_NAMES}")
    files = [_resolve(path.parent, row["path"], at) for (row, _), at in zip(rows, where, strict=True)]
    decoded, kept, skipped = decode_files(files, skip_corrupt=skip_corrupt)
    return LabeledImages(
        images=decoded,
        labels=labels[kept],
        ids=[str(files[i]) for i in kept],
        class_names=classes,
        kind=TaskKind.MULTI_LABEL if multi_label else TaskKind.MULTI_CLASS,
        official_split=None if split is None else split[kept],
        notes={"source": f"csv:{path}", "corrupt_skipped": len(skipped), "corrupt_files": skipped},
    )


def _check_columns(path: Path, columns: list[str]) -> bool:
    """True for a multi-label manifest; errors name the columns found."""
    if "path" not in columns:
        raise ValueError(f"CSV manifest {str(path)!r} has no 'path' column (columns: {columns})")
    if ("label" in columns) == ("labels" in columns):
        raise ValueError(
            f"CSV manifest {str(path)!r} needs exactly one of 'label' (multi-class) or 'labels' "
            f"(multi-label, ';'-separated) columns; found {columns}"
        )
    return "labels" in columns


def _class_names(names_per_row: list[list[str]], given: Sequence[str] | None) -> tuple[str, ...]:
    if given is not None:
        return tuple(str(n) for n in given)
    seen = {n for names in names_per_row for n in names}
    if not seen:
        raise ValueError("the manifest names no class at all; give class_names or add labels")
    if all(n.lstrip("-").isdigit() for n in seen):
        return tuple(sorted(seen, key=int))
    return tuple(sorted(seen))


def _resolve(folder: Path, name: str, at: str) -> Path:
    file = Path(name) if Path(name).is_absolute() else folder / name
    if not file.is_file():
        raise FileNotFoundError(f"{at}: image file not found: {str(file)!r}")
    return file
