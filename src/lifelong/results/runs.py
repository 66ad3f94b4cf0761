"""Reading run folders back: run.json and events.jsonl as `RunData`, and one summary row per run."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lifelong.metrics.stream import StreamSummary
from lifelong.results.store import EVENTS_FILE, RunFolder

RUN_FILE = "run.json"


@dataclass(frozen=True)
class RunData:
    """One run folder as read from disk: its run.json and its per-event records."""

    path: Path
    info: dict[str, Any]
    records: list[dict[str, Any]]

    @property
    def run_id(self) -> str:
        return str(self.info.get("run_id") or self.path.name)

    @property
    def task_metadata(self) -> dict[str, dict[str, Any]]:
        """Stream tasks of run.json by uid (uid, name, kind, num_classes, year, domain, occurrence, ...)."""
        return {str(t["uid"]): t for t in self.info["stream"]["tasks"]}


def read_run(run_dir: str | os.PathLike[str]) -> RunData:
    """Read a run folder (run.json + events.jsonl); errors say which file is missing and what to do."""
    path = Path(run_dir)
    if not path.is_dir():
        raise FileNotFoundError(f"run folder {str(path)!r} does not exist or is not a directory")
    if not (path / EVENTS_FILE).is_file():
        raise FileNotFoundError(
            f"run folder {str(path)!r} has no {EVENTS_FILE}: not a run folder, or the run recorded no event yet; "
            "pass folders written by `lifelong run`"
        )
    folder = RunFolder(path)
    info = folder.read_json(RUN_FILE)
    for field in ("config", "stream"):
        if not isinstance(info.get(field), dict):
            raise ValueError(f"{path / RUN_FILE} has no {field!r} object; was it written by `lifelong run`?")
    if not isinstance(info["stream"].get("tasks"), list) or "name" not in info["stream"]:
        raise ValueError(f"{path / RUN_FILE}: 'stream' needs 'name' and a 'tasks' list")
    return RunData(path=path, info=info, records=folder.read_records())


def summarize_run(run: RunData) -> dict[str, Any]:
    """One table row: run id, learner, seed, stream, meta-test mean error E, cFLOP over all tasks, task counts."""
    metric = StreamSummary()
    state = metric.init()
    for record in run.records:
        if record.get("type") in ("train", "predict"):
            state = metric.add(state, record)
    summary = metric.compute(state)
    config, stream = run.info["config"], run.info["stream"]
    learner = config.get("learner")
    if learner is None:
        raise ValueError(f"{run.path / RUN_FILE}: config has no 'learner'")
    return {
        "run_id": run.run_id,
        "path": str(run.path),
        "learner": str(learner),
        "seed": int(run.info.get("seed", config.get("seed", 0))),
        "stream": str(stream["name"]),
        "eval_split": stream.get("eval_split", config.get("eval_split")),
        "meta_test_mean_error": summary["meta_test_mean_error"],
        "mean_error": summary["mean_error"],
        "cflop": summary["cumulative_train_flops"],
        "num_tasks": len(stream["tasks"]),
        "num_evaluated": summary["num_evaluated_tasks"],
        "num_meta_test": summary["num_meta_test_tasks"],
    }


def summarize_runs(run_dirs: Iterable[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """`summarize_run` of each run folder, in the order given."""
    return [summarize_run(read_run(d)) for d in run_dirs]


def load_matrix_runs(run_dirs: list[Path]) -> list[dict]:
    """Finished accuracy-matrix runs from their folders (summary.json + run.json), for a seed summary."""
    results = []
    for folder in run_dirs:
        summary_path, info_path = Path(folder) / "summary.json", Path(folder) / "run.json"
        if not summary_path.is_file() or not info_path.is_file():
            raise FileNotFoundError(f"{folder} is not a finished run folder (no summary.json or run.json)")
        summary = json.loads(summary_path.read_text())
        if summary.get("accuracy_matrix") is None:
            raise ValueError(f"{folder} is not an accuracy-matrix run (stream without evaluation of every task)")
        info = json.loads(info_path.read_text())
        results.append({**summary, "labels": [t["uid"] for t in info["stream"]["tasks"]]})
    groups = sorted({group_id(r["run_id"]) for r in results})
    if len(groups) > 1:
        raise ValueError(f"these runs belong to different groups (stream, protocol, learner): {groups}")
    return results


def group_id(run_id: str) -> str:
    """The run id without its seed: the name of a group of seeds."""
    return re.sub(r"-seed\d+", "", run_id)
