"""Nevis'22's multitask baseline, MT (docs/protocols/nevis.md#multitask; paper section 4.2 and appendix G).

The network starts as FT-kNN's does (the past model most related to the task by the kNN score, dynamic mode by
default) and trains on the current task together with auxiliary past tasks chosen by the same score: by default the
one it starts from (the paper's "top-1", the setting of its main results), `aux_tasks=K` the K most related,
`aux_tasks=all` every past task it holds. Each auxiliary task has a head of its own; one training step sums the
gradients of the current mini-batch and one mini-batch of each auxiliary task, the auxiliary losses weighted by one
scalar `aux_weight` that the hyper-parameter search explores with the learning rate and the label smoothing;
auxiliary batches never update BatchNorm statistics, their heads are discarded after training, and every auxiliary
forward and backward counts in the task's training FLOPs (lifelong.training.auxiliary).

The learner keeps every past task's training split (a seeded subset of `max_held_items` when set) in its state,
beside the past models FT-kNN keeps; `held_data` in the state says how much (tasks, items, bytes).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from lifelong.core.datasets import ArrayDataset
from lifelong.core.events import TrainEvent
from lifelong.core.seeds import derive_seed
from lifelong.learners.finetune import TASK_PREFIX, FinetuneKnnConfig, FinetuneKnnLearner, InitChoice, Kept
from lifelong.training.auxiliary import AuxiliaryTask
from lifelong.training.hpsearch import Trial, TrialResult
from lifelong.training.recipe import materialize

_HELD = 17  # derive_seed(run seed, task index, _HELD): the subset of a task's training split kept


@dataclass(frozen=True)
class MultitaskConfig(FinetuneKnnConfig):
    """FT-kNN's options plus the auxiliary tasks, their loss weight and the past data kept."""

    aux_tasks: int | str = 1
    """Auxiliary past tasks trained beside each task: K, the K most related by the kNN score (1: the task the
    network starts from, the paper's top-1), or all."""
    aux_weight: float = 1.0
    """The weight of the auxiliary losses when trials=1 (a search draws it from aux_weight_range)."""
    aux_weight_range: tuple[float, float] = (0.1, 1.0)
    """The search's auxiliary-loss weight: log-uniform between these two."""
    max_held_items: int | None = None
    """The most training items kept per past task, a seeded subset (unset: all, as in the paper)."""

    def __post_init__(self) -> None:
        if isinstance(self.aux_tasks, str) and self.aux_tasks.isdigit():
            object.__setattr__(self, "aux_tasks", int(self.aux_tasks))
        if self.aux_tasks != "all" and (
            not isinstance(self.aux_tasks, int) or isinstance(self.aux_tasks, bool) or self.aux_tasks < 1
        ):
            raise ValueError(f"aux_tasks must be a positive integer K or all, got {self.aux_tasks!r}")
        if not 0 <= self.aux_weight < math.inf:
            raise ValueError(f"aux_weight must be >= 0, got {self.aux_weight!r}")
        object.__setattr__(self, "aux_weight_range", tuple(self.aux_weight_range))
        if self.max_held_items is not None and self.max_held_items < 1:
            raise ValueError(f"max_held_items must be >= 1 or unset (keep all), got {self.max_held_items!r}")
        super().__post_init__()

    @property
    def search_space(self):
        """Independent's space plus the auxiliary-loss weight."""
        return dataclasses.replace(super().search_space, aux_weight=self.aux_weight_range)

    def single_trial(self) -> Trial:
        """The one trial of trials=1: lr, label_smoothing and aux_weight."""
        return dataclasses.replace(super().single_trial(), aux_weight=self.aux_weight)


class MultitaskLearner(FinetuneKnnLearner):
    """Starts from the most related past model and co-trains with the most related past tasks' data (MT)."""

    name = "multitask"
    config_class = MultitaskConfig
    config: MultitaskConfig

    def init(self, seed: int) -> dict[str, Any]:
        """FT-kNN's initial state plus the past tasks' training data (`datasets`: [(uid, ArrayDataset)])."""
        return {**super().init(seed), "datasets": [], "held_data": held_summary([])}

    def choose_init(self, event: TrainEvent, state: dict[str, Any]) -> InitChoice:
        """FT-kNN's choice, with the auxiliary tasks it implies recorded (`aux_tasks`, most related first)."""
        choice = super().choose_init(event, state)
        held = [uid for uid, _ in state["datasets"]]
        aux = auxiliary_ranking(choice.record.get("scores", {}), choice.source, held)
        if self.config.aux_tasks != "all":
            aux = aux[: self.config.aux_tasks]
        return dataclasses.replace(choice, record={**choice.record, "aux_tasks": aux})

    def auxiliary(self, event: TrainEvent, state: dict[str, Any], choice: InitChoice) -> tuple[AuxiliaryTask, ...]:
        """The chosen past tasks' data, each mirrored only where its domain allows."""
        held = dict(state["datasets"])
        no_flip = self.config.no_flip_domains
        return tuple(
            AuxiliaryTask(held[uid], flip=held[uid].task.domain.lower() not in no_flip)
            for uid in choice.record["aux_tasks"]
        )

    def remember(self, event: TrainEvent, state: dict[str, Any], best: TrialResult, choice: InitChoice) -> Kept:
        """FT-kNN's entries plus this task's training data (bounded by max_held_items and max_past_models)."""
        kept = super().remember(event, state, best, choice)
        subset = held_subset(
            event.train, self.config.max_held_items, derive_seed(state["seed"], event.task_index, _HELD)
        )
        datasets = [*state["datasets"], (event.task.uid, subset)]
        keep = self.config.max_past_models
        datasets = datasets[-keep:] if keep else datasets
        entries = {**kept.entries, "datasets": datasets, "held_data": held_summary(datasets)}
        return Kept(entries, kept.extra_flops, kept.extra_models)


def auxiliary_ranking(scores: dict[str, float], source: str, held: list[str]) -> list[str]:
    """Past tasks held, most related first by kNN score (NaN last, ties: the candidates' order, most recent first),
    with the task the network starts from first whatever its score."""
    ranked = sorted(
        (name[len(TASK_PREFIX) :] for name in scores if name.startswith(TASK_PREFIX)),
        key=lambda uid: math.inf if math.isnan(scores[TASK_PREFIX + uid]) else -scores[TASK_PREFIX + uid],
    )
    ranked = [uid for uid in ranked if uid in held]
    if source.startswith(TASK_PREFIX) and source[len(TASK_PREFIX) :] in ranked:
        start = source[len(TASK_PREFIX) :]
        ranked = [start, *(uid for uid in ranked if uid != start)]
    return ranked


def held_subset(train, max_items: int | None, seed: int) -> ArrayDataset:
    """`train` in memory, or a seeded subset of `max_items` of its items in stored order."""
    data = materialize(train)
    if max_items is None or len(data) <= max_items:
        return data
    keep = np.sort(np.random.default_rng(seed).choice(len(data), size=max_items, replace=False))
    return ArrayDataset(data.task, data.split, data.images[keep], data.labels()[keep])


def held_summary(datasets: list[tuple[str, ArrayDataset]]) -> dict[str, int]:
    """How much past data the state holds: tasks, items, and bytes of images and labels."""
    return {
        "tasks": len(datasets),
        "items": sum(len(d) for _, d in datasets),
        "bytes": sum(int(d.images.nbytes) + int(d.labels().nbytes) for _, d in datasets),
    }
