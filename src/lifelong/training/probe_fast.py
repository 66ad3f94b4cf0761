"""A fast linear probe: a grid of (lr, weight decay) heads trained together in one pass over the shared features.

The K heads are one [K, D, C] weight tensor; each minibatch is read (and converted from float16) once for all
of them, and the softmax cross-entropy gradient is written out by hand, so each head takes exactly the
reference's momentum-SGD step (tests check it against nn.Linear + torch.optim.SGD) with its own lr and weight
decay. The speed comes from a short schedule (10 epochs instead of 100, lr scaled to match), one search pass
instead of 30 sequential trials with 30 validation passes, and no autograd.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from lifelong.core.progress import ProgressUpdate
from lifelong.core.seeds import derive_seed
from lifelong.training.devices import device_for
from lifelong.training.probe_data import ProbeResult, ProbeSplits, TrialRecord, prepare_probe
from lifelong.training.probe_reference import (
    BATCH_SIZE,
    EPOCHS,
    EVAL_BATCH,
    LR_RANGE,
    MOMENTUM,
    cosine_lr,
    init_head,
)

FAST_EPOCHS = 10  # the search and the final run; raised for tiny (few-shot) sets to reach MIN_STEPS steps
MIN_STEPS = 100  # SGD steps the short schedule keeps at least (few-shot sets: one batch an epoch)
LR_POINTS = 9  # lr grid over the reference's range (scaled), times each weight decay below
WEIGHT_DECAYS = (1e-12, 1e-5, 1e-4)  # none, some, the most the reference allows
FINAL_HEADS = 3  # the best heads retrained on all rows and averaged into one classifier
# derive_seed streams (1, 2: the split and the shots, as in the reference)
_ORDER, _INIT, _SEARCH, _FINAL = 3, 4, 7, 8


@dataclass
class Heads:
    """K linear heads over the same features: weight [K, D, C], bias [K, C], one (lr, weight decay) each."""

    weight: torch.Tensor
    bias: torch.Tensor
    lrs: tuple[float, ...]
    weight_decays: tuple[float, ...]

    @property
    def count(self) -> int:
        return len(self.lrs)

    @classmethod
    def create(
        cls, dim: int, classes: int, lrs: Sequence[float], weight_decays: Sequence[float], seed: int, device
    ) -> Heads:
        if len(lrs) != len(weight_decays) or not lrs:
            raise ValueError(
                f"need one weight decay per lr and at least one head, got {len(lrs)}, {len(weight_decays)}"
            )
        weight, bias = init_head(dim, classes, len(lrs), seed, torch.device(device))
        return cls(weight, bias, tuple(float(v) for v in lrs), tuple(float(v) for v in weight_decays))

    def keep(self, which: Sequence[int]) -> Heads:
        """A copy holding only the heads `which` (their weights, biases and hyper-parameters)."""
        index = torch.as_tensor(list(which), dtype=torch.long, device=self.weight.device)
        return Heads(
            self.weight[index].clone(),
            self.bias[index].clone(),
            tuple(self.lrs[i] for i in which),
            tuple(self.weight_decays[i] for i in which),
        )


@torch.no_grad()
def heads_top1(heads: Heads, splits: ProbeSplits, rows: np.ndarray, *, test: bool = False) -> np.ndarray:
    """Top-1 (percent) of every head on the given rows of the training (or test) features."""
    source = splits.test if test else splits.train
    correct = torch.zeros(heads.count, dtype=torch.long, device=source.device)  # counted there: one host copy
    for x, y in source.batches(rows, EVAL_BATCH, rng=None):
        for k in range(heads.count):
            correct[k] += (torch.addmm(heads.bias[k], x, heads.weight[k]).argmax(1) == y).sum()
    return 100.0 * correct.cpu().numpy() / max(1, len(rows))


@torch.no_grad()
def train_heads(
    splits: ProbeSplits,
    rows: np.ndarray,
    heads: Heads,
    *,
    epochs: int,
    batch_size: int,
    seed: int,
    progress: ProgressUpdate | None = None,
) -> Heads:
    """Momentum SGD with cosine decay (per epoch) on every head at once, as the reference trains one head.

    Each minibatch is read once; the heads then take their steps one after another, so the [B, C] scores and
    gradients of one head stay in cache (one [B, K*C] block is slower on a CPU than K small ones).
    """
    momentum_w, momentum_b = torch.zeros_like(heads.weight), torch.zeros_like(heads.bias)
    rng = np.random.default_rng(derive_seed(seed, _ORDER))
    for epoch in range(epochs):
        scale = cosine_lr(1.0, epoch, epochs)
        for x, y in splits.train.batches(rows, batch_size, rng):
            rows_in_batch = torch.arange(x.shape[0], device=x.device)
            x_t = x.T
            for k in range(heads.count):
                weight, bias = heads.weight[k], heads.bias[k]
                grad = torch.softmax(torch.addmm(bias, x, weight), dim=1)  # d(mean CE)/d(scores) = (p - onehot) / B
                grad[rows_in_batch, y] -= 1.0
                grad /= x.shape[0]
                grad_w = torch.mm(x_t, grad).add_(weight, alpha=heads.weight_decays[k])
                grad_b = grad.sum(0).add_(bias, alpha=heads.weight_decays[k])
                momentum_w[k].mul_(MOMENTUM).add_(grad_w)
                momentum_b[k].mul_(MOMENTUM).add_(grad_b)
                weight.add_(momentum_w[k], alpha=-heads.lrs[k] * scale)
                bias.add_(momentum_b[k], alpha=-heads.lrs[k] * scale)
        if progress is not None:
            progress(1)
    return heads


def log_grid(low: float, high: float, points: int) -> list[float]:
    """`points` values evenly spaced in log space from `low` to `high`."""
    if points == 1:
        return [math.sqrt(low * high)]
    return [float(v) for v in np.geomspace(low, high, points)]


def fast_epochs(train_rows: int, batch_size: int, epochs: int, min_steps: int, max_epochs: int) -> int:
    """`epochs`, raised until the run takes at least `min_steps` SGD steps (few-shot sets have one batch an
    epoch), but never above `max_epochs` (the reference's 100)."""
    steps_per_epoch = max(1, math.ceil(train_rows / batch_size))
    return int(min(max_epochs, max(epochs, math.ceil(min_steps / steps_per_epoch))))


def fast_probe(
    train_x: np.ndarray,
    train_y: np.ndarray,
    test_x: np.ndarray,
    test_y: np.ndarray,
    *,
    seed: int,
    shots: int | None = None,
    class_names: Sequence[str] | None = None,
    epochs: int = FAST_EPOCHS,
    min_steps: int = MIN_STEPS,
    lr_points: int = LR_POINTS,
    weight_decays: Sequence[float] = WEIGHT_DECAYS,
    final_heads: int = FINAL_HEADS,
    batch_size: int = BATCH_SIZE,
    device: str | torch.device | None = None,
    progress: ProgressUpdate | None = None,
) -> ProbeResult:
    """The fast probe for one seed: a grid of (lr, weight decay) heads trained together on the 80% split for a
    short cosine schedule; the `final_heads` best on the 20% validation split are retrained together on all
    training rows (or the shots) and averaged into one linear classifier (less SGD noise than one run).

    The lr grid is the reference's range [1e-1, 1e2] multiplied by 100 / epochs, so that every head integrates
    the same total learning rate as the matching 100-epoch reference run. Options as in `reference_probe`.
    """
    if epochs < 1 or min_steps < 0 or lr_points < 1 or batch_size < 1 or final_heads < 1:
        raise ValueError(
            f"epochs, lr_points, batch_size, final_heads must be >= 1 and min_steps >= 0, got {epochs}, "
            f"{lr_points}, {batch_size}, {final_heads}, {min_steps}"
        )
    started = time.perf_counter()
    device = device_for(device)
    splits = prepare_probe(
        train_x, train_y, test_x, test_y, seed=seed, shots=shots, class_names=class_names, device=device
    )
    run_epochs = fast_epochs(len(splits.tune_rows), batch_size, epochs, min_steps, EPOCHS)
    scale = EPOCHS / run_epochs
    pairs = [(lr * scale, wd) for lr in log_grid(*LR_RANGE, lr_points) for wd in weight_decays]
    dim = splits.train.dim
    search = Heads.create(
        dim, splits.classes, [p[0] for p in pairs], [p[1] for p in pairs], derive_seed(seed, _INIT), device
    )
    train_heads(
        splits,
        splits.tune_rows,
        search,
        epochs=run_epochs,
        batch_size=batch_size,
        seed=derive_seed(seed, _SEARCH),
        progress=progress,
    )
    accuracies = heads_top1(search, splits, splits.validation_rows)
    records = tuple(
        TrialRecord(lr, wd, run_epochs, float(acc)) for (lr, wd), acc in zip(pairs, accuracies, strict=True)
    )
    ranked = sorted(range(len(pairs)), key=lambda i: (-accuracies[i], i))[:final_heads]
    lr, weight_decay = pairs[ranked[0]]
    final = Heads.create(
        dim,
        splits.classes,
        [pairs[i][0] for i in ranked],
        [pairs[i][1] for i in ranked],
        derive_seed(seed, _FINAL, _INIT),
        device,
    )
    train_heads(
        splits,
        splits.final_rows,
        final,
        epochs=run_epochs,
        batch_size=batch_size,
        seed=derive_seed(seed, _FINAL),
        progress=progress,
    )
    # averaging the heads' weights averages their scores: still one linear classifier, with less SGD noise
    averaged = Heads(final.weight.mean(0, keepdim=True), final.bias.mean(0, keepdim=True), (lr,), (weight_decay,))
    return ProbeResult(
        method="fast",
        seed=seed,
        test_top1=float(heads_top1(averaged, splits, splits.test_rows, test=True)[0]),
        lr=lr,
        weight_decay=weight_decay,
        epochs=run_epochs,
        wall_seconds=time.perf_counter() - started,
        trials=records,
        shots=shots,
        weight=averaged.weight[0].detach().cpu().numpy().astype(np.float32),
        bias=averaged.bias[0].detach().cpu().numpy().astype(np.float32),
    )
