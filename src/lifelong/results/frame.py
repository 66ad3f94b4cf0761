"""Every run's records as one tidy pandas DataFrame: one row per (run, event, metric), for notebooks and files.

A record of events.jsonl becomes one row per numeric field (`error`, `train_flops`, `cumulative_train_flops`,
`num_items`, `seconds`, a fact run's counts...); fields that say where an event stands (`event`, `task_index`,
`after_task_index`, `year`, `occurrence`) and fields that are no number (`dev_curve`, names) are not metrics,
and a field without a value (a train record's `error`) has no row. The columns, in order:

- `run`, `system`, `stream`, `learner`, `seed`: the run (`system`: see `system_of`; `stream`: the stream's name
  as run.json and `lifelong results` give it, e.g. `clear-mini-iid`);
- `task`, `event`, `metric`, `value`: the task the record is about, its event index, the field and its value;
- `type` (train or predict), `after_task` (the task trained last, a train record's own; empty for an evaluation
  of the untrained learner: with `task` it places a CLEAR accuracy-matrix cell) and `meta_test`.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from lifelong.core.files import atomic_write_bytes
from lifelong.results.runs import RunData, find_runs, read_run, summarize_run
from lifelong.suites.names import MANIFEST_SUFFIXES, TIMESTAMPED_SUFFIX

COLUMNS = ("run", "system", "stream", "learner", "seed", "task", "event", "metric", "value")
EXTRA_COLUMNS = ("type", "after_task", "meta_test")
NOT_METRICS = frozenset({"event", "task_index", "after_task_index", "year", "occurrence"})
SYSTEMS = ("nevis", "clear", "cog", "facts", "sortsearch", "custom")
# The toolkit's own streams by the first word of their `--stream` name; Sort & Search keeps no run folders.
_STREAM_SYSTEMS = {"mini": "nevis", "nevis": "nevis", "clear": "clear", "cog": "cog", "facts": "facts"}


def system_of(stream: str) -> str:
    """The system a run belongs to, from the `--stream` value it ran: one of `SYSTEMS`.

    mini and nevis-* are Nevis'22 streams, clear and clear-mini CLEAR, cog and cog-mini ImageNet-CoG, facts and
    facts-mini fact learning; a manifest, a timestamped CSV or another package's stream is `custom`.
    """
    if "/" in stream or os.sep in stream or stream.endswith((*MANIFEST_SUFFIXES, TIMESTAMPED_SUFFIX)):
        return "custom"  # a file, whatever its name
    return _STREAM_SYSTEMS.get(stream.split("-", 1)[0], "custom")


def _is_metric(name: str, value: Any) -> bool:
    return (
        name not in NOT_METRICS
        and isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
    )


def run_rows(run: RunData) -> list[tuple]:
    """The rows of one run, in record order (`COLUMNS` then `EXTRA_COLUMNS`)."""
    summary = summarize_run(run)  # run id, learner, seed and stream name, read as `lifelong results` reads them
    system = system_of(str(run.info["config"].get("stream", summary["stream"])))
    uids = [str(t["uid"]) for t in run.info["stream"]["tasks"]]
    head = (summary["run_id"], system, summary["stream"], summary["learner"], summary["seed"])
    rows = []
    for record in run.records:
        after = record.get("after_task_index")
        after_task = uids[after] if isinstance(after, int) and 0 <= after < len(uids) else None
        tail = (record.get("type"), after_task, bool(record.get("meta_test", False)))
        for name, value in record.items():
            if _is_metric(name, value):
                rows.append((*head, str(record.get("task")), int(record["event"]), name, float(value), *tail))
    return rows


def runs_frame(runs: Iterable[RunData]) -> pd.DataFrame:
    """The tidy frame of these runs (see the module's docstring), runs in the order given."""
    rows = [row for run in runs for row in run_rows(run)]
    frame = pd.DataFrame(rows, columns=[*COLUMNS, *EXTRA_COLUMNS])
    return frame.astype({"seed": "int64", "event": "int64", "value": "float64", "meta_test": "bool"})


def results(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] = "runs") -> pd.DataFrame:
    """Every run's records under `paths` (a runs folder, run folders, or a mix) as one tidy DataFrame.

    Folders that hold no run are passed over; what was passed over is listed in `frame.attrs["notes"]`.
    """
    given = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    folders, notes = find_runs(given)
    frame = runs_frame(read_run(folder) for folder in folders)
    frame.attrs["notes"] = notes
    return frame


def write_parquet(frame: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write `frame` as a parquet file (atomically); needs pyarrow, the `parquet` extra."""
    try:
        import pyarrow  # noqa: F401  # pandas' parquet engine
    except ImportError:
        raise ImportError("writing parquet needs pyarrow: pip install 'lifelong[parquet]'") from None
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path} is a folder; give the parquet file to write, e.g. {path / 'results.parquet'}")
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False, engine="pyarrow")
    atomic_write_bytes(path, buffer.getvalue())
    return path
