"""Results of runs: run folders and the shared SQLite index (store), and reading runs back (runs)."""

from lifelong.results.ids import group_id, run_id
from lifelong.results.runs import (
    RUN_FILE,
    RunData,
    load_matrix_runs,
    read_provenance,
    read_run,
    summarize_run,
    summarize_runs,
)
from lifelong.results.store import DB_FILE, EVENTS_FILE, ResultsDB, RunFolder

__all__ = [
    "DB_FILE",
    "EVENTS_FILE",
    "RUN_FILE",
    "ResultsDB",
    "group_id",
    "load_matrix_runs",
    "RunData",
    "RunFolder",
    "read_provenance",
    "read_run",
    "run_id",
    "summarize_run",
    "summarize_runs",
]
