"""Lifelong fact learning in a visual-semantic space (docs/protocols/facts.md#model-and-loss).

The model maps an image into the fact space of t(f) = [w(S); w(P); w(O)]: a pretrained trunk shared by an S branch
and a P/O branch (the authors' Model_2, `lifelong.learners.fact_model`; by default the trunk is frozen and its
features computed once per image), or the small CNN trained from scratch with `FactHead`. Loss: sum over the parts
defined in the image's fact of the non-squared L2 distance ||phi_c(x) - t_c|| (undefined parts masked out: an <S>
fact says nothing of P and O), mean over the batch. Prediction: cosine similarity of the image's embedding with
every fact's t(f), [N, C] over the stream's facts. Every method trains each task to convergence
(`lifelong.training.convergence`).

The stream gives the facts (every task's `class_names`, all of the stream's facts), their word vectors
(`task.metadata["fact_vectors"]`, float32 [C, 3, d], zero for an undefined part unless centred) and which parts each
defines (`fact_mask`). Methods are options of the continual learners: fine-tuning, EWC / SI / MAS regularisation,
and Joint (each task retrains from scratch on every training item seen so far, in a canonical order, so the final
model does not depend on how facts were split).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.core.resources import Resources
from lifelong.core.tasks import TaskKey
from lifelong.learners.continual import FEATURES, ContinualConfig, ContinualLearner
from lifelong.learners.fact_model import (
    AUTHORS_BIAS_MULTIPLIER,
    AUTHORS_MULTIPLIERS,
    DEFAULT_LAYOUT,
    BranchedFactModel,
    BranchHeads,
    EncoderFactModel,
    FactHead,
    branch_param_groups,
    default_layout,
    stage_index,
)
from lifelong.learners.options import FineTuneOptions
from lifelong.learners.penalties import ItemLoss
from lifelong.training.continual_loop import model_inputs, predict_items
from lifelong.training.convergence import Convergence
from lifelong.training.devices import DeviceCopies, cpu_tensors, current_accelerator
from lifelong.training.encoders import Encoder, load_encoder
from lifelong.training.encoders.finetune import freeze_groups, parse_multipliers
from lifelong.training.encoders.stages import stage_names
from lifelong.training.flops import count_inference_flops
from lifelong.training.loop import derive_seed
from lifelong.training.models import count_parameters, initialise, make_model
from lifelong.training.recipe import materialize

_INIT, _TRAIN = 1, 2  # derive_seed tags, as the continual learners'
NORM_EPS = 1e-12  # inside the square root of the distance, so its gradient stays finite at a perfect fit


NO_ENCODER = "none"  # encoder=none: the small CNN trained from scratch on the images
BRANCH_NONE = "none"  # branch_from: the trunk is shared whole, the branches are the heads' upper layers


@dataclass(frozen=True)
class FactConfig(FineTuneOptions, ContinualConfig):
    """The continual learners' options for the fact model, the authors' Model_2: a pretrained trunk shared by an
    S branch and a P/O branch, with outputs of the word vectors' size (S) and twice it (P, O). Biases train at
    2 x their group's rate without weight decay, as the authors'.
    """

    option_aliases: ClassVar[dict[str, str]] = {"backbone": "encoder"}  # former name -> name (options.configure)

    encoder: str | None = "efficientnet-lite0"
    """The pretrained trunk: an encoder spec (efficientnet-lite0, a toolkit checkpoint, torchscript:FILE,
    hf:FOLDER, package.module:factory), none for the small CNN (-o architecture) trained from scratch, or features
    when the datasets already hold features (a linear fact head on them). Its former name, backbone, is still
    taken, with a note."""
    finetune: str = "frozen"
    """How the trunk trains: frozen (not at all: its features are computed once per image and cached), partial
    (the stages after frozen_groups) or full."""
    frozen_groups: int | None = None
    """The trunk stages frozen from the input side with finetune=partial (unset: the authors' layout)."""
    lr_multipliers: list[float] | str | None = None
    """Learning-rate multipliers of the shared stages, the S branch, the P/O branch and the new layers, as a list
    or as commas (unset: 1,1,2,10, as the authors')."""
    head_lr_multiplier: float | None = None
    """Not used by the fact model: its new layers take the 4th of lr_multipliers."""
    branch_from: str | None = None
    """The first trunk stage copied into each branch (unset: the authors' layout; none shares the whole trunk)."""
    epochs: int = 200
    """The most epochs on each task (with converge, training stops earlier once the loss has converged)."""
    lr: float = 0.003
    weight_decay: float = 5e-4
    resolution: int | None = None
    """The side, in pixels, images are resized to (unset: the task's)."""
    hidden: int = 512
    """The width of each branch's new hidden layer on a shared trunk (and of the small CNN's P/O branch)."""
    joint: bool = False
    """Retrain from scratch on all the data seen so far at each task (after the last task: one model on all of
    it)."""
    augment: bool = False
    converge: bool = True
    """Train each task until its loss converges (epochs is the cap), every method alike."""
    converge_tol: float = 0.01
    """The relative improvement of the loss below which it has converged."""
    converge_window: int = 3
    """The epochs over which the loss's improvement is measured."""

    def __post_init__(self) -> None:
        if self.encoder is not None and str(self.encoder).lower() == NO_ENCODER:
            object.__setattr__(self, "encoder", None)
        super().__post_init__()  # checks the encoder spec: unknown names and missing files fail before any training
        if self.hidden < 1:
            raise ValueError(f"hidden must be >= 1, got {self.hidden}")
        self.convergence()  # checks tol and window
        if self.trunk_spec is not None:
            if self.head_lr_multiplier is not None:
                raise ValueError("the fact model's new layers take the 4th of -o lr_multipliers (shared,S,P/O,new)")
        elif self.finetune != "frozen" or self.frozen_groups or self.lr_multipliers or self.branch_from:
            raise ValueError(
                "-o finetune, frozen_groups, lr_multipliers and branch_from set how the pretrained trunk trains: "
                "give -o encoder=SPEC (encoder=none is the small CNN trained from scratch)"
            )
        if self.joint and (self.penalty != "none" or self.init != "previous" or self.train_on != "bucket"):
            raise ValueError("joint trains from scratch on every item seen so far: leave penalty, init, train_on")

    @property
    def trunk_spec(self) -> str | None:
        """The pretrained trunk's encoder spec; None for the small CNN (encoder=none) or given features."""
        return None if self.encoder is None or self.encoder == FEATURES else self.encoder

    @property
    def linear(self) -> bool:
        """True when the datasets already hold features (encoder=features): a linear fact head on them."""
        return self.encoder == FEATURES

    @property
    def trunk_frozen(self) -> bool:
        return self.trunk_spec is not None and self.finetune == "frozen"

    def convergence(self) -> Convergence | None:
        return Convergence(self.converge_tol, self.converge_window) if self.converge else None


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
        if config is None and options.get("frozen_groups") and "finetune" not in options:
            options["finetune"] = "partial"  # frozen_groups alone means a partial fine-tune
        super().__init__(config, **options)
        self._trunks: dict[int | None, Encoder] = {}
        cfg = self.config
        if cfg.trunk_spec is not None and not cfg.trunk_frozen:
            self.layout()  # unknown stage names and impossible layouts fail before any training
        if cfg.lr_multipliers is not None:
            self.multipliers()

    def __getstate__(self) -> dict:
        return {**super().__getstate__(), "_trunks": {}}  # reloads from its spec

    def trunk(self, resolution: int | None) -> Encoder:
        """The `encoder` (the trunk) on the CPU, frozen, at `resolution` without a centre crop (fact images keep their
        whole composition); loaded once per learner object and side."""
        if resolution not in self._trunks:
            encoder = load_encoder(self.config.trunk_spec, resolution=resolution).to("cpu")
            p = encoder.preprocessing
            encoder.preprocessing = type(p)(p.resolution, 1.0, p.mean, p.std)
            self._trunks[resolution] = encoder
        return self._trunks[resolution]

    def layout(self) -> tuple[int, int] | None:
        """(frozen stages, first branch stage) of the branched model; None when the trunk is shared whole."""
        cfg = self.config
        if cfg.branch_from is not None and str(cfg.branch_from).lower() == BRANCH_NONE:
            return None
        names = stage_names(self.trunk(None))
        known = any(stage in names for stage in DEFAULT_LAYOUT)
        default_frozen = default_layout(names)[0] if known else 0
        if cfg.branch_from is None:
            branch = default_layout(names)[1]  # a ValueError asking for -o branch_from where there is no default
        else:
            branch = stage_index(names, str(cfg.branch_from), "branch_from")
        if cfg.finetune == "full":
            frozen = 0
        else:
            frozen = int(cfg.frozen_groups) if cfg.frozen_groups is not None else min(default_frozen, branch)
        if not 0 <= frozen <= branch:
            raise ValueError(
                f"-o frozen_groups={frozen} must not pass -o branch_from={names[branch]} (stage {branch} of "
                f"{', '.join(names)}): frozen stages are shared"
            )
        return frozen, branch

    def multipliers(self) -> tuple[float, ...]:
        values = parse_multipliers(self.config.lr_multipliers)
        if values is not None and len(values) != 4:
            raise ValueError(
                f"-o lr_multipliers needs 4 values for the fact model (shared, S branch, P/O branch, new layers), "
                f"e.g. 1,1,2,10; got {self.config.lr_multipliers}"
            )
        return AUTHORS_MULTIPLIERS if values is None else values

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

    # ---- items and models ----------------------------------------------------------------------------------

    def _items(self, dataset, what: str) -> tuple[np.ndarray, float]:
        """Images, or with a frozen trunk its features (computed once per image, cached), and the FLOPs spent."""
        items, flops = super()._items(dataset, what)
        if not self.config.trunk_frozen:
            return items, flops
        trunk = self.trunk(self._resolution(materialize(dataset).task))
        return self._encode(trunk, items), self._encoder_forward_flops(trunk, items.shape[1:]) * len(items)

    def _fact_model(self, dim: int, input_shape: tuple[int, ...], seed: int, resolution: int | None) -> nn.Module:
        """A seeded fact model on the current accelerator."""
        cfg = self.config
        if cfg.linear:
            return current_accelerator().place(initialise(FactHead(int(input_shape[0]), dim, cfg.hidden), seed))
        if cfg.trunk_frozen:
            return current_accelerator().place(initialise(BranchHeads(int(input_shape[0]), dim, cfg.hidden), seed))
        if cfg.trunk_spec is not None:
            layout, trunk = self.layout(), self.trunk(resolution)
            if layout is None:
                head = initialise(BranchHeads(trunk.feature_dim, dim, cfg.hidden), derive_seed(seed, 0))
                model = EncoderFactModel(trunk, head)
                if cfg.finetune == "partial":
                    freeze_groups(model.backbone, int(cfg.frozen_groups or 0))
                return current_accelerator().place(model)
            model = BranchedFactModel(trunk, dim, frozen=layout[0], branch_from=layout[1])
            torch.manual_seed(derive_seed(seed, 0))  # the new last layers; the branches start pretrained
            for layer in (model.subject, model.predicate_object):
                layer.reset_parameters()
            return current_accelerator().place(model)
        model = make_model(cfg.architecture, 2, seed=seed)
        model.head = initialise(FactHead(model.backbone.out_features, dim, cfg.hidden), derive_seed(seed, 0))
        return current_accelerator().place(model)

    def _model(self, state: dict[str, Any]) -> nn.Module:
        model = self._fact_model(state["fact_dim"], state["input_shape"], 0, state["resolution"])
        model.load_state_dict(state["model"])
        return model

    def _param_groups(self, model: nn.Module) -> list[dict] | None:
        cfg = self.config
        if cfg.trunk_spec is None:
            return None  # the small CNN: every parameter at lr
        return branch_param_groups(model, cfg.lr, cfg.weight_decay, self.multipliers(), AUTHORS_BIAS_MULTIPLIER)

    def _max_lr(self) -> float:
        if self.config.trunk_spec is None:
            return super()._max_lr()
        return self.config.lr * max(self.multipliers()) * AUTHORS_BIAS_MULTIPLIER

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
        features = cfg.linear or cfg.trunk_frozen
        resolution = None if features else self._resolution(task)
        seen_items, seen_labels = state["seen_items"], state["seen_labels"]
        if cfg.joint:
            if seen_items is not None:
                items, labels = np.concatenate([seen_items, items]), np.concatenate([seen_labels, labels])
            order = np.argsort(labels, kind="stable")  # canonical: by fact, then arrival within the fact
            items, labels = items[order], labels[order]
            seen_items, seen_labels = items, labels
        init_seed = derive_seed(seed, event.task_index, _INIT)
        if cfg.joint or cfg.init == "scratch" or state["model"] is None:
            model = self._fact_model(targets.shape[2], items.shape[1:], init_seed, resolution)
        else:
            model = self._model(state)
        term = self._penalty(state, model)
        term.start(model)
        train_seed = derive_seed(seed, event.task_index, _TRAIN)
        fit = self._fit(
            model,
            items,
            labels,
            train_seed,
            resolution,
            term,
            flip=False,
            data_loss=self._loss,
            param_groups=self._param_groups(model),
            augment=cfg.augment and not features,
            convergence=cfg.convergence(),
        )  # no flip: it would swap left and right

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
        resources = Resources(
            train_flops=float(flops),
            peak_parameters=int(held),
            train_steps=fit.steps,
            train_losses=tuple(fit.epoch_losses),
            stopped=fit.stopped,
        )
        return new_state, resources

    def _scoring_model(self, task: TaskKey, items: np.ndarray, state: dict[str, Any]) -> tuple[nn.Module, Any]:
        """(the model that embeds `items`, its input resolution): the trained one, or before any training the
        seeded initial model, as at the start of task 0."""
        if state["model"] is not None:
            return self._model(state), state["resolution"]
        cfg = self.config
        resolution = None if cfg.linear or cfg.trunk_frozen else self._resolution(task)
        dim = fact_space(task)[0].shape[2]
        return self._fact_model(dim, items.shape[1:], derive_seed(state["seed"], 0, _INIT), resolution), resolution

    def predict(self, event: PredictEvent, state: dict[str, Any]) -> np.ndarray:
        """Cosine similarity [N, C] of each image's embedding with every fact of the stream."""
        task = event.task
        self._check_label_space(task, state)
        targets, _ = fact_space(task)
        items, _ = self._items(event.dataset, f"the {event.split} split")
        model, resolution = self._scoring_model(task, items, state)
        embeddings = predict_items(model, items, self.config.eval_batch_size, resolution=resolution)
        return cosine_scores(embeddings, targets.reshape(len(targets), -1))

    def predict_flops(self, event: PredictEvent, state: dict[str, Any]) -> float:
        """Forward FLOPs of `predict`: the frozen trunk's (when its features are computed) and the model's per item,
        plus the cosine scores against every fact (2 x D per fact and item)."""
        cfg, task = self.config, event.task
        data = materialize(event.dataset)
        items = data.images[:1]
        encode = 0.0
        if cfg.trunk_frozen:  # FLOPs depend on shapes only: a zero feature row stands for the trunk's output
            trunk = self.trunk(self._resolution(task))
            encode = self._encoder_forward_flops(trunk, data.image_shape)
            items = np.zeros((1, trunk.feature_dim), np.float32)
        elif cfg.linear:
            dim = data.image_shape[0]  # the given features (encoder=features)
            items = np.zeros((1, dim), np.float32)
        model, resolution = self._scoring_model(task, items, state)
        x = model_inputs(items, channels=int(getattr(model, "in_channels", 3)), resolution=resolution)
        forward = count_inference_flops(model, current_accelerator().batch(x))
        scoring = 2.0 * fact_space(task)[0][0].size * task.num_classes
        return (encode + forward + scoring) * len(data)

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
