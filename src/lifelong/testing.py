"""Conformance check a third-party learner runs on itself, and the tiny in-memory stream it uses."""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable

import numpy as np

from lifelong.core.datasets import ArrayDataset
from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.core.learner import Learner
from lifelong.core.resources import Resources
from lifelong.core.streams import SPLITS, Stream, StreamTask, TaskSplits
from lifelong.core.tasks import TaskKey, TaskKind


class LearnerCheckError(AssertionError):
    """The learner broke the protocol; the message says which rule and where."""


def _bar_images(rng: np.random.Generator, labels: np.ndarray, num_classes: int, size: int) -> np.ndarray:
    """Images whose class c lights up horizontal band c (multi-hot labels light several), plus noise."""
    n = len(labels)
    images = rng.integers(0, 60, size=(n, size, size, 3), dtype=np.uint8)
    band = max(1, size // num_classes)
    hot = labels if labels.ndim == 2 else np.eye(num_classes, dtype=np.uint8)[labels]
    for c in range(num_classes):
        rows = hot[:, c].astype(bool)
        images[rows, c * band : (c + 1) * band, :, :] = 220
    return images


def _tiny_task(key: TaskKey, size: int, n: int, seed: int) -> TaskSplits:
    rng = np.random.default_rng(seed)
    if key.is_multi_label:
        labels = (rng.random((n, key.num_classes)) < 0.4).astype(np.uint8)
        labels[np.arange(n), rng.integers(0, key.num_classes, n)] = 1
    else:
        labels = np.arange(n) % key.num_classes
    images = _bar_images(rng, labels, key.num_classes, size)
    cuts = np.cumsum([int(n * 0.56), int(n * 0.12), int(n * 0.12)])
    parts = np.split(np.arange(n), cuts)
    return TaskSplits(*(ArrayDataset(key, s, images[p], labels[p]) for s, p in zip(SPLITS, parts, strict=True)))


def tiny_stream(n_per_task: int = 120, seed: int = 0) -> Stream:
    """Three tiny in-memory tasks: 3-class 8x8, 4-class 12x12, and 3-label 8x8 multi-label; no files."""
    shapes = [
        ("bars3", TaskKind.MULTI_CLASS, 3, 8),
        ("bars4", TaskKind.MULTI_CLASS, 4, 12),
        ("bars_ml", TaskKind.MULTI_LABEL, 3, 8),
    ]
    tasks = []
    for i, (name, kind, classes, size) in enumerate(shapes):
        key = TaskKey(name, kind, classes, year=2000 + i, domain="synthetic")
        tasks.append(StreamTask(key, functools.partial(_tiny_task, key, size, n_per_task, seed + i), source="tiny"))
    return Stream("tiny", tasks, meta_test_from_year=2001)


def check_learner(learner: Learner, *, seed: int = 0, stream: Callable[..., Stream] | None = None) -> dict:
    """Run `learner` through the protocol on a tiny stream; raise LearnerCheckError on the first violation.

    `stream(seed=...)` builds the stream to check on (default `tiny_stream`, whose tasks differ in label space;
    learners that need one fixed label space pass a stream that has one).

    Checks: the protocol methods exist; a whole run passes the environment's output validation; states
    pickle (the environment checkpoints them); train returns Resources; the same seed gives identical
    predictions, also after the state went through pickle (so resumed runs match uninterrupted ones).
    Returns the run summary.
    """
    from lifelong.run.environment import run

    make_stream = stream or tiny_stream
    for method in ("init", "train", "predict"):
        if not callable(getattr(learner, method, None)):
            raise LearnerCheckError(
                f"learner {learner!r} has no callable `{method}` method (see lifelong.core.Learner)"
            )
    if not isinstance(getattr(learner, "name", None), str):
        raise LearnerCheckError(f"learner {learner!r} needs a string `name` attribute")
    try:
        result = run(learner, make_stream(seed=seed), seed=seed)
    except Exception as exc:
        raise LearnerCheckError(f"learner {learner.name!r} failed on the tiny stream: {exc}") from exc

    events = make_stream(seed=seed).events()
    first = _predictions_after(learner, events, seed, through_pickle=False)
    again = _predictions_after(learner, events, seed, through_pickle=False)
    resumed = _predictions_after(learner, events, seed, through_pickle=True)
    for (event, a), (_, b), (_, c) in zip(first, again, resumed, strict=True):
        if not np.array_equal(a, b):
            raise LearnerCheckError(f"{event.name}: two runs with seed {seed} gave different predictions")
        if not np.array_equal(a, c):
            raise LearnerCheckError(
                f"{event.name}: predictions changed after the state went through pickle (checkpoint/resume)"
            )
    return result.summary


def _predictions_after(learner: Learner, events: list, seed: int, *, through_pickle: bool) -> list:
    state = learner.init(seed)
    out = []
    for event in events:
        if through_pickle:
            try:
                state = pickle.loads(pickle.dumps(state))
            except Exception as exc:
                raise LearnerCheckError(f"learner state is not picklable before {event.name}: {exc}") from exc
        if isinstance(event, TrainEvent):
            state, resources = learner.train(event, state)
            if not isinstance(resources, Resources):
                raise LearnerCheckError(f"{event.name}: train must return (state, Resources), got {type(resources)}")
        elif isinstance(event, PredictEvent):
            out.append((event, np.asarray(learner.predict(event, state))))
    return out
