"""The layout check every report figure passes when saved: no text overlaps another or leaves the figure, and no
figure is wider than the page. A figure drawn wrong on purpose shows that the check catches it."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from lifelong.report.layout import MAX_WIDTH_PX, LayoutError, problems
from lifelong.report.plots import new_figure, outside_legend, save_png


def test_overlapping_texts_are_refused_and_named(tmp_path: Path) -> None:
    fig, ax = new_figure(6.0, 4.0)
    ax.plot([0, 1], [0, 1])
    ax.text(0.5, 0.5, "first label", transform=ax.transAxes)
    ax.text(0.52, 0.51, "second label", transform=ax.transAxes)  # drawn over the first
    with pytest.raises(LayoutError, match="'first label' at .* overlaps 'second label'"):
        save_png(fig, tmp_path / "overlap.png")
    assert not (tmp_path / "overlap.png").exists()


def test_a_legend_over_a_text_is_refused(tmp_path: Path) -> None:
    fig, ax = new_figure(6.0, 4.0)
    ax.plot([0, 1], [0, 1], label="a line with a long legend label")
    ax.text(0.98, 0.95, "annotation under the legend", transform=ax.transAxes, ha="right", va="top")
    ax.legend(loc="upper right")
    with pytest.raises(LayoutError, match="overlaps"):
        save_png(fig, tmp_path / "legend.png")


def test_text_off_the_figure_is_refused(tmp_path: Path) -> None:
    fig, ax = new_figure(6.0, 4.0)
    ax.plot([0, 1], [0, 1])
    fig.text(0.9, 0.5, "a label beyond the right edge")  # figure texts are placed as told, not laid out
    with pytest.raises(LayoutError, match="'a label beyond the right edge' .* lies outside"):
        save_png(fig, tmp_path / "outside.png")


def test_the_same_figure_drawn_right_passes(tmp_path: Path) -> None:
    fig, ax = new_figure(6.0, 4.0)
    ax.plot([0, 1], [0, 1], label="a line with a long legend label, outside the axes")
    ax.text(0.5, 0.5, "first label", transform=ax.transAxes)
    ax.set_title("a title")
    outside_legend(ax)
    assert problems(fig) == []
    save_png(fig, tmp_path / "fine.png")


def test_a_wide_figure_is_narrowed_to_the_page(tmp_path: Path) -> None:
    fig, ax = new_figure(6.0, 3.0)
    fig.set_size_inches(30.0, 3.0)  # as a figure grown for many labels would be
    ax.plot(range(10), range(10))
    with Image.open(save_png(fig, tmp_path / "wide.png")) as image:
        assert image.width <= MAX_WIDTH_PX


def test_colliding_tick_labels_are_made_smaller_not_refused(tmp_path: Path) -> None:
    fig, ax = new_figure(6.0, 3.0)
    ax.set_xticks(range(40), [f"t{i:03d}" for i in range(40)], fontsize=12)  # 40 labels of 12 pt on 6 inches
    before = ax.get_xticklabels()[0].get_fontsize()
    save_png(fig, tmp_path / "ticks.png")
    assert ax.get_xticklabels()[0].get_fontsize() < before
    assert problems(fig) == []


def test_a_legend_of_thirty_runs_beside_the_axes_fits_in_columns(tmp_path: Path) -> None:
    from lifelong.report.plots import LEGEND_ROWS, keep_axes_size

    fig, ax = new_figure(8.0, 4.5)
    for i in range(30):  # 30 runs: one column would run off the top and bottom of the figure
        ax.plot([0, 1], [0, i], label=f"R{i + 1} vs R1: finetune-knn, seed {i % 3}")
    legend = outside_legend(ax, fontsize=8)
    assert legend._ncols == -(-30 // LEGEND_ROWS)
    keep_axes_size(fig, ax, 5.5, 3.0)
    assert problems(fig) == []
    save_png(fig, tmp_path / "thirty.png")


def test_a_legend_of_thirty_runs_in_one_column_runs_off_the_figure() -> None:
    from lifelong.report.plots import keep_axes_size

    fig, ax = new_figure(8.0, 4.5)
    for i in range(30):
        ax.plot([0, 1], [0, i], label=f"R{i + 1} vs R1: finetune-knn, seed {i % 3}")
    outside_legend(ax, fontsize=8, ncols=1)  # what the legend was before its columns
    keep_axes_size(fig, ax, 5.5, 3.0)
    assert any("lies outside" in problem for problem in problems(fig))
