"""A linear probe on pre-extracted features (ImageNet-CoG, spec/imagenet_cog.md section 2), fresh for every task.

`train` tunes (lr, weight decay) with `lifelong.training.probes` (`-o probe=fast|reference`; the probe's own
stratified 20% validation split, few-shot rows drawn from the other 80%), then fits the final linear classifier
with the chosen pair on all training rows (or the same shots) so that `predict` can score any evaluation split:
the probes report test top-1 but hand back no weights. The run seed is the protocol seed (22, 37, 45, 77, 93).
The task's `metadata["shots"]` (None: all data) selects the few-shot protocol.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.core.resources import Resources
from lifelong.core.seeds import derive_seed
from lifelong.learners.options import configure

PROBES = ("fast", "reference")
BATCH_SIZE = 1024  # the protocol's minibatch
MOMENTUM = 0.9


@dataclass(frozen=True)
class ProbeConfig:
    """`probe`: fast (a grid trained together, short schedule) or reference (30 Optuna TPE trials x 100 epochs).
    `trials`/`epochs`: override the reference probe's (None: the protocol's). `device`: cpu, cuda (None: auto)."""

    probe: str = "fast"
    trials: int | None = None
    epochs: int | None = None
    device: str | None = None

    def __post_init__(self) -> None:
        if self.probe not in PROBES:
            raise ValueError(f"probe must be one of {PROBES}, got {self.probe!r}; e.g. -o probe=fast")
        for name in ("trials", "epochs"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1 (or unset), got {value}")


class LinearProbeLearner:
    """Linear probe on frozen features (CoG): tunes lr/wd on a 20% split, refits, scores; `-o probe=fast|reference`"""

    name = "linear-probe"

    def __init__(self, config: ProbeConfig | None = None, **options: Any) -> None:
        self.config = configure(ProbeConfig, config, options, "linear-probe")

    def init(self, seed: int) -> dict[str, Any]:
        return {"seed": int(seed), "task": None, "weight": None, "bias": None, "probe": None}

    def check_tasks(self, tasks) -> None:
        multi_label = [t.uid for t in tasks if t.is_multi_label]
        if multi_label:
            raise ValueError(f"linear-probe handles multi-class tasks only; {multi_label[:3]} are multi-label")

    def train(self, event: TrainEvent, state: dict[str, Any]) -> tuple[dict[str, Any], Resources]:
        from lifelong.training.probes import fast_probe, reference_probe

        x, y = _features(event.train_and_dev, "linear-probe trains")
        shots = event.task.metadata.get("shots")
        seed = state["seed"]
        names = event.task.class_names or None
        options: dict[str, Any] = {"seed": seed, "shots": shots, "class_names": names, "device": self.config.device}
        if self.config.probe == "reference":
            options |= {k: v for k in ("trials", "epochs") if (v := getattr(self.config, k)) is not None}
        probe = fast_probe if self.config.probe == "fast" else reference_probe
        # the probes need a test split; the training rows stand in (their top-1 is kept as a diagnostic)
        result = probe(x, y, x, y, **options)
        rows = _final_rows(y, shots, seed, names)
        weight, bias = _fit_linear(
            x[rows], y[rows], event.task.num_classes, result.lr, result.weight_decay, result.epochs, seed, options
        )
        runs = len(result.trials) * (0.8 if shots is None else 1.0) + 1
        flops = 6.0 * len(rows) * x.shape[1] * event.task.num_classes * result.epochs * runs  # fwd + bwd per row
        probe_record = {
            "method": result.method,
            "lr": result.lr,
            "weight_decay": result.weight_decay,
            "epochs": result.epochs,
            "trials": len(result.trials),
            "best_val_top1": max((t.val_top1 for t in result.trials), default=None),
            "train_top1": result.test_top1,
            "shots": shots,
            "config": asdict(self.config),
        }
        new_state = {"seed": seed, "task": event.task.uid, "weight": weight, "bias": bias, "probe": probe_record}
        return new_state, Resources(train_flops=flops, peak_parameters=int(weight.size + bias.size))

    def predict(self, event: PredictEvent, state: dict[str, Any]) -> np.ndarray:
        if state["task"] != event.task.uid:
            raise ValueError(
                f"linear-probe was trained on {state['task']!r} but asked to predict {event.task.uid!r}: a probe "
                "predicts the task it was just trained on"
            )
        x, _ = _features(event.dataset, "linear-probe predicts")
        return (x @ state["weight"] + state["bias"]).astype(np.float32)

    def predict_flops(self, event: PredictEvent, state: dict[str, Any]) -> float:
        return 2.0 * len(event.dataset) * float(state["weight"].size)


def _features(dataset, doing: str) -> tuple[np.ndarray, np.ndarray]:
    """(float32 features [N, D], labels) of a dataset of pre-extracted features; images are an error."""
    if not getattr(dataset, "is_features", False):
        raise ValueError(
            f"{doing} on pre-extracted features [N, D], but {dataset!r} holds images: use a features stream such "
            "as cog (`lifelong cog run --encoder FILE`)"
        )
    parts = [(b.images, b.labels) for b in dataset.batches(65_536)]
    if not parts:
        raise ValueError(f"{doing}: {dataset!r} is empty")
    return np.concatenate([p[0] for p in parts]).astype(np.float32), np.concatenate([p[1] for p in parts])


def _final_rows(labels: np.ndarray, shots: int | None, seed: int, names) -> np.ndarray:
    """Rows the final classifier trains on: all, or the shots drawn from the 80% split as the probes draw them."""
    from lifelong.training.probes import few_shot_indices, stratified_split

    if shots is None:
        return np.arange(len(labels))
    tune, _ = stratified_split(labels, seed=derive_seed(seed, 1))
    return tune[few_shot_indices(labels[tune], shots, seed=derive_seed(seed, 2), names=names)]


def _fit_linear(
    x: np.ndarray,
    y: np.ndarray,
    classes: int,
    lr: float,
    weight_decay: float,
    epochs: int,
    seed: int,
    options: dict[str, Any],
) -> tuple[np.ndarray, np.ndarray]:
    """nn.Linear + cross-entropy, SGD momentum 0.9, batch 1024, cosine decay per epoch: (weight [D, C], bias [C])."""
    import torch

    device = torch.device(options["device"] or ("cuda" if torch.cuda.is_available() else "cpu"))
    generator = torch.Generator().manual_seed(derive_seed(seed, 8) % (2**63))
    model = torch.nn.Linear(x.shape[1], classes).to(device)
    with torch.no_grad():
        bound = 1.0 / math.sqrt(x.shape[1])
        model.weight.copy_(torch.empty_like(model.weight, device="cpu").uniform_(-bound, bound, generator=generator))
        model.bias.copy_(torch.empty_like(model.bias, device="cpu").uniform_(-bound, bound, generator=generator))
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=MOMENTUM, weight_decay=weight_decay)
    features, labels = torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)
    for epoch in range(epochs):
        for group in optimizer.param_groups:
            group["lr"] = lr * 0.5 * (1.0 + math.cos(math.pi * epoch / epochs))
        order = torch.randperm(len(y), generator=generator).to(device)
        for start in range(0, len(y), BATCH_SIZE):
            batch = order[start : start + BATCH_SIZE]
            loss = torch.nn.functional.cross_entropy(model(features[batch]), labels[batch])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    weight = model.weight.detach().cpu().numpy().T.astype(np.float32)
    return np.ascontiguousarray(weight), model.bias.detach().cpu().numpy().astype(np.float32)
