"""Plots of one run from its per-event records: error per task and cumulative training FLOPs.

Figures are drawn on matplotlib's Agg canvas directly (no pyplot, no display, no global backend change)
and written as PNG atomically.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from lifelong.core.files import atomic_write_bytes
from lifelong.metrics.analysis import records_of_type

META_TEST_COLOR = "tab:orange"
META_TRAIN_COLOR = "tab:blue"
MISSING_COLOR = "0.6"


def new_figure(width: float, height: float = 4.5) -> tuple[Figure, Any]:
    """A figure with one axes on its own Agg canvas (no pyplot state), laid out to fit its labels."""
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def task_figure(num_points: int) -> tuple[Figure, Any]:
    """A figure wide enough for one x label per point (106 tasks fit)."""
    return new_figure(min(40.0, max(6.0, 0.2 * num_points + 2.0)))


def set_task_ticks(ax: Any, uids: list[str]) -> None:
    """One x tick per task labelled with its uid (plain text, no math), rotated and shrunk for long streams."""
    rotation, fontsize = 90 if len(uids) > 4 else 0, 7 if len(uids) > 30 else 9
    ax.set_xticks(range(len(uids)), uids, rotation=rotation, fontsize=fontsize, parse_math=False)
    ax.set_xlim(-0.6, max(len(uids), 1) - 0.4)


def note(ax: Any, text: str) -> None:
    """Grey text in the middle of the axes, e.g. to say why a plot is empty."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="0.4", parse_math=False)


def plain_legend(ax: Any, **kwargs: Any) -> Any:
    """A legend whose labels (run ids, learner names) are plain text: '$' starts no math."""
    legend = ax.legend(**kwargs)
    for text in legend.get_texts():
        text.set_parse_math(False)
    return legend


def save_png(fig: Figure, path: str | os.PathLike[str]) -> Path:
    """Render `fig` as PNG (100 dpi) and write it atomically to `path`."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    path = Path(path)
    atomic_write_bytes(path, buffer.getvalue())
    return path


def plot_task_errors(records: Iterable[Mapping[str, Any]], path: str | os.PathLike[str]) -> Path:
    """Bar chart of the error of each predict record in stream order; meta-test tasks highlighted."""
    predictions = records_of_type(records, "predict")
    fig, ax = task_figure(len(predictions))
    uids = [str(r.get("task", r.get("task_name", "?"))) for r in predictions]
    errors = [r.get("error") for r in predictions]
    meta_test = [bool(r.get("meta_test", True)) for r in predictions]
    heights = [0.0 if e is None else float(e) for e in errors]
    colors = [META_TEST_COLOR if m else META_TRAIN_COLOR for m in meta_test]
    ax.bar(range(len(uids)), heights, color=colors, width=0.8)
    for x, error in enumerate(errors):
        if error is None:
            ax.text(x, 0.01, "n/a", ha="center", va="bottom", rotation=90, fontsize=7, color=MISSING_COLOR)
    set_task_ticks(ax, uids)
    ax.set_ylim(0.0, max([1.0, *heights]) * 1.05)
    ax.set_ylabel("error (1 - accuracy or 1 - mAP)")
    scored = [float(e) for e, m in zip(errors, meta_test, strict=True) if e is not None and m]
    title = "error per task"
    if scored:
        title += f"  (mean over {len(scored)} meta-test tasks: {sum(scored) / len(scored):.3f})"
    ax.set_title(title)
    if not predictions:
        note(ax, "no predict records")
    ax.legend(
        handles=[Patch(color=META_TRAIN_COLOR, label="meta-train"), Patch(color=META_TEST_COLOR, label="meta-test")],
        loc="upper right",
        fontsize=8,
    )
    ax.grid(axis="y", alpha=0.3)
    return save_png(fig, path)


def plot_cumulative_flops(records: Iterable[Mapping[str, Any]], path: str | os.PathLike[str]) -> Path:
    """Cumulative training FLOPs after each train event in stream order, on a log y-axis."""
    trains = records_of_type(records, "train")
    fig, ax = task_figure(len(trains))
    uids = [str(r.get("task", r.get("task_name", "?"))) for r in trains]
    cumulative: list[float] = []
    total = 0.0
    for record in trains:  # prefer the run's own running total; sum per-event FLOPs where it is missing
        recorded = record.get("cumulative_train_flops")
        total = total + float(record.get("train_flops") or 0.0) if recorded is None else float(recorded)
        cumulative.append(total)
    positions = list(range(len(trains)))
    positive = [(x, y) for x, y in zip(positions, cumulative, strict=True) if y > 0]
    if positive:
        ax.set_yscale("log")
        ax.plot(*zip(*positive, strict=True), marker="o", markersize=3, color=META_TRAIN_COLOR)
        meta_test = [x for x, r in zip(positions, trains, strict=True) if r.get("meta_test")]
        if meta_test and len(meta_test) < len(trains):
            ax.axvspan(min(meta_test) - 0.5, max(meta_test) + 0.5, color=META_TEST_COLOR, alpha=0.15, label="meta-test")
            ax.legend(loc="upper left", fontsize=8)
        ax.set_title(f"cumulative training FLOPs  (total {cumulative[-1]:.3g})")
    else:
        ax.set_title("cumulative training FLOPs")
        note(ax, "no training FLOPs recorded" if trains else "no train records")
    set_task_ticks(ax, uids)
    ax.set_xlabel("stream position (task)")
    ax.set_ylabel("cumulative training FLOPs")
    ax.grid(alpha=0.3)
    return save_png(fig, path)


def plot_run(records: Iterable[Mapping[str, Any]], out_dir: str | os.PathLike[str]) -> list[Path]:
    """Write task_errors.png and cumulative_flops.png into `out_dir`; return their paths."""
    records = list(records)
    out_dir = Path(out_dir)
    return [
        plot_task_errors(records, out_dir / "task_errors.png"),
        plot_cumulative_flops(records, out_dir / "cumulative_flops.png"),
    ]


def plot_accuracy_matrix(
    R: Any, path: str | os.PathLike[str], *, labels: Sequence[str] | None = None, title: str = ""
) -> Path:
    """Heatmap of an accuracy matrix (rows: after training bucket i; columns: evaluated on bucket j) in percent.

    Each filled cell is annotated with its accuracy; None/NaN cells (not evaluated yet) stay blank. `labels` name
    the buckets (default: their 1-based stream positions).
    """
    matrix = np.array(R, dtype=float)  # None -> NaN
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] == 0:
        raise ValueError(f"accuracy matrix must be a non-empty square (N x N) array, got shape {matrix.shape}")
    n = matrix.shape[0]
    if np.isinf(matrix).any() or (matrix[np.isfinite(matrix)] < 0).any() or (matrix[np.isfinite(matrix)] > 1).any():
        raise ValueError(
            "accuracy matrix cells must be accuracies in [0, 1] (None/NaN for missing ones), not percentages or "
            f"errors; got values from {np.nanmin(matrix)!r} to {np.nanmax(matrix)!r}"
        )
    names = [str(i + 1) for i in range(n)] if labels is None else [str(label) for label in labels]
    if len(names) != n:
        raise ValueError(f"labels must name each of the {n} buckets, got {len(names)}: {list(names)!r}")
    side = min(30.0, max(5.0, 0.55 * n + 3.5))
    fig, ax = new_figure(side + 1.2, side)
    percent = np.ma.masked_invalid(100.0 * matrix)
    cmap = colormaps["viridis"].with_extremes(bad="white")
    image = ax.imshow(percent, cmap=cmap, vmin=0.0, vmax=100.0, aspect="equal")
    fontsize = 9 if n <= 10 else 7 if n <= 20 else 5
    for i, j in zip(*np.nonzero(np.isfinite(matrix)), strict=True):
        value = 100.0 * matrix[i, j]
        color = "black" if value >= 60.0 else "white"  # viridis is light at the top of the scale
        ax.text(j, i, f"{value:.1f}", ha="center", va="center", fontsize=fontsize, color=color)
    ax.set_xticks(range(n), [f"evaluated on {name}" for name in names], rotation=45, ha="right", parse_math=False)
    ax.set_yticks(range(n), [f"after training {name}" for name in names], parse_math=False)
    ax.tick_params(labelsize=fontsize)
    fig.colorbar(image, ax=ax, label="accuracy (%)", shrink=0.8)
    ax.set_title(title or "accuracy matrix (%)", parse_math=False)
    if not np.isfinite(matrix).any():
        note(ax, "no cell evaluated")
    return save_png(fig, path)
