"""HTML report over runs: run tables, error vs cFLOP with the Pareto front, per-task errors, regret, slices, FT.

`write_report` writes one page (index.html) and its PNG figures into one folder. The page links the figures by
relative name and loads nothing else (no script, no stylesheet or font from elsewhere), so the folder can be
moved or archived as is. Every string that comes from runs (ids, learners, task names, domains) is escaped by
Jinja2's autoescaping in the page and drawn as plain text (no mathtext) in figures.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
from matplotlib.lines import Line2D

from lifelong.core.files import atomic_write_bytes
from lifelong.metrics.analysis import (
    aggregate_seeds,
    forward_transfer_details,
    pareto_front,
    records_of_type,
    regret_curve,
    slices,
)
from lifelong.report.plots import new_figure, note, plain_legend, save_png, set_task_ticks, task_figure
from lifelong.results import RunData, read_run, summarize_run

INDEX_FILE = "index.html"
TEMPLATE = "report.html.j2"
REFERENCE_LEARNER = "independent"
MARKERS = "osD^vP*Xph"


@dataclass
class _Run:
    """A run of the report: what was read from its folder and its table row."""

    data: RunData
    row: dict[str, Any]

    @property
    def id(self) -> str:
        return self.row["run_id"]

    @property
    def group(self) -> tuple[str, Any]:
        """Runs are comparable only over the same stream and evaluation split."""
        return self.row["stream"], self.row["eval_split"]


@dataclass
class _Section:
    """One part of the page: a title, a line of text, figures (file, alt text) and notes."""

    title: str
    text: str
    figures: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _color(i: int) -> str:
    return f"C{i % 10}"


def _format(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _mean_std(mean: float | None, std: float | None, spec: str) -> str:
    return _format(mean, spec) + ("" if std is None else f" ± {format(std, spec)}")


def _group_label(group: tuple[str, Any]) -> str:
    stream, split = group
    return stream if split is None else f"{stream} ({split})"


def _groups(runs: Sequence[_Run]) -> dict[tuple[str, Any], list[_Run]]:
    """Runs by (stream, eval split), in order of first appearance."""
    groups: dict[tuple[str, Any], list[_Run]] = {}
    for run in runs:
        groups.setdefault(run.group, []).append(run)
    return groups


def _pick_reference(runs: Sequence[_Run], reference: str | None) -> _Run:
    """The run named `reference` (a run id, else a learner: its first run); default: the first Independent run."""
    if reference is None:
        return next((r for r in runs if r.row["learner"] == REFERENCE_LEARNER), runs[0])
    for key in ("run_id", "learner"):
        match = next((r for r in runs if r.row[key] == reference), None)
        if match is not None:
            return match
    raise ValueError(
        f"reference {reference!r} is neither a run id nor a learner of the runs given; "
        f"run ids: {[r.id for r in runs]}, learners: {sorted({r.row['learner'] for r in runs})}"
    )


def _pareto_fronts(runs: Sequence[_Run]) -> dict[tuple[str, Any], list[_Run]]:
    """Per (stream, eval split), the runs on the Pareto front of (cFLOP, meta-test error), cheapest first."""
    fronts = {}
    for group, members in _groups(runs).items():
        scored = [r for r in members if r.row["meta_test_mean_error"] is not None]
        points = [(r.row["cflop"], r.row["meta_test_mean_error"]) for r in scored]
        fronts[group] = [scored[i] for i in pareto_front(points)]
    return fronts


def _plot_error_vs_cflop(runs: Sequence[_Run], fronts: dict[tuple[str, Any], list[_Run]], path: Path) -> Path:
    """Scatter of meta-test error against cFLOP (log x; symlog when a run has 0 FLOPs), Pareto front dashed."""
    fig, ax = new_figure(8.0, 5.0)
    learners = list(dict.fromkeys(r.row["learner"] for r in runs))
    groups = list(_groups(runs))
    scored = [r for r in runs if r.row["meta_test_mean_error"] is not None]
    for run in scored:
        x, y = run.row["cflop"], run.row["meta_test_mean_error"]
        color, marker = _color(learners.index(run.row["learner"])), MARKERS[groups.index(run.group) % len(MARKERS)]
        ax.scatter([x], [y], color=color, marker=marker, s=40, zorder=3)
        ax.annotate(run.id, (x, y), xytext=(4, 4), textcoords="offset points", fontsize=7, parse_math=False)
    for front in fronts.values():
        if front:
            xs = [r.row["cflop"] for r in front]
            ys = [r.row["meta_test_mean_error"] for r in front]
            ax.step(xs, ys, where="post", color="0.3", linestyle="--", linewidth=1, zorder=2)
    cflops = [r.row["cflop"] for r in scored]
    positive = [c for c in cflops if c > 0]
    if cflops and len(positive) == len(cflops):
        ax.set_xscale("log")
    elif cflops:
        ax.set_xscale("symlog", linthresh=min(positive, default=1.0))
    handles = [Line2D([], [], color=_color(i), marker="o", linestyle="", label=name) for i, name in enumerate(learners)]
    if len(groups) > 1:
        handles += [
            Line2D([], [], color="0.3", marker=MARKERS[i % len(MARKERS)], linestyle="", label=_group_label(g))
            for i, g in enumerate(groups)
        ]
    handles.append(Line2D([], [], color="0.3", linestyle="--", label="Pareto front"))
    plain_legend(ax, handles=handles, fontsize=8, loc="best")
    if not scored:
        note(ax, "no run evaluated meta-test tasks")
    ax.set_xlabel("cFLOP: training FLOPs over the whole stream")
    ax.set_ylabel("E: mean error over meta-test tasks")
    ax.set_title("error vs compute")
    ax.grid(alpha=0.3)
    return save_png(fig, path)


def _plot_task_errors(runs: Sequence[_Run], path: Path) -> Path:
    """Error of each evaluated task, one line per run, tasks in stream order (the union over the runs)."""
    uids = list(dict.fromkeys(str(r["task"]) for run in runs for r in records_of_type(run.data.records, "predict")))
    position = {uid: i for i, uid in enumerate(uids)}
    fig, ax = task_figure(len(uids))
    for i, run in enumerate(runs):
        scored = [r for r in records_of_type(run.data.records, "predict") if r.get("error") is not None]
        xs, ys = [position[str(r["task"])] for r in scored], [float(r["error"]) for r in scored]
        ax.plot(xs, ys, marker="o", markersize=3, linewidth=1, color=_color(i), label=run.id)
    set_task_ticks(ax, uids)
    ax.set_ylim(0.0, 1.05)
    ax.set_ylabel("error (1 - accuracy or 1 - mAP)")
    ax.set_title(f"error per task: {_group_label(runs[0].group)}", parse_math=False)
    if uids:
        plain_legend(ax, fontsize=7, loc="upper right")
    else:
        note(ax, "no predict records")
    ax.grid(axis="y", alpha=0.3)
    return save_png(fig, path)


def _plot_regret(curves: Sequence[tuple[str, np.ndarray]], reference: _Run, path: Path) -> Path:
    """Regret curves R(t) of runs against the reference run; below zero the run made fewer errors."""
    fig, ax = new_figure(8.0, 4.5)
    for i, (run_id, curve) in enumerate(curves):
        ax.plot(range(1, len(curve) + 1), curve, marker="o", markersize=3, linewidth=1, color=_color(i), label=run_id)
    ax.axhline(0.0, color="0.5", linewidth=0.8)
    if curves:
        plain_legend(ax, fontsize=8, loc="best")
    else:
        note(ax, "no other run evaluated the reference's tasks")
    ax.set_xlabel("tasks evaluated (stream order)")
    ax.set_ylabel("R(t): cumulative error difference")
    ax.set_title(f"regret against {reference.id}", parse_math=False)
    ax.grid(alpha=0.3)
    return save_png(fig, path)


def _plot_slices(per_run: Sequence[tuple[str, dict[str, dict[str, Any]]]], key: str, path: Path) -> Path:
    """Grouped bars: mean error per slice (x), one bar per run."""
    labels = list(dict.fromkeys(label for _, by_slice in per_run for label in by_slice))
    width = 0.8 / max(len(per_run), 1)
    fig, ax = new_figure(min(40.0, max(6.0, 0.3 * len(labels) * max(len(per_run), 2) + 2.0)), 4.5)
    for i, (run_id, by_slice) in enumerate(per_run):
        xs = [labels.index(label) + (i - (len(per_run) - 1) / 2) * width for label in by_slice]
        ys = [s["mean_error"] for s in by_slice.values()]
        ax.bar(xs, ys, width=width, color=_color(i), label=run_id)
    ax.set_xticks(range(len(labels)), labels, rotation=45 if len(labels) > 6 else 0, fontsize=8, parse_math=False)
    ax.set_ylim(0.0, 1.05)
    ax.set_ylabel("mean error")
    ax.set_title(f"mean error by {key}")
    if labels:
        plain_legend(ax, fontsize=7, loc="upper right")
    else:
        note(ax, "no evaluated tasks")
    ax.grid(axis="y", alpha=0.3)
    return save_png(fig, path)


def _resolutions(run: RunData) -> dict[str, float] | None:
    """Resolution per task uid from run.json's stream tasks ('resolution' or metadata), None if any lacks it."""
    values = {}
    for uid, task in run.task_metadata.items():
        value = task.get("resolution", (task.get("metadata") or {}).get("resolution"))
        if value is None:
            return None
        values[uid] = float(value)
    return values


def _slice_section(runs: Sequence[_Run], out: Path) -> _Section:
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
            _plot_slices(per_run, key, out / name)
            section.figures.append((name, f"mean error by {key}"))
    return section


def _regret_section(runs: Sequence[_Run], reference: _Run, out: Path) -> _Section:
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
                f"{run.id} is over {_group_label(run.group)}, the reference {reference.id} over "
                f"{_group_label(reference.group)}: no regret curve (pass --reference to pick a run of the same stream)"
            )
            continue
        try:
            curves.append((run.id, regret_curve(run.data.records, reference.data.records)))
        except ValueError as e:
            section.notes.append(f"{run.id}: {e}")
    _plot_regret(curves, reference, out / "regret.png")
    section.figures.append(("regret.png", f"regret curves against {reference.id}"))
    return section


def _matrix_section(runs: Sequence[_Run], out: Path) -> _Section | None:
    """Accuracy matrices (CLEAR-style runs that evaluate every task after each training event), from the events."""
    from lifelong.metrics.accuracy_matrix import clear_metrics, matrix_from_records, reported_metrics
    from lifelong.report.plots import plot_accuracy_matrix

    matrix_runs = [r for r in runs if r.data.info["stream"].get("evaluation") == "all"]
    if not matrix_runs:
        return None
    section = _Section(
        "Accuracy matrices",
        "Accuracy (%) of the model after training bucket i (rows) on the evaluation data of bucket j (columns).",
    )
    for i, run in enumerate(matrix_runs, start=1):
        labels = list(run.data.task_metadata)
        matrix = matrix_from_records(run.data.records, len(labels))
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


def _transfer_rows(runs: Sequence[_Run]) -> tuple[list[dict[str, str]], list[str]]:
    """Forward transfer per run and repeated dataset, and notes on the datasets left out."""
    rows, notes = [], []
    for run in runs:
        values, skipped = forward_transfer_details(run.data.records)
        rows += [{"run_id": run.id, "dataset": name, "ft": f"{ft:+.3f}"} for name, ft in values.items()]
        notes += [f"{run.id}: {name}: {why}" for name, why in skipped.items()]
    return rows, notes


def _table_rows(runs: Sequence[_Run], fronts: dict[tuple[str, Any], list[_Run]]) -> list[dict[str, str]]:
    """The runs table, formatted."""
    on_front = {r.id for front in fronts.values() for r in front}
    return [
        {
            "run_id": r.id,
            "learner": r.row["learner"],
            "seed": str(r.row["seed"]),
            "stream": _group_label(r.group),
            "error": _format(r.row["meta_test_mean_error"], ".4f"),
            "cflop": _format(r.row["cflop"], ".3g"),
            "tasks": f"{r.row['num_evaluated']} / {r.row['num_tasks']} ({r.row['num_meta_test']} meta-test)",
            "pareto": "yes" if r.id in on_front else "",
        }
        for r in runs
    ]


def _seed_rows(runs: Sequence[_Run]) -> list[dict[str, str]]:
    """Mean ± std over seeds per (stream, learner), formatted."""
    return [
        {
            "stream": _group_label((g["stream"], g["eval_split"])),
            "learner": g["learner"],
            "seeds": ", ".join(map(str, g["seeds"])),
            "error": _mean_std(g["meta_test_mean_error_mean"], g["meta_test_mean_error_std"], ".4f"),
            "cflop": _mean_std(g["cflop_mean"], g["cflop_std"], ".3g"),
        }
        for g in aggregate_seeds(r.row for r in runs)
    ]


def _render(context: dict[str, Any]) -> str:
    """The page from the packaged template, with every value autoescaped."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("lifelong.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    return env.get_template(TEMPLATE).render(**context)


def write_report(
    run_dirs: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], *, reference: str | None = None
) -> Path:
    """Write index.html and its PNG figures into `out` for the given run folders; return the page's path.

    `reference` (a run id or a learner name) is the run the regret curves compare against; by default the first
    run of learner 'independent', else the first run. Runs over another stream or split get no regret curve
    (the page says so). Raises when a folder is not a run folder or a run is given twice.
    """
    if not run_dirs:
        raise ValueError("no run folders given; pass one or more folders written by `lifelong run`")
    runs = []
    for run_dir in run_dirs:
        data = read_run(run_dir)
        runs.append(_Run(data, summarize_run(data)))
    ids = [r.id for r in runs]
    if len(set(ids)) < len(ids):
        raise ValueError(f"run(s) {sorted({i for i in ids if ids.count(i) > 1})} given twice: {list(run_dirs)}")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"report folder {str(out)!r} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    ref = _pick_reference(runs, reference)
    fronts = _pareto_fronts(runs)

    compute = _Section(
        "Error vs compute",
        "Mean error over the meta-test tasks (E) against the training FLOPs of the whole stream (cFLOP). "
        "Dashed: the Pareto front of each stream (no run is better in both).",
        figures=[("error_vs_cflop.png", "error vs cFLOP with the Pareto front")],
    )
    _plot_error_vs_cflop(runs, fronts, out / "error_vs_cflop.png")
    unscored = [r.id for r in runs if r.row["meta_test_mean_error"] is None]
    if unscored:
        compute.notes.append(f"not drawn (no meta-test task evaluated): {', '.join(unscored)}")
    per_task = _Section("Error per task", "Error of each evaluated task, in stream order.")
    for i, members in enumerate(_groups(runs).values(), start=1):
        name = f"task_errors_{i}.png"
        _plot_task_errors(members, out / name)
        per_task.figures.append((name, f"error per task, {_group_label(members[0].group)}"))
    transfer_rows, transfer_notes = _transfer_rows(runs)
    page = _render(
        {
            "runs": _table_rows(runs, fronts),
            "seed_rows": _seed_rows(runs),
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
