"""`lifelong data`: inspect a source, a stream's data status, fetch real datasets."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from lifelong.cli.common import DATA_ROOT_HELP
from lifelong.commands.data_fetch import fetch_command
from lifelong.commands.terminal import console, fail, note

data_app = typer.Typer(help="Look at data sources and fetch real datasets.", no_args_is_help=True)
data_app.command("fetch")(fetch_command)


@data_app.command("inspect")
def data_inspect_command(
    source: str = typer.Argument(..., help="builtin:NAME, idx:DIR, fashion-mnist, folder:DIR or csv:FILE."),
    skip_corrupt: bool = typer.Option(False, "--skip-corrupt", help="Skip (and count) corrupt images."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Load a data source and describe it: items, classes, sizes, channels."""
    from lifelong.data.sources import describe, load_source

    try:
        info = describe(load_source(source, skip_corrupt=skip_corrupt))
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    if as_json:
        typer.echo(json.dumps(info, indent=2, default=str))
        return
    console.print(escape(source), soft_wrap=True)
    _print_fields(info)


def _plain(value: object) -> str:
    """A value in plain words: `-` for None, lists comma-separated, no Python reprs."""
    if value is None:
        return "-"
    if isinstance(value, list | tuple):
        return ", ".join(_plain(v) for v in value) or "-"
    if isinstance(value, dict):
        items = "; ".join(f"{k}={_plain(v)}" for k, v in value.items())
        return f"({items})" if items else "-"
    return str(value)


def _print_fields(info: dict, prefix: str = "") -> None:
    """`key: value` lines, nested dicts as `key.sub`, wrapped between words only (paths stay whole)."""
    import textwrap

    width = max(console.width, 40)
    for key, value in info.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value and name in ("notes", "image_size"):  # notes.source, ...
            _print_fields(value, f"{name}.")
            continue
        if isinstance(value, dict) and value:  # per_class: A=100, B=100
            shown = ", ".join(f"{k}={_plain(v)}" for k, v in value.items())
        else:
            shown = _plain(value)
        text = textwrap.fill(
            f"{name}: {shown}",
            width - 2,
            initial_indent="  ",
            subsequent_indent="      ",
            break_long_words=False,
            break_on_hyphens=False,
        )
        console.print(escape(text), soft_wrap=True)


@data_app.command("status")
def data_status_command(
    stream: str = typer.Option("nevis-full", "--stream", help="A stream name, e.g. nevis-full or nevis-short."),
    data_root: Path = typer.Option(None, "--data-root", help=DATA_ROOT_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Which tasks of a stream have data, which are missing, and what to provide for each."""
    from lifelong.core.suggest import did_you_mean
    from lifelong.data.roots import DATA_ENV, resolve_data_root
    from lifelong.suites.nevis import Variant, data_status, parse_variant

    try:
        parse_variant(stream)
    except ValueError:
        names = [f"nevis-{v.value}" for v in Variant]
        raise fail(
            f"data status covers the Nevis'22 streams, not {stream!r}{did_you_mean(stream, names)}: "
            f"{', '.join(names)} (offline streams such as mini need no data)"
        ) from None
    try:
        rows = data_status(stream, data_root)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    if as_json:
        typer.echo(json.dumps(rows, indent=2, default=str))
        return
    root = resolve_data_root(data_root)
    console.print(f"data root: {escape(str(root))}", soft_wrap=True)
    if not root.is_dir():
        note(f"data root {root} does not exist; set --data-root or ${DATA_ENV}")
    available = sum(r["available"] for r in rows)
    table = Table(title=f"{stream}: {available}/{len(rows)} tasks have data", title_justify="left")
    table.add_column("task", no_wrap=True)
    table.add_column("year", no_wrap=True)
    table.add_column("data", no_wrap=True)
    table.add_column("dataset")
    for r in rows:
        state = "yes" if r["available"] else "[red]missing[/]"
        table.add_row(escape(r["uid"]), str(r["year"]), state, escape(r["published"]))
    console.print(table)
    if available:  # paths on lines of their own, never folded, so that they can be copied
        console.print("Found (task: source):")
        for r in rows:
            if r["available"]:
                console.print(f"  {escape(r['uid'])}: {escape(str(r['source']))}", soft_wrap=True)
    if available < len(rows):
        console.print("Missing (task: the folder to provide):")
        for r in rows:
            if not r["available"]:
                console.print(f"  {escape(r['uid'])}: {escape(str(r['expected']))}", soft_wrap=True)
        console.print("Each missing folder may hold any of these layouts:")
        for layout in rows[0]["layouts"]:
            console.print(f"  - {escape(layout)}")
        fetchable = sorted({r["name"] for r in rows if not r["available"] and r["fetch"]})
        if fetchable:
            console.print(f"lifelong data fetch gets {len(fetchable)} of the missing datasets (--dry-run first):")
            console.print(f"  lifelong data fetch {' '.join(fetchable)}", soft_wrap=True)
