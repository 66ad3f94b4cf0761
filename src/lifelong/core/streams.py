"""A stream: tasks in order, each loaded on demand, turned into train and predict events."""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from lifelong.core.datasets import ArrayDataset, LazyDataset
from lifelong.core.events import Event, PredictEvent, TrainEvent
from lifelong.core.tasks import TaskKey

SPLITS = ("train", "dev", "dev_test", "test")
EVALUATIONS = ("own", "all")


@dataclass(frozen=True)
class TaskSplits:
    """The four splits of a task (docs/protocols/nevis.md#splits); train_and_dev is their union D^tr."""

    train: ArrayDataset
    dev: ArrayDataset
    dev_test: ArrayDataset
    test: ArrayDataset
    notes: dict = field(default_factory=dict)

    def get(self, split: str) -> ArrayDataset:
        if split == "train_and_dev":
            return self.train_and_dev()
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; expected one of {SPLITS + ('train_and_dev',)}")
        return getattr(self, split)

    def train_and_dev(self) -> ArrayDataset:
        if len(self.dev) == 0:  # no copy: a memory-mapped train split stays mapped
            union = copy.copy(self.train)
            union.split = "train_and_dev"
            return union
        return ArrayDataset(
            self.train.task,
            "train_and_dev",
            np.concatenate([self.train.images, self.dev.images]),
            np.concatenate([self.train.labels(), self.dev.labels()]),
        )


@dataclass(frozen=True)
class StreamTask:
    """A stream position: the task key and how to load its splits (called at most when needed)."""

    key: TaskKey
    load: Callable[[], TaskSplits]
    source: str = ""


class Stream:
    """Ordered tasks; every task yields a train event followed at once by predict events.

    `evaluation="own"` (Nevis'22): one predict event, on the task just trained. `evaluation="all"` (CLEAR): after
    every train event the learner predicts every task's evaluation split, past and future, filling one row of
    an accuracy matrix. `eval_split` is dev_test during development and test in a final run. Tasks from
    `meta_test_from_year` on form the meta-test part S^ts; without it every task is evaluated as meta-test.
    `protocol` and `metadata` describe the stream (e.g. CLEAR's "iid" or "streaming") for reports.
    With `initial_evaluation` (only with evaluation="all"), the untrained learner first predicts every task's
    evaluation split (`after_task_index` = -1): the b_j of forward transfer
    (docs/protocols/facts.md#transfer-bwt-and-fwt).
    """

    def __init__(
        self,
        name: str,
        tasks: Sequence[StreamTask],
        *,
        eval_split: str = "dev_test",
        meta_test_from_year: int | None = None,
        cache_size: int = 2,
        evaluation: str = "own",
        protocol: str | None = None,
        metadata: dict | None = None,
        initial_evaluation: bool = False,
    ) -> None:
        if eval_split not in ("dev_test", "test"):
            raise ValueError(f"eval_split must be 'dev_test' or 'test', got {eval_split!r}")
        if evaluation not in EVALUATIONS:
            raise ValueError(f"evaluation must be one of {EVALUATIONS}, got {evaluation!r}")
        if initial_evaluation and evaluation != "all":
            raise ValueError("initial_evaluation needs evaluation='all' (every task predicted before any training)")
        uids = [t.key.uid for t in tasks]
        dupes = sorted({u for u in uids if uids.count(u) > 1})
        if dupes:
            raise ValueError(f"stream {name!r}: task uids must be unique, repeated: {dupes}")
        if not tasks:
            raise ValueError(f"stream {name!r} has no tasks")
        self.name = name
        self.tasks = list(tasks)
        self.eval_split = eval_split
        self.meta_test_from_year = meta_test_from_year
        self.evaluation = evaluation
        self.protocol = protocol
        self.metadata = dict(metadata or {})
        self.initial_evaluation = initial_evaluation
        self._cache: OrderedDict[str, TaskSplits] = OrderedDict()
        # evaluating every task after every training event touches them all: keep them all loaded
        self._cache_size = max(cache_size, len(self.tasks)) if evaluation == "all" else cache_size

    def __repr__(self) -> str:
        return f"Stream({self.name!r}, {len(self.tasks)} tasks, eval_split={self.eval_split!r})"

    def is_meta_test(self, key: TaskKey) -> bool:
        if self.meta_test_from_year is None:
            return True
        return key.year is not None and key.year >= self.meta_test_from_year

    @property
    def meta_train_tasks(self) -> list[TaskKey]:
        return [t.key for t in self.tasks if not self.is_meta_test(t.key)]

    @property
    def meta_test_tasks(self) -> list[TaskKey]:
        return [t.key for t in self.tasks if self.is_meta_test(t.key)]

    def splits(self, task_index: int) -> TaskSplits:
        """Load (or reuse) the splits of the task at `task_index`."""
        task = self.tasks[task_index]
        uid = task.key.uid
        if uid in self._cache:
            self._cache.move_to_end(uid)
            return self._cache[uid]
        splits = task.load()
        if splits.train.task != task.key:
            raise ValueError(f"stream {self.name!r}: loader of {uid!r} returned task {splits.train.task.uid!r}")
        self._cache[uid] = splits
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return splits

    def _lazy(self, task_index: int, split: str) -> LazyDataset:
        return LazyDataset(self.tasks[task_index].key, split, lambda: self.splits(task_index).get(split))

    def events(self) -> list[Event]:
        """All events in order; datasets load lazily, so listing events costs no I/O."""
        events: list[Event] = []
        for j in range(len(self.tasks)) if self.initial_evaluation else ():
            events.append(self._predict_event(len(events), j, after=-1))
        for i, task in enumerate(self.tasks):
            key = task.key
            events.append(
                TrainEvent(
                    index=len(events),
                    task_index=i,
                    task=key,
                    train=self._lazy(i, "train"),
                    dev=self._lazy(i, "dev"),
                    train_and_dev=self._lazy(i, "train_and_dev"),
                )
            )
            evaluated = range(len(self.tasks)) if self.evaluation == "all" else (i,)
            for j in evaluated:
                events.append(self._predict_event(len(events), j, after=i))
        return events

    def _predict_event(self, index: int, task_index: int, after: int) -> PredictEvent:
        return PredictEvent(
            index=index,
            task_index=task_index,
            task=self.tasks[task_index].key,
            split=self.eval_split,
            dataset=self._lazy(task_index, self.eval_split),
            after_task_index=after,
        )
