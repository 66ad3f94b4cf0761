"""Continual learners for temporal streams over one fixed label space (docs/protocols/clear.md#methods).

Every bucket is a task with the same classes; after each bucket the learner predicts every bucket. Two
regimes: a CNN trained with SGD (the paper's supervised baselines; `encoder` None), or a frozen encoder
plus a trainable linear head (`encoder` set; the paper's "linear" regime, which dominates). The methods are
combinations of options: where training starts (`init`), what it trains on (`train_on`: the bucket, the
bucket plus a replay buffer, or the buffer only), the buffer's policy, and a regulariser (`penalty`).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from lifelong.core.datasets import Dataset
from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.core.resources import Resources
from lifelong.core.tasks import TaskKey
from lifelong.learners.buffers import ReplayBuffer
from lifelong.learners.continual_config import FEATURES, ContinualConfig
from lifelong.learners.options import configure
from lifelong.learners.penalties import EWC, MAS, SI, ItemLoss, LwF, Term
from lifelong.training import array_feature_cache, encoders, feature_cache
from lifelong.training.continual_loop import model_inputs, predict_items, train_continual
from lifelong.training.devices import cpu_tensors, current_accelerator
from lifelong.training.flops import architecture_forward_flops
from lifelong.training.loop import derive_seed, predict_scores
from lifelong.training.models import count_parameters, initialise, make_model
from lifelong.training.recipe import materialize

# Stream tags for derive_seed(seed, task_index, tag)
_INIT, _TRAIN, _BUFFER = 1, 2, 3
_ENCODED_CACHE = 32  # feature arrays kept per learner (CLEAR: 10 evaluation splits + the training sets)


class ContinualLearner:
    """Fine-tunes one model over a fixed-label-space stream (the options select the method)."""

    name = "continual"
    config_class: ClassVar[type[ContinualConfig]] = ContinualConfig

    def __init__(self, config: ContinualConfig | None = None, **options: Any) -> None:
        self.config = configure(self.config_class, config, options, type(self).__name__)  # type: ignore[arg-type]
        self._encoder: nn.Module | None = None
        self._encoder_flops: dict[tuple[int, ...], float] = {}
        self._encoded: OrderedDict[bytes, np.ndarray] = OrderedDict()  # frozen encoder: features by item digest
        self._identities: dict[str, dict[str, Any]] = {}  # the encoder's feature-cache identity by precision

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config})"

    def __getstate__(self) -> dict:
        # the encoder reloads from its spec
        return {**self.__dict__, "_encoder": None, "_encoded": OrderedDict(), "_identities": {}}

    # ---- state -------------------------------------------------------------------------------------------

    def init(self, seed: int) -> dict[str, Any]:
        """Initial state: the seed, no model, an empty buffer (if any), nothing kept by the penalty."""
        if not isinstance(seed, int | np.integer) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        return {
            "seed": int(seed),
            "task_uid": None,
            "task_index": None,
            "label_space": None,
            "model": None,
            "input_shape": None,
            "resolution": None,
            "buffer": self.config.empty_buffer(),
            "penalty": None,
        }

    def check_tasks(self, tasks: Sequence[TaskKey]) -> None:
        """Before any training: every task multi-class over the first task's label space (else a clear error)."""
        state: dict[str, Any] = {"label_space": None}
        for task in tasks:
            self._check_label_space(task, state)
            if state["label_space"] is None:
                state["label_space"] = _label_space(task)

    def _check_label_space(self, task: TaskKey, state: dict[str, Any]) -> None:
        if task.is_multi_label:
            raise ValueError(
                f"{self.name}: task {task.uid!r} is multi-label; these learners need multi-class tasks over one "
                "fixed label space (a domain-incremental stream such as clear-*)"
            )
        space = state.get("label_space")
        if space is not None and (space["num_classes"], space["class_names"]) != (task.num_classes, task.class_names):
            raise ValueError(
                f"{self.name}: task {task.uid} ({task.num_classes} classes: {_names(task.class_names)}) does not "
                f"share the label space of task {space['uid']} ({space['num_classes']} classes: "
                f"{_names(space['class_names'])}); these learners need a fixed label space (a domain-incremental "
                "stream such as clear-*)"
            )

    # ---- inputs --------------------------------------------------------------------------------------------

    def encoder(self) -> nn.Module:
        """The frozen encoder of `encoder` (loaded once per learner object)."""
        if self._encoder is None:
            encoder = encoders.load_encoder(self.config.encoder)
            encoder.eval()
            encoder.requires_grad_(False)
            self._encoder = encoder
        return self._encoder

    def _items(self, dataset: Dataset, what: str) -> tuple[np.ndarray, float]:
        """(items of `dataset` for the model: images, or features in the linear regime; encoder FLOPs spent)."""
        data = materialize(dataset)
        items, is_features = data.images, data.is_features
        cfg = self.config
        if not cfg.linear:
            if is_features:
                raise ValueError(
                    f"{self.name}: {what} of task {data.task.uid!r} holds pre-extracted features {items.shape}, "
                    "but the CNN regime trains on images; pass -o encoder=features to train a linear head on them"
                )
            return items, 0.0
        if cfg.encoder == FEATURES:
            if not is_features:
                raise ValueError(
                    f"{self.name}: encoder='features' needs datasets of float32 [N, D] features, but {what} of task "
                    f"{data.task.uid!r} holds {items.dtype} {items.shape}; give an encoder spec to encode images"
                )
            return items, 0.0
        if is_features:
            raise ValueError(
                f"{self.name}: {what} of task {data.task.uid!r} already holds features; use encoder='features'"
            )
        encoder = self.encoder()
        return self._encode(encoder, items), self._encoder_forward_flops(encoder, items.shape[1:]) * len(items)

    def _encode(self, encoder: nn.Module, items: np.ndarray) -> np.ndarray:
        """Features of `items`; the encoder is frozen, so features of data seen recently (every bucket's evaluation
        split is predicted after each training event) are reused, keyed by a digest of the items."""

        key = hashlib.blake2b(np.ascontiguousarray(items).data, digest_size=16).digest() + repr(items.shape).encode()
        if key in self._encoded:
            self._encoded.move_to_end(key)
            return self._encoded[key]
        features = self._cached_encode(encoder, items)
        features.setflags(write=False)  # shared by later calls: nobody may change it in place
        self._encoded[key] = features
        while len(self._encoded) > _ENCODED_CACHE:
            self._encoded.popitem(last=False)
        return features

    def _cached_encode(self, encoder: nn.Module, items: np.ndarray) -> np.ndarray:
        """Features of `items` through the shared feature cache (`lifelong.training.feature_cache`, keyed by the
        encoder's weights, preprocessing and forward precision, and the items' bytes): another run or seed of the
        same encoder on the same buckets reads them, memory-mapped, instead of encoding again."""
        precision = feature_cache.forward_precision()
        # an encoder that crops (ImageNet models: R / (R + 32) of the shorter side) prepares images its own way;
        # the others are centre-resized as before (same features, same cache entries)
        own = getattr(getattr(encoder, "preprocessing", None), "crop_fraction", 1.0) < 1.0
        if precision not in self._identities:
            transform = f"Encoder.prepare: {encoder.preprocessing.describe()}" if own else feature_cache.ARRAY_TRANSFORM
            preprocessing = {"resolution": encoder.resolution, "transform": transform}
            self._identities[precision] = feature_cache.encoder_identity(
                encoder, precision=precision, preprocessing=preprocessing
            )
        batch_size = self.config.eval_batch_size

        def encode(block: np.ndarray) -> np.ndarray:
            if own:
                return np.asarray(encoders.encode_images(encoder, list(block), batch_size=batch_size), np.float32)
            return np.asarray(encoders.encode(encoder, block, batch_size=batch_size), dtype=np.float32)

        return array_feature_cache.cached_array_features(encode, items, self._identities[precision])

    def _encoder_forward_flops(self, encoder: nn.Module, image_shape: tuple[int, ...]) -> float:
        """Forward FLOPs of the encoder per image of `image_shape` (counted once per shape)."""

        key = tuple(image_shape)
        if key not in self._encoder_flops:
            self._encoder_flops[key] = encoders.encoder_flops(encoder, key)
        return self._encoder_flops[key]

    def _resolution(self, task: TaskKey) -> int | None:
        if self.config.resolution is not None:
            return self.config.resolution
        value = task.metadata.get("resolution")
        return None if value is None else int(value)

    # ---- models --------------------------------------------------------------------------------------------

    def _new_model(self, num_classes: int, input_shape: tuple[int, ...], seed: int) -> nn.Module:
        """A seeded model on the current accelerator."""
        if self.config.linear:
            model = initialise(nn.Linear(int(input_shape[0]), num_classes), seed)
        else:
            model = make_model(self.config.architecture, num_classes, seed=seed)
        return current_accelerator().place(model)

    def _model(self, state: dict[str, Any]) -> nn.Module:
        """The state's model with its weights (kept on the CPU in the state), on the current accelerator."""
        space = state["label_space"]
        model = self._new_model(space["num_classes"], state["input_shape"], 0)
        model.load_state_dict(state["model"])
        return model

    # ---- protocol ------------------------------------------------------------------------------------------

    def train(self, event: TrainEvent, state: dict[str, Any]) -> tuple[dict[str, Any], Resources]:
        """Train on the bucket (`event.train_and_dev`), the buffer, or both; update the buffer and the penalty."""
        cfg, task = self.config, event.task
        self._check_label_space(task, state)
        seed = state["seed"]
        data = materialize(event.train_and_dev)
        items, encode_flops = self._items(data, "the training data")
        labels = data.labels()
        previous_shape = state["input_shape"]
        if cfg.linear and previous_shape is not None and tuple(items.shape[1:]) != tuple(previous_shape):
            raise ValueError(
                f"{self.name}: task {task.uid!r} gives features of shape {items.shape[1:]}, the earlier buckets "
                f"{tuple(previous_shape)}; every bucket must come from the same encoder"
            )
        resolution = None if cfg.linear else self._resolution(task)

        if cfg.init == "previous" and state["model"] is not None:
            model = self._model(state)
        else:
            model = self._new_model(task.num_classes, items.shape[1:], derive_seed(seed, event.task_index, _INIT))

        buffer: ReplayBuffer | None = state["buffer"]
        buffer_rng = np.random.default_rng(derive_seed(seed, event.task_index, _BUFFER))
        replay = None
        if cfg.train_on == "bucket":
            train_items, train_labels = items, labels
        elif cfg.train_on == "buffer":
            buffer = buffer.update(items, labels, event.task_index, buffer_rng)
            train_items, train_labels = buffer.items, buffer.labels
        elif cfg.replay_mixing == "batch":  # bucket batches, each with a batch of the buffer as it was before
            train_items, train_labels = items, labels
            if buffer is not None and len(buffer):
                replay = (buffer.items, buffer.labels)
            buffer = buffer.update(items, labels, event.task_index, buffer_rng)
        else:  # bucket + the buffer as it was before this bucket
            if buffer is not None and len(buffer):
                train_items = np.concatenate([items, buffer.items])
                train_labels = np.concatenate([labels, buffer.labels])
            else:
                train_items, train_labels = items, labels
            buffer = buffer.update(items, labels, event.task_index, buffer_rng)

        term = self._penalty(state, model)
        term.start(model)
        fit = self._fit(
            model,
            train_items,
            train_labels,
            derive_seed(seed, event.task_index, _TRAIN),
            resolution,
            term,
            flip=task.domain.lower() not in cfg.no_flip_domains,
            replay=replay,
            augment=None if task.metadata.get("spatial", True) else False,  # permuted pixels: nothing to crop
        )

        def inputs(x: np.ndarray) -> torch.Tensor:
            return model_inputs(x, channels=int(getattr(model, "in_channels", 3)), resolution=resolution)

        kept, penalty_flops = term.finish(model, items, labels, inputs)
        if cfg.train_on == "bucket" and buffer is not None:  # a memory never trained on (A-GEM): filled after training
            buffer = buffer.update(items, labels, event.task_index, buffer_rng)
        held = count_parameters(model) + term.held_parameters()
        if cfg.linear and cfg.encoder != FEATURES:
            held += count_parameters(self.encoder())
        new_state = {
            "seed": seed,
            "task_uid": task.uid,
            "task_index": event.task_index,
            "label_space": _label_space(task),
            "model": cpu_tensors(model.state_dict()),
            "input_shape": tuple(int(s) for s in items.shape[1:]),
            "resolution": resolution,
            "buffer": buffer,
            "penalty": kept,
        }
        flops = fit.train_flops + penalty_flops + (encode_flops if cfg.count_encoder_flops else 0.0)
        return new_state, Resources(train_flops=float(flops), peak_parameters=int(held))

    def _max_lr(self) -> float:
        """The largest learning rate any parameter trains at (the penalties' curvature cap is its inverse)."""
        cfg = self.config
        return cfg.linear_lr if cfg.linear else cfg.lr

    def _penalty(self, state: dict[str, Any], model: nn.Module) -> Term:
        cfg = self.config
        cap = 1.0 / self._max_lr() if cfg.curvature_cap else None  # keeps SGD on the quadratic penalty stable
        if cfg.penalty == "ewc":
            return EWC(
                state["penalty"],
                cfg.ewc_lambda,
                cfg.ewc_decay,
                max_curvature=cap,
                loss=self._item_loss(),
                fisher=cfg.ewc_fisher,
                batch_size=cfg.ewc_fisher_batch_size or self._batch_size(),
            )
        if cfg.penalty == "si":
            return SI(state["penalty"], cfg.si_c, cfg.si_xi, max_curvature=cap)
        if cfg.penalty == "mas":
            return MAS(state["penalty"], cfg.mas_lambda, max_curvature=cap)
        if cfg.penalty == "lwf":
            teacher = self._model(state) if state["model"] is not None else None
            return LwF(teacher, cfg.lwf_alpha, cfg.lwf_temperature)
        return Term()

    def _fit(
        self,
        model,
        items,
        labels,
        seed,
        resolution,
        term: Term,
        flip: bool,
        data_loss=None,
        param_groups=None,
        augment: bool | None = None,
        convergence=None,
        replay=None,
    ):
        """train_continual with this config's recipe (CNN or linear regime) and the penalty `term` (`param_groups`:
        the optimizer's groups, as train_continual takes them; `augment` None: the recipe's; `convergence`: a
        `training.convergence.Convergence`, epochs then being a cap; `replay`: buffer (items, labels) to append a
        mini-batch of to every step, replay_mixing=batch)."""
        cfg = self.config
        return train_continual(
            model,
            items,
            labels,
            epochs=cfg.linear_epochs if cfg.linear else cfg.epochs,
            batch_size=self._batch_size(),
            lr=cfg.linear_lr if cfg.linear else cfg.lr,
            weight_decay=cfg.linear_weight_decay if cfg.linear else cfg.weight_decay,
            momentum=cfg.momentum,
            lr_step=cfg.lr_step,
            seed=seed,
            augment=self._augments(augment),
            flip=flip,
            resolution=resolution,
            penalty=None if term.name == "none" else term,
            step_hook=term.step_hook,
            data_loss=data_loss,
            param_groups=param_groups,
            convergence=convergence,
            replay=replay,
            replay_batch_size=cfg.replay_batch_size,
        )

    def _augments(self, augment: bool | None) -> bool:
        """Whether a fit augments: `augment` when given (a task's own rule), else the recipe's (never linear)."""
        return (self.config.augment and not self.config.linear) if augment is None else augment

    def _batch_size(self) -> int:
        """Items per SGD step in this regime."""
        return self.config.linear_batch_size if self.config.linear else self.config.batch_size

    def _item_loss(self) -> ItemLoss | None:
        """The data loss EWC's Fisher uses (None: the cross-entropy of the logits)."""
        return None

    def _predict_model(self, event: PredictEvent, state: dict[str, Any], items: np.ndarray) -> nn.Module:
        self._check_label_space(event.task, state)
        if state["model"] is not None:
            return self._model(state)
        # before any training: the seeded initial model (deterministic), as at the start of bucket 0
        return self._new_model(event.task.num_classes, items.shape[1:], derive_seed(state["seed"], 0, _INIT))

    def predict(self, event: PredictEvent, state: dict[str, Any]) -> np.ndarray:
        """Logits [N, C] of every item of `event.dataset` in stored order (any bucket: the label space is fixed)."""
        cfg = self.config
        if cfg.linear:
            items, _ = self._items(event.dataset, f"the {event.split} split")
            return predict_items(self._predict_model(event, state, items), items, cfg.eval_batch_size)
        data = materialize(event.dataset)
        self._items(data, f"the {event.split} split")  # refuses features
        model = self._predict_model(event, state, data.images)
        resolution = state["resolution"] if state["model"] is not None else self._resolution(event.task)
        return predict_scores(model, data, event.task.kind, cfg.eval_batch_size, resolution=resolution)

    def predict_flops(self, event: PredictEvent, state: dict[str, Any]) -> float:
        """FLOPs of `predict`: the model's (and in the linear regime the encoder's) forward FLOPs per item x items."""
        cfg = self.config
        data = materialize(event.dataset)
        shape = data.image_shape
        if cfg.linear:
            dim = state["input_shape"][0] if state["input_shape"] is not None else None
            encoder = 0.0 if cfg.encoder == FEATURES else self._encoder_forward_flops(self.encoder(), shape)
            dim = dim if dim is not None else (shape[0] if cfg.encoder == FEATURES else self.encoder().feature_dim)
            return (encoder + 2.0 * dim * event.task.num_classes) * len(data)
        resolution = state["resolution"] if state["model"] is not None else self._resolution(event.task)
        height, width = (resolution, resolution) if resolution is not None else shape[:2]
        return architecture_forward_flops(cfg.architecture, event.task.num_classes, height, width) * len(data)


def _label_space(task: TaskKey) -> dict[str, Any]:
    return {"uid": task.uid, "num_classes": task.num_classes, "class_names": task.class_names}


def _names(class_names: Sequence[str], shown: int = 6) -> str:
    """Class names for a message: the first few, comma-separated, then how many more."""
    names = [str(name) for name in class_names]
    more = f", ... ({len(names) - shown} more)" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
