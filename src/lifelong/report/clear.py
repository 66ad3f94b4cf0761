"""The page of accuracy-matrix runs (CLEAR protocol): each run's matrix and metrics, and each bucket's error curve.

Only runs of the `clear` system (`lifelong.report.systems`) come here: after each training event the model is
evaluated on every bucket, so a run is an accuracy matrix R, not one error per task; its metrics are plain averages
of regions of R (`lifelong.metrics.accuracy_matrix.clear_metrics`), in %.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.metrics.accuracy_matrix import IID_METRICS, clear_metrics, matrix_from_records, reported_metrics
from lifelong.report.pages import Section, write_page
from lifelong.report.plots import plot_accuracy_matrix, plot_bucket_errors
from lifelong.report.runs import Run, group_label, run_cells, tasks_evaluated
from lifelong.report.systems import CLEAR, SYSTEMS

PAGE = SYSTEMS[CLEAR].page
TEMPLATE = "clear.html.j2"
METRIC_NAMES = {"in_domain": "in-domain", "next_domain": "next-domain", "acc": "Acc", "bwt": "BwT", "fwt": "FwT"}


def trained_records(records: Sequence[dict]) -> list[dict]:
    """Records made after some training: evaluations of the untrained learner (-1) are no cell of R."""
    return [r for r in records if r.get("after_task_index") != -1]


def run_matrix(run: Run) -> np.ndarray:
    """The run's accuracy matrix (NaN where not evaluated) from its predict records."""
    return matrix_from_records(trained_records(run.data.records), len(run.data.task_metadata))


def _protocol(run: Run) -> str:
    return str(run.data.info["stream"].get("protocol") or "iid")


def run_metrics(run: Run) -> dict[str, float] | None:
    """The metrics the run's protocol reports (fractions), None for an unfinished run or an incomplete matrix."""
    matrix = run_matrix(run)
    if not run.finished or not np.isfinite(matrix).all():
        return None
    values = clear_metrics(matrix)
    return {key: values[key] for key in reported_metrics(_protocol(run))}


def _cells(values: dict[str, float] | None) -> list[str]:
    return [f"{100 * values[key]:.2f}" if values and key in values else "-" for key in IID_METRICS]


def _rows(runs: Sequence[Run]) -> list[dict[str, Any]]:
    return [
        {
            **run_cells(r),
            "protocol": _protocol(r),
            "tasks": tasks_evaluated(r),
            "cells": _cells(run_metrics(r)),
        }
        for r in runs
    ]


def _seed_rows(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """Mean ± std (sample) of each metric over the finished seeds of each (stream, protocol, learner)."""
    groups: dict[tuple[str, str, str], list[Run]] = {}
    for run in runs:
        groups.setdefault((group_label(run.group), _protocol(run), run.row["learner"]), []).append(run)
    rows = []
    for (stream, _, learner), members in groups.items():
        done = [values for r in members if (values := run_metrics(r)) is not None]
        cells = []
        for key in IID_METRICS:
            numbers = [100 * v[key] for v in done if key in v]
            if not numbers:
                cells.append("-")
            elif len(numbers) == 1:
                cells.append(f"{numbers[0]:.2f}")
            else:
                cells.append(f"{np.mean(numbers):.2f} ± {np.std(numbers, ddof=1):.2f}")
        unfinished = [str(r.row["seed"]) for r in members if not r.finished]
        rows.append(
            {
                "stream": stream,
                "learner": learner,
                "num_seeds": str(len(members)),
                "seeds": ", ".join(str(r.row["seed"]) for r in members),
                "unfinished": f"not finished: seed{'s' * (len(unfinished) > 1)} {', '.join(unfinished)}"
                if unfinished
                else "",
                "cells": cells,
            }
        )
    return rows


def _figures(runs: Sequence[Run], out: Path) -> list[Section]:
    matrices = Section(
        "Accuracy matrices",
        "Accuracy (%) of the model after training bucket i (rows) on the evaluation data of bucket j (columns); "
        "blank cells were not evaluated (the run stopped).",
    )
    curves = Section(
        "Error of each bucket over training",
        "One curve per evaluated bucket: its error after each training event. The outlined point is the bucket just "
        "trained: left of it is forward transfer, right of it forgetting.",
    )
    for i, run in enumerate(runs, start=1):
        labels = list(run.data.task_metadata)
        matrix = run_matrix(run)
        title = f"{run.label}: {run.row['learner']}, seed {run.row['seed']} ({_protocol(run)} protocol)"
        name = f"accuracy_matrix_{i}.png"
        plot_accuracy_matrix(matrix, out / name, labels=labels, title=title)
        matrices.figures.append((name, f"{title}: accuracy matrix"))
        name = f"bucket_errors_{i}.png"
        plot_bucket_errors(matrix, out / name, labels=labels, title=f"{title}: error per bucket")
        curves.figures.append((name, f"{title}: error of each bucket after each training event"))
    return [matrices, curves]


def write_clear_page(runs: Sequence[Run], out: Path, nav: list[tuple[str, str]]) -> Path:
    """Write the accuracy-matrix page and its figures into `out`."""
    return write_page(
        out,
        PAGE,
        TEMPLATE,
        nav,
        rows=_rows(runs),
        metric_names=[METRIC_NAMES[key] for key in IID_METRICS],
        seed_rows=_seed_rows(runs),
        unfinished=[r.label for r in runs if not r.finished],
        sections=_figures(runs, out),
    )
