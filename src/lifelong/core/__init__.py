"""Core types of a lifelong run: tasks, datasets, events, streams, learners, resources.

Nothing in this package imports torch, so streams and results can be inspected without it.
"""

from lifelong.core.datasets import ArrayDataset, Batch, Dataset, LazyDataset
from lifelong.core.events import Event, PredictEvent, TrainEvent
from lifelong.core.learner import Learner
from lifelong.core.resources import Resources
from lifelong.core.streams import Stream, StreamTask, TaskSplits
from lifelong.core.tasks import TaskKey, TaskKind

__all__ = [
    "ArrayDataset",
    "Batch",
    "Dataset",
    "Event",
    "LazyDataset",
    "Learner",
    "PredictEvent",
    "Resources",
    "Stream",
    "StreamTask",
    "TaskKey",
    "TaskKind",
    "TaskSplits",
    "TrainEvent",
]
