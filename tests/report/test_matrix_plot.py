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
