"""ImageNet concept ids (wnids) and the lists shipped with the package: IN-1K, IN-21K fall 2011, CoG's exclusions.

A wnid is 'n' + the 8-digit byte offset of a noun synset in WordNet 3.0's data.noun.
"""

from __future__ import annotations

import os
import re
from importlib import resources
from pathlib import Path

from lifelong.core.errors import DataError

WNID = re.compile(r"n\d{8}")
PERSON = "n00007846"  # person.n.01: the root of the subtree ImageNet-CoG drops
ENTITY = "n00001740"  # entity.n.01: the root of WordNet's nouns
LISTS = {
    "imagenet1k": "imagenet1k.txt",
    "imagenet21k": "imagenet21k_fall2011.txt",
    "cog-exclusions": "cog_manual_exclusions.txt",
}


class ConceptError(DataError):
    """Bad concept input: a malformed or unknown wnid, an empty list, an empty level."""


class MalformedWnidError(ConceptError):
    """A string that is not 'n' followed by 8 digits."""


class UnknownConceptError(ConceptError):
    """A well-formed wnid that names no WordNet 3.0 noun synset."""


def check_wnid(wnid: str, where: str = "") -> str:
    """`wnid` if it is 'n' + 8 digits, else a MalformedWnidError naming it (and where it came from)."""
    if not isinstance(wnid, str) or not WNID.fullmatch(wnid):
        place = f"{where}: " if where else ""
        raise MalformedWnidError(f"{place}{wnid!r} is not a wnid; a wnid is 'n' and 8 digits, e.g. n02084071")
    return wnid


def offset(wnid: str) -> int:
    """The data.noun byte offset a wnid names."""
    return int(check_wnid(wnid)[1:])


def to_wnid(noun_offset: int) -> str:
    """The wnid of the noun synset at `noun_offset`."""
    return f"n{noun_offset:08d}"


def parse_wnids(text: str, source: str) -> list[str]:
    """The wnids of a list: the first field of each line; blank lines and '#' comments skipped; no duplicates."""
    wnids: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split("#", 1)[0].replace(",", " ").split()
        if not fields:
            continue
        wnid = check_wnid(fields[0], f"{source}, line {number}")
        if wnid in seen:
            raise ConceptError(f"{source}, line {number}: {wnid} is listed twice (first on line {seen[wnid]})")
        seen[wnid] = number
        wnids.append(wnid)
    if not wnids:
        raise ConceptError(f"{source} lists no wnids; give one wnid per line, e.g. n02084071")
    return wnids


def read_wnids(path: str | os.PathLike) -> list[str]:
    """The wnids listed in a text file (one per line; see `parse_wnids`)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such concept list; give a text file with one wnid per line")
    return parse_wnids(path.read_text(), str(path))


def vendored(name: str) -> list[str]:
    """A list shipped with the package: 'imagenet1k', 'imagenet21k' (fall 2011) or 'cog-exclusions'."""
    if name not in LISTS:
        raise ConceptError(f"no shipped concept list {name!r}; choose one of {sorted(LISTS)}")
    text = resources.files("lifelong.concepts").joinpath("lists", LISTS[name]).read_text()
    return parse_wnids(text, f"lifelong/concepts/lists/{LISTS[name]}")


def imagenet1k() -> list[str]:
    """ImageNet-1K's 1,000 class wnids, in the usual (sorted) class order."""
    return vendored("imagenet1k")


def imagenet21k() -> list[str]:
    """ImageNet-21K fall 2011's 21,841 wnids."""
    return vendored("imagenet21k")


def cog_exclusions() -> list[str]:
    """The 70 concepts ImageNet-CoG's authors excluded by hand (supplement, Tab. 2)."""
    return vendored("cog-exclusions")
