"""`lifelong streams`, `lifelong data inspect` and the help pages, through typer's CliRunner."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from support import write_corrupt_png, write_png
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.data.sources.builtin import SHAPE_CLASSES
from lifelong.suites import get_stream

runner = CliRunner()


@pytest.fixture
def folder(tmp_path) -> Path:
    """cat: 3 RGB 9x7 (h x w), dog: 2 gray 6x10; one non-image file."""
    root = tmp_path / "pets"
    for i in range(3):
        write_png(root / "cat" / f"{i}.png", i, 9, 7)
    for i in range(2):
        write_png(root / "dog" / f"{i}.png", 10 + i, 6, 10, gray=True)
    (root / "notes.txt").write_text("ignored")
    return root


def _invoke(*args: str):
    return runner.invoke(app, list(args))


def _squash(text: str) -> str:
    """Output without whitespace: rich wraps long lines at the console width."""
    return "".join(text.split())


# ---------------------------------------------------------------------------------------------------------
# help pages


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--help"], ["run", "streams", "data"]),
        (["run", "--help"], ["--stream", "--learner", "--skip-corrupt"]),
        (["data", "--help"], ["inspect"]),
        (["data", "inspect", "--help"], ["source", "builtin:NAME", "--json", "--skip-corrupt"]),
        (["streams", "--help"], ["--json"]),
    ],
)
def test_help_pages(args, expected):
    result = _invoke(*args)
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output
    for word in expected:
        assert word in result.output, (word, result.output)


# ---------------------------------------------------------------------------------------------------------
# lifelong streams


def test_streams_json_lists_mini_with_its_counts():
    result = _invoke("streams", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    mini = {row["name"]: row for row in rows}["mini"]
    stream = get_stream("mini")
    years = [t.key.year for t in stream.tasks]
    assert mini["tasks"] == len(stream.tasks) >= 8
    assert mini["meta_test"] == sum(y >= stream.meta_test_from_year for y in years) >= 1
    assert mini["meta_train"] == len(stream.tasks) - mini["meta_test"] >= 1
    assert mini["multi_label"] == sum(t.key.is_multi_label for t in stream.tasks) >= 1
    assert mini["years"] == [min(years), max(years)]
    assert isinstance(mini["description"], str) and mini["description"]


def test_streams_table_names_mini():
    result = _invoke("streams")
    assert result.exit_code == 0, result.output
    assert "mini" in result.output and "tasks" in result.output
    verbose = _invoke("streams", "-v")  # the meta-train / meta-test counts: -v (or --json)
    assert verbose.exit_code == 0 and "train" in verbose.output and "test" in verbose.output


# ---------------------------------------------------------------------------------------------------------
# lifelong data inspect


def test_inspect_builtin_shapes_json():
    result = _invoke("data", "inspect", "builtin:shapes", "--json")
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["kind"] == "multi-class" and info["num_classes"] == 8
    assert info["class_names"] == list(SHAPE_CLASSES)
    per_class = set(info["per_class"].values())
    assert len(per_class) == 1 and info["count"] == 8 * per_class.pop() > 0, "shapes are class-balanced"
    assert info["image_size"] == {
        "min_height": 32,
        "max_height": 32,
        "min_width": 32,
        "max_width": 32,
        "distinct_shapes": 1,
    }
    assert info["channels"] == [3] and info["official_split"] is None


def test_inspect_folder_json(folder):
    result = _invoke("data", "inspect", f"folder:{folder}", "--json")
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["count"] == 5 and info["kind"] == "multi-class"
    assert info["class_names"] == ["cat", "dog"] and info["per_class"] == {"cat": 3, "dog": 2}
    sizes = {"min_height": 6, "max_height": 9, "min_width": 7, "max_width": 10, "distinct_shapes": 2}
    assert info["image_size"] == sizes
    assert info["channels"] == [1, 3]
    assert info["notes"]["ignored_files"] == 1 and info["notes"]["corrupt_skipped"] == 0
    assert "corrupt_files" not in info["notes"]


def test_inspect_folder_table(folder):
    result = _invoke("data", "inspect", f"folder:{folder}")
    assert result.exit_code == 0, result.output
    for word in ("count", "per_class", "cat", "dog", "channels"):
        assert word in result.output


def test_inspect_multi_label_csv_and_idx(tmp_path):
    for i in range(3):
        write_png(tmp_path / f"{i}.png", i, 4, 4)
    (tmp_path / "tags.csv").write_text("path,labels\n0.png,a;b\n1.png,b\n2.png,\n")
    info = json.loads(_invoke("data", "inspect", f"csv:{tmp_path / 'tags.csv'}", "--json").output)
    assert info["kind"] == "multi-label" and info["per_class"] == {"a": 1, "b": 2} and info["count"] == 3
    idx = tmp_path / "idx"
    idx.mkdir()
    for prefix, n in (("train", 5), ("t10k", 2)):
        for what, array in (("images", np.zeros((n, 3, 3))), ("labels", np.arange(n) % 2)):
            ndim = array.ndim
            header = bytes([0, 0, 0x08, ndim]) + struct.pack(f">{ndim}I", *array.shape)
            (idx / f"{prefix}-{what}-idx{ndim}-ubyte").write_bytes(header + array.astype(np.uint8).tobytes())
    result = _invoke("data", "inspect", f"idx:{idx}", "--json")
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["count"] == 7 and info["official_split"] == {"test": 2, "train": 5} and info["channels"] == [1]


def test_inspect_missing_folder_exits_2_and_names_the_path(tmp_path):
    missing = tmp_path / "no_such_folder"
    result = _invoke("data", "inspect", f"folder:{missing}")
    assert result.exit_code == 2
    assert "error" in result.output and "pathnotfound" in _squash(result.output)
    assert str(missing) in _squash(result.output)


def test_inspect_error_prints_the_path_unbroken(tmp_path):
    missing = tmp_path / ("long_directory_name_" * 6) / ("another_long_name_" * 6) / "no_such_folder"
    result = _invoke("data", "inspect", f"folder:{missing}")
    assert result.exit_code == 2
    assert str(missing) in result.output


def test_inspect_error_keeps_square_brackets_in_the_path(tmp_path):
    missing = tmp_path / "[v2]" / "no_such_folder"
    result = _invoke("data", "inspect", f"folder:{missing}")
    assert result.exit_code == 2
    assert str(missing) in _squash(result.output)


def test_inspect_corrupt_file_names_it_or_skips_it(folder):
    bad = write_corrupt_png(folder / "dog" / "bad.png")
    result = _invoke("data", "inspect", f"folder:{folder}")
    assert result.exit_code == 2
    assert str(bad) in _squash(result.output) and "--skip-corrupt" in _squash(result.output)
    result = _invoke("data", "inspect", f"folder:{folder}", "--skip-corrupt", "--json")
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["count"] == 5 and info["notes"]["corrupt_skipped"] == 1


@pytest.mark.parametrize(
    ("source", "message"),
    [("ftp:somewhere", "unknown source"), ("builtin:nope", "unknown builtin source 'nope'"), ("folder:", "unknown")],
)
def test_inspect_bad_source_exits_2(source, message):
    result = _invoke("data", "inspect", source)
    assert result.exit_code == 2
    assert _squash(message) in _squash(result.output)
