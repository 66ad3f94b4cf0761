"""Comparing a levels file (ours, or the authors' released one) with our ranking of concepts.

Every concept of the file gets its similarity to the seen set under our corpus and measure (the numbers
`build_levels` ranks by). The levels are *contiguous* when they are non-overlapping bands of that ranking, level 1
the most similar: min similarity of level k >= max similarity of level k + 1 for every k (ties allowed). A concept
is *out of band* when its similarity falls outside the band its level would need for that: sort all the file's
similarities, most similar first; level k's band is [the similarity at rank start_k + n_k - 1, the one at rank
start_k] where start_k counts the concepts of the levels before it. The levels are contiguous exactly when no
concept is out of band. Also reported: which of the file's concepts our filters (all but the image count) would
remove and which filter, and the pairs where one concept of the file is an ancestor of another.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from lifelong.concepts.corpus import corpus_with, taxonomy
from lifelong.concepts.levels import LevelSpec, describe_filter, filter_concepts
from lifelong.concepts.similarity import SET_SIMILARITIES
from lifelong.concepts.wnids import imagenet1k, imagenet21k


@dataclass
class LevelComparison:
    """What `compare_levels` found; `to_json()` is the `cog levels --compare --json` object."""

    levels: list[dict]  # {level, count, min_similarity, max_similarity} (similarities None for an empty level)
    contiguous: bool
    out_of_band: list[dict]  # {wnid, name, level, similarity, band: [low, high], belongs: "higher" | "lower"}
    filtered: list[dict]  # {wnid, name, level, filter, why}
    ancestor_pairs: list[dict]  # {ancestor, ancestor_level, ancestor_name, descendant, descendant_level, ...name}
    not_in_corpus: list[str]
    similarity: str
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "levels": self.levels,
            "contiguous": self.contiguous,
            "out_of_band": [row["wnid"] for row in self.out_of_band],
            "out_of_band_detail": self.out_of_band,
            "filtered": self.filtered,
            "ancestor_pairs": self.ancestor_pairs,
            "not_in_corpus": self.not_in_corpus,
            "similarity": self.similarity,
            "notes": self.notes,
        }


def level_bands(similarity: np.ndarray, level: np.ndarray, numbers: Sequence[int]) -> dict[int, tuple[float, float]]:
    """{level: (low, high)}: the similarity band each level needs for the levels to be contiguous (see the module
    docstring); levels without concepts get no band."""
    ranked = np.sort(similarity)[::-1]
    bands, start = {}, 0
    for number in numbers:
        count = int((level == number).sum())
        if count:
            bands[number] = (float(ranked[start + count - 1]), float(ranked[start]))
        start += count
    return bands


def outside_bands(similarity: np.ndarray, level: np.ndarray, numbers: Sequence[int]) -> np.ndarray:
    """Mask of the concepts whose similarity falls outside their level's band (`level_bands`)."""
    bands = level_bands(similarity, level, numbers)
    low = np.array([bands[n][0] for n in level.tolist()], dtype=np.float64).reshape(len(level))
    high = np.array([bands[n][1] for n in level.tolist()], dtype=np.float64).reshape(len(level))
    return (similarity < low) | (similarity > high)


def compare_levels(
    levels: Sequence[Sequence[str]], spec: LevelSpec | None = None, wordnet: str | os.PathLike | None = None
) -> LevelComparison:
    """Place the concepts of `levels` (level 1 first) in our ranking (`spec`: seen set, candidates, measure,
    filter order and relation; its image counts are ignored) and report as `LevelComparison` says."""
    spec = replace(spec or LevelSpec(), counts=None)
    seen_wnids = list(spec.seen) if spec.seen is not None else imagenet1k()
    cand_wnids = list(spec.candidates) if spec.candidates is not None else imagenet21k()
    corpus, notes = corpus_with(("seen", seen_wnids), ("candidate", cand_wnids))  # build_levels' corpus: same IC
    tax = taxonomy(corpus, wordnet)
    placed = [(number, wnid) for number, wnids in enumerate(levels, start=1) for wnid in wnids]
    not_in_corpus = [wnid for _, wnid in placed if wnid not in tax.index]
    if not_in_corpus:
        notes.append(f"{len(not_in_corpus)} concept(s) of the file are not in our corpus or its ancestors: left out")
    placed = [(number, wnid) for number, wnid in placed if wnid in tax.index]
    nodes = np.array([tax.index[wnid] for _, wnid in placed], dtype=np.int64)
    level = np.array([number for number, _ in placed], dtype=np.int64)
    seen = tax.indices(seen_wnids, "seen concept")
    similarity = SET_SIMILARITIES[spec.similarity](tax, nodes, seen) if len(nodes) else np.zeros(0)
    numbers = list(range(1, len(levels) + 1))
    bands = level_bands(similarity, level, numbers)

    summary = []
    for number in numbers:
        values = similarity[level == number]
        low, high = (float(values.min()), float(values.max())) if len(values) else (None, None)
        summary.append({"level": number, "count": len(values), "min_similarity": low, "max_similarity": high})
    out_of_band = []
    for i in np.flatnonzero(outside_bands(similarity, level, numbers)).tolist():
        number, wnid = placed[i]
        low, high = bands[number]
        out_of_band.append(
            {
                "wnid": wnid,
                "name": tax.lemmas[nodes[i]],
                "level": number,
                "similarity": float(similarity[i]),
                "band": [low, high],
                "belongs": "higher" if similarity[i] > high else "lower",
            }
        )
    out_of_band.sort(key=lambda row: (row["level"], -row["similarity"], row["wnid"]))
    return LevelComparison(
        levels=summary,
        contiguous=not out_of_band,
        out_of_band=out_of_band,
        filtered=_filtered(spec, wordnet, tax, placed, nodes, set(cand_wnids)),
        ancestor_pairs=_ancestor_pairs(tax, placed, nodes),
        not_in_corpus=not_in_corpus,
        similarity=spec.similarity,
        notes=notes,
    )


def _filtered(spec: LevelSpec, wordnet, tax, placed, nodes: np.ndarray, candidates: set[str]) -> list[dict]:
    """The file's concepts our non-count filters remove (or that are no candidate at all), with the filter."""
    found = filter_concepts(spec, wordnet)
    out = []
    for (number, wnid), node in zip(placed, nodes.tolist(), strict=True):
        if wnid not in candidates:
            name, why = "candidates", "not a candidate concept (ImageNet-21K fall 2011 unless --candidates)"
        elif node in found.removed_by:
            name = found.removed_by[node]
            why = describe_filter(name, spec)
        else:
            continue
        out.append({"wnid": wnid, "name": tax.lemmas[node], "level": number, "filter": name, "why": why})
    return out


def _ancestor_pairs(tax, placed, nodes: np.ndarray) -> list[dict]:
    """Pairs of the file's concepts where one is a (proper) ancestor of the other."""
    if not len(nodes):
        return []
    position = {node: i for i, node in enumerate(nodes.tolist())}
    sub = tax.ancestors[nodes]  # row i: node i and its ancestors
    pairs = []
    for i in range(len(nodes)):
        for above in sub.indices[sub.indptr[i] : sub.indptr[i + 1]].tolist():
            j = position.get(above)
            if j is not None and j != i:
                pairs.append(
                    {
                        "ancestor": placed[j][1],
                        "ancestor_level": placed[j][0],
                        "ancestor_name": tax.lemmas[above],
                        "descendant": placed[i][1],
                        "descendant_level": placed[i][0],
                        "descendant_name": tax.lemmas[nodes[i]],
                    }
                )
    return sorted(pairs, key=lambda p: (p["ancestor_level"], p["ancestor"], p["descendant"]))
