"""ImageNet-CoG's concept levels from WordNet (`lifelong cog levels`): filter the candidates, rank them by similarity
to the seen concepts, cut the ranking into levels, and count the eligible concepts under every filter rule variant.

`cog_levels(CogLevelsSpec(out="levels.csv"))` builds them (and writes the CSV when `out` is given); placing a levels
file in that ranking instead is `cog_compare` (`lifelong cog levels --compare FILE`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lifelong.commands.terminal import note
from lifelong.concepts.level_files import MIN_IMAGES
from lifelong.core.errors import ResumeRefused, UsageError


@dataclass(frozen=True, kw_only=True)
class LevelOptions:
    """The options that define the ranking of concepts, shared by building levels and comparing a levels file; the
    names are `cog levels`' options (`seen` is --seen FILE, ...). Checked on construction, in CLI words."""

    seen: str | Path | None = None  # seen wnids, one per line (default: ImageNet-1K)
    candidates: str | Path | None = None  # candidate wnids (default: ImageNet-21K fall 2011)
    exclusions: str | Path | None = None  # manually excluded wnids (default: the paper's 70)
    similarity: str = "lin"  # lin, wup, jcn, or text
    levels: int = 5
    per_level: int | None = None  # concepts per level (default: 1000 if enough, else even)
    order: str = "paper"  # paper, supplement, or a comma-separated list of filters
    seen_rule: str | None = None  # ancestor | parent (default: the order's)
    leaf_rule: str | None = None  # eligible | eligible-parent | in21k-parent (default: the order's)
    relation: str | None = None  # both rules at once (older): ancestor | parent
    min_images: int = MIN_IMAGES  # the count filter's minimum (782, the paper's)
    wordnet: str | Path | None = None  # WordNet 3.0 database folder (default: /usr/share/wordnet)

    def __post_init__(self) -> None:
        check_level_options(self.similarity, self.order, self.relation, self.seen_rule, self.leaf_rule)

    def level_spec(self, counts: dict[str, int] | None = None) -> Any:
        """The `lifelong.concepts.LevelSpec` of these options (reads the wnid files), with image `counts`."""
        from lifelong.concepts import LevelSpec, read_wnids

        return LevelSpec(
            seen=read_wnids(self.seen) if self.seen else None,
            candidates=read_wnids(self.candidates) if self.candidates else None,
            exclusions=read_wnids(self.exclusions) if self.exclusions else None,
            counts=counts,
            min_images=self.min_images,
            order=self.order,
            relation=self.relation,
            seen_rule=self.seen_rule,
            leaf_rule=self.leaf_rule,
            similarity=self.similarity,
            levels=self.levels,
            per_level=self.per_level,
        )


@dataclass(frozen=True, kw_only=True)
class CogLevelsSpec(LevelOptions):
    """`lifelong cog levels --out FILE.csv`: build the levels (the CSV is written when `out` is given)."""

    out: str | Path | None = None  # CSV to write: wnid,name,similarity,level
    counts: str | Path | None = None  # images per concept: a CSV of wnid,count rows
    images: str | Path | None = None  # count images in DIR/<wnid>/* instead
    images_release: str = "fall2011"  # which ImageNet-21K release `images` holds: fall2011 | winter21
    overwrite: bool = False  # replace an existing `out`


@dataclass(frozen=True)
class RuleVariant:
    """Eligible concepts under one (seen rule, leaf rule) with the spec's other settings: one row of the variants
    table."""

    seen_rule: str
    leaf_rule: str
    after_seen_ancestors: int | None  # concepts left after the seen-ancestors filter (None: the order skips it)
    eligible: int
    chosen: bool  # the spec's own rules


@dataclass
class CogLevelsResult:
    """What `cog_levels` built: the levels (`levels.rows`, `.steps`, `.bounds`, `.notes`, ...), the rule variants,
    the entries of `images` that are not wnid folders, the CSV written (or None) and the seconds it took."""

    levels: Any  # lifelong.concepts.Levels
    variants: list[RuleVariant]
    ignored: list[str]
    images: Path | None
    out: Path | None
    seconds: float


def cog_levels(spec: CogLevelsSpec) -> CogLevelsResult:
    """Build ImageNet-CoG levels from WordNet: filter the candidates, rank them by similarity to the seen concepts,
    cut the ranking into levels; write them to `spec.out` (refused when it exists, unless `overwrite`)."""
    from lifelong.concepts import ConceptError, build_levels, count_images, levels_csv, read_counts
    from lifelong.core.files import atomic_write_bytes

    started = time.perf_counter()
    out = Path(spec.out) if spec.out is not None else None
    if out is not None and out.exists() and not spec.overwrite:
        raise ResumeRefused(f"{out} exists; pass --overwrite to replace it, or --out to write elsewhere")
    if spec.counts is not None and spec.images is not None:
        raise ConceptError("give image counts either as --counts FILE or as --images DIR, not both")
    image_counts, ignored = None, []
    images = Path(spec.images) if spec.images is not None else None
    if spec.counts is not None:
        image_counts = read_counts(spec.counts)
    elif images is not None:
        image_counts, ignored = count_images(images)
        _check_release(images, image_counts, spec.images_release, spec.wordnet)
    level_spec = spec.level_spec(image_counts)
    levels = build_levels(level_spec, wordnet=spec.wordnet)
    if out is not None:
        atomic_write_bytes(out, levels_csv(levels).encode())
    seconds = time.perf_counter() - started
    return CogLevelsResult(levels, rule_variants(level_spec, spec.wordnet), ignored, images, out, seconds)


def rule_variants(spec: Any, wordnet: str | Path | None) -> list[RuleVariant]:
    """The eligible concepts under every (seen rule, leaf rule), `spec`'s (a LevelSpec) other settings unchanged."""
    from lifelong.concepts.levels import LEAF_RULES, SEEN_RULES, filter_concepts, filter_rules

    chosen = filter_rules(spec)
    variants = []
    for seen_rule in SEEN_RULES:
        for leaf_rule in LEAF_RULES:
            found = filter_concepts(replace(spec, seen_rule=seen_rule, leaf_rule=leaf_rule), wordnet)
            after = next((step.left for step in found.steps if step.name == "seen-ancestors"), None)
            variants.append(
                RuleVariant(seen_rule, leaf_rule, after, len(found.eligible), (seen_rule, leaf_rule) == chosen)
            )
    return variants


def _check_release(images: Path, counts: dict[str, int], release: str, wordnet: str | Path | None) -> None:
    """Refuse counting a folder that looks like the winter 2021 release as fall 2011 (CLI words)."""
    from lifelong.concepts.corpus import person_subtree
    from lifelong.concepts.counts import RELEASES, looks_like_winter21
    from lifelong.core.suggest import did_you_mean

    if release not in RELEASES:
        hint = did_you_mean(release, RELEASES)
        raise UsageError(f"unknown --images-release {release!r}{hint}; choose fall2011 or winter21")
    if release == "winter21":
        note(
            "counting the winter 2021 release: the synsets it dropped count 0 images, so the count filter removes "
            "them (the paper counted fall 2011)"
        )
        return
    reason = looks_like_winter21(images, counts, person_subtree(wordnet))
    if reason:
        raise UsageError(
            f"--images {images} looks like ImageNet-21K's winter 2021 release ({reason}); counted as fall 2011, the "
            "synsets winter 2021 dropped would count 0 images and the count filter would remove them. Count a fall "
            "2011 copy or its archive listing (docs/cog.md, 'Image counts'), or pass --images-release winter21 if "
            "that is what you mean"
        )


def check_level_options(
    similarity: str, order: str, relation: str | None, seen_rule: str | None = None, leaf_rule: str | None = None
) -> None:
    """--similarity, --order, --relation and the rules checked in CLI words, with "did you mean" for a mistyped
    name."""
    from lifelong.concepts.levels import FILTERS, LEAF_RULES, ORDERS, RELATIONS, SEEN_RULES
    from lifelong.concepts.similarity import SET_SIMILARITIES
    from lifelong.core.suggest import did_you_mean

    def check(flag: str, value: str, choices) -> None:
        if value not in choices:
            listed = ", ".join(choices)
            raise UsageError(f"unknown {flag} {value!r}{did_you_mean(value, choices)}; choose among {listed}")

    check("--similarity", similarity, sorted(SET_SIMILARITIES))
    if relation is not None:
        check("--relation", relation, RELATIONS)
    if seen_rule is not None:
        check("--seen-rule", seen_rule, SEEN_RULES)
    if leaf_rule is not None:
        check("--leaf-rule", leaf_rule, list(LEAF_RULES))
    if order not in ORDERS:
        if "," not in order:
            check("--order", order, [*ORDERS, *FILTERS])
        for name in order.split(","):
            check("--order filter", name.strip(), list(FILTERS))
