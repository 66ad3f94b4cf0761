"""`--log tensorboard`: TensorBoard event files in `<run folder>/tensorboard/` (`tensorboard --logdir RUNS`).

Written with TensorBoard's own event-file writer (no torch, no TensorFlow): scalars `task/<task>/error`,
`run/mean_error`, `run/meta_test_mean_error` and `run/cumulative_train_flops` at step = event index, and
`compute/mean_error` at step = cumulative training FLOPs (see `RunScalars`). A resumed run adds an event file
to the same folder, its steps continuing where the checkpoint left off.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from lifelong.results.loggers import RunScalars, missing_package
from lifelong.results.runs import RunData

try:
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
except ImportError as exc:
    raise missing_package("tensorboard", "tensorboard") from exc

FOLDER = "tensorboard"


class TensorBoardLogger:
    """Scalars of each record as simple-value summaries (what TensorBoard's scalar dashboard reads)."""

    def __init__(self, run: RunData) -> None:
        self.path = run.path / FOLDER
        self._scalars = RunScalars(run.records)
        self._writer = EventFileWriter(str(self.path))

    def log(self, record: Mapping[str, Any]) -> None:
        by_step: dict[int, list[Summary.Value]] = defaultdict(list)
        for scalar in self._scalars(record):
            by_step[scalar.step].append(Summary.Value(tag=scalar.tag, simple_value=scalar.value))
        now = time.time()
        for step, values in by_step.items():
            self._writer.add_event(Event(wall_time=now, step=step, summary=Summary(value=values)))
        self._writer.flush()  # a TensorBoard watching the run sees each event as it ends

    def close(self, status: str) -> None:
        self._writer.close()
