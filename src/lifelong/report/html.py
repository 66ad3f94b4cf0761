"""HTML report over runs: run tables, error vs cFLOP with the Pareto front, per-task errors, regret, slices, FT.

`write_report` writes one page (index.html) and its PNG figures into one folder. The page links the figures by
relative name and loads nothing else (no script, no stylesheet or font from elsewhere), so the folder can be
moved or archived as is. Every string that comes from runs (ids, learners, task names, domains) is escaped by
Jinja2's autoescaping in the page and drawn as plain text (no mathtext) in figures.

The runs table gives each run's status: 'finished', or failed, interrupted or incomplete as the run folder's
summary.json and the results database beside the folder (results.sqlite, opened read-only) tell it. Runs that
evaluate every bucket after each training event (CLEAR-style accuracy matrices) get their matrix and one error
curve per bucket instead of a line through every evaluation.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.ticker import NullFormatter

from lifelong.core.files import atomic_write_bytes
from lifelong.metrics.accuracy_matrix import clear_metrics, matrix_from_records, reported_metrics
from lifelong.metrics.analysis import (
    aggregate_seeds,
    forward_transfer_details,
    pareto_front,
    records_of_type,
    regret_curve,
    slices,
)
from lifelong.report.plots import (
    keep_axes_size,
    keep_task_axes,
    new_figure,
    note,
    outside_legend,
    plot_accuracy_matrix,
    plot_bucket_errors,
    save_png,
    set_task_ticks,
    task_figure,
    wrap_label,
)
from lifelong.results import DB_FILE, RunData, read_run, summarize_run

INDEX_FILE = "index.html"
TEMPLATE = "report.html.j2"
REFERENCE_LEARNER = "independent"
MARKERS = "osD^vP*Xph"
SUMMARY_FILE = "summary.json"
FINISHED = "finished"


@dataclass
class _Run:
    """A run of the report: what was read from its folder and its table row."""

    data: RunData
    row: dict[str, Any]
    status: str = FINISHED

    @property
    def id(self) -> str:
        return self.row["run_id"]

    @property
    def finished(self) -> bool:
        return self.status == FINISHED

    @property
    def is_matrix(self) -> bool:
        """A run that evaluates every task after each training event (CLEAR-style: an accuracy matrix)."""
        return self.data.info["stream"].get("evaluation") == "all"

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


def _db_status(data: RunData) -> tuple[str, dict[str, Any]] | None:
    """(status, summary) of the run in the results database beside its folder (read-only), None if unknown."""
    path = data.path.parent / DB_FILE
    if not path.is_file():
        return None
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=2.0)
        try:
            row = con.execute("SELECT status, summary FROM runs WHERE run_id = ?", (data.run_id,)).fetchone()
        finally:
            con.close()
        if row is None:
            return None
        summary = json.loads(row[1]) if row[1] else {}
    except (sqlite3.Error, ValueError):
        return None  # not a results database we can read: the folder's files decide alone
    return str(row[0]), summary if isinstance(summary, dict) else {}


def _run_status(data: RunData) -> str:
    """'finished', or what is known of a run that did not finish, from summary.json and the results database.

    A run is unfinished when the database says failed or interrupted, when summary.json says it stopped before
    the last event (events_done < events_total), or when there is no summary.json (still running, or killed).
    """
    db = _db_status(data)
    recorded = f"{len(data.records)} events recorded"
    if db is not None and db[0] == "failed":
        error = str(db[1].get("error") or "").strip()
        return f"failed ({recorded})" + (f": {error[:200]}" if error else "")
    if db is not None and db[0] == "interrupted":
        return f"interrupted ({recorded})"
    summary_path = data.path / SUMMARY_FILE
    if not summary_path.is_file():
        return f"incomplete: no {SUMMARY_FILE}, {recorded} (still running, or killed)"
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"incomplete: {SUMMARY_FILE} unreadable, {recorded}"
    if not isinstance(summary, dict):
        summary = {}
    done, total = summary.get("events_done"), summary.get("events_total")
    if isinstance(done, int) and isinstance(total, int) and done < total:
        return f"interrupted after {done} of {total} events"
    return FINISHED


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
    for front in fronts.values():
        if front:
            xs = [r.row["cflop"] for r in front]
            ys = [r.row["meta_test_mean_error"] for r in front]
            ax.step(xs, ys, where="post", color="0.3", linestyle="--", linewidth=1, zorder=2)
    cflops = [r.row["cflop"] for r in scored]
    positive = [c for c in cflops if c > 0]
    if cflops and len(positive) == len(cflops):
        ax.set_xscale("log")
        low, high = ax.get_xlim()
        if np.log10(high / low) >= 1.0:  # a decade or more: label the powers of ten only, minor labels collide
            ax.xaxis.set_minor_formatter(NullFormatter())
    elif cflops:
        ax.set_xscale("symlog", linthresh=min(positive, default=1.0))
    _annotate_runs(ax, scored)
    handles = [Line2D([], [], color=_color(i), marker="o", linestyle="", label=name) for i, name in enumerate(learners)]
    if len(groups) > 1:
        handles += [
            Line2D([], [], color="0.3", marker=MARKERS[i % len(MARKERS)], linestyle="", label=_group_label(g))
            for i, g in enumerate(groups)
        ]
    handles.append(Line2D([], [], color="0.3", linestyle="--", label="Pareto front"))
    outside_legend(ax, handles=handles, fontsize=8)
    if not scored:
        note(ax, "no run evaluated meta-test tasks")
    ax.set_xlabel("cFLOP: training FLOPs over the whole stream")
    ax.set_ylabel("E: mean error over meta-test tasks")
    ax.set_title("error vs compute")
    ax.grid(alpha=0.3)
    keep_axes_size(fig, ax, 5.5, 3.5)
    return save_png(fig, path)


def _annotate_runs(ax: Any, runs: Sequence[_Run]) -> None:
    """Each point's run id beside it; to the left of points in the right half, so that it stays in the axes."""
    ax.autoscale_view()
    for run in runs:
        x, y = run.row["cflop"], run.row["meta_test_mean_error"]
        left = ax.transLimits.transform(ax.transScale.transform((x, y)))[0] > 0.5
        ax.annotate(
            run.id,
            (x, y),
            xytext=(-4 if left else 4, 4),
            textcoords="offset points",
            ha="right" if left else "left",
            fontsize=7,
            parse_math=False,
        )


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
        outside_legend(ax, fontsize=7)
    else:
        note(ax, "no predict records")
    ax.grid(axis="y", alpha=0.3)
    keep_task_axes(fig, ax)
    return save_png(fig, path)


def _per_task_section(runs: Sequence[_Run], out: Path) -> _Section:
    """Error per task: one figure per stream with a line per run; for accuracy-matrix runs (which evaluate every
    bucket after each training event) one figure per run with a curve per evaluated bucket over training."""
    section = _Section("Error per task", "Error of each evaluated task, in stream order.")
    matrix_figures = 0
    for i, members in enumerate(_groups(runs).values(), start=1):
        lines = [r for r in members if not r.is_matrix]
        if lines:
            name = f"task_errors_{i}.png"
            _plot_task_errors(lines, out / name)
            section.figures.append((name, f"error per task, {_group_label(members[0].group)}"))
        for run in members:
            if not run.is_matrix:
                continue
            matrix_figures += 1
            name = f"bucket_errors_{matrix_figures}.png"
            labels = list(run.data.task_metadata)
            matrix = matrix_from_records(run.data.records, len(labels))
            plot_bucket_errors(matrix, out / name, labels=labels, title=f"error per bucket over training: {run.id}")
            section.figures.append((name, f"error of each evaluated bucket after each training event, {run.id}"))
    if matrix_figures:
        section.text += (
            " Runs that evaluate every bucket after each training event (accuracy matrices): one curve per evaluated "
            "bucket, its error after each training event; the outlined point is the bucket just trained."
        )
    return section


def _plot_regret(curves: Sequence[tuple[str, np.ndarray]], reference: _Run, path: Path) -> Path:
    """Regret curves R(t) of runs against the reference run (at least one); below zero the run made fewer errors."""
    fig, ax = new_figure(8.0, 4.5)
    for i, (run_id, curve) in enumerate(curves):
        ax.plot(range(1, len(curve) + 1), curve, marker="o", markersize=3, linewidth=1, color=_color(i), label=run_id)
    ax.axhline(0.0, color="0.5", linewidth=0.8)
    outside_legend(ax, fontsize=8)
    ax.set_xlabel("tasks evaluated (stream order)")
    ax.set_ylabel("R(t): cumulative error difference")
    ax.set_title(wrap_label(f"regret against {reference.id}", 80), parse_math=False)
    ax.grid(alpha=0.3)
    keep_axes_size(fig, ax, 5.5, 3.0)
    return save_png(fig, path)


def _slice_order(key: str, label: str) -> tuple[Any, ...]:
    """Sort key of a slice label as `slices` writes it: size bins by their lower edge ('< 1,000' first, then
    '1,000-10,000', then '>= 10,000'), resolutions by value, domains by name with '(none)' last."""
    if key == "domain":
        return (label == "(none)", label)
    text = label.replace(",", "").strip()
    if text.startswith("<"):
        return (0, -math.inf, label)
    text = text.removeprefix(">=").strip()
    try:
        return (0, float(text if key == "resolution" else text.split("-", 1)[0] or text), label)
    except ValueError:
        return (1, 0.0, label)  # not a label `slices` writes: after the others, by name


def _slice_labels(per_run: Sequence[tuple[str, dict[str, dict[str, Any]]]], key: str) -> list[str]:
    """The slices of all runs, in slice order (not in order of first appearance: a run may lack small tasks)."""
    labels = {label for _, by_slice in per_run for label in by_slice}
    return sorted(labels, key=lambda label: _slice_order(key, label))


def _plot_slices(per_run: Sequence[tuple[str, dict[str, dict[str, Any]]]], key: str, path: Path) -> Path:
    """Grouped bars: mean error per slice (x), one bar per run."""
    labels = _slice_labels(per_run, key)
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
        outside_legend(ax, fontsize=7)
    else:
        note(ax, "no evaluated tasks")
    ax.grid(axis="y", alpha=0.3)
    width, _ = fig.get_size_inches()
    keep_axes_size(fig, ax, width - 2.0, 2.8)
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
    _plot_regret(curves, reference, out / "regret.png")
    section.figures.append(("regret.png", f"regret curves against {reference.id}"))
    return section


def _matrix_section(runs: Sequence[_Run], out: Path) -> _Section | None:
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


def _tasks_evaluated(run: _Run) -> str:
    """The 'tasks evaluated' cell: evaluated / stream tasks (and meta-test ones where the stream has a meta-test
    part); for an accuracy-matrix run, its buckets and evaluations ('10 buckets, 10 × 10 evaluations')."""
    row, stream = run.row, run.data.info["stream"]
    if run.is_matrix:
        cells = [r for r in records_of_type(run.data.records, "predict") if r.get("after_task_index") is not None]
        steps = len({r["after_task_index"] for r in cells})
        n = row["num_tasks"]
        if len(cells) == steps * n:
            return f"{n} buckets, {steps} × {n} evaluations"
        return f"{n} buckets, {len(cells)} evaluations after {steps} training events"
    text = f"{row['num_evaluated']} / {row['num_tasks']}"
    if "meta_test_from_year" in stream and stream["meta_test_from_year"] is None:
        return text  # the stream has no meta-test part
    return f"{text} ({row['num_meta_test']} meta-test)"


def _table_rows(runs: Sequence[_Run], fronts: dict[tuple[str, Any], list[_Run]]) -> list[dict[str, Any]]:
    """The runs table, formatted; `finished` marks the rows whose status needs attention."""
    on_front = {r.id for front in fronts.values() for r in front}
    return [
        {
            "run_id": r.id,
            "status": r.status,
            "finished": r.finished,
            "learner": r.row["learner"],
            "seed": str(r.row["seed"]),
            "stream": _group_label(r.group),
            "error": _format(r.row["meta_test_mean_error"], ".4f"),
            "cflop": _format(r.row["cflop"], ".3g"),
            "tasks": _tasks_evaluated(r),
            "pareto": "yes" if r.id in on_front else "",
        }
        for r in runs
    ]


def _seed_rows(runs: Sequence[_Run]) -> list[dict[str, Any]]:
    """Mean ± std over seeds per (stream, learner), formatted: the number of seeds, their ids, unfinished runs."""
    rows = []
    for g in aggregate_seeds(r.row for r in runs):
        members = [r for r in runs if (*r.group, r.row["learner"]) == (g["stream"], g["eval_split"], g["learner"])]
        unfinished = [str(r.row["seed"]) for r in members if not r.finished]
        rows.append(
            {
                "stream": _group_label((g["stream"], g["eval_split"])),
                "learner": g["learner"],
                "num_seeds": str(len(g["seeds"])),
                "seeds": ", ".join(map(str, g["seeds"])),
                "unfinished": f"not finished: seed{'s' * (len(unfinished) > 1)} {', '.join(unfinished)}"
                if unfinished
                else "",
                "error": _mean_std(g["meta_test_mean_error_mean"], g["meta_test_mean_error_std"], ".4f"),
                "cflop": _mean_std(g["cflop_mean"], g["cflop_std"], ".3g"),
            }
        )
    return rows


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
        runs.append(_Run(data, summarize_run(data), _run_status(data)))
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
    per_task = _per_task_section(runs, out)
    transfer_rows, transfer_notes = _transfer_rows(runs)
    page = _render(
        {
            "runs": _table_rows(runs, fronts),
            "unfinished": [r.id for r in runs if not r.finished],
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
