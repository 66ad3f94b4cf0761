"""Events of a stream: train on a task, then predict on one of its evaluation splits."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lifelong.core.datasets import Dataset
from lifelong.core.tasks import TaskKey


@dataclass(frozen=True)
class TrainEvent:
    """Train on `task`: `train` and `dev` for the learner's own model selection, `train_and_dev` = both.

    `workdir`, when the run is checkpointed, is a folder the learner may use to persist work within the
    event (e.g. finished hyper-parameter trials) so that a run interrupted mid-event resumes without
    redoing it; the environment deletes it once the event is checkpointed.
    """

    index: int
    task_index: int
    task: TaskKey
    train: Dataset
    dev: Dataset
    train_and_dev: Dataset
    workdir: Path | None = None

    @property
    def name(self) -> str:
        return f"event {self.index} (train {self.task.uid!r})"


@dataclass(frozen=True)
class PredictEvent:
    """Predict every item of `dataset` (one evaluation split of `task`), in its stored order.

    `after_task_index` is the stream position of the task trained last (the row of an accuracy matrix; equal
    to `task_index` in the one-evaluation-per-task protocol).
    """

    index: int
    task_index: int
    task: TaskKey
    split: str
    dataset: Dataset
    after_task_index: int | None = None

    @property
    def name(self) -> str:
        return f"event {self.index} (predict {self.task.uid!r} on {self.split!r})"


Event = TrainEvent | PredictEvent
