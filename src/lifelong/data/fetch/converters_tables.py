"""Converters that list images already in the artefacts: by path patterns, VOC annotations, ImageNet's tars.

Images move from the unpacked artefacts into `out/images/<path inside the artefacts>`; the rows (path,
label or labels, split) become out/labels.csv (lifelong.data.fetch.converters.finish). Tables are
lifelong.data.fetch.converter_table, arrays lifelong.data.fetch.converters_arrays.

- `pattern`: `files` is a regular expression matched against each image's path inside the unpacked artefacts
  (POSIX, whole path); its group `label` names the class, an optional group `split` the split. `labels` maps
  captured values to class names, `splits` captured values to train / val / test, `exclude` drops paths;
  `grid = [rows, columns]` cuts each image into that many crops (Brodatz's plates).
- `voc`: PASCAL VOC folders (`root`, a glob for the folder holding Annotations/ and JPEGImages/); each image's
  labels are its objects' names (`exclude_difficult`); `splits = {train = "ImageSets/Main/train.txt", ...}`.
- `imagenet`: ILSVRC-2012's training tar (per-class tars), validation tar and devkit, streamed into the folder
  layout train/<wnid>/, val/<wnid>/ (the validation labels from the devkit's ground truth and meta.mat).
"""

from __future__ import annotations

import io
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from lifelong.data.fetch.conversion import Conversion, Row, data_files
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


def grid_crops(job: Conversion, image: Path, base: Path, grid: list[int]) -> list[str]:
    """Cut an image into a rows x columns grid of equal crops (PNG files under out/images/), as some datasets are
    used (Brodatz's plates into 9 textures)."""
    from PIL import Image

    rows, columns = grid
    stem = f"{IMAGES}/{image.relative_to(base).with_suffix('').as_posix()}"
    with Image.open(image) as source:
        source.load()
        height, width = source.height // rows, source.width // columns
        paths = []
        for r in range(rows):
            for c in range(columns):
                relative = f"{stem}_{r}_{c}.png"
                (job.out / relative).parent.mkdir(parents=True, exist_ok=True)
                source.crop((c * width, r * height, (c + 1) * width, (r + 1) * height)).save(job.out / relative)
                paths.append(relative)
    return paths


def pattern_rows(job: Conversion, options: dict[str, Any]) -> list[Row]:
    pattern = re.compile(options["files"])
    exclude = re.compile(options["exclude"]) if options.get("exclude") else None
    labels, splits = options.get("labels", {}), options.get("splits", {})
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
        for path in grid_crops(job, image, base, options["grid"]) if options.get("grid") else [place(job, image, base)]:
            rows.append((path, labels.get(label, label), split))
    if not rows:
        raise job.fail(f"no image path in the artefacts matches files = {pattern.pattern!r}")
    return rows


def voc_rows(job: Conversion, options: dict[str, Any]) -> list[Row]:
    base = job.unpacked()
    pattern = options.get("root", "**")
    roots = sorted({p.parent.parent for p in base.glob(f"{pattern}/Annotations/*.xml")})
    if not roots:
        raise job.fail(f"no VOC folder (Annotations/*.xml) matches root = {pattern!r} in the artefacts")
    rows = []
    for root in roots:
        ids_split = {}
        for split, listing in options.get("splits", {}).items():
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
                    if not (options.get("exclude_difficult") and (o.findtext("difficult") or "0").strip() == "1")
                }
                - {""}
            )
            image = root / "JPEGImages" / (tree.findtext("filename") or f"{xml.stem}.jpg").strip()
            if not image.is_file():
                raise job.fail(f"{xml.name}: image {image.name} is not in {root / 'JPEGImages'}")
            rows.append((place(job, image, base), names, ids_split.get(xml.stem)))
    return rows


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
