"""Facts <S>, <S,P>, <S,P,O>: the Fact type, parsing "<lion, eating, meat>" texts, and reading a facts CSV.

A part is a word or phrase; an undefined part is None (written `*`) and means UNKNOWN, not absent
(docs/protocols/facts.md#facts-and-the-fact-space).
Parsing normalises whitespace (strip, inner runs of spaces to one space) and keeps case. A fact needs a subject;
<S, *, O> facts are allowed (kind "SO"). Parts may not contain `,`, `<` or `>`, so that `Fact.text` parses back.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

UNDEFINED = "*"
KINDS = ("S", "SP", "SPO", "SO")  # the kinds a parsed fact can have (a subject is always defined)
MAX_LISTED = 5  # missing images named in an error message
_SPACES = re.compile(r"\s+")
_FORBIDDEN = re.compile(r"[,<>]")


def _defined(part: str | None) -> bool:
    return part is not None and part != UNDEFINED


class Fact(NamedTuple):
    """(S, P, O) with None for an undefined part; equal to the plain tuple ("lion", None, None)."""

    S: str
    P: str | None = None
    O: str | None = None  # noqa: E741 (the paper's name)

    @property
    def kind(self) -> str:
        """The letters of the defined parts: "S", "SP", "SPO", or "SO" for <S, *, O>."""
        return "".join(name for name, part in zip("SPO", self, strict=True) if _defined(part))

    @property
    def text(self) -> str:
        """Canonical text: "<S>", "<S, P>", "<S, P, O>", "<S, *, O>" (trailing undefined parts dropped)."""
        parts = [part if _defined(part) else UNDEFINED for part in self]
        while len(parts) > 1 and parts[-1] == UNDEFINED:
            parts.pop()
        return "<" + ", ".join(parts) + ">"


def _prefix(where: str) -> str:
    if not where or where.rstrip().endswith(":"):
        return where
    return f"{where}: "


def _part(cell: str | None) -> str | None:
    text = _SPACES.sub(" ", (cell or "").strip())
    return None if text in ("", UNDEFINED) else text


def fact_from_parts(s: str | None, p: str | None = None, o: str | None = None, where: str = "") -> Fact:
    """A Fact from three cells (a CSV row): stripped, whitespace runs to one space, "" or "*" undefined."""
    parts = [_part(cell) for cell in (s, p, o)]
    for name, part in zip("SPO", parts, strict=True):
        if part is not None and _FORBIDDEN.search(part):
            raise ValueError(
                f"{_prefix(where)}part {name} {part!r} contains ',', '<' or '>'; a part is a word or phrase "
                "(write multi-word parts with spaces, e.g. 'polar bear')"
            )
    if parts[0] is None:
        raise ValueError(f"{_prefix(where)}a fact needs a subject: S is empty or '*' in {(s, p, o)!r}")
    return Fact(*parts)


def parse_fact(text: str, where: str = "") -> Fact:
    """Parse "<lion>", "<tiger, jumping>", "<lion,eating,meat>" or "lion, eating, meat" ("*" or "" undefined).

    `where` (e.g. "facts.csv line 3") starts every error message.
    """
    prefix = _prefix(where)
    if not isinstance(text, str):
        raise ValueError(f"{prefix}a fact must be a text like '<lion, eating, meat>', got {text!r}")
    body = text.strip()
    if not body:
        raise ValueError(f"{prefix}empty fact {text!r}; write e.g. '<lion>' or '<lion, eating, meat>'")
    opens, closes = body.startswith("<"), body.endswith(">")
    if opens and closes:
        body = body[1:-1]
    if opens != closes or "<" in body or ">" in body:
        raise ValueError(f"{prefix}unbalanced brackets in fact {text!r}; write e.g. '<lion, eating, meat>'")
    cells = body.split(",")
    if len(cells) > 3:
        raise ValueError(f"{prefix}fact {text!r} has {len(cells)} parts; a fact has at most 3 (<S, P, O>)")
    parts = [_part(cell) for cell in cells] + [None] * (3 - len(cells))
    if parts[0] is None:
        raise ValueError(f"{prefix}a fact needs a subject: S is empty or '*' in {text!r}")
    return Fact(*parts)


@dataclass
class FactTable:
    """A facts CSV: one fact per row, the image of each row (resolved paths) when the CSV has an image column."""

    facts: list[Fact]
    images: list[str] | None
    path: Path


def read_facts_csv(path: str | Path, image_root: str | Path | None = None, check_images: bool = True) -> FactTable:
    """Read a CSV with columns S,P,O (or one `fact` column of "<S, P, O>" texts) and an optional `image` column.

    Column names are case-insensitive; P and O columns may be left out (undefined). Image paths are relative to
    `image_root` (default: the CSV's folder); with `check_images` every image must exist.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"facts file {path} not found")
    with path.open(newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            raise ValueError(f"{path} is empty; expected a header with columns S,P,O (and optionally image)")
        columns = _columns(path, header)
        facts: list[Fact] = []
        images: list[str] = []
        lines: list[int] = []
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            where = f"{path} line {line}: "
            if len(row) != len(header):
                raise ValueError(f"{where}{len(row)} cells but the header has {len(header)} ({','.join(header)})")
            if "fact" in columns:
                facts.append(parse_fact(row[columns["fact"]], where))
            else:
                cells = [row[columns[c]] if c in columns else None for c in "spo"]
                facts.append(fact_from_parts(*cells, where=where))
            if "image" in columns:
                image = row[columns["image"]].strip()
                if not image:
                    raise ValueError(f"{where}empty image cell for fact {facts[-1].text}")
                images.append(image)
                lines.append(line)
    if not facts:
        raise ValueError(f"{path} has a header but no facts; add one row per image (or per fact)")
    resolved = None
    if "image" in columns:
        root = Path(image_root) if image_root is not None else path.parent
        resolved = [str(root / image) for image in images]
        if check_images:
            _check_images(path, root, images, resolved, lines)
    return FactTable(facts, resolved, path)


def _columns(path: Path, header: Sequence[str]) -> dict[str, int]:
    names = [name.strip().lower() for name in header]
    for name in set(names):
        if name and names.count(name) > 1:
            raise ValueError(f"{path}: column {name!r} appears {names.count(name)} times in the header {header}")
    columns = {name: i for i, name in enumerate(names) if name in ("s", "p", "o", "fact", "image")}
    if "fact" in columns and columns.keys() & {"s", "p", "o"}:
        raise ValueError(f"{path}: the header has both a 'fact' column and S/P/O columns {header}; keep one kind")
    if "fact" not in columns and "s" not in columns:
        raise ValueError(
            f"{path}: header {header} has no S column; expected columns S,P,O (or one 'fact' column of "
            "'<S, P, O>' texts) and optionally image"
        )
    return columns


def _check_images(path: Path, root: Path, images: list[str], resolved: list[str], lines: list[int]) -> None:
    rows = zip(lines, images, resolved, strict=True)
    missing = [(line, image) for line, image, full in rows if not Path(full).exists()]
    if missing:
        listed = ", ".join(f"line {line}: {image}" for line, image in missing[:MAX_LISTED])
        more = f" (and {len(missing) - MAX_LISTED} more)" if len(missing) > MAX_LISTED else ""
        raise FileNotFoundError(
            f"{path}: {len(missing)} of {len(images)} images are missing (paths relative to {root}): {listed}{more}"
        )


def distinct_facts(facts: Sequence[Sequence[str | None]]) -> tuple[list[Fact], np.ndarray]:
    """(the distinct facts in first-seen order, the index of each row's fact among them)."""
    first: dict[Fact, int] = {}
    index = np.empty(len(facts), dtype=np.int64)
    for i, fact in enumerate(facts):
        index[i] = first.setdefault(Fact(*fact), len(first))
    return list(first), index


def images_per_fact(facts: Sequence[Sequence[str | None]]) -> np.ndarray:
    """Rows (images) per distinct fact, in the order of `distinct_facts(facts)[0]`."""
    unique, index = distinct_facts(facts)
    return np.bincount(index, minlength=len(unique))


__all__ = [
    "KINDS",
    "UNDEFINED",
    "Fact",
    "FactTable",
    "distinct_facts",
    "fact_from_parts",
    "images_per_fact",
    "parse_fact",
    "read_facts_csv",
]
