"""Train one network on one task with the common recipe, count its FLOPs, predict
(docs/protocols/nevis.md#training-recipe).

FLOPs (docs/run.md#what-is-counted-as-compute): one update step = forward + loss + backward on one training batch,
counted once per training run by `torch.utils.flop_counter.FlopCounterMode`, then multiplied by the number of steps.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lifelong.core.datasets import Batch, Dataset
from lifelong.core.prefetch import prefetched
from lifelong.core.seeds import derive_seed
from lifelong.core.tasks import TaskKind
from lifelong.metrics.classification import task_error
from lifelong.training.auxiliary import AuxiliaryTask, AuxiliaryTraining
from lifelong.training.devices import Accelerator, cpu_tensors, current_accelerator
from lifelong.training.flops import count_training_flops
from lifelong.training.inputs import Size, prepare_batch
from lifelong.training.schedules import lr_schedule, warmup_steps_for

# Batches decoded and augmented ahead on a thread while a GPU trains (0 on the CPU: the same work, one thread).
PREFETCH_BATCHES = 2


def prefetch_depth(acc: Accelerator) -> int:
    """How many training batches to make ahead on a thread: PREFETCH_BATCHES on a GPU, none on the CPU."""
    return PREFETCH_BATCHES if acc.on_cuda else 0


# Stream tags for derive_seed: each kind of random choice draws from its own stream.
_ORDER, _AUGMENT = 1, 2


def set_torch_threads(threads: int) -> int:
    """Use `threads` intra-op torch threads in this process: the same seed AND thread count give identical numbers.

    Whoever starts the work sets it once (the runner from `--threads`, a command, a test); learners read it back
    with `torch_threads()` to hand the same count to executor workers.
    """
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return threads


def torch_threads() -> int:
    """The intra-op torch thread count of this process."""
    return torch.get_num_threads()


@dataclass(frozen=True)
class TrainingLoss:
    """Softmax cross-entropy with label smoothing (multi-class) or mean per-label sigmoid BCE (multi-label).

    For multi-label targets, smoothing moves each 0/1 target towards 1/2: t * (1 - s) + s / 2.
    """

    kind: TaskKind
    label_smoothing: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", TaskKind(self.kind))
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1), got {self.label_smoothing}")

    def __call__(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        if self.kind is TaskKind.MULTI_LABEL:
            targets = targets.to(logits.dtype) * (1.0 - self.label_smoothing) + self.label_smoothing / 2
            return F.binary_cross_entropy_with_logits(logits, targets)
        return F.cross_entropy(logits, targets, label_smoothing=self.label_smoothing)


def _targets(labels: np.ndarray, kind: TaskKind) -> torch.Tensor:
    t = torch.from_numpy(np.ascontiguousarray(labels))
    return current_accelerator().to(t.to(torch.float32) if kind is TaskKind.MULTI_LABEL else t.to(torch.int64))


class EpochLoss:
    """The training losses of one epoch, kept where they were computed (no host round trip per step).

    `mean()` brings them to the host once: the float64 mean of the float32 values, as numpy takes it.
    """

    def __init__(self) -> None:
        self._values: list[torch.Tensor] = []

    def add(self, loss: torch.Tensor) -> None:
        self._values.append(loss.detach())

    def mean(self) -> float:
        values = torch.stack(self._values).double().cpu().numpy() if self._values else np.zeros(0)
        return float(np.mean(values))


def _channels(model: nn.Module) -> int:
    return int(getattr(model, "in_channels", 3))


@torch.no_grad()
def predict_scores(
    model: nn.Module,
    dataset: Dataset,
    kind: TaskKind | str,
    batch_size: int = 256,
    *,
    resolution: Size | None = None,
) -> np.ndarray:
    """Scores [N, C] float32 for `dataset` in stored order: logits (multi-class) or sigmoid probabilities (multi-label).

    Images are centre-cropped and resized to `resolution` (None: native size); the model runs in eval mode on the
    current accelerator (moved there) and its previous train/eval mode is restored afterwards. Scores stay on the
    device until the end: one copy to the host.
    """
    kind = TaskKind(kind)
    acc = current_accelerator()
    forward = acc.forward_fn(acc.place(model))
    was_training = model.training
    model.eval()
    outputs = []
    try:
        with acc.autocast():
            for batch in dataset.batches(batch_size):
                logits = forward(acc.batch(prepare_batch(batch.images, channels=_channels(model), size=resolution)))
                logits = logits.float()
                outputs.append(torch.sigmoid(logits) if kind is TaskKind.MULTI_LABEL else logits)
    finally:
        model.train(was_training)
    if not outputs:
        raise ValueError(f"dataset {dataset!r} is empty: nothing to predict")
    return torch.cat(outputs).cpu().numpy()


def classification_error(scores: np.ndarray, labels: np.ndarray, kind: TaskKind | str) -> float:
    """The task error of lifelong.metrics.task_error; nan for a multi-label split where no label has a positive."""
    kind = TaskKind(kind)
    if kind is TaskKind.MULTI_LABEL and not np.asarray(labels).any():
        return math.nan
    return task_error(kind, labels, scores)[0]


@dataclass(frozen=True)
class TrainProgress:
    """Reported after every epoch: position, mean training loss of the epoch, dev error (None if not evaluated)."""

    epoch: int
    step: int
    max_steps: int
    train_loss: float
    dev_error: float | None


@dataclass
class TrainResult:
    """Outcome of `train_model`: the selected weights (best on dev, else final) as CPU tensors, and its cost.

    `train_flops` = `flops_per_step` (one counted update on a full training batch) x `steps`.
    """

    state_dict: dict[str, torch.Tensor]
    dev_error: float | None
    best_step: int
    steps: int
    batch_size: int
    flops_per_step: float
    train_flops: float
    history: list[TrainProgress] = field(default_factory=list)


def _better(new: float, best: float | None) -> bool:
    if best is None:
        return True
    if math.isnan(new):
        return False
    return math.isnan(best) or new < best


def train_model(
    model: nn.Module,
    train: Dataset,
    dev: Dataset | None,
    *,
    kind: TaskKind | str,
    epochs: int | None = None,
    steps: int | None = None,
    batch_size: int,
    lr: float,
    label_smoothing: float = 0.0,
    weight_decay: float = 1e-4,
    momentum: float = 0.9,
    warmup_epochs: float = 7.0,
    seed: int,
    augment: bool = True,
    flip: bool = True,
    resolution: Size | None = None,
    eval_every_epoch: bool = True,
    eval_batch_size: int = 256,
    progress: Callable[[TrainProgress], None] | None = None,
    param_groups: list[dict[str, Any]] | None = None,
    schedule: str = "cosine",
    crop: bool = True,
    auxiliary: Sequence[AuxiliaryTask] = (),
    aux_weight: float = 1.0,
) -> TrainResult:
    """Train `model` in place with SGD (Nesterov) + warm-up/cosine; keep the best-on-`dev` weights.

    Give exactly one of `epochs` or `steps`. Every step uses exactly min(batch_size, len(train)) images
    (the incomplete last batch of an epoch is dropped; each epoch reshuffles with a seed derived from
    `seed`), so `train_flops` = FLOPs of one counted step x steps is exact. Dev error is computed after
    every epoch (or only at the end when `eval_every_epoch=False`); without `dev` the final weights are
    kept. The selected weights are loaded into `model` before returning. The model trains on the current
    accelerator (moved there), under its autocast and through its compiled forward when those are on; FLOPs are
    counted on the eager module, so they do not depend on these options. `param_groups` (e.g. from
    `encoders.param_groups`: a frozen prefix and per-group learning rates) replaces the default optimizer groups
    (every parameter at `lr`); the schedule (`schedule`: cosine or piecewise, after the warm-up) scales each
    group's own lr. `crop=False` trains without the random crop. `auxiliary` tasks (the multitask learner; `model`
    must have a `backbone` and a linear `head`) train beside the current one with heads of their own, their losses
    weighted by `aux_weight` (lifelong.training.auxiliary); their FLOPs count in every step's.
    """
    kind = TaskKind(kind)
    if (epochs is None) == (steps is None):
        raise ValueError(f"give exactly one of epochs or steps, got epochs={epochs}, steps={steps}")
    if (epochs is not None and epochs < 1) or (steps is not None and steps < 1):
        raise ValueError(f"epochs and steps must be >= 1, got epochs={epochs}, steps={steps}")
    if batch_size < 1 or not lr > 0:
        raise ValueError(f"need batch_size >= 1 and lr > 0, got batch_size={batch_size}, lr={lr}")
    n = len(train)
    if n == 0:
        raise ValueError(f"training set {train!r} is empty")
    batch = min(batch_size, n)
    steps_per_epoch = n // batch
    max_steps = steps if steps is not None else epochs * steps_per_epoch  # type: ignore[operator]
    loss_fn = TrainingLoss(kind, label_smoothing)
    acc = current_accelerator()
    forward = acc.forward_fn(acc.place(model))
    aux = None
    if auxiliary:
        aux = AuxiliaryTraining(
            model,
            auxiliary,
            weight=aux_weight,
            seed=seed,
            batch_size=batch,
            loss_for=lambda aux_kind: TrainingLoss(aux_kind, label_smoothing),
            resolution=resolution,
            augment=augment,
            crop=crop,
            channels=_channels(model),
        )
        acc.place(aux.heads)
    groups = [{"params": list(model.parameters())}] if param_groups is None else list(param_groups)
    if aux is not None:
        groups.append({"params": list(aux.heads.parameters())})
    optimizer = torch.optim.SGD(groups, lr=lr, momentum=momentum, nesterov=momentum > 0, weight_decay=weight_decay)
    multiplier = lr_schedule(schedule, max_steps, warmup_steps_for(max_steps, steps_per_epoch, warmup_epochs))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, multiplier)
    augment_gen = torch.Generator().manual_seed(derive_seed(seed, _AUGMENT)) if augment else None

    flops_per_step: float | None = None
    best_state: dict[str, torch.Tensor] | None = None
    best_error: float | None = None
    best_step = 0
    history: list[TrainProgress] = []
    step = epoch = 0
    while step < max_steps:
        model.train()
        losses = EpochLoss()
        order_seed = derive_seed(seed, _ORDER, epoch)
        epoch_batches = itertools.islice(
            train.batches(batch, shuffle=True, seed=order_seed, drop_last=True), max_steps - step
        )

        def on_device(batches: Iterable[Batch] = epoch_batches) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
            """Decoded, augmented batches on the device (made ahead on a thread when the device is a GPU)."""
            for b in batches:
                x = prepare_batch(
                    b.images, channels=_channels(model), size=resolution, generator=augment_gen, flip=flip, crop=crop
                )
                yield acc.batch(x), _targets(b.labels, kind)

        for x, y in prefetched(on_device(), depth=prefetch_depth(acc)):
            aux_batches = [] if aux is None else aux.next_batches(acc.batch, _targets)
            if flops_per_step is None:
                flops_per_step = count_training_flops(model, (x, y), loss_fn=loss_fn)
                flops_per_step += 0.0 if aux is None else aux.step_flops(aux_batches)
            with acc.autocast():
                loss = loss_fn(forward(x).float(), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if aux is not None:
                aux.backward(aux_batches, acc.autocast)
            optimizer.step()
            scheduler.step()
            losses.add(loss)
            step += 1
        epoch += 1
        dev_error = None
        if dev is not None and (eval_every_epoch or step >= max_steps):
            scores = predict_scores(model, dev, kind, eval_batch_size, resolution=resolution)
            dev_error = classification_error(scores, dev.labels(), kind)
            if _better(dev_error, best_error):
                best_error, best_step, best_state = dev_error, step, cpu_tensors(model.state_dict())
        record = TrainProgress(epoch, step, max_steps, losses.mean(), dev_error)
        history.append(record)
        if progress is not None:
            progress(record)

    if best_state is None:
        best_state, best_step = cpu_tensors(model.state_dict()), step
    else:
        model.load_state_dict(best_state)
    assert flops_per_step is not None  # max_steps >= 1, so at least one step ran
    return TrainResult(
        state_dict=best_state,
        dev_error=best_error,
        best_step=best_step,
        steps=step,
        batch_size=batch,
        flops_per_step=flops_per_step,
        train_flops=flops_per_step * step,
        history=history,
    )
