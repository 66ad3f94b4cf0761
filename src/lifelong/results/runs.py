"""Reading run folders back: run.json and events.jsonl as `RunData`, and one summary row per run."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lifelong.metrics.stream import StreamSummary
from lifelong.results.ids import group_id
from lifelong.results.store import DB_FILE, EVENTS_FILE, ResultsDB, RunFolder

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


def setting_of(learner: str, options: dict[str, Any]) -> str:
    """The learner with the options it ran with, e.g. `independent search=gp-ucb trials=8`: runs of one setting
    differ only in their seed (a path option by its file name)."""
    words = []
    for key in sorted(options):
        value = options[key]
        if isinstance(value, str) and ("/" in value or os.sep in value):
            value = Path(value).name
        words.append(f"{key}={json.dumps(value) if not isinstance(value, str) else value}")
    return " ".join([learner, *words])


def summarize_run(run: RunData) -> dict[str, Any]:
    """One table row: run id, learner, its setting (`setting_of`), seed, stream, meta-test mean error E, cFLOP over
    all tasks, task counts."""
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
        "setting": setting_of(str(learner), dict(config.get("learner_options") or {})),
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


def find_runs(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[Path], list[str]]:
    """The run folders among `paths` (a parent folder by its run folders) and one note per folder holding no run.

    Plain files (a glob that also catches `results.sqlite` or `*-seeds.json`) and hidden folders are passed over
    in silence; a folder with no run in it (empty, or left by a run refused before it started) or with a run that
    recorded no event yet is skipped with a note. A path that does not exist, and one run id in two folders, are
    errors that name the paths.
    """
    found: list[Path] = []
    notes: list[str] = []

    def consider(folder: Path, given: bool) -> None:
        if (folder / RUN_FILE).is_file():
            if (folder / EVENTS_FILE).is_file():
                found.append(folder)
            else:
                notes.append(f"skipped {folder}: its run recorded no event yet")
        elif given and any((child / RUN_FILE).is_file() for child in _subfolders(folder)):
            for child in _subfolders(folder):
                consider(child, given=False)
        else:
            notes.append(f"skipped {folder}: holds no run")

    for given in map(Path, paths):
        if not given.exists():
            raise FileNotFoundError(f"{given} does not exist; give run folders, their parent folder, or a glob")
        if given.is_dir():
            consider(given, given=True)
    unique: dict[Path, Path] = {}
    for folder in found:  # each folder once, however it was spelled
        unique.setdefault(folder.resolve(), folder)
    found = list(unique.values())
    _check_unique_ids(found)
    return found, list(dict.fromkeys(notes))


def recorded_runs(folder: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """The runs a results folder's database records, oldest first, and one note per folder holding no run.

    A database row whose folder holds no run.json (a run refused before it started, or a folder deleted since),
    a subfolder that holds no run (an empty folder left behind) and a run folder the database does not record
    (copied in from elsewhere) are passed over with a note each.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"runs folder {folder} does not exist; `lifelong run --out {folder}` makes it")
    if not (folder / DB_FILE).is_file():
        raise FileNotFoundError(f"no results database in {folder}; run `lifelong run --out {folder}` first")
    runs, notes, named = [], [], set()
    for row in ResultsDB(folder).runs():
        run_folder = folder / Path(row["path"]).name
        named.add(run_folder.name)
        if (run_folder / RUN_FILE).is_file():
            runs.append(row)
        elif run_folder.is_dir():
            notes.append(f"skipped {run_folder}: holds no run (recorded as {row['status']})")
        else:
            notes.append(f"skipped {row['run_id']}: recorded, but its folder {run_folder} is gone")
    for child in _subfolders(folder):
        if child.name in named:
            continue
        if (child / RUN_FILE).is_file():  # e.g. copied in from another runs folder: `report` can still read it
            notes.append(f"not listed {child}: its run is not in {folder / DB_FILE} (`lifelong report` reads it)")
        else:
            notes.append(f"skipped {child}: holds no run")
    return runs, notes


def _subfolders(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def _check_unique_ids(folders: list[Path]) -> None:
    """One run id, one folder: a report or summary names each run by its id."""
    seen: dict[str, Path] = {}
    for folder in folders:
        try:
            name = str(json.loads((folder / RUN_FILE).read_text()).get("run_id") or folder.name)
        except (OSError, ValueError, AttributeError):
            name = folder.name
        if name in seen and seen[name].resolve() != folder.resolve():
            raise ValueError(
                f"two folders hold run {name}: {seen[name]} and {folder}; give one of them (runs are named by "
                "their id), e.g. report each results folder on its own"
            )
        seen.setdefault(name, folder)


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
        raise FileNotFoundError(f"no finished accuracy-matrix run folder in {', '.join(map(str, run_dirs))}")
    groups = sorted({group_id(r["run_id"]) for r in results})
    if len(groups) > 1:
        raise ValueError(
            f"these runs belong to different setups (stream, protocol, learner, options): {', '.join(groups)}; "
            "summarise one setup at a time, e.g. lifelong matrix-summary RUNS/<setup>-seed*"
        )
    return results


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
