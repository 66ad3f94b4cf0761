"""ImageNet-1K label order for classifier heads: the vendored wnid list, named from WordNet when it is installed."""

from __future__ import annotations

from functools import lru_cache

from lifelong.concepts.wnids import imagenet1k, offset
from lifelong.concepts.wordnet import WordNetNotFoundError, find_wordnet


def imagenet1k_wnids() -> list[str]:
    """The 1,000 ImageNet-1K wnids in the order of the standard class indices (sorted wnids)."""
    return imagenet1k()


@lru_cache(maxsize=1)
def _wordnet_names() -> dict[str, str] | None:
    try:
        folder = find_wordnet()
    except WordNetNotFoundError:
        return None
    names: dict[str, str] = {}
    with open(folder / "data.noun", "rb") as f:  # a synset's offset is its line's byte offset in data.noun
        for wnid in imagenet1k():
            f.seek(offset(wnid))
            fields = f.readline().decode("utf-8", "replace").split()
            count = int(fields[3], 16)
            names[wnid] = ", ".join(fields[4 + 2 * i].replace("_", " ") for i in range(count))
    return names


def label_name(wnid: str) -> str:
    """The synset's lemmas ("tench, Tinca tinca") from WordNet 3.0 if installed, else the wnid itself."""
    names = _wordnet_names()
    return wnid if names is None else names.get(wnid, wnid)
