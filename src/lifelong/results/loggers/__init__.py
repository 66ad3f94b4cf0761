"""Loggers: plug-ins that receive a run's records as they are written (TensorBoard, W&B offline, MLflow files).

A logger registers under the entry-point group `lifelong.loggers` (lifelong's own in its pyproject.toml, another
package's in its own) as a factory `(run: RunData) -> RunLogger`: `run.path` is the run folder (a logger writes
under it), `run.info` its run.json (run id, config, stream) and `run.records` the records written before the logger
opened: none for a new run, a resumed run's earlier events (a logger continues after them and does not log them
again). The run wiring (`commands/runner.py`) opens the loggers `lifelong run --log` names, hands each record to
`log` once it is in events.jsonl, and calls `close(status)` at the end, status one of `STATUSES`. The environment
never sees a logger, and a run without loggers writes what it always wrote. A logger that raises stops the run with
a `LoggerError` naming it (the run is checkpointed: `--resume` continues it); one that fails to close does so after
the run's own files are complete.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from lifelong.core.errors import LifelongError
from lifelong.core.plugins import PluginError, Registry
from lifelong.metrics.stream import StreamSummary
from lifelong.results.runs import RunData

GROUP = "lifelong.loggers"
LOGGERS = Registry(GROUP, "logger")
STATUSES = ("finished", "interrupted", "failed")  # as the results database records a run's end
INT64_MAX = 2**63 - 1


class RunLogger(Protocol):
    """What a logger factory returns."""

    def log(self, record: Mapping[str, Any]) -> None:
        """One record of events.jsonl, in event order."""

    def close(self, status: str) -> None:
        """The run ended (`finished`, `interrupted` or `failed`): write everything out."""


LoggerFactory = Callable[[RunData], RunLogger]


class MissingPackageError(LifelongError, ImportError):
    """A logger whose library is not installed; the message names the extra that installs it."""


class LoggerError(LifelongError, RuntimeError):
    """A logger that failed while it started, logged or closed; the message names it and what is kept."""


def missing_package(name: str, package: str) -> MissingPackageError:
    """The error a built-in logger raises on import when `package` (also its extra's name) is missing."""
    return MissingPackageError(f"--log {name} needs the {package} package: pip install 'lifelong[{package}]'")


def parse_names(value: str | Iterable[str] | None) -> tuple[str, ...]:
    """`tensorboard,wandb` (or several such values) as names, each once, in the order given."""
    parts = [value] if isinstance(value, str) else list(value or ())
    names = [name.strip() for part in parts for name in part.split(",")]
    if any(not name for name in names):
        raise ValueError(f"--log {','.join(parts)!r} has an empty name; give names separated by commas")
    return tuple(dict.fromkeys(names))


def load_loggers(names: Iterable[str]) -> dict[str, LoggerFactory]:
    """Each named logger's factory. An unknown name lists the known ones; a missing library names its extra."""
    factories = {}
    for name in names:
        try:
            factories[name] = LOGGERS.load(name)
        except PluginError as exc:
            if isinstance(exc.__cause__, MissingPackageError):
                raise exc.__cause__ from None
            raise
    return factories


def _call(name: str, when: str, kept: str, action: Callable[..., Any], *args: Any) -> Any:
    """`action(*args)`; its failure as a LoggerError naming the logger, when it failed and what is kept."""
    try:
        return action(*args)
    except Exception as exc:
        raise LoggerError(f"--log {name} failed {when}: {type(exc).__name__}: {exc}; {kept}") from exc


_RESUME = "the run is checkpointed: fix it, then run the same command with --resume"


class Loggers:
    """The opened loggers of one run, by name: each record to each of them, and one close for all."""

    def __init__(self, loggers: Mapping[str, RunLogger] | None = None) -> None:
        self.loggers = dict(loggers or {})

    @classmethod
    def open(cls, factories: Mapping[str, LoggerFactory], run: RunData) -> Loggers:
        opened: dict[str, RunLogger] = {}
        try:
            for name, factory in factories.items():
                opened[name] = _call(name, "to start", _RESUME, factory, run)
        except BaseException:
            cls(opened).close("failed", quiet=True)
            raise
        return cls(opened)

    def log(self, record: Mapping[str, Any]) -> None:
        for name, logger in self.loggers.items():
            _call(name, f"on event {record.get('event')}", _RESUME, logger.log, record)

    def close(self, status: str, *, quiet: bool = False) -> None:
        """Close every logger; then raise the first failure (none with `quiet`, while another error unwinds)."""
        if status not in STATUSES:
            raise ValueError(f"a run ends {', '.join(STATUSES)}, not {status!r}")
        errors = []
        for name, logger in self.loggers.items():
            try:
                _call(name, "to close", "the run's own files are complete", logger.close, status)
            except LoggerError as exc:  # the others still get closed
                errors.append(exc)
        self.loggers = {}
        if errors and not quiet:
            raise errors[0]


@dataclass(frozen=True)
class Scalar:
    """One value to log: its tag, value and step; `axis` says what the step counts (`event` or `cflop`)."""

    tag: str
    value: float
    step: int
    axis: str = "event"


TASK_ERROR = "task/{task}/error"  # each evaluation's error, at its event index
MEAN_ERROR = "run/mean_error"  # the running mean error over the evaluations so far (the stream summary's E)
META_TEST_MEAN_ERROR = "run/meta_test_mean_error"
CUMULATIVE_FLOPS = "run/cumulative_train_flops"
COMPUTE_MEAN_ERROR = "compute/mean_error"  # the running mean error, at step = cumulative training FLOPs


class RunScalars:
    """The scalars the built-in loggers write for each record, so that all of them show the same numbers.

    The running means are the stream summary's (`lifelong.metrics.stream.StreamSummary`) over the records so
    far; a resumed run starts from the records written before (`RunData.records`).
    """

    def __init__(self, earlier: Iterable[Mapping[str, Any]] = ()) -> None:
        self._summary = StreamSummary()
        self._state = self._summary.init()
        for record in earlier:
            self._add(record)

    def _add(self, record: Mapping[str, Any]) -> bool:
        """Add a record to the running summary; whether it counts as an evaluation."""
        if record.get("type") not in ("train", "predict"):
            return False
        before = self._state
        self._state = self._summary.add(self._state, dict(record))
        # the summary hands back its state unchanged for an evaluation it does not count (the untrained learner's)
        return record["type"] == "predict" and self._state is not before

    def __call__(self, record: Mapping[str, Any]) -> list[Scalar]:
        event = int(record["event"])
        evaluated = self._add(record)
        scalars = []
        error = record.get("error")
        if record.get("type") == "predict" and isinstance(error, int | float):
            scalars.append(Scalar(TASK_ERROR.format(task=record["task"]), float(error), event))
        cflop = record.get("cumulative_train_flops")
        if isinstance(cflop, int | float) and math.isfinite(cflop):
            scalars.append(Scalar(CUMULATIVE_FLOPS, float(cflop), event))
        if evaluated:
            summary = self._summary.compute(self._state)
            for tag, key in ((MEAN_ERROR, "mean_error"), (META_TEST_MEAN_ERROR, "meta_test_mean_error")):
                if summary[key] is not None:
                    scalars.append(Scalar(tag, float(summary[key]), event))
            if isinstance(cflop, int | float) and 0 <= cflop <= INT64_MAX:  # steps are 64-bit integers
                scalars.append(Scalar(COMPUTE_MEAN_ERROR, float(summary["mean_error"]), int(cflop), "cflop"))
        return scalars
