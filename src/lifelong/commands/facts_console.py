"""What `lifelong facts split` prints: the distance x linkage variants, the balance table and the summary line."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from lifelong.commands.facts_api import FactsSplitResult
from lifelong.commands.terminal import console as default_console
from lifelong.commands.terminal import note


def variants_table(rows: list[dict], chosen) -> str:
    """One line per distance x linkage variant: facts and training images per task, image deviation, the choice."""
    lines = [f"{'distance':<8} {'linkage':<9} {'facts per task':<18} {'training images per task':<28} {'dev':>6}"]
    for row in rows:
        mark = "chosen" if (row["distance"], row["linkage"]) == (chosen.distance, chosen.linkage) else ""
        mark = mark or ("" if row["eligible"] else f"task of {row['smallest_task']} facts")
        facts = "/".join(str(f) for f in row["facts"])
        images = "/".join(str(i) for i in row["images"])
        lines.append(
            f"{row['distance']:<8} {row['linkage']:<9} {facts:<18} {images:<28} {row['image_deviation']:>6.3f}  {mark}"
        )
    return "\n".join(lines)


def print_facts_split(result: FactsSplitResult, console: Console | None = None) -> None:
    """The notes (stderr), then the variants (semantic), the balance table and one summary line."""
    from lifelong.facts.split_choice import CRITERION
    from lifelong.facts.splits import balance_table

    console = console or default_console
    for text in result.notes:
        note(text)
    split = result.split
    if split is None:
        console.print(f"{escape(str(result.out))} already holds a split: nothing to resume (--overwrite redoes it)")
        return
    if "variants" in split.info:
        console.print(escape(variants_table(split.info["variants"], split)), soft_wrap=True)
        console.print(escape(f"chosen by the criterion: {CRITERION} (K = {split.info['k']})"))
    console.print(escape(balance_table(split)))
    how = (
        f"{split.distance} distance, {split.linkage} linkage"
        if result.method == "semantic"
        else f"seed {result.seed}, best of {result.candidates}"
    )
    console.print(
        f"{result.method} split ({how}): {len(result.facts or [])} facts ({result.images} images) in {result.tasks} "
        f"tasks; balance score {result.score:.3f} (the largest relative deviation from the mean of facts and images "
        f"per task, lower is better); wrote {escape(str(result.out))} in {result.seconds:.1f} s"
    )


__all__ = ["print_facts_split", "variants_table"]
