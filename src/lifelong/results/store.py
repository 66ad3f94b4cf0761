"""Results of runs: one folder per run (JSON files + an append-only events.jsonl) and a shared SQLite index.

The run folder is the source of truth, written so that a killed process never leaves a half-written file
(a torn last line of events.jsonl is ignored and repaired). `ResultsDB` indexes all runs of a results
directory for querying; several processes may write to it at once.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from lifelong.core.files import atomic_write_bytes

EVENTS_FILE = "events.jsonl"
DB_FILE = "results.sqlite"
PREDICTIONS_DIR = "predictions"  # a run folder's saved test scores: one .npz per predict record
T = TypeVar("T")
RUN_STATUSES = ("running", "finished", "failed", "interrupted")


def _to_json(obj: Any, what: str, **kwargs: Any) -> str:
    """Strict JSON (no NaN or infinity, which other readers reject); errors name what was being written."""
    try:
        return json.dumps(obj, allow_nan=False, **kwargs)
    except (TypeError, ValueError) as e:
        raise ValueError(f"cannot write {what} as JSON: {e}; convert values to str/int/float/list/dict") from e


class RunFolder:
    """The folder of one run: JSON files written atomically and per-event records in events.jsonl."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise ValueError(f"run folder {str(self.path)!r} exists and is not a directory")
        self.path.mkdir(parents=True, exist_ok=True)

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    @property
    def events_path(self) -> Path:
        return self.path / EVENTS_FILE

    def _file(self, name: str) -> Path:
        if not name or name in (".", "..") or "/" in name or os.sep in name:
            raise ValueError(f"file name {name!r} must be a plain name inside the run folder, without '/'")
        return self.path / name

    def write_json(self, name: str, obj: Any) -> Path:
        """Write `obj` as `name` atomically (temp file + fsync + rename)."""
        path = self._file(name)
        return self.write_text(name, _to_json(obj, f"{path}", indent=2) + "\n")

    def write_text(self, name: str, text: str) -> Path:
        """Write `text` as `name` atomically (temp file + fsync + rename)."""
        path = self._file(name)
        atomic_write_bytes(path, text.encode())
        return path

    def read_json(self, name: str) -> Any:
        path = self._file(name)
        if not path.exists():
            raise FileNotFoundError(f"run folder {str(self.path)!r} has no {name!r}")
        return json.loads(path.read_text())

    def _complete_lines(self) -> tuple[list[bytes], int]:
        """The newline-terminated lines of events.jsonl and the length of the torn tail after them (0 if none)."""
        if not self.events_path.exists():
            return [], 0
        data = self.events_path.read_bytes()
        end = data.rfind(b"\n") + 1
        return data[:end].splitlines(keepends=True), len(data) - end

    def append_record(self, record: Mapping[str, Any]) -> None:
        """Append one record as a line of events.jsonl, flushed and fsynced; a torn tail is dropped first."""
        if not isinstance(record, Mapping):
            raise ValueError(f"a record must be a dict, got {type(record).__name__}: {record!r}")
        line = (_to_json(dict(record), f"record {record!r}", separators=(",", ":")) + "\n").encode()
        self._drop_torn_tail()
        with open(self.events_path, "ab") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def _drop_torn_tail(self) -> None:
        """Cut an unterminated last line (left by a killed writer) so the next append starts on a fresh line."""
        try:
            size = self.events_path.stat().st_size
        except FileNotFoundError:
            return
        if size == 0:
            return
        with open(self.events_path, "rb+") as f:
            f.seek(-1, os.SEEK_END)
            if f.read(1) == b"\n":
                return
            lines, _ = self._complete_lines()
            f.truncate(sum(len(line) for line in lines))
            f.flush()
            os.fsync(f.fileno())

    def read_records(self) -> list[dict[str, Any]]:
        """All complete records in order; an unterminated last line (torn by a kill) is ignored."""
        lines, _ = self._complete_lines()
        records = []
        for number, line in enumerate(lines, start=1):
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(
                    f"{self.events_path}: line {number} is not valid JSON ({e}): {line[:200]!r}; "
                    f"the file is corrupt beyond a torn last line"
                ) from e
            if not isinstance(record, dict):
                raise ValueError(f"{self.events_path}: line {number} is not a JSON object: {line[:200]!r}")
            records.append(record)
        return records

    def truncate_records(self, n: int) -> None:
        """Keep the first `n` complete records (atomically), e.g. to match a checkpoint taken after event n."""
        if n < 0:
            raise ValueError(f"number of records to keep must be >= 0, got {n}")
        lines, torn = self._complete_lines()
        if n > len(lines):
            raise ValueError(f"{self.events_path} has {len(lines)} complete records, cannot keep the first {n}")
        if n == len(lines) and torn == 0:
            return
        atomic_write_bytes(self.events_path, b"".join(lines[:n]))


def predictions_file(record: Mapping[str, Any]) -> str:
    """The name, inside PREDICTIONS_DIR, of a predict record's saved scores and labels."""
    return f"event{int(record['event']):04d}-{record['task']}.npz"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    stream TEXT NOT NULL,
    learner TEXT NOT NULL,
    seed INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed', 'interrupted')),
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    path TEXT NOT NULL,
    config TEXT NOT NULL,
    summary TEXT
);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    event_index INTEGER NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (run_id, event_index)
);
"""


class ResultsDB:
    """`results.sqlite` (WAL mode) indexing every run of a results directory; safe for concurrent processes.

    Each call opens its own connection and holds the write lock for one short transaction, so the object
    may be shared with (or recreated in) worker processes.
    """

    def __init__(self, results_dir: str | os.PathLike[str], *, timeout_s: float = 60.0) -> None:
        self.results_dir = Path(results_dir)
        self.results_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.results_dir / DB_FILE
        self.timeout_s = timeout_s
        self._when_unlocked(self._create)

    def _create(self) -> None:
        with self._connect() as con:
            con.execute("PRAGMA journal_mode=WAL")
            con.executescript(_SCHEMA)

    def _when_unlocked(self, action: Callable[[], T]) -> T:
        """Run `action`, retrying after short random sleeps while another process holds the database lock.

        Fairer and quicker under contention than SQLite's own busy handler, whose sleeps grow to 100 ms.
        """
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                return action()
            except sqlite3.OperationalError as e:
                if e.sqlite_errorcode & 0xFF not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                    raise
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{self.path} stayed locked by another process for {self.timeout_s} s") from e
                time.sleep(random.uniform(0.0005, 0.005))

    def __repr__(self) -> str:
        return f"ResultsDB({str(self.results_dir)!r})"

    @contextmanager
    def _connect(self, write: bool = False) -> Iterator[sqlite3.Connection]:
        """A connection in autocommit mode; with `write`, one IMMEDIATE transaction committed on exit."""
        con = sqlite3.connect(self.path, timeout=self.timeout_s, isolation_level=None)
        try:
            con.execute("PRAGMA synchronous=NORMAL")  # durable in WAL mode against process crashes
            if not write:
                yield con
                return
            con.execute("PRAGMA busy_timeout = 2")  # wait for the write lock in _when_unlocked instead
            self._when_unlocked(lambda: con.execute("BEGIN IMMEDIATE"))
            con.execute(f"PRAGMA busy_timeout = {int(self.timeout_s * 1000)}")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
        finally:
            con.close()

    @staticmethod
    def _require_run(con: sqlite3.Connection, run_id: str) -> None:
        if con.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is None:
            raise KeyError(f"unknown run {run_id!r}: call start_run({run_id!r}, ...) first")

    def start_run(
        self,
        run_id: str,
        stream: str,
        learner: str,
        seed: int,
        path: str | os.PathLike[str],
        config: Mapping[str, Any] | None = None,
    ) -> None:
        """Register a run as 'running'; starting an existing run again (a resume) must name the same setup."""
        if not run_id:
            raise ValueError("run_id must be a non-empty string")
        config_json = _to_json(dict(config or {}), f"config of run {run_id!r}", sort_keys=True)
        now = _now()
        with self._connect(write=True) as con:
            row = con.execute("SELECT stream, learner, seed FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is not None and tuple(row) != (stream, learner, int(seed)):
                raise ValueError(
                    f"{self.path} records run {run_id} with stream {row[0]}, learner {row[1]}, seed {row[2]}, "
                    f"not stream {stream}, learner {learner}, seed {int(seed)}; write this run to another --out"
                )
            con.execute(
                "INSERT INTO runs (run_id, stream, learner, seed, status, created, updated, path, config)"
                " VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?)"
                " ON CONFLICT (run_id) DO UPDATE SET status = 'running', updated = excluded.updated,"
                " path = excluded.path, config = excluded.config",
                (run_id, stream, learner, int(seed), now, now, str(path), config_json),
            )

    def add_event(self, run_id: str, record: Mapping[str, Any]) -> None:
        """Insert or replace the record of event `record['event']` of a run."""
        index = record.get("event")
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise ValueError(f"record needs a non-negative integer 'event', got {index!r} in {record!r}")
        if record.get("run_id", run_id) != run_id:
            raise ValueError(f"record of run {record['run_id']!r} added to run {run_id!r}")
        text = _to_json(dict(record), f"record {index} of run {run_id!r}", separators=(",", ":"))
        with self._connect(write=True) as con:
            self._require_run(con, run_id)
            con.execute(
                "INSERT INTO events (run_id, event_index, record) VALUES (?, ?, ?)"
                " ON CONFLICT (run_id, event_index) DO UPDATE SET record = excluded.record",
                (run_id, index, text),
            )
            con.execute("UPDATE runs SET updated = ? WHERE run_id = ?", (_now(), run_id))

    def truncate_events(self, run_id: str, keep: int) -> None:
        """Delete the events of a run from index `keep` on (on resume, to match a checkpoint)."""
        if keep < 0:
            raise ValueError(f"number of events to keep must be >= 0, got {keep}")
        with self._connect(write=True) as con:
            self._require_run(con, run_id)
            con.execute("DELETE FROM events WHERE run_id = ? AND event_index >= ?", (run_id, keep))

    def finish_run(self, run_id: str, status: str, summary: Mapping[str, Any] | None = None) -> None:
        """Mark a run 'finished', 'failed' or 'interrupted' and store its summary."""
        if status not in RUN_STATUSES or status == "running":
            raise ValueError(f"final status must be one of {RUN_STATUSES[1:]}, got {status!r}")
        summary_json = _to_json(dict(summary or {}), f"summary of run {run_id!r}")
        with self._connect(write=True) as con:
            self._require_run(con, run_id)
            con.execute(
                "UPDATE runs SET status = ?, summary = ?, updated = ? WHERE run_id = ?",
                (status, summary_json, _now(), run_id),
            )

    @staticmethod
    def _run_row(row: sqlite3.Row) -> dict[str, Any]:
        run = dict(row)
        run["config"] = json.loads(run["config"])
        run["summary"] = None if run["summary"] is None else json.loads(run["summary"])
        return run

    def runs(self) -> list[dict[str, Any]]:
        """All runs, oldest first, with config and summary decoded."""
        with self._connect() as con:
            con.row_factory = sqlite3.Row
            rows = con.execute("SELECT * FROM runs ORDER BY created, run_id").fetchall()
        return [self._run_row(row) for row in rows]

    def run(self, run_id: str) -> dict[str, Any]:
        """One run, with config and summary decoded."""
        with self._connect() as con:
            con.row_factory = sqlite3.Row
            row = con.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise KeyError(f"unknown run {run_id!r} in {self.path}")
        return self._run_row(row)

    def events(self, run_id: str) -> list[dict[str, Any]]:
        """The records of a run in event order."""
        with self._connect() as con:
            self._require_run(con, run_id)
            rows = con.execute("SELECT record FROM events WHERE run_id = ? ORDER BY event_index", (run_id,)).fetchall()
        return [json.loads(text) for (text,) in rows]
