"""`lifelong results`, `report` and `matrix-summary`: reading finished runs back."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import typer
from rich.markup import escape

from lifelong.commands.terminal import console, note
from lifelong.core.errors import UsageError


def report_command(
    run_dirs: list[Path] = typer.Argument(..., help="Run folders (runs/<run id>) to compare, or their parent."),
    out: Path = typer.Option(Path("report"), "--out", help="Folder for index.html and its figures."),
    reference: str = typer.Option(None, "--reference", help="Run id or learner for regret (default: independent)."),
    cog_baseline: str = typer.Option(
        None, "--cog-baseline", metavar="ENCODER", help="CoG: show encoders relative to this one (its features set)."
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace the report already in --out (each run keeps its label R1, R2, ...)."
    ),
) -> None:
    """An HTML report comparing runs: an index and one page per system (task streams, CLEAR, CoG, facts)."""
    from lifelong.commands.results_api import ReportSpec, report

    spec = ReportSpec(runs=run_dirs, out=out, reference=reference, cog_baseline=cog_baseline, overwrite=overwrite)
    page = report(spec)
    console.print(f"report: {page}", soft_wrap=True, highlight=False)


def matrix_summary_cli(
    run_dirs: list[Path] = typer.Argument(..., help="Run folders of one stream, protocol and learner (one per seed)."),
    out: Path = typer.Option(Path("."), "--out", help="Folder for <group>-seeds.json and its heatmap."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace the setup's summary already in --out."),
) -> None:
    """Mean ± std over seeds of accuracy-matrix (CLEAR) runs, e.g. seeds run by separate commands.

    Runs that have not finished (a glob catches them too) are skipped with a note.
    """
    from lifelong.commands.accuracy_matrix_console import print_matrix_summary
    from lifelong.commands.results_api import MatrixSummarySpec, matrix_summary

    print_matrix_summary(matrix_summary(MatrixSummarySpec(runs=run_dirs, out=out, overwrite=overwrite)))


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
    from lifelong.commands.results_api import ResultsListSpec, results_list
    from lifelong.commands.run_console import print_provenance, print_results

    parquet = output_format == "parquet"
    spec = ResultsListSpec(runs=runs_dir, format=output_format, out=out if parquet else None, provenance=provenance)
    if not parquet and out is not None:  # `--out` once named the runs folder
        note(f"`lifelong results --out DIR` is now `lifelong results DIR`; listing {out}")
        spec = dataclasses.replace(spec, runs=out)
    if output_format != "table" and (as_json or verbose or provenance):
        raise UsageError(f"--json, --verbose and --provenance apply to --format table, not --format {output_format}")
    listed = results_list(spec)
    if output_format == "csv":
        assert listed.frame is not None
        typer.echo(listed.frame.to_csv(index=False), nl=False)
    elif parquet:
        assert listed.frame is not None
        runs = listed.frame["run"].nunique()
        what = f"{len(listed.frame)} rows of {runs} run{'' if runs == 1 else 's'}"
        console.print(f"wrote {what} to {escape(str(listed.out))}", soft_wrap=True, highlight=False)
    elif as_json:
        typer.echo(json.dumps(listed.runs, indent=2, default=str))
    else:
        print_results(listed.runs, listed.folder, verbose=verbose)
        if provenance:
            print_provenance(listed.runs)
