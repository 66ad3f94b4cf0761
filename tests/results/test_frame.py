"""Every run's records as one DataFrame: `lifelong.api.results`, and `lifelong results RUNS --format csv|parquet`.

Two small real runs share one runs folder: mini with nearest-mean (a Nevis'22-style stream) and a small clear-mini
(an accuracy matrix), as tests/test_cli_run.py and tests/test_cli_clear.py keep them short.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _prereq import needs_package
from typer.testing import CliRunner

import lifelong.api
from lifelong.cli import app
from lifelong.results.frame import COLUMNS, system_of
from lifelong.results.store import RunFolder

CLEAR_SMALL = ["-s", "n_per_class=10", "-s", "unlabeled_per_bucket=0", "-s", "num_buckets=4"]
POSITIONS = {"event", "task_index", "after_task_index", "year", "occurrence"}  # where a record stands: no metric


def invoke(*args: object) -> object:
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("frame") / "runs"
    for stream in (["--stream", "mini"], ["--stream", "clear-mini", *CLEAR_SMALL]):
        made = invoke("run", *stream, "--learner", "nearest-mean", "--no-predictions", "--out", out)
        assert made.exit_code == 0, made.output
    return out


@pytest.fixture(scope="module")
def frame(runs: Path) -> pd.DataFrame:
    return lifelong.api.results(runs)


def _folder(runs: Path, prefix: str) -> Path:
    (folder,) = [p for p in runs.iterdir() if p.name.startswith(prefix)]
    return folder


def test_one_row_per_record_and_numeric_field_with_the_records_values(runs: Path, frame: pd.DataFrame) -> None:
    assert list(frame.columns[: len(COLUMNS)]) == list(COLUMNS)
    assert {"run", "stream", "learner", "seed", "task", "metric", "value"} <= set(frame.columns)
    for folder in (_folder(runs, "mini-"), _folder(runs, "clear-mini-")):
        expected = {
            (record["event"], record["task"], name): float(value)
            for record in RunFolder(folder).read_records()
            for name, value in record.items()
            if name not in POSITIONS and isinstance(value, int | float) and not isinstance(value, bool)
        }
        rows = frame[frame["run"] == folder.name]
        keys = zip(rows["event"], rows["task"], rows["metric"], strict=True)
        assert dict(zip(keys, rows["value"], strict=True)) == expected
        assert len(rows) == len(expected)
    mini = frame[frame["run"] == "mini-nearest-mean-seed0"]
    assert set(mini["system"]) == {"nevis"} and set(mini["stream"]) == {"mini"} and set(mini["seed"]) == {0}
    assert set(mini["learner"]) == {"nearest-mean"}
    summary = json.loads((_folder(runs, "mini-") / "summary.json").read_text())
    errors = mini[mini["metric"] == "error"]
    assert dict(zip(errors["task"], errors["value"], strict=True)) == summary["per_task_error"]


def test_a_clear_runs_accuracy_matrix_comes_back_from_task_and_after_task(runs: Path, frame: pd.DataFrame) -> None:
    folder = _folder(runs, "clear-mini-")
    clear = frame[frame["run"] == folder.name]
    assert set(clear["system"]) == {"clear"} and set(clear["stream"]) == {"clear-mini-iid"}
    errors = clear[(clear["metric"] == "error") & (clear["type"] == "predict")]
    matrix = 1 - errors.pivot(index="after_task", columns="task", values="value")
    summary = json.loads((folder / "summary.json").read_text())
    labels = ["bucket1", "bucket2", "bucket3"]
    assert matrix.loc[labels, labels].to_numpy() == pytest.approx(np.array(summary["accuracy_matrix"]), abs=1e-12)


def test_csv_prints_the_same_rows_with_a_header(runs: Path, frame: pd.DataFrame) -> None:
    result = invoke("results", runs, "--format", "csv")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith(",".join(COLUMNS))
    parsed = pd.read_csv(io.StringIO(result.stdout), keep_default_na=False)
    expected = frame.assign(after_task=frame["after_task"].fillna(""))
    pd.testing.assert_frame_equal(parsed, expected, check_dtype=False, check_exact=True)
    old = invoke("results", "--out", runs, "--format", "csv")  # the deprecated spelling of RUNS still lists RUNS
    assert old.exit_code == 0 and old.stdout == result.stdout and "now `lifelong results DIR`" in old.stderr


@needs_package("pyarrow", "parquet")
def test_parquet_round_trip(runs: Path, frame: pd.DataFrame, tmp_path: Path) -> None:
    out = tmp_path / "all" / "results.parquet"
    result = invoke("results", runs, "--format", "parquet", "--out", out)
    assert result.exit_code == 0, result.output
    assert f"wrote {len(frame)} rows of 2 runs" in " ".join(result.stdout.split())
    pd.testing.assert_frame_equal(pd.read_parquet(out), frame, check_exact=True)


def test_format_errors_say_what_to_give(runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    no_file = invoke("results", runs, "--format", "parquet")
    assert no_file.exit_code == 2 and "--out FILE" in no_file.stderr
    unknown = invoke("results", runs, "--format", "xlsx")
    assert unknown.exit_code == 2 and "table, csv or parquet" in unknown.stderr
    both = invoke("results", runs, "--format", "csv", "--json")
    assert both.exit_code == 2 and "--format table" in both.stderr
    empty = invoke("results", tmp_path, "--format", "csv")
    assert empty.exit_code == 2 and "no run in" in empty.stderr
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if the [parquet] extra were not installed
    missing = invoke("results", runs, "--format", "parquet", "--out", tmp_path / "r.parquet")
    assert missing.exit_code == 2 and "pip install 'lifelong[parquet]'" in missing.stderr
    assert not (tmp_path / "r.parquet").exists()


def test_a_table_stays_the_default(runs: Path) -> None:
    result = invoke("results", runs)
    assert result.exit_code == 0 and "mini-nearest-mean-seed0" in result.stdout and "status" in result.stdout


@pytest.mark.parametrize(
    ("stream", "system"),
    [
        ("mini", "nevis"),
        ("nevis-short", "nevis"),
        ("clear-mini", "clear"),
        ("clear", "clear"),
        ("cog-mini", "cog"),
        ("facts", "facts"),
        ("facts-mini", "facts"),
        ("my-stream", "custom"),
        ("cog-streams/tasks.yaml", "custom"),
        ("clear_photos.csv", "custom"),
    ],
)
def test_system_from_the_stream(stream: str, system: str) -> None:
    assert system_of(stream) == system
