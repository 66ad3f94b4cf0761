"""The samples CSV: one row per sample (one per matrix column, in column order), the one schema that
`lifelong bench build-zoo` writes and `lifelong bench import --samples` / `lifelong bench beyond --samples` read.

This module alone names the columns; the writer and the readers both go through it:

    id,source,source_item,domain,label,content_hash

`source`, `domain`, `label` and `content_hash` are required (they are what a store keeps of a sample); `id` (the
column index 0, 1, 2, ...) and `source_item` (the item of the source a corrupted copy comes from) are optional.
Files written by `build-zoo` before this schema named the content hash `hash`; they are read as well.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

from lifelong.core.files import atomic_write_bytes
from lifelong.sortsearch.registry import SAMPLE_FIELDS

COLUMNS = ("id", "source", "source_item", "domain", "label", "content_hash")
REQUIRED = SAMPLE_FIELDS  # source, domain, label, content_hash: what a store keeps of each sample
OPTIONAL = ("id", "source_item")
_OLD_NAMES = {"hash": "content_hash"}  # build-zoo's header before this module existed
HEADER_HELP = (
    f"a samples CSV has the header {','.join(COLUMNS)} ({' and '.join(OPTIONAL)} optional), "
    "one row per sample in matrix column order"
)


@dataclass(frozen=True)
class SampleRow:
    """One sample: its column `id` in the matrix, where it comes from, its domain, its label and content hash."""

    id: int
    source: str
    source_item: str
    domain: str
    label: Any
    content_hash: str


def write_samples_csv(path: str | Path, rows: Iterable[SampleRow]) -> None:
    """Write `rows` with the header `COLUMNS` (atomically: a killed write leaves the old file or none)."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(astuple(row) for row in rows)
    atomic_write_bytes(Path(path), text.getvalue().encode())


def read_samples_csv(path: str | Path, require: Sequence[str] = REQUIRED, n: int | None = None) -> list[dict[str, str]]:
    """The rows of a samples CSV as dicts of the schema's columns it has (all of `require`), or a ValueError naming
    the file and what is wrong. `n`: the matrix columns the rows must match, one row each. An `id` column must
    count 0, 1, 2, ... (the rows are the matrix columns in order)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such samples CSV ({HEADER_HELP})")
    try:
        with path.open(newline="") as handle:
            reader = csv.DictReader(handle)
            header = [_OLD_NAMES.get(name, name) for name in reader.fieldnames or []]
            reader.fieldnames = header
            rows = list(reader)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"{path}: not a readable CSV file ({exc}); {HEADER_HELP}") from None
    missing = [column for column in require if column not in header]
    if missing:
        has = ",".join(header) if header else "no header"
        raise ValueError(f"{path} lacks the column(s) {', '.join(missing)} (it has {has}): {HEADER_HELP}")
    if not rows:
        raise ValueError(f"{path} has no data rows: {HEADER_HELP}")
    if n is not None and len(rows) != n:
        raise ValueError(f"{path} lists {len(rows)} samples but the matrix has {n} columns: give one row per column")
    known = [column for column in COLUMNS if column in header]
    out = [{column: row[column] for column in known} for row in rows]
    if "id" in header:
        for index, row in enumerate(out):
            if row["id"] is None or row["id"].strip() != str(index):
                raise ValueError(
                    f"{path}, line {index + 2}: id is {row['id']!r} but this row is matrix column {index}; "
                    "list the samples in column order (ids 0, 1, 2, ...), or drop the id column"
                )
    return out


def store_records(rows: Sequence[dict[str, str]]) -> list[dict[str, str]]:
    """The sample records a store keeps (`REQUIRED` fields) of rows read by `read_samples_csv`."""
    return [{field: row[field] for field in REQUIRED} for row in rows]
