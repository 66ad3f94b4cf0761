"""Runs that execute on a worker and land on the driver: folder, database and summary as a local run's, once.

These call the worker and driver halves in this process (no Ray); test_two_node_ray.py runs them on a cluster.
"""

import dataclasses
import tempfile

import pytest

from lifelong.commands import runner
from lifelong.commands.remote_runs import land, run_on_worker, run_remote
from lifelong.commands.runner import RunExistsError, RunSpec, execute
from lifelong.core.executors import LocalExecutor
from lifelong.results.store import ResultsDB, RunFolder


@pytest.fixture
def worker_tmp(tmp_path, monkeypatch):
    """The worker's own temp folder, apart from the driver's --out."""
    scratch = tmp_path / "worker-tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    return scratch


def _timeless(records):
    """Records without their wall-clock seconds (which differ between any two runs)."""
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


def _files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))


def test_a_worker_run_lands_like_a_local_run_and_only_once(tmp_path, worker_tmp):
    spec = RunSpec(learner="nearest-mean", out=str(tmp_path / "driver"), stop_after=4)
    remote = run_on_worker((spec, None))
    assert list(worker_tmp.iterdir()) == []  # the scratch folder is gone once packed
    summary = land(spec, remote)
    land(spec, remote)  # landing the same result again changes nothing
    local = execute(dataclasses.replace(spec, out=str(tmp_path / "local")))

    assert summary["path"] == str(spec.folder) and _timeless(summary["records"]) == _timeless(local["records"])
    assert _files(spec.folder) == _files(tmp_path / "local" / spec.run_id)
    assert RunFolder(spec.folder).read_records() == summary["records"]
    assert RunFolder(spec.folder).read_json("run.json")["config"]["out"] == spec.out
    db = ResultsDB(spec.out)
    assert db.events(spec.run_id) == summary["records"]
    row = db.run(spec.run_id)
    assert (row["status"], row["path"], row["config"]["out"]) == ("interrupted", str(spec.folder), spec.out)
    assert row["summary"]["path"] == str(spec.folder)
    assert [p.name for p in (tmp_path / "driver").iterdir() if p.name.startswith(".")] == []  # no staging left


def test_a_resumed_run_continues_from_the_drivers_checkpoint(tmp_path, worker_tmp):
    spec = RunSpec(learner="nearest-mean", out=str(tmp_path / "driver"), stop_after=3)
    run_remote(LocalExecutor(), [spec])
    with pytest.raises(RunExistsError, match="--resume"):  # refused on the driver, before anything is sent
        run_remote(LocalExecutor(), [dataclasses.replace(spec, stop_after=None)])
    with pytest.raises(ValueError, match="different setup"):  # the same id (options would change it), 2 threads
        run_remote(LocalExecutor(), [dataclasses.replace(spec, resume=True, threads=2)])
    [summary] = run_remote(LocalExecutor(), [dataclasses.replace(spec, resume=True, stop_after=None)])
    whole = execute(dataclasses.replace(spec, out=str(tmp_path / "whole"), stop_after=None))
    assert summary["events_done"] == summary["events_total"] == 18
    assert summary["records"] == RunFolder(spec.folder).read_records() == ResultsDB(spec.out).events(spec.run_id)
    assert _timeless(summary["records"]) == _timeless(whole["records"])
    assert ResultsDB(spec.out).run(spec.run_id)["status"] == "finished"


def test_a_failed_run_lands_as_failed_then_raises_its_error(tmp_path, worker_tmp, monkeypatch):
    def broken(*args, **kwargs):
        raise OSError("disk on fire")

    monkeypatch.setattr(runner, "run", broken)
    spec = RunSpec(learner="nearest-mean", out=str(tmp_path / "driver"))
    remote = run_on_worker((spec, None))
    with pytest.raises(OSError, match="disk on fire"):
        land(spec, remote)
    row = ResultsDB(spec.out).run(spec.run_id)
    assert row["status"] == "failed" and "disk on fire" in row["summary"]["error"]
    assert (spec.folder / "run.json").is_file()

    bad = RunSpec(learner="nearest-mean", out=str(tmp_path / "driver2"), learner_options={"nope": 1})
    with pytest.raises(Exception, match="nope"):  # fails before the run starts: nothing lands
        land(bad, run_on_worker((bad, None)))
    assert ResultsDB(bad.out).runs() == []
