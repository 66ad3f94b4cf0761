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


def run_folders(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Run folders among `paths`: a run folder as it is, a parent folder by its run folders, other files left out.

    So `runs/` and a shell glob that also catches `runs/...-seeds.json` both work.
    """
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        if (path / RUN_FILE).is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(sorted(child for child in path.iterdir() if (child / RUN_FILE).is_file()))
        elif not path.exists():
            raise FileNotFoundError(f"{path} does not exist; give run folders, their parent folder, or a glob")
    return list(dict.fromkeys(found))


def load_matrix_runs(run_dirs: Iterable[str | os.PathLike[str]]) -> list[dict]:
    """Finished accuracy-matrix runs from run folders (or their parent folder), for a seed summary of one group."""
    run_dirs = [Path(p) for p in run_dirs]  # read twice below: a generator would be spent after the first
    named = {p for p in run_dirs if (p / RUN_FILE).is_file()}
    results = []
    for folder in run_folders(run_dirs):
        summary_path = folder / "summary.json"
        summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
        if summary.get("accuracy_matrix") is None:
            if folder in named:  # a folder the user named must be one; a parent's other runs are passed over
                if not summary:
                    raise FileNotFoundError(f"{folder} is not a finished run folder (no summary.json)")
                raise ValueError(f"{folder} is not an accuracy-matrix run (stream without evaluation of every task)")
            continue
        info = json.loads((folder / RUN_FILE).read_text())
        results.append({**summary, "labels": [t["uid"] for t in info["stream"]["tasks"]]})
    if not results:
        raise FileNotFoundError(f"no finished accuracy-matrix run folder in {[str(p) for p in run_dirs]}")
    groups = sorted({group_id(r["run_id"]) for r in results})
    if len(groups) > 1:
        raise ValueError(
            f"these runs belong to different groups (stream, protocol, learner): {groups}; "
            "summarise one group at a time, e.g. lifelong matrix-summary RUNS/<group>-seed*"
        )
    return results


def group_id(run_id: str) -> str:
    """The run id without its seed: the name of a group of seeds."""
    return re.sub(r"-seed\d+", "", run_id)


def read_provenance(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """What run.json says about where and how a run was made: machine, versions, python, loaded files (sha256).

    Empty fields for a run folder that is gone or predates provenance.
    """
    path = Path(run_dir) / RUN_FILE
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        info = {}
    return {key: info.get(key) for key in ("machine", "versions", "python", "platform", "files", "created")}
