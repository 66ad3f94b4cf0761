"""A-GEM (Chaudhry et al. 2019, "Efficient Lifelong Learning with A-GEM") for fixed-label-space streams
(docs/clear.md#a-gem-and-cwr).

Fine-tuning on each bucket alone whose every gradient g is checked against g_ref, the gradient of the loss on a
mini-batch drawn from an episodic memory of past buckets at the current weights: when g . g_ref < 0 (the step
would raise the memory's loss) g is replaced by its projection g - (g . g_ref / g_ref . g_ref) g_ref, over all
trainable parameters flattened. The memory is a replay buffer (reservoir by default) filled with each bucket
after that bucket's training, as A-GEM's memory receives a task's items once the task is learned; so the first
bucket trains unconstrained. The reference pass runs at every constrained step and counts in the training FLOPs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lifelong.learners.buffers import ReplayBuffer
from lifelong.learners.continual import ContinualConfig, ContinualLearner
from lifelong.learners.penalties import Term
from lifelong.training.continual_loop import model_inputs
from lifelong.training.devices import current_accelerator
from lifelong.training.flops import count_training_flops
from lifelong.training.loop import derive_seed

_REFERENCE = 21  # derive_seed tag of the reference batches (the loop's own streams use 11 and 12)
Prepare = Callable[..., torch.Tensor]  # (items, generator=...) -> model inputs, prepared as the training batches


def project_gradient(g: torch.Tensor, g_ref: torch.Tensor) -> torch.Tensor:
    """A-GEM's rule on flat gradients: g - (g . g_ref / g_ref . g_ref) g_ref when g . g_ref < 0, else g itself.

    The projection is the closest vector to g whose dot product with g_ref is zero (a zero g_ref never conflicts).
    """
    dot = torch.dot(g, g_ref)
    if dot < 0:
        return g - (dot / torch.dot(g_ref, g_ref)) * g_ref
    return g


def _trainable(model: nn.Module) -> list[nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]


class AGEM(Term):
    """A-GEM's step hook for one bucket: projects the step's gradient against a memory sample's (`project_gradient`).

    No loss term and nothing kept: the memory lives in the learner state's buffer. `flops` totals the reference
    passes (one counted update step on the reference batch, per step where it ran); `steps` counts them and
    `projected` the steps whose gradient conflicted. The reference forward runs in the training mode of the model,
    and its BatchNorm statistics are restored after it: the memory constrains the step, it is not trained on.
    """

    name = "agem"

    def __init__(self, memory: ReplayBuffer | None, sample_size: int) -> None:
        if isinstance(sample_size, bool) or int(sample_size) < 1:
            raise ValueError(f"agem_sample_size must be a positive int, got {sample_size!r}")
        self.memory, self.sample_size = memory, int(sample_size)
        self.step_hook = self if memory is not None and len(memory) else None  # an empty memory: nothing to do
        self.flops, self.steps, self.projected = 0.0, 0, 0
        self._prepare: Prepare | None = None
        self._rng: np.random.Generator | None = None
        self._generator: torch.Generator | None = None
        self._step_flops: dict[tuple[int, ...], float] = {}
        self._size = 0

    def bind(self, seed: int, prepare: Prepare, augment: bool) -> None:
        """This bucket's recipe: the seed of the reference draws, how items become inputs, whether to augment."""
        self._prepare = prepare
        self._rng = np.random.default_rng(derive_seed(seed, 0))
        self._generator = torch.Generator().manual_seed(derive_seed(seed, 1)) if augment else None

    def __call__(self, model: nn.Module, x: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        return logits.new_zeros(())

    def reference_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        """A seeded draw of `sample_size` memory items without replacement (the whole memory when it holds fewer),
        as (inputs, labels) on the current accelerator."""
        if self.memory is None or not len(self.memory) or self._prepare is None or self._rng is None:
            raise RuntimeError("AGEM needs a non-empty memory and bind(...) before its first step")
        n = len(self.memory)
        idx = np.arange(n) if self.sample_size >= n else self._rng.choice(n, size=self.sample_size, replace=False)
        assert self.memory.items is not None
        acc = current_accelerator()
        x = self._prepare(self.memory.items[idx], generator=self._generator)
        return acc.batch(x), acc.to(torch.from_numpy(np.asarray(self.memory.labels[idx], dtype=np.int64)))

    def before_step(self, model: nn.Module) -> None:
        params = _trainable(model)
        x, y = self.reference_batch()
        key = tuple(x.shape)
        if key not in self._step_flops:
            self._step_flops[key] = count_training_flops(model, (x, y))
        self.flops += self._step_flops[key]
        self.steps += 1
        g_ref = torch.cat([g.reshape(-1) for g in reference_gradient(model, params, x, y)])
        g = torch.cat([(torch.zeros_like(p) if p.grad is None else p.grad).reshape(-1) for p in params])
        self._size = g.numel()
        projected = project_gradient(g, g_ref)
        if projected is g:
            return
        self.projected += 1
        offset = 0
        for p in params:
            part = projected[offset : offset + p.numel()].view(p.shape)
            offset += p.numel()
            if p.grad is None:
                p.grad = part.clone()
            else:
                p.grad.copy_(part)

    def after_step(self, model: nn.Module) -> None:
        """Nothing: A-GEM acts on the gradient only."""

    def held_parameters(self) -> int:
        return 2 * self._size  # the flat step gradient and the reference gradient


def reference_gradient(
    model: nn.Module, params: list[nn.Parameter], x: torch.Tensor, y: torch.Tensor
) -> list[torch.Tensor]:
    """Gradients of the cross-entropy on (x, y) w.r.t. `params` (zeros where unused), `.grad` and the model's buffers
    (BatchNorm statistics) left as they were; the forward runs in the model's current mode and precision."""
    saved = [(b, b.detach().clone()) for b in model.buffers()]
    try:
        with current_accelerator().autocast():
            loss = F.cross_entropy(model(x).float(), y)
        grads = torch.autograd.grad(loss, params, allow_unused=True)
    finally:
        with torch.no_grad():
            for buffer, value in saved:
                buffer.copy_(value)
    return [torch.zeros_like(p) if g is None else g.detach() for p, g in zip(params, grads, strict=True)]


@dataclass(frozen=True)
class AGEMConfig(ContinualConfig):
    """Options of A-GEM: fine-tuning on each bucket alone, every step projected against an episodic memory's
    gradient."""

    buffer: str = "reservoir"
    """A-GEM's episodic memory: reservoir (default), biased or class-balanced; filled with each bucket after the
    bucket's training and never trained on (it only constrains the gradient)."""
    buffer_size: int | None = None
    """The items the episodic memory holds (unset: as many as the first bucket)."""
    agem_sample_size: int | None = None
    """Memory items in the reference mini-batch drawn (seeded, without replacement) at every step (unset: the
    training batch size of the regime, batch_size or linear_batch_size; the whole memory when it holds fewer)."""

    def __post_init__(self) -> None:
        if self.train_on != "bucket" or self.penalty != "none" or self.buffer == "none":
            raise ValueError(
                f"agem trains on each bucket alone, without a regulariser, and keeps a memory: it needs "
                f"train_on='bucket', penalty='none' and a buffer policy; got train_on={self.train_on!r}, "
                f"penalty={self.penalty!r}, buffer={self.buffer!r}"
            )
        size = self.agem_sample_size
        if size is not None and (isinstance(size, bool) or int(size) < 1):
            raise ValueError(f"agem_sample_size must be a positive int (or unset: the batch size), got {size!r}")
        super().__post_init__()

    def keeps_buffer(self) -> bool:
        return True  # the episodic memory, never trained on

    @property
    def sample_size(self) -> int:
        """Items per reference batch."""
        if self.agem_sample_size is not None:
            return int(self.agem_sample_size)
        return self.linear_batch_size if self.linear else self.batch_size


class AGEMLearner(ContinualLearner):
    """A-GEM: fine-tunes on each bucket, projecting every gradient that conflicts with an episodic memory's."""

    name = "agem"
    config_class = AGEMConfig
    config: AGEMConfig

    def _penalty(self, state: dict[str, Any], model: nn.Module) -> Term:
        return AGEM(state["buffer"], self.config.sample_size)  # the memory as it was before this bucket

    def _fit(self, model, items, labels, seed, resolution, term, flip, data_loss=None, param_groups=None, **kwargs):
        """The recipe's fit, with A-GEM's reference batches prepared as the training batches (same resolution,
        mirroring and augmentation, from their own seeded streams)."""
        augment = self._augments(kwargs.pop("augment", None))
        if isinstance(term, AGEM):
            channels = int(getattr(model, "in_channels", 3))
            prepare = functools.partial(model_inputs, channels=channels, resolution=resolution, flip=flip)
            term.bind(derive_seed(seed, _REFERENCE), prepare, augment)
        return super()._fit(
            model, items, labels, seed, resolution, term, flip, data_loss, param_groups, augment=augment, **kwargs
        )


__all__ = ["AGEM", "AGEMConfig", "AGEMLearner", "project_gradient", "reference_gradient"]
