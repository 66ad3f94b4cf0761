"""The `dedupe = true` option of labels.csv converters: byte-identical images of one class kept once.

Rows are taken in path order; a row whose image file has the same bytes (SHA-256) and the same label(s) as an
earlier row is dropped and its image deleted from out/ (the first one stays). dm_nevis drops repeats by the MD5
of the decoded pixels with the label (extraction_utils.deduplicate_data_generator): files that differ only in
their encoding (metadata, re-saved JPEGs of the same pixels) are dropped there and kept here.
"""

from __future__ import annotations

import hashlib

from lifelong.data.fetch.conversion import Conversion, Row


def drop_duplicate_images(job: Conversion, rows: list[Row]) -> list[Row]:
    seen: set[tuple[str, str]] = set()
    kept: list[Row] = []
    kept_paths: set[str] = set()
    for path, label, split in sorted(rows, key=lambda row: row[0]):
        if path in kept_paths:  # a second row of a kept image (not grouped): a row, not a file, to drop
            continue
        image = job.inside_out(path, "labels.csv row path")
        digest = hashlib.sha256(image.read_bytes()).hexdigest()
        key = (digest, label if isinstance(label, str) else ";".join(sorted(label)))
        if key in seen:
            image.unlink()
            continue
        seen.add(key)
        kept_paths.add(path)
        kept.append((path, label, split))
    return kept
