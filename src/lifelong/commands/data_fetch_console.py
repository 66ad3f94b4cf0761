"""What `lifelong data fetch` prints: the manifest's datasets, a dry run's plan, each dataset fetched."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from lifelong.commands.data_fetch import DataFetchPlan, DataFetchResult, DataListResult, no_manual_step
from lifelong.commands.terminal import console
from lifelong.data.fetch import DatasetEntry
from lifelong.data.fetch.budgets import format_size


def print_datasets(result: DataListResult) -> None:
    """A table of the datasets (access, converter, licence, size, streams) and how many fetch with no manual step."""
    entries, streams, wanted = result.entries, result.streams, result.wanted
    title = f"{result.stream}: {len(wanted)} datasets" if result.stream else f"{len(wanted)} datasets in the manifest"
    table = Table(title=title, title_justify="left")
    for column in ("dataset", "access", "converter", "licence", "size", "streams"):
        table.add_column(column, no_wrap=column in ("dataset", "access"))
    for name in wanted:
        if name not in entries:
            table.add_row(escape(name), "-", "-", "[red]not in the manifest[/]", "-", "")
            continue
        e = entries[name]
        flags = " (accept)" if e.licence.requires_acceptance else ""
        flags += " (non-commercial)" if e.licence.non_commercial else ""
        size = format_size(e.download_bytes) if e.download_bytes is not None else "?"
        shown = ", ".join(streams[name][:3]) + (" ..." if len(streams[name]) > 3 else "")
        table.add_row(escape(name), e.access, e.converter, escape(e.licence.name + flags), size, escape(shown))
    console.print(table)
    listed = result.listed
    easy = sum(no_manual_step(e) for e in listed)
    console.print(
        f"{easy} of {len(wanted)} fetch with no manual step (lifelong data fetch NAME); {len(listed) - easy} need "
        f"one (Kaggle token, licence, manual download: --dry-run says which); {len(wanted) - len(listed)} not in "
        "the manifest"
    )


def print_plan(plan: DataFetchPlan) -> None:
    """The dry run's table, the bytes to download beside the free disk, and the manual steps."""
    table = Table(title="dry run: nothing is downloaded or written", title_justify="left")
    for column in ("dataset", "access", "to do", "download", "disk needed (est.)"):
        table.add_column(column)
    for row in plan.rows:
        table.add_row(
            escape(row.dataset), row.access, row.todo, format_size(row.download), format_size(row.disk_needed)
        )
    console.print(table)
    console.print(
        f"to download: {format_size(plan.download_bytes)}{' + unknown sizes' if plan.unknown_sizes else ''}; "
        f"free at {plan.free_at}: {format_size(plan.free_bytes)}"
    )
    console.print(
        "disk needed counts the downloads still to do, the unpacked copy and the converted folder (each the "
        "manifest's unpacked_size, else the archives' size); the unpack budget bounds it: docs/security.md"
    )
    for step in plan.steps:
        console.print(f"  - {escape(step)}", soft_wrap=True)


def print_fetched(result: DataFetchResult) -> None:
    """`dataset: installed (folder; checked by sha256)`, one line per dataset fetched."""
    for outcome in result.outcomes:
        checks = ", ".join(sorted({c.check for c in outcome.checks})) or "-"
        line = f"{outcome.state} ({outcome.path}; checked by {checks})"
        console.print(f"{escape(outcome.name)}: {escape(line)}", soft_wrap=True)


def print_licence(entry: DatasetEntry) -> None:
    """A licence's title, name, terms and address, before the command asks whether to accept it."""
    licence = entry.licence
    console.print(f"{escape(entry.title)} ({licence.name}): {escape(licence.terms)} {escape(licence.url)}")


__all__ = ["print_datasets", "print_fetched", "print_licence", "print_plan"]
