"""The page of task-stream runs (Nevis'22 protocol): error vs compute, error per task, regret, slices, transfer.

Only runs of the `nevis` system (`lifelong.report.systems`) come here: each task trained and evaluated once, so
that E (mean meta-test error) against cFLOP means the same for every point of the figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lifelong.core.domains import canonical_domain
from lifelong.metrics.analysis import regret_curve, slices
from lifelong.report.figures import plot_error_vs_cflop, plot_regret, plot_slices, plot_task_errors
from lifelong.report.pages import Section, write_page
from lifelong.report.regret import pair_runs
from lifelong.report.runs import (
    Run,
    forward_transfer_rows,
    group_label,
    group_runs,
    pareto_fronts,
    seed_rows,
    table_rows,
)
from lifelong.report.systems import NEVIS, SYSTEMS

PAGE = SYSTEMS[NEVIS].page
TEMPLATE = "nevis.html.j2"


def _compute_section(runs: Sequence[Run], fronts: dict, out: Path) -> Section:
    section = Section(
        "Error vs compute",
        "Mean error over the meta-test tasks (E) against the training FLOPs of the whole stream (cFLOP, log scale), "
        "one plot per stream (runs of different streams are not comparable), one point per run, named by its label. "
        "Dashed: the stream's Pareto front (no run is better in both), where it joins two points or more.",
        figures=[("error_vs_cflop.png", "error vs cFLOP, one plot per stream, with each stream's Pareto front")],
    )
    plot_error_vs_cflop(runs, fronts, out / "error_vs_cflop.png")
    unscored = [r.label for r in runs if r.row["meta_test_mean_error"] is None]
    if unscored:
        section.notes.append(f"not drawn (no meta-test task evaluated): {', '.join(unscored)}")
    return section


def _per_task_section(runs: Sequence[Run], out: Path) -> Section:
    """Error per task: one figure per stream with a line per run."""
    section = Section("Error per task", "Error of each evaluated task, in stream order.")
    for i, members in enumerate(group_runs(runs).values(), start=1):
        name = f"task_errors_{i}.png"
        plot_task_errors(members, out / name)
        section.figures.append((name, f"error per task, {group_label(members[0].group)}"))
    return section


def _resolutions(run: Run) -> dict[str, float] | None:
    """Resolution per task uid from run.json's stream tasks ('resolution' or metadata), None if any lacks it."""
    values = {}
    for uid, task in run.data.task_metadata.items():
        value = task.get("resolution", (task.get("metadata") or {}).get("resolution"))
        if value is None:
            return None
        values[uid] = float(value)
    return values


def _slice_section(runs: Sequence[Run], out: Path) -> Section:
    """Figures of mean error by domain, by size and (where run.json has it) by resolution."""
    section = Section(
        "Slices",
        "Mean error over the evaluated tasks of each slice. Size: items per task, binned < 1,000, 1,000-10,000, "
        ">= 10,000; taken from the records' num_items (the evaluation split when the train records carry none).",
    )
    for key in ("domain", "size", "resolution"):
        per_run, missing = [], []
        for run in runs:
            values = _resolutions(run) if key == "resolution" else None
            if key == "resolution" and values is None:
                missing.append(run.label)
                continue
            records = run.data.records
            if key == "domain":  # run folders written before the vocabulary was one say 'objects' for 'object'
                records = [r | {"domain": canonical_domain(r["domain"])} if r.get("domain") else r for r in records]
            try:
                per_run.append((run.legend, slices(records, key, values=values)))
            except ValueError as e:
                section.notes.append(f"{run.label}: {key} slice left out: {e}")
        if missing:
            section.notes.append(f"no per-task resolution in run.json of {', '.join(missing)}: left out of the slice")
        if per_run:
            name = f"slices_{key}.png"
            plot_slices(per_run, key, out / name)
            section.figures.append((name, f"mean error by {key}"))
    return section


def _regret_section(runs: Sequence[Run], reference: str | None, out: Path) -> Section:
    """Regret curves of each run against its reference, one figure per stream; a table says which and why."""
    section = Section(
        "Regret",
        "R(t) = sum over the first t evaluated tasks of (error of the run - error of its reference). Below zero the "
        "run made fewer errors than its reference so far. Each run's reference, and why it was chosen:",
    )
    pairings = pair_runs(runs, reference)
    curves: dict[tuple, list[tuple[Run, Run, object]]] = {}
    for pairing in pairings:
        run, ref = pairing.run, pairing.reference
        row = {"label": run.label, "reference": "", "reference_label": "", "why": pairing.why}
        if ref is not None:
            row |= {"reference": ref.id, "reference_label": ref.label}
            try:
                curves.setdefault(run.group, []).append((run, ref, regret_curve(run.data.records, ref.data.records)))
            except ValueError as e:
                row["why"] += f"; no curve: {e}"
        section.pairs.append(row)
    for number, (group, drawn) in enumerate(curves.items(), start=1):
        name = f"regret_{number}.png"
        plot_regret(drawn, group_label(group), out / name)
        section.figures.append((name, f"regret curves, {group_label(group)}"))
    if not curves:
        section.notes.append("no regret curve: no two runs of one stream evaluated the same tasks")
    return section


def write_nevis_page(runs: Sequence[Run], out: Path, nav: list[tuple[str, str]], reference: str | None) -> Path:
    """Write the task streams page and its figures into `out`; `reference` as `lifelong report --reference`."""
    fronts = pareto_fronts(runs)
    transfer_rows, transfer_notes = forward_transfer_rows(runs)
    sections = [
        _compute_section(runs, fronts, out),
        _per_task_section(runs, out),
        _regret_section(runs, reference, out),
        _slice_section(runs, out),
    ]
    return write_page(
        out,
        PAGE,
        TEMPLATE,
        nav,
        runs=table_rows(runs, fronts),
        unfinished=[r.label for r in runs if not r.finished],
        seed_rows=seed_rows(runs),
        sections=sections,
        transfer_rows=transfer_rows,
        transfer_notes=transfer_notes,
    )
