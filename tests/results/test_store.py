"""Run folders (atomic JSON, events.jsonl surviving a kill) and the shared SQLite results database."""

import json
import multiprocessing
import os
import sqlite3
from pathlib import Path

import pytest

from lifelong.results.store import ResultsDB, RunFolder


def record(event: int, run_id: str = "r", **extra: object) -> dict:
    kind = "train" if event % 2 == 0 else "predict"
    return {"run_id": run_id, "event": event, "type": kind, "task": f"t{event // 2}", "error": 0.1, **extra}


def test_write_json_is_atomic_and_leaves_no_temp_files(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run")
    folder.write_json("summary.json", {"a": 1})
    folder.write_json("summary.json", {"a": 2, "nested": [1.5, None]})
    assert folder.read_json("summary.json") == {"a": 2, "nested": [1.5, None]}
    assert sorted(p.name for p in folder.path.iterdir()) == ["summary.json"]


def test_write_json_failure_keeps_the_old_file(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    folder.write_json("run.json", {"ok": True})
    with pytest.raises(ValueError, match="JSON"):
        folder.write_json("run.json", {"bad": float("nan")})
    with pytest.raises(ValueError, match="JSON"):
        folder.write_json("run.json", {"bad": object()})
    assert folder.read_json("run.json") == {"ok": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def test_write_json_rejects_paths(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="plain name"):
        RunFolder(tmp_path).write_json("../x.json", {})


def test_records_round_trip_in_order(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    assert folder.read_records() == []
    records = [record(i) for i in range(5)]
    for r in records:
        folder.append_record(r)
    assert folder.read_records() == records


def test_torn_last_line_is_ignored_and_repaired_on_append(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    for i in range(3):
        folder.append_record(record(i))
    with open(folder.events_path, "ab") as f:  # a writer killed half-way through a line
        f.write(json.dumps(record(3)).encode()[:17])
    assert [r["event"] for r in folder.read_records()] == [0, 1, 2]
    folder.append_record(record(3))
    assert [r["event"] for r in folder.read_records()] == [0, 1, 2, 3]
    assert folder.events_path.read_bytes().count(b"\n") == 4


def test_corrupt_middle_line_is_an_error(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    folder.append_record(record(0))
    with open(folder.events_path, "ab") as f:
        f.write(b"{not json\n")
    folder.append_record(record(2))
    with pytest.raises(ValueError, match="line 2 is not valid JSON"):
        folder.read_records()


def test_truncate_records_keeps_a_prefix(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    for i in range(5):
        folder.append_record(record(i))
    with open(folder.events_path, "ab") as f:
        f.write(b'{"torn": ')
    folder.truncate_records(3)
    assert [r["event"] for r in folder.read_records()] == [0, 1, 2]
    assert folder.events_path.read_bytes().endswith(b"\n")
    with pytest.raises(ValueError, match="has 3 complete records, cannot keep the first 4"):
        folder.truncate_records(4)
    folder.truncate_records(0)
    assert folder.read_records() == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.jsonl"]


def test_append_record_rejects_non_json(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    with pytest.raises(ValueError, match="JSON"):
        folder.append_record({"event": 0, "error": float("inf")})
    assert folder.read_records() == []


def test_db_run_lifecycle(tmp_path: Path) -> None:
    db = ResultsDB(tmp_path)
    with sqlite3.connect(tmp_path / "results.sqlite") as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.start_run("r", "mini", "independent", 0, tmp_path / "r", {"lr": 0.1})
    for i in range(4):
        db.add_event("r", record(i))
    db.add_event("r", record(1, error=0.5))  # upsert: a re-run event replaces its record
    (run,) = db.runs()
    assert run["status"] == "running" and run["config"] == {"lr": 0.1} and run["summary"] is None
    assert run["seed"] == 0 and run["path"] == str(tmp_path / "r")
    events = db.events("r")
    assert [e["event"] for e in events] == [0, 1, 2, 3] and events[1]["error"] == 0.5
    db.truncate_events("r", 2)
    assert [e["event"] for e in db.events("r")] == [0, 1]
    db.finish_run("r", "finished", {"mean_error": 0.2})
    run = db.run("r")
    assert run["status"] == "finished" and run["summary"] == {"mean_error": 0.2}
    assert run["updated"] >= run["created"]
    db.start_run("r", "mini", "independent", 0, tmp_path / "r", {"lr": 0.1})  # resume
    assert db.run("r")["status"] == "running" and db.run("r")["created"] == run["created"]


def test_db_errors_name_the_problem(tmp_path: Path) -> None:
    db = ResultsDB(tmp_path)
    with pytest.raises(KeyError, match="unknown run 'nope'"):
        db.add_event("nope", record(0, run_id="nope"))
    with pytest.raises(KeyError, match="unknown run"):
        db.events("nope")
    db.start_run("r", "mini", "independent", 0, tmp_path / "r", {})
    with pytest.raises(ValueError, match="final status"):
        db.finish_run("r", "done", {})
    with pytest.raises(ValueError, match="non-negative integer 'event'"):
        db.add_event("r", {"type": "train"})
    with pytest.raises(ValueError, match="record of run 'other'"):
        db.add_event("r", record(0, run_id="other"))
    with pytest.raises(ValueError, match="records run r with stream mini, learner independent, seed 0, not"):
        db.start_run("r", "mini", "independent", 1, tmp_path / "r", {})


def _writer(results_dir: str, worker: int, num_events: int, start: object) -> None:
    start.wait()  # both processes begin writing at the same moment
    db = ResultsDB(results_dir)
    run_id = f"run{worker}"
    db.start_run(run_id, "mini", "independent", worker, os.path.join(results_dir, run_id), {"worker": worker})
    for i in range(num_events):
        db.add_event(run_id, record(i, run_id=run_id))
        db.add_event("shared", record(worker * num_events + i, run_id="shared", worker=worker))
    db.finish_run(run_id, "finished", {"events": num_events})


def test_db_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    ResultsDB(tmp_path).start_run("shared", "mini", "independent", 0, tmp_path / "shared", {})
    num_events = 100
    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(2)
    workers = [ctx.Process(target=_writer, args=(str(tmp_path), w, num_events, start)) for w in (1, 2)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(timeout=30)
    assert [p.exitcode for p in workers] == [0, 0]
    db = ResultsDB(tmp_path)
    runs = {r["run_id"]: r for r in db.runs()}
    assert set(runs) == {"shared", "run1", "run2"}
    for w in (1, 2):
        assert runs[f"run{w}"]["status"] == "finished"
        assert [e["event"] for e in db.events(f"run{w}")] == list(range(num_events))
    assert [e["event"] for e in db.events("shared")] == list(range(num_events, 3 * num_events))
