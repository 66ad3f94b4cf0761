"""Task identity: what a learner is told about the task it meets."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class TaskKind(enum.StrEnum):
    """Multi-class tasks have one integer label per image; multi-label tasks a multi-hot vector.

    Fact tasks (lifelong fact learning, docs/protocols/facts.md) label each image with the index of its fact among
    the stream's facts (`class_names` holds every fact's text, e.g. "<lion, eating, meat>"; metadata["task_facts"]
    the indices of the task's own facts); a learner scores every fact, [N, C] like a multi-class task, and the
    scores are judged by wildcard-aware top-5 accuracy.
    """

    MULTI_CLASS = "multi-class"
    MULTI_LABEL = "multi-label"
    FACT = "fact"


@dataclass(frozen=True)
class TaskKey:
    """Identifies one task of a stream.

    `occurrence` counts earlier appearances of the same dataset `name` in the stream, so a repeated
    dataset gets its own stream position (`uid`) while `first_uid` links it to where it first appeared.
    """

    name: str
    kind: TaskKind
    num_classes: int
    class_names: tuple[str, ...] = ()
    year: int | None = None
    domain: str = ""
    occurrence: int = 0
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or "#" in self.name:
            raise ValueError(f"task name {self.name!r} must be non-empty and contain no '/' or '#'")
        object.__setattr__(self, "kind", TaskKind(self.kind))
        if self.num_classes < 2 and self.kind is TaskKind.MULTI_CLASS:
            raise ValueError(f"task {self.name!r}: a multi-class task needs >= 2 classes, got {self.num_classes}")
        if self.num_classes < 1:
            raise ValueError(f"task {self.name!r}: num_classes must be >= 1, got {self.num_classes}")
        if self.class_names and len(self.class_names) != self.num_classes:
            raise ValueError(f"task {self.name!r}: {len(self.class_names)} class names for {self.num_classes} classes")
        object.__setattr__(self, "class_names", tuple(self.class_names))
        if self.occurrence < 0:
            raise ValueError(f"task {self.name!r}: occurrence must be >= 0, got {self.occurrence}")

    @property
    def uid(self) -> str:
        """Unique id of this stream position: the name, plus `#k` for the k-th repetition."""
        return self.name if self.occurrence == 0 else f"{self.name}#{self.occurrence}"

    @property
    def first_uid(self) -> str:
        """Uid of the first occurrence of this dataset in the stream (itself when not repeated)."""
        return self.name

    @property
    def label_space(self) -> tuple:
        """(kind, number of classes, class names): tasks that share it can use one model (domain-incremental)."""
        return (self.kind.value, self.num_classes, self.class_names)

    @property
    def is_multi_label(self) -> bool:
        return self.kind is TaskKind.MULTI_LABEL

    @property
    def is_fact(self) -> bool:
        return self.kind is TaskKind.FACT

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description, as written to results."""
        return {
            "uid": self.uid,
            "name": self.name,
            "kind": self.kind.value,
            "num_classes": self.num_classes,
            "year": self.year,
            "domain": self.domain,
            "occurrence": self.occurrence,
            "resolution": self.metadata.get("resolution"),
        }
