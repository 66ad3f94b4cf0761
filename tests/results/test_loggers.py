"""`lifelong run --log tensorboard,wandb,mlflow`: each logger read back with its library's own reader.

One small run (mini, nearest-mean) is logged in two sessions, stopped after 7 events and resumed with `--log`, so the
read-backs also show that a resumed run logs each event once. A second run of the same setup without `--log`
writes the same records.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import struct
import sys
from pathlib import Path

import numpy as np
import pytest
from _prereq import needs_package
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.commands.runner import RunSpec, execute
from lifelong.results.loggers import load_loggers
from lifelong.results.store import RunFolder

LOGGERS = ("tensorboard", "wandb", "mlflow")
INSTALLED = tuple(name for name in LOGGERS if importlib.util.find_spec(name) is not None)
LOGGER_FOLDERS = {"tensorboard", "wandb", "mlruns"}
RUN_ID = "mini-nearest-mean-seed0"


def invoke(*args: object) -> object:
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The run folder logged by every installed logger (stopped after 7 events, then resumed), and one not logged."""
    root = tmp_path_factory.mktemp("loggers")
    spec = RunSpec(learner="nearest-mean", out=str(root / "logged"), loggers=INSTALLED, stop_after=7)
    execute(spec)
    args = ("run", "--learner", "nearest-mean", "--resume")
    resumed = invoke(*args, "--out", root / "logged", *(("--log", ",".join(INSTALLED)) if INSTALLED else ()))
    assert resumed.exit_code == 0, resumed.output
    plain = invoke("run", "--learner", "nearest-mean", "--out", root / "plain")
    assert plain.exit_code == 0, plain.output
    return root / "logged" / RUN_ID, root / "plain" / RUN_ID


def _task_errors(run_dir: Path) -> dict[int, tuple[str, float]]:
    """(task, error) of each evaluation in events.jsonl, by event index."""
    return {r["event"]: (r["task"], r["error"]) for r in RunFolder(run_dir).read_records() if r["type"] == "predict"}


@needs_package("tensorboard", "tensorboard")
def test_tensorboard_scalars_are_the_per_task_errors(runs: tuple[Path, Path]) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir = runs[0]
    files = sorted((run_dir / "tensorboard").glob("events.out.tfevents.*"))
    assert len(files) == 2  # one per session
    logged: dict[tuple[str, int], list[float]] = {}
    for file in files:
        accumulator = EventAccumulator(str(file), size_guidance={"scalars": 0})
        accumulator.Reload()
        for tag in accumulator.Tags()["scalars"]:
            for event in accumulator.Scalars(tag):
                logged.setdefault((tag, event.step), []).append(event.value)
    assert all(len(values) == 1 for values in logged.values())  # the resumed session logged no event twice
    errors = {step: values[0] for (tag, step), values in logged.items() if tag.startswith("task/")}
    expected = _task_errors(run_dir)
    assert {step for (tag, step) in logged if tag.startswith("task/")} == set(expected)
    for step, (task, error) in expected.items():
        assert logged[(f"task/{task}/error", step)] == [pytest.approx(error, rel=1e-6)]  # float32 in the file
    assert len(errors) == 9
    summary = json.loads((run_dir / "summary.json").read_text())
    final = max(step for tag, step in logged if tag == "run/mean_error")
    assert logged[("run/mean_error", final)][0] == pytest.approx(summary["mean_error"], rel=1e-6)
    assert max(step for tag, step in logged if tag == "compute/mean_error") == int(summary["cumulative_train_flops"])


def _wandb_records(path: Path) -> list:
    """The records of a W&B offline run file (`run-<id>.wandb`): after a 7-byte header, LevelDB's log format
    (32 KiB blocks of chunks with a 7-byte header: crc32c, length, type full/first/middle/last) around the
    `Record` protobuf messages W&B's own `wandb.proto.wandb_internal_pb2` defines."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B", data[:7]
    records, position, message = [], 7, b""
    while position + 7 <= len(data):
        left = 32768 - position % 32768
        if left < 7:  # a block's tail too short for a header is padding
            position += left
            continue
        _, length, kind = struct.unpack("<IHB", data[position : position + 7])
        if kind == 0:  # zero-filled rest of a block
            position += left
            continue
        chunk = data[position + 7 : position + 7 + length]
        position += 7 + length
        message = chunk if kind in (1, 2) else message + chunk
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(message)
            records.append(record)
    return records


@needs_package("wandb", "wandb")
def test_wandb_offline_history_holds_the_per_task_errors(runs: tuple[Path, Path]) -> None:
    run_dir = runs[0]
    folders = sorted((run_dir / "wandb").glob("offline-run-*"))
    assert len(folders) == 2  # one per session, with one W&B run id: `wandb sync` makes them one run
    logged: dict[tuple[str, int], list[float]] = {}
    for folder in folders:
        (file,) = folder.glob("run-*.wandb")
        records = _wandb_records(file)
        assert records[-1].WhichOneof("record_type") == "exit"  # complete when the run ended
        (run,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
        assert run.run_id == RUN_ID and run.display_name == RUN_ID
        for record in records:
            if record.WhichOneof("record_type") == "history":
                items = {"/".join(i.nested_key) or i.key: json.loads(i.value_json) for i in record.history.item}
                for key, value in items.items():
                    if not key.startswith("_"):
                        logged.setdefault((key, items["_step"]), []).append(value)
    assert all(len(values) == 1 for values in logged.values())
    expected = _task_errors(run_dir)
    assert {step for (key, step) in logged if key.startswith("task/")} == set(expected)
    for step, (task, error) in expected.items():
        assert logged[(f"task/{task}/error", step)] == [error]
    assert not [p for p in (run_dir / "wandb").rglob("*") if p.is_symlink()]  # plain files: a run folder can move


@needs_package("mlflow", "mlflow")
def test_mlflow_metric_history_holds_the_per_task_errors(
    runs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.tracking import MlflowClient

    from lifelong.results.loggers.mlflow import tracking_uri

    run_dir = runs[0]
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow's opt-in to its file store
    client = MlflowClient(tracking_uri=tracking_uri(run_dir))
    (experiment,) = [e for e in client.search_experiments() if e.name == "mini"]
    (run,) = client.search_runs([experiment.experiment_id])  # the resumed session reopened the same run
    assert run.info.status == "FINISHED" and run.info.run_name == RUN_ID
    assert run.data.params["learner"] == "nearest-mean" and run.data.tags["lifelong.run_id"] == RUN_ID
    assert [a.path for a in client.list_artifacts(run.info.run_id)] == ["run.json"]
    expected = _task_errors(run_dir)
    steps = []
    for task in {task for task, _ in expected.values()}:
        history = client.get_metric_history(run.info.run_id, f"task/{task.replace('#', '_')}/error")
        steps += [m.step for m in history]
        assert {m.step: m.value for m in history} == {s: e for s, (t, e) in expected.items() if t == task}
    assert sorted(steps) == sorted(expected)  # each evaluation once
    mean = client.get_metric_history(run.info.run_id, "run/mean_error")
    assert [m.step for m in mean] == sorted(expected)


def test_a_run_without_loggers_writes_the_same_records(runs: tuple[Path, Path]) -> None:
    logged, plain = runs
    assert {p.name for p in logged.iterdir()} - LOGGER_FOLDERS == {p.name for p in plain.iterdir()}

    def without_time(folder: Path) -> list[dict]:
        return [{k: v for k, v in r.items() if k != "seconds"} for r in RunFolder(folder).read_records()]

    assert without_time(logged) == without_time(plain)  # every field but the wall-clock seconds
    for file in sorted((plain / "predictions").iterdir()):
        with np.load(file) as a, np.load(logged / "predictions" / file.name) as b:
            assert np.array_equal(a["scores"], b["scores"]) and np.array_equal(a["labels"], b["labels"])
    assert json.loads((plain / "run.json").read_text())["config"]["loggers"] == []
    assert json.loads((logged / "run.json").read_text())["config"]["loggers"] == list(INSTALLED)


def test_unknown_logger_and_missing_package_exit_2_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "runs"
    typo = invoke("run", "--learner", "nearest-mean", "--out", out, "--log", "tensorbord")
    assert typo.exit_code == 2
    assert "unknown logger 'tensorbord'" in typo.stderr and "did you mean 'tensorboard'" in typo.stderr
    assert "mlflow, tensorboard, wandb" in typo.stderr  # the known ones
    empty = invoke("run", "--learner", "nearest-mean", "--out", out, "--log", "tensorboard,")
    assert empty.exit_code == 2 and "empty name" in empty.stderr
    monkeypatch.setitem(sys.modules, "wandb", None)  # as if the [wandb] extra were not installed
    monkeypatch.delitem(sys.modules, "lifelong.results.loggers.wandb", raising=False)
    missing = invoke("run", "--learner", "nearest-mean", "--out", out, "--log", "wandb")
    assert missing.exit_code == 2 and "pip install 'lifelong[wandb]'" in missing.stderr
    with pytest.raises(ImportError, match=r"lifelong\[wandb\]"):
        load_loggers(["wandb"])
    assert not out.exists()


TWO_TASKS = """\
name: pair
tasks:
  - {name: letters, source: "builtin:letters", year: 2001, resolution: 16, options: {n_per_class: 12, size: 16}}
  - {name: digits, source: "builtin:digits", year: 2002, resolution: 16, options: {n_per_class: 12}}
"""


class Probe:
    """A logger that keeps what it is given, failing on `fail_on` (an event index) or on close."""

    opened: list[Probe] = []

    def __init__(self, run, fail_on: int | None = None, fail_close: bool = False) -> None:
        self.seen = [r["event"] for r in run.records]
        self.logged: list[int] = []
        self.status: str | None = None
        self.fail_on, self.fail_close = fail_on, fail_close
        Probe.opened.append(self)

    def log(self, record) -> None:
        if record["event"] == self.fail_on:
            raise OSError("disk full")
        self.logged.append(record["event"])

    def close(self, status: str) -> None:
        self.status = status
        if self.fail_close:
            raise OSError("cannot flush")


def test_the_wiring_hands_each_record_once_and_a_failing_logger_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lifelong.results import ResultsDB
    from lifelong.results.loggers import LOGGERS, LoggerError

    manifest = tmp_path / "pair.yaml"
    manifest.write_text(TWO_TASKS)
    factories = {
        "probe": Probe,
        "broken": lambda run: Probe(run, fail_on=2),
        "unflushed": lambda run: Probe(run, fail_close=True),
    }
    monkeypatch.setattr(LOGGERS, "load", factories.__getitem__)  # as if three packages registered them
    Probe.opened = []
    spec = RunSpec(stream=str(manifest), learner="nearest-mean", out=str(tmp_path / "runs"), save_predictions=False)
    execute(dataclasses.replace(spec, loggers=("probe",), stop_after=1))
    execute(dataclasses.replace(spec, loggers=("probe",), resume=True))
    first, second = Probe.opened
    assert (first.seen, first.logged, first.status) == ([], [0], "interrupted")
    assert (second.seen, second.logged, second.status) == ([0], [1, 2, 3], "finished")

    Probe.opened = []
    with pytest.raises(LoggerError, match=r"--log broken failed on event 2: OSError: disk full; .*--resume"):
        execute(dataclasses.replace(spec, loggers=("probe", "broken"), overwrite=True))
    assert [p.status for p in Probe.opened] == ["failed", "failed"]  # each closed, the run marked failed
    assert ResultsDB(spec.out).run(spec.run_id)["status"] == "failed"
    with pytest.raises(LoggerError, match=r"--log unflushed failed to close: OSError: cannot flush; .*complete"):
        execute(dataclasses.replace(spec, loggers=("unflushed",), resume=True))
    assert ResultsDB(spec.out).run(spec.run_id)["status"] == "finished"  # a logger cannot spoil the run's files
    assert len(RunFolder(spec.folder).read_records()) == 4
