"""Independent baseline (spec/nevis22.md section 6): a fresh, randomly initialised network for every task."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.core.resources import Resources
from lifelong.training.loop import configure_torch_threads, derive_seed, predict_scores, train_model
from lifelong.training.models import ARCHITECTURES, count_parameters, make_model
from lifelong.training.schedules import batch_size_for

# Tags for derive_seed(task seed, tag): model initialisation and training draw independent streams.
_INIT, _TRAIN = 0, 1


@dataclass(frozen=True)
class IndependentConfig:
    """Recipe of the Independent learner, scaled down for a 2-core CPU (the spec: resnet34, 64 px, B in [16, 512]).

    `resolution`: square side images are resized to (None keeps each task's native size). `epochs` over
    the train split; batch size by `batch_size_for(N, min_batch_size, max_batch_size)`. No horizontal flip
    for tasks whose `domain` is in `no_flip_domains` (case-insensitive). `max_task_history` bounds the
    list of past task uids kept in the state.
    """

    architecture: str = "resnet_mini"
    resolution: int | None = 32
    epochs: int = 10
    min_batch_size: int = 16
    max_batch_size: int = 128
    lr: float = 0.05
    label_smoothing: float = 0.1
    weight_decay: float = 1e-4
    momentum: float = 0.9
    warmup_epochs: float = 1.0
    augment: bool = True
    no_flip_domains: tuple[str, ...] = ("ocr",)
    eval_batch_size: int = 256
    max_task_history: int = 1000

    def __post_init__(self) -> None:
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"unknown architecture {self.architecture!r}; choose one of {sorted(ARCHITECTURES)}")
        if self.resolution is not None and self.resolution < 1:
            raise ValueError(f"resolution must be a positive int or None (native size), got {self.resolution}")
        if self.epochs < 1 or self.eval_batch_size < 1 or self.max_task_history < 1:
            raise ValueError(
                f"epochs, eval_batch_size and max_task_history must be >= 1, got {self.epochs}, "
                f"{self.eval_batch_size}, {self.max_task_history}"
            )
        if not 1 <= self.min_batch_size <= self.max_batch_size:
            raise ValueError(
                f"need 1 <= min_batch_size <= max_batch_size, got {self.min_batch_size}, {self.max_batch_size}"
            )
        if not self.lr > 0 or not 0 <= self.label_smoothing < 1 or self.weight_decay < 0 or self.warmup_epochs < 0:
            raise ValueError(
                f"need lr > 0, 0 <= label_smoothing < 1, weight_decay >= 0, warmup_epochs >= 0; got lr={self.lr}, "
                f"label_smoothing={self.label_smoothing}, weight_decay={self.weight_decay}, "
                f"warmup_epochs={self.warmup_epochs}"
            )
        object.__setattr__(self, "no_flip_domains", tuple(d.lower() for d in self.no_flip_domains))


class IndependentLearner:
    """Trains a fresh randomly initialised network on every task; keeps only the current task's model."""

    name = "independent"

    def __init__(self, config: IndependentConfig | None = None, **options: Any) -> None:
        config = config or IndependentConfig()
        if options:
            known = {f.name for f in dataclasses.fields(IndependentConfig)}
            unknown = sorted(set(options) - known)
            if unknown:
                raise ValueError(f"unknown IndependentLearner option(s) {unknown}; known options: {sorted(known)}")
            config = dataclasses.replace(config, **options)
        self.config = config

    def __repr__(self) -> str:
        return f"IndependentLearner({self.config})"

    def init(self, seed: int) -> dict[str, Any]:
        """Initial state: the seed and no model yet."""
        if not isinstance(seed, int | np.integer) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        return {"seed": int(seed), "task_uid": None, "model": None, "past_tasks": []}

    def train(self, event: TrainEvent, state: dict[str, Any]) -> tuple[dict[str, Any], Resources]:
        """Train a fresh network on `event.train`, select on `event.dev`; randomness from (seed, task index)."""
        configure_torch_threads()
        cfg, task = self.config, event.task
        task_seed = derive_seed(state["seed"], event.task_index)
        model = make_model(cfg.architecture, task.num_classes, seed=derive_seed(task_seed, _INIT))
        result = train_model(
            model,
            event.train,
            event.dev if len(event.dev) > 0 else None,
            kind=task.kind,
            epochs=cfg.epochs,
            batch_size=batch_size_for(len(event.train), min_size=cfg.min_batch_size, max_size=cfg.max_batch_size),
            lr=cfg.lr,
            label_smoothing=cfg.label_smoothing,
            weight_decay=cfg.weight_decay,
            momentum=cfg.momentum,
            warmup_epochs=cfg.warmup_epochs,
            seed=derive_seed(task_seed, _TRAIN),
            augment=cfg.augment,
            flip=task.domain.lower() not in cfg.no_flip_domains,
            resolution=cfg.resolution,
            eval_batch_size=cfg.eval_batch_size,
        )
        past = [*state.get("past_tasks", []), task.uid][-cfg.max_task_history :]
        new_state = {
            "seed": state["seed"],
            "task_uid": task.uid,
            "task_index": event.task_index,
            "architecture": cfg.architecture,
            "num_classes": task.num_classes,
            "resolution": cfg.resolution,
            "model": result.state_dict,
            "dev_error": result.dev_error,
            "past_tasks": past,
        }
        return new_state, Resources(train_flops=result.train_flops, peak_parameters=count_parameters(model))

    def predict(self, event: PredictEvent, state: dict[str, Any]) -> np.ndarray:
        """Scores [N, C] for `event.dataset` in stored order (logits, or probabilities for multi-label tasks)."""
        uid = event.task.uid
        if state.get("model") is None or state.get("task_uid") != uid:
            seen = (
                "was trained on it earlier but keeps only the latest model"
                if uid in state.get("past_tasks", ())
                else ("was never trained on it")
            )
            raise ValueError(
                f"IndependentLearner cannot predict task {uid!r}: it {seen} (current model: "
                f"{state.get('task_uid')!r}); run the train event of {uid!r} before its predict events"
            )
        configure_torch_threads()
        model = make_model(state["architecture"], state["num_classes"])
        model.load_state_dict(state["model"])
        return predict_scores(
            model, event.dataset, event.task.kind, self.config.eval_batch_size, resolution=state["resolution"]
        )
