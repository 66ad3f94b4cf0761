"""HTML report over runs: an index page and one page per system, each with its tables and PNG figures.

`write_report` writes index.html, the page of each system that has runs (`lifelong.report.systems`: task streams
with error vs compute, CLEAR accuracy matrices, ImageNet-CoG, lifelong fact learning) and their figures into one
folder. Runs of one system are never drawn on another's axes. Every run gets a short label (R1, R2, ...) by which
figures name it; each page maps labels to run ids. Labels are stable: numbered in the order the runs were created,
and kept in the folder (labels.json), so a rebuild with more runs never relabels the others. Pages link the figures
by relative name and load nothing else (no script, no stylesheet or font from elsewhere), so the folder can be moved
or archived as is. Every string that comes from runs (ids, learners, task names, domains) is escaped by Jinja2's
autoescaping in the pages and drawn as plain text (no mathtext) in figures; every figure's layout is checked when
saved (`lifelong.report.layout`).

The runs table gives each run's status: 'finished', or failed, interrupted or incomplete as the run folder's
summary.json and the results database beside the folder (results.sqlite, opened read-only) tell it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from lifelong.report.clear import write_clear_page
from lifelong.report.cog import write_cog_page
from lifelong.report.facts import write_fact_page
from lifelong.report.nevis import write_nevis_page
from lifelong.report.pages import INDEX_FILE, write_page
from lifelong.report.regret import check_reference
from lifelong.report.runs import Run, assign_labels, by_label, legend_rows, read_labels, run_status, write_labels
from lifelong.report.systems import CLEAR, COG, FACTS, NEVIS, SYSTEMS
from lifelong.results import read_run, summarize_run
from lifelong.results.runs import run_folders
from lifelong.results.store import EVENTS_FILE

__all__ = ["INDEX_FILE", "write_report"]


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


def _read_runs(run_dirs: Sequence[Path]) -> list[Run]:
    """The runs of the folders, in the order given; raises on a run given twice."""
    runs = []
    for run_dir in run_dirs:
        data = read_run(run_dir)
        runs.append(Run(data, summarize_run(data), run_status(data)))
    folders: dict[str, list[str]] = {}
    for run, run_dir in zip(runs, run_dirs, strict=True):
        folders.setdefault(run.id, []).append(str(run_dir))
    twice = {run_id: paths for run_id, paths in folders.items() if len(paths) > 1}
    if twice:
        run_id, paths = next(iter(twice.items()))
        raise ValueError(f"run {run_id} given twice: {' and '.join(paths)}; give each run folder once")
    return runs


def write_report(
    run_dirs: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    reference: str | None = None,
    cog_baseline: str | None = None,
) -> Path:
    """Write index.html, each system's page and their PNG figures into `out`; return the index page's path.

    `reference` (a run id or a learner) is what the regret curves of task-stream runs compare against; by default
    each run's 'independent' run of the same stream and seed (`lifelong.report.regret`). `cog_baseline`: the CoG
    encoder the others are shown relative to. Raises when a folder is not a run folder, a run is given twice, or
    `reference` or `cog_baseline` names no run.
    """
    run_dirs = _expand_parents(run_dirs)
    if not run_dirs:
        raise ValueError("no run folders given; pass folders written by `lifelong run`, or their parent folder")
    runs = _read_runs(run_dirs)
    out = Path(out)
    labels = assign_labels(runs, read_labels(out))  # an earlier report's labels stay; new runs take the next ones
    runs = by_label(runs)
    check_reference(runs, reference)
    if out.exists() and not out.is_dir():
        raise ValueError(f"report folder {out} exists and is not a folder; give another --out")
    out.mkdir(parents=True, exist_ok=True)
    write_labels(out, labels)

    by_system = {key: [r for r in runs if r.system == key] for key in SYSTEMS}
    present = [key for key in SYSTEMS if by_system[key]]
    nav = [(INDEX_FILE, "Overview")] + [(SYSTEMS[key].page, SYSTEMS[key].short) for key in present]
    writers = {
        NEVIS: lambda members: write_nevis_page(members, out, nav, reference),
        CLEAR: lambda members: write_clear_page(members, out, nav),
        COG: lambda members: write_cog_page(members, out, nav, cog_baseline),
        FACTS: lambda members: write_fact_page(members, out, nav),
    }
    for key in present:
        writers[key](by_system[key])
    systems = [
        {
            "page": SYSTEMS[key].page,
            "title": SYSTEMS[key].title,
            "shows": SYSTEMS[key].shows,
            "count": len(by_system[key]),
        }
        for key in present
    ]
    notes = []
    if by_system[COG]:
        notes.append("ImageNet-CoG runs (one probe task each) are drawn on the CoG page, not as task streams.")
    if by_system[CLEAR] or by_system[FACTS]:
        notes.append(
            "Accuracy-matrix runs (CLEAR, fact learning) evaluate every task after each training event: their "
            "matrices and metrics are on their own pages, never on the error-vs-compute axes of task streams."
        )
    return write_page(
        out,
        INDEX_FILE,
        "index.html.j2",
        nav,
        runs=legend_rows(runs),
        systems=systems,
        system_notes=notes,
        unfinished=[f"{r.label} ({r.id})" for r in runs if not r.finished],
    )
