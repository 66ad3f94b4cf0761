"""The `counts` converter: counting datasets (Mall, TRANCOS, ShanghaiTech) as classes of count ranges.

Each image's count (people, vehicles) is clipped at `max_size` - 1 and put into one of `classes` buckets of
contiguous counts holding about the same number of images, by dm_nevis's rule (handlers/mall.py, trancos.py,
shanghai_tech.py): a histogram of the clipped counts of every matched image, its cumulative sum, bucket k's last
count the last count whose cumulative sum is below k * total / classes (k = 1 .. classes - 1), then counts in
ascending order move to the next bucket (one step at most per count) once past the current bucket's end. The label
is the bucket number; out/count_classes.tsv lists each bucket's counts, images and dm_nevis's '%d-%d' class name.

Options:
- `files`: a regex over each image's path inside the unpacked artefacts (whole path); its named groups fill the
  side-file templates below, group `number` is the image's 1-based number, group `split` its split (`splits` maps
  the captured values to train / val / test). Templates name paths inside the unpacked artefacts.
- `count`: where an image's count comes from, one of
  `{mat = "glob", key = "count"}` one MATLAB array, item `number` (Mall's mall_gt.mat);
  `{lines = "template"}` the number of lines of a side file (TRANCOS's image-*.txt, one vehicle per line);
  `{mat_rows = "template", key = "image_info"}` the rows of the first array inside a MATLAB variable, cells and
  structs opened at their first element (ShanghaiTech's GT_IMG_<n>.mat head positions).
- `max_size`, `classes`: as in dm_nevis (Mall 100, TRANCOS 200, ShanghaiTech 5000; 10 classes each).
- the split, besides group `split`: `split_lists = {split = "glob"}` (files listing image file names, one a
  line) or `number_ranges = {split = [first, last]}` (on group `number`). Images in no list or range count
  towards the buckets (as in dm_nevis) but are left out of labels.csv.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.data.fetch.conversion import Conversion, Row, data_files
from lifelong.data.fetch.converters_arrays import read_arrays
from lifelong.data.fetch.converters_tables import place, split_name
from lifelong.data.images import is_image_file

COUNT_CLASSES = "count_classes.tsv"  # written beside labels.csv: what each numbered class means


def count_buckets(counts: Sequence[int], max_size: int, classes: int) -> list[int]:
    """The bucket (class) of every count 0 .. max_size - 1 under dm_nevis's rule; ValueError when the counts
    cannot fill `classes` buckets (a fifth of the images at count 0 for 5 classes, too few distinct counts)."""
    clipped = np.minimum(np.asarray(counts, dtype=np.int64), max_size - 1)
    if clipped.size == 0 or clipped.min() < 0:
        raise ValueError("counts must be a non-empty list of numbers >= 0")
    cumulative = np.cumsum(np.bincount(clipped, minlength=max_size))
    share = cumulative[-1] / classes
    ends = []
    for k in range(1, classes):
        below = np.flatnonzero(cumulative < share * k)
        if below.size == 0:
            raise ValueError(f"{cumulative[0]} of {cumulative[-1]} images have count 0: too many for {classes} classes")
        ends.append(int(below[-1]))
    ends.append(max_size)
    bucket, out = 0, []
    for count in range(max_size):
        if count > ends[bucket]:
            bucket += 1
        out.append(bucket)
    if bucket != classes - 1:
        raise ValueError(f"the counts fill {bucket + 1} buckets, not {classes}: too few distinct counts")
    return out


def dm_nevis_class_names(buckets: list[int]) -> list[str]:
    """dm_nevis's name of each bucket: '<start>-<first count of the next bucket>' where start is one past the
    previous name's end (so names after the first start one count late), the last '<start>-<max_size>'."""
    names, start = [], 0
    for count in range(1, len(buckets)):
        if buckets[count] != buckets[count - 1]:
            names.append(f"{start}-{count}")
            start = count + 1
    return [*names, f"{start}-{len(buckets)}"]


def side_file(job: Conversion, base: Path, template: str, groups: dict[str, str], image: str) -> Path:
    """The side file of an image: `template` filled with the groups of its path regex."""
    try:
        relative = template.format(**groups)
    except (KeyError, IndexError) as exc:
        raise job.fail(f"side-file template {template!r} names {exc}, not a group of the files regex") from None
    path = job.inside_unpacked(relative, f"side file of {image} (template {template!r})", base)
    if not path.is_file():
        raise job.fail(f"{image}: its side file {relative} is not in the artefacts")
    return path


def first_array(value: Any) -> np.ndarray | None:
    """The first plain array inside a MATLAB value (cell arrays and structs opened at their first element)."""
    while True:
        if isinstance(value, np.void):
            if not value.dtype.names:
                return None
            value = value[0]
        elif isinstance(value, np.ndarray) and (value.dtype == object or value.dtype.names):
            if value.size == 0:
                return None
            value = value.reshape(-1)[0]
        else:
            return np.asarray(value)


def line_count(data: bytes) -> int:
    """Lines as Python's readlines() counts them (a last line without a newline counts)."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _counter(job: Conversion, base: Path, spec: dict[str, Any]) -> Callable[[str, dict[str, str]], int]:
    """count(image path, regex groups) as `count` says."""
    if "mat" in spec:
        (file,) = job.find(spec["mat"])[:1]
        values = read_arrays(job, file, [spec["key"]])[spec["key"]].reshape(-1)

        def from_array(image: str, groups: dict[str, str]) -> int:
            if "number" not in groups:
                raise job.fail(f"count.mat needs a group 'number' in the files regex ({image})")
            number = int(groups["number"])
            if not 1 <= number <= len(values):
                raise job.fail(f"{image}: number {number} has no count in {file.name} ({len(values)} counts)")
            return int(values[number - 1])

        return from_array
    if "lines" in spec:
        return lambda image, groups: line_count(side_file(job, base, spec["lines"], groups, image).read_bytes())
    if "mat_rows" in spec:

        def rows_of(image: str, groups: dict[str, str]) -> int:
            path = side_file(job, base, spec["mat_rows"], groups, image)
            array = first_array(read_arrays(job, path, [spec["key"]])[spec["key"]])
            if array is None or array.ndim == 0:
                raise job.fail(f"{path.name}: {spec['key']!r} holds no array of rows")
            return int(array.shape[0])

        return rows_of
    raise job.fail(f"count = {spec!r} needs one of mat, lines, mat_rows")


def _split_of(job: Conversion, base: Path, options: dict[str, Any]) -> Callable[[Path, dict[str, str]], str | None]:
    """split(image, groups): its split, None for none, "" for an image left out."""
    if options.get("split_lists"):
        listed: dict[str, str] = {}
        for split, pattern in options["split_lists"].items():
            for listing in job.find(pattern):
                for name in listing.read_text(errors="replace").split():
                    if listed.setdefault(name, split) != split:
                        raise job.fail(f"{name} is listed in two splits: {listed[name]} and {split}")
        return lambda image, groups: listed.get(image.name, "")
    if options.get("number_ranges"):
        ranges = options["number_ranges"].items()
        return lambda image, groups: next((s for s, (a, b) in ranges if a <= int(groups["number"]) <= b), "")
    mapping = options.get("splits", {})
    return lambda image, groups: split_name(job, groups["split"], mapping) if groups.get("split") else None


def count_rows(job: Conversion, options: dict[str, Any]) -> list[Row]:
    base = job.unpacked()
    pattern = re.compile(options["files"])
    found = []
    for image in data_files(base):
        match = pattern.fullmatch(image.relative_to(base).as_posix())
        if match and is_image_file(image):
            found.append((image, {k: v for k, v in match.groupdict().items() if v is not None}))
    if not found:
        raise job.fail(f"no image path in the artefacts matches files = {pattern.pattern!r}")
    if options.get("number_ranges") and "number" not in pattern.groupindex:
        raise job.fail("number_ranges needs a group 'number' in the files regex")
    count = _counter(job, base, options["count"])
    counts = [count(image.relative_to(base).as_posix(), groups) for image, groups in found]
    max_size = int(options["max_size"])
    try:
        buckets = count_buckets(counts, max_size, int(options["classes"]))
    except ValueError as exc:
        raise job.fail(f"{len(counts)} images: {exc}") from None
    labels = [buckets[min(c, max_size - 1)] for c in counts]
    write_count_classes(job.out, buckets, labels)
    split_of = _split_of(job, base, options)
    rows: list[Row] = []
    for (image, groups), label in zip(found, labels, strict=True):
        split = split_of(image, groups)
        if split != "":
            rows.append((place(job, image, base), str(label), split))
    return rows


def write_count_classes(out: Path, buckets: list[int], labels: list[int]) -> None:
    """out/count_classes.tsv: class, first and last count (the last class: and above), images, dm_nevis's name."""
    lines = ["class\tfirst_count\tlast_count\timages\tdm_nevis_name"]
    for k, name in enumerate(dm_nevis_class_names(buckets)):
        members = [c for c, b in enumerate(buckets) if b == k]
        lines.append(f"{k}\t{members[0]}\t{members[-1]}\t{labels.count(k)}\t{name}")
    out.mkdir(parents=True, exist_ok=True)
    (out / COUNT_CLASSES).write_text("\n".join(lines) + "\n")
