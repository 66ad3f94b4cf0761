"""The report's figures over several runs: error vs cFLOP with the Pareto front, error per task, regret, slices.

Every string that comes from runs (ids, learners, task names, domains) is drawn as plain text (no mathtext).
The drawing helpers (figures, legends, PNG output) are in `lifelong.report.plots`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from lifelong.metrics.analysis import records_of_type
from lifelong.report.plots import (
    keep_axes_size,
    keep_task_axes,
    legend_below,
    log_compute_axis,
    new_figure,
    note,
    outside_legend,
    save_png,
    set_task_ticks,
    stacked_figure,
    task_figure,
    wrap_label,
)
from lifelong.report.runs import Run, group_label, group_runs, line_color, setting

LONG_STREAM = 40  # tasks: beyond, the legend goes under the figure so that the tasks get its whole width


def error_vs_cflop_figure(runs: Sequence[Run], fronts: dict[tuple[str, Any], list[Run]]) -> Figure:
    """Meta-test error E against cFLOP, one axes per stream (runs of different streams are not comparable): a
    point per run (colour: its learner and options, the same on every axes), the stream's Pareto front dashed where
    two or more runs are on it, a log compute axis with numbered ticks (symlog when a run has 0 FLOPs). The legends
    list only what their axes draw."""
    groups = group_runs(runs)
    learners = list(dict.fromkeys(setting(r) for r in runs))
    fig, axes = stacked_figure(8.0, 4.6, max(1, len(groups)))
    if not groups:
        note(axes[0], "no run evaluated meta-test tasks")
    for ax, (group, members) in zip(axes, groups.items(), strict=False):
        scored = [r for r in members if r.row["meta_test_mean_error"] is not None]
        for i, learner in enumerate(learners):
            mine = [r for r in scored if setting(r) == learner]
            if mine:
                xs, ys = [r.row["cflop"] for r in mine], [r.row["meta_test_mean_error"] for r in mine]
                ax.scatter(xs, ys, color=line_color(i), s=40, zorder=3, label=wrap_label(learner, 40))
        front = [(r.row["cflop"], r.row["meta_test_mean_error"]) for r in fronts.get(group) or []]
        if len(set(front)) > 1:  # one point (one run, or seeds that tie) draws no line: no legend entry either
            xs, ys = zip(*front, strict=True)
            ax.step(xs, ys, where="post", color="0.3", linestyle="--", linewidth=1, zorder=2, label="Pareto front")
        log_compute_axis(ax, [r.row["cflop"] for r in scored])
        if scored:
            outside_legend(ax, fontsize=8)
        else:
            note(ax, "no run evaluated meta-test tasks")
        ax.set_xlabel("cFLOP: training FLOPs over the whole stream")
        ax.set_ylabel("E: mean error over meta-test tasks")
        ax.set_title(wrap_label(f"error vs compute: {group_label(group)}", 80), parse_math=False)
        ax.grid(alpha=0.3)
        ax.grid(which="minor", axis="x", alpha=0.15)
        keep_axes_size(fig, ax, 5.5, 0.0)  # width for the legend; each axes has its row's height
        _annotate_runs(ax, scored)
    return fig


def plot_error_vs_cflop(runs: Sequence[Run], fronts: dict[tuple[str, Any], list[Run]], path: Path) -> Path:
    """`error_vs_cflop_figure`, written to `path` as PNG."""
    return save_png(error_vs_cflop_figure(runs, fronts), path)


def _annotate_runs(ax: Any, runs: Sequence[Run]) -> None:
    """Each point's label beside it (to the left of points in the right half, so that it stays in the axes); points
    whose labels would overlap share one label ('R1, R2') at the first of them."""
    ax.autoscale_view()
    clusters = [[run] for run in runs]
    while True:
        labels = [_annotate(ax, cluster) for cluster in clusters]
        ax.figure.canvas.draw()
        renderer = ax.figure.canvas.get_renderer()
        boxes = [label.get_window_extent(renderer).expanded(1.0, 1.3) for label in labels]
        pair = next(((i, j) for i in range(len(boxes)) for j in range(i) if boxes[i].overlaps(boxes[j])), None)
        if pair is None:
            return
        for label in labels:
            label.remove()
        i, j = pair
        clusters[j] += clusters.pop(i)


def _annotate(ax: Any, runs: Sequence[Run]) -> Any:
    x, y = runs[0].row["cflop"], runs[0].row["meta_test_mean_error"]
    left = ax.transLimits.transform(ax.transScale.transform((x, y)))[0] > 0.5
    return ax.annotate(
        ", ".join(run.label for run in runs),
        (x, y),
        xytext=(-4 if left else 4, 4),
        textcoords="offset points",
        ha="right" if left else "left",
        fontsize=7,
        parse_math=False,
    )


def plot_task_errors(runs: Sequence[Run], path: Path) -> Path:
    """Error of each evaluated task, one line per run, tasks in stream order (the union over the runs)."""
    uids = list(dict.fromkeys(str(r["task"]) for run in runs for r in records_of_type(run.data.records, "predict")))
    position = {uid: i for i, uid in enumerate(uids)}
    fig, ax = task_figure(len(uids))
    for i, run in enumerate(runs):
        scored = [r for r in records_of_type(run.data.records, "predict") if r.get("error") is not None]
        xs, ys = [position[str(r["task"])] for r in scored], [float(r["error"]) for r in scored]
        ax.plot(xs, ys, marker="o", markersize=3, linewidth=1, color=line_color(i), label=run.legend)
    set_task_ticks(ax, uids)
    ax.set_ylim(0.0, 1.05)
    ax.set_ylabel("error (1 - accuracy or 1 - mAP)")
    ax.set_title(wrap_label(f"error per task: {group_label(runs[0].group)}", 90), parse_math=False)
    ax.grid(axis="y", alpha=0.3)
    if not uids:
        note(ax, "no predict records")
    elif len(uids) > LONG_STREAM:
        keep_task_axes(fig, ax)
        legend_below(fig, ax, fontsize=7)
        return save_png(fig, path)
    else:
        outside_legend(ax, fontsize=7)
    keep_task_axes(fig, ax)
    return save_png(fig, path)


def plot_regret(curves: Sequence[tuple[Run, Run, np.ndarray]], stream: str, path: Path) -> Path:
    """Regret curves R(t) of runs against their references (run, reference, curve; at least one), over one stream;
    below zero the run made fewer errors than its reference."""
    fig, ax = new_figure(8.0, 4.5)
    for i, (run, reference, curve) in enumerate(curves):
        label = wrap_label(f"{run.label} vs {reference.label}: {run.row['learner']}, seed {run.row['seed']}", 32)
        ax.plot(
            range(1, len(curve) + 1), curve, marker="o", markersize=3, linewidth=1, color=line_color(i), label=label
        )
    ax.axhline(0.0, color="0.5", linewidth=0.8)
    outside_legend(ax, fontsize=8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("tasks evaluated (stream order)")
    ax.set_ylabel("R(t): cumulative error difference")
    ax.set_title(wrap_label(f"regret against each run's reference: {stream}", 80), parse_math=False)
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


def slice_labels(per_run: Sequence[tuple[str, dict[str, dict[str, Any]]]], key: str) -> list[str]:
    """The slices of all runs, in slice order (not in order of first appearance: a run may lack small tasks)."""
    labels = {label for _, by_slice in per_run for label in by_slice}
    return sorted(labels, key=lambda label: _slice_order(key, label))


def plot_slices(per_run: Sequence[tuple[str, dict[str, dict[str, Any]]]], key: str, path: Path) -> Path:
    """Grouped bars: mean error per slice (x), one bar per run ((legend label, slices) pairs)."""
    labels = slice_labels(per_run, key)
    width = 0.8 / max(len(per_run), 1)
    fig, ax = new_figure(max(6.0, 0.3 * len(labels) * max(len(per_run), 2) + 2.0), 4.5)
    for i, (legend, by_slice) in enumerate(per_run):
        xs = [labels.index(label) + (i - (len(per_run) - 1) / 2) * width for label in by_slice]
        ys = [s["mean_error"] for s in by_slice.values()]
        ax.bar(xs, ys, width=width, color=line_color(i), label=legend)
    slanted = {"rotation": 45, "ha": "right", "rotation_mode": "anchor"} if len(labels) > 6 else {}
    ax.set_xticks(range(len(labels)), labels, fontsize=8, parse_math=False, **slanted)
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
