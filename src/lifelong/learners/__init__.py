"""Learners by name: a registry so that the command line and configs can pick one with options.

Entries are import paths, resolved on use, so that listing or using a torch-free learner never imports torch.
"""

from __future__ import annotations

import importlib
from typing import Any

from lifelong.core.learner import Learner

LEARNERS: dict[str, str] = {
    "independent": "lifelong.learners.independent:IndependentLearner",
    "finetune-prev": "lifelong.learners.finetune:FinetunePrevLearner",
    "finetune-knn": "lifelong.learners.finetune:FinetuneKnnLearner",
    "pretrained": "lifelong.learners.pretrained:PretrainedLearner",
    "pretrained+finetune-knn": "lifelong.learners.pretrained:PretrainedFinetuneKnnLearner",
    "nearest-mean": "lifelong.learners.nearest_mean:NearestMeanLearner",
    # fixed-label-space (domain-incremental) learners for CLEAR-style temporal streams
    "finetune": "lifelong.learners.continual:FinetuneLearner",
    "scratch": "lifelong.learners.continual:ScratchLearner",
    "replay": "lifelong.learners.continual:ReplayLearner",
    "er": "lifelong.learners.continual:ERLearner",
    "gdumb": "lifelong.learners.continual:GDumbLearner",
    "ewc": "lifelong.learners.continual:EWCLearner",
    "si": "lifelong.learners.continual:SILearner",
    "lwf": "lifelong.learners.continual:LwFLearner",
}


def learner_class(name: str) -> type:
    """The class registered as `name`."""
    try:
        target = LEARNERS[name]
    except KeyError:
        raise ValueError(f"unknown learner {name!r}; known learners: {sorted(LEARNERS)}") from None
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


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
    for name in sorted(LEARNERS):
        doc = (learner_class(name).__doc__ or "").strip()
        described.append((name, doc.splitlines()[0] if doc else "(no description)"))
    return described


__all__ = ["LEARNERS", "describe_learners", "learner_class", "make_learner"]
