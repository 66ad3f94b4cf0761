"""The Independent recipe as one config: architecture, schedule, search, executor
(docs/protocols/nevis.md#training-recipe).

The learners train with it (independent, finetune, pretrained); so do pretraining and the transfer matrix,
which is why it lives here rather than beside a learner.
"""

from __future__ import annotations

from dataclasses import dataclass

from lifelong.core.datasets import Dataset
from lifelong.core.executors import Executor, make_executor
from lifelong.core.tasks import TaskKey
from lifelong.training.hpsearch import SearchSpace, Trial, sample_trials
from lifelong.training.models import ARCHITECTURES
from lifelong.training.recipe import FitJob, materialize


@dataclass(frozen=True)
class IndependentConfig:
    """Recipe of the Independent learner, scaled down for a 2-core CPU (the paper: resnet34, 64 px, B in [16, 512]).

    `resolution`: square side images are resized to (None keeps each task's native size). `epochs` over
    the train split; batch size by `batch_size_for(N, min_batch_size, max_batch_size)`. No horizontal flip
    for tasks whose `domain` is in `no_flip_domains` (case-insensitive). `max_task_history` bounds the
    list of past task uids kept in the state.

    Hyper-parameters: `trials=1` trains once with `lr` and `label_smoothing`; `trials` > 1 (the paper: 16) runs
    random search: lr log-uniform in `lr_range`, label smoothing uniform in `label_smoothing_range`, or the frugal
    variant with `fixed_label_smoothing` (0.15) and `lr_grid` ((1e-4, 1e-3, 1e-2, 1e-1)). Trials are drawn with
    the task index as seed (the paper's protocol), and trained with seeds from (run seed, task index, trial index).
    `executor`: "local" runs trials one after the other here; "ray" fans them out over Ray (a local Ray with
    `ray_num_cpus` CPUs, or the cluster at `ray_address`), spread over its nodes, each trial using this process's
    torch thread count and `gpus_per_trial` GPUs (fractional: trials share a GPU); finished trials come back here.
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
    trials: int = 1
    lr_range: tuple[float, float] = (1e-4, 1e-1)
    label_smoothing_range: tuple[float, float] = (0.0, 0.3)
    fixed_label_smoothing: float | None = None
    lr_grid: tuple[float, ...] | None = None
    executor: str = "local"
    ray_address: str | None = None
    ray_num_cpus: int | None = None
    gpus_per_trial: float = 0.0

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
        # options from JSON or YAML arrive as lists: keep the frozen config hashable
        object.__setattr__(self, "lr_range", tuple(self.lr_range))
        object.__setattr__(self, "label_smoothing_range", tuple(self.label_smoothing_range))
        if self.lr_grid is not None:
            object.__setattr__(self, "lr_grid", tuple(self.lr_grid))
        self.search_space  # noqa: B018 -- SearchSpace validates the search options
        self.trial_executor(threads=1)  # validates the executor options; starts nothing

    @property
    def search_space(self) -> SearchSpace:
        """The random-search space of this config (used when `trials` > 1)."""
        return SearchSpace(
            trials=self.trials,
            lr=self.lr_range,
            label_smoothing=self.label_smoothing_range,
            fixed_label_smoothing=self.fixed_label_smoothing,
            lr_grid=self.lr_grid,
        )

    def trials_for(self, task_index: int) -> list[Trial]:
        """The trials of task `task_index`: one with `lr` and `label_smoothing`, or `trials` seeded random draws."""
        if self.trials == 1:
            return [Trial(0, self.lr, self.label_smoothing)]
        return sample_trials(self.search_space, seed=task_index)

    def fit_job(
        self,
        task: TaskKey,
        train: Dataset,
        dev: Dataset | None,
        *,
        seed: int,
        threads: int | None,
        init_backbone: dict | None = None,
    ) -> FitJob:
        """This recipe's run on `task` (no flip for `no_flip_domains`) as a FitJob; datasets are materialized."""
        return FitJob(
            architecture=self.architecture,
            num_classes=task.num_classes,
            kind=task.kind,
            train=materialize(train),
            dev=None if dev is None else materialize(dev),
            seed=seed,
            epochs=self.epochs,
            min_batch_size=self.min_batch_size,
            max_batch_size=self.max_batch_size,
            resolution=self.resolution,
            augment=self.augment,
            flip=task.domain.lower() not in self.no_flip_domains,
            warmup_epochs=self.warmup_epochs,
            weight_decay=self.weight_decay,
            init_backbone=init_backbone,
            momentum=self.momentum,
            eval_batch_size=self.eval_batch_size,
            threads=threads,
        )

    def trial_executor(self, threads: int) -> Executor | None:
        """None for "local" (trials run one after the other here), else the executor; a trial takes `threads` CPUs
        and `gpus_per_trial` GPUs."""
        ray_options = {
            "ray_address": self.ray_address,
            "ray_num_cpus": self.ray_num_cpus,
            "gpus_per_trial": self.gpus_per_trial,
        }
        if self.executor == "local" and not any(ray_options.values()):
            return None
        if self.executor != "ray":
            given = ", ".join(f"{k}={v!r}" for k, v in ray_options.items())
            raise ValueError(
                f"executor {self.executor!r} with {given}: choose executor='local' (no Ray options) or executor='ray'"
            )
        return make_executor(
            "ray",
            address=self.ray_address,
            num_cpus=self.ray_num_cpus,
            cpus_per_item=threads,
            gpus_per_item=self.gpus_per_trial,
        )
