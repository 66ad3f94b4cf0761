"""`lifelong cog ...`: ImageNet-CoG's concept levels (unseen concepts ranked by similarity to the seen ones)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from lifelong.commands.terminal import console, error_console, fail

cog_app = typer.Typer(help="ImageNet-CoG: concept generalization levels built from WordNet.", no_args_is_help=True)

ORDER_HELP = (
    "Filter order: 'paper' (main text: seen, seen-ancestors, person, manual, count, leaves), 'supplement' "
    "(seen, count, person, seen-ancestors, leaves, manual; parent rule) or a comma-separated list of those filters."
)


def _note(text: str) -> None:
    error_console.print(f"[yellow]note:[/] {escape(text)}")


@cog_app.command("levels")
def levels_command(
    out: Annotated[Path, typer.Option("--out", metavar="FILE.csv", help="CSV to write: wnid,name,similarity,level.")],
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
    similarity: Annotated[str, typer.Option("--similarity", metavar="lin|wup|jcn", help="Similarity measure.")] = "lin",
    levels: Annotated[int, typer.Option("--levels", metavar="N", help="Number of levels.")] = 5,
    per_level: Annotated[
        int | None,
        typer.Option("--per-level", metavar="N", help="Concepts per level (default: 1000 if enough, else even)."),
    ] = None,
    order: Annotated[str, typer.Option("--order", metavar="ORDER", help=ORDER_HELP)] = "paper",
    relation: Annotated[
        str | None,
        typer.Option(
            "--relation", metavar="ancestor|parent", help="Rule of seen-ancestors and leaves (default: the order's)."
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
) -> None:
    """Build ImageNet-CoG levels: filter the candidates, rank by similarity to the seen concepts, cut into levels."""
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
        if counts is not None and images is not None:
            raise ConceptError("give image counts either as --counts FILE or as --images DIR, not both")
        image_counts, ignored = None, []
        if counts is not None:
            image_counts = read_counts(counts)
        elif images is not None:
            image_counts, ignored = count_images(images)
        spec = LevelSpec(
            seen=read_wnids(seen) if seen else None,
            candidates=read_wnids(candidates) if candidates else None,
            exclusions=read_wnids(exclusions) if exclusions else None,
            counts=image_counts,
            min_images=min_images,
            order=order,
            relation=relation,
            similarity=similarity,
            levels=levels,
            per_level=per_level,
        )
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
    for note in result.notes:
        _note(note)
    if ignored:
        _note(f"{len(ignored)} entries of {images} are not wnid folders and were not counted: {', '.join(ignored[:5])}")
    console.print(f"wrote {len(result.rows)} concepts in {len(result.bounds)} levels to {escape(str(out))}")
    console.print(f"time: {elapsed:.1f} s")
