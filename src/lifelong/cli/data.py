"""`lifelong data`: inspect a source, a stream's data status, fetch real datasets."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from lifelong.cli.common import DATA_ROOT_HELP

data_app = typer.Typer(help="Look at data sources and fetch real datasets.", no_args_is_help=True)


@data_app.command("fetch")
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
    from lifelong.commands.data_fetch import DataFetchError, DataFetchSpec, DataListSpec, data_fetch, data_list
    from lifelong.commands.data_fetch_console import print_datasets, print_fetched, print_licence, print_plan

    if list_flag:
        listing = data_list(DataListSpec(stream=stream, manifest=manifest or []))
        if as_json:
            typer.echo(json.dumps(listing.rows(), indent=2))
        else:
            print_datasets(listing)
        return

    def confirm(entry) -> bool:  # noqa: ANN001 (a DatasetEntry)
        print_licence(entry)
        return typer.confirm(f"Accept the licence of {entry.name}?", default=False)

    spec = DataFetchSpec(
        names=names or [], stream=stream, data_root=data_root, from_dir=from_dir, mirror=mirror or [],
        accept_licence=accept or [], manifest=manifest or [], dry_run=dry_run_flag, jobs=jobs, overwrite=overwrite,
        max_unpacked=max_unpacked, max_download=max_download, min_rate=min_rate, deadline=deadline,
    )  # fmt: skip
    try:
        result = data_fetch(spec, progress=sys.stderr.isatty(), confirm_licence=confirm if sys.stdin.isatty() else None)
    except DataFetchError as failed:  # the datasets that did install are said before the error
        print_fetched(failed.result)
        raise
    if result.plan is not None:
        print_plan(result.plan)
        return
    print_fetched(result)


@data_app.command("inspect")
def data_inspect_command(
    source: str = typer.Argument(..., help="builtin:NAME, idx:DIR, fashion-mnist, folder:DIR or csv:FILE."),
    skip_corrupt: bool = typer.Option(False, "--skip-corrupt", help="Skip (and count) corrupt images."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Load a data source and describe it: items, classes, sizes, channels."""
    from lifelong.commands.data_api import DataInspectSpec, data_inspect
    from lifelong.commands.data_console import print_inspect

    result = data_inspect(DataInspectSpec(source, skip_corrupt))
    if as_json:
        typer.echo(json.dumps(result.info, indent=2, default=str))
        return
    print_inspect(result)


@data_app.command("status")
def data_status_command(
    stream: str = typer.Option("nevis-full", "--stream", help="A stream name, e.g. nevis-full or nevis-short."),
    data_root: Path = typer.Option(None, "--data-root", help=DATA_ROOT_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Which tasks of a stream have data, which are missing, and what to provide for each."""
    from lifelong.commands.data_api import DataStatusSpec, data_status
    from lifelong.commands.data_console import print_status

    result = data_status(DataStatusSpec(stream, data_root))
    if as_json:
        typer.echo(json.dumps(result.rows, indent=2, default=str))
        return
    print_status(result)
