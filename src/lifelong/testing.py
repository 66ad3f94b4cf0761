"""Conformance checks a third-party learner runs on itself, and the tiny in-memory stream they use.

Shaped like scikit-learn's estimator checks: one function per rule (`LEARNER_CHECKS`), `check_learner` to run
them all and report every failure at once, and `parametrize_with_checks` for one pytest case per rule.
"""

from __future__ import annotations

import functools
import pickle
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lifelong.core.datasets import ArrayDataset
from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.core.learner import Learner
from lifelong.core.resources import Resources
from lifelong.core.streams import SPLITS, Stream, StreamTask, TaskSplits
from lifelong.core.tasks import TaskKey, TaskKind


class LearnerCheckError(AssertionError):
    """The learner broke the protocol; the message names each failed rule and where it failed.

    `failures` maps each failed rule's name to its message (one entry from a rule, all of them from check_learner).
    """

    def __init__(self, message: str, failures: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.failures = dict(failures or {})


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


StreamFactory = Callable[..., Stream]
Check = Callable[..., None]

_PROTOCOL_METHODS = ("init", "train", "predict")


def _label(learner: object) -> str:
    """The learner's `name` where it is a string, else its class name: how messages and test ids refer to it."""
    try:
        name = learner.name  # type: ignore[attr-defined]
    except Exception:  # missing, or a property that raises: check_has_name reports it
        name = None
    return name if isinstance(name, str) and name else type(learner).__name__


def _error(rule: str, message: str) -> LearnerCheckError:
    return LearnerCheckError(f"{rule}: {message}", {rule: message})


def _missing_methods(learner: object) -> list[str]:
    return [m for m in _PROTOCOL_METHODS if not callable(getattr(learner, m, None))]


@dataclass
class _Pass:
    """One pass of the learner over the check stream's events, outside the environment: what it returned."""

    predictions: list[tuple[str, np.ndarray]] = field(default_factory=list)  # (event name, predictions)
    returned: list[tuple[str, object]] = field(default_factory=list)  # (event name, train's second element)
    failure: str | None = None  # where and why the pass stopped early
    pickle_failure: bool = False  # it stopped because the state did not go through pickle


class _Context:
    """The work the rules share for one (learner, seed, stream): one environment run and three passes, done lazily."""

    def __init__(self, learner: Learner, seed: int, make_stream: StreamFactory) -> None:
        self.learner, self.seed, self.make_stream = learner, seed, make_stream

    @functools.cached_property
    def run(self) -> tuple[str, dict | None, Exception | None]:
        """(stream name, the run's summary or None, the exception the run raised or None)."""
        from lifelong.run.environment import run

        stream = self.make_stream(seed=self.seed)
        try:
            return stream.name, run(self.learner, stream, seed=self.seed).summary, None
        except Exception as exc:  # whatever the learner breaks is a finding of check_runs_in_environment
            return stream.name, None, exc

    @functools.cached_property
    def events(self) -> list:
        return self.make_stream(seed=self.seed).events()  # one stream: the passes share its loaded data

    @functools.cached_property
    def first(self) -> _Pass:
        return self._pass(through_pickle=False)

    @functools.cached_property
    def second(self) -> _Pass:
        return self._pass(through_pickle=False)

    @functools.cached_property
    def resumed(self) -> _Pass:
        return self._pass(through_pickle=True)

    def _pass(self, *, through_pickle: bool) -> _Pass:
        """init, then every event in order; `through_pickle` round-trips the state before each event and after
        the last, as resuming from a checkpoint there would."""
        out = _Pass()
        missing = _missing_methods(self.learner)
        if missing:
            out.failure = f"cannot run: no callable {', '.join(missing)} (see check_has_protocol_methods)"
            return out
        try:
            state = self.learner.init(self.seed)
        except Exception as exc:
            out.failure = f"init({self.seed}) raised {type(exc).__name__}: {exc}"
            return out
        for event in [*self.events, None]:
            if through_pickle:
                where = f"before {event.name}" if event is not None else "after the last event"
                try:
                    state = pickle.loads(pickle.dumps(state))
                except Exception as exc:
                    out.failure = f"the state did not go through pickle {where}: {type(exc).__name__}: {exc}"
                    out.pickle_failure = True
                    return out
            if event is None:
                return out
            try:
                if isinstance(event, TrainEvent):
                    returned = self.learner.train(event, state)
                    try:
                        state, resources = returned
                    except (TypeError, ValueError):
                        out.failure = f"{event.name}: train must return (state, Resources), got {returned!r:.80}"
                        return out
                    out.returned.append((event.name, resources))
                elif isinstance(event, PredictEvent):
                    out.predictions.append((event.name, np.array(self.learner.predict(event, state))))
            except Exception as exc:
                out.failure = f"{event.name} raised {type(exc).__name__}: {exc}"
                return out
        return out


_CONTEXTS: OrderedDict[tuple, _Context] = OrderedDict()
_CONTEXTS_KEPT = 2  # parametrized cases run learner by learner, so the last two contexts cover reuse


def _context_key(learner: Learner, seed: int, stream: StreamFactory | None) -> tuple:
    return id(learner), seed, stream or tiny_stream


def _context(learner: Learner, seed: int, stream: StreamFactory | None) -> _Context:
    """The shared work for this learner object, seed and stream factory: cached so that rules run apart reuse it."""
    key = _context_key(learner, seed, stream)
    context = _CONTEXTS.get(key)
    if context is None or context.learner is not learner:
        context = _CONTEXTS[key] = _Context(learner, seed, stream or tiny_stream)
    _CONTEXTS.move_to_end(key)
    while len(_CONTEXTS) > _CONTEXTS_KEPT:
        _CONTEXTS.popitem(last=False)
    return context


def _first_difference(a: _Pass, b: _Pass) -> str | None:
    """Where two completed passes first predicted differently, and by how much; None if they agree everywhere."""
    for (event, x), (_, y) in zip(a.predictions, b.predictions, strict=True):
        if np.array_equal(x, y):
            continue
        if x.shape != y.shape:
            return f"{event}: prediction shapes {x.shape} vs {y.shape}"
        try:
            return f"{event}: largest difference {float(np.max(np.abs(x.astype(float) - y.astype(float)))):.3g}"
        except (TypeError, ValueError):
            return f"{event}: predictions differ"
    return None


def check_has_protocol_methods(learner: Learner, *, seed: int = 0, stream: StreamFactory | None = None) -> None:
    """`init`, `train` and `predict` are callable: the environment calls nothing else (see lifelong.core.Learner)."""
    missing = _missing_methods(learner)
    if missing:
        methods = ", ".join(f"`{m}`" for m in missing)
        raise _error(
            "check_has_protocol_methods",
            f"learner {learner!r} has no callable {methods} method (see lifelong.core.Learner)",
        )


def check_has_name(learner: Learner, *, seed: int = 0, stream: StreamFactory | None = None) -> None:
    """`name` is a string: records, checkpoints and reports are labelled with it."""
    try:
        name = learner.name
    except Exception as exc:  # a missing attribute, or a property that raises
        name, found = None, f"getting it raised {type(exc).__name__}: {exc}"
    else:
        found = f"has {type(name).__name__} {name!r}"
    if not isinstance(name, str):
        raise _error("check_has_name", f"learner {learner!r} needs a string `name` attribute; {found}")


def check_runs_in_environment(learner: Learner, *, seed: int = 0, stream: StreamFactory | None = None) -> None:
    """A whole run through lifelong.run.environment passes its output validation (prediction shapes, ranges)."""
    stream_name, _, error = _context(learner, seed, stream).run
    if error is not None:
        raise _error(
            "check_runs_in_environment",
            f"learner {_label(learner)!r} failed on the check stream {stream_name!r}: {error}",
        )


def check_train_returns_resources(learner: Learner, *, seed: int = 0, stream: StreamFactory | None = None) -> None:
    """Every `train` call returns (state, Resources): the environment counts compute from the Resources."""
    done = _context(learner, seed, stream).first
    for event, resources in done.returned:
        if not isinstance(resources, Resources):
            raise _error(
                "check_train_returns_resources",
                f"{event}: train must return (state, Resources), got {type(resources).__name__} as the second element",
            )
    if done.failure is not None:
        raise _error("check_train_returns_resources", f"could not check every train event: {done.failure}")


def check_state_picklable(learner: Learner, *, seed: int = 0, stream: StreamFactory | None = None) -> None:
    """The state pickles and unpickles after init and after every event: the environment checkpoints it there."""
    done = _context(learner, seed, stream).resumed
    if done.pickle_failure:
        raise _error("check_state_picklable", f"{done.failure} (the environment checkpoints it after every event)")
    if done.failure is not None:
        raise _error("check_state_picklable", f"could not check every state: {done.failure}")


def check_same_seed_same_predictions(learner: Learner, *, seed: int = 0, stream: StreamFactory | None = None) -> None:
    """Two runs with the same seed give identical predictions: results must be reproducible from the seed."""
    context = _context(learner, seed, stream)
    for done in (context.first, context.second):
        if done.failure is not None:
            raise _error("check_same_seed_same_predictions", f"could not run the learner twice: {done.failure}")
    difference = _first_difference(context.first, context.second)
    if difference is not None:
        raise _error(
            "check_same_seed_same_predictions",
            f"two runs with seed {seed} gave different predictions; first at {difference}",
        )


def check_predictions_survive_pickle(learner: Learner, *, seed: int = 0, stream: StreamFactory | None = None) -> None:
    """Predictions are unchanged when the state goes through pickle before every event: resumed runs match."""
    context = _context(learner, seed, stream)
    resumed, first = context.resumed, context.first
    if resumed.pickle_failure:
        raise _error(
            "check_predictions_survive_pickle", f"cannot resume: {resumed.failure} (see check_state_picklable)"
        )
    for done in (first, resumed):
        if done.failure is not None:
            raise _error("check_predictions_survive_pickle", f"could not run the learner: {done.failure}")
    difference = _first_difference(first, resumed)
    if difference is not None:
        second = context.second
        also = (
            "; two uninterrupted runs differ too (see check_same_seed_same_predictions)"
            if second.failure is not None or _first_difference(first, second) is not None
            else ""
        )
        raise _error(
            "check_predictions_survive_pickle",
            f"predictions changed after the state went through pickle (checkpoint/resume); first at {difference}{also}",
        )


LEARNER_CHECKS: tuple[Check, ...] = (
    check_has_protocol_methods,
    check_has_name,
    check_runs_in_environment,
    check_train_returns_resources,
    check_state_picklable,
    check_same_seed_same_predictions,
    check_predictions_survive_pickle,
)


def check_learner(learner: Learner, *, seed: int = 0, stream: StreamFactory | None = None) -> dict:
    """Run every rule in LEARNER_CHECKS on `learner`; raise one LearnerCheckError listing every failed rule.

    `stream(seed=...)` builds the stream to check on (default `tiny_stream`, whose tasks differ in label space;
    learners that need one fixed label space pass a stream that has one). Returns the run summary.
    """
    key = _context_key(learner, seed, stream)
    _CONTEXTS.pop(key, None)  # fresh work for every call: the learner may have changed since a cached run
    failures: dict[str, str] = {}
    try:
        for rule in LEARNER_CHECKS:
            try:
                rule(learner, seed=seed, stream=stream)
            except LearnerCheckError as exc:
                failures.update(exc.failures or {rule.__name__: str(exc)})
        summary = _context(learner, seed, stream).run[1]
    finally:
        _CONTEXTS.pop(key, None)
    if failures:
        listing = "\n".join(f"- {rule}: {message}" for rule, message in failures.items())
        raise LearnerCheckError(
            f"learner {_label(learner)!r} failed {len(failures)} of {len(LEARNER_CHECKS)} rules:\n{listing}", failures
        )
    assert summary is not None  # check_runs_in_environment passed
    return summary


def _bind(rule: Check, stream: StreamFactory | None) -> Check:
    """`rule` with the stream factory bound, keeping the rule's name (for test ids and listings)."""
    if stream is None:
        return rule
    bound = functools.partial(rule, stream=stream)
    functools.update_wrapper(bound, rule)
    return bound


def parametrize_with_checks(
    learners: Iterable[Learner], *, stream: StreamFactory | None = None, generate_only: bool = False
) -> Any:
    """A pytest.mark.parametrize over ("learner", "check"): one case per learner and rule, id `name-rule`.

    Use as `@parametrize_with_checks([MyLearner()])` on `def test_conformance(learner, check): check(learner)`.
    `generate_only=True` returns the (learner, check) pairs instead, and needs no pytest.
    """
    pairs = [(learner, _bind(rule, stream)) for learner in learners for rule in LEARNER_CHECKS]
    if generate_only:
        return pairs
    import pytest  # only here: lifelong.testing imports without pytest

    ids = [f"{_label(learner)}-{check.__name__}" for learner, check in pairs]
    return pytest.mark.parametrize("learner, check", pairs, ids=ids)
