"""Converters: verified artefacts in, one of the layouts lifelong.data.sources reads out (no loader changes).

Each converter gets a `Conversion`: the verified artefact files, a scratch folder and the empty output folder,
plus the dataset's `[dataset.options]`. It writes only into the output folder; the installer renames that
folder into place once it is whole. Every path built from outside data (an option, an annotation file, a table
cell, an archive member's name) goes through `Conversion.inside_out` / `inside_unpacked` (the one check of
lifelong.data.fetch.containment) before anything is read from it or written to it. `VERSIONS` is recorded in
provenance.json, so a changed converter can be told from an old conversion.

- `idx`: IDX files (plain, gzipped, or inside an archive) copied under their IDX names. Option
  `rename = {"archive file name" = "train-images-idx3-ubyte.gz", ...}` for files named otherwise.
- `cifar`: the CIFAR "python version" pickles (CIFAR-10's data_batch_1..5 + test_batch, or CIFAR-100's
  train + test), wherever they sit in the archive.
- `folder`: an image folder. Option `root` (a folder inside the unpacked archives holding <class>/ folders or
  train/ val/ test/ folders) or `splits = {train = "path", test = "path"}` (one folder of class folders each).
- `clear`: CLEAR's released archives (train_image_only/, test/, ...) unpacked as they are; checked by
  opening the result as lifelong.data.sources.clear.ClearFolder.
- `pattern`, `table`, `voc`, `mat`, `hdf5`, `mat_table`, `text_rows`, `gnt`, `norb`, `coco`: the labels.csv
  layout, from paths, tables, annotations, arrays or record files (converters_tables, converter_table,
  converters_arrays, converters_records); `parts` combines several of
  them; every one takes `group = true` (rows of one image merged into its labels), `min_per_class` (drop
  smaller classes), `train_per_class` (the first n images of each class in path order train, the rest test) and
  `label_sets = {classes = "glob", matrix = "glob"}` (each class replaced by the columns set in its matrix row),
  `dedupe = true` (byte-identical images of one class kept once, the first in path order: duplicates).
- `scores`: images labelled by a score file's values cut into equal-count buckets, as dm_nevis's TID
  (converters_scores).
- `counts`: images labelled by count ranges, dm_nevis's buckets (converters_counts); `raw`: headerless raw
  images labelled from a per-image side file (converters_raw).
- `pose_bins`: multi-label pose-angle bins from per-image rotation matrices (BIWI); `rotated_idx`: IDX files
  with one split's images rotated as dm_nevis's MNIST-rot (converters_derived).
- `imagenet`: ILSVRC-2012 from its three files (converters_tables).
- `copy`: the artefacts themselves (unpacked when `unpack = true`; `strip_top = true` lifts the contents of
  an archive's single top folder): level files, the fact-learning authors' CSVs, side files.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lifelong.data.fetch.conversion import Conversion, Row, copy_file, data_files, write_labels_csv
from lifelong.data.fetch.converter_table import table_rows
from lifelong.data.fetch.converters_arrays import array_rows, mat_table_rows, text_rows
from lifelong.data.fetch.converters_counts import count_rows
from lifelong.data.fetch.converters_derived import convert_rotated_idx, pose_bin_rows
from lifelong.data.fetch.converters_raw import raw_rows
from lifelong.data.fetch.converters_records import coco_rows, gnt_rows, norb_rows
from lifelong.data.fetch.converters_scores import score_rows
from lifelong.data.fetch.converters_tables import convert_imagenet, pattern_rows, voc_rows
from lifelong.data.fetch.duplicates import drop_duplicate_images


def convert_idx(job: Conversion) -> None:
    from lifelong.data.sources.idx import IDX_FILE_NAME

    rename = job.options.get("rename", {})
    found = 0
    for path in data_files(job.unpacked()):
        name = rename.get(path.name, path.name)
        if IDX_FILE_NAME.match(name):
            field = f"option rename[{path.name!r}]" if path.name in rename else "archive member name"
            target = job.inside_out(name, field)
            if target.exists():
                raise job.fail(f"two IDX files named {name} in the artefacts")
            copy_file(path, target)
            found += 1
    if not found:
        raise job.fail("no IDX files (PREFIX-images-idx3-ubyte[.gz], PREFIX-labels-idx1-ubyte[.gz]) in the artefacts")


def convert_cifar(job: Conversion) -> None:
    from lifelong.data.sources.cifar import cifar_layout

    folders = [p for p in [job.unpacked(), *job.unpacked().rglob("*")] if p.is_dir() and cifar_layout(p)]
    if len(folders) != 1:
        where = ", ".join(str(p) for p in folders) or "none"
        raise job.fail(f"expected one folder of CIFAR pickles in the artefacts, found {len(folders)}: {where}")
    for path in folders[0].iterdir():
        if path.is_file():
            copy_file(path, job.inside_out(path.name, "archive member name"))


def _folder(job: Conversion, relative: str, field: str) -> Path:
    """A folder of the unpacked artefacts named by an option (checked to stay inside them)."""
    folder = job.inside_unpacked(relative, field)
    if not folder.is_dir():
        raise job.fail(f"{field}: folder {relative!r} is not in the unpacked artefacts")
    return folder


def convert_folder(job: Conversion) -> None:
    splits = job.options.get("splits")
    sources = (
        {split: _folder(job, rel, f"option splits.{split}") for split, rel in splits.items()}
        if splits
        else {"": _folder(job, job.options.get("root", "."), "option root")}
    )
    for split, folder in sources.items():
        target = job.inside_out(split, "option splits (a split name)") if split else job.out
        target.mkdir(parents=True, exist_ok=True)
        for child in sorted(folder.iterdir()):
            if not child.name.startswith("."):
                name = f"{split}/{child.name}" if split else child.name
                shutil.move(str(child), job.inside_out(name, "archive member name"))


def _move_contents(job: Conversion, source: Path, strip_top: bool) -> None:
    children = [c for c in sorted(source.iterdir()) if not c.name.startswith(".")]
    if strip_top and len(children) == 1 and children[0].is_dir():
        children = sorted(children[0].iterdir())
    for child in children:
        shutil.move(str(child), job.inside_out(child.name, "archive member name"))


def convert_clear(job: Conversion) -> None:
    from lifelong.data.sources.clear import ClearFolder

    _move_contents(job, job.unpacked(), strip_top=False)
    try:
        ClearFolder(job.out)
    except (FileNotFoundError, ValueError) as exc:
        raise job.fail(f"the unpacked archives are not CLEAR's layout: {exc}") from None


def convert_copy(job: Conversion) -> None:
    if not job.options.get("unpack"):
        for name, path in job.artefacts.items():
            copy_file(path, job.inside_out(name, "artefact file name"))
        return
    _move_contents(job, job.unpacked(), strip_top=bool(job.options.get("strip_top")))


# Converters that produce labels.csv rows (path, label or labels, split); `parts` combines them.
ROW_MAKERS: dict[str, Callable[[Conversion, dict[str, Any]], list[Row]]] = {
    "pattern": pattern_rows,
    "table": table_rows,
    "voc": voc_rows,
    "mat": array_rows,
    "hdf5": array_rows,
    "mat_table": mat_table_rows,
    "text_rows": text_rows,
    "gnt": gnt_rows,
    "norb": norb_rows,
    "coco": coco_rows,
    "scores": score_rows,
    "pose_bins": pose_bin_rows,
    "counts": count_rows,
    "raw": raw_rows,
}


def finish(job: Conversion, rows: list[Row], options: dict[str, Any]) -> None:
    """labels.csv from the rows: merged per image when `group = true`, classes under `min_per_class` dropped."""
    if options.get("group"):
        merged: dict[str, tuple[set[str], str | None]] = {}
        for path, label, split in rows:
            labels, seen = merged.setdefault(path, (set(), split))
            if seen != split:
                raise job.fail(f"{path} is listed in two splits: {seen} and {split}")
            labels.update(label if isinstance(label, list) else [label])
        rows = [(path, sorted(labels), split) for path, (labels, split) in merged.items()]
    if options.get("dedupe"):
        rows = drop_duplicate_images(job, rows)
    if options.get("label_sets"):
        rows = expand_label_sets(job, rows, options["label_sets"])
    if options.get("train_per_class"):
        rows = first_per_class_train(job, rows, int(options["train_per_class"]))
    if options.get("min_per_class"):
        counts = Counter(label for _, label, _ in rows if isinstance(label, str))
        rows = [r for r in rows if not isinstance(r[1], str) or counts[r[1]] >= int(options["min_per_class"])]
    if not rows:
        raise job.fail("the conversion found no image")
    write_labels_csv(job, rows)


def expand_label_sets(job: Conversion, rows: list[Row], spec: dict[str, Any]) -> list[Row]:
    """Each row's class replaced by the set of labels its class has (AwA2's attributes): `classes` lists
    "<id> <name>" (1-based ids), `matrix` one row of 0/1 per class id; labels are the 0-based columns set to 1."""
    (classes,), (matrix,) = job.find(spec["classes"])[:1], job.find(spec["matrix"])[:1]
    ids = {line.split()[1]: int(line.split()[0]) for line in classes.read_text().splitlines() if line.strip()}
    table = [line.split() for line in matrix.read_text().splitlines() if line.strip()]
    out = []
    for path, label, split in rows:
        if not isinstance(label, str) or label not in ids or ids[label] > len(table):
            raise job.fail(f"label_sets: class {label!r} is not in {classes.name} (or has no row in {matrix.name})")
        row = table[ids[label] - 1]
        out.append((path, [str(j) for j, v in enumerate(row) if float(v) == 1.0], split))
    return out


def first_per_class_train(job: Conversion, rows: list[Row], n: int) -> list[Row]:
    """A split where the dataset's protocol is "n training images per class, the rest test" (Caltech-101's 30):
    the first n of each class in path order train, the others test (deterministic, unlike a random draw)."""
    if any(split for _, _, split in rows):
        raise job.fail("train_per_class: the rows already have a split")
    seen: Counter = Counter()
    out = []
    for path, label, _ in sorted(rows, key=lambda r: r[0]):
        key = label if isinstance(label, str) else ";".join(label)
        seen[key] += 1
        out.append((path, label, "train" if seen[key] <= n else "test"))
    return out


def rows_converter(make: Callable[[Conversion, dict[str, Any]], list[Row]]) -> Callable[[Conversion], None]:
    return lambda job: finish(job, make(job, job.options), job.options)


def convert_parts(job: Conversion) -> None:
    """Several row makers over the same artefacts (e.g. training labels from paths, test labels from a table)."""
    rows = []
    for part in job.options["parts"]:
        kind = part.get("converter")
        if kind not in ROW_MAKERS:
            raise job.fail(f"parts: converter {kind!r} must be one of {', '.join(sorted(ROW_MAKERS))}")
        rows += ROW_MAKERS[kind](job, {k: v for k, v in part.items() if k != "converter"})
    finish(job, rows, job.options)


CONVERTERS: dict[str, Callable[[Conversion], None]] = {
    "idx": convert_idx,
    "cifar": convert_cifar,
    "folder": convert_folder,
    "clear": convert_clear,
    "copy": convert_copy,
    "imagenet": convert_imagenet,
    "parts": convert_parts,
    "rotated_idx": convert_rotated_idx,
} | {name: rows_converter(make) for name, make in ROW_MAKERS.items()}
VERSIONS = dict.fromkeys(CONVERTERS, 1)
# What the installer checks after a converter ran: the source kind lifelong.data.sources detects in the output.
DETECTED = {"idx": "idx:", "cifar": "cifar:", "folder": "folder:", "imagenet": "folder:", "rotated_idx": "idx:"}
DETECTED |= dict.fromkeys((*ROW_MAKERS, "parts"), "csv:")
# Converters that read their archives where they are (no unpacked copy on disk): the free-disk check counts one
# copy of the data for them, two (unpacked + converted) for the others.
READS_IN_PLACE = frozenset({"imagenet"})
