"""`lifelong data fetch` from Python: get real datasets into the data root, verified, resumable, converted (on request
only); list the manifest's datasets; say what a fetch would do (dry run).

The datasets, their artefacts and licences are the manifest's (lifelong.data.fetch); this module picks the
datasets a spec names (by name or by stream), asks for licences through a hook, reports progress and returns what it
did. A fetch stopped by Ctrl-C (or a progress callback raising KeyboardInterrupt) keeps its partial downloads: the
same spec again continues each file where it stopped (HTTP Range).
"""

from __future__ import annotations

import dataclasses
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from lifelong.commands.terminal import fail, note
from lifelong.core.errors import DataError, Interrupted, UsageError
from lifelong.core.progress import Progress
from lifelong.data.fetch import (
    Artefact,
    DatasetEntry,
    DownloadSettings,
    FetchOutcome,
    FetchRequest,
    fetch,
    load_manifest,
)
from lifelong.data.fetch.budgets import UnpackLimit, parse_duration, parse_size

NEVIS_PREFIX = "nevis-"
LicenceHook = Callable[[DatasetEntry], bool]


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


def nevis_streams_names(stream: str) -> set[str]:
    from lifelong.suites.nevis import variant_tasks

    return {row.name for row in variant_tasks(stream)}


def select(entries: dict[str, DatasetEntry], names: Sequence[str], stream: str | None) -> list[DatasetEntry]:
    """The datasets named, or those a stream reads; a name not in the manifest is an error with the closest one."""
    from lifelong.core.suggest import did_you_mean

    chosen: list[str] = []
    if stream:
        by_stream = streams_of(entries)
        chosen = [n for n, s in by_stream.items() if stream in s]
        if not chosen:
            known = sorted({s for v in by_stream.values() for s in v})
            raise UsageError(f"no dataset of the manifest is read by stream {stream!r}{did_you_mean(stream, known)}")
        if stream.startswith(NEVIS_PREFIX):
            missing = sorted(nevis_streams_names(stream) - set(entries))
            if missing:
                note(f"{stream}: {len(missing)} of its datasets are not in the manifest: {', '.join(missing)}")
    for name in names:
        if name not in entries:
            raise UsageError(
                f"unknown dataset {name!r}{did_you_mean(name, entries)}; lifelong data fetch --list shows them"
            )
        chosen.append(name)
    if not chosen:
        raise UsageError("name the datasets to fetch (lifelong data fetch NAME...), or --stream S, or --list")
    return [entries[n] for n in dict.fromkeys(chosen)]


def no_manual_step(entry: DatasetEntry) -> bool:
    """Fetched by `lifelong data fetch NAME` alone: a download (plain or Google Drive), no licence to accept."""
    return entry.access in ("auto", "gdrive") and not entry.licence.requires_acceptance


def _manifest(paths: Sequence[str | Path]) -> dict[str, DatasetEntry]:
    """The built-in manifest plus the user's (`--manifest`); a broken one is a DataError naming it."""
    return load_manifest([Path(p) for p in paths])


@dataclass(frozen=True)
class DataListSpec:
    """`lifelong data fetch --list [--stream S] [--manifest FILE]...`."""

    stream: str | None = None
    manifest: Sequence[str | Path] = ()


@dataclass
class DataListResult:
    """The manifest's datasets (with `stream`: those it reads, in `wanted`, the ones the manifest lacks included)."""

    entries: dict[str, DatasetEntry]
    streams: dict[str, tuple[str, ...]]
    wanted: list[str]
    stream: str | None = None

    @property
    def listed(self) -> list[DatasetEntry]:
        """The wanted datasets the manifest has."""
        return [self.entries[n] for n in self.wanted if n in self.entries]

    def rows(self) -> list[dict]:
        """One JSON document per listed dataset (`--list --json`): name, title, streams, access, licence, ..."""
        return [e.as_json(self.streams[e.name]) for e in self.listed]


def data_list(spec: DataListSpec) -> DataListResult:
    """The manifest's datasets, or those a stream reads."""
    entries = _manifest(spec.manifest)
    streams = streams_of(entries)
    wanted = sorted(entries)
    if spec.stream:
        wanted = sorted(nevis_streams_names(spec.stream)) if spec.stream.startswith(NEVIS_PREFIX) else []
        wanted = sorted(set(wanted) | {n for n in entries if spec.stream in streams[n]})
        if not wanted:
            raise UsageError(f"no dataset is read by stream {spec.stream!r}")
    return DataListResult(entries, streams, wanted, spec.stream)


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


@dataclass(frozen=True)
class DataFetchSpec:
    """`lifelong data fetch NAME... [--stream S] ...`: each field is the option of the same name (`from_dir` is
    --from, `accept_licence` --accept-licence); the budgets are the options' texts ("50GB", "30x", "10KB/s", "2h")."""

    names: Sequence[str] = ()
    stream: str | None = None
    data_root: str | Path | None = None
    from_dir: str | Path | None = None
    mirror: Sequence[str] = ()
    accept_licence: Sequence[str] = ()
    manifest: Sequence[str | Path] = ()
    dry_run: bool = False
    jobs: int = 2
    overwrite: bool = False
    max_unpacked: str | None = None
    max_download: str | None = None
    min_rate: str | None = None
    deadline: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.names, str):
            raise UsageError(f"names must be a list of dataset names, got the text {self.names!r}")
        if self.jobs < 1:
            raise UsageError(f"--jobs must be at least 1, got {self.jobs}")


@dataclass(frozen=True)
class DryRunRow:
    """What a fetch would do for one dataset: "up to date", "download + convert", "verify + convert" or "manual";
    bytes still to download and the disk it needs (None: unknown)."""

    dataset: str
    access: str
    todo: str
    download: int | None
    disk_needed: int | None


@dataclass
class DataFetchPlan:
    """A dry run: per dataset what to do, the bytes to download in all, the free disk, and the manual steps."""

    rows: list[DryRunRow]
    download_bytes: int
    unknown_sizes: bool
    free_at: Path
    free_bytes: int
    steps: list[str] = field(default_factory=list)


@dataclass
class DataFetchResult:
    """What a fetch did: one FetchOutcome per dataset fetched (state "installed", "replaced" or "up to date", its
    folder and checks), in the order asked; `plan` instead for a dry run (nothing fetched)."""

    root: Path
    outcomes: list[FetchOutcome] = field(default_factory=list)
    plan: DataFetchPlan | None = None

    @property
    def installed(self) -> list[str]:
        """The datasets this call installed or replaced (not those already up to date)."""
        return [o.name for o in self.outcomes if o.state != "up to date"]


class DataFetchError(DataError):
    """Some datasets were not fetched: the message names each and why; `result` holds those that were."""

    def __init__(self, message: str, result: DataFetchResult) -> None:
        super().__init__(message)
        self.result = result


def data_fetch(
    spec: DataFetchSpec, *, progress: Progress = False, confirm_licence: LicenceHook | None = None
) -> DataFetchResult:
    """Download (or take from `from_dir`), verify, unpack and convert datasets into the data root, `jobs` at a time.

    A licence to accept is accepted by `accept_licence`, else by `confirm_licence(entry)` when given (the command
    line asks at a terminal), else the dataset is refused. `progress`: True for download bars, or a callback
    `(file, bytes done, bytes total)` called from the fetching threads. DataFetchError when any dataset failed
    (the others are installed); Interrupted on Ctrl-C, keeping partial downloads for the next call."""
    from lifelong.data.roots import resolve_data_root

    entries = _manifest(spec.manifest)
    from_dir = None if spec.from_dir is None else Path(spec.from_dir)
    if from_dir is not None and not from_dir.is_dir():
        raise UsageError(f"--from {from_dir}: not a folder")
    chosen = select(entries, list(spec.names), spec.stream)
    root = resolve_data_root(spec.data_root)
    unknown_accept = sorted(set(spec.accept_licence) - set(entries))
    if unknown_accept:
        raise UsageError(f"--accept-licence names unknown datasets: {', '.join(unknown_accept)}")
    try:
        limit = UnpackLimit.parse(spec.max_unpacked)
        settings = download_settings(spec.max_download, spec.min_rate, spec.deadline)
    except ValueError as exc:
        raise fail(exc) from None
    accepted = set(spec.accept_licence)
    for e in chosen if confirm_licence is not None and not spec.dry_run else []:
        if e.licence.requires_acceptance and e.name not in accepted and confirm_licence(e):
            accepted.add(e.name)
    mirrors = tuple(spec.mirror)
    requests = [FetchRequest(e, root, from_dir, mirrors, e.name in accepted, spec.overwrite) for e in chosen]
    if spec.dry_run:
        return DataFetchResult(root, plan=dry_run(requests, limit))
    return _fetch_all(requests, settings, limit, spec.jobs, progress)


def dry_run(requests: list[FetchRequest], limit: UnpackLimit) -> DataFetchPlan:
    """What a fetch would do: bytes to download, disk needed (the installer's estimate) and free, manual steps."""
    from lifelong.data.fetch.install import disk_needed, is_up_to_date, locate_in

    rows, steps = [], []
    total, unknown = 0, False
    for r in requests:
        e = r.entry
        if is_up_to_date(r) and not r.overwrite:
            rows.append(DryRunRow(e.name, e.access, "up to date", 0, 0))
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
        rows.append(DryRunRow(e.name, e.access, todo, size, needed))
        if e.access == "manual" and pending:
            steps.append(f"{e.name}: {e.manual}")
        if e.licence.requires_acceptance and not r.licence_accepted:
            steps.append(f"{e.name}: needs --accept-licence {e.name} ({e.licence.name}: {e.licence.terms})")
    root = requests[0].root
    existing = next(p for p in (root, *root.parents) if p.exists())
    return DataFetchPlan(rows, total, unknown, existing, shutil.disk_usage(existing).free, steps)


def named(dataset: str, message: str) -> str:
    """`dataset: message`, unless the message names the dataset first already."""
    return message if message.startswith(f"{dataset}: ") else f"{dataset}: {message}"


@contextmanager
def _download_bars(
    progress: Progress, requests: list[FetchRequest], stop: threading.Event
) -> Iterator[Callable[[Artefact], Callable[[int, int | None], None]]]:
    """Yields `progress_for(artefact)`, the fetch layer's per-file hook: a rich bar per file and one for all files
    (progress True), calls of a callback `(file, done, total)`, or nothing; each raises KeyboardInterrupt once
    `stop` is set, so that a Ctrl-C stops every fetching thread at its next block."""

    def checked(artefact: Artefact, show: Callable[[int, int | None], None]) -> Callable[[int, int | None], None]:
        if stop.is_set():
            raise KeyboardInterrupt
        done, known = 0, artefact.size

        def advance(received: int, total: int | None) -> None:
            nonlocal done, known
            if stop.is_set():
                raise KeyboardInterrupt
            done, known = done + received, total if total is not None else known
            show(received, total)
            if callable(progress):
                progress(artefact.file, float(done), None if known is None else float(known))

        return advance

    if progress is not True:
        yield lambda artefact: checked(artefact, lambda received, total: None)
        return
    from rich.progress import BarColumn, DownloadColumn, TextColumn, TransferSpeedColumn
    from rich.progress import Progress as Bars

    from lifelong.commands.terminal import console

    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn())
    with Bars(*columns, console=console, transient=True) as bar:
        overall = bar.add_task("all files", total=sum(a.size or 0 for r in requests for a in r.entry.artefacts) or None)

        def progress_for(artefact: Artefact) -> Callable[[int, int | None], None]:
            task = bar.add_task(artefact.file, total=artefact.size)

            def show(received: int, total: int | None) -> None:
                if total is not None:
                    bar.update(task, total=total)
                bar.update(task, advance=received)
                bar.update(overall, advance=received)

            return checked(artefact, show)

        yield progress_for


def _fetch_all(
    requests: list[FetchRequest], settings: DownloadSettings, limit: UnpackLimit, jobs: int, progress: Progress
) -> DataFetchResult:
    """Fetch each request (`jobs` at a time): the outcomes, or DataFetchError naming each dataset that failed."""
    from lifelong.data.fetch.install import STAGING

    root = requests[0].root
    stop = threading.Event()

    def waiting(name: str) -> None:
        note(f"{name}: another fetch of it is under way in this data root; waiting for it to finish")

    def one(request: FetchRequest, progress_for) -> FetchOutcome | str:
        try:
            return fetch(request, settings, progress_for, limit, waiting=waiting)
        except (OSError, ValueError) as exc:  # refusals, checksums, downloads, conversions: all name the dataset
            return named(request.entry.name, str(exc))

    with _download_bars(progress, requests, stop) as progress_for, ThreadPoolExecutor(max(1, jobs)) as pool:
        futures = [pool.submit(one, r, progress_for) for r in requests]
        try:
            done = [f.result() for f in futures]
        except KeyboardInterrupt:
            stop.set()  # the other threads stop at their next block; those not started never start
            pool.shutdown(wait=True, cancel_futures=True)
            downloads = root / STAGING / "downloads"
            kept = any(p.is_file() for p in downloads.rglob("*")) if downloads.is_dir() else False
            raise Interrupted(
                f"Downloads are kept in {downloads}: run the same fetch again to continue." if kept else ""
            ) from None
    result = DataFetchResult(root, [o for o in done if isinstance(o, FetchOutcome)])
    errors = [o for o in done if isinstance(o, str)]
    if errors:
        raise DataFetchError(
            f"{len(errors)} of {len(done)} datasets not fetched; nothing of theirs was installed in {root} (verified "
            f"or resumable downloads stay in {root / STAGING / 'downloads'} for the next try):\n" + "\n".join(errors),
            result,
        )
    return result


__all__ = [
    "DataFetchError",
    "DataFetchPlan",
    "DataFetchResult",
    "DataFetchSpec",
    "DataListResult",
    "DataListSpec",
    "DryRunRow",
    "data_fetch",
    "data_list",
    "download_settings",
]
