"""Checks on what a learner hands back, at the boundary, naming the event and task."""

from __future__ import annotations

import numpy as np

from lifelong.core.errors import LifelongError
from lifelong.core.events import PredictEvent
from lifelong.core.resources import Resources


class LearnerOutputError(LifelongError, ValueError):
    """A learner returned something the protocol does not allow."""


def check_resources(event_name: str, learner_name: str, resources: object) -> Resources:
    if not isinstance(resources, Resources):
        raise LearnerOutputError(
            f"{event_name}: learner {learner_name!r} must return (state, Resources) from train, "
            f"got {type(resources).__name__} as the second element"
        )
    return resources


def check_predictions(event: PredictEvent, learner_name: str, predictions: object, num_items: int) -> np.ndarray:
    """Predictions must be a finite [N, C] float array; probabilities in [0, 1] for multi-label tasks."""
    where = f"{event.name}: learner {learner_name!r}"
    task = event.task
    try:
        array = np.asarray(predictions, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise LearnerOutputError(f"{where} returned predictions that are not numeric: {exc}") from exc
    expected = (num_items, task.num_classes)
    if array.shape != expected:
        raise LearnerOutputError(
            f"{where} returned predictions of shape {array.shape}; task {task.uid!r} needs {expected} "
            f"({num_items} items of split {event.split!r} x {task.num_classes} classes)"
        )
    finite = np.isfinite(array)
    if not finite.all():
        row, col = (int(i) for i in np.argwhere(~finite)[0])
        raise LearnerOutputError(
            f"{where} returned {int((~finite).sum())} non-finite prediction(s) for task {task.uid!r}, "
            f"first at item {row}, class {col}: {array[row, col]}"
        )
    if task.is_multi_label and ((array < 0).any() or (array > 1).any()):
        row, col = (int(i) for i in np.argwhere((array < 0) | (array > 1))[0])
        raise LearnerOutputError(
            f"{where} returned a multi-label score {array[row, col]} outside [0, 1] for task {task.uid!r} "
            f"at item {row}, class {col}; multi-label predictions must be probabilities (apply a sigmoid)"
        )
    return array
