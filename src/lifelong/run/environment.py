"""The environment: drives a learner over a stream, event by event, checkpointing after each one."""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from lifelong.core.errors import LifelongError
from lifelong.core.events import Event, TrainEvent
from lifelong.core.learner import Learner
from lifelong.core.progress import Progress, progress_bar
from lifelong.core.streams import Stream
from lifelong.metrics.base import Metric
from lifelong.metrics.classification import task_error
from lifelong.metrics.fact_scores import fact_record
from lifelong.metrics.stream import default_metrics
from lifelong.run.checkpoint import Checkpoint, CheckpointStore
from lifelong.run.validation import LearnerOutputError, check_predictions, check_resources


class EventError(LifelongError, RuntimeError):
    """A learner or data failure during one event; the message names the event and the task."""


@dataclass
class RunResult:
    """What a run produced: per-event records, metric values, final learner state, and timings."""

    records: list[dict]
    summary: dict
    learner_state: object
    timing: dict = field(default_factory=dict)


def run(
    learner: Learner,
    stream: Stream,
    metrics: list[Metric] | None = None,
    checkpoint: CheckpointStore | None = None,
    *,
    seed: int = 0,
    resume: bool = False,
    run_id: str = "",
    on_record: Callable[[dict], None] | None = None,
    on_predictions: Callable[[dict, np.ndarray, np.ndarray], None] | None = None,
    progress: Progress = False,
    stop_after: int | None = None,
) -> RunResult:
    """Run `learner` over `stream`; with `checkpoint`, save after every event and (with `resume`) continue.

    Timing separates the learner's train/predict calls, loading task data, and the environment's own overhead
    (validation, metrics, checkpoints, the `on_record` sink). A resumed run's timing covers the whole run: the
    checkpoint carries the seconds of the events before it (the unfinished event a kill cut short is not counted),
    and `sessions` counts the processes that ran events.

    `on_predictions(record, scores, labels)` receives every prediction event's validated scores and the split's
    labels before the event is checkpointed (a sink that saves them is then never behind the checkpoint).
    Each record is checkpointed before `on_record` sees it, so a sink that lags behind after a crash can
    be brought back in line from the checkpoint. `stop_after` ends the call after that many events
    (the checkpoint stays resumable), which tests use to simulate an interruption.
    """
    metrics = default_metrics(stream) if metrics is None else metrics
    events = stream.events()
    uids = [t.key.uid for t in stream.tasks]
    learner_name = getattr(learner, "name", type(learner).__name__)

    check_tasks = getattr(learner, "check_tasks", None)
    if check_tasks is not None:
        check_tasks([t.key for t in stream.tasks])  # a learner that cannot learn this stream says so before training
    if resume and checkpoint is not None and checkpoint.exists():
        state = checkpoint.load()
        _check_same_run(state, stream.name, uids, learner_name, seed, checkpoint)
        learner_state = state.learner_state
    else:
        state = Checkpoint(stream.name, uids, learner_name, seed, metric_states=[m.init() for m in metrics])
        learner_state = learner.init(seed)

    before = dict(getattr(state, "timing", None) or {})  # checkpoints older than the field have none
    learner_seconds = data_seconds = 0.0
    started = time.perf_counter()
    pending = events[state.next_event :]
    if stop_after is not None:
        pending = pending[:stop_after]
    with progress_bar(progress, len(events), done=state.next_event, description="starting") as bar:
        for number, event in enumerate(pending):
            verb = "train" if isinstance(event, TrainEvent) else "predict"
            bar(1 if number else 0, f"{verb} {event.task.uid}")  # the previous event is done
            tick = time.perf_counter()
            _load_task(stream, event)
            data_seconds += time.perf_counter() - tick
            tick = time.perf_counter()
            workdir = None
            if checkpoint is not None and isinstance(event, TrainEvent):
                workdir = checkpoint.path.parent / "work" / event.task.uid
                event = dataclasses.replace(event, workdir=workdir)
            learner_state, record, predicted = _run_event(learner, learner_name, event, learner_state, stream, run_id)
            if on_predictions is not None and predicted is not None:
                on_predictions(record, *predicted)
            record["seconds"] = time.perf_counter() - tick
            learner_seconds += record["seconds"]
            flops_before = state.records[-1]["cumulative_train_flops"] if state.records else 0.0
            record["cumulative_train_flops"] = flops_before + record["train_flops"]
            state.metric_states = [m.add(s, record) for m, s in zip(metrics, state.metric_states, strict=True)]
            state.records.append(record)
            state.learner_state = learner_state
            state.next_event = event.index + 1
            state.timing = _timing(before, time.perf_counter() - started, learner_seconds, data_seconds)
            if checkpoint is not None:
                checkpoint.save(state)
            if workdir is not None:
                shutil.rmtree(workdir, ignore_errors=True)
                with contextlib.suppress(OSError):
                    workdir.parent.rmdir()  # the work/ folder too, once it holds no task's files
            if on_record is not None:
                on_record(record)
        if pending:
            bar(1)
    timing = before
    if pending or not before:
        timing = _timing(before, time.perf_counter() - started, learner_seconds, data_seconds)
    summary: dict = {}
    for metric, metric_state in zip(metrics, state.metric_states, strict=True):
        summary.update(metric.compute(metric_state))
    summary["events_done"] = state.next_event
    summary["events_total"] = len(events)
    return RunResult(records=list(state.records), summary=summary, learner_state=learner_state, timing=timing)


def _timing(before: dict, total: float, learner: float, data: float) -> dict:
    """This session's seconds added to those of the sessions `before` it (empty for a run's first session)."""
    total += before.get("total_seconds", 0.0)
    learner += before.get("learner_seconds", 0.0)
    data += before.get("data_seconds", 0.0)
    return {
        "total_seconds": total,
        "learner_seconds": learner,
        "data_seconds": data,
        "overhead_seconds": total - learner - data,
        "sessions": int(before.get("sessions", 0)) + 1,
    }


def _run_event(
    learner: Learner, learner_name: str, event: Event, learner_state: object, stream: Stream, run_id: str
) -> tuple[object, dict, tuple[np.ndarray, np.ndarray] | None]:
    """Train or predict; the record, and for a prediction event its (scores, labels)."""
    task = event.task
    record = {
        "run_id": run_id,
        "event": event.index,
        "type": "train" if isinstance(event, TrainEvent) else "predict",
        "task": task.uid,
        "task_index": event.task_index,
        "after_task_index": event.task_index if isinstance(event, TrainEvent) else event.after_task_index,
        "task_name": task.name,
        "task_kind": task.kind.value,
        "year": task.year,
        "domain": task.domain,
        "occurrence": task.occurrence,
        "meta_test": stream.is_meta_test(task),
        "split": None,
        "error": None,
        "skipped_labels": 0,
        "num_items": None,
        "train_flops": 0.0,
        "peak_parameters": 0,
    }
    predicted = None
    try:
        if isinstance(event, TrainEvent):
            learner_state, resources = learner.train(event, learner_state)
            resources = check_resources(event.name, learner_name, resources)
            record.update(split="train", train_flops=float(resources.train_flops), num_items=len(event.train_and_dev))
            record["peak_parameters"] = int(resources.peak_parameters)
            record["dev_curve"] = [float(e) for e in resources.dev_curve]
            if resources.train_steps:
                record.update(train_steps=int(resources.train_steps), stopped=resources.stopped or None)
                record["train_losses"] = [float(v) for v in resources.train_losses]
            record.update(_data_notes(stream, event.task_index))
        else:
            predictions = learner.predict(event, learner_state)
            targets = event.dataset.labels()
            predictions = check_predictions(event, learner_name, predictions, len(targets))
            if task.is_fact:  # wildcard-aware top-5 over every fact, with the per-fact counts
                record.update(fact_record(task, targets, predictions), split=event.split, num_items=len(targets))
            else:
                error, skipped = task_error(task.kind, targets, predictions)
                record.update(
                    split=event.split, error=float(error), skipped_labels=int(skipped), num_items=len(targets)
                )
            predict_flops = getattr(learner, "predict_flops", None)
            record["inference_flops"] = float(predict_flops(event, learner_state)) if predict_flops else None
            predicted = (predictions, np.asarray(targets))
    except LearnerOutputError:
        raise
    except Exception as exc:  # learner or data failure: say where it happened, keep the cause chained
        raise EventError(f"{event.name}: {type(exc).__name__}: {exc}") from exc
    return learner_state, record, predicted


def _load_task(stream: Stream, event: Event) -> None:
    """Load the event's task data before the learner is called, so its time is not counted as learning."""
    try:
        stream.splits(event.task_index)
    except Exception as exc:
        raise EventError(f"{event.name}: loading the data failed: {type(exc).__name__}: {exc}") from exc


def _data_notes(stream: Stream, task_index: int) -> dict:
    """What loading the task's data dropped (corrupt images, duplicates) and which named split it used, if any."""
    notes = stream.splits(task_index).notes
    recorded = {
        "corrupt_skipped": int(notes.get("corrupt_skipped", 0)),
        "duplicates_removed": int(notes.get("dedup", {}).get("duplicates_removed", 0)),
    }
    if notes.get("split") is not None:  # which train/test split a temporal task used (official or ours)
        recorded["data_split"] = str(notes["split"])
    return recorded


def _check_same_run(
    state: Checkpoint, stream: str, uids: list[str], learner: str, seed: int, store: CheckpointStore
) -> None:
    mismatches = []
    if state.stream != stream or state.task_uids != uids:
        mismatches.append(f"stream {state.stream!r} ({len(state.task_uids)} tasks) vs {stream!r} ({len(uids)} tasks)")
    if state.learner != learner:
        mismatches.append(f"learner {state.learner!r} vs {learner!r}")
    if state.seed != seed:
        mismatches.append(f"seed {state.seed} vs {seed}")
    if mismatches:
        raise ValueError(
            f"checkpoint {store.path} belongs to another run ({'; '.join(mismatches)}); "
            "resume with the same stream, learner and seed, or choose another output folder"
        )
