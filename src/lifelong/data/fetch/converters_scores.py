"""The `scores` converter: images labelled by a score cut into equal-count buckets (TID2008 / TID2013 quality).

Options: `scores` (a glob matching one text file of one number per line), `names` (a str.format template of the
image file name for each line, filled with 1-based counters), `counts` (how far each counter runs, the last
fastest: [25, 17, 4] gives i01_01_1, i01_01_2, ... for "i{0:02d}_{1:02d}_{2}.bmp"), `buckets` (5).

Bucketing as dm_nevis's tid.py does it: the values sorted, bucket b holding sorted[b * n:(b + 1) * n] with
n = number of values // buckets, and a value labelled by the FIRST bucket that contains an equal value (so ties
across a boundary go to the lower bucket; values past the last full bucket get none and are left out). Every
value counts, whether or not its image is in the artefacts. An image counts when its name ends in the template's
suffix as written and its name, lowercased, is a listed name (tid.py: `endswith('bmp')`, then `lower()`), found
anywhere in the artefacts (dm_nevis unrars with flattened paths). Labels are the bucket numbers "0", "1", ...
"""

from __future__ import annotations

import bisect
import itertools
from pathlib import PurePosixPath
from typing import Any

from lifelong.data.fetch.conversion import Conversion, Row, data_files
from lifelong.data.fetch.converters_tables import place


def equal_count_buckets(values: list[float], buckets: int) -> list[int | None]:
    """Each value's bucket: the first of `buckets` consecutive runs of len(values) // buckets sorted values that
    holds an equal value, or None (past the last run)."""
    ordered = sorted(values)
    size = len(values) // buckets
    if size == 0:
        return [None] * len(values)
    out: list[int | None] = []
    for value in values:
        bucket = bisect.bisect_left(ordered, value) // size  # the first equal value's run
        out.append(bucket if bucket < buckets else None)
    return out


def _scores(job: Conversion, options: dict[str, Any]) -> dict[str, float]:
    """Listed image name (lowercase) -> its score, in the order of the score file's lines."""
    found = job.find(options["scores"])
    if len(found) != 1:
        raise job.fail(f"scores = {options['scores']!r} matches {len(found)} files, not one: {[p.name for p in found]}")
    counts = [int(c) for c in options["counts"]]
    names = [
        options["names"].format(*numbers).lower() for numbers in itertools.product(*(range(1, c + 1) for c in counts))
    ]
    lines = found[0].read_text(errors="replace").splitlines()
    if len(lines) < len(names):
        raise job.fail(f"{found[0].name} has {len(lines)} lines; counts = {counts} needs {len(names)}")
    scores = {}
    for number, (name, line) in enumerate(zip(names, lines, strict=False), start=1):
        try:
            scores[name] = float(line.strip())
        except ValueError:
            raise job.fail(
                f"{found[0].name}:{number}: {line.strip()!r} is not a number (the score of {name})"
            ) from None
    return scores


def score_rows(job: Conversion, options: dict[str, Any]) -> list[Row]:
    scores = _scores(job, options)
    labels = dict(zip(scores, equal_count_buckets(list(scores.values()), int(options.get("buckets", 5))), strict=True))
    suffix = PurePosixPath(options["names"]).suffix
    base = job.unpacked()
    chosen: dict[str, str] = {}
    rows: list[Row] = []
    for image in data_files(base):
        key = image.name.lower()
        if not image.name.endswith(suffix) or labels.get(key) is None:
            continue
        where = image.relative_to(base).as_posix()
        if key in chosen:
            raise job.fail(f"two images named {key}: {chosen[key]} and {where}")
        chosen[key] = where
        rows.append((place(job, image, base), str(labels[key]), None))
    if not rows:
        raise job.fail(f"no image in the artefacts is named like {options['names']!r}")
    return rows
