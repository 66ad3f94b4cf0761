"""Converters that write the `labels.csv` layout: labels from file paths, from label tables, VOC XML or .mat arrays.

Images move from the unpacked artefacts into `out/images/<path inside the artefacts>` (or are written there
as PNG for `.mat` arrays); `out/labels.csv` lists path, label (or `;`-separated labels) and the split.

- `pattern`: `files` is a regular expression matched against each image's path inside the unpacked artefacts
  (POSIX, whole path); its group `label` names the class, an optional group `split` the split. `labels` maps
  captured values to class names, `splits` captured values to train / val / test, `exclude` drops paths.
- `table`: label files (`table`, a glob or a list; `table_splits = {glob = split}` for one file per split) with
  `delimiter` ("," by default, "whitespace" for runs of blanks), `header` (true), `skip_rows`; columns
  (`path`, `label`, `split`, or `labels` with `labels_separator`, or `label_columns` for 0/1 columns) by name, or
  by 0-based index when `header = false`; `comment` drops lines starting with it. `path_template` ("{}")
  builds each image's path, relative to
  `path_root` (the table's folder by default; "/" for the root of the unpacked artefacts, or a folder there).
- `voc`: PASCAL VOC folders (`root`, a glob for the folder holding Annotations/ and JPEGImages/); each image's
  labels are its objects' names (`exclude_difficult`); `splits = {train = "ImageSets/Main/train.txt", ...}`.
- `imagenet`: ILSVRC-2012's training tar (per-class tars), validation tar and devkit, streamed into the folder
  layout train/<wnid>/, val/<wnid>/ (the validation labels from the devkit's ground truth and meta.mat).
- `mat`: MATLAB (v5) arrays: `files = {train = "train*.mat", ...}`, keys `images` and `labels`, `axes` the
  order of the image array's axes with N for items (e.g. "HWCN" for SVHN, "NHW" for greyscale).
"""

from __future__ import annotations

import csv
import fnmatch
import io
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.data.fetch.conversion import Conversion, data_files, write_labels_csv
from lifelong.data.images import is_image_file

IMAGES = "images"
SPLIT_WORDS = {"train": "train", "training": "train", "trn": "train", "val": "val", "valid": "val"}
SPLIT_WORDS |= {"validation": "val", "test": "test", "testing": "test", "tst": "test"}


def split_name(job: Conversion, value: str, mapping: dict[str, str]) -> str:
    """A captured split value as train / val / test (the `splits` mapping first, then the usual words)."""
    if value in mapping:
        return mapping[value]
    if value.lower() in SPLIT_WORDS:
        return SPLIT_WORDS[value.lower()]
    raise job.fail(f"split {value!r} is neither train, val nor test; map it with splits = {{{value} = ...}}")


def place(job: Conversion, image: Path, base: Path) -> str:
    """Move an image of the unpacked artefacts into out/images/, keeping its path; returns it relative to out."""
    relative = f"{IMAGES}/{image.relative_to(base).as_posix()}"
    target = job.out / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(image), target)
    return relative


def convert_pattern(job: Conversion) -> None:
    pattern = re.compile(job.options["files"])
    exclude = re.compile(job.options["exclude"]) if job.options.get("exclude") else None
    labels, splits = job.options.get("labels", {}), job.options.get("splits", {})
    base = job.unpacked()
    rows = []
    for image in data_files(base):
        relative = image.relative_to(base).as_posix()
        match = pattern.fullmatch(relative)
        if not match or not is_image_file(image) or (exclude and exclude.search(relative)):
            continue
        label = match.group("label")
        split = match.groupdict().get("split")
        split = split_name(job, split, splits) if split is not None else None
        rows.append((place(job, image, base), labels.get(label, label), split))
    if not rows:
        raise job.fail(f"no image path in the artefacts matches files = {pattern.pattern!r}")
    write_labels_csv(job.out, rows)


def _read_rows(job: Conversion, table: Path) -> tuple[list[str] | None, list[list[str]]]:
    delimiter = job.options.get("delimiter", ",")
    text = table.read_text(encoding=job.options.get("encoding", "utf-8"), errors="replace")
    lines = text.splitlines()[int(job.options.get("skip_rows", 0)) :]
    if job.options.get("comment"):
        lines = [line for line in lines if not line.lstrip().startswith(job.options["comment"])]
    if delimiter == "whitespace":
        rows = [line.split() for line in lines if line.strip()]
    else:
        rows = [row for row in csv.reader(lines, delimiter=delimiter) if any(cell.strip() for cell in row)]
    if job.options.get("header", True):
        return ([c.strip() for c in rows[0]] if rows else []), rows[1:]
    return None, rows


def _column(job: Conversion, header: list[str] | None, key: str, table: Path) -> int | None:
    wanted = job.options.get(key, key if key == "path" else None)
    if wanted is None:
        return None
    if header is None:
        return int(wanted)
    if wanted not in header:
        raise job.fail(f"{table.name} has no column {wanted!r} (columns: {header})")
    return header.index(wanted)


def _tables(job: Conversion, base: Path) -> list[tuple[Path, str | None]]:
    """The label files with the split each one stands for (None: the rows say, or no split)."""
    by_split = job.options.get("table_splits", {})
    globs = job.options.get("table", list(by_split))
    globs = [globs] if isinstance(globs, str) else list(globs)
    found = []
    for path in data_files(base):
        relative = path.relative_to(base).as_posix()
        if any(fnmatch.fnmatch(relative, g) for g in globs):
            split = next((s for g, s in by_split.items() if fnmatch.fnmatch(relative, g)), None)
            found.append((path, split))
    if not found:
        raise job.fail(f"no label file in the artefacts matches {globs}")
    return found


def _label(job: Conversion, header: list[str] | None, row: list[str], at: dict[str, int | None]) -> str | list[str]:
    """One row's label (multi-class) or labels (multi-label), mapped through `label_map`."""
    label_map = job.options.get("label_map", {})
    one_hot = job.options.get("label_columns", [])
    if one_hot:
        columns = [(header.index(c), c) if header else (int(c), str(c)) for c in one_hot]
        return [name for i, name in columns if row[i].strip() in ("1", "1.0")]
    if at["labels"] is not None:
        cells = row[at["labels"]].split(job.options.get("labels_separator"))
        return [label_map.get(v.strip(), v.strip()) for v in cells if v.strip()]
    if at["label"] is not None:
        return label_map.get(row[at["label"]].strip(), row[at["label"]].strip())
    raise job.fail("a table needs label, labels or label_columns")


def _image_folder(job: Conversion, base: Path, table: Path) -> Path:
    root = job.options.get("path_root")
    if root is None:
        return table.parent
    return base if root == "/" else base / root.lstrip("/")


def convert_table(job: Conversion) -> None:
    base = job.unpacked().resolve()
    template = job.options.get("path_template", "{}")
    rows, placed = [], {}
    for table, file_split in _tables(job, base):
        header, body = _read_rows(job, table)
        at = {k: _column(job, header, k, table) for k in ("path", "label", "labels", "split")}
        folder = _image_folder(job, base, table)
        for line, row in enumerate(body, start=2 if header else 1):
            cell = row[at["path"]].strip().strip('"')
            image = (folder / template.format(cell)).resolve()
            if base not in image.parents:
                raise job.fail(f"{table.name}:{line}: image path {cell!r} leaves the artefacts")
            if image not in placed:
                if not image.is_file():
                    if job.options.get("missing") == "skip":
                        continue
                    raise job.fail(f"{table.name}:{line}: image {template.format(cell)!r} is not in the artefacts")
                placed[image] = place(job, image, base)
            split = file_split
            if split is None and at["split"] is not None:
                split = split_name(job, row[at["split"]].strip(), job.options.get("split_values", {}))
            rows.append((placed[image], _label(job, header, row, at), split))
    write_labels_csv(job.out, rows)


def convert_voc(job: Conversion) -> None:
    base = job.unpacked()
    pattern = job.options.get("root", "**")
    roots = sorted({p.parent.parent for p in base.glob(f"{pattern}/Annotations/*.xml")})
    if not roots:
        raise job.fail(f"no VOC folder (Annotations/*.xml) matches root = {pattern!r} in the artefacts")
    rows = []
    for root in roots:
        ids_split = {}
        for split, listing in job.options.get("splits", {}).items():
            path = root / listing
            if path.is_file():
                ids_split |= {line.split()[0]: split for line in path.read_text().splitlines() if line.strip()}
        for xml in sorted((root / "Annotations").glob("*.xml")):
            if ids_split and xml.stem not in ids_split:
                continue
            tree = ET.parse(xml).getroot()
            names = sorted(
                {
                    (o.findtext("name") or "").strip()
                    for o in tree.iter("object")
                    if not (job.options.get("exclude_difficult") and (o.findtext("difficult") or "0").strip() == "1")
                }
                - {""}
            )
            image = root / "JPEGImages" / (tree.findtext("filename") or f"{xml.stem}.jpg").strip()
            if not image.is_file():
                raise job.fail(f"{xml.name}: image {image.name} is not in {root / 'JPEGImages'}")
            rows.append((place(job, image, base), names, ids_split.get(xml.stem)))
    write_labels_csv(job.out, rows)


def _mat_arrays(job: Conversion, path: Path) -> dict[str, Any]:
    from scipy.io import loadmat

    try:
        return loadmat(path)
    except NotImplementedError:
        raise job.fail(f"{path.name} is a MATLAB v7.3 (HDF5) file, which needs h5py; not supported yet") from None
    except (ValueError, OSError) as exc:
        raise job.fail(f"{path.name} is not a readable .mat file: {exc}") from None


def convert_mat(job: Conversion) -> None:
    from PIL import Image

    base = job.unpacked()
    axes = job.options.get("axes", "NHWC")
    label_map = job.options.get("label_map", {})
    rows = []
    for split, pattern in job.options["files"].items():
        files = sorted(p for p in base.rglob("*.mat") if fnmatch.fnmatch(p.relative_to(base).as_posix(), pattern))
        if not files:
            raise job.fail(f"no .mat file matches {pattern!r} (split {split})")
        for file in files:
            arrays = _mat_arrays(job, file)
            images = np.asarray(arrays[job.options["images"]])
            labels = np.asarray(arrays[job.options["labels"]]).reshape(-1)
            order = [axes.index(a) for a in "NHWC" if a in axes]
            images = np.transpose(images, order)
            if len(images) != len(labels):
                raise job.fail(f"{file.name}: {len(images)} images but {len(labels)} labels")
            folder = job.out / IMAGES / split / file.stem
            folder.mkdir(parents=True, exist_ok=True)
            for i, (image, label) in enumerate(zip(images, labels, strict=True)):
                pixels = image[..., 0] if image.ndim == 3 and image.shape[-1] == 1 else image
                Image.fromarray(np.ascontiguousarray(pixels).astype(np.uint8)).save(folder / f"{i:06d}.png")
                text = str(label.item() if hasattr(label, "item") else label)
                rows.append((f"{IMAGES}/{split}/{file.stem}/{i:06d}.png", label_map.get(text, text), split))
    write_labels_csv(job.out, rows)


def _imagenet_val_wnids(job: Conversion, devkit: Path) -> list[str]:
    """The wnid of each validation image, in file order, from the devkit (meta.mat ids -> wnids, ground truth)."""
    import tarfile

    from scipy.io import loadmat

    with tarfile.open(devkit) as tf:
        members = {Path(m.name).name: m for m in tf.getmembers() if m.isfile()}
        try:
            meta = tf.extractfile(members["meta.mat"])
            truth = tf.extractfile(members["ILSVRC2012_validation_ground_truth.txt"])
        except KeyError as exc:
            raise job.fail(f"{devkit.name} lacks data/{exc.args[0]}") from None
        synsets = loadmat(io.BytesIO(meta.read()), squeeze_me=True)["synsets"]  # type: ignore[union-attr]
        ids = truth.read().decode().split()  # type: ignore[union-attr]
    wnid = {int(s["ILSVRC2012_ID"]): str(s["WNID"]) for s in synsets}
    return [wnid[int(i)] for i in ids]


def _plain_name(job: Conversion, name: str) -> str:
    base = Path(name).name
    if not base or base in (".", "..") or base != name.lstrip("./").split("/")[-1]:
        raise job.fail(f"unexpected member {name!r}")
    return base


def convert_imagenet(job: Conversion) -> None:
    """ILSVRC-2012 streamed from its tars (no unpacked copy): train/<wnid>/*.JPEG from the per-class tars inside
    the training tar, val/<wnid>/*.JPEG from the flat validation tar and the devkit's ground truth."""
    import tarfile

    names = job.options.get("files", {})
    train = job.artefacts[names.get("train", "ILSVRC2012_img_train.tar")]
    val = job.artefacts[names.get("val", "ILSVRC2012_img_val.tar")]
    wnids = _imagenet_val_wnids(job, job.artefacts[names.get("devkit", "ILSVRC2012_devkit_t12.tar.gz")])
    with tarfile.open(train, "r|*") as outer:
        for member in outer:
            if not (member.isfile() and member.name.endswith(".tar")):
                continue
            wnid = Path(_plain_name(job, member.name)).stem
            folder = job.out / "train" / wnid
            folder.mkdir(parents=True, exist_ok=True)
            with tarfile.open(fileobj=outer.extractfile(member), mode="r|*") as inner:
                for image in inner:
                    if image.isfile():
                        (folder / _plain_name(job, image.name)).write_bytes(inner.extractfile(image).read())  # type: ignore[union-attr]
    with tarfile.open(val, "r|*") as tf:
        images = 0
        for member in tf:
            if member.isfile():
                name = _plain_name(job, member.name)
                number = int(re.search(r"(\d+)\.JPEG$", name, re.I).group(1))  # type: ignore[union-attr]
                if not 1 <= number <= len(wnids):
                    raise job.fail(f"{name}: no ground truth for validation image {number}")
                folder = job.out / "val" / wnids[number - 1]
                folder.mkdir(parents=True, exist_ok=True)
                (folder / name).write_bytes(tf.extractfile(member).read())  # type: ignore[union-attr]
                images += 1
    if images != len(wnids):
        raise job.fail(f"{val.name} holds {images} images, the devkit's ground truth {len(wnids)}")
