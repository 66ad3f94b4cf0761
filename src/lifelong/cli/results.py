"""`lifelong results`, `report` and `matrix-summary`: reading finished runs back."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape

from lifelong.commands.terminal import console, fail, note


def report_command(
    run_dirs: list[Path] = typer.Argument(..., help="Run folders (runs/<run id>) to compare, or their parent."),
    out: Path = typer.Option(Path("report"), "--out", help="Folder for index.html and its figures."),
    reference: str = typer.Option(None, "--reference", help="Run id or learner for regret (default: independent)."),
    cog_baseline: str = typer.Option(
        None, "--cog-baseline", metavar="ENCODER", help="CoG: show encoders relative to this one (its features set)."
    ),
) -> None:
    """An HTML report comparing runs: an index and one page per system (task streams, CLEAR, CoG, facts)."""
    from lifelong.report.html import write_report
    from lifelong.results.runs import find_runs

    try:
        folders, skipped = find_runs(run_dirs)
        for line in skipped:
            note(line)
        if not folders:
            given = ", ".join(map(str, run_dirs))
            raise FileNotFoundError(f"no run in {given}; give folders written by `lifelong run`, or their parent")
        page = write_report(folders, out, reference=reference, cog_baseline=cog_baseline)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    console.print(f"report: {page}", soft_wrap=True, highlight=False)


def matrix_summary_cli(
    run_dirs: list[Path] = typer.Argument(..., help="Run folders of one stream, protocol and learner (one per seed)."),
    out: Path = typer.Option(Path("."), "--out", help="Folder for <group>-seeds.json and its heatmap."),
) -> None:
    """Mean ± std over seeds of accuracy-matrix (CLEAR) runs, e.g. seeds run by separate commands."""
    from lifelong.commands.accuracy_matrix_console import print_matrix_seeds
    from lifelong.results import load_matrix_runs

    try:
        print_matrix_seeds(load_matrix_runs(run_dirs), out)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None


def results_command(
    runs_dir: Path = typer.Argument(Path("runs"), metavar="[RUNS]", help="The runs folder (a `lifelong run --out`)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (every field of every run)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Also show each run's setup, folder and error."),
    provenance: bool = typer.Option(
        False, "--provenance", help="Also show each run's machine, thread count, versions and loaded files."
    ),
    output_format: str = typer.Option(
        "table",
        "--format",
        metavar="table|csv|parquet",
        help="table: one line per run; csv: every record's metrics, a row each, on stdout; parquet: them into --out.",
    ),
    out: Path = typer.Option(
        None,
        "--out",
        metavar="FILE",
        help="With --format parquet: the file to write. (Otherwise: the deprecated RUNS spelling.)",
    ),
) -> None:
    """List the runs recorded in a runs folder: status, mean error, training FLOPs (more with -v or --json).

    --format csv or parquet gives every run's records instead, one row per (run, event, metric): the DataFrame
    lifelong.api.results returns.
    """
    from lifelong.commands.run_console import print_provenance, print_results
    from lifelong.commands.terminal import note
    from lifelong.results import read_provenance
    from lifelong.results.runs import recorded_runs

    if output_format not in ("table", "csv", "parquet"):
        raise fail(f"--format {output_format!r}: give table, csv or parquet")
    if output_format == "parquet" and out is None:
        raise fail("--format parquet writes a file: name it with --out FILE, e.g. --out results.parquet")
    if output_format != "parquet" and out is not None:  # `--out` once named the runs folder
        note(f"`lifelong results --out DIR` is now `lifelong results DIR`; listing {out}")
        runs_dir = out
    if output_format != "table":
        if as_json or verbose or provenance:
            raise fail(f"--json, --verbose and --provenance apply to --format table, not --format {output_format}")
        _results_frame(runs_dir, output_format, out)
        return
    try:
        runs, skipped = recorded_runs(runs_dir)
    except FileNotFoundError as exc:
        raise fail(exc) from None
    for line in skipped:
        note(line)
    if provenance:
        runs = [{**run, "provenance": read_provenance(run["path"])} for run in runs]
    if as_json:
        typer.echo(json.dumps(runs, indent=2, default=str))
        return
    print_results(runs, runs_dir, verbose=verbose)
    if provenance:
        print_provenance(runs)


def _results_frame(runs_dir: Path, output_format: str, out: Path | None) -> None:
    """`lifelong results RUNS --format csv|parquet`: every run's records, as lifelong.api.results reads them."""
    from lifelong.api import results
    from lifelong.results.frame import write_parquet

    try:
        frame = results(runs_dir)
        for line in frame.attrs["notes"]:
            note(line)
        if frame.empty:
            raise FileNotFoundError(f"no run in {runs_dir}; give the folder `lifelong run --out` wrote, or run folders")
        if output_format == "csv":
            typer.echo(frame.to_csv(index=False), nl=False)
            return
        assert out is not None
        write_parquet(frame, out)
    except (FileNotFoundError, ValueError, ImportError) as exc:
        raise fail(exc) from None
    runs = frame["run"].nunique()
    what = f"{len(frame)} rows of {runs} run{'' if runs == 1 else 's'}"
    console.print(f"wrote {what} to {escape(str(out))}", soft_wrap=True, highlight=False)
