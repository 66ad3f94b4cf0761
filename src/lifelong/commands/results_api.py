"""`lifelong results`, `report` and `matrix-summary` as functions: finished runs read back, compared, summarised.

Each takes a spec with the command's options and returns what the command shows (runs, a DataFrame, a page, a seed
summary), printing nothing but the notes the command prints (a folder passed over) on stderr.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lifelong.commands.terminal import note
from lifelong.core.errors import DataError, UsageError

if TYPE_CHECKING:
    import pandas as pd

RESULTS_FORMATS = ("table", "csv", "parquet")


@dataclass(frozen=True)
class ResultsListSpec:
    """`lifelong results RUNS`: `format` table (one entry per run), csv or parquet (every record: a DataFrame, parquet
    written to `out`); `provenance` adds each run's machine, versions and loaded files (table only)."""

    runs: str | Path = "runs"
    format: str = "table"
    out: str | Path | None = None
    provenance: bool = False

    def __post_init__(self) -> None:
        if self.format not in RESULTS_FORMATS:
            raise UsageError(f"--format {self.format!r}: give table, csv or parquet")
        if self.format == "parquet" and self.out is None:
            raise UsageError("--format parquet writes a file: name it with --out FILE, e.g. --out results.parquet")


@dataclass
class ResultsList:
    """The runs of a runs folder: `runs` (format table: one dict per run, as `lifelong results --json` prints) or
    `frame` (csv, parquet: one row per run, event and metric), and the parquet file written (`out`)."""

    folder: Path
    format: str
    runs: list[dict[str, Any]] = field(default_factory=list)
    frame: pd.DataFrame | None = None
    out: Path | None = None


def results_list(spec: ResultsListSpec) -> ResultsList:
    """The runs recorded in `spec.runs` as `lifelong results` lists them (or their records, for csv and parquet)."""
    folder = Path(spec.runs)
    if spec.format != "table":
        return _records(spec, folder)
    from lifelong.results import read_provenance
    from lifelong.results.runs import recorded_runs

    runs, skipped = recorded_runs(folder)
    for line in skipped:
        note(line)
    if spec.provenance:
        runs = [{**run, "provenance": read_provenance(run["path"])} for run in runs]
    return ResultsList(folder, spec.format, runs=runs)


def _records(spec: ResultsListSpec, folder: Path) -> ResultsList:
    """Every run's records as lifelong.api.results reads them; written to `spec.out` for parquet."""
    from lifelong.results.frame import results, write_parquet

    frame = results(folder)
    for line in frame.attrs["notes"]:
        note(line)
    if frame.empty:
        raise DataError(f"no run in {folder}; give the folder `lifelong run --out` wrote, or run folders")
    out = None
    if spec.format == "parquet":
        assert spec.out is not None  # ResultsListSpec refuses parquet without out
        out = Path(spec.out)
        write_parquet(frame, out)
    return ResultsList(folder, spec.format, frame=frame, out=out)


@dataclass(frozen=True)
class ReportSpec:
    """`lifelong report RUNS`: run folders (or their parent) compared in an HTML report in `out`; `reference` is
    the run id or learner regret is measured against (default: independent), `cog_baseline` the CoG encoder the
    others are shown relative to."""

    runs: Sequence[str | Path]
    out: str | Path = "report"
    reference: str | None = None
    cog_baseline: str | None = None


def report(spec: ReportSpec) -> Path:
    """Write the report (an index and one page per system) and return its index.html."""
    from lifelong.report.html import write_report
    from lifelong.results.runs import find_runs

    given = [spec.runs] if isinstance(spec.runs, str | Path) else list(spec.runs)
    folders, skipped = find_runs(given)
    for line in skipped:
        note(line)
    if not folders:
        named = ", ".join(map(str, given))
        raise DataError(f"no run in {named}; give folders written by `lifelong run`, or their parent")
    return write_report(folders, Path(spec.out), reference=spec.reference, cog_baseline=spec.cog_baseline)


@dataclass(frozen=True)
class MatrixSummarySpec:
    """`lifelong matrix-summary RUNS`: accuracy-matrix runs of one setup (one per seed), summarised into `out`."""

    runs: Sequence[str | Path]
    out: str | Path = "."


@dataclass(frozen=True)
class MatrixSummary:
    """Mean ± std (ddof=1) over seeds of accuracy-matrix runs, as written to `path` (<group>-seeds.json) and
    `heatmap` (the mean matrix): `metrics` maps each metric to its mean, std, n and per-seed values."""

    group: str
    runs: list[str]
    seeds: list[int | None]
    metrics: dict[str, dict[str, Any]]
    mean_matrix: list[list[float | None]] | None
    labels: list[str]
    path: Path
    heatmap: Path


def matrix_summary(spec: MatrixSummarySpec) -> MatrixSummary | None:
    """Summarise the finished accuracy-matrix runs of `spec.runs` over seeds (None when none has its metrics)."""
    from lifelong.results import load_matrix_runs

    given = [spec.runs] if isinstance(spec.runs, str | Path) else list(spec.runs)
    return write_matrix_seeds(load_matrix_runs(given), spec.out)


def write_matrix_seeds(results: list[dict], out: str | Path) -> MatrixSummary | None:
    """The seed summary of accuracy-matrix run summaries, written to OUT/<group>-seeds.json and -seeds.png."""
    from lifelong.core.files import atomic_write_bytes
    from lifelong.metrics.accuracy_matrix import summarize_matrix_seeds
    from lifelong.report.plots import plot_accuracy_matrix
    from lifelong.results.runs import group_id

    finished = [r for r in results if r.get("clear_metrics")]
    if not finished:
        return None
    summary = summarize_matrix_seeds(
        [{"clear_metrics": r["clear_metrics"], "accuracy_matrix": r["accuracy_matrix"]} for r in finished]
    )
    name = group_id(finished[0]["run_id"])
    document = {
        "group": name,
        "runs": [r["run_id"] for r in finished],
        "seeds": [r.get("seed") for r in finished],
        **summary,
    }
    path = Path(out) / f"{name}-seeds.json"
    atomic_write_bytes(path, (json.dumps(document, indent=2) + "\n").encode())
    labels = matrix_labels(finished[0])
    png = plot_accuracy_matrix(
        summary["mean_matrix"], Path(out) / f"{name}-seeds.png", labels=labels, title=f"{name}: mean over seeds"
    )
    return MatrixSummary(
        name, document["runs"], document["seeds"], summary["metrics"], summary["mean_matrix"], labels, path, png
    )


def matrix_labels(result: dict) -> list[str]:
    """The task (bucket) labels of an accuracy-matrix run: recorded, else the order of its train records."""
    if result.get("labels"):
        return list(result["labels"])
    seen: list[str] = []
    for record in result.get("records", ()):
        if record["type"] == "train" and record["task"] not in seen:
            seen.append(record["task"])
    return seen or [str(i) for i in range(len(result["accuracy_matrix"]))]


__all__ = [
    "MatrixSummary",
    "MatrixSummarySpec",
    "ReportSpec",
    "ResultsList",
    "ResultsListSpec",
    "matrix_summary",
    "report",
    "results_list",
]
