"""Mode-IMM on the fact model (Incremental Moment Matching, Lee et al. 2017; docs/protocols/facts.md#methods).

Task t starts from task t-1's trained weights theta_{t-1} (weight transfer), optionally pulled toward them by
(imm_l2 / 2) ||theta - theta_{t-1}||^2 (L2 transfer), and trains with the fact learners' recipe (FactLearner.train).
Then the task's diagonal Fisher F_t of the fact-distance loss on its TRAINING items is kept with theta_t (CPU).
The deployed model after task t (what `predict` uses) is the mode-IMM merge of theta_1..theta_t weighted by
alpha_k F_k. Training of task t+1 continues from theta_t, the task model, never from the merge.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.core.resources import Resources
from lifelong.learners.fact_embedding import FactConfig, FactLearner
from lifelong.learners.penalties import Inputs, ItemLoss, Term, diagonal_fisher
from lifelong.training.devices import DeviceCopies
from lifelong.training.flops import model_device

ALPHAS = ("uniform", "images")
Weights = dict[str, torch.Tensor]


@dataclass(frozen=True)
class FactIMMConfig(FactConfig):
    """The fact learners' options plus IMM's. The other fact learners' penalties, joint training and buffers do
    not combine with IMM.
    """

    imm_alpha: str = "uniform"
    """The weight of each task's model in the merge: uniform (1/t each after t tasks) or images (in proportion to
    the task's training images)."""
    imm_eps: float = 1e-8
    """A positive number added to every Fisher entry in the merge."""
    imm_l2: float = 0.0
    """The strength of the L2 pull toward the previous task's weights (0: off; capped at 1 / lr, as the other
    quadratic penalties)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.imm_alpha not in ALPHAS:
            raise ValueError(f"unknown imm_alpha {self.imm_alpha!r}; choose one of {ALPHAS}")
        if not self.imm_eps > 0 or not self.imm_l2 >= 0:
            raise ValueError(f"need imm_eps > 0 and imm_l2 >= 0, got imm_eps={self.imm_eps}, imm_l2={self.imm_l2}")
        if self.penalty != "none" or self.joint or self.train_on != "bucket":
            raise ValueError(
                f"IMM merges per-task models: leave penalty ('none'), joint (false) and train_on ('bucket'); got "
                f"penalty={self.penalty!r}, joint={self.joint}, train_on={self.train_on!r} (use imm_l2 to regularise)"
            )


def mode_imm_merge(
    params_list: Sequence[Weights], fishers_list: Sequence[Weights], alphas: Sequence[float], eps: float = 1e-8
) -> Weights:
    """Mode-IMM: theta* = sum_k alpha_k (F_k + eps) theta_k / sum_k alpha_k (F_k + eps), entry by entry.

    `params_list`: per task a state dict; `fishers_list`: per task the diagonal Fisher of (some of) its entries.
    Entries without a Fisher (buffers: BatchNorm running statistics) get the alpha-weighted mean, integers rounded.
    Alphas are normalised to sum 1. eps sits in numerator and denominator, so an entry whose Fishers all vanish
    falls back to the alpha-weighted mean (mean-IMM) instead of collapsing to 0, equal Fishers give exactly that
    mean, and one task gives back its own weights; where F >> eps it is (sum alpha F theta) / (sum alpha F + eps).
    """
    if not params_list or len(params_list) != len(fishers_list) or len(params_list) != len(alphas):
        raise ValueError(
            f"need one Fisher and one alpha per model and at least one model; got {len(params_list)} models, "
            f"{len(fishers_list)} Fishers, {len(alphas)} alphas"
        )
    weights = np.asarray(alphas, dtype=np.float64)
    if np.any(weights < 0) or not weights.sum() > 0 or not eps > 0:
        raise ValueError(f"alphas must be >= 0 with a positive sum and eps > 0; got alphas={list(alphas)}, eps={eps}")
    weights = weights / weights.sum()
    merged = {}
    for name, first in params_list[0].items():
        thetas = torch.stack([p[name].detach().to("cpu", torch.float64) for p in params_list])
        shape = (-1,) + (1,) * first.dim()
        if name in fishers_list[0]:
            curvature = torch.stack([f[name].detach().to("cpu", torch.float64) for f in fishers_list]) + eps
        else:
            curvature = torch.ones_like(thetas)
        curvature = torch.as_tensor(weights).reshape(shape) * curvature
        value = (curvature * thetas).sum(0) / curvature.sum(0)
        merged[name] = (value if first.is_floating_point() else value.round()).to(first.dtype)
    return merged


def imm_alphas(images: Sequence[int], rule: str) -> np.ndarray:
    """Per-task merge weights: uniform 1/t, or proportional to each task's training images."""
    if rule == "uniform":
        return np.full(len(images), 1.0 / len(images))
    if rule == "images":
        counts = np.asarray(images, dtype=np.float64)
        return counts / counts.sum()
    raise ValueError(f"unknown imm_alpha {rule!r}; choose one of {ALPHAS}")


class _IMMTerm(Term):
    """IMM's training-time side: L2 transfer toward the previous task model, (imm_l2 / 2) ||theta - anchor||^2 added
    to the loss (so its FLOPs count with the step's), and at the end the task's diagonal Fisher of `loss`."""

    name = "imm"

    def __init__(self, anchor: Weights | None, strength: float, loss: ItemLoss | None) -> None:
        self.anchor, self.strength, self.loss = anchor, strength, loss
        self.active = anchor is not None and strength > 0
        self._anchor = DeviceCopies(anchor) if self.active else None  # copied to the model's device once

    def __call__(self, model: nn.Module, x: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        if not self.active:
            return super().__call__(model, x, logits)
        assert self._anchor is not None
        anchor = self._anchor.on(model_device(model))
        terms = [((p - anchor[name]) ** 2).sum() for name, p in model.named_parameters() if p.requires_grad]
        return 0.5 * self.strength * torch.stack(terms).sum()

    def finish(self, model: nn.Module, items: np.ndarray, labels: np.ndarray, inputs: Inputs) -> tuple[dict, float]:
        fisher, flops = diagonal_fisher(model, items, labels, inputs, loss=self.loss)
        return {"fisher": fisher, "images": len(items)}, flops

    def held_parameters(self) -> int:
        return sum(v.numel() for v in self.anchor.values()) if self.active else 0


class FactIMMLearner(FactLearner):
    """Mode-IMM: one model per task (weight transfer), deployed as the Fisher-weighted merge of all task models.

    The state keeps every task's weights and Fisher (`state["imm"]`, CPU); `state["model"]` is the last task model,
    where the next task's training starts (not the merge). `merged(state)` gives the weights `predict` uses.
    """

    name = "fact-imm"
    config_class = FactIMMConfig

    def init(self, seed: int) -> dict[str, Any]:
        state = super().init(seed)
        state["imm"] = {"models": [], "fishers": [], "images": []}
        return state

    def _penalty(self, state: dict[str, Any], model: nn.Module) -> Term:
        cfg = self.config
        cap = 1.0 / self._max_lr()  # keeps SGD on the quadratic stable, as the other penalties
        anchor = state["model"] if cfg.imm_l2 > 0 else None
        return _IMMTerm(anchor, min(cfg.imm_l2, cap), self._item_loss())

    def train(self, event: TrainEvent, state: dict[str, Any]) -> tuple[dict[str, Any], Resources]:
        """FactLearner.train from the last task model, then keep (theta_t, F_t) of this task."""
        new_state, spent = super().train(event, state)
        kept, imm = new_state["penalty"], state["imm"]
        imm = {
            "models": [*imm["models"], new_state["model"]],
            "fishers": [*imm["fishers"], kept["fisher"]],
            "images": [*imm["images"], int(kept["images"])],
        }
        stored = 2 * sum(v.numel() for fisher in imm["fishers"] for v in fisher.values())  # weights + Fisher
        peak = max(spent.peak_parameters, stored)
        return {**new_state, "penalty": None, "imm": imm}, dataclasses.replace(spent, peak_parameters=peak)

    def merged(self, state: dict[str, Any]) -> Weights:
        """The deployed weights: the mode-IMM merge of every task model trained so far."""
        imm = state["imm"]
        if not imm["models"]:
            raise ValueError(f"{self.name}: nothing to merge before the first task is trained")
        alphas = imm_alphas(imm["images"], self.config.imm_alpha)
        return mode_imm_merge(imm["models"], imm["fishers"], alphas, self.config.imm_eps)

    def predict(self, event: PredictEvent, state: dict[str, Any]) -> np.ndarray:
        """FactLearner.predict with the merged weights (before any training: the seeded initial model)."""
        if not state["imm"]["models"]:
            return super().predict(event, state)
        return super().predict(event, {**state, "model": self.merged(state)})


__all__ = ["ALPHAS", "FactIMMConfig", "FactIMMLearner", "imm_alphas", "mode_imm_merge"]
