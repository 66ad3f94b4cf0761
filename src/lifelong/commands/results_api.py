"""`lifelong results`, `report` and `matrix-summary` as functions: finished runs read back, compared, summarised.

Each takes a spec with the command's options and returns what the command shows (runs, a DataFrame, a page, a seed
summary), printing nothing but the notes the command prints (a folder passed over) on stderr.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lifelong.commands.terminal import note
from lifelong.core.errors import DataError, ResumeRefused, UsageError

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
    """The runs of a runs folder: `runs` (format table: one dict per run, as `lifelong results --json` prints, with
    its `system` and `headline`: the system's headline figure, {"metric": name, "value": number or None}) or `frame`
    (csv, parquet: one row per run, event and metric), and the parquet file written (`out`)."""

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
    runs = [_with_headline(run, folder) for run in runs]
    if spec.provenance:
        runs = [{**run, "provenance": read_provenance(run["path"])} for run in runs]
    return ResultsList(folder, spec.format, runs=runs)


def _with_headline(run: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The run with its system and that system's headline figure (`lifelong.report.systems.HEADLINES`)."""
    from lifelong.report.systems import HEADLINES, system_of_folder

    system = system_of_folder(folder / Path(run["path"]).name)
    headline = HEADLINES[system]
    return {**run, "system": system, "headline": {"metric": headline.name, "value": headline.figure(run["summary"])}}


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
    others are shown relative to; `overwrite` replaces a report already in `out` (its run labels are kept)."""

    runs: Sequence[str | Path]
    out: str | Path = "report"
    reference: str | None = None
    cog_baseline: str | None = None
    overwrite: bool = False


def report(spec: ReportSpec) -> Path:
    """Write the report (an index and one page per system) and return its index.html.

    A report already in `spec.out` is an error without `spec.overwrite` (--overwrite), which replaces its pages and
    figures and keeps its run labels; a folder that holds other files is never written into."""
    from lifelong.report.html import write_report
    from lifelong.results.runs import find_runs

    out = Path(spec.out)
    earlier = _earlier_report(out, overwrite=spec.overwrite)
    given = [spec.runs] if isinstance(spec.runs, str | Path) else list(spec.runs)
    folders, skipped = find_runs(given)
    for line in skipped:
        note(line)
    if not folders:
        named = ", ".join(map(str, given))
        raise DataError(f"no run in {named}; give folders written by `lifelong run`, or their parent")
    for path in earlier:  # the earlier report's pages and figures; its labels.json stays
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    return write_report(folders, out, reference=spec.reference, cog_baseline=spec.cog_baseline)


def _earlier_report(out: Path, *, overwrite: bool) -> list[Path]:
    """What --overwrite replaces in `out`: an earlier report's pages and figures (not its labels.json); raises
    when `out` holds a report and `overwrite` is off, or holds files that are no report."""
    from lifelong.report.pages import INDEX_FILE
    from lifelong.report.runs import LABELS_FILE

    if not out.exists():
        return []
    if not out.is_dir():
        raise ResumeRefused(f"{out} exists and is not a folder; give another folder with --out")
    earlier = sorted(p for p in out.iterdir() if p.name != LABELS_FILE)
    if not earlier:
        return []
    if not (out / INDEX_FILE).is_file():
        raise ResumeRefused(f"{out} holds files but no report (no {INDEX_FILE}); give a new or empty folder with --out")
    if not overwrite:
        raise ResumeRefused(
            f"{out} already holds a report; pass --overwrite to replace it (each run keeps its label), or --out "
            "to write elsewhere"
        )
    return earlier


@dataclass(frozen=True)
class MatrixSummarySpec:
    """`lifelong matrix-summary RUNS`: accuracy-matrix runs of one setup (one per seed), summarised into `out`;
    `overwrite` replaces a summary of the same setup already there."""

    runs: Sequence[str | Path]
    out: str | Path = "."
    overwrite: bool = False


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
    """Summarise the finished accuracy-matrix runs of `spec.runs` over seeds (None when none has its metrics).

    Unfinished runs (still running, interrupted, failed: a glob catches them too) are passed over with a note
    naming each; an error only when no run is finished."""
    from lifelong.results import load_matrix_runs
    from lifelong.results.runs import run_folders

    given = [spec.runs] if isinstance(spec.runs, str | Path) else list(spec.runs)
    folders = run_folders(given)
    unfinished = set()
    for folder in folders:
        why = _unfinished(folder)
        if why:
            unfinished.add(folder.resolve())
            note(f"skipped {folder}: {why}")
    if unfinished and all(f.resolve() in unfinished for f in folders):
        raise DataError(
            f"no finished run in {', '.join(map(str, given))}: {len(unfinished)} not finished (noted above); "
            "finish them with `lifelong run ... --resume`, or give finished runs"
        )
    kept = [p for p in given if Path(p).resolve() not in unfinished]  # a parent's unfinished runs: passed over
    return write_matrix_seeds(load_matrix_runs(kept), spec.out, overwrite=spec.overwrite)


def _unfinished(folder: Path) -> str | None:
    """Why the run in `folder` is not finished (from its summary.json), or None when it is."""
    path = folder / "summary.json"
    if not path.is_file():
        return "not finished (no summary.json: still running, interrupted or failed)"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "not finished (summary.json unreadable)"
    done, total = summary.get("events_done"), summary.get("events_total")
    if isinstance(done, int) and isinstance(total, int) and done < total:
        return f"not finished (stopped after {done} of {total} events)"
    return None


def write_matrix_seeds(results: list[dict], out: str | Path, *, overwrite: bool = True) -> MatrixSummary | None:
    """The seed summary of accuracy-matrix run summaries, written to OUT/<group>-seeds.json and -seeds.png; an
    existing summary of the group is replaced only with `overwrite` (`lifelong run` rewrites its own)."""
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
    path, png_path = Path(out) / f"{name}-seeds.json", Path(out) / f"{name}-seeds.png"
    existing = [p for p in (path, png_path) if p.exists()]
    if existing and not overwrite:
        raise ResumeRefused(
            f"{existing[0]} already exists; pass --overwrite to replace it, or --out to write elsewhere"
        )
    atomic_write_bytes(path, (json.dumps(document, indent=2) + "\n").encode())
    labels = matrix_labels(finished[0])
    png = plot_accuracy_matrix(summary["mean_matrix"], png_path, labels=labels, title=f"{name}: mean over seeds")
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
