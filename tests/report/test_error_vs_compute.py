"""The task streams' error-vs-compute figure: one axes per stream, a compute axis whose ticks carry numbers, and
legends that list only what their axes draw (a Pareto line only where one is drawn)."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.figure import Figure
from report.test_html import write_run

from lifelong.report import figures
from lifelong.report.layout import drawn_texts
from lifelong.report.runs import Run, pareto_fronts
from lifelong.results import read_run, summarize_run

ERRORS = [0.2, 0.5, 0.3, 0.6, 0.25, 0.35]


def runs_of(root: Path, specs: list[tuple[str, str, int, float, float]]) -> list[Run]:
    """Runs (stream, learner, seed, per-task FLOPs, error offset) labelled R1, R2, ... in the order given."""
    runs = []
    for number, (stream, learner, seed, flops, offset) in enumerate(specs, start=1):
        errors = [e + offset for e in ERRORS]
        folder = write_run(root, f"{stream}-{learner}-seed{seed}", learner, seed, errors, stream=stream, flops=flops)
        data = read_run(folder)
        runs.append(Run(data, summarize_run(data), label=f"R{number}"))
    return runs


def drawn_figure(runs: list[Run], path: Path, monkeypatch: pytest.MonkeyPatch) -> Figure:
    """The figure the report writes to `path` (saved, so its layout was checked), caught on its way to the file."""
    caught: list[Figure] = []
    save = figures.save_png
    monkeypatch.setattr(figures, "save_png", lambda fig, out: caught.append(fig) or save(fig, out))
    figures.plot_error_vs_cflop(runs, pareto_fronts(runs), path)
    assert path.is_file() and len(caught) == 1
    return caught[0]


def compute_tick_labels(ax) -> list[str]:
    """The x tick labels the axes draws (in view, not blank)."""
    placed = drawn_texts(ax.figure)
    ticks = {id(t.label1) for t in [*ax.xaxis.get_major_ticks(), *ax.xaxis.get_minor_ticks()]}
    return [p.text.get_text() for p in placed if id(p.text) in ticks]


def drawn_labels(ax) -> set[str]:
    """Labels of the artists that show something: points drawn, a line between two distinct points."""
    shown = {c.get_label() for c in ax.collections if len(c.get_offsets()) > 0}
    for line in ax.get_lines():
        if len(set(zip(line.get_xdata(), line.get_ydata(), strict=True))) > 1:
            shown.add(line.get_label())
    return {label for label in shown if not label.startswith("_")}


def legend_labels(ax) -> list[str]:
    legend = ax.get_legend()
    return [] if legend is None else [" ".join(t.get_text().split()) for t in legend.get_texts()]


@pytest.fixture
def two_streams(tmp_path: Path) -> list[Run]:
    """`syn-a`: a cheap good learner, a dear bad one and a dearer best one (a front of two); `syn-b`: one run."""
    return runs_of(
        tmp_path / "runs",
        [
            ("syn-a", "independent", 0, 4e11, 0.1),
            ("syn-a", "independent", 1, 4.4e11, 0.15),
            ("syn-a", "finetune-knn", 0, 2e12, -0.1),
            ("syn-b", "nearest-mean", 0, 3e6, 0.0),
        ],
    )


def test_one_axes_per_stream_each_with_only_its_runs(two_streams, tmp_path, monkeypatch) -> None:
    fig = drawn_figure(two_streams, tmp_path / "e.png", monkeypatch)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 2
    assert "syn-a" in axes[0].get_title() and "syn-b" in axes[1].get_title()
    assert [sum(len(c.get_offsets()) for c in ax.collections) for ax in axes] == [3, 1]
    assert axes[0].get_xlim()[1] < 1e14 and axes[1].get_xlim()[1] < 1e9  # neither shares the other's range


def test_the_compute_axis_has_numbered_ticks(two_streams, tmp_path, monkeypatch) -> None:
    fig = drawn_figure(two_streams, tmp_path / "e.png", monkeypatch)
    for ax in fig.axes:
        labels = compute_tick_labels(ax)
        assert len(labels) >= 2, (ax.get_title(), labels)
        values = [float(label) for label in labels]  # '1e12', '2e7', '0': numbers as written, no mathtext
        low, high = ax.get_xlim()
        assert all(low <= v <= high for v in values)


def test_a_run_without_training_flops_gets_a_zero_tick(tmp_path, monkeypatch) -> None:
    runs = runs_of(tmp_path / "runs", [("syn", "pretrained", 0, 0.0, 0.0), ("syn", "independent", 0, 4e11, -0.1)])
    (ax,) = drawn_figure(runs, tmp_path / "e.png", monkeypatch).axes
    labels = compute_tick_labels(ax)
    assert "0" in labels and len(labels) >= 3 and all(float(label) >= 0 for label in labels)


def test_the_legend_lists_only_what_is_drawn(two_streams, tmp_path, monkeypatch) -> None:
    fig = drawn_figure(two_streams, tmp_path / "e.png", monkeypatch)
    first, second = fig.axes
    assert set(legend_labels(first)) == drawn_labels(first) == {"independent", "finetune-knn", "Pareto front"}
    assert set(legend_labels(second)) == drawn_labels(second) == {"nearest-mean"}  # one run: no front drawn


def test_seeds_that_tie_draw_no_front_and_name_none(tmp_path, monkeypatch) -> None:
    runs = runs_of(tmp_path / "runs", [("syn", "nearest-mean", seed, 1e6, 0.0) for seed in range(3)])
    assert len(pareto_fronts(runs)[("syn", "dev_test")]) == 3  # all three on the front, at one point
    (ax,) = drawn_figure(runs, tmp_path / "e.png", monkeypatch).axes
    assert legend_labels(ax) == ["nearest-mean"] and drawn_labels(ax) == {"nearest-mean"}
