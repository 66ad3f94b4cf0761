"""The runs of a report: what was read from each run folder, its status, groups and the page's table rows.

A run's status is 'finished', or failed, interrupted or incomplete as the run folder's summary.json and the
results database beside the folder (results.sqlite, opened read-only) tell it. Runs are comparable only over
the same stream and evaluation split; `groups` and `pareto_fronts` go by that. The table rows are formatted
strings, ready for the page's template.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from lifelong.core.files import atomic_write_bytes
from lifelong.metrics.analysis import aggregate_seeds, forward_transfer_details, pareto_front, records_of_type
from lifelong.report.plots import wrap_label
from lifelong.report.systems import SYSTEMS, is_matrix_run, system_of
from lifelong.results import DB_FILE, RunData

SUMMARY_FILE = "summary.json"
FINISHED = "finished"
LABELS_FILE = "labels.json"  # in the report folder: run id -> label, so that a rebuilt report keeps its labels


@dataclass
class Run:
    """A run of the report: what was read from its folder, its table row, status and short label (R1, R2, ...).

    Figures name runs by their label (run ids can be longer than a figure); each page has a table from label to
    run id."""

    data: RunData
    row: dict[str, Any]
    status: str = FINISHED
    label: str = ""

    @property
    def id(self) -> str:
        return self.row["run_id"]

    @property
    def finished(self) -> bool:
        return self.status == FINISHED

    @property
    def is_matrix(self) -> bool:
        """A run that evaluates every task after each training event (CLEAR-style: an accuracy matrix)."""
        return is_matrix_run(self.data)

    @property
    def system(self) -> str:
        """The key of the system whose page shows this run (`lifelong.report.systems`)."""
        return system_of(self.data)

    @property
    def legend(self) -> str:
        """The run in a figure's legend: its label, learner and seed (wrapped; the page maps labels to run ids)."""
        return wrap_label(f"{self.label}: {self.row['learner']}, seed {self.row['seed']}", 32)

    @property
    def group(self) -> tuple[str, Any]:
        """Runs are comparable only over the same stream and evaluation split."""
        return self.row["stream"], self.row["eval_split"]


def read_labels(folder: str | Path) -> dict[str, str]:
    """The labels an earlier report in `folder` gave (run id -> "R<n>"); empty when there is none to read."""
    try:
        labels = json.loads((Path(folder) / LABELS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(labels, dict):
        return {}
    return {str(k): str(v) for k, v in labels.items() if _label_number(str(v)) is not None}


def _label_number(label: str) -> int | None:
    number = label[1:]
    return int(number) if label[:1] == "R" and number.isdigit() and int(number) > 0 else None


def _created(run: Run) -> float:
    """Sort key: when run.json says the run was created (undated runs last; a stable sort keeps the given order)."""
    try:
        return datetime.strptime(str(run.data.info.get("created")), "%Y-%m-%dT%H:%M:%S%z").timestamp()
    except ValueError:
        return float("inf")


def assign_labels(runs: Sequence[Run], known: Mapping[str, str]) -> dict[str, str]:
    """Label the runs R1, R2, ...: a run in `known` (an earlier report's labels) keeps its label, the others take
    the next numbers in the order they were created (then in the order given), so adding runs never relabels the
    others. Returns `known` with the new labels added (what the report folder keeps)."""
    labels = dict(known)
    number = max((_label_number(label) or 0 for label in labels.values()), default=0)
    for run in sorted((r for r in runs if r.id not in labels), key=_created):
        number += 1
        labels[run.id] = f"R{number}"
    for run in runs:
        run.label = labels[run.id]
    return labels


def write_labels(folder: str | Path, labels: Mapping[str, str]) -> Path:
    """Keep the report's labels (run id -> label) in `folder` for the next rebuild."""
    path = Path(folder) / LABELS_FILE
    atomic_write_bytes(path, (json.dumps(dict(labels), indent=2, sort_keys=True) + "\n").encode())
    return path


def by_label(runs: Sequence[Run]) -> list[Run]:
    """The runs in the order of their labels (R1, R2, ..., R10), as every table lists them."""
    return sorted(runs, key=lambda r: (_label_number(r.label) or 0, r.id))


def _db_status(data: RunData) -> tuple[str, dict[str, Any]] | None:
    """(status, summary) of the run in the results database beside its folder (read-only), None if unknown."""
    path = data.path.parent / DB_FILE
    if not path.is_file():
        return None
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=2.0)
        try:
            row = con.execute("SELECT status, summary FROM runs WHERE run_id = ?", (data.run_id,)).fetchone()
        finally:
            con.close()
        if row is None:
            return None
        summary = json.loads(row[1]) if row[1] else {}
    except (sqlite3.Error, ValueError):
        return None  # not a results database we can read: the folder's files decide alone
    return str(row[0]), summary if isinstance(summary, dict) else {}


def run_status(data: RunData) -> str:
    """'finished', or what is known of a run that did not finish, from summary.json and the results database.

    A run is unfinished when the database says failed or interrupted, when summary.json says it stopped before
    the last event (events_done < events_total), or when there is no summary.json (still running, or killed).
    """
    db = _db_status(data)
    recorded = f"{len(data.records)} events recorded"
    if db is not None and db[0] == "failed":
        error = str(db[1].get("error") or "").strip()
        return f"failed ({recorded})" + (f": {error[:200]}" if error else "")
    if db is not None and db[0] == "interrupted":
        return f"interrupted ({recorded})"
    summary_path = data.path / SUMMARY_FILE
    if not summary_path.is_file():
        return f"incomplete: no {SUMMARY_FILE}, {recorded} (still running, or killed)"
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"incomplete: {SUMMARY_FILE} unreadable, {recorded}"
    if not isinstance(summary, dict):
        summary = {}
    done, total = summary.get("events_done"), summary.get("events_total")
    if isinstance(done, int) and isinstance(total, int) and done < total:
        return f"interrupted after {done} of {total} events"
    return FINISHED


def line_color(i: int) -> str:
    return f"C{i % 10}"


def _format(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _mean_std(mean: float | None, std: float | None, spec: str) -> str:
    return _format(mean, spec) + ("" if std is None else f" ± {format(std, spec)}")


def setting(run: Run) -> str:
    """The run's learner and options (runs of one setting differ only in their seed); its learner for older rows."""
    return run.row.get("setting", run.row["learner"])


def group_label(group: tuple[str, Any]) -> str:
    stream, split = group
    return stream if split is None else f"{stream} ({split})"


def group_runs(runs: Sequence[Run]) -> dict[tuple[str, Any], list[Run]]:
    """Runs by (stream, eval split), in order of first appearance."""
    groups: dict[tuple[str, Any], list[Run]] = {}
    for run in runs:
        groups.setdefault(run.group, []).append(run)
    return groups


def pareto_fronts(runs: Sequence[Run]) -> dict[tuple[str, Any], list[Run]]:
    """Per (stream, eval split), the runs on the Pareto front of (cFLOP, meta-test error), cheapest first."""
    fronts = {}
    for group, members in group_runs(runs).items():
        scored = [r for r in members if r.row["meta_test_mean_error"] is not None]
        points = [(r.row["cflop"], r.row["meta_test_mean_error"]) for r in scored]
        fronts[group] = [scored[i] for i in pareto_front(points)]
    return fronts


def forward_transfer_rows(runs: Sequence[Run]) -> tuple[list[dict[str, str]], list[str]]:
    """Forward transfer per run and repeated dataset, and notes on the datasets left out: one note per reason,
    naming the runs and datasets it applies to (a learner without dev curves is one line, not one per dataset)."""
    rows = []
    left_out: dict[str, dict[str, list[str]]] = {}  # reason -> run label -> datasets
    for run in runs:
        values, skipped = forward_transfer_details(run.data.records)
        rows += [{"label": run.label, "dataset": name, "ft": f"{ft:+.3f}"} for name, ft in values.items()]
        for name, why in skipped.items():
            left_out.setdefault(why, {}).setdefault(run.label, []).append(name)
    notes = []
    for why, by_run in left_out.items():
        runs_by_datasets: dict[tuple[str, ...], list[str]] = {}  # runs of one stream share their datasets
        for label, names in by_run.items():
            runs_by_datasets.setdefault(tuple(names), []).append(label)
        notes += [f"{', '.join(labels)}: {', '.join(names)}: {why}" for names, labels in runs_by_datasets.items()]
    return rows, notes


def tasks_evaluated(run: Run) -> str:
    """The 'tasks evaluated' cell: evaluated / stream tasks (and meta-test ones where the stream has a meta-test
    part); for an accuracy-matrix run, its buckets and evaluations ('10 buckets, 10 × 10 evaluations')."""
    row, stream = run.row, run.data.info["stream"]
    if run.is_matrix:
        cells = [r for r in records_of_type(run.data.records, "predict") if r.get("after_task_index") is not None]
        steps = len({r["after_task_index"] for r in cells})
        n = row["num_tasks"]
        if len(cells) == steps * n:
            return f"{n} buckets, {steps} × {n} evaluations"
        return f"{n} buckets, {len(cells)} evaluations after {steps} training events"
    text = f"{row['num_evaluated']} / {row['num_tasks']}"
    if "meta_test_from_year" in stream and stream["meta_test_from_year"] is None:
        return text  # the stream has no meta-test part
    return f"{text} ({row['num_meta_test']} meta-test)"


def run_cells(r: Run) -> dict[str, Any]:
    """The cells every page's runs table starts with: label, id, status, learner, seed, stream (and `finished`,
    which marks the rows whose status needs attention)."""
    return {
        "label": r.label,
        "run_id": r.id,
        "status": r.status,
        "finished": r.finished,
        "learner": r.row["learner"],
        "seed": str(r.row["seed"]),
        "stream": group_label(r.group),
    }


def table_rows(runs: Sequence[Run], fronts: dict[tuple[str, Any], list[Run]]) -> list[dict[str, Any]]:
    """The runs table of task streams, formatted."""
    on_front = {r.id for front in fronts.values() for r in front}
    return [
        {
            **run_cells(r),
            "error": _format(r.row["meta_test_mean_error"], ".4f"),
            "cflop": _format(r.row["cflop"], ".3g"),
            "tasks": tasks_evaluated(r),
            "pareto": "yes" if r.id in on_front else "",
        }
        for r in runs
    ]


def seed_rows(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """Mean ± std over seeds per (stream, learner), formatted: the number of seeds, their ids, unfinished runs."""
    rows = []
    for g in aggregate_seeds(r.row for r in runs):
        members = [r for r in runs if (*r.group, setting(r)) == (g["stream"], g["eval_split"], g["setting"])]
        unfinished = [str(r.row["seed"]) for r in members if not r.finished]
        rows.append(
            {
                "stream": group_label((g["stream"], g["eval_split"])),
                "learner": g["setting"],
                "num_seeds": str(len(g["seeds"])),
                "seeds": ", ".join(map(str, g["seeds"])),
                "unfinished": f"not finished: seed{'s' * (len(unfinished) > 1)} {', '.join(unfinished)}"
                if unfinished
                else "",
                "error": _mean_std(g["meta_test_mean_error_mean"], g["meta_test_mean_error_std"], ".4f"),
                "cflop": _mean_std(g["cflop_mean"], g["cflop_std"], ".3g"),
            }
        )
    return rows


def legend_rows(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """The label table of a page: label, run id, learner, seed, stream, status and the page of the run's system."""
    return [
        {
            "label": r.label,
            "run_id": r.id,
            "learner": r.row["learner"],
            "seed": str(r.row["seed"]),
            "stream": group_label(r.group),
            "status": r.status,
            "finished": r.finished,
            "page": SYSTEMS[r.system].page,
            "system": SYSTEMS[r.system].short,
        }
        for r in runs
    ]
