"""Plots of one run from its per-event records: error per task and cumulative training FLOPs.

Figures are drawn on matplotlib's Agg canvas directly (no pyplot, no display, no global backend change)
and written as PNG atomically. Long labels (task uids, run ids, learner names) neither squash the plot nor get
cut off: `keep_axes_size` grows a figure to make room for them (up to the page's width), legends wrap them, and
`save_png` checks the layout before saving (`lifelong.report.layout`: no text overlaps another or leaves the figure,
no figure is wider than the page).
"""

from __future__ import annotations

import io
import os
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from lifelong.core.files import atomic_write_bytes
from lifelong.metrics.analysis import records_of_type
from lifelong.report.layout import DPI, MAX_WIDTH_IN, fit_layout

META_TEST_COLOR = "tab:orange"
META_TRAIN_COLOR = "tab:blue"
MISSING_COLOR = "0.6"
LABEL_WRAP = 40  # characters per line of a legend label
PAD_IN = 0.1  # blank margin around everything drawn (inches)


def new_figure(width: float, height: float = 4.5) -> tuple[Figure, Any]:
    """A figure with one axes on its own Agg canvas (no pyplot state), laid out to fit its labels."""
    fig = Figure(figsize=(min(width, MAX_WIDTH_IN), height), dpi=DPI)
    fig.set_layout_engine("constrained", w_pad=PAD_IN, h_pad=PAD_IN)
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def stacked_figure(width: float, height: float, rows: int) -> tuple[Figure, list[Any]]:
    """A figure of `rows` axes one above the other, each `height` inches tall, on its own Agg canvas."""
    fig = Figure(figsize=(min(width, MAX_WIDTH_IN), height * rows), dpi=DPI)
    fig.set_layout_engine("constrained", w_pad=PAD_IN, h_pad=PAD_IN, hspace=0.08)
    FigureCanvasAgg(fig)
    return fig, [fig.add_subplot(rows, 1, row) for row in range(1, rows + 1)]


def compact_number(value: float) -> str:
    """A tick label of a FLOPs axis: '0', '500', '2e7', '1.5e12' (no mathtext, no '+' or leading zeros)."""
    if value == 0:
        return "0"
    if 1e-3 <= abs(value) < 1e4:
        return f"{value:g}"
    mantissa, _, exponent = f"{value:.2g}".partition("e")
    return f"{mantissa}e{int(exponent)}" if exponent else mantissa


def log_compute_axis(ax: Any, values: Sequence[float]) -> None:
    """A log x axis over `values` (FLOPs) with numbered ticks: a view of at least a decade around them, each
    power of ten labelled ('1e12'), and 2 and 5 times them too when the view spans two decades or less; symlog
    (and 0 labelled) when a value is 0."""
    positive = [float(v) for v in values if v > 0]
    formatter = FuncFormatter(lambda value, _: compact_number(value))
    if len(positive) < len(values):  # 0 is linear, then a decade below the smallest positive value on, log
        smallest, largest = min(positive, default=1.0), max(positive, default=1.0)
        linthresh = 10.0 ** (np.floor(np.log10(smallest)) - 1)
        ax.set_xscale("symlog", linthresh=linthresh)
        ax.set_xlim(-0.2 * linthresh, largest * 10**0.2)  # a point at 0 shown whole
        ax.xaxis.set_major_formatter(formatter)
        return
    ax.set_xscale("log")
    if positive:
        low, high = np.log10(min(positive)), np.log10(max(positive))
        pad = max(0.1 * (high - low), (1.0 - (high - low)) / 2.0)  # margins; a single point gets a decade
        ax.set_xlim(10 ** (low - pad), 10 ** (high + pad))
        span = high - low + 2 * pad
    else:
        span = np.inf
    ax.xaxis.set_major_locator(LogLocator(base=10.0))
    ax.xaxis.set_major_formatter(formatter)
    if span <= 2.0:
        ax.xaxis.set_minor_locator(LogLocator(base=10.0, subs=(2.0, 5.0)))
        ax.xaxis.set_minor_formatter(formatter)
    else:
        ax.xaxis.set_minor_formatter(NullFormatter())


def task_figure(num_points: int) -> tuple[Figure, Any]:
    """A figure wide enough for one x label per point (106 tasks fit)."""
    return new_figure(min(MAX_WIDTH_IN, max(6.0, 0.2 * num_points + 2.0)))


def set_task_ticks(ax: Any, uids: list[str]) -> None:
    """One x tick per task labelled with its uid (plain text, no math), rotated and shrunk for long streams."""
    n = len(uids)
    longest = max(map(len, uids), default=0)
    rotation = 90 if n > 4 and longest > 3 else 0
    fontsize = 9 if n <= 20 else 7 if n <= 40 else 6 if n <= 70 else 5
    ax.set_xticks(range(len(uids)), uids, rotation=rotation, fontsize=fontsize, parse_math=False)
    ax.set_xlim(-0.6, max(len(uids), 1) - 0.4)


def keep_task_axes(fig: Figure, ax: Any) -> None:
    """`keep_axes_size` for a `task_figure`: the plot keeps its width less 2 inches and 2.8 inches of height."""
    width, _ = fig.get_size_inches()
    keep_axes_size(fig, ax, width - 2.0, 2.8)


def note(ax: Any, text: str) -> None:
    """Grey text in the middle of the axes, e.g. to say why a plot is empty."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="0.4", parse_math=False)


def wrap_label(text: str, width: int = LABEL_WRAP) -> str:
    """`text` on lines of at most `width` characters, broken at spaces (inside a word if need be)."""
    return "\n".join(textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=True)) or text


def plain_legend(ax: Any, *, wrap: int | None = LABEL_WRAP, **kwargs: Any) -> Any:
    """A legend whose labels (run ids, learner names) are plain text ('$' starts no math), wrapped at `wrap`."""
    legend = ax.legend(**kwargs)
    for text in legend.get_texts():
        text.set_parse_math(False)
        if wrap:
            text.set_text(wrap_label(text.get_text(), wrap))
    return legend


LEGEND_ROWS = 12  # entries in one column of a legend beside the axes: more go into further columns


def outside_legend(ax: Any, **kwargs: Any) -> Any:
    """A plain legend to the right of the axes, where it covers no data (`keep_axes_size` makes room for it); in
    columns of LEGEND_ROWS entries unless `ncols` is given, so that many runs do not run off the figure."""
    if "ncols" not in kwargs:
        kwargs["ncols"] = max(1, -(-len(ax.get_legend_handles_labels()[1]) // LEGEND_ROWS))
    return plain_legend(ax, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, **kwargs)


def legend_below(fig: Figure, ax: Any, *, columns: int = 4, **kwargs: Any) -> Any:
    """A plain legend of `ax`'s lines under the whole figure, `columns` wide: the axes keep the figure's width (a
    long stream's task labels need it); the figure grows by the legend's rows."""
    handles, labels = ax.get_legend_handles_labels()
    columns = max(1, min(columns, len(labels)))
    legend = fig.legend(handles, labels, loc="outside lower center", ncols=columns, **kwargs)
    for text in legend.get_texts():
        text.set_parse_math(False)
    width, height = fig.get_size_inches()
    fig.set_size_inches(width, height + 0.2 * -(-len(labels) // columns))
    return legend


def keep_axes_size(fig: Figure, ax: Any, width: float, height: float, *, beside: float = 0.0) -> None:
    """Grow `fig` so that `ax` keeps at least `width` x `height` inches beside its labels, legend and title.

    Constrained layout fits the decorations into the figure by shrinking the axes; long rotated tick labels or
    a wide legend would squash them to nothing (and then clip the labels). The decorations' extent is measured
    on the renderer and the figure widened or heightened by what they take beyond its free space; `beside` is
    the width (inches) of what else sits in the row, e.g. a colorbar.
    """
    renderer = fig.canvas.get_renderer()
    box = ax.get_position().transformed(fig.transFigure)
    tight = ax.get_tightbbox(renderer)
    if tight is None:
        return
    dpi = fig.dpi
    extra_w = (max(0.0, box.x0 - tight.x0) + max(0.0, tight.x1 - box.x1)) / dpi
    extra_h = (max(0.0, box.y0 - tight.y0) + max(0.0, tight.y1 - box.y1)) / dpi
    fig_w, fig_h = fig.get_size_inches()
    pad = 0.3  # constrained layout's margins around the axes
    fig_w = min(MAX_WIDTH_IN, max(fig_w, width + extra_w + beside + pad))  # never wider than the page
    fig.set_size_inches(fig_w, max(fig_h, height + extra_h + pad))


def save_png(fig: Figure, path: str | os.PathLike[str]) -> Path:
    """Check the layout (`lifelong.report.layout.fit_layout`: no overlapping text, none off the figure, no wider
    than the page), render `fig` as PNG (100 dpi, the figure's own size) and write it atomically to `path`."""
    fit_layout(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
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
    outside_legend(
        ax,
        handles=[Patch(color=META_TRAIN_COLOR, label="meta-train"), Patch(color=META_TEST_COLOR, label="meta-test")],
        fontsize=8,
    )
    ax.grid(axis="y", alpha=0.3)
    keep_task_axes(fig, ax)
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
    keep_task_axes(fig, ax)
    return save_png(fig, path)


def plot_run(records: Iterable[Mapping[str, Any]], out_dir: str | os.PathLike[str]) -> list[Path]:
    """Write task_errors.png and cumulative_flops.png into `out_dir`; return their paths."""
    records = list(records)
    out_dir = Path(out_dir)
    return [
        plot_task_errors(records, out_dir / "task_errors.png"),
        plot_cumulative_flops(records, out_dir / "cumulative_flops.png"),
    ]


def tick_names(names: Sequence[str]) -> list[str]:
    """Tick labels of buckets or tasks: their names when all are short (years), else their positions 1..N."""
    return list(names) if all(len(name) <= 6 for name in names) else [str(i + 1) for i in range(len(names))]


def plot_accuracy_matrix(
    R: Any,
    path: str | os.PathLike[str],
    *,
    labels: Sequence[str] | None = None,
    title: str = "",
    colorbar_label: str = "accuracy (%)",
    axis_names: tuple[str, str] = ("bucket", "bucket"),
) -> Path:
    """Heatmap of an accuracy matrix (rows: after training bucket i; columns: evaluated on bucket j) in percent.

    Each filled cell is annotated with its accuracy; None/NaN cells (not evaluated yet) stay blank. `labels` name
    the buckets (default: their 1-based stream positions), one tick per row and column. The title sits above the
    whole figure, so that the colorbar beside the matrix never covers it. `axis_names` name what the rows were
    trained on and the columns evaluated on ('bucket', 'task').
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
    side = min(9.0, max(4.0, 0.45 * n + 2.5))
    fig, ax = new_figure(side + 1.6, side + 0.6)
    percent = np.ma.masked_invalid(100.0 * matrix)
    cmap = colormaps["viridis"].with_extremes(bad="white")
    image = ax.imshow(percent, cmap=cmap, vmin=0.0, vmax=100.0, aspect="equal")
    fontsize = 9 if n <= 10 else 7 if n <= 16 else 6 if n <= 24 else 5
    for i, j in zip(*np.nonzero(np.isfinite(matrix)), strict=True):
        value = 100.0 * matrix[i, j]
        color = "black" if value >= 60.0 else "white"  # viridis is light at the top of the scale
        text = f"{value:.0f}" if n > 12 else f"{value:.1f}"
        ax.text(j, i, text, ha="center", va="center", fontsize=fontsize, color=color)
    ticks = tick_names(names)
    rotation = 0 if max(map(len, ticks)) * n <= 40 else 90
    ax.set_xticks(range(n), ticks, rotation=rotation, parse_math=False)
    ax.set_yticks(range(n), ticks, parse_math=False)
    ax.tick_params(labelsize=fontsize)
    trained, evaluated = axis_names
    ax.set_xlabel(f"evaluated on {evaluated} j")
    ax.set_ylabel(f"after training {trained} i")
    fig.colorbar(image, ax=ax, label=colorbar_label, shrink=0.8)
    fig.suptitle(wrap_label(title or "accuracy matrix (%)", int(11 * (side + 1.6))), fontsize=10, parse_math=False)
    if not np.isfinite(matrix).any():
        note(ax, "no cell evaluated")
    return save_png(fig, path)


def plot_bucket_errors(
    R: Any, path: str | os.PathLike[str], *, labels: Sequence[str] | None = None, title: str = ""
) -> Path:
    """Error of each evaluated bucket over training: one curve per column j of the accuracy matrix R.

    x: after training bucket i (the rows); y: error (1 - R[i, j]) on bucket j's evaluation data. The larger
    outlined marker on each curve is the bucket just trained (i = j): left of it is the forward transfer, right
    of it the forgetting. None/NaN cells are gaps. `labels` name the buckets (default: 1-based positions).
    """
    matrix = np.array(R, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] == 0:
        raise ValueError(f"accuracy matrix must be a non-empty square (N x N) array, got shape {matrix.shape}")
    n = matrix.shape[0]
    names = [str(i + 1) for i in range(n)] if labels is None else [str(label) for label in labels]
    if len(names) != n:
        raise ValueError(f"labels must name each of the {n} buckets, got {len(names)}: {list(names)!r}")
    fig, ax = task_figure(n)
    colors = colormaps["viridis"](np.linspace(0.0, 0.9, n))
    for j in range(n):
        errors = 1.0 - matrix[:, j]
        ax.plot(range(n), errors, marker="o", markersize=3, linewidth=1.2, color=colors[j], label=names[j])
        if np.isfinite(errors[j]):
            ax.plot([j], [errors[j]], marker="o", markersize=7, color=colors[j], markeredgecolor="black", zorder=3)
    set_task_ticks(ax, tick_names(names))
    ax.set_ylim(0.0, 1.05)
    ax.set_xlabel("training events (after training bucket i)")
    ax.set_ylabel("error (1 - accuracy)")
    ax.set_title(wrap_label(title or "error per bucket over training", 70), parse_math=False)
    outside_legend(ax, title="evaluated on", fontsize=7, title_fontsize=7, ncols=1 if n <= 20 else 2)
    if not np.isfinite(matrix).any():
        note(ax, "no cell evaluated")
    ax.grid(alpha=0.3)
    keep_task_axes(fig, ax)
    return save_png(fig, path)
