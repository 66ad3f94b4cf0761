"""Converters for datasets in their own record formats: CASIA's .gnt, NORB's binary matrices, COCO-style JSON.

- `gnt` (`gnt_rows`): CASIA-HWDB's .gnt files, records of [uint32 length][2-byte GB2312 label][uint16 width]
  [uint16 height][pixels]: `files = {split = "glob"}`; `invert = true` makes the ink bright on black (as the
  reference does); the label is the character (its GB2312 bytes in hex when they do not decode).
- `norb` (`norb_rows`): small NORB's binary matrices (gzipped: use `decompress = true`): `parts = [{split =
  "train", dat = "glob", cat = "glob", info = "glob"}]`; the first image of each stereo pair (`view = 0`), labelled
  by its category, written under instance<k>/ so the `smallnorb` split rule finds each item's instance.
- `coco` (`coco_rows`): COCO-style annotation files: `annotations = {split = "glob of .json"}`, images found by
  their `file_name` under `path_root` (a folder of the unpacked artefacts; `path_search = true` finds them by
  name); `mode = "image"` labels each image with its annotations' categories (one row per image; several
  categories make it multi-label unless `first = true`), `mode = "box"` crops every annotation's box at least
  `min_box` pixels wide and high into its own image; `label = "name"` (the category's name, default) or "id"
  (with `label_offset`, e.g. -1 for COCO's 1-based ids); `missing = "skip"` passes over annotated images the
  artefacts lack.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.data.fetch.conversion import IMAGES, Conversion, Row, save_png

NORB_TYPES = {0x1E3D4C51: np.float32, 0x1E3D4C53: np.float64, 0x1E3D4C54: np.int32, 0x1E3D4C55: np.uint8}


def gnt_records(job: Conversion, path: Path):
    """(label, pixels) of each record of a .gnt file."""
    data = path.read_bytes()
    at = 0
    while at < len(data):
        if at + 10 > len(data):
            raise job.fail(f"{path.name}: a record is cut short at byte {at}")
        length, tag, width, height = struct.unpack_from("<I2sHH", data, at)
        if length != width * height + 10 or at + length > len(data):
            raise job.fail(f"{path.name}: record at byte {at} says {length} bytes for {width}x{height} pixels")
        pixels = np.frombuffer(data, np.uint8, width * height, at + 10).reshape(height, width)
        try:
            label = tag.decode("gb2312")
        except UnicodeDecodeError:
            label = tag.hex()
        yield label, pixels
        at += length


def gnt_rows(job: Conversion, options: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    for split, pattern in options["files"].items():
        for file in sorted(job.find(pattern)):
            for i, (label, pixels) in enumerate(gnt_records(job, file)):
                pixels = 255 - pixels if options.get("invert", True) else pixels
                relative = save_png(job, pixels, f"{IMAGES}/{split}/{file.stem}/{i:06d}.png")
                rows.append((relative, label, None if split == "all" else split))
    return rows


def read_norb(job: Conversion, path: Path) -> np.ndarray:
    """A NORB binary matrix: int32 magic (element type), int32 rank, max(rank, 3) int32 dimensions, the data."""
    data = path.read_bytes()
    magic, rank = struct.unpack_from("<ii", data, 0)
    if magic not in NORB_TYPES or not 0 < rank < 8:
        raise job.fail(f"{path.name} is not a NORB binary matrix (magic {magic:#x}, rank {rank})")
    dims = struct.unpack_from(f"<{max(rank, 3)}i", data, 8)[:rank]
    offset = 8 + 4 * max(rank, 3)
    dtype = np.dtype(NORB_TYPES[magic]).newbyteorder("<")
    count = int(np.prod(dims))
    if len(data) - offset < count * dtype.itemsize:
        raise job.fail(f"{path.name}: {len(data) - offset} data bytes for a {dims} matrix")
    return np.frombuffer(data, dtype, count, offset).reshape(dims)


def norb_rows(job: Conversion, options: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    view = int(options.get("view", 0))
    for part in options["parts"]:
        split = part.get("split")
        (dat,), (cat,), (info,) = (job.find(part[k])[:1] for k in ("dat", "cat", "info"))
        images, categories, infos = read_norb(job, dat), read_norb(job, cat), read_norb(job, info)
        if not len(images) == len(categories) == len(infos):
            raise job.fail(f"{dat.name}: {len(images)} pairs, {len(categories)} categories, {len(infos)} infos")
        for i, (pair, category, about) in enumerate(zip(images, categories, infos, strict=True)):
            relative = f"{IMAGES}/{split or 'all'}/instance{int(about[0])}/{i:06d}.png"
            rows.append((save_png(job, pair[view], relative), str(int(category)), split))
    return rows


def _crops(job: Conversion, path: Path, marks: list[dict], names: dict, min_box: float, folder: str) -> list:
    """One PNG per annotated box at least `min_box` wide and high: (relative path, category name)."""
    from PIL import Image

    out = []
    with Image.open(path) as image:
        image = image.convert("RGB")
        for mark in marks:
            x, y, w, h = mark["bbox"]
            if w < min_box or h < min_box:
                continue
            box = (int(x), int(y), int(min(image.width, x + w)), int(min(image.height, y + h)))
            relative = f"{folder}/{path.stem}_{mark['id']}.png"
            target = job.inside_out(relative, "image path (its annotation id)")
            target.parent.mkdir(parents=True, exist_ok=True)
            image.crop(box).save(target)
            out.append((relative, names[mark["category_id"]]))
    return out


def coco_rows(job: Conversion, options: dict[str, Any]) -> list[Row]:
    from lifelong.data.fetch.converter_table import by_name
    from lifelong.data.fetch.converters_tables import place

    base = job.unpacked().resolve()
    root = job.inside_unpacked(options.get("path_root", "."), "option path_root", base)
    by_id = options.get("label", "name") != "name"
    offset = int(options.get("label_offset", 0))
    placed: dict[Path, str] = {}
    rows: list[Row] = []
    for split, pattern in options["annotations"].items():
        split_name = None if split == "all" else split
        for file in job.find(pattern):
            content = json.loads(file.read_text())
            names = {c["id"]: str(int(c["id"]) + offset if by_id else c["name"]) for c in content["categories"]}
            images = {im["id"]: im["file_name"] for im in content["images"]}
            per_image: dict[Any, list[dict]] = {}
            for mark in content["annotations"]:
                per_image.setdefault(mark["image_id"], []).append(mark)
            for image_id, marks in per_image.items():
                listed = job.inside_unpacked(images[image_id], f"file_name in {file.name}", root)
                path = by_name(job, base).get(listed.name) if options.get("path_search") else listed
                if path is None or (path not in placed and not path.is_file()):
                    if options.get("missing") == "skip":
                        continue
                    raise job.fail(f"{file.name}: image {images[image_id]!r} is not in the artefacts")
                if options.get("mode", "image") == "box":
                    min_box = float(options.get("min_box", 0))
                    folder = f"{IMAGES}/{split}"
                    rows += [(r, label, split_name) for r, label in _crops(job, path, marks, names, min_box, folder)]
                    continue
                labels = sorted({names[mark["category_id"]] for mark in marks})
                label: str | list[str] = labels[0] if options.get("first") or len(labels) == 1 else labels
                if path not in placed:
                    placed[path] = place(job, path, base)
                rows.append((placed[path], label, split_name))
    return rows
