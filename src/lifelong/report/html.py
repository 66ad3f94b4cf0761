"""HTML report over runs: run tables, error vs cFLOP with the Pareto front, per-task errors, regret, slices, FT.

`write_report` writes one page (index.html) and its PNG figures into one folder. The page links the figures by
relative name and loads nothing else (no script, no stylesheet or font from elsewhere), so the folder can be
moved or archived as is. Every string that comes from runs (ids, learners, task names, domains) is escaped by
Jinja2's autoescaping in the page and drawn as plain text (no mathtext) in figures.

The runs table gives each run's status: 'finished', or failed, interrupted or incomplete as the run folder's
summary.json and the results database beside the folder (results.sqlite, opened read-only) tell it. Runs that
evaluate every bucket after each training event (CLEAR-style accuracy matrices) get their matrix and one error
curve per bucket instead of a line through every evaluation.

This module builds the page's sections and renders it; the runs, their status and table rows are in
`lifelong.report.runs`, the figures over several runs in `lifelong.report.figures`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import numpy as np

from lifelong.core.files import atomic_write_bytes
from lifelong.metrics.accuracy_matrix import clear_metrics, matrix_from_records, reported_metrics
from lifelong.metrics.analysis import regret_curve, slices
from lifelong.report.cog import is_cog_run, write_cog_page
from lifelong.report.facts import write_fact_page
from lifelong.report.figures import plot_error_vs_cflop, plot_regret, plot_slices, plot_task_errors
from lifelong.report.plots import plot_accuracy_matrix, plot_bucket_errors
from lifelong.report.runs import (
    Run,
    forward_transfer_rows,
    group_label,
    group_runs,
    pareto_fronts,
    pick_reference,
    run_status,
    seed_rows,
    table_rows,
)
from lifelong.results import RunData, read_run, summarize_run
from lifelong.results.runs import run_folders
from lifelong.results.store import EVENTS_FILE

INDEX_FILE = "index.html"
TEMPLATE = "report.html.j2"


@dataclass
class _Section:
    """One part of the page: a title, a line of text, figures (file, alt text) and notes."""

    title: str
    text: str
    figures: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _per_task_section(runs: Sequence[Run], out: Path) -> _Section:
    """Error per task: one figure per stream with a line per run; for accuracy-matrix runs (which evaluate every
    bucket after each training event) one figure per run with a curve per evaluated bucket over training."""
    section = _Section("Error per task", "Error of each evaluated task, in stream order.")
    matrix_figures = 0
    if any(is_cog_run(r.data) for r in runs):
        section.notes.append("ImageNet-CoG runs (one probe task each) are drawn on the CoG page instead")
    for i, members in enumerate(group_runs(runs).values(), start=1):
        lines = [r for r in members if not r.is_matrix and not is_cog_run(r.data)]
        if lines:
            name = f"task_errors_{i}.png"
            plot_task_errors(lines, out / name)
            section.figures.append((name, f"error per task, {group_label(members[0].group)}"))
        for run in members:
            if not run.is_matrix:
                continue
            matrix_figures += 1
            name = f"bucket_errors_{matrix_figures}.png"
            labels = list(run.data.task_metadata)
            matrix = matrix_from_records(_trained_records(run.data.records), len(labels))
            plot_bucket_errors(matrix, out / name, labels=labels, title=f"error per bucket over training: {run.id}")
            section.figures.append((name, f"error of each evaluated bucket after each training event, {run.id}"))
    if matrix_figures:
        section.text += (
            " Runs that evaluate every bucket after each training event (accuracy matrices): one curve per evaluated "
            "bucket, its error after each training event; the outlined point is the bucket just trained."
        )
    return section


def _resolutions(run: RunData) -> dict[str, float] | None:
    """Resolution per task uid from run.json's stream tasks ('resolution' or metadata), None if any lacks it."""
    values = {}
    for uid, task in run.task_metadata.items():
        value = task.get("resolution", (task.get("metadata") or {}).get("resolution"))
        if value is None:
            return None
        values[uid] = float(value)
    return values


def _slice_section(runs: Sequence[Run], out: Path) -> _Section:
    """Figures of mean error by domain, by size and (where run.json has it) by resolution."""
    section = _Section(
        "Slices",
        "Mean error over the evaluated tasks of each slice. Size: items per task, binned < 1,000, 1,000-10,000, "
        ">= 10,000; taken from the records' num_items (the evaluation split when the train records carry none).",
    )
    for key in ("domain", "size", "resolution"):
        per_run, missing = [], []
        for run in runs:
            values = _resolutions(run.data) if key == "resolution" else None
            if key == "resolution" and values is None:
                missing.append(run.id)
                continue
            try:
                per_run.append((run.id, slices(run.data.records, key, values=values)))
            except ValueError as e:
                section.notes.append(f"{run.id}: {key} slice left out: {e}")
        if missing:
            section.notes.append(f"no per-task resolution in run.json of {', '.join(missing)}: left out of the slice")
        if per_run:
            name = f"slices_{key}.png"
            plot_slices(per_run, key, out / name)
            section.figures.append((name, f"mean error by {key}"))
    return section


def _regret_section(runs: Sequence[Run], reference: Run, out: Path) -> _Section:
    """Regret curves of every run comparable with the reference; a note for each run that is not, saying why."""
    section = _Section(
        "Regret",
        f"R(t) = sum over the first t evaluated tasks of (error of the run - error of {reference.id}). "
        "Below zero the run made fewer errors than the reference so far.",
    )
    curves = []
    for run in runs:
        if run is reference:
            continue
        if run.group != reference.group:
            section.notes.append(
                f"{run.id} is over {group_label(run.group)}, the reference {reference.id} over "
                f"{group_label(reference.group)}: no regret curve (pass --reference to pick a run of the same stream)"
            )
            continue
        if run.is_matrix or reference.is_matrix:
            section.notes.append(
                f"{run.id}: no regret curve: accuracy-matrix runs evaluate every bucket after each training event, "
                "and regret compares one evaluation per task (see the accuracy matrices)"
            )
            continue
        try:
            curves.append((run.id, regret_curve(run.data.records, reference.data.records)))
        except ValueError as e:
            section.notes.append(f"{run.id}: {e}")
    if not curves:  # an empty figure says nothing: one sentence says why there is none
        if len(runs) == 1:
            section.text = f"No regret curve: {reference.id} is the only run, and regret compares a run with another."
        else:
            section.text = (
                f"No regret curve: no other run evaluated the same tasks as the reference {reference.id} "
                "(the notes below say why for each run)."
            )
        return section
    plot_regret(curves, reference, out / "regret.png")
    section.figures.append(("regret.png", f"regret curves against {reference.id}"))
    return section


def _matrix_section(runs: Sequence[Run], out: Path) -> _Section | None:
    """Accuracy matrices (CLEAR-style runs that evaluate every task after each training event), from the events."""
    matrix_runs = [r for r in runs if r.is_matrix]
    if not matrix_runs:
        return None
    section = _Section(
        "Accuracy matrices",
        "Accuracy (%) of the model after training bucket i (rows) on the evaluation data of bucket j (columns).",
    )
    for i, run in enumerate(matrix_runs, start=1):
        labels = list(run.data.task_metadata)
        matrix = matrix_from_records(_trained_records(run.data.records), len(labels))
        name = f"accuracy_matrix_{i}.png"
        plot_accuracy_matrix(matrix, out / name, labels=labels, title=run.id)
        protocol = run.data.info["stream"].get("protocol") or "iid"
        if np.isfinite(matrix).all():
            values = clear_metrics(matrix)
            text = ", ".join(f"{k} {100 * values[k]:.2f}%" for k in reported_metrics(protocol))
        else:
            text = "incomplete matrix"
        section.figures.append((name, f"{run.id} ({protocol} protocol): {text}"))
    return section


def _render(context: dict[str, Any]) -> str:
    """The page from the packaged template, with every value autoescaped."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("lifelong.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    return env.get_template(TEMPLATE).render(**context)


def _expand_parents(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The paths with a parent of run folders replaced by its run folders and plain files (a glob's seeds.json)
    left out; anything else stays, so that a folder that is no run folder is still named by the error."""
    out: list[Path] = []
    for given in map(Path, paths):
        if given.is_file():
            continue
        children = run_folders([given]) if given.is_dir() and not (given / EVENTS_FILE).is_file() else []
        out.extend(children if children and children != [given] else [given])
    return out


def write_report(
    run_dirs: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], *, reference: str | None = None
) -> Path:
    """Write index.html and its PNG figures into `out` for the given run folders; return the page's path.

    `reference` (a run id or a learner name) is the run the regret curves compare against; by default the first
    run of learner 'independent', else the first run. Runs over another stream or split get no regret curve
    (the page says so). Raises when a folder is not a run folder or a run is given twice.
    """
    run_dirs = _expand_parents(run_dirs)
    if not run_dirs:
        raise ValueError("no run folders given; pass folders written by `lifelong run`, or their parent folder")
    runs = []
    for run_dir in run_dirs:
        data = read_run(run_dir)
        runs.append(Run(data, summarize_run(data), run_status(data)))
    ids = [r.id for r in runs]
    if len(set(ids)) < len(ids):
        raise ValueError(f"run(s) {sorted({i for i in ids if ids.count(i) > 1})} given twice: {list(run_dirs)}")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"report folder {str(out)!r} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    ref = pick_reference(runs, reference)
    fronts = pareto_fronts(runs)

    compute = _Section(
        "Error vs compute",
        "Mean error over the meta-test tasks (E) against the training FLOPs of the whole stream (cFLOP). "
        "Dashed: the Pareto front of each stream (no run is better in both).",
        figures=[("error_vs_cflop.png", "error vs cFLOP with the Pareto front")],
    )
    plot_error_vs_cflop(runs, fronts, out / "error_vs_cflop.png")
    unscored = [r.id for r in runs if r.row["meta_test_mean_error"] is None]
    if unscored:
        compute.notes.append(f"not drawn (no meta-test task evaluated): {', '.join(unscored)}")
    per_task = _per_task_section(runs, out)
    transfer_rows, transfer_notes = forward_transfer_rows(runs)
    cog_page = write_cog_page([r.data for r in runs], out)
    fact_page = write_fact_page([r.data for r in runs], out)
    page = _render(
        {
            "cog_page": cog_page.name if cog_page else None,
            "fact_page": fact_page.name if fact_page else None,
            "runs": table_rows(runs, fronts),
            "unfinished": [r.id for r in runs if not r.finished],
            "seed_rows": seed_rows(runs),
            "reference": ref.id,
            "sections": [
                section
                for section in (
                    compute,
                    per_task,
                    _matrix_section(runs, out),
                    _regret_section(runs, ref, out),
                    _slice_section(runs, out),
                )
                if section is not None
            ],
            "transfer_rows": transfer_rows,
            "transfer_notes": transfer_notes,
        }
    )
    index = out / INDEX_FILE
    atomic_write_bytes(index, page.encode("utf-8"))
    return index


def _trained_records(records: Sequence[dict]) -> list[dict]:
    """Records made after some training: a fact stream's evaluations of the untrained learner (-1) are no cell."""
    return [r for r in records if r.get("after_task_index") != -1]
