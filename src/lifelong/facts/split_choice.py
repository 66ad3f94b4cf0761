"""Choosing the semantic split among distance x linkage variants by a balance criterion stated before any training.

CRITERION (`choose_variant`), never accuracy: among the variants whose every task holds more than K facts (on a
task of K facts or fewer the standard top-K cannot miss), the one whose training images are spread most evenly over
the tasks (lowest max_t |images_t - mean| / mean); ties by the same deviation of facts, then by VARIANTS order
(eq2 before padded; single, average, complete, ward). If no variant qualifies, the most even by training images of
all of them, and the split's info says so. `-s distance=auto` and `-s linkage=auto` (the fact streams' defaults)
apply it to the variants the other option leaves; naming both picks one variant.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lifelong.facts.linkage import DISTANCES, LINKAGES, MAX_DENSE_FACTS
from lifelong.facts.splits import Split, balance_deviations, semantic_split

AUTO = "auto"
VARIANTS = tuple((distance, linkage) for distance in DISTANCES for linkage in LINKAGES)
CRITERION = (
    "among the distance x linkage variants whose every task holds more than K facts, the lowest max relative "
    "deviation of training images per task (ties: of facts, then the listed order); never accuracy"
)


def candidate_variants(distance: str, linkage: str, n_facts: int) -> list[tuple[str, str]]:
    """The variants `distance`/`linkage` (each a name or "auto") leave; above MAX_DENSE_FACTS only eq2 + single."""
    if distance != AUTO and distance not in DISTANCES:
        raise ValueError(f"unknown fact distance {distance!r}; choose one of {', '.join(DISTANCES)} or {AUTO}")
    if linkage != AUTO and linkage not in LINKAGES:
        raise ValueError(f"unknown linkage {linkage!r}; choose one of {', '.join(LINKAGES)} or {AUTO}")
    chosen = [(d, k) for d, k in VARIANTS if distance in (AUTO, d) and linkage in (AUTO, k)]
    if n_facts > MAX_DENSE_FACTS and len(chosen) > 1:  # only the MST needs no n x n matrix
        chosen = [v for v in chosen if v == ("eq2", "single")] or chosen
    return chosen


def compare_variants(
    part_ids: np.ndarray,
    part_vectors: Sequence[np.ndarray],
    tasks: int,
    images_per_fact: np.ndarray,
    k: int,
    variants: Sequence[tuple[str, str]] = VARIANTS,
) -> list[tuple[Split, dict]]:
    """Each variant's split and its row: facts and training images per task, deviations, smallest task, eligible."""
    out = []
    for distance, linkage in variants:
        split = semantic_split(
            part_ids, part_vectors, tasks, linkage=linkage, images_per_fact=images_per_fact, distance=distance
        )
        facts = np.bincount(split.task, minlength=tasks)
        deviations = balance_deviations(split.task, tasks, images_per_fact)
        row = {
            "distance": distance,
            "linkage": linkage,
            "facts": [int(f) for f in facts],
            "images": [int(r["images"]) for r in split.balance],
            "image_deviation": round(deviations["images"], 6),
            "fact_deviation": round(deviations["facts"], 6),
            "smallest_task": int(facts.min()),
            "eligible": bool(facts.min() > k),
        }
        out.append((split, row))
    return out


def choose_variant(rows: Sequence[dict]) -> int:
    """Index of the row CRITERION picks (rows in VARIANTS order)."""
    if not rows:
        raise ValueError("no split variants to choose from")
    pool = [i for i, r in enumerate(rows) if r["eligible"]] or list(range(len(rows)))
    return min(pool, key=lambda i: (rows[i]["image_deviation"], rows[i]["fact_deviation"], i))


def chosen_semantic_split(
    part_ids: np.ndarray,
    part_vectors: Sequence[np.ndarray],
    tasks: int,
    images_per_fact: np.ndarray,
    k: int,
    distance: str = AUTO,
    linkage: str = AUTO,
) -> Split:
    """The semantic split `distance`/`linkage` name, or CRITERION's choice where either is "auto" (table in info)."""
    variants = candidate_variants(distance, linkage, len(part_ids))
    if len(variants) == 1:
        return semantic_split(
            part_ids,
            part_vectors,
            tasks,
            linkage=variants[0][1],
            images_per_fact=images_per_fact,
            distance=variants[0][0],
        )
    compared = compare_variants(part_ids, part_vectors, tasks, images_per_fact, k, variants)
    rows = [row for _, row in compared]
    best = choose_variant(rows)
    split = compared[best][0]
    split.info.update(
        criterion=CRITERION,
        k=int(k),
        variants=rows,
        qualified=any(r["eligible"] for r in rows),
    )
    return split


__all__ = [
    "AUTO",
    "CRITERION",
    "VARIANTS",
    "candidate_variants",
    "choose_variant",
    "chosen_semantic_split",
    "compare_variants",
]
