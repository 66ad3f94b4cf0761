"""What `lifelong cog levels` prints: the filter chain, the levels' ranks and the rule variants of a build; a levels
file placed in our ranking (tables, or one JSON object)."""

from __future__ import annotations

import json

from rich.markup import escape
from rich.table import Table

from lifelong.commands.cog_compare import CogCompareResult
from lifelong.commands.cog_levels import CogLevelsResult, RuleVariant
from lifelong.commands.terminal import console, note

SHOWN = 20  # rows of each list printed before "... and N more" (the JSON has them all)


def print_levels(result: CogLevelsResult) -> None:
    """The concepts left after each filter, the levels by similarity, the rule variants, notes, where it went."""
    levels = result.levels
    table = Table(title="ImageNet-CoG: concepts left after each filter")
    for column, justify in (("step", "right"), ("filter", "left"), ("what it does", "left")):
        table.add_column(column, justify=justify, overflow="fold")
    table.add_column("left", justify="right", overflow="fold")
    table.add_column("removed", justify="right", overflow="fold")
    for number, step in enumerate(levels.steps):
        removed = "skipped" if step.skipped else str(step.removed)
        table.add_row(str(number), step.name, escape(step.skipped or step.description), str(step.left), removed)
    console.print(table)

    ranks = Table(title=f"{len(levels.bounds)} levels by {levels.similarity} similarity ({levels.eligible} eligible)")
    for column in ("level", "concepts", "ranks", "most similar", "least similar"):
        ranks.add_column(column, justify="right", overflow="fold")
    for number, (start, stop) in enumerate(levels.bounds, start=1):
        top, bottom = levels.ranking[start]["similarity"], levels.ranking[stop - 1]["similarity"]
        ranks.add_row(str(number), str(stop - start), f"{start + 1}-{stop}", f"{top:.4f}", f"{bottom:.4f}")
    console.print(ranks)
    print_rule_variants(result.variants)
    for text in levels.notes:
        note(text)
    if result.ignored:
        listed = ", ".join(result.ignored[:5])
        note(f"{len(result.ignored)} entries of {result.images} are not wnid folders and were not counted: {listed}")
    if result.out is not None:
        where = escape(str(result.out))
        console.print(f"wrote {len(levels.rows)} concepts in {len(levels.bounds)} levels to {where}", soft_wrap=True)
    console.print(f"time: {result.seconds:.1f} s")


def print_rule_variants(variants: list[RuleVariant]) -> None:
    """A table: concepts left after the seen-ancestors and leaves filters under every (seen rule, leaf rule), the
    chosen one marked."""
    table = Table(title="eligible concepts under each rule variant (this order, counts and exclusions)")
    for column in ("seen rule", "leaf rule", "after seen-ancestors", "eligible", ""):
        table.add_column(column, overflow="fold")
    for row in variants:
        after = "-" if row.after_seen_ancestors is None else str(row.after_seen_ancestors)
        table.add_row(row.seen_rule, row.leaf_rule, after, str(row.eligible), "chosen" if row.chosen else "")
    console.print(table)


def print_comparison(result: CogCompareResult, *, as_json: bool = False) -> None:
    """The comparison as tables (`as_json`: as one JSON object on stdout)."""
    comparison = result.comparison
    if as_json:
        print(json.dumps(comparison.to_json(), indent=1))
        return
    title = f"{escape(result.file.name)} in our ranking ({comparison.similarity} similarity to the seen set)"
    table = Table(title=title)
    for column in ("level", "concepts", "min similarity", "max similarity"):
        table.add_column(column, justify="right", overflow="fold")
    for row in comparison.levels:
        table.add_row(
            str(row["level"]), str(row["count"]), _similarity(row["min_similarity"]), _similarity(row["max_similarity"])
        )
    console.print(table)
    verdict = "contiguous" if comparison.contiguous else "NOT contiguous"
    console.print(
        f"levels: {verdict} bands of our ranking ({len(comparison.out_of_band)} concept(s) out of band)", soft_wrap=True
    )
    if comparison.out_of_band:
        _print_out_of_band(comparison.out_of_band)
    if comparison.filtered:
        table = Table(title=f"{len(comparison.filtered)} concept(s) our filters would remove (image counts aside)")
        for column in ("concept", "wnid", "level", "filter", "why"):
            table.add_column(column, overflow="fold")
        for row in comparison.filtered[:SHOWN]:
            table.add_row(escape(row["name"]), row["wnid"], str(row["level"]), row["filter"], escape(row["why"]))
        console.print(table)
        _more(comparison.filtered, "removed concepts")
    else:
        console.print("filters: none of the file's concepts would be removed by our filters (image counts aside)")
    if comparison.ancestor_pairs:
        _print_ancestor_pairs(comparison.ancestor_pairs)
    else:
        console.print("ancestors: no concept of the file is an ancestor of another")
    for text in comparison.notes:
        note(text)
    if comparison.not_in_corpus:
        note(f"not in our corpus: {', '.join(comparison.not_in_corpus[:SHOWN])}")


def _print_out_of_band(rows: list[dict]) -> None:
    table = Table(title="out of band: similarity outside the band the level needs")
    for column in ("concept", "wnid", "level", "similarity", "band", "belongs"):
        table.add_column(column, overflow="fold")
    for row in rows[:SHOWN]:
        low, high = row["band"]
        band = f"{low:.4f}-{high:.4f}"
        where = "a higher level" if row["belongs"] == "higher" else "a lower level"
        table.add_row(escape(row["name"]), row["wnid"], str(row["level"]), f"{row['similarity']:.4f}", band, where)
    console.print(table)
    _more(rows, "out-of-band concepts")


def _print_ancestor_pairs(pairs: list[dict]) -> None:
    table = Table(title=f"{len(pairs)} pair(s) where one concept is an ancestor of another")
    for column in ("ancestor", "its level", "descendant", "its level"):
        table.add_column(column, overflow="fold")
    for pair in pairs[:SHOWN]:
        table.add_row(
            escape(f"{pair['ancestor_name']} ({pair['ancestor']})"),
            str(pair["ancestor_level"]),
            escape(f"{pair['descendant_name']} ({pair['descendant']})"),
            str(pair["descendant_level"]),
        )
    console.print(table)
    _more(pairs, "pairs")


def _similarity(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _more(rows: list, what: str) -> None:
    if len(rows) > SHOWN:
        console.print(f"... and {len(rows) - SHOWN} more {what} (all of them with --json)")
