"""Runs on Ray workers that come back to the driver: nothing assumes that the workers share the driver's disk.

A worker runs `execute` in a scratch folder of its own (seeded with the driver's run folder when the run resumes)
and returns the run folder packed, with the run's rows of its scratch results database; the scratch folder is then
deleted. The driver unpacks the folder into OUT/<run id> and writes the rows into OUT's database, once per run, as
each result arrives. A worker lost mid-run returns nothing, so its partial records never land; the executor runs
it again from the driver's copy. The driver holds each run folder's lock while the run is out, so a second
command cannot write the same run meanwhile. Stream manifests and --data-root must exist on every node.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import pickle
import shutil
import tarfile
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lifelong.commands.runner import RunSpec, check_folder, check_learner, execute
from lifelong.core.executors import Executor
from lifelong.results.store import ResultsDB

_JSON_FILES = ("run.json", "summary.json")  # they name the run's folder: rebased from the worker's to the driver's
_LAST = "summary.json"  # a finished run's mark, moved into place last


@dataclass(frozen=True)
class RemoteRun:
    """What a worker sends back: the run folder (tar), the run's database rows, and the summary or the error."""

    scratch: str  # the worker's results folder: paths in the files and rows start with it
    folder: bytes
    row: dict[str, Any] | None  # the run's row of the scratch database; None if the run failed before starting
    events: list[dict[str, Any]]
    summary: dict[str, Any] | None
    error: BaseException | None = None


def run_specs(executor: Executor, specs: Sequence[RunSpec]) -> list[dict]:
    """Each spec's summary, in order: `execute` in this process (local executor), else on workers, landed here."""
    if executor.name == "local":
        return executor.map(execute, specs)
    return run_remote(executor, specs)


def run_remote(executor: Executor, specs: Sequence[RunSpec]) -> list[dict]:
    """Run every spec on the executor's workers; each run lands in OUT/<run id> and OUT's database as it ends."""
    from lifelong.results.lock import run_folder_lock

    specs = list(specs)
    summaries: list[dict] = [{} for _ in specs]
    for spec in specs:  # a refused learner or option is said here, before any folder is made
        check_learner(spec)
    with ExitStack() as held:
        jobs = []
        for spec in specs:
            held.enter_context(run_folder_lock(spec.folder))
            jobs.append((spec, pack(spec.folder) if check_folder(spec) else None))

        def land_one(index: int, remote: RemoteRun) -> None:
            summaries[index] = land(specs[index], remote)

        executor.map(run_on_worker, jobs, on_result=land_one)
    return summaries


def run_on_worker(job: tuple[RunSpec, bytes | None]) -> RemoteRun:
    """Ray task body: `execute` the spec in a scratch folder (unpacking the driver's folder first) and pack it."""
    spec, packed = job
    scratch = Path(tempfile.mkdtemp(prefix="lifelong-run-"))
    try:
        local = dataclasses.replace(spec, out=str(scratch), progress=False)
        if packed is not None:
            unpack(packed, local.folder)
        summary, error = None, None
        try:
            summary = execute(local)
        except Exception as exc:  # recorded as failed in the scratch database; the driver lands it, then raises
            error = exc if _round_trips(exc) else RuntimeError(f"{type(exc).__name__}: {exc}")
        db = ResultsDB(scratch)
        try:
            row, events = db.run(spec.run_id), db.events(spec.run_id)
        except KeyError:
            return RemoteRun(str(scratch), b"", None, [], None, error)
        return RemoteRun(str(scratch), pack(local.folder), row, events, summary, error)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def land(spec: RunSpec, remote: RemoteRun) -> dict:
    """Put a worker's run into `spec.folder` and OUT's database (replacing what was there); raise its error after."""
    if remote.row is not None:
        new = str(Path(spec.out))
        _unpack_into(remote.folder, spec.folder, old=remote.scratch, new=new)
        row = remote.row
        db, config = ResultsDB(spec.out), dataclasses.asdict(spec)
        db.start_run(spec.run_id, row["stream"], row["learner"], row["seed"], str(spec.folder), config)
        db.truncate_events(spec.run_id, 0)
        for record in remote.events:
            db.add_event(spec.run_id, record)
        db.finish_run(spec.run_id, row["status"], _rebase(row["summary"], remote.scratch, new))
    if remote.error is not None:
        raise remote.error
    return _rebase(remote.summary, remote.scratch, str(Path(spec.out)))


def pack(folder: Path) -> bytes:
    """The files of a run folder as an uncompressed tar; hidden files (the lock, temp files) stay behind."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in sorted(Path(folder).rglob("*")):
            if path.is_file() and not path.name.startswith("."):
                tar.add(path, arcname=str(path.relative_to(folder)), recursive=False)
    return buffer.getvalue()


def unpack(packed: bytes, into: Path) -> None:
    """Extract a `pack`ed folder into `into` (created if missing)."""
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(packed)) as tar:
        tar.extractall(into, filter="data")


def _unpack_into(packed: bytes, folder: Path, *, old: str, new: str) -> None:
    """Replace the files of `folder` by the packed ones, each by an atomic rename (summary.json last), then remove
    the files the packed folder does not have (hidden files, such as the lock this process holds, stay)."""
    folder.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.incoming-", dir=folder.parent))
    try:
        unpack(packed, staging)
        for name in _JSON_FILES:
            path = staging / name
            if path.is_file():
                moved = _rebase(json.loads(path.read_text()), old, new)
                path.write_text(json.dumps(moved, indent=2, allow_nan=False) + "\n")
        files = [p.relative_to(staging) for p in sorted(staging.rglob("*")) if p.is_file()]
        files.sort(key=lambda rel: str(rel) == _LAST)
        for rel in files:
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / rel, folder / rel)
        kept = set(files)
        for path in sorted(folder.rglob("*"), reverse=True):  # children before their folders
            if path.name.startswith("."):
                continue
            if path.is_file() and path.relative_to(folder) not in kept:
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _rebase(value: Any, old: str, new: str) -> Any:
    """`value` with every path string under folder `old` moved under `new` (dicts, lists and tuples walked)."""
    if isinstance(value, str):
        return new + value[len(old) :] if value == old or value.startswith(old + os.sep) else value
    if isinstance(value, dict):
        return {k: _rebase(v, old, new) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_rebase(v, old, new) for v in value)
    return value


def _round_trips(exc: BaseException) -> bool:
    """Whether the exception survives pickling (Ray sends it back to the driver)."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return False
    return True
