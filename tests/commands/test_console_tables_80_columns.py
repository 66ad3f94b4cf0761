"""Every matrix a run prints fits 80 columns with each number whole: CLEAR's accuracy matrix (11 buckets, as
CLEAR-10 with its bucket 0) and the fact learners' R (the authors' 8 tasks, and 10). The other console tables have
their own 80-column tests (help pages, streams, learners, data, results, compare, CoG, bench status, models)."""

from __future__ import annotations

import re

import pytest

from lifelong.commands import terminal
from lifelong.commands.accuracy_matrix_console import print_matrix_run
from lifelong.commands.fact_console import print_fact_run


@pytest.fixture(autouse=True)
def _eighty_columns(monkeypatch):
    monkeypatch.setattr(terminal.console, "width", 80)


def _lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("buckets", [5, 11])
def test_the_accuracy_matrix_keeps_every_number_whole_at_80_columns(capsys, buckets):
    matrix = [[1.0 - 0.001 * (i + j) for j in range(buckets)] for i in range(buckets)]
    print_matrix_run(
        {
            "run_id": "clear-mini-iid-nearest-mean-32e5ddfa-seed0",
            "matrix_protocol": "iid",
            "accuracy_matrix": matrix,
            "matrix_labels": [f"bucket{i}" for i in range(buckets)],
            "clear_metrics": {"in_domain": 0.5, "next_domain": 0.4},
            "cumulative_train_flops": 1e12,
            "events_done": 1,
            "events_total": 1,
            "path": "runs/clear-mini-iid-nearest-mean-32e5ddfa-seed0",
        }
    )
    lines = _lines(capsys)
    assert max(len(line) for line in lines) <= 80 and not any("…" in line for line in lines)
    numbers = [cell for line in lines for cell in line.split() if re.fullmatch(r"\d{2,3}\.\d", cell)]
    assert len(numbers) == buckets * buckets  # each cell one whole number on one line
    header = next(line for line in lines if line.strip().startswith("after \\ on")).split()
    assert header[-buckets:] == [str(j) for j in range(buckets)]


@pytest.mark.parametrize("tasks", [8, 10])
def test_the_fact_R_matrix_keeps_every_number_whole_at_80_columns(capsys, tasks):
    R = [[0.5 + 0.001 * i * j for j in range(tasks)] for i in range(tasks)]
    print_fact_run(
        {
            "run_id": "facts-mini-fact-expertgate-a1b2c3d4e5f6-seed0",
            "fact_R": R,
            "fact_b": [0.01] * tasks,
            "cumulative_train_flops": 1e12,
            "events_done": 1,
            "events_total": 1,
            "path": "runs/facts-mini-fact-expertgate-a1b2c3d4e5f6-seed0",
        }
    )
    lines = _lines(capsys)
    assert max(len(line) for line in lines) <= 80 and not any("…" in line for line in lines)
    numbers = [cell for line in lines for cell in line.split() if re.fullmatch(r"\d+\.\d\d", cell)]
    assert len(numbers) == tasks * tasks + tasks  # R and the untrained row, each number whole
    header = next(line for line in lines if line.strip().startswith("after \\ on")).split()
    assert header[-tasks:] == [str(j) for j in range(1, tasks + 1)]  # tasks numbered from 1


def test_the_transfer_matrix_of_nevis_mini_fits_80_columns_with_every_gain_whole(capsys):
    from pathlib import Path

    from lifelong.commands.training_api import TransferMatrixResult
    from lifelong.commands.training_console import print_transfer_matrix

    tasks = [f"task_{i:02d}_long_name" for i in range(13)]
    matrix = [[0.013 * (i - j) for j in range(13)] for i in range(13)]
    matrix[0][0] = None  # a cell not computed
    print_transfer_matrix(TransferMatrixResult("nevis-mini", Path("tm.json"), tasks, matrix, None))
    lines = _lines(capsys)
    assert max(len(line) for line in lines) <= 80 and not any("…" in line for line in lines)
    gains = [cell for line in lines for cell in line.split() if re.fullmatch(r"[+-]\d+\.\d", cell)]
    assert len(gains) == 13 * 13 - 1  # every gain whole, in points; the missing cell is "-"
    assert sum(line.split()[:2] == ["1", "task_00_long_name"] for line in lines) >= 2  # the rows repeat per table
