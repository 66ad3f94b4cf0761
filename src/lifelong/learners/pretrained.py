"""Pretrained baselines of Nevis'22 (docs/protocols/nevis.md#baselines: PT, PT + FT) over a `pretrain` checkpoint.

- `pretrained` (PT): every task's backbone starts from the checkpoint's (fresh head), with Independent's recipe
  and hyper-parameter search.
- `pretrained+finetune-knn` (PT + FT): finetune-knn where the pretrained backbone is one more candidate, beside
  the past models and random initialisation (static or dynamic mode, as finetune-knn; the frozen pretrained
  backbone scores with its own features in both).

The starting point is `-o checkpoint=PATH` (a `pretrain` file, as before) or `-o encoder=SPEC`, any spec of
`lifelong.training.encoders.load_encoder` (`checkpoint` takes them too): a registered model
(`efficientnet-lite0`), a toolkit checkpoint (`pretrain`, `pretrain-ssl`, `cog pretrain`), `torchscript:FILE`,
`hf:FOLDER` or `package.module:factory`. A toolkit backbone keeps its models.py architecture; any other encoder is
fine-tuned whole (unfrozen) under a fresh linear head, its images brought to the encoder's resolution (its own
normalisation inside its forward) unless `-o resolution=N` overrides the side (e.g. 96 for 32 px images on a CPU).
Such an encoder can instead be frozen or partly frozen, with per-group learning rates: `-o finetune=frozen|partial`,
`-o frozen_groups=K`, `-o lr_multipliers=1,2,4,10,20`, `-o head_lr_multiplier=X` (`training.encoders.finetune`).

Pretraining FLOPs are not training FLOPs of the stream by default (`count_pretraining_flops=False`); set it to
add them to the first task's train_flops, so that results can be shown both ways (as the paper does). They are a
`pretrain` checkpoint's recorded FLOPs, a `pretrain-ssl` / `cog pretrain` encoder's `train_flops`, or a
registered encoder's `pretraining_flops` (EfficientNet-Lite: an ImageNet-1K estimate, see
`lifelong.training.encoders.efficientnet`); 0 for encoders that state none. The checkpoint's architecture is used
unless `architecture` is given, which must then match it.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from lifelong.core.events import TrainEvent
from lifelong.learners.finetune import (
    PRETRAINED,
    FinetuneKnnConfig,
    FinetuneKnnLearner,
    InitChoice,
    TransferLearner,
)
from lifelong.learners.independent import IndependentConfig
from lifelong.learners.options import FineTuneOptions
from lifelong.training.checkpoints import format_tag, read_torch_file
from lifelong.training.encoders import FORMAT as ENCODER_FORMAT
from lifelong.training.encoders import Encoder, EncoderCheckpoint, check_encoder_spec, load_encoder
from lifelong.training.encoders.finetune import FineTune
from lifelong.training.encoders.wrap import is_torchscript
from lifelong.training.models import ARCHITECTURES, initialise, make_model
from lifelong.training.pretrain import FORMAT as PRETRAINED_FORMAT
from lifelong.training.pretrain import load_pretrained
from lifelong.training.relatedness import BackboneState

ENCODER_PREFIX = "encoder:"  # architecture name of a foreign encoder's model: "encoder:<spec>@<side>"


@dataclass(frozen=True)
class PretrainedSource:
    """Where the pretrained learners start: a models.py architecture and its backbone weights, and the FLOPs
    that made them."""

    path: str
    architecture: str
    backbone: BackboneState
    pretraining_flops: float


class EncoderClassifier(nn.Module):
    """An unfrozen copy of an Encoder as `backbone` plus a fresh linear `head`: the models.py interface (backbone
    with `out_features`, head, features, forward) the recipe fine-tunes."""

    def __init__(self, encoder: Encoder, num_classes: int, *, seed: int | None = None) -> None:
        super().__init__()
        if num_classes < 1:
            raise ValueError(f"num_classes must be >= 1, got {num_classes}")
        self.backbone = copy.deepcopy(encoder).unfreeze().to("cpu")
        self.backbone.out_features = encoder.feature_dim
        self.head = initialise(nn.Linear(encoder.feature_dim, num_classes), seed)
        self.in_channels = encoder.in_channels
        self.num_classes = num_classes

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.backbone(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x))


def register_encoder_architecture(spec: str, encoder: Encoder) -> str:
    """Register `encoder` as the models.py architecture "encoder:<spec>@<side>" (in this process) and return the
    name; `make_model(name, num_classes, seed=...)` then builds an EncoderClassifier around a copy of it."""
    name = f"{ENCODER_PREFIX}{spec}@{encoder.resolution}"
    if name not in ARCHITECTURES:
        template = copy.deepcopy(encoder).to("cpu")

        def factory(num_classes: int, *, in_channels: int = 3, seed: int | None = None) -> EncoderClassifier:
            if in_channels != template.in_channels:
                raise ValueError(f"encoder {spec!r} takes {template.in_channels} input channels, not {in_channels}")
            return EncoderClassifier(template, num_classes, seed=seed)

        ARCHITECTURES[name] = factory
    return name


@dataclass(frozen=True)
class PretrainedOptions(FineTuneOptions):
    """Where to start (a checkpoint or an encoder: one of them is required), whether the pretraining FLOPs count
    and how an encoder is fine-tuned."""

    checkpoint: str | None = None
    """The starting point: a file written by lifelong pretrain (any encoder spec works too)."""
    encoder: str | None = None
    """The pretrained network to start from: efficientnet-lite0, a toolkit checkpoint, torchscript:FILE,
    hf:FOLDER or package.module:factory."""
    count_pretraining_flops: bool = False
    """Add the pretraining FLOPs to the first task's training FLOPs."""

    def fit_job(self, *args: Any, **kwargs: Any) -> Any:
        """The recipe's FitJob, with the fine-tuning choice when the options set one (else as before)."""
        job = super().fit_job(*args, **kwargs)  # type: ignore[misc]  (IndependentConfig's, by the MRO)
        if self.fine_tune_is_default():
            return job
        return dataclasses.replace(job, finetune=self.fine_tune_choice())


@dataclass(frozen=True)
class PretrainedConfig(PretrainedOptions, IndependentConfig):
    """The Independent recipe's options plus the starting point and its FLOPs."""


@dataclass(frozen=True)
class PretrainedFinetuneKnnConfig(PretrainedOptions, FinetuneKnnConfig):
    """finetune-knn's options plus the starting point and its FLOPs."""


def _file_format(path: str) -> str | None:
    try:
        return format_tag(read_torch_file(path, f"{path!r} is not a readable checkpoint ({{cause}})"))
    except ValueError:
        return None


def _load_source(spec: str, resolution: int | None) -> PretrainedSource:
    """The starting point named by `spec` (see the module docstring)."""
    kind = check_encoder_spec(spec)  # unknown names and missing files fail here, naming the forms
    found = _file_format(spec) if kind == "file" else None
    if found == PRETRAINED_FORMAT or (kind == "file" and found != ENCODER_FORMAT and not is_torchscript(Path(spec))):
        # a `pretrain` checkpoint, or a file that is no encoder: load_pretrained's errors say what to do
        ckpt = load_pretrained(spec)
        return PretrainedSource(str(ckpt.path), ckpt.architecture, ckpt.backbone, ckpt.pretraining_flops)
    if found == ENCODER_FORMAT:
        ckpt = EncoderCheckpoint.from_dict(read_torch_file(spec, "{cause}"))
        if ckpt.in_channels == 3:
            return PretrainedSource(spec, ckpt.architecture, dict(ckpt.backbone_state), ckpt.train_flops)
    encoder = load_encoder(spec, resolution=resolution)
    name = register_encoder_architecture(spec, encoder)
    state = {k: v.detach().to("cpu").clone() for k, v in encoder.state_dict().items()}
    return PretrainedSource(spec, name, state, float(getattr(encoder, "pretraining_flops", 0.0) or 0.0))


def _open_checkpoint(learner: TransferLearner, explicit: set[str]) -> PretrainedSource:
    """Load the learner's starting point and adopt its architecture (an explicit, different one is an error) and,
    for a foreign encoder, its resolution (unless -o resolution is given)."""
    cfg = learner.config
    if cfg.checkpoint and cfg.encoder:
        raise ValueError("give -o checkpoint=PATH or -o encoder=SPEC, not both")
    spec = cfg.encoder or cfg.checkpoint
    if not spec:
        raise ValueError(
            "the pretrained learners need -o checkpoint=PATH (`lifelong pretrain SOURCE --out PATH`) or "
            "-o encoder=SPEC (a model name such as efficientnet-lite0, hf:FOLDER, torchscript:FILE, "
            "package.module:factory)"
        )
    resolution = cfg.resolution if "resolution" in explicit else None
    source = _load_source(str(spec), resolution)
    foreign = source.architecture.startswith(ENCODER_PREFIX)
    if cfg.architecture != source.architecture:
        if "architecture" in explicit:
            raise ValueError(
                f"-o architecture={cfg.architecture} but {str(spec)!r} holds a "
                f"{'non-models.py encoder' if foreign else source.architecture + ' backbone'}; drop -o architecture"
                + ("" if foreign else " or pretrain that architecture")
            )
        learner.config = dataclasses.replace(learner.config, architecture=source.architecture)
    if foreign and cfg.executor != "local":
        raise ValueError(
            f"-o encoder={spec} is not a toolkit ResNet: its trials run in this process; drop -o executor=ray"
        )
    if foreign and "resolution" not in explicit:
        side = int(source.architecture.rsplit("@", 1)[1]) if not source.architecture.endswith("@None") else None
        learner.config = dataclasses.replace(learner.config, resolution=side)
    return source


def _check_fine_tune(learner: TransferLearner, config: Any, options: dict[str, Any]) -> FineTune | None:
    """The fine-tuning options as a FineTune (None: the defaults, a full fine-tune), checked against the encoder's
    layer groups before any training; `frozen_groups` alone (from the command line) means partial."""
    cfg = learner.config
    if cfg.fine_tune_is_default():
        return None
    choice = cfg.fine_tune_choice(explicit_mode=config is not None or "finetune" in options)
    if not cfg.architecture.startswith(ENCODER_PREFIX):
        raise ValueError(
            f"-o finetune, frozen_groups, lr_multipliers and head_lr_multiplier need an -o encoder=SPEC that is "
            f"not a toolkit ResNet; {cfg.encoder or cfg.checkpoint!r} holds a {cfg.architecture} backbone, which "
            "fine-tunes whole"
        )
    model = make_model(cfg.architecture, 2, seed=0)
    choice.param_groups(model.backbone, lr=1.0, head=model.head)  # frozen_groups, lr_multipliers vs the groups
    learner.config = dataclasses.replace(cfg, finetune=choice.mode)
    return choice


def _explicit(config: Any, options: dict[str, Any]) -> set[str]:
    if config is not None:
        return {"architecture", "resolution"}
    return {name for name in ("architecture", "resolution") if name in options}


def _pretraining_flops(learner: TransferLearner, state: dict[str, Any]) -> float:
    """The checkpoint's FLOPs on the learner's first task when counted, else 0."""
    first = state.get("task_uid") is None
    return learner.checkpoint.pretraining_flops if first and learner.config.count_pretraining_flops else 0.0


class PretrainedLearner(TransferLearner):
    """Fine-tunes every task's network from a pretrained backbone (PT); `encoder=SPEC` (or `checkpoint=`) is
    required."""

    name = "pretrained"
    config_class = PretrainedConfig
    config: PretrainedConfig

    def __init__(self, config: PretrainedConfig | None = None, **options: Any) -> None:
        super().__init__(config, **options)
        self.checkpoint = _open_checkpoint(self, _explicit(config, options))
        self.fine_tune = _check_fine_tune(self, config, options)

    def choose_init(self, event: TrainEvent, state: dict[str, Any]) -> InitChoice:
        """The checkpoint's backbone, always."""
        record = {"checkpoint": str(self.checkpoint.path)}
        extra = _pretraining_flops(self, state)
        return InitChoice(PRETRAINED, self.checkpoint.backbone, record, held_backbones=1, extra_flops=extra)


class PretrainedFinetuneKnnLearner(FinetuneKnnLearner):
    """finetune-knn with the pretrained backbone as one more candidate (PT + FT); `encoder=SPEC` (or `checkpoint=`)
    is required."""

    name = "pretrained+finetune-knn"
    config_class = PretrainedFinetuneKnnConfig
    config: PretrainedFinetuneKnnConfig

    def __init__(self, config: PretrainedFinetuneKnnConfig | None = None, **options: Any) -> None:
        super().__init__(config, **options)
        self.checkpoint = _open_checkpoint(self, _explicit(config, options))
        self.fine_tune = _check_fine_tune(self, config, options)

    def extra_candidates(self) -> dict[str, BackboneState]:
        """The pretrained backbone, named PRETRAINED."""
        return {PRETRAINED: self.checkpoint.backbone}

    def choose_init(self, event: TrainEvent, state: dict[str, Any]) -> InitChoice:
        """finetune-knn's choice among past models, the pretrained backbone and random init."""
        choice = super().choose_init(event, state)
        return dataclasses.replace(choice, extra_flops=choice.extra_flops + _pretraining_flops(self, state))
