"""`lifelong streams` and `lifelong learners`: what `--stream` and `--learner` accept, and their options."""

from __future__ import annotations

import dataclasses
import json

import typer
from rich.markup import escape
from rich.table import Table

from lifelong.commands.terminal import console


def streams_command(
    name: str = typer.Argument(None, metavar="[NAME]", help="A stream: show its -s options instead."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (every column)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Counts per part and years (no descriptions)."),
) -> None:
    """List the built-in streams with their task counts, or one stream's -s options."""
    from lifelong.commands.listing_api import stream_options, streams

    if name is not None:
        found = stream_options(name)
        if as_json:
            typer.echo(json.dumps(dataclasses.asdict(found), indent=2))
            return
        console.print(f"[bold]{escape(found.name)}[/]: {escape(found.description)}")
        _print_options(found.options, f"lifelong run --stream {name} -s KEY=VALUE")
        return
    rows = streams()
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    title = "streams (train, test: meta-train, meta-test tasks; multi: multi-label)" if verbose else "streams"
    table = Table(title=title, title_justify="left")
    table.add_column("name", no_wrap=True)
    columns = ("tasks", "meta_train", "meta_test", "multi_label", "years") if verbose else ("tasks",)
    headers = {"meta_train": "train", "meta_test": "test", "multi_label": "multi"}
    for column in columns:
        table.add_column(headers.get(column, column), justify="right", no_wrap=True)
    if not verbose:
        table.add_column("description")
    for row in rows:
        years = "-".join(str(y) for y in row["years"] or () if y is not None) or "-"
        cells = [years if c == "years" else str(row[c]) for c in columns]
        table.add_row(row["name"], *cells, *([] if verbose else [escape(row["description"])]))
    console.print(table)
    console.print("One stream's -s options: lifelong streams NAME. More columns: -v or --json.")


def _print_options(rows: list[dict], usage: str) -> None:
    """Options as `NAME: TYPE, default D` lines with their help indented below (whole words at any width)."""
    import textwrap

    console.print(escape(usage))
    if not rows:
        console.print("  (no options)")
        return
    width = max(console.width, 40)
    first_with: dict[str, str] = {}  # a help paragraph shared by several options is printed once
    for row in rows:
        default = "" if row["default"] == "-" else f", default {row['default']}"
        console.print(f"  [bold]{escape(row['name'])}[/]: {escape(row['type'])}{escape(default)}", soft_wrap=True)
        if row["help"] == "-":
            continue
        if row["help"] in first_with:
            console.print(f"      (see {escape(first_with[row['help']])} above)", soft_wrap=True)
            continue
        first_with[row["help"]] = row["name"]
        lines = textwrap.wrap(row["help"], width - 6, break_long_words=False, break_on_hyphens=False)
        console.print("\n".join("      " + escape(line) for line in lines), soft_wrap=True)


def learners_command(
    name: str = typer.Argument(None, metavar="[NAME]", help="A learner: show its -o options instead."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List the learners `lifelong run --learner` accepts, or one learner's -o options."""
    from lifelong.commands.listing_api import learner_options, learners

    if name is not None:
        found = learner_options(name)
        if as_json:
            typer.echo(json.dumps(dataclasses.asdict(found), indent=2))
            return
        _print_options(found.options, f"lifelong run --learner {name} -o KEY=VALUE")
        return
    described = learners()
    if as_json:
        typer.echo(json.dumps([dataclasses.asdict(info) for info in described], indent=2))
        return
    table = Table(title="learners", title_justify="left")
    table.add_column("name", no_wrap=True)
    table.add_column("description")
    for info in described:
        table.add_row(info.name, escape(info.description))
    console.print(table)
    console.print("One learner's -o options: lifelong learners NAME.")
