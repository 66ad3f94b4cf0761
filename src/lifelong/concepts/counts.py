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


RELEASES = ("fall2011", "winter21")
WINTER21_NAMES = ("winter21", "winter_21", "winter-21", "w21")


def looks_like_winter21(root: str | os.PathLike, counts: dict[str, int], person_wnids: set[str]) -> str | None:
    """Why the counted folder looks like ImageNet-21K's winter 2021 release rather than fall 2011, or None.

    Winter 2021 dropped the person subtree (and other synsets flagged unsafe); counted as fall 2011, every dropped
    synset would count 0 images and the count filter would remove it. Signs: the folder's name says winter 21, or
    it holds hundreds of wnid folders but none of the person subtree's (fall 2011 has about 2,800).
    """
    name = Path(root).resolve().name.lower()
    if any(mark in name for mark in WINTER21_NAMES):
        return f"its name {Path(root).name!r} says winter 2021"
    persons = sum(1 for wnid in counts if wnid in person_wnids)
    if len(counts) >= 500 and persons == 0 and person_wnids:
        return f"it holds {len(counts)} wnid folders but none of the {len(person_wnids)} of the person subtree"
    return None
