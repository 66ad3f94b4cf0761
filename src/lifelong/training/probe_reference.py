"""The reference ImageNet-CoG linear probe (docs/protocols/cog.md#linear-probe): naver/cog's recipe.

nn.Linear(D, C) with bias, cross-entropy, SGD (momentum 0.9, weight decay on all parameters), batch 1,024,
100 epochs with cosine decay of the learning rate (stepped once per epoch, to 0 at the end). 30 Optuna TPE trials
(multivariate) over lr log-uniform in [1e-1, 1e2] and weight decay log-uniform in [1e-12, 1e-4]; objective: the
last-epoch top-1 on the stratified 20% validation split; the best pair is retrained on all training rows (or the
few-shot rows) and the last-epoch test top-1 is reported.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lifelong.core.progress import ProgressUpdate
from lifelong.core.seeds import derive_seed
from lifelong.training.devices import device_for
from lifelong.training.probe_data import FeatureRows, ProbeResult, ProbeSplits, TrialRecord, prepare_probe

LR_RANGE = (1e-1, 1e2)
WEIGHT_DECAY_RANGE = (1e-12, 1e-4)
TRIALS, EPOCHS, BATCH_SIZE, MOMENTUM = 30, 100, 1024, 0.9
EVAL_BATCH = 8192
# derive_seed streams (1, 2: the split and the shots): minibatch order, head initialisation, trials, the final run
_ORDER, _INIT, _TRIAL, _FINAL = 3, 4, 5, 6


def init_head(dim: int, classes: int, heads: int, seed: int, device: torch.device) -> tuple[torch.Tensor, ...]:
    """Weights [heads, dim, classes] and biases [heads, classes] drawn as nn.Linear does: U(-1/sqrt(D), 1/sqrt(D))."""
    generator = torch.Generator().manual_seed(seed)
    bound = 1.0 / math.sqrt(dim)
    weights, biases = [], []
    for _ in range(heads):  # head k's draw does not depend on how many heads follow it
        weights.append((torch.rand(classes, dim, generator=generator) * 2 - 1) * bound)
        biases.append((torch.rand(classes, generator=generator) * 2 - 1) * bound)
    weight = torch.stack(weights).transpose(1, 2).contiguous()
    return weight.to(device), torch.stack(biases).to(device)


def cosine_lr(base_lr: float, epoch: int, epochs: int) -> float:
    """The learning rate of `epoch` (0-based) under cosine decay from `base_lr` to 0 over `epochs`."""
    return base_lr * 0.5 * (1.0 + math.cos(math.pi * epoch / epochs))


@torch.no_grad()
def top1(model: nn.Module, rows: FeatureRows, indices: np.ndarray) -> float:
    """Top-1 accuracy (percent) of `model` on the given rows."""
    correct = torch.zeros((), dtype=torch.long, device=rows.device)  # counted there: one host copy
    for x, y in rows.batches(indices, EVAL_BATCH, rng=None):
        correct += (model(x).argmax(1) == y).sum()
    return 100.0 * int(correct) / max(1, len(indices))


def train_linear(
    splits: ProbeSplits,
    rows: np.ndarray,
    *,
    lr: float,
    weight_decay: float,
    epochs: int,
    batch_size: int,
    seed: int,
    progress: ProgressUpdate | None = None,
) -> nn.Linear:
    """One reference training run on `rows` of the training features; returns the trained nn.Linear."""
    device = splits.train.device
    model = nn.Linear(splits.train.dim, splits.classes).to(device)
    weight, bias = init_head(splits.train.dim, splits.classes, 1, derive_seed(seed, _INIT), device)
    with torch.no_grad():
        model.weight.copy_(weight[0].T)
        model.bias.copy_(bias[0])
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=MOMENTUM, weight_decay=weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: cosine_lr(1.0, epoch, epochs))
    rng = np.random.default_rng(derive_seed(seed, _ORDER))
    for _ in range(epochs):
        for x, y in splits.train.batches(rows, batch_size, rng):
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        schedule.step()
        if progress is not None:
            progress(1)
    return model


def reference_probe(
    train_x: np.ndarray,
    train_y: np.ndarray,
    test_x: np.ndarray,
    test_y: np.ndarray,
    *,
    seed: int,
    shots: int | None = None,
    class_names: Sequence[str] | None = None,
    trials: int = TRIALS,
    epochs: int = EPOCHS,
    batch_size: int = BATCH_SIZE,
    device: str | torch.device | None = None,
    progress: ProgressUpdate | None = None,
) -> ProbeResult:
    """naver/cog's probe recipe for one seed: Optuna TPE search on the 80/20 split, retrain, last-epoch test top-1.

    `shots` draws that many rows per class from the 80% split (few-shot; the retrain uses the same rows);
    validation stays the full 20%. `class_names` (e.g. wnids) name a concept that has too few rows.
    `progress`, if given, advances once per epoch ((trials + 1) * epochs in all).
    """
    import optuna

    if trials < 1 or epochs < 1 or batch_size < 1:
        raise ValueError(f"trials, epochs and batch_size must be >= 1, got {trials}, {epochs}, {batch_size}")
    started = time.perf_counter()
    splits = prepare_probe(
        train_x, train_y, test_x, test_y, seed=seed, shots=shots, class_names=class_names, device=device_for(device)
    )
    records: list[TrialRecord] = []

    def objective(trial: optuna.Trial) -> float:
        lr = trial.suggest_float("lr", *LR_RANGE, log=True)
        weight_decay = trial.suggest_float("weight_decay", *WEIGHT_DECAY_RANGE, log=True)
        model = train_linear(
            splits,
            splits.tune_rows,
            lr=lr,
            weight_decay=weight_decay,
            epochs=epochs,
            batch_size=batch_size,
            seed=derive_seed(seed, _TRIAL, trial.number),
            progress=progress,
        )
        accuracy = top1(model, splits.train, splits.validation_rows)
        records.append(TrialRecord(lr, weight_decay, epochs, accuracy))
        return accuracy

    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = optuna.samplers.TPESampler(multivariate=True, seed=seed)
            study = optuna.create_study(direction="maximize", sampler=sampler)
            study.optimize(objective, n_trials=trials)
    finally:
        optuna.logging.set_verbosity(verbosity)
    best = study.best_trial.params
    model = train_linear(
        splits,
        splits.final_rows,
        lr=best["lr"],
        weight_decay=best["weight_decay"],
        epochs=epochs,
        batch_size=batch_size,
        seed=derive_seed(seed, _FINAL),
        progress=progress,
    )
    return ProbeResult(
        method="reference",
        seed=seed,
        test_top1=top1(model, splits.test, splits.test_rows),
        lr=best["lr"],
        weight_decay=best["weight_decay"],
        epochs=epochs,
        wall_seconds=time.perf_counter() - started,
        trials=tuple(records),
        shots=shots,
        weight=np.ascontiguousarray(model.weight.detach().cpu().numpy().T, dtype=np.float32),
        bias=model.bias.detach().cpu().numpy().astype(np.float32),
    )
