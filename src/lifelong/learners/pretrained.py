"""Pretrained baselines of Nevis'22 (spec/nevis22.md section 6: PT, PT + FT) over a `pretrain` checkpoint.

- `pretrained` (PT): every task's backbone starts from the checkpoint's (fresh head), with Independent's recipe
  and hyper-parameter search.
- `pretrained+finetune-knn` (PT + FT): finetune-knn where the pretrained backbone is one more candidate, beside
  the past models and random initialisation (static or dynamic mode, as finetune-knn; the frozen pretrained
  backbone scores with its own features in both).

Pretraining FLOPs are not training FLOPs of the stream by default (`count_pretraining_flops=False`); set it to
add them to the first task's train_flops, so that results can be shown both ways (as the paper does). The
checkpoint's architecture is used unless `architecture` is given, which must then match it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from lifelong.core.events import TrainEvent
from lifelong.learners.finetune import (
    PRETRAINED,
    FinetuneKnnConfig,
    FinetuneKnnLearner,
    InitChoice,
    TransferLearner,
)
from lifelong.learners.independent import IndependentConfig
from lifelong.training.pretrain import PretrainedCheckpoint, load_pretrained
from lifelong.training.relatedness import BackboneState


@dataclass(frozen=True)
class PretrainedOptions:
    """The checkpoint to start from (a `pretrain` output; required) and whether its FLOPs count (first task)."""

    checkpoint: str | None = None
    count_pretraining_flops: bool = False


@dataclass(frozen=True)
class PretrainedConfig(PretrainedOptions, IndependentConfig):
    """IndependentConfig plus `checkpoint` and `count_pretraining_flops`."""


@dataclass(frozen=True)
class PretrainedFinetuneKnnConfig(PretrainedOptions, FinetuneKnnConfig):
    """FinetuneKnnConfig plus `checkpoint` and `count_pretraining_flops`."""


def _open_checkpoint(learner: TransferLearner, explicit_architecture: bool) -> PretrainedCheckpoint:
    """Load the learner's checkpoint and adopt its architecture (an explicit, different one is an error)."""
    path = learner.config.checkpoint
    if not path:
        raise ValueError(
            "the pretrained learners need -o checkpoint=PATH, a file written by `lifelong pretrain SOURCE --out PATH`"
        )
    checkpoint = load_pretrained(path)
    if learner.config.architecture != checkpoint.architecture:
        if explicit_architecture:
            raise ValueError(
                f"-o architecture={learner.config.architecture} but checkpoint {str(path)!r} holds a "
                f"{checkpoint.architecture} backbone; drop -o architecture or pretrain that architecture"
            )
        learner.config = dataclasses.replace(learner.config, architecture=checkpoint.architecture)
    return checkpoint


def _pretraining_flops(learner: TransferLearner, state: dict[str, Any]) -> float:
    """The checkpoint's FLOPs on the learner's first task when counted, else 0."""
    first = state.get("task_uid") is None
    return learner.checkpoint.pretraining_flops if first and learner.config.count_pretraining_flops else 0.0


class PretrainedLearner(TransferLearner):
    """Fine-tunes every task's network from a pretrained backbone (PT); `checkpoint=PATH` is required."""

    name = "pretrained"
    config_class = PretrainedConfig
    config: PretrainedConfig

    def __init__(self, config: PretrainedConfig | None = None, **options: Any) -> None:
        super().__init__(config, **options)
        self.checkpoint = _open_checkpoint(self, "architecture" in options or config is not None)

    def choose_init(self, event: TrainEvent, state: dict[str, Any]) -> InitChoice:
        """The checkpoint's backbone, always."""
        record = {"checkpoint": str(self.checkpoint.path)}
        extra = _pretraining_flops(self, state)
        return InitChoice(PRETRAINED, self.checkpoint.backbone, record, held_backbones=1, extra_flops=extra)


class PretrainedFinetuneKnnLearner(FinetuneKnnLearner):
    """finetune-knn with the pretrained backbone as one more candidate (PT + FT); `checkpoint=PATH` is required."""

    name = "pretrained+finetune-knn"
    config_class = PretrainedFinetuneKnnConfig
    config: PretrainedFinetuneKnnConfig

    def __init__(self, config: PretrainedFinetuneKnnConfig | None = None, **options: Any) -> None:
        super().__init__(config, **options)
        self.checkpoint = _open_checkpoint(self, "architecture" in options or config is not None)

    def extra_candidates(self) -> dict[str, BackboneState]:
        """The pretrained backbone, named PRETRAINED."""
        return {PRETRAINED: self.checkpoint.backbone}

    def choose_init(self, event: TrainEvent, state: dict[str, Any]) -> InitChoice:
        """finetune-knn's choice among past models, the pretrained backbone and random init."""
        choice = super().choose_init(event, state)
        return dataclasses.replace(choice, extra_flops=choice.extra_flops + _pretraining_flops(self, state))
