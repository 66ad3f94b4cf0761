"""The Independent recipe as one config: architecture, schedule, search, executor
(docs/protocols/nevis.md#training-recipe).

The learners train with it (independent, finetune, pretrained); so do pretraining and the transfer matrix,
which is why it lives here rather than beside a learner.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lifelong.core.datasets import Dataset
from lifelong.core.executors import Executor, make_executor
from lifelong.core.tasks import TaskKey
from lifelong.training.auxiliary import AuxiliaryTask
from lifelong.training.bayesopt import GpUcb, gp_ucb_search
from lifelong.training.hpsearch import SearchSpace, Trial, TrialResult, sample_trials, search
from lifelong.training.models import check_architecture
from lifelong.training.recipe import FitJob, materialize

SEARCHES = ("random", "gp-ucb")


@dataclass(frozen=True)
class IndependentConfig:
    """Recipe of the Independent learner, scaled down for a 2-core CPU (the paper: resnet34, 64 px, B in [16, 512]).

    Trials are drawn with the task index as seed (the paper's protocol), and trained with seeds from (run seed,
    task index, trial index).
    """

    architecture: str = "resnet_mini"
    """The network trained on each task: resnet_mini, resnet18, resnet34, or package.module:factory, a callable
    given num_classes and in_channels (keywords, those it accepts) returning a torch module that maps images
    [N, C, H, W] to class scores [N, num_classes] (the transfer learners also need its backbone module and its
    linear head, attributes of those names)."""
    resolution: int | None = 32
    """The side, in pixels, of the square images are resized to (unset: each task's native size)."""
    epochs: int = 10
    """Epochs over each task's train split."""
    min_batch_size: int = 16
    """The smallest batch: the batch size is N / 400 for N training images, rounded down to a power of 2 and
    bounded by min_batch_size and max_batch_size."""
    max_batch_size: int = 128
    """The largest batch (see min_batch_size)."""
    lr: float = 0.05
    """The learning rate of SGD (Nesterov, warm-up then cosine) when trials=1."""
    label_smoothing: float = 0.1
    """The label smoothing of the loss when trials=1, in [0, 1)."""
    weight_decay: float = 1e-4
    """The weight decay of SGD."""
    momentum: float = 0.9
    """SGD momentum."""
    warmup_epochs: float = 1.0
    """Epochs of linear learning-rate warm-up before the cosine decay."""
    augment: bool = True
    """Augment the training images: a random resized crop and a random mirror."""
    no_flip_domains: tuple[str, ...] = ("ocr",)
    """Task domains whose images are never mirrored, since mirroring can change their class (case-insensitive)."""
    eval_batch_size: int = 256
    """Images per batch when evaluating and predicting."""
    max_task_history: int = 1000
    """The most past task ids the learner's state keeps."""
    trials: int = 1
    """Hyper-parameter trials per task: 1 trains once with lr and label_smoothing; more (the paper: 16) runs the
    search (see search and space) and keeps the best on the dev split."""
    lr_range: tuple[float, float] = (1e-4, 1e-1)
    """The random search's learning rates: log-uniform between these two."""
    label_smoothing_range: tuple[float, float] = (0.0, 0.3)
    """The random search's label smoothing: uniform between these two."""
    fixed_label_smoothing: float | None = None
    """The frugal search: this label smoothing for every trial (e.g. 0.15) instead of label_smoothing_range."""
    lr_grid: tuple[float, ...] | None = None
    """The frugal search: these learning rates (e.g. 1e-4, 1e-3, 1e-2, 1e-1) instead of lr_range."""
    search: str = "random"
    """How the trials are chosen when trials > 1: random (seeded draws, the paper's default) or gp-ucb (one after
    the other, each where a Gaussian process of the finished trials' dev errors has its upper confidence bound:
    the paper's BHPO)."""
    space: str = "small"
    """The search space: small (lr and label smoothing, the paper's) or large (also weight decay, the schedule
    cosine or piecewise, the batch size x0.5/x1/x2, the random crop and the mirror on or off)."""
    weight_decay_range: tuple[float, float] = (1e-5, 1e-3)
    """The large space's weight decay: log-uniform between these two."""
    gp_init_trials: int = 3
    """With search=gp-ucb, the first trials: the random search's draws, before the GP proposes."""
    ucb_kappa: float = 1.8
    """With search=gp-ucb, the weight of the GP's standard deviation in mean + kappa * std (Vizier's 1.8)."""
    executor: str = "local"
    """Where trials run: local (one after the other, here) or ray (fanned out over Ray's nodes, each trial with
    this process's torch thread count; finished trials come back here)."""
    ray_address: str | None = None
    """With executor=ray, the address of the Ray cluster (unset: a local Ray)."""
    ray_num_cpus: int | None = None
    """With executor=ray and no ray_address, the CPUs of the local Ray (unset: Ray's default)."""
    gpus_per_trial: float = 0.0
    """With executor=ray, the GPUs each trial takes (fractional: trials share a GPU)."""

    def __post_init__(self) -> None:
        if self.resolution is not None and self.resolution < 1:
            raise ValueError(f"resolution must be a positive int or None (native size), got {self.resolution}")
        check_architecture(self.architecture, resolution=self.resolution)
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
        object.__setattr__(self, "weight_decay_range", tuple(self.weight_decay_range))
        if self.search not in SEARCHES:
            raise ValueError(f"search must be one of {', '.join(SEARCHES)}, got {self.search!r}")
        if self.trials == 1 and (self.search != "random" or self.space != "small"):
            raise ValueError(
                f"search={self.search} and space={self.space} need trials > 1: one trial trains once with lr and "
                "label_smoothing; give trials=N"
            )
        self.search_space  # noqa: B018 -- SearchSpace validates the search options
        self.gp_settings  # noqa: B018 -- and GpUcb the GP's
        self.trial_executor(threads=1)  # validates the executor options; starts nothing

    @property
    def search_space(self) -> SearchSpace:
        """The search space of this config (used when `trials` > 1)."""
        return SearchSpace(
            trials=self.trials,
            lr=self.lr_range,
            label_smoothing=self.label_smoothing_range,
            fixed_label_smoothing=self.fixed_label_smoothing,
            lr_grid=self.lr_grid,
            size=self.space,
            weight_decay=self.weight_decay_range,
        )

    @property
    def gp_settings(self) -> GpUcb:
        """GP-UCB's settings (used when search=gp-ucb)."""
        return GpUcb(init_trials=self.gp_init_trials, kappa=self.ucb_kappa)

    def single_trial(self) -> Trial:
        """The one trial of trials=1: lr and label_smoothing."""
        return Trial(0, self.lr, self.label_smoothing)

    def trials_for(self, task_index: int) -> list[Trial]:
        """The trials of a random search on task `task_index` (seeded by it), or the single trial of trials=1."""
        if self.trials == 1:
            return [self.single_trial()]
        return sample_trials(self.search_space, seed=task_index)

    def run_search(
        self,
        fit: Callable[[Trial], TrialResult],
        task_index: int,
        *,
        workdir: Path | None = None,
        executor: Executor | None = None,
    ) -> tuple[TrialResult, list[TrialResult]]:
        """The configured search of task `task_index` with `fit`: (best trial, every trial); finished trials in
        `workdir` are kept. Random search runs its seeded draws (through `executor` when given); gp-ucb proposes
        them one after the other (each through `executor`)."""
        if self.trials > 1 and self.search == "gp-ucb":
            return gp_ucb_search(
                fit, self.search_space, task_index, settings=self.gp_settings, workdir=workdir, executor=executor
            )
        return search(fit, self.trials_for(task_index), workdir=workdir, executor=executor)

    def fit_job(
        self,
        task: TaskKey,
        train: Dataset,
        dev: Dataset | None,
        *,
        seed: int,
        threads: int | None,
        init_backbone: dict | None = None,
        auxiliary: tuple[AuxiliaryTask, ...] = (),
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
            auxiliary=auxiliary,
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
