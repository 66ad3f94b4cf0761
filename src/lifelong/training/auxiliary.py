"""Auxiliary tasks trained alongside the current one: Nevis'22's multitask baseline (docs/protocols/nevis.md#multitask).

Each auxiliary task has its own linear head on the shared backbone. In one training step the current task's
mini-batch and one mini-batch of every auxiliary task are forwarded and back-propagated, their gradients summed:
loss = L_current + aux_weight * sum_k L_k, then one optimizer step. Auxiliary mini-batches never update BatchNorm
statistics (the paper): they are normalised with their own batch statistics, as in training, but the running
statistics are restored after their forward. Every auxiliary forward and backward counts in the step's FLOPs. The
heads are discarded after training: the model returned is the current task's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from lifelong.core.datasets import ArrayDataset
from lifelong.core.seeds import derive_seed
from lifelong.core.tasks import TaskKind
from lifelong.training.flops import LossFn, count_training_flops
from lifelong.training.inputs import Size, prepare_batch
from lifelong.training.models import initialise

# derive_seed(training seed, tag, auxiliary index[, epoch]): heads, batch order and augmentation apart.
_HEAD, _ORDER, _AUGMENT = 11, 12, 13


@dataclass(frozen=True)
class AuxiliaryTask:
    """A past task's training data, trained with its own head beside the current task (`flip`: may be mirrored)."""

    train: ArrayDataset
    flip: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.train, ArrayDataset):
            raise TypeError(f"AuxiliaryTask.train must be an ArrayDataset, got {type(self.train).__name__}")
        if len(self.train) == 0:
            raise ValueError(f"auxiliary task {self.train.task.uid!r} has no training items")

    @property
    def kind(self) -> TaskKind:
        return self.train.task.kind

    @property
    def num_classes(self) -> int:
        return self.train.task.num_classes


@contextlib.contextmanager
def batchnorm_statistics_kept(module: nn.Module) -> Iterator[None]:
    """Run the block in train mode without changing any BatchNorm running statistics of `module` (they are
    restored afterwards; the batch is still normalised with its own statistics)."""
    norms = [m for m in module.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    saved = [[b.detach().clone() for b in m.buffers()] for m in norms]
    try:
        yield
    finally:
        with torch.no_grad():
            for norm, values in zip(norms, saved, strict=True):
                for buffer, value in zip(norm.buffers(), values, strict=True):
                    buffer.copy_(value)


class AuxiliaryTraining:
    """The auxiliary heads of one training run and their mini-batch streams.

    `model` must have a `backbone` and a linear `head` (lifelong.training.models.ResNet). Heads are initialised
    from `seed`; each task's batches cycle through its items in seeded shuffles, `batch_size` at a time (at most
    its size), augmented as the current task's (`crop`), mirrored only where the task allows it.
    """

    def __init__(
        self,
        model: nn.Module,
        tasks: Sequence[AuxiliaryTask],
        *,
        weight: float,
        seed: int,
        batch_size: int,
        loss_for: Callable[[TaskKind], LossFn],
        resolution: Size | None,
        augment: bool,
        crop: bool,
        channels: int,
    ) -> None:
        if not 0 <= weight < float("inf"):
            raise ValueError(f"the auxiliary-loss weight must be >= 0, got {weight!r}")
        self.model, self.tasks, self.weight = model, list(tasks), float(weight)
        self.heads = nn.ModuleList(
            initialise(nn.Linear(model.head.in_features, task.num_classes), seed=derive_seed(seed, _HEAD, k))
            for k, task in enumerate(self.tasks)
        )
        self.losses = [loss_for(task.kind) for task in self.tasks]
        self._seed, self._batch_size, self._resolution = seed, batch_size, resolution
        self._augment, self._crop, self._channels = augment, crop, channels
        self._streams = [self._stream(k) for k in range(len(self.tasks))]

    def _stream(self, k: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        task = self.tasks[k]
        batch = min(self._batch_size, len(task.train))
        gen = torch.Generator().manual_seed(derive_seed(self._seed, _AUGMENT, k)) if self._augment else None
        epoch = 0
        while True:
            for b in task.train.batches(
                batch, shuffle=True, seed=derive_seed(self._seed, _ORDER, k, epoch), drop_last=True
            ):
                x = prepare_batch(
                    b.images,
                    channels=self._channels,
                    size=self._resolution,
                    generator=gen,
                    flip=task.flip,
                    crop=self._crop,
                )
                yield x, b.labels
            epoch += 1

    def next_batches(self, device_batch, targets) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """One mini-batch of every auxiliary task, on the device (`device_batch`, `targets`: the loop's movers)."""
        out = []
        for task, stream in zip(self.tasks, self._streams, strict=True):
            x, labels = next(stream)
            out.append((device_batch(x), targets(labels, task.kind)))
        return out

    def backward(self, batches: Sequence[tuple[torch.Tensor, torch.Tensor]], autocast) -> torch.Tensor:
        """Accumulate the gradients of aux_weight * sum_k L_k (running statistics kept); return that loss."""
        losses = []
        for head, loss_fn, (x, y) in zip(self.heads, self.losses, batches, strict=True):
            with batchnorm_statistics_kept(self.model.backbone):  # restored after the backward, which reads them
                with autocast():
                    logits = head(self.model.backbone(x)).float()
                loss = self.weight * loss_fn(logits, y)
                loss.backward()
            losses.append(loss.detach())
        return torch.stack(losses).sum()

    def step_flops(self, batches: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> float:
        """FLOPs of the auxiliary forwards and backwards of one step (counted as the current task's)."""
        return sum(
            count_training_flops(nn.Sequential(self.model.backbone, head), batch, loss_fn=loss_fn)
            for head, loss_fn, batch in zip(self.heads, self.losses, batches, strict=True)
        )
