"""The `raw` converter: headerless raw images (Magellan's .sdt), labelled from their path or a per-image side file.

Options:
- `files`: a regex over each raw file's path inside the unpacked artefacts (whole path); its named groups fill
  the side-file template, group `label` (if any) is the class, group `split` the split (`splits` maps values).
- `shape` ([height, width] or [height, width, channels]) and `dtype` (numpy's name, default "uint8"; e.g. ">u2"
  for big-endian 16 bits) of every file, which must hold exactly that many bytes; values other than uint8
  need `range = [low, high]`, mapped onto 0-255.
- `flag = {file = "template", first_field = ["1"]}`: the label is "1" when any line of the image's side file
  starts with one of those fields (the line's text before its first space), else "0" (Magellan's .lxyr ground
  truths: "1" = some volcano of confidence 1, as dm_nevis labels them).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

import numpy as np

from lifelong.data.fetch.conversion import IMAGES, Conversion, Row, data_files, save_png
from lifelong.data.fetch.converters_counts import side_file
from lifelong.data.fetch.converters_tables import split_name


def read_raw(job: Conversion, data: bytes, shape: list[int], dtype: str, where: str) -> np.ndarray:
    """A headerless image of `shape` and `dtype`; a file of another size is an error naming it."""
    kind = np.dtype(dtype)
    need = int(np.prod(shape)) * kind.itemsize
    if len(data) != need:
        raise job.fail(f"{where} holds {len(data)} bytes; a raw {dtype} image of shape {list(shape)} has {need}")
    return np.frombuffer(data, kind).reshape(shape)


def flagged(data: bytes, fields: list[str]) -> bool:
    """Whether any line's first field (its text before the first space) is one of `fields`."""
    return any(line.split(" ")[0] in fields for line in data.decode("utf-8", errors="replace").splitlines())


def raw_rows(job: Conversion, options: dict[str, Any]) -> list[Row]:
    base = job.unpacked()
    pattern = re.compile(options["files"])
    shape, dtype = list(options["shape"]), options.get("dtype", "uint8")
    try:
        np.dtype(dtype)
    except TypeError:
        raise job.fail(f"dtype {dtype!r} is not a numpy type name") from None
    if np.dtype(dtype) != np.uint8 and options.get("range") is None:
        raise job.fail(f"raw images of dtype {dtype} need range = [low, high] to map onto 0-255")
    flag = options.get("flag")
    rows: list[Row] = []
    for file in data_files(base):
        relative = file.relative_to(base).as_posix()
        match = pattern.fullmatch(relative)
        if not match:
            continue
        groups = {k: v for k, v in match.groupdict().items() if v is not None}
        if flag:
            side = side_file(job, base, flag["file"], groups, relative)
            fields = flag.get("first_field", ["1"])
            fields = [fields] if isinstance(fields, str) else [str(f) for f in fields]
            label = "1" if flagged(side.read_bytes(), fields) else "0"
        elif "label" in groups:
            label = groups["label"]
        else:
            raise job.fail("raw needs a flag side file or a group 'label' in the files regex")
        pixels = read_raw(job, file.read_bytes(), shape, dtype, relative)
        if options.get("range") is not None:
            low, high = options["range"]
            pixels = np.clip(np.round((pixels.astype(np.float64) - low) / (high - low) * 255), 0, 255)
        split = split_name(job, groups["split"], options.get("splits", {})) if groups.get("split") else None
        rows.append((save_png(job, pixels, f"{IMAGES}/{PurePosixPath(relative).with_suffix('.png')}"), label, split))
    if not rows:
        raise job.fail(f"no file in the artefacts matches files = {pattern.pattern!r}")
    return rows
