"""Learners by name, registered as entry points of the group `lifelong.learners` (the built-ins too).

Entries are import paths, resolved on use, so that listing or using a torch-free learner never imports torch.
"""

from __future__ import annotations

from typing import Any

from lifelong.core.learner import Learner
from lifelong.core.plugins import LEARNERS as GROUP
from lifelong.core.plugins import Registry

LEARNERS = Registry(GROUP, "learner")


def learner_class(name: str) -> type:
    """The class registered as `name`."""
    return LEARNERS.load(name)


def make_learner(name: str, **options: Any) -> Learner:
    """Build the learner registered as `name`, passing `options` to its constructor."""
    cls = learner_class(name)
    try:
        return cls(**options)
    except TypeError as exc:
        raise ValueError(f"learner {name!r} does not accept options {sorted(options)}: {exc}") from exc


def describe_learners() -> list[tuple[str, str]]:
    """(name, one-line description) of every registered learner, sorted by name."""
    described = []
    for name in sorted(LEARNERS.names()):
        doc = (learner_class(name).__doc__ or "").strip()
        described.append((name, doc.splitlines()[0] if doc else "(no description)"))
    return described


__all__ = ["LEARNERS", "describe_learners", "learner_class", "make_learner"]
