"""SGD training for the CLEAR continual learners: arrays in, model trained in place
(docs/protocols/clear.md#training-regimes).

One routine for both regimes: a CNN on uint8 images (augmented with `prepare_batch`) or a linear head on
float32 features. SGD with momentum, a step decay of the learning rate (x0.1 at `lr_step` of the epochs), an
optional extra loss term (EWC, SI, LwF) and an optional per-step hook (SI's path integral, A-GEM's projection).
FLOPs: one full update step (forward + loss with the extra term + backward) counted by FlopCounterMode, times
the steps, plus the passes the hook runs itself (its `flops`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from lifelong.core.tasks import TaskKind
from lifelong.training.convergence import Convergence
from lifelong.training.devices import current_accelerator, seeded_torch_rng
from lifelong.training.flops import count_training_flops
from lifelong.training.inputs import Size, prepare_batch
from lifelong.training.loop import EpochLoss, TrainingLoss, derive_seed

# Stream tags for derive_seed (own numbering: these streams never meet train_model's).
_ORDER, _AUGMENT, _RANDOM_OPS, _REPLAY = 11, 12, 13, 14

Penalty = Callable[[nn.Module, torch.Tensor, torch.Tensor], torch.Tensor]


class StepHook(Protocol):
    """Called around every optimizer step: `before_step` sees the gradients, `after_step` the updated weights.

    A hook that runs forward/backward passes of its own (A-GEM's reference gradient) keeps their FLOPs in a running
    total `flops`; `train_continual` adds what it grew by to the fit's training FLOPs.
    """

    def before_step(self, model: nn.Module) -> None: ...

    def after_step(self, model: nn.Module) -> None: ...


@dataclass
class ContinualFit:
    """What one training run cost: steps, batch size, FLOPs of one counted step and in all, mean loss per epoch."""

    steps: int
    batch_size: int
    flops_per_step: float
    train_flops: float
    epoch_losses: list[float] = field(default_factory=list)
    stopped: str = "epochs"  # "epochs" (a fixed count), "converged" or "cap" (see training.convergence)
    hook_flops: float = 0.0  # the step hook's own passes, part of train_flops


def model_inputs(
    items: np.ndarray,
    *,
    channels: int = 3,
    resolution: Size | None = None,
    generator: torch.Generator | None = None,
    flip: bool = True,
) -> torch.Tensor:
    """uint8 images -> prepared NCHW float batch (augmented when `generator` is given); float32 features as is."""
    if items.dtype == np.float32 and items.ndim == 2:
        return torch.from_numpy(np.array(items, dtype=np.float32))  # a copy: cached feature arrays are read-only
    return prepare_batch(items, channels=channels, size=resolution, generator=generator, flip=flip)


def step_lr(epochs: int, lr_step: float) -> int:
    """The epoch from which the learning rate is divided by 10 (`lr_step` = fraction of the epochs; 1: never)."""
    if not 0 < lr_step <= 1:
        raise ValueError(f"lr_step must be in (0, 1] (fraction of the epochs before the x0.1 decay), got {lr_step}")
    return math.ceil(lr_step * epochs - 1e-9)


def train_continual(
    model: nn.Module,
    items: np.ndarray,
    labels: np.ndarray,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    weight_decay: float,
    seed: int,
    momentum: float = 0.9,
    lr_step: float = 0.6,
    augment: bool = True,
    flip: bool = True,
    resolution: Size | None = None,
    penalty: Penalty | None = None,
    step_hook: StepHook | None = None,
    data_loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
    param_groups: list[dict[str, Any]] | None = None,
    convergence: Convergence | None = None,
    replay: tuple[np.ndarray, np.ndarray] | None = None,
    replay_batch_size: int | None = None,
) -> ContinualFit:
    """Train `model` in place on (`items`, int64 `labels`) with SGD + momentum and a x0.1 step at `lr_step`.

    Every step uses exactly min(batch_size, N) items (each epoch a seeded permutation, the incomplete last
    batch dropped), so FLOPs = one counted step x steps is exact. Images are augmented (random resized crop,
    mirrored unless `flip` is False) when `augment`; features never are. `penalty(model, x, logits)` is added
    to the data loss (`data_loss(outputs, labels)`, default the cross-entropy); `step_hook` sees each step (before
    and after the optimizer update). The model trains on the current accelerator (as `train_model`).
    `param_groups` (e.g. from `encoders.param_groups`: a frozen prefix, per-group learning rates) replaces the
    default (every trainable parameter at `lr`); the step decay scales each group's own lr. With `convergence`,
    `epochs` is a cap and the rule of `lifelong.training.convergence` decides the decay and the stop instead.
    `replay` (items, labels): every step also takes min(`replay_batch_size` (default batch_size), M) of these M
    items, in a seeded order reshuffled at each pass, appended to the step's batch (Avalanche's Replay); an epoch
    stays the bucket's. The network's own random ops (dropout) draw from torch's global RNG seeded from `seed`.
    """
    items, labels = np.asarray(items), np.asarray(labels, dtype=np.int64)
    n = len(items)
    if n == 0 or len(labels) != n:
        raise ValueError(f"need a non-empty training set with one label per item, got {n} items, {len(labels)} labels")
    if epochs < 1 or batch_size < 1 or not lr > 0 or weight_decay < 0:
        raise ValueError(
            f"need epochs >= 1, batch_size >= 1, lr > 0, weight_decay >= 0; got epochs={epochs}, "
            f"batch_size={batch_size}, lr={lr}, weight_decay={weight_decay}"
        )
    decay_epoch = step_lr(epochs, lr_step)
    batch = min(batch_size, n)
    steps_per_epoch = n // batch
    fit_loss = data_loss if data_loss is not None else TrainingLoss(TaskKind.MULTI_CLASS)
    acc = current_accelerator()
    forward = acc.forward_fn(acc.place(model))
    channels = int(getattr(model, "in_channels", 3))
    params = [p for p in model.parameters() if p.requires_grad] if param_groups is None else param_groups
    optimizer = torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    base_lrs = [group["lr"] for group in optimizer.param_groups]
    generator = torch.Generator().manual_seed(derive_seed(seed, _AUGMENT)) if augment else None
    replayed = _ReplayBatches(*replay, replay_batch_size or batch_size, seed) if replay is not None else None

    def loss_fn(x: torch.Tensor) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
        def loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            value = fit_loss(logits, y)
            return value if penalty is None else value + penalty(model, x, logits)

        return loss

    flops_per_step: float | None = None
    hook_flops = float(getattr(step_hook, "flops", 0.0))  # the hook's running total before this fit
    losses: list[float] = []
    step = 0
    phase_start, decayed, stopped = 0, False, "epochs" if convergence is None else "cap"
    with seeded_torch_rng(derive_seed(seed, _RANDOM_OPS)):  # dropout & co: same seed, same draws
        for epoch in range(epochs):
            if convergence is not None and convergence.plateaued(losses[phase_start:]):
                if decayed or not convergence.decay:
                    stopped = "converged"
                    break
                decayed, phase_start = True, len(losses)
            decay = decayed if convergence is not None else epoch >= decay_epoch
            for group, base_lr in zip(optimizer.param_groups, base_lrs, strict=True):
                group["lr"] = base_lr * (0.1 if decay else 1.0)
            model.train()
            order = np.random.default_rng(derive_seed(seed, _ORDER, epoch)).permutation(n)
            epoch_losses = EpochLoss()
            for start in range(0, steps_per_epoch * batch, batch):
                idx = order[start : start + batch]
                batch_items, batch_labels = items[idx], labels[idx]
                if replayed is not None:
                    batch_items, batch_labels = replayed.appended(batch_items, batch_labels)
                x = model_inputs(batch_items, channels=channels, resolution=resolution, generator=generator, flip=flip)
                x, y = acc.batch(x), acc.to(torch.from_numpy(batch_labels))
                if flops_per_step is None:
                    flops_per_step = count_training_flops(model, (x, y), loss_fn=loss_fn(x))
                with acc.autocast():
                    loss = loss_fn(x)(forward(x).float(), y)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if step_hook is not None:
                    step_hook.before_step(model)
                optimizer.step()
                if step_hook is not None:
                    step_hook.after_step(model)
                epoch_losses.add(loss)
                step += 1
            losses.append(epoch_losses.mean())
    assert flops_per_step is not None  # n >= 1 and epochs >= 1, so a step ran
    hook_flops = float(getattr(step_hook, "flops", 0.0)) - hook_flops
    return ContinualFit(step, batch, flops_per_step, flops_per_step * step + hook_flops, losses, stopped, hook_flops)


class _ReplayBatches:
    """Mini-batches of a replay buffer for `train_continual(replay=...)`: `size` distinct items per step in a seeded
    order, reshuffled at each pass over the buffer."""

    def __init__(self, items: np.ndarray, labels: np.ndarray, size: int, seed: int) -> None:
        items, labels = np.asarray(items), np.asarray(labels, dtype=np.int64)
        if len(items) == 0 or len(labels) != len(items) or size < 1:
            raise ValueError(
                f"replay needs a non-empty buffer with one label per item and a batch size >= 1, got {len(items)} "
                f"items, {len(labels)} labels, batch size {size}"
            )
        self.items, self.labels, self.size, self.seed = items, labels, min(int(size), len(items)), seed
        self._passes, self._order, self._at = 0, np.zeros(0, np.int64), 0

    def next_indices(self) -> np.ndarray:
        """The next `size` buffer indices: consecutive chunks of a seeded permutation; when fewer than `size` are
        left (the tail is skipped, as an incomplete batch is dropped) a new permutation starts."""
        if self._at + self.size > len(self._order):
            rng = np.random.default_rng(derive_seed(self.seed, _REPLAY, self._passes))
            self._order, self._at, self._passes = rng.permutation(len(self.items)), 0, self._passes + 1
        idx = self._order[self._at : self._at + self.size]
        self._at += self.size
        return idx

    def appended(self, items: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(items, labels) with the next replay mini-batch appended."""
        idx = self.next_indices()
        return np.concatenate([items, self.items[idx]]), np.concatenate([labels, self.labels[idx]])


@torch.no_grad()
def predict_items(
    model: nn.Module, items: np.ndarray, batch_size: int = 256, resolution: Size | None = None
) -> np.ndarray:
    """Logits [N, C] float32 of `items` (images centre-resized, or features) in order, in eval mode, on the current
    accelerator (the model moved there; one copy of the logits to the host at the end)."""
    acc = current_accelerator()
    forward = acc.forward_fn(acc.place(model))
    was_training = model.training
    model.eval()
    channels = int(getattr(model, "in_channels", 3))
    out = []
    try:
        with acc.autocast():
            for s in range(0, len(items), batch_size):
                x = model_inputs(items[s : s + batch_size], channels=channels, resolution=resolution)
                out.append(forward(acc.batch(x)).float())
    finally:
        model.train(was_training)
    if not out:
        raise ValueError("nothing to predict: no items")
    return torch.cat(out).cpu().numpy()


__all__ = ["ContinualFit", "Penalty", "StepHook", "model_inputs", "predict_items", "step_lr", "train_continual"]
