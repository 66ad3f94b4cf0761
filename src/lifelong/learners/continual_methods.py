"""The named continual learners (CLEAR's methods), each a ContinualLearner with its own defaults.

finetune, scratch, replay (reservoir or biased buffer), er (experience replay), gdumb, ewc, si and lwf:
see lifelong.learners.continual for what every option does.
"""

from __future__ import annotations

from dataclasses import dataclass

from lifelong.learners.continual import ContinualConfig, ContinualLearner


class FinetuneLearner(ContinualLearner):
    """Fine-tunes the previous bucket's whole model (head kept) on each new bucket."""

    name = "finetune"


@dataclass(frozen=True)
class ScratchConfig(ContinualConfig):
    init: str = "scratch"


class ScratchLearner(ContinualLearner):
    """Re-trains a model from random weights on each bucket alone."""

    name = "scratch"
    config_class = ScratchConfig


@dataclass(frozen=True)
class ReplayConfig(ContinualConfig):
    train_on: str = "buffer"
    buffer: str = "reservoir"


class ReplayLearner(ContinualLearner):
    """The paper's "Finetuning": fine-tunes from the previous bucket on a replay buffer only (reservoir or biased).

    The buffer (one bucket's worth by default) is updated with the bucket first; `-o buffer=biased -o alpha=2`
    or `-o buffer=biased -o c=0.5` selects the biased reservoir.
    """

    name = "replay"
    config_class = ReplayConfig


@dataclass(frozen=True)
class ERConfig(ContinualConfig):
    train_on: str = "bucket+buffer"
    buffer: str = "reservoir"


class ERLearner(ContinualLearner):
    """Experience replay: fine-tunes the previous model on the bucket plus a reservoir buffer of past items."""

    name = "er"
    config_class = ERConfig


@dataclass(frozen=True)
class GDumbConfig(ContinualConfig):
    init: str = "scratch"
    train_on: str = "buffer"
    buffer: str = "class-balanced"


class GDumbLearner(ContinualLearner):
    """GDumb: a class-balanced greedy buffer; a model re-trained from scratch on the buffer alone."""

    name = "gdumb"
    config_class = GDumbConfig


@dataclass(frozen=True)
class EWCConfig(ContinualConfig):
    penalty: str = "ewc"


class EWCLearner(ContinualLearner):
    """Fine-tuning with online EWC (diagonal empirical Fisher of each finished bucket; `ewc_lambda`)."""

    name = "ewc"
    config_class = EWCConfig


@dataclass(frozen=True)
class SIConfig(ContinualConfig):
    penalty: str = "si"


class SILearner(ContinualLearner):
    """Fine-tuning with Synaptic Intelligence (path-integral importances; `si_c`, `si_xi`)."""

    name = "si"
    config_class = SIConfig


@dataclass(frozen=True)
class LwFConfig(ContinualConfig):
    penalty: str = "lwf"


class LwFLearner(ContinualLearner):
    """Fine-tuning with Learning without Forgetting (distils the previous bucket's model; `lwf_alpha`, T=2)."""

    name = "lwf"
    config_class = LwFConfig


__all__ = [
    "ContinualConfig",
    "ContinualLearner",
    "ERLearner",
    "EWCLearner",
    "FinetuneLearner",
    "GDumbLearner",
    "LwFLearner",
    "ReplayLearner",
    "SILearner",
    "ScratchLearner",
]
