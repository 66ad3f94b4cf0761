"""CWR* (Maltoni & Lomonaco 2019, "Continuous learning in single-incremental-task scenarios", Algorithm 2) for
fixed-label-space streams (docs/clear.md#a-gem-and-cwr).

The head keeps consolidated weights cw (zero at the start) and a count past_j of the training items of each
class consolidated so far. For each bucket, the head rows of the classes present in it start from cw, the
others at zero; after training, with cur_j the bucket's items of class j and tw the trained rows:
    w_j = tw_j - avg(tw),  avg the mean of every entry of the trained rows of the bucket's classes (mean-shift)
    wpast_j = sqrt(past_j / cur_j)
    cw_j <- (cw_j wpast_j + w_j) / (wpast_j + 1),  past_j <- past_j + cur_j
for the bucket's classes only (a class seen for the first time gets cw_j = w_j). Predictions use cw. The head's
bias counts as the weight of a constant input: each class's row is [weights | bias].
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from lifelong.core.events import PredictEvent
from lifelong.learners.continual import ContinualConfig, ContinualLearner
from lifelong.learners.penalties import Inputs, Term


def consolidate(
    cw: torch.Tensor, past: np.ndarray, trained: torch.Tensor, cur: np.ndarray
) -> tuple[torch.Tensor, np.ndarray]:
    """CWR*'s consolidation (the module's rule): (new cw [C, K], new counts [C]) from cw and counts `past` before
    the bucket, the trained head rows `trained` [C, K] and the bucket's items per class `cur` [C]."""
    cur, past = np.asarray(cur, dtype=np.int64), np.asarray(past, dtype=np.int64)
    present = np.flatnonzero(cur > 0)
    new = cw.detach().clone()
    if not len(present):
        return new, past.copy()
    rows = trained.detach().to(new.dtype)[torch.from_numpy(present)]
    shifted = rows - rows.mean()
    wpast = torch.from_numpy(np.sqrt(past[present] / cur[present])).to(new.dtype)[:, None]
    new[torch.from_numpy(present)] = (new[torch.from_numpy(present)] * wpast + shifted) / (wpast + 1)
    return new, past + cur


def find_head(model: nn.Module) -> nn.Linear:
    """The linear layer giving the class scores: the model itself (linear regime), its `head`, else its last
    nn.Linear (in registration order)."""
    if isinstance(model, nn.Linear):
        return model
    head = getattr(model, "head", None)
    if isinstance(head, nn.Linear):
        return head
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    if not linears:
        raise ValueError(
            f"cwr consolidates the weights of the layer that gives the class scores, an nn.Linear, but "
            f"{type(model).__name__} has none; use a network whose last layer is linear"
        )
    return linears[-1]


def head_rows(head: nn.Linear, bias: bool = True) -> torch.Tensor:
    """The head as one row per class, [weights | bias] (without the bias column when `bias` is False; a CPU float32
    copy)."""
    rows = head.weight.detach()
    if bias and head.bias is not None:
        rows = torch.cat([rows, head.bias.detach()[:, None]], dim=1)
    return rows.float().cpu().clone()


def set_head(head: nn.Linear, rows: torch.Tensor) -> None:
    """Write rows [C, K] (as `head_rows` gives them, with or without the bias column) into the head, in place."""
    with torch.no_grad():
        features = head.weight.shape[1]
        head.weight.copy_(rows[:, :features].to(head.weight))
        if head.bias is not None and rows.shape[1] > features:
            head.bias.copy_(rows[:, features].to(head.bias))


def _keep_eval(module: nn.Module, mode: bool = True) -> nn.Module:
    return nn.Module.train(module, False)


def freeze_all_but(model: nn.Module, head: nn.Module) -> None:
    """Freeze every parameter outside `head` and keep those layers in eval mode whatever `train()` is given, so
    their BatchNorm statistics stay fixed too (the model is rebuilt from its weights for every bucket)."""
    for module in model.modules():
        if module is head:
            continue
        for p in module.parameters(recurse=False):
            p.requires_grad_(False)
        if not any(m is head for m in module.modules()):  # the modules that hold the head keep their own train()
            module.train = functools.partial(_keep_eval, module)  # type: ignore[method-assign]
    model.train(model.training)


class CWRStar(Term):
    """CWR* for one bucket: `load` sets the head from cw before training, `finish` consolidates the trained head
    into cw (`consolidate`) and writes cw into it, so that the state's model predicts with cw.

    Keeps {"cw": [C, K] float32, "past": [C] int64} (CPU) for the next bucket; no loss term, no step hook.
    """

    name = "cwr"

    def __init__(self, kept: dict | None, bias: bool = True) -> None:
        self.kept, self.bias = kept, bias
        self._cur: np.ndarray | None = None

    @property
    def first(self) -> bool:
        """True before any consolidation (the first bucket)."""
        return self.kept is None

    def __call__(self, model: nn.Module, x: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        return logits.new_zeros(())

    def load(self, model: nn.Module, labels: np.ndarray) -> nn.Linear:
        """Head rows of the classes in `labels` from cw, the others zero; returns the head."""
        head = find_head(model)
        self._cur = np.bincount(np.asarray(labels, dtype=np.int64), minlength=head.out_features)
        rows = torch.zeros_like(head_rows(head, self.bias))
        if self.kept is not None:
            present = torch.from_numpy(np.flatnonzero(self._cur > 0))
            rows[present] = self.kept["cw"][present].to(rows)
        set_head(head, rows)
        return head

    def finish(
        self, model: nn.Module, items: np.ndarray, labels: np.ndarray, inputs: Inputs
    ) -> tuple[dict | None, float]:
        if self._cur is None:
            raise RuntimeError("CWRStar.finish called without load(): the head was not set from cw")
        head = find_head(model)
        trained = head_rows(head, self.bias)
        cw = torch.zeros_like(trained) if self.kept is None else self.kept["cw"]
        past = np.zeros(len(trained), np.int64) if self.kept is None else self.kept["past"]
        cw, past = consolidate(cw, past, trained, self._cur)
        set_head(head, cw)
        return {"cw": cw, "past": past}, 0.0

    def held_parameters(self) -> int:
        return 0 if self.kept is None else int(self.kept["cw"].numel())


@dataclass(frozen=True)
class CWRConfig(ContinualConfig):
    """Options of CWR*: consolidated per-class head weights (with the backbone fine-tuned, or frozen after the
    first bucket)."""

    freeze_backbone: bool = False
    """Freeze every layer but the head after the first bucket (BatchNorm statistics included), as the paper's CWR*
    does (the lower layers learned on the first batch only); false (default) fine-tunes the whole network on every
    bucket as finetune does, the head consolidated either way. No effect in the linear regime (the model is the
    head)."""

    consolidate_bias: bool = True
    """Consolidate the head's bias as the weight of a constant input (each row [weights, bias]); false: the bias is
    never reset or consolidated and trains on as fine-tuning does (Avalanche's CWRStar)."""

    def __post_init__(self) -> None:
        if self.train_on != "bucket" or self.penalty != "none":
            raise ValueError(
                f"cwr trains on each bucket alone, without a regulariser: it needs train_on='bucket' and "
                f"penalty='none'; got train_on={self.train_on!r}, penalty={self.penalty!r}"
            )
        if self.freeze_backbone and self.init == "scratch":
            raise ValueError(
                "freeze_backbone keeps the first bucket's backbone, but init='scratch' draws a new one for every "
                "bucket; use init='previous' (the default) or freeze_backbone=false"
            )
        super().__post_init__()


class CWRLearner(ContinualLearner):
    """CWR*: fine-tunes on each bucket from consolidated head weights, then consolidates the trained head."""

    name = "cwr"
    config_class = CWRConfig
    config: CWRConfig

    def _penalty(self, state: dict[str, Any], model: nn.Module) -> Term:
        return CWRStar(state["penalty"], bias=self.config.consolidate_bias)

    def _fit(self, model, items, labels, seed, resolution, term, flip, *args, **kwargs):
        """The recipe's fit on the head loaded from cw (and, with freeze_backbone after the first bucket, the head
        alone trained)."""
        if isinstance(term, CWRStar):
            head = term.load(model, labels)
            if self.config.freeze_backbone and not term.first and head is not model:
                freeze_all_but(model, head)
        return super()._fit(model, items, labels, seed, resolution, term, flip, *args, **kwargs)

    def _predict_model(self, event: PredictEvent, state: dict[str, Any], items: np.ndarray) -> nn.Module:
        """The state's model (its head holds cw); before any training, the initial model with cw = 0 as its head."""
        model = super()._predict_model(event, state, items)
        if state["model"] is None:
            head = find_head(model)
            set_head(head, torch.zeros_like(head_rows(head, self.config.consolidate_bias)))
        return model


__all__ = ["CWRConfig", "CWRLearner", "CWRStar", "consolidate", "find_head", "freeze_all_but", "head_rows", "set_head"]
