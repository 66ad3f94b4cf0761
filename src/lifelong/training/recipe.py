"""One training run of the common recipe on one task, as a picklable trial function
(docs/protocols/nevis.md#training-recipe).

`FitJob(...)(trial)` builds a seeded network (optionally from given backbone weights), trains it with the trial's
lr and label smoothing, keeps its best-on-dev weights and returns a `TrialResult`; `search` fans such calls out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from lifelong.core.datasets import ArrayDataset, Dataset, LazyDataset
from lifelong.core.tasks import TaskKind
from lifelong.training.auxiliary import AuxiliaryTask
from lifelong.training.devices import Accelerator, accelerator_scope, current_accelerator, seeded_torch_rng
from lifelong.training.hpsearch import Trial, TrialResult
from lifelong.training.loop import TrainProgress, derive_seed, set_torch_threads, torch_threads, train_model
from lifelong.training.models import check_architecture, make_model
from lifelong.training.schedules import batch_size_for

if TYPE_CHECKING:  # encoders imports this module (through pretrain): no import cycle at run time
    from lifelong.training.encoders.finetune import FineTune

# Tags for derive_seed(job seed, trial index, tag): initialisation, training and the network's own random ops
# (dropout, EfficientNet's drop-connect: torch's global RNG, which torch seeds anew in every process) draw
# independent streams.
_INIT, _TRAIN, _RANDOM_OPS = 0, 1, 2


def materialize(dataset: Dataset) -> ArrayDataset:
    """`dataset` held in memory as an ArrayDataset (picklable, so it can travel to executor workers)."""
    if isinstance(dataset, ArrayDataset):
        return dataset
    if isinstance(dataset, LazyDataset):
        return dataset.materialize()
    if not isinstance(dataset, Dataset):
        raise TypeError(f"expected a Dataset (ArrayDataset, LazyDataset, ...), got {type(dataset).__name__}")
    batches = list(dataset.batches(4096))  # stored order
    images = np.concatenate([b.images for b in batches]) if batches else np.zeros((0, *dataset.image_shape), np.uint8)
    return ArrayDataset(dataset.task, dataset.split, images, dataset.labels())


@dataclass(frozen=True)
class FitJob:
    """One training run of the common recipe on one task, as a picklable callable Trial -> TrialResult.

    The trial's network is initialised from (`seed`, trial index) and trained with seeds from the same pair, so
    a trial gives the same result wherever it runs (for the same torch thread count); the network's own random ops
    (dropout, drop-connect) draw from torch's global RNG seeded from that pair too. `init_backbone` starts
    from those backbone weights (fine-tuning, pretrained models) with a freshly initialised head. An empty
    `dev` counts as none: the final weights are kept and `dev_error` is None. `threads`: torch threads of the
    run (None: this process's count when the job is made), applied wherever the job runs (executor workers).
    `accelerator`: where and how the run computes (None: this process's when the job is made); its specs travel
    with the job and are resolved where it runs (`device="auto"` means that machine's GPU, else its CPU).
    `finetune`: frozen groups and per-group lr multipliers for a backbone that is an Encoder (None: every
    parameter trains at the trial's lr). `auxiliary`: past tasks trained beside this one with heads of their own
    (the multitask learner), their losses weighted by the trial's `aux_weight` (else `aux_weight`). A trial's other
    fields left unset (None) take the job's values: weight decay, the cosine schedule, the batch-size rule, the
    random crop and mirror.
    """

    architecture: str
    num_classes: int
    kind: TaskKind
    train: ArrayDataset
    dev: ArrayDataset | None
    seed: int
    epochs: int
    min_batch_size: int = 16
    max_batch_size: int = 512
    resolution: int | None = 64
    augment: bool = True
    flip: bool = True
    warmup_epochs: float = 7.0
    weight_decay: float = 1e-4
    init_backbone: dict | None = None
    momentum: float = 0.9
    eval_batch_size: int = 256
    threads: int | None = None
    accelerator: Accelerator | None = None
    finetune: FineTune | None = None
    auxiliary: tuple[AuxiliaryTask, ...] = ()
    aux_weight: float = 1.0
    # called after every epoch of every trial (in this process only: executors run jobs without it)
    progress: Callable[[TrainProgress], None] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", TaskKind(self.kind))
        for name, data in (("train", self.train), ("dev", self.dev)):
            if data is None and name == "dev":
                continue
            if not isinstance(data, ArrayDataset):
                raise TypeError(
                    f"FitJob.{name} must be an ArrayDataset (picklable), got {type(data).__name__}; "
                    "wrap it with lifelong.training.recipe.materialize(dataset)"
                )
            task = data.task
            if task.kind is not self.kind or task.num_classes != self.num_classes:
                raise ValueError(
                    f"FitJob.{name} is task {task.uid!r} ({task.kind.value}, {task.num_classes} classes) but the "
                    f"job trains a {self.kind.value} head with {self.num_classes} classes"
                )
        if len(self.train) == 0:
            raise ValueError(f"FitJob.train of task {self.train.task.uid!r} is empty: there is nothing to train on")
        if self.epochs < 1 or self.eval_batch_size < 1 or (self.threads is not None and self.threads < 1):
            raise ValueError(
                f"epochs, eval_batch_size and threads (when given) must be >= 1, got {self.epochs}, "
                f"{self.eval_batch_size}, {self.threads}"
            )
        if self.resolution is not None and self.resolution < 1:
            raise ValueError(f"resolution must be a positive int or None (native size), got {self.resolution}")
        check_architecture(self.architecture, resolution=self.resolution, transfer=self.transfers)
        if self.threads is None:  # the creating process's count travels with the job to executor workers
            object.__setattr__(self, "threads", torch_threads())
        if self.accelerator is None:
            object.__setattr__(self, "accelerator", current_accelerator())
        if not isinstance(self.accelerator, Accelerator):
            raise TypeError(f"FitJob.accelerator must be an Accelerator, got {type(self.accelerator).__name__}")
        if self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed}")
        self._batch_size()  # the batch-size bounds are checked here; lr and the rest by train_model

    @property
    def transfers(self) -> bool:
        """Whether the job swaps parts of the network: given backbone weights, or fine-tuning groups of it."""
        return self.init_backbone is not None or self.finetune is not None

    def _batch_size(self, scale: int | None = None) -> int:
        """The recipe's batch size for the training set, times 2**scale (a trial's batch_scale)."""
        size = batch_size_for(len(self.train), min_size=self.min_batch_size, max_size=self.max_batch_size)
        scale = scale or 0
        return max(1, size << scale if scale >= 0 else size >> -scale)

    def __call__(self, trial: Trial) -> TrialResult:
        """Train the trial's network; return its best-on-dev weights, dev error, FLOPs, steps and dev curve."""
        set_torch_threads(self.threads)
        with accelerator_scope(self.accelerator):
            # the global RNG seeded from (seed, trial) for the run, then restored: same seed, same draws
            with seeded_torch_rng(derive_seed(self.seed, trial.index, _RANDOM_OPS)):
                return self._run(trial)

    def _run(self, trial: Trial) -> TrialResult:
        model = make_model(self.architecture, self.num_classes, seed=derive_seed(self.seed, trial.index, _INIT))
        if self.init_backbone is not None:
            try:
                model.backbone.load_state_dict(self.init_backbone)
            except RuntimeError as exc:
                raise ValueError(
                    f"init_backbone does not fit a {self.architecture!r} backbone: {exc}; give the `backbone` "
                    "state_dict of a model of the same architecture"
                ) from exc
        dev = self.dev if self.dev is not None and len(self.dev) > 0 else None
        groups = None
        if self.finetune is not None:
            groups = self.finetune.param_groups(model.backbone, lr=trial.lr, head=model.head)
        result = train_model(
            model,
            self.train,
            dev,
            kind=self.kind,
            epochs=self.epochs,
            batch_size=self._batch_size(trial.batch_scale),
            lr=trial.lr,
            label_smoothing=trial.label_smoothing,
            weight_decay=self.weight_decay if trial.weight_decay is None else trial.weight_decay,
            momentum=self.momentum,
            warmup_epochs=self.warmup_epochs,
            seed=derive_seed(self.seed, trial.index, _TRAIN),
            augment=self.augment,
            flip=self.flip and trial.flip is not False,
            resolution=self.resolution,
            eval_batch_size=self.eval_batch_size,
            progress=self.progress,
            param_groups=groups,
            schedule=trial.schedule or "cosine",
            crop=trial.crop is not False,
            auxiliary=self.auxiliary,
            aux_weight=self.aux_weight if trial.aux_weight is None else trial.aux_weight,
        )
        return TrialResult(
            trial=trial,
            dev_error=result.dev_error,
            train_flops=result.train_flops,
            steps=result.steps,
            state_dict=result.state_dict,
            dev_curve=tuple(p.dev_error for p in result.history if p.dev_error is not None),
        )
