"""ImageNet-CoG's concept levels: filter the candidate concepts, rank them by similarity to the seen ones, cut.

Filters, in the paper's main-text order: `seen` (drop the seen concepts), `seen-ancestors` (drop their
ancestors), `person` (drop the person subtree), `manual` (drop the 70 flagged concepts), `count` (keep those with
>= 782 images; a concept the counts do not list has none; skipped without counts), `leaves` (keep the leaves of
the subgraph of remaining concepts).
The two relational filters have their own rules. `seen_rule` ("ancestor", the main text: "we also remove all the
concepts that are ancestors of these 1000"; or "parent"). `leaf_rule`: "eligible" (the main text: keep the leaves
of the WordNet subgraph of the so-far-eligible concepts, i.e. drop c1 when it is an ancestor of another eligible
c2), "eligible-parent" (drop c1 only when it is a direct parent of an eligible c2) or "in21k-parent" (the
supplement's literal reading, "for any c1 and c2 in IN-21K, we exclude c1 if c1 is a parent of c2": a direct
parent of any candidate, eligible or not). The supplement also lists another order: `order="supplement"` runs
seen, count, person, seen-ancestors, leaves, manual with seen rule "parent" and leaf rule "in21k-parent".
`relation` (older) sets both rules at once: "ancestor" = (ancestor, eligible), "parent" = (parent,
eligible-parent).

Levels: the eligible concepts ranked most similar first (ties by wnid) are cut into `levels` groups of
`per_level` concepts (default: the paper's 1,000 when there are enough, else an even split n // levels); the
leftover n - levels * per_level becomes levels - 1 gaps between consecutive levels, as even as integers allow
(gap k = floor((k+1) g / (L-1)) - floor(k g / (L-1))), so level 1 starts at the most similar concept and the
last level ends at the least similar one, spanning the whole ranking as the paper does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from lifelong.concepts.corpus import corpus_with, taxonomy
from lifelong.concepts.level_files import MIN_IMAGES
from lifelong.concepts.similarity import SET_SIMILARITIES, ancestor_closure
from lifelong.concepts.taxonomy import Taxonomy, synset_of
from lifelong.concepts.wnids import PERSON, ConceptError, check_wnid, cog_exclusions, imagenet1k, imagenet21k
from lifelong.concepts.wordnet import open_wordnet

FILTERS = {
    "seen": "drop the seen concepts",
    "seen-ancestors": "drop every {seen_rule} of a seen concept",
    "person": "drop the person subtree",
    "manual": "drop the manually flagged concepts",
    "count": "keep concepts with >= {min_images} images",
    "leaves": "{leaf_rule_description}",
}
ORDERS = {
    "paper": ("seen", "seen-ancestors", "person", "manual", "count", "leaves"),
    "supplement": ("seen", "count", "person", "seen-ancestors", "leaves", "manual"),
}
ORDER_RELATION = {"paper": "ancestor", "supplement": "parent"}
RELATIONS = ("ancestor", "parent")
SEEN_RULES = RELATIONS
LEAF_RULES = {
    "eligible": "keep leaves of the eligible concepts' subgraph (drop an ancestor of another eligible concept)",
    "eligible-parent": "drop a direct parent of another eligible concept",
    "in21k-parent": "drop a direct parent of any candidate concept (IN-21K), eligible or not",
}
ORDER_RULES = {"paper": ("ancestor", "eligible"), "supplement": ("parent", "in21k-parent")}
RELATION_RULES = {"ancestor": ("ancestor", "eligible"), "parent": ("parent", "eligible-parent")}
PAPER_PER_LEVEL = 1000
PAPER_MIN_IMAGES = MIN_IMAGES


class EmptyLevelError(ConceptError):
    """Too few eligible concepts for the levels asked for."""


@dataclass(frozen=True)
class LevelSpec:
    """What to build: every field defaults to the paper's choice (None = IN-1K seen, IN-21K candidates, ...)."""

    seen: Sequence[str] | None = None
    candidates: Sequence[str] | None = None
    exclusions: Sequence[str] | None = None
    counts: Mapping[str, int] | None = None
    min_images: int = PAPER_MIN_IMAGES
    order: str | Sequence[str] = "paper"
    relation: str | None = None  # older: both rules at once (RELATION_RULES)
    seen_rule: str | None = None  # None: the relation's, else the order's (paper: ancestor, supplement: parent)
    leaf_rule: str | None = None  # None: the relation's, else the order's (paper: eligible, supplement: in21k-parent)
    similarity: str = "lin"
    levels: int = 5
    per_level: int | None = None


@dataclass(frozen=True)
class Step:
    """One filter as it ran: concepts left after it and removed by it (skipped filters remove nothing)."""

    name: str
    description: str
    left: int
    removed: int
    skipped: str = ""


@dataclass
class Levels:
    """The result: one row per placed concept (wnid, name, similarity, level), the filter steps, notices."""

    rows: list[dict]
    steps: list[Step]
    notes: list[str]
    eligible: int
    per_level: int
    bounds: list[tuple[int, int]]  # [start, stop) of each level in the ranking of eligible concepts
    similarity: str
    ranking: list[dict] = field(repr=False, default_factory=list)  # every eligible concept, most similar first


def parse_order(order: str | Sequence[str]) -> tuple[tuple[str, ...], str]:
    """(filter names, default relation) of 'paper', 'supplement' or a comma-separated / listed order of filters."""
    if isinstance(order, str) and order in ORDERS:
        return ORDERS[order], ORDER_RELATION[order]
    names = [n.strip() for n in (order.split(",") if isinstance(order, str) else order) if n.strip()]
    unknown = [n for n in names if n not in FILTERS]
    twice = sorted({n for n in names if names.count(n) > 1})
    if unknown or twice or not names:
        what = f"unknown filter(s) {unknown}" if unknown else f"repeated filter(s) {twice}" if twice else "no filter"
        raise ConceptError(
            f"order {order!r}: {what}; give 'paper', 'supplement' or a comma-separated order of {list(FILTERS)}"
        )
    return tuple(names), "ancestor"


def filter_rules(spec: LevelSpec) -> tuple[str, str]:
    """(seen rule, leaf rule) of `spec`: its own, else its `relation`'s, else its order's (a list: the paper's)."""
    order_rules = ORDER_RULES.get(spec.order, ORDER_RULES["paper"]) if isinstance(spec.order, str) else None
    order_rules = order_rules or ORDER_RULES["paper"]
    if spec.relation is not None and spec.relation not in RELATIONS:
        raise ConceptError(f"unknown relation {spec.relation!r}; choose one of {list(RELATIONS)}")
    base = RELATION_RULES[spec.relation] if spec.relation is not None else order_rules
    seen_rule, leaf_rule = spec.seen_rule or base[0], spec.leaf_rule or base[1]
    if seen_rule not in SEEN_RULES:
        raise ConceptError(f"unknown seen rule {seen_rule!r}; choose one of {list(SEEN_RULES)}")
    if leaf_rule not in LEAF_RULES:
        raise ConceptError(f"unknown leaf rule {leaf_rule!r}; choose one of {list(LEAF_RULES)}")
    return seen_rule, leaf_rule


def describe_filter(name: str, spec: LevelSpec) -> str:
    """What filter `name` does under `spec`'s rules, in words."""
    seen_rule, leaf_rule = filter_rules(spec)
    return FILTERS[name].format(
        seen_rule=seen_rule, leaf_rule_description=LEAF_RULES[leaf_rule], min_images=spec.min_images
    )


def cut_levels(n: int, levels: int, per_level: int | None = None) -> tuple[int, list[tuple[int, int]]]:
    """(per-level size, [start, stop) of each level) over a ranking of n concepts; see the module docstring."""
    if levels < 1:
        raise EmptyLevelError(f"levels is {levels}; ask for at least 1 level")
    if per_level is None:
        per_level = PAPER_PER_LEVEL if n >= levels * PAPER_PER_LEVEL else n // levels
    if per_level < 1:
        raise EmptyLevelError(
            f"level 1 would be empty: {n} eligible concept(s) for {levels} levels of {per_level}; "
            "use fewer levels, more candidates or a looser filter order"
        )
    if per_level * levels > n:
        raise EmptyLevelError(
            f"level {n // per_level + 1} would be empty or short: {levels} levels x {per_level} concepts need "
            f"{levels * per_level}, but only {n} are eligible; lower --per-level (at most {n // levels})"
        )
    gap = n - per_level * levels
    bounds, start = [], 0
    for k in range(levels):
        bounds.append((start, start + per_level))
        start += per_level + (((k + 1) * gap) // (levels - 1) - (k * gap) // (levels - 1) if levels > 1 else 0)
    return per_level, bounds


def _filter_mask(
    name: str, tax: Taxonomy, cand: np.ndarray, alive: np.ndarray, seen: np.ndarray, spec: LevelSpec
) -> np.ndarray | None:
    """The candidates `name` keeps (a boolean mask over `cand`), or None when it is skipped."""
    seen_rule, leaf_rule = filter_rules(spec)
    if name == "seen":
        return ~np.isin(cand, seen)
    if name == "seen-ancestors":
        return ~ancestor_closure(tax, seen, seen_rule)[cand]
    if name == "person":
        return ~tax.subtree_mask(PERSON)[cand]
    if name == "manual":
        excluded = set(spec.exclusions if spec.exclusions is not None else cog_exclusions())
        return np.array([tax.wnids[i] not in excluded for i in cand], dtype=bool)
    if name == "count":
        if spec.counts is None:
            return None
        return np.array([spec.counts.get(tax.wnids[i], 0) >= spec.min_images for i in cand], dtype=bool)
    if name == "leaves":
        if leaf_rule == "in21k-parent":
            return ~ancestor_closure(tax, cand, "parent")[cand]
        return ~ancestor_closure(tax, cand[alive], "ancestor" if leaf_rule == "eligible" else "parent")[cand]
    raise ConceptError(f"unknown filter {name!r}; choose among {list(FILTERS)}")


@dataclass(frozen=True)
class Eligible:
    """The filters' outcome: the taxonomy, seen and eligible node indices, the steps as they ran, notices."""

    taxonomy: Taxonomy
    seen: np.ndarray
    eligible: np.ndarray
    steps: list[Step]
    notes: list[str]
    removed_by: dict[int, str] = field(default_factory=dict)  # node index of a removed candidate -> its filter


def filter_concepts(spec: LevelSpec | None = None, wordnet: str | os.PathLike | None = None) -> Eligible:
    """Run the filters of `spec` in its order over the candidates (default: the paper's, without image counts)."""
    spec = spec or LevelSpec()
    names, _ = parse_order(spec.order)
    filter_rules(spec)  # the rules checked before any work
    if spec.similarity not in SET_SIMILARITIES:
        raise ConceptError(f"unknown similarity {spec.similarity!r}; choose one of {sorted(SET_SIMILARITIES)}")
    if spec.min_images < 0:
        raise ConceptError(f"min_images is {spec.min_images}; give a count >= 0")
    seen_wnids = list(spec.seen) if spec.seen is not None else imagenet1k()
    cand_wnids = list(spec.candidates) if spec.candidates is not None else imagenet21k()
    for what, wnids in (("seen", seen_wnids), ("candidate", cand_wnids)):
        if not wnids:
            raise ConceptError(f"the {what} list is empty; give at least one wnid")
        if len(set(wnids)) < len(wnids):
            twice = sorted({w for w in wnids if wnids.count(w) > 1})
            raise ConceptError(f"the {what} list names {twice[0]} more than once")
    corpus, notes = corpus_with(("seen", seen_wnids), ("candidate", cand_wnids))
    tax = taxonomy(corpus, wordnet)
    seen = tax.indices(seen_wnids, "seen concept")
    cand = tax.indices(cand_wnids, "candidate")
    if "manual" in names and spec.exclusions is not None:
        reader = open_wordnet(wordnet)
        for wnid in spec.exclusions:
            if check_wnid(wnid, "exclusion") not in tax.index:
                synset_of(reader, wnid, "exclusion")  # an unknown wnid is an error; a known one simply matches none

    alive = np.ones(len(cand), dtype=bool)
    removed_by: dict[int, str] = {}
    steps = [Step("start", "candidate concepts", len(cand), 0)]
    for name in names:
        description = describe_filter(name, spec)
        keep = _filter_mask(name, tax, cand, alive, seen, spec)
        if keep is None:
            reason = "skipped: no image counts (give --counts FILE or --images DIR)"
            notes.append(f"the count filter was skipped: no image counts were given (min {spec.min_images})")
            steps.append(Step(name, description, int(alive.sum()), 0, reason))
            continue
        before = int(alive.sum())
        removed_by.update(dict.fromkeys(cand[alive & ~keep].tolist(), name))
        alive &= keep
        steps.append(Step(name, description, int(alive.sum()), before - int(alive.sum())))
    return Eligible(tax, seen, cand[alive], steps, notes, removed_by)


def build_levels(spec: LevelSpec | None = None, wordnet: str | os.PathLike | None = None) -> Levels:
    """Filter, rank and cut ImageNet-CoG levels as `spec` says (default: the paper's, without image counts)."""
    spec = spec or LevelSpec()
    found = filter_concepts(spec, wordnet)
    tax, eligible = found.taxonomy, found.eligible
    if len(eligible) == 0:
        raise EmptyLevelError("no candidate concept survives the filters; every level would be empty")
    per_level, bounds = cut_levels(len(eligible), spec.levels, spec.per_level)
    scores = SET_SIMILARITIES[spec.similarity](tax, eligible, found.seen)
    wnids = np.array([tax.wnids[i] for i in eligible])
    rank = np.lexsort((wnids, -scores))
    level_of = np.zeros(len(eligible), dtype=np.int64)
    for number, (start, stop) in enumerate(bounds, start=1):
        level_of[start:stop] = number
    ranking = [
        {"wnid": str(wnids[i]), "name": tax.lemmas[eligible[i]], "similarity": float(scores[i]), "level": int(lv)}
        for i, lv in zip(rank.tolist(), level_of.tolist(), strict=True)
    ]
    rows = [r for r in ranking if r["level"] > 0]
    return Levels(rows, found.steps, found.notes, len(eligible), per_level, bounds, spec.similarity, ranking)


def levels_csv(levels: Levels) -> str:
    """The levels as CSV text: header wnid,name,similarity,level; level 1 (most similar) first."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["wnid", "name", "similarity", "level"])
    for row in levels.rows:
        writer.writerow([row["wnid"], row["name"], f"{row['similarity']:.8g}", row["level"]])
    return out.getvalue()
