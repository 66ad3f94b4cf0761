"""Lifelong fact learning in a visual-semantic space (spec/fact_learning.md sections 1 and 4).

The model maps an image into the fact space of t(f) = [w(S); w(P); w(O)]: an image encoder (the CNN trained with the
heads, or a frozen toolkit encoder / given features) followed by an S branch (linear, to w(S)) and a P-O branch (one
hidden layer, to [w(P); w(O)]). Loss: sum over the parts defined in the image's fact of the non-squared L2 distance
||phi_c(x) - t_c|| (undefined parts masked out: an <S> fact says nothing of P and O), mean over the batch.
Prediction: cosine similarity of the image's embedding with every fact's t(f), [N, C] over the stream's facts.

The stream gives the facts (every task's `class_names`, all of the stream's facts) and their word vectors
(`task.metadata["fact_vectors"]`, float32 [C, 3, d], zero for an undefined part). Methods are options of the
continual learners: fine-tuning, EWC / SI / MAS regularisation, and Joint (each task retrains from scratch on every
training item seen so far, in a canonical order, so the final model does not depend on how facts were split).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.core.resources import Resources
from lifelong.core.tasks import TaskKey
from lifelong.learners.continual import ContinualConfig, ContinualLearner
from lifelong.learners.options import FineTuneOptions
from lifelong.learners.penalties import ItemLoss
from lifelong.training.continual_loop import model_inputs, predict_items
from lifelong.training.devices import DeviceCopies, cpu_tensors, current_accelerator
from lifelong.training.encoders import Encoder, FineTune, check_encoder_spec, load_encoder
from lifelong.training.loop import derive_seed
from lifelong.training.models import count_parameters, initialise, make_model
from lifelong.training.recipe import materialize

_INIT, _TRAIN = 1, 2  # derive_seed tags, as the continual learners'
NORM_EPS = 1e-12  # inside the square root of the distance, so its gradient stays finite at a perfect fit


@dataclass(frozen=True)
class FactConfig(FineTuneOptions, ContinualConfig):
    """Continual options (see ContinualConfig) for the fact model; `joint` retrains on all data seen so far.

    `hidden`: width of the P-O branch's hidden layer. Defaults sized for a CPU run of facts-mini: 32 x 32 images,
    resnet_mini, 6 epochs per task at lr 0.05 (the paper fine-tuned a VGG-16 on GPUs). `backbone`: an encoder spec
    (`lifelong.training.encoders.load_encoder`: a model name such as efficientnet-lite0, a toolkit checkpoint,
    torchscript:FILE, hf:FOLDER, package.module:factory) whose weights start the image encoder, fine-tuned with the
    heads, in place of a randomly initialised architecture; images then go to the encoder's resolution (its own
    normalisation inside its forward) unless -o resolution=N is given. With a backbone, the fine-tuning options
    (see FineTuneOptions) set how it trains: the paper froze the first blocks and trained the rest at 1/2/4/10/20 x
    the rate; by default everything trains at lr.
    """

    backbone: str | None = None
    epochs: int = 6
    lr: float = 0.05
    weight_decay: float = 1e-4
    resolution: int | None = 32
    hidden: int = 256
    joint: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.hidden < 1:
            raise ValueError(f"hidden must be >= 1, got {self.hidden}")
        if self.backbone is not None:
            if self.linear:
                raise ValueError("backbone fine-tunes an encoder with the heads; -o encoder= trains on frozen features")
            check_encoder_spec(self.backbone)  # unknown names and missing files fail before any training
        if self.backbone is None and not self.fine_tune_is_default():
            raise ValueError(
                "-o finetune, frozen_groups, lr_multipliers and head_lr_multiplier set how a pretrained encoder "
                "trains: give -o backbone=SPEC"
            )
        if self.joint and (self.penalty != "none" or self.init != "previous" or self.train_on != "bucket"):
            raise ValueError("joint trains from scratch on every item seen so far: leave penalty, init, train_on")


class FactHead(nn.Module):
    """S branch (linear -> w(S)) and P-O branch (linear, ReLU, linear -> [w(P); w(O)]) on encoder features."""

    def __init__(self, in_features: int, dim: int, hidden: int) -> None:
        super().__init__()
        self.subject = nn.Linear(in_features, dim)
        self.predicate_object = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, 2 * dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.subject(x), self.predicate_object(x)], dim=1)


class EncoderFactModel(nn.Module):
    """A trainable copy of an Encoder (`backbone`, with `out_features`) followed by a fact head (`head`)."""

    def __init__(self, encoder: Encoder, head: nn.Module) -> None:
        super().__init__()
        self.backbone = copy.deepcopy(encoder).unfreeze()
        self.backbone.out_features = encoder.feature_dim
        self.head = head
        self.in_channels = encoder.in_channels

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.backbone(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x))


class FactDistanceLoss:
    """Mean over the batch of sum_c mask_c ||phi_c(x) - t_c|| for labels indexing the facts' targets [C, 3, d]."""

    def __init__(self, targets: np.ndarray, mask: np.ndarray) -> None:
        self.targets = torch.as_tensor(np.asarray(targets, dtype=np.float32))
        self.mask = torch.as_tensor(np.asarray(mask, dtype=np.float32))
        self.dim = self.targets.shape[2]
        self._copies = DeviceCopies({"targets": self.targets, "mask": self.mask})  # on the model's device once

    def __call__(self, outputs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        space = self._copies.on(outputs.device)
        targets, mask = space["targets"][labels], space["mask"][labels]
        parts = outputs.reshape(len(outputs), 3, self.dim)
        distance = torch.sqrt(((parts - targets) ** 2).sum(-1) + NORM_EPS)
        return (distance * mask).sum(1).mean()


def fact_space(task: TaskKey) -> tuple[np.ndarray, np.ndarray]:
    """(t(f) as [C, 3, d] float32, defined-part mask [C, 3]) from the task's metadata (`fact_mask`, else the nonzero
    parts); a ValueError if missing."""
    vectors = task.metadata.get("fact_vectors")
    if vectors is None:
        raise ValueError(
            f"task {task.uid!r} has no metadata['fact_vectors']: the fact learners need a fact stream "
            "(e.g. facts-mini) whose tasks carry every fact's word vectors"
        )
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 3 or vectors.shape[:2] != (task.num_classes, 3):
        raise ValueError(f"task {task.uid!r}: fact_vectors must be [{task.num_classes}, 3, d], got {vectors.shape}")
    mask = task.metadata.get("fact_mask")  # centred vectors (-s centre=true) are not zero where a part is undefined
    mask = np.abs(vectors).sum(-1) > 0 if mask is None else np.asarray(mask, dtype=bool)
    if mask.shape != vectors.shape[:2]:
        raise ValueError(f"task {task.uid!r}: fact_mask must be [{task.num_classes}, 3], got {mask.shape}")
    if not mask[:, 0].all():
        raise ValueError(f"task {task.uid!r}: fact {int(np.flatnonzero(~mask[:, 0])[0])} has no subject vector")
    return vectors, mask


def cosine_scores(embeddings: np.ndarray, facts: np.ndarray) -> np.ndarray:
    """Cosine similarity [N, C] of image embeddings [N, D] with fact embeddings [C, D] (zero rows score 0)."""
    a = embeddings / np.maximum(np.linalg.norm(embeddings, axis=1, keepdims=True), 1e-12)
    b = facts / np.maximum(np.linalg.norm(facts, axis=1, keepdims=True), 1e-12)
    return (a @ b.T).astype(np.float32)


class FactLearner(ContinualLearner):
    """Fine-tunes one fact-embedding model task after task (options select the regulariser, or Joint)."""

    name = "fact-finetune"
    config_class = FactConfig

    def __init__(self, config: FactConfig | None = None, **options: Any) -> None:
        super().__init__(config, **options)
        self._backbone: Encoder | None = None
        if self.config.backbone is not None and config is None and "resolution" not in options:
            # the encoder's own input side, not the default 32 px
            self.config = dataclasses.replace(self.config, resolution=self._backbone_encoder().resolution)
        self.fine_tune: FineTune | None = None
        if self.config.backbone is not None and not self.config.fine_tune_is_default():
            choice = self.config.fine_tune_choice(explicit_mode=config is not None or "finetune" in options)
            probe = EncoderFactModel(self._backbone_encoder(), nn.Linear(self._backbone_encoder().feature_dim, 1))
            choice.param_groups(probe.backbone, lr=self.config.lr, head=probe.head)  # vs the layer groups
            self.config = dataclasses.replace(self.config, finetune=choice.mode)
            self.fine_tune = choice

    def __getstate__(self) -> dict:
        return {**super().__getstate__(), "_backbone": None}  # reloads from its spec

    def _backbone_encoder(self) -> Encoder:
        """The `backbone` spec's encoder on the CPU (loaded once per learner object; copied into each model)."""
        if getattr(self, "_backbone", None) is None:
            self._backbone = load_encoder(self.config.backbone).to("cpu")
        return self._backbone

    def check_tasks(self, tasks: Sequence[TaskKey]) -> None:
        """Before any training: fact tasks over one set of facts, each carrying the facts' word vectors."""
        for task in tasks:
            if not task.is_fact:
                raise ValueError(f"{self.name}: task {task.uid!r} is {task.kind.value}; this learner needs fact tasks")
            fact_space(task)
        super().check_tasks(tasks)

    def init(self, seed: int) -> dict[str, Any]:
        state = super().init(seed)
        state.update(fact_dim=None, seen_items=None, seen_labels=None)
        return state

    # ---- models --------------------------------------------------------------------------------------------

    def _fact_model(self, dim: int, input_shape: tuple[int, ...], seed: int) -> nn.Module:
        """A seeded fact model on the current accelerator."""
        cfg = self.config
        if cfg.linear:
            return current_accelerator().place(initialise(FactHead(int(input_shape[0]), dim, cfg.hidden), seed))
        if cfg.backbone is not None:
            encoder = self._backbone_encoder()
            head = initialise(FactHead(encoder.feature_dim, dim, cfg.hidden), derive_seed(seed, 0))
            return current_accelerator().place(EncoderFactModel(encoder, head))
        model = make_model(cfg.architecture, 2, seed=seed)
        model.head = initialise(FactHead(model.backbone.out_features, dim, cfg.hidden), derive_seed(seed, 0))
        return current_accelerator().place(model)

    def _model(self, state: dict[str, Any]) -> nn.Module:
        model = self._fact_model(state["fact_dim"], state["input_shape"], 0)
        model.load_state_dict(state["model"])
        return model

    def _item_loss(self) -> ItemLoss | None:
        return self._loss

    # ---- protocol ------------------------------------------------------------------------------------------

    def train(self, event: TrainEvent, state: dict[str, Any]) -> tuple[dict[str, Any], Resources]:
        """Train on the task's images (Joint: on every image seen so far, from scratch); update the penalty."""
        cfg, task = self.config, event.task
        self._check_label_space(task, state)
        targets, mask = fact_space(task)
        self._loss = FactDistanceLoss(targets, mask)
        seed = state["seed"]
        data = materialize(event.train_and_dev)
        items, encode_flops = self._items(data, "the training data")
        labels = np.asarray(data.labels(), dtype=np.int64)
        resolution = None if cfg.linear else self._resolution(task)
        seen_items, seen_labels = state["seen_items"], state["seen_labels"]
        if cfg.joint:
            if seen_items is not None:
                items, labels = np.concatenate([seen_items, items]), np.concatenate([seen_labels, labels])
            order = np.argsort(labels, kind="stable")  # canonical: by fact, then arrival within the fact
            items, labels = items[order], labels[order]
            seen_items, seen_labels = items, labels
        init_seed = derive_seed(seed, event.task_index, _INIT)
        if cfg.joint or cfg.init == "scratch" or state["model"] is None:
            model = self._fact_model(targets.shape[2], items.shape[1:], init_seed)
        else:
            model = self._model(state)
        groups = None
        if self.fine_tune is not None:  # frozen groups and per-group rates of the backbone (else all at lr)
            groups = self.fine_tune.param_groups(model.backbone, lr=cfg.lr, head=model.head)
        term = self._penalty(state, model)
        term.start(model)
        train_seed = derive_seed(seed, event.task_index, _TRAIN)
        fit = self._fit(
            model, items, labels, train_seed, resolution, term, flip=False, data_loss=self._loss, param_groups=groups
        )  # keep left/right

        def inputs(x: np.ndarray) -> torch.Tensor:
            return model_inputs(x, channels=int(getattr(model, "in_channels", 3)), resolution=resolution)

        kept, penalty_flops = term.finish(model, items, labels, inputs)
        held = count_parameters(model) + term.held_parameters()
        new_state = {
            **state,
            "task_uid": task.uid,
            "task_index": event.task_index,
            "label_space": {"uid": task.uid, "num_classes": task.num_classes, "class_names": task.class_names},
            "model": cpu_tensors(model.state_dict()),
            "input_shape": tuple(int(s) for s in items.shape[1:]),
            "resolution": resolution,
            "penalty": kept,
            "fact_dim": int(targets.shape[2]),
            "seen_items": seen_items,
            "seen_labels": seen_labels,
        }
        flops = fit.train_flops + penalty_flops + (encode_flops if cfg.count_encoder_flops else 0.0)
        return new_state, Resources(train_flops=float(flops), peak_parameters=int(held))

    def predict(self, event: PredictEvent, state: dict[str, Any]) -> np.ndarray:
        """Cosine similarity [N, C] of each image's embedding with every fact of the stream."""
        cfg, task = self.config, event.task
        self._check_label_space(task, state)
        targets, _ = fact_space(task)
        items, _ = self._items(event.dataset, f"the {event.split} split")
        if state["model"] is not None:
            model, resolution = self._model(state), state["resolution"]
        else:  # before any training: the seeded initial model, as at the start of task 0
            model = self._fact_model(targets.shape[2], items.shape[1:], derive_seed(state["seed"], 0, _INIT))
            resolution = None if cfg.linear else self._resolution(task)
        embeddings = predict_items(model, items, cfg.eval_batch_size, resolution=resolution)
        return cosine_scores(embeddings, targets.reshape(len(targets), -1))

    def predict_flops(self, event: PredictEvent, state: dict[str, Any]) -> float:
        return 0.0  # not counted for fact learners yet (training FLOPs are)

    _loss: FactDistanceLoss | None = None


@dataclass(frozen=True)
class _EWCConfig(FactConfig):
    penalty: str = "ewc"


@dataclass(frozen=True)
class _SIConfig(FactConfig):
    penalty: str = "si"


@dataclass(frozen=True)
class _MASConfig(FactConfig):
    penalty: str = "mas"


@dataclass(frozen=True)
class _JointConfig(FactConfig):
    joint: bool = True


class FactEWCLearner(FactLearner):
    """EWC on the fact model: Fisher of the fact distance loss."""

    name = "fact-ewc"
    config_class = _EWCConfig


class FactSILearner(FactLearner):
    """Synaptic Intelligence on the fact model."""

    name = "fact-si"
    config_class = _SIConfig


class FactMASLearner(FactLearner):
    """MAS on the fact model: importance from the squared norm of the embedding, accumulated across tasks."""

    name = "fact-mas"
    config_class = _MASConfig


class FactJointLearner(FactLearner):
    """Joint training: every task retrains from scratch on all training images seen so far (the upper reference)."""

    name = "fact-joint"
    config_class = _JointConfig


__all__ = [
    "FactConfig",
    "FactDistanceLoss",
    "FactEWCLearner",
    "FactHead",
    "FactJointLearner",
    "FactLearner",
    "FactMASLearner",
    "FactSILearner",
    "cosine_scores",
    "fact_space",
]
