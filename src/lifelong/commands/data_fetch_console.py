"""What `lifelong data fetch` prints: the manifest's datasets, a dry run's plan, each dataset fetched."""

from __future__ import annotations

from rich import box
from rich.markup import escape
from rich.table import Table

from lifelong.commands.data_fetch import DataFetchPlan, DataFetchResult, DataListResult, no_manual_step
from lifelong.commands.terminal import console, counted
from lifelong.data.fetch import DatasetEntry
from lifelong.data.fetch.budgets import format_size
from lifelong.data.fetch.verify import Verified

UNRECORDED = ("unknown", "")  # licence names of the manifest's entries that record none


def licence_text(entry: DatasetEntry) -> str:
    """A licence as the list shows it: its name and flags, or `not recorded` when the manifest has none."""
    licence = entry.licence
    name = "not recorded" if licence.name.strip().lower() in UNRECORDED else licence.name
    flags = " (accept)" if licence.requires_acceptance else ""
    return name + flags + (" (non-commercial)" if licence.non_commercial else "")


def stream_families(streams: tuple[str, ...]) -> str:
    """A dataset's streams in a few words: each family once (`nevis` for every nevis-* stream), `-` for none."""
    return ", ".join(dict.fromkeys(s.split("-", 1)[0] if s.startswith("nevis-") else s for s in streams)) or "-"


def print_datasets(result: DataListResult) -> None:
    """A table of the datasets (access, licence, size, the streams' families) that fits 80 columns, then each
    stream with its count of datasets, the licences the manifest does not record, and how many fetch alone."""
    entries, streams, wanted = result.entries, result.streams, result.wanted
    title = f"{result.stream}: {len(wanted)} datasets" if result.stream else f"{len(wanted)} datasets in the manifest"
    console.print(escape(title), soft_wrap=True, highlight=False)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for column in ("dataset", "access", "licence", "size", "streams"):
        table.add_column(column, no_wrap=column in ("dataset", "access", "size"), justify="right" * (column == "size"))
    for name in wanted:
        if name not in entries:
            table.add_row(escape(name), "-", "[red]not in the manifest[/]", "-", "")
            continue
        e = entries[name]
        size = format_size(e.download_bytes) if e.download_bytes is not None else "?"
        table.add_row(escape(name), e.access, escape(licence_text(e)), size, escape(stream_families(streams[name])))
    console.print(table)
    listed = result.listed
    counts: dict[str, int] = {}
    for e in listed:
        for stream in streams[e.name]:
            counts[stream] = counts.get(stream, 0) + 1
    if counts:
        read_by = ", ".join(f"{stream} {n}" for stream, n in sorted(counts.items()))
        _say(f"datasets per stream: {read_by} (a stream's own list: --list --stream NAME)")
    unrecorded = [e for e in listed if licence_text(e).startswith("not recorded")]
    if unrecorded:
        _say(
            f"{counted(len(unrecorded), 'licence')} not recorded in the manifest: check each dataset's terms on its "
            "page before use (--list --json gives each licence's and homepage's address)"
        )
    easy = sum(no_manual_step(e) for e in listed)
    _say(
        f"{easy} of {len(wanted)} fetch with no manual step (lifelong data fetch NAME); {len(listed) - easy} need "
        f"one (Kaggle token, licence, manual download: --dry-run says which); {len(wanted) - len(listed)} not in "
        "the manifest"
    )


def _say(text: str) -> None:
    """A line of plain words, wrapped between words at the console's width."""
    console.print(escape(text), highlight=False)


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
    """`dataset: installed (folder; checked by sha256)`, one line per dataset fetched: how its files were checked,
    which had no checksum to check, or that nothing was downloaded (up to date)."""
    for outcome in result.outcomes:
        line = f"{outcome.state} ({outcome.path}; {checked(outcome.checks)})"
        console.print(f"{escape(outcome.name)}: {escape(line)}", soft_wrap=True)


def checked(checks: tuple[Verified, ...]) -> str:
    """How a fetch's files were checked, in words: `checked by md5`, `2 files not checked: no published checksum
    (their sha256 recorded)`, or, with no file fetched, that the folder is a finished fetch of the same files."""
    if not checks:
        return "nothing downloaded: the folder is a finished fetch of the same files"
    unchecked = [c for c in checks if c.check.startswith("unverified")]
    by = ", ".join(sorted({c.check for c in checks if c not in unchecked}))
    parts = [f"checked by {by}"] if by else []
    if unchecked:
        parts.append(f"{counted(len(unchecked), 'file')} not checked: no published checksum (sha256 recorded)")
    return "; ".join(parts)


def print_licence(entry: DatasetEntry) -> None:
    """A licence's title, name, terms and address, before the command asks whether to accept it."""
    licence = entry.licence
    console.print(f"{escape(entry.title)} ({licence.name}): {escape(licence.terms)} {escape(licence.url)}")


__all__ = ["print_datasets", "print_fetched", "print_licence", "print_plan"]
