"""Accuracy-matrix heatmap and per-bucket error curves: valid, non-empty PNGs for full, partly filled and empty
matrices."""

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from lifelong.report.plots import plot_accuracy_matrix, plot_bucket_errors


def check_png(path: Path) -> None:
    assert path.is_file() and path.stat().st_size > 0
    with Image.open(path) as image:
        assert image.format == "PNG"
        assert image.size[0] > 100 and image.size[1] > 100


def test_full_matrix(tmp_path):
    R = np.random.default_rng(0).uniform(size=(10, 10))
    labels = [f"{2008 + i}" for i in range(10)]
    path = plot_accuracy_matrix(R, tmp_path / "sub" / "matrix.png", labels=labels, title="CLEAR-10 $iid$")
    assert path == tmp_path / "sub" / "matrix.png"
    check_png(path)


def test_missing_cells_blank(tmp_path):
    R = np.full((3, 3), 0.8)
    R[2, :] = np.nan
    check_png(plot_accuracy_matrix(R, tmp_path / "nan.png"))
    check_png(plot_accuracy_matrix([[0.9, None], [None, None]], tmp_path / "none.png"))
    check_png(plot_accuracy_matrix(np.full((2, 2), np.nan), tmp_path / "empty.png"))


@pytest.mark.parametrize(
    ("R", "labels", "match"),
    [
        (np.full((2, 3), 0.5), None, "square"),
        (np.full((2, 2), 85.0), None, "percentages"),
        (np.full((2, 2), 0.5), ["only one"], "labels"),
    ],
)
def test_bad_input(tmp_path, R, labels, match):
    with pytest.raises(ValueError, match=match):
        plot_accuracy_matrix(R, tmp_path / "bad.png", labels=labels)
    assert not (tmp_path / "bad.png").exists()


def test_bucket_error_curves(tmp_path):
    R = np.random.default_rng(0).uniform(size=(10, 10))
    labels = [f"{2008 + i}" for i in range(10)]
    check_png(plot_bucket_errors(R, tmp_path / "curves.png", labels=labels, title="CLEAR-10 $iid$"))
    R[5:, :] = np.nan  # interrupted after 5 buckets: the curves stop there
    check_png(plot_bucket_errors(R, tmp_path / "partial.png"))
    check_png(plot_bucket_errors(np.full((2, 2), np.nan), tmp_path / "empty.png"))
    with pytest.raises(ValueError, match="square"):
        plot_bucket_errors(np.full((2, 3), 0.5), tmp_path / "bad.png")
    with pytest.raises(ValueError, match="labels"):
        plot_bucket_errors(np.full((2, 2), 0.5), tmp_path / "bad.png", labels=["one"])


def test_heatmap_ticks_are_bucket_numbers_and_the_title_clears_the_colorbar(tmp_path, monkeypatch):
    from lifelong.report import plots

    drawn = []
    save = plots.save_png
    monkeypatch.setattr(plots, "save_png", lambda fig, path: drawn.append(fig) or save(fig, path))
    R = np.random.default_rng(1).uniform(size=(12, 12))
    title = "R7: a-learner-with-a-long-name-lr=0.001-epochs=100, seed 0 (streaming protocol): accuracy matrix"
    check_png(plot_accuracy_matrix(R, tmp_path / "m.png", labels=[f"bucket{i + 1}" for i in range(12)], title=title))
    (fig,) = drawn
    ax, colorbar = fig.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(i) for i in range(1, 13)]  # integers, one a bucket
    assert [t.get_text() for t in ax.get_yticklabels()] == [str(i) for i in range(1, 13)]
    renderer = fig.canvas.get_renderer()
    heading = fig.get_suptitle()
    assert heading.replace("\n", " ") == title
    box = next(t for t in fig.texts if t.get_text() == heading).get_window_extent(renderer)
    for below in (ax, colorbar):
        assert box.y0 >= below.get_window_extent(renderer).y1  # above the matrix and its colorbar, never covered
    years = [str(2004 + i) for i in range(12)]
    plot_accuracy_matrix(R, tmp_path / "years.png", labels=years)
    assert [t.get_text() for t in drawn[-1].axes[0].get_xticklabels()] == years  # short names stay names
