"""The default concept corpus (ImageNet-21K fall 2011 + WordNet ancestors) and similarity to a seen set by wnid."""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Sequence

import numpy as np

from lifelong.concepts.similarity import SET_SIMILARITIES
from lifelong.concepts.taxonomy import CorpusNotice, Taxonomy, build_taxonomy
from lifelong.concepts.wnids import PERSON, ConceptError, check_wnid, imagenet21k
from lifelong.concepts.wordnet import open_wordnet


def corpus_with(*groups: tuple[str, Sequence[str]]) -> tuple[tuple[str, ...], list[str]]:
    """(IN-21K fall 2011 plus the concepts of `groups` it lacks, one notice per group that added some).

    A group is (what, wnids), e.g. ("seen", imagenet1k()): ImageNet-1K's n04399382 (teddy bear) is not in the
    fall 2011 list, so it joins the corpus and the notice says so.
    """
    base = imagenet21k()
    known = set(base)
    extra: list[str] = []
    notes = []
    for what, wnids in groups:
        added = [check_wnid(w, what) for w in dict.fromkeys(wnids) if w not in known]
        known.update(added)
        extra.extend(added)
        if added:
            shown = ", ".join(added[:10]) + (f" and {len(added) - 10} more" if len(added) > 10 else "")
            notes.append(
                f"{len(added)} {what} concept(s) not in ImageNet-21K fall 2011 added to the IC corpus: {shown}"
            )
    return tuple(base + extra), notes


@functools.lru_cache(maxsize=2)
def _cached(corpus: tuple[str, ...], wordnet: str | None) -> Taxonomy:
    return build_taxonomy(open_wordnet(wordnet), corpus)


def taxonomy(corpus: Sequence[str] | None = None, wordnet: str | os.PathLike | None = None) -> Taxonomy:
    """The taxonomy of `corpus` (default: IN-21K fall 2011) and its ancestors; the last two are kept in memory."""
    return _cached(tuple(corpus) if corpus is not None else tuple(imagenet21k()), str(wordnet) if wordnet else None)


def similarity_to_seen(
    candidates: Sequence[str],
    seen: Sequence[str],
    measure: str = "lin",
    wordnet: str | os.PathLike | None = None,
) -> np.ndarray:
    """Each candidate's maximum similarity to the seen set under the default corpus (a notice if it grew)."""
    if measure not in SET_SIMILARITIES:
        raise ConceptError(f"unknown similarity {measure!r}; choose one of {sorted(SET_SIMILARITIES)}")
    if not len(seen):
        raise ConceptError("the seen set is empty; give at least one seen wnid")
    corpus, notes = corpus_with(("seen", seen), ("candidate", candidates))
    for note in notes:
        warnings.warn(note, CorpusNotice, stacklevel=2)
    tax = taxonomy(corpus, wordnet)
    return SET_SIMILARITIES[measure](tax, tax.indices(candidates, "candidate"), tax.indices(seen, "seen concept"))


def lin_to_seen(candidates: Sequence[str], seen: Sequence[str]) -> np.ndarray:
    """Each candidate wnid's maximum Lin similarity to the seen wnids, under the default corpus."""
    return similarity_to_seen(candidates, seen, "lin")


def person_subtree(wordnet: str | os.PathLike | None = None) -> set[str]:
    """The wnids of the default corpus (IN-21K fall 2011) under person.n.01, itself included."""
    tax = taxonomy(None, wordnet)
    return {tax.wnids[i] for i in np.flatnonzero(tax.subtree_mask(PERSON)).tolist()}
