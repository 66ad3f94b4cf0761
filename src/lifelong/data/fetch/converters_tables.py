"""Converters that list images already in the artefacts: by path patterns, VOC annotations, ImageNet's tars.

Images move from the unpacked artefacts into `out/images/<path inside the artefacts>`; the rows (path,
label or labels, split) become out/labels.csv (lifelong.data.fetch.converters.finish). Tables are
lifelong.data.fetch.converter_table, arrays lifelong.data.fetch.converters_arrays.

- `pattern`: `files` is a regular expression matched against each image's path inside the unpacked artefacts
  (POSIX, whole path); its group `label` names the class, an optional group `split` the split. `labels` maps
  captured values to class names, `splits` captured values to train / val / test, `exclude` drops paths;
  `grid = [rows, columns]` cuts each image into that many crops (Brodatz's plates).
- `voc`: PASCAL VOC folders (`root`, a glob for the folder holding Annotations/ and JPEGImages/); each image's
  labels are its objects' names (`exclude_difficult`); `splits = {train = "ImageSets/Main/train.txt", ...}` or
  `ids_from = "ImageSets/Action/*_trainval.txt"` choose the images; `mode = "actions"` makes one example per
  person box instead, cropped, labelled by the actions flagged 1 (VOC 2012's action task).
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

from lifelong.data.fetch.containment import plain_name
from lifelong.data.fetch.conversion import IMAGES, Conversion, Row, data_files
from lifelong.data.images import is_image_file

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
    try:
        member = image.relative_to(base).as_posix()
    except ValueError:
        raise job.fail(f"image {image} is not in the unpacked artefacts") from None
    source = job.inside_unpacked(member, "image path", base)
    relative = f"{IMAGES}/{member}"
    target = job.inside_out(relative, "image path")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(source), target)
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
                target = job.inside_out(relative, "image path")
                target.parent.mkdir(parents=True, exist_ok=True)
                source.crop((c * width, r * height, (c + 1) * width, (r + 1) * height)).save(target)
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


def _voc_ids(job: Conversion, root: Path, options: dict[str, Any]) -> tuple[dict[str, str | None], bool]:
    """Image id -> split from `splits` lists, or ids from `ids_from` lists (no split); and whether ids are chosen."""
    chosen: dict[str, str | None] = {}
    for split, listing in options.get("splits", {}).items():
        path = job.inside_unpacked(listing, f"option splits.{split}", root)
        if path.is_file():
            chosen |= {line.split()[0]: split for line in path.read_text().splitlines() if line.strip()}
    if options.get("ids_from"):  # a glob: checked like a path (no absolute path, no '..'), then globbed under root
        job.inside_unpacked(options["ids_from"], "option ids_from", root)
    for listing in sorted(root.glob(options["ids_from"])) if options.get("ids_from") else []:
        chosen |= {line.split()[0]: None for line in listing.read_text().splitlines() if line.strip()}
    return chosen, bool(options.get("splits") or options.get("ids_from"))


def _voc_box_rows(job: Conversion, image: Path, tree: ET.Element, split: str | None) -> list[Row]:
    """One cropped example per <object> with <actions>: labelled by the actions flagged 1 (VOC's action task)."""
    from PIL import Image

    rows: list[Row] = []
    with Image.open(image) as source:
        source = source.convert("RGB")
        for k, obj in enumerate(tree.iter("object")):
            actions = obj.find("actions")
            box = obj.find("bndbox")
            if actions is None or box is None:
                continue
            labels = sorted(a.tag for a in actions if (a.text or "").strip() in ("1", "1.0"))
            x0, y0, x1, y1 = (int(float(box.findtext(t) or 0)) for t in ("xmin", "ymin", "xmax", "ymax"))
            relative = f"{IMAGES}/{image.stem}_{k}.png"
            target = job.inside_out(relative, "image path")
            target.parent.mkdir(parents=True, exist_ok=True)
            source.crop((x0, y0, x1, y1)).save(target)
            rows.append((relative, labels, split))
    return rows


def voc_rows(job: Conversion, options: dict[str, Any]) -> list[Row]:
    base = job.unpacked()
    pattern = options.get("root", "**")
    job.inside_unpacked(pattern, "option root")  # a glob: checked like a path, then globbed under the artefacts
    roots = sorted({p.parent.parent for p in base.glob(f"{pattern}/Annotations/*.xml")})
    if not roots:
        raise job.fail(f"no VOC folder (Annotations/*.xml) matches root = {pattern!r} in the artefacts")
    rows: list[Row] = []
    for root in roots:
        chosen, restricted = _voc_ids(job, root, options)
        for xml in sorted((root / "Annotations").glob("*.xml")):
            if restricted and xml.stem not in chosen:
                continue
            tree = ET.parse(xml).getroot()
            name = (tree.findtext("filename") or f"{xml.stem}.jpg").strip()
            field = f"VOC <filename> in {xml.relative_to(base).as_posix()}"
            image = job.inside_unpacked(name, field, root / "JPEGImages")
            if not image.is_file():
                raise job.fail(f"{xml.name}: image {image.name} is not in {root / 'JPEGImages'}")
            if options.get("mode") == "actions":
                rows += _voc_box_rows(job, image, tree, chosen.get(xml.stem))
                continue
            names = {
                (o.findtext("name") or "").strip()
                for o in tree.iter("object")
                if not (options.get("exclude_difficult") and (o.findtext("difficult") or "0").strip() == "1")
            }
            rows.append((place(job, image, base), sorted(names - {""}), chosen.get(xml.stem)))
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


def _plain_name(job: Conversion, name: str, archive: str) -> str:
    """A member's name that must be a plain file name (ImageNet's tars are flat): no folder, no '..'."""
    return plain_name(name, dataset=job.dataset, field=f"member name in {archive}")


def _stream_member(job: Conversion, archive: Any, member: Any, target: Path, item: str) -> None:
    """A tar member's bytes streamed into a fresh file, charged to the conversion's unpack budget (never read whole)."""
    from lifelong.data.fetch.members import chunks, write_fresh

    target.parent.mkdir(parents=True, exist_ok=True)
    assert job.budget is not None  # Conversion always has one
    job.budget.check_declared(member.size, item)
    write_fresh(target, chunks(archive.extractfile(member)), job.budget, item)


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
            wnid = Path(_plain_name(job, member.name, train.name)).stem
            with tarfile.open(fileobj=outer.extractfile(member), mode="r|*") as inner:
                for image in inner:
                    if image.isfile():
                        name = _plain_name(job, image.name, f"{member.name} in {train.name}")
                        target = job.inside_out(f"train/{wnid}/{name}", f"member name in {member.name}")
                        _stream_member(job, inner, image, target, f"{train.name} member {member.name}:{image.name}")
    with tarfile.open(val, "r|*") as tf:
        images = 0
        for member in tf:
            if member.isfile():
                name = _plain_name(job, member.name, val.name)
                number = int(re.search(r"(\d+)\.JPEG$", name, re.I).group(1))  # type: ignore[union-attr]
                if not 1 <= number <= len(wnids):
                    raise job.fail(f"{name}: no ground truth for validation image {number}")
                target = job.inside_out(f"val/{wnids[number - 1]}/{name}", f"{val.name} member under its devkit wnid")
                _stream_member(job, tf, member, target, f"{val.name} member {member.name}")
                images += 1
    if images != len(wnids):
        raise job.fail(f"{val.name} holds {images} images, the devkit's ground truth {len(wnids)}")
