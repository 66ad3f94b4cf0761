"""`lifelong cog levels` reports beside the levels: a levels file placed in our ranking (`--compare FILE`, tables or
one JSON object), and the eligible concepts under each variant of the filter rules."""

from __future__ import annotations

import json
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from lifelong.commands.terminal import console, note

SHOWN = 20  # rows of each list printed before "... and N more" (the JSON has them all)


def run_comparison(file: Path, spec, wordnet: Path | None, as_json: bool) -> None:
    """Read `file` (our CSV or the authors' pkl), compare it under `spec` and print the result."""
    from lifelong.concepts.compare_levels import compare_levels
    from lifelong.concepts.level_files import read_levels_file

    comparison = compare_levels(read_levels_file(file), spec, wordnet=wordnet)
    if as_json:
        print(json.dumps(comparison.to_json(), indent=1))
        return
    _print(file, comparison)


def _similarity(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _more(rows: list, what: str) -> None:
    if len(rows) > SHOWN:
        console.print(f"... and {len(rows) - SHOWN} more {what} (all of them with --json)")


def _print(file: Path, comparison) -> None:
    table = Table(title=f"{escape(file.name)} in our ranking ({comparison.similarity} similarity to the seen set)")
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
        table = Table(title="out of band: similarity outside the band the level needs")
        for column in ("concept", "wnid", "level", "similarity", "band", "belongs"):
            table.add_column(column, overflow="fold")
        for row in comparison.out_of_band[:SHOWN]:
            low, high = row["band"]
            band = f"{low:.4f}-{high:.4f}"
            where = "a higher level" if row["belongs"] == "higher" else "a lower level"
            table.add_row(
                escape(row["name"]), row["wnid"], str(row["level"]), f"{row['similarity']:.4f}", band, where
            )
        console.print(table)
        _more(comparison.out_of_band, "out-of-band concepts")
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
        table = Table(title=f"{len(comparison.ancestor_pairs)} pair(s) where one concept is an ancestor of another")
        for column in ("ancestor", "its level", "descendant", "its level"):
            table.add_column(column, overflow="fold")
        for pair in comparison.ancestor_pairs[:SHOWN]:
            table.add_row(
                escape(f"{pair['ancestor_name']} ({pair['ancestor']})"),
                str(pair["ancestor_level"]),
                escape(f"{pair['descendant_name']} ({pair['descendant']})"),
                str(pair["descendant_level"]),
            )
        console.print(table)
        _more(comparison.ancestor_pairs, "pairs")
    else:
        console.print("ancestors: no concept of the file is an ancestor of another")
    for text in comparison.notes:
        note(text)
    if comparison.not_in_corpus:
        note(f"not in our corpus: {', '.join(comparison.not_in_corpus[:SHOWN])}")


def print_rule_variants(spec, wordnet: Path | None) -> None:
    """A table: concepts left after the seen-ancestors and leaves filters under every (seen rule, leaf rule), the
    chosen one marked, with `spec`'s other settings (order, counts, exclusions) unchanged."""
    from dataclasses import replace

    from lifelong.concepts.levels import LEAF_RULES, SEEN_RULES, filter_concepts, filter_rules

    chosen = filter_rules(spec)
    table = Table(title="eligible concepts under each rule variant (this order, counts and exclusions)")
    for column in ("seen rule", "leaf rule", "after seen-ancestors", "eligible", ""):
        table.add_column(column, overflow="fold")
    for seen_rule in SEEN_RULES:
        for leaf_rule in LEAF_RULES:
            found = filter_concepts(replace(spec, seen_rule=seen_rule, leaf_rule=leaf_rule), wordnet)
            after = next((step.left for step in found.steps if step.name == "seen-ancestors"), None)
            mark = "chosen" if (seen_rule, leaf_rule) == chosen else ""
            table.add_row(seen_rule, leaf_rule, "-" if after is None else str(after), str(len(found.eligible)), mark)
    console.print(table)
