"""What `lifelong data inspect` and `lifelong data status` print: a source's fields, a stream's data table."""

from __future__ import annotations

import textwrap

from rich.markup import escape
from rich.table import Table

from lifelong.commands.data_api import DataInspectResult, DataStatusResult
from lifelong.commands.terminal import console, note


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


def print_inspect(result: DataInspectResult) -> None:
    """The source, then one `key: value` line per field."""
    console.print(escape(result.source), soft_wrap=True)
    _print_fields(result.info)


def print_status(result: DataStatusResult) -> None:
    """The data root, a table of the stream's tasks (data: yes or missing), where each found task's data is, the
    folder each missing one needs (and its layouts), and the fetch command for those the manifest gets."""
    from lifelong.data.roots import DATA_ENV

    rows, root = result.rows, result.root
    console.print(f"data root: {escape(str(root))}", soft_wrap=True)
    if not root.is_dir():
        note(f"data root {root} does not exist; set --data-root or ${DATA_ENV}")
    available = len(result.available)
    table = Table(title=f"{result.stream}: {available}/{len(rows)} tasks have data", title_justify="left")
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
        for r in result.available:
            console.print(f"  {escape(r['uid'])}: {escape(str(r['source']))}", soft_wrap=True)
    if available < len(rows):
        console.print("Missing (task: the folder to provide):")
        for r in result.missing:
            console.print(f"  {escape(r['uid'])}: {escape(str(r['expected']))}", soft_wrap=True)
        console.print("Each missing folder may hold any of these layouts:")
        for layout in rows[0]["layouts"]:
            console.print(f"  - {escape(layout)}")
        fetchable = result.fetchable
        if fetchable:
            console.print(f"lifelong data fetch gets {len(fetchable)} of the missing datasets (--dry-run first):")
            console.print(f"  lifelong data fetch {' '.join(fetchable)}", soft_wrap=True)


__all__ = ["print_inspect", "print_status"]
