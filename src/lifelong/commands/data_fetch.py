"""`lifelong data fetch`: get real datasets into the data root, verified, resumable, converted (on request only).

The datasets, their artefacts and licences are the manifest's (lifelong.data.fetch); this module picks the
datasets a command names (by name or by stream), asks for licences, shows progress and reports.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from lifelong.commands.terminal import console, fail, note
from lifelong.data.fetch import (
    DatasetEntry,
    DownloadSettings,
    FetchRequest,
    fetch,
    load_manifest,
)
from lifelong.data.fetch.budgets import UnpackLimit, format_size, parse_duration, parse_size

NEVIS_PREFIX = "nevis-"


def nevis_streams() -> dict[str, set[str]]:
    """Dataset name -> the Nevis'22 streams whose tasks read it (from the task tables)."""
    from lifelong.suites.nevis import Variant, variant_tasks

    streams: dict[str, set[str]] = {}
    for variant in Variant:
        for row in variant_tasks(variant):
            streams.setdefault(row.name, set()).add(f"{NEVIS_PREFIX}{variant.value}")
    return streams


def streams_of(entries: dict[str, DatasetEntry]) -> dict[str, tuple[str, ...]]:
    """Each dataset's streams: those its manifest entry names plus the Nevis'22 streams that read it."""
    nevis = nevis_streams()
    return {name: tuple(sorted(set(e.streams) | nevis.get(name, set()))) for name, e in entries.items()}


def select(entries: dict[str, DatasetEntry], names: list[str], stream: str | None) -> list[DatasetEntry]:
    """The datasets named, or those a stream reads; a name not in the manifest is an error with the closest one."""
    from lifelong.core.suggest import did_you_mean

    chosen: list[str] = []
    if stream:
        by_stream = streams_of(entries)
        chosen = [n for n, s in by_stream.items() if stream in s]
        if not chosen:
            known = sorted({s for v in by_stream.values() for s in v})
            raise fail(f"no dataset of the manifest is read by stream {stream!r}{did_you_mean(stream, known)}")
        if stream.startswith(NEVIS_PREFIX):
            missing = sorted(nevis_streams_names(stream) - set(entries))
            if missing:
                note(f"{stream}: {len(missing)} of its datasets are not in the manifest: {', '.join(missing)}")
    for name in names:
        if name not in entries:
            raise fail(f"unknown dataset {name!r}{did_you_mean(name, entries)}; lifelong data fetch --list shows them")
        chosen.append(name)
    if not chosen:
        raise fail("name the datasets to fetch (lifelong data fetch NAME...), or --stream S, or --list")
    return [entries[n] for n in dict.fromkeys(chosen)]


def nevis_streams_names(stream: str) -> set[str]:
    from lifelong.suites.nevis import variant_tasks

    return {row.name for row in variant_tasks(stream)}


def no_manual_step(entry: DatasetEntry) -> bool:
    """Fetched by `lifelong data fetch NAME` alone: a download (plain or Google Drive), no licence to accept."""
    return entry.access in ("auto", "gdrive") and not entry.licence.requires_acceptance


def list_datasets(entries: dict[str, DatasetEntry], as_json: bool, stream: str | None = None) -> None:
    """The manifest's datasets (those a stream reads with --stream, the ones the manifest lacks included)."""
    streams = streams_of(entries)
    names = sorted(entries)
    wanted = names
    if stream:
        wanted = sorted(nevis_streams_names(stream)) if stream.startswith(NEVIS_PREFIX) else []
        wanted = sorted(set(wanted) | {n for n in names if stream in streams[n]})
        if not wanted:
            raise fail(f"no dataset is read by stream {stream!r}")
    if as_json:
        typer.echo(json.dumps([entries[n].as_json(streams[n]) for n in wanted if n in entries], indent=2))
        return
    title = f"{stream}: {len(wanted)} datasets" if stream else f"{len(wanted)} datasets in the manifest"
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
    listed = [entries[n] for n in wanted if n in entries]
    easy = sum(no_manual_step(e) for e in listed)
    console.print(
        f"{easy} of {len(wanted)} fetch with no manual step (lifelong data fetch NAME); {len(listed) - easy} need "
        f"one (Kaggle token, licence, manual download: --dry-run says which); {len(wanted) - len(listed)} not in "
        "the manifest"
    )


def dry_run(requests: list[FetchRequest], limit: UnpackLimit) -> None:
    """What a fetch would do: bytes to download, disk needed (the installer's estimate) and free, manual steps."""
    from lifelong.data.fetch.install import disk_needed, is_up_to_date, locate_in

    table = Table(title="dry run: nothing is downloaded or written", title_justify="left")
    for column in ("dataset", "access", "to do", "download", "disk needed (est.)"):
        table.add_column(column)
    total, unknown = 0, False
    steps = []
    for r in requests:
        e = r.entry
        if is_up_to_date(r) and not r.overwrite:
            table.add_row(escape(e.name), e.access, "up to date", "0 B", "0 B")
            continue
        pending = [
            a
            for a in e.artefacts
            if not (r.downloads / a.file).is_file()
            and not (r.from_dir is not None and locate_in(r.from_dir, a, e.name) is not None)
        ]
        size = None if any(a.size is None for a in pending) else sum(a.size or 0 for a in pending)
        unknown |= size is None
        total += size or 0
        todo = "verify + convert" if not pending else ("download + convert" if e.access != "manual" else "manual")
        needed = None if e.download_bytes is None and e.unpacked_size is None else disk_needed(r, limit)
        table.add_row(escape(e.name), e.access, todo, format_size(size), format_size(needed))
        if e.access == "manual" and pending:
            steps.append(f"{e.name}: {e.manual}")
        if e.licence.requires_acceptance and not r.licence_accepted:
            steps.append(f"{e.name}: needs --accept-licence {e.name} ({e.licence.name}: {e.licence.terms})")
    console.print(table)
    root = requests[0].root
    existing = next(p for p in (root, *root.parents) if p.exists())
    free = shutil.disk_usage(existing).free
    console.print(
        f"to download: {format_size(total)}{' + unknown sizes' if unknown else ''}; "
        f"free at {existing}: {format_size(free)}"
    )
    console.print(
        "disk needed counts the downloads still to do, the unpacked copy and the converted folder (each the "
        "manifest's unpacked_size, else the archives' size); the unpack budget bounds it: docs/security.md"
    )
    for step in steps:
        console.print(f"  - {escape(step)}", soft_wrap=True)


def accept_licences(entries: list[DatasetEntry], accepted: set[str]) -> set[str]:
    """The datasets whose licence is accepted: named with --accept-licence, or confirmed at a terminal."""
    result = set(accepted)
    for e in entries:
        if e.licence.requires_acceptance and e.name not in result and sys.stdin.isatty():
            console.print(f"{escape(e.title)} ({e.licence.name}): {escape(e.licence.terms)} {escape(e.licence.url)}")
            if typer.confirm(f"Accept the licence of {e.name}?", default=False):
                result.add(e.name)
    return result


def run_fetch(
    requests: list[FetchRequest],
    settings: DownloadSettings,
    jobs: int,
    show_progress: bool,
    limit: UnpackLimit | None = None,
) -> list[tuple[str, str]]:
    """Fetch each request (`jobs` at a time); returns (dataset, outcome or error) rows."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    def one(request: FetchRequest, progress_for: Callable) -> tuple[str, str]:
        try:
            outcome = fetch(request, settings, progress_for, limit, waiting=waiting)
        except (OSError, ValueError) as exc:  # refusals, checksums, downloads, conversions: all name the dataset
            return request.entry.name, f"error: {exc}"
        checks = ", ".join(sorted({c.check for c in outcome.checks})) or "-"
        return request.entry.name, f"{outcome.state} ({outcome.path}; checked by {checks})"

    def waiting(name: str) -> None:
        note(f"{name}: another fetch of it is under way in this data root; waiting for it to finish")

    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn())
    with Progress(*columns, console=console, disable=not show_progress, transient=True) as bar:
        overall = bar.add_task("all files", total=sum(a.size or 0 for r in requests for a in r.entry.artefacts) or None)

        def progress_for(artefact):
            task = bar.add_task(artefact.file, total=artefact.size)

            def advance(done: int, total: int | None) -> None:
                if total is not None:
                    bar.update(task, total=total)
                bar.update(task, advance=done)
                bar.update(overall, advance=done)

            return advance

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            return list(pool.map(lambda r: one(r, progress_for), requests))


def named(dataset: str, message: str) -> str:
    """`dataset: message`, unless the message names the dataset first already."""
    return message if message.startswith(f"{dataset}: ") else f"{dataset}: {message}"


def download_settings(max_download: str | None, min_rate: str | None, deadline: str | None) -> DownloadSettings:
    """The download budgets the options set (docs/security.md); the defaults where an option is not given."""
    changes: dict[str, float] = {}
    if max_download:
        changes["max_bytes_unknown_size"] = parse_size(max_download)
    if min_rate:
        changes["min_rate"] = parse_size(min_rate.lower().removesuffix("/s"))
    if deadline:
        changes["deadline"] = parse_duration(deadline)
    return dataclasses.replace(DownloadSettings(), **changes)


def fetch_command(
    names: list[str] = typer.Argument(None, help="Datasets to fetch (lifelong data fetch --list names them)."),
    stream: str = typer.Option(None, "--stream", help="Fetch every dataset this stream reads, e.g. nevis-short."),
    data_root: Path = typer.Option(
        None, "--data-root", help="Datasets folder (default: $LIFELONG_DATA, else ~/.lifelong/data)."
    ),
    from_dir: Path = typer.Option(
        None, "--from", help="A folder holding the artefacts already: verify and convert, no network."
    ),
    mirror: list[str] = typer.Option(None, "--mirror", help="Base URL tried first for each file: URL/DATASET/FILE."),
    accept: list[str] = typer.Option(
        None, "--accept-licence", help="Accept this dataset's licence (repeat per dataset)."
    ),
    manifest: list[Path] = typer.Option(None, "--manifest", help="A TOML manifest of your own datasets (same schema)."),
    dry_run_flag: bool = typer.Option(
        False, "--dry-run", help="Say what would be downloaded, the disk needed and free, manual steps."
    ),
    jobs: int = typer.Option(2, "--jobs", min=1, help="Datasets fetched at once."),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace a dataset folder that is there (fetched or not)."
    ),
    list_flag: bool = typer.Option(
        False, "--list", help="List the manifest's datasets (with --stream: a stream's) and stop."
    ),
    as_json: bool = typer.Option(False, "--json", help="With --list: print JSON."),
    max_unpacked: str = typer.Option(
        None,
        "--max-unpacked",
        metavar="BUDGET",
        help="Unpack budget per dataset: SIZE (50GB), RATIO of the archives (30x) or both.",
    ),
    max_download: str = typer.Option(
        None,
        "--max-download",
        metavar="SIZE",
        help="Size cap of an artefact the manifest gives no size for (default 100GB).",
    ),
    min_rate: str = typer.Option(
        None,
        "--min-rate",
        metavar="SIZE",
        help="Slowest download kept, per second over 30 s (default 1KB): slower is retried.",
    ),
    deadline: str = typer.Option(
        None, "--deadline", metavar="DURATION", help="Time limit per artefact, all tries (default 24h)."
    ),
) -> None:
    """Download (or take from --from), verify, unpack and convert datasets into the data root. Only on request."""
    from lifelong.data.fetch import ManifestError
    from lifelong.data.fetch.install import STAGING
    from lifelong.data.roots import resolve_data_root

    try:
        entries = load_manifest(manifest or [])
    except ManifestError as exc:
        raise fail(exc) from None
    if list_flag:
        list_datasets(entries, as_json, stream)
        return
    if from_dir is not None and not from_dir.is_dir():
        raise fail(f"--from {from_dir}: not a folder")
    chosen = select(entries, names or [], stream)
    root = resolve_data_root(data_root)
    unknown_accept = sorted(set(accept or []) - set(entries))
    if unknown_accept:
        raise fail(f"--accept-licence names unknown datasets: {', '.join(unknown_accept)}")
    try:
        limit = UnpackLimit.parse(max_unpacked)
        settings = download_settings(max_download, min_rate, deadline)
    except ValueError as exc:
        raise fail(exc) from None
    accepted = set(accept or []) if dry_run_flag else accept_licences(chosen, set(accept or []))
    requests = [FetchRequest(e, root, from_dir, tuple(mirror or []), e.name in accepted, overwrite) for e in chosen]
    if dry_run_flag:
        dry_run(requests, limit)
        return
    rows = run_fetch(requests, settings, jobs, show_progress=sys.stderr.isatty(), limit=limit)
    errors = [named(name, outcome.removeprefix("error: ")) for name, outcome in rows if outcome.startswith("error: ")]
    for name, outcome in rows:
        if not outcome.startswith("error: "):
            console.print(f"{escape(name)}: {escape(outcome)}", soft_wrap=True)
    if errors:
        raise fail(
            f"{len(errors)} of {len(rows)} datasets not fetched; nothing of theirs was installed in {root} (verified "
            f"or resumable downloads stay in {root / STAGING / 'downloads'} for the next try):\n" + "\n".join(errors)
        )
