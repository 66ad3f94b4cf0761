"""Images per concept, for ImageNet-CoG's count filter: from a `wnid,count` CSV or counted in an image folder."""

from __future__ import annotations

import csv
import os
from pathlib import Path

from lifelong.concepts.wnids import WNID, ConceptError, check_wnid


def read_counts(path: str | os.PathLike) -> dict[str, int]:
    """{wnid: images} from a CSV of rows `wnid,count` (a header row `wnid,count` is optional)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such counts file; give a CSV with rows wnid,count")
    counts: dict[str, int] = {}
    with open(path, newline="") as f:
        for number, row in enumerate(csv.reader(f), start=1):
            cells = [c.strip() for c in row]
            if not cells or not any(cells) or cells[0].startswith("#"):
                continue
            if number == 1 and [c.lower() for c in cells[:2]] == ["wnid", "count"]:
                continue
            where = f"{path}, line {number}"
            if len(cells) < 2:
                raise ConceptError(f"{where}: {row!r} has no count; each row is wnid,count")
            wnid = check_wnid(cells[0], where)
            try:
                count = int(cells[1])
            except ValueError:
                count = -1
            if count < 0:
                raise ConceptError(f"{where}: count {cells[1]!r} of {wnid} is not a whole number >= 0")
            if wnid in counts:
                raise ConceptError(f"{where}: {wnid} has a second count")
            counts[wnid] = count
    if not counts:
        raise ConceptError(f"{path} holds no counts; each row is wnid,count, e.g. n01440764,1300")
    return counts


def count_images(root: str | os.PathLike) -> tuple[dict[str, int], list[str]]:
    """({wnid: files in root/<wnid>/}, names of the other entries of root, which are not counted)."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such image folder; give a folder holding one subfolder per wnid")
    counts: dict[str, int] = {}
    ignored: list[str] = []
    with os.scandir(root) as entries:
        for entry in entries:
            if entry.is_dir() and WNID.fullmatch(entry.name):
                with os.scandir(entry.path) as files:
                    counts[check_wnid(entry.name)] = sum(1 for f in files if f.is_file() and not f.name.startswith("."))
            else:
                ignored.append(entry.name)
    if not counts:
        raise ConceptError(f"{root} has no subfolder named by a wnid (e.g. {root}/n01440764/); nothing to count")
    return counts, sorted(ignored)
