"""Declarative task lists turned into streams: shared by the built-in suites and user manifests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lifelong.core.streams import Stream, StreamTask, TaskSplits
from lifelong.core.tasks import TaskKey, TaskKind


@dataclass(frozen=True)
class TaskSpec:
    """One stream position as data: where its images come from and what the learner is told about it.

    `source` is a `lifelong.data.sources.load_source` spec (`builtin:letters`, `idx:DIR`, `folder:DIR`,
    `csv:FILE`, `fashion-mnist`); `options` go to that source. `classes` may be omitted, in which case
    the source is read once when the stream is built to learn them. `split_rule` names a rule of
    lifelong.data.splits (default "auto": the data's official split if any, else a random split).
    """

    name: str
    source: str
    year: int | None = None
    kind: TaskKind | None = None
    domain: str = ""
    resolution: int = 32
    classes: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)
    split_rule: str = "auto"


def builtin_task(
    name: str,
    source: str,
    year: int,
    domain: str,
    resolution: int,
    classes: Sequence[str],
    kind: TaskKind = TaskKind.MULTI_CLASS,
    **options: Any,
) -> TaskSpec:
    """A task of the offline suites: `builtin:<source>` images (lifelong.data.sources.builtin) with `options`."""
    return TaskSpec(name, f"builtin:{source}", year, kind, domain, resolution, tuple(classes), options)


def build_stream(
    name: str,
    specs: Sequence[TaskSpec],
    *,
    meta_test_from_year: int | None = None,
    eval_split: str = "dev_test",
    split_seed: int = 0,
    skip_corrupt: bool = False,
) -> Stream:
    """A stream over `specs` in order; repeated names become later occurrences of the same dataset."""
    seen: Counter[str] = Counter()
    tasks = []
    for spec in specs:
        kind, classes = _kind_and_classes(spec, skip_corrupt)
        key = TaskKey(
            name=spec.name,
            kind=kind,
            num_classes=len(classes),
            class_names=classes,
            year=spec.year,
            domain=spec.domain,
            occurrence=seen[spec.name],
            metadata={"source": spec.source, "resolution": spec.resolution},
        )
        seen[spec.name] += 1
        tasks.append(StreamTask(key, _Loader(key, spec, split_seed, skip_corrupt), source=spec.source))
    return Stream(name, tasks, eval_split=eval_split, meta_test_from_year=meta_test_from_year)


@dataclass(frozen=True)
class _Loader:
    """Loads one task's splits from its source (a class, not a closure, so streams stay picklable)."""

    key: TaskKey
    spec: TaskSpec
    split_seed: int
    skip_corrupt: bool

    def __call__(self) -> TaskSplits:
        from lifelong.data.build import build_task_splits

        labeled = _load(self.spec, self.skip_corrupt)
        if tuple(labeled.class_names) != self.key.class_names:
            raise ValueError(
                f"task {self.key.uid!r}: source {self.spec.source!r} has classes {list(labeled.class_names)[:10]}, "
                f"but the stream declares {list(self.key.class_names)[:10]}; fix the manifest's `classes`"
            )
        return build_task_splits(
            self.key, labeled, resolution=self.spec.resolution, seed=self.split_seed, split_rule=self.spec.split_rule
        )


def _load(spec: TaskSpec, skip_corrupt: bool):
    from lifelong.data.sources import load_source

    try:
        return load_source(spec.source, skip_corrupt=skip_corrupt, **dict(spec.options))
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"task {spec.name!r}: {exc}") from exc
    except ValueError as exc:
        raise type(exc)(f"task {spec.name!r}: {exc}") from exc


def _kind_and_classes(spec: TaskSpec, skip_corrupt: bool) -> tuple[TaskKind, tuple[str, ...]]:
    """Declared kind and classes when both are given (no I/O); otherwise read the source once for what is missing.

    Declared values are kept either way: the loader checks them against the data when the task loads.
    """
    if spec.classes and spec.kind is not None:
        return TaskKind(spec.kind), tuple(spec.classes)
    labeled = _load(spec, skip_corrupt)
    kind = TaskKind(spec.kind) if spec.kind is not None else labeled.kind
    if kind != labeled.kind:
        raise ValueError(
            f"task {spec.name!r}: declared kind {kind.value!r} but {spec.source!r} is {labeled.kind.value!r}"
        )
    return kind, tuple(spec.classes) if spec.classes else tuple(labeled.class_names)
