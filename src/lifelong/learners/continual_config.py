"""The continual learners' options (`-o KEY=VALUE`), one documented field each (`lifelong learners finetune`).

Kept apart from the learner (`continual`) so that the options and their help read on their own.
"""

from __future__ import annotations

from dataclasses import dataclass

from lifelong.learners.buffers import POLICIES, ReplayBuffer
from lifelong.learners.penalties import PENALTIES
from lifelong.training import encoders
from lifelong.training.continual_loop import step_lr
from lifelong.training.models import check_architecture

FEATURES = "features"  # encoder value: the datasets already hold pre-extracted features
TRAIN_ON = ("bucket", "bucket+buffer", "buffer")
REPLAY_MIXING = ("concat", "batch")
EWC_FISHER = ("item", "batch")
INITS = ("previous", "scratch")


@dataclass(frozen=True)
class ContinualConfig:
    """Options of the continual learners; defaults give plain fine-tuning of a CNN.

    Two regimes: a CNN trained with SGD (encoder unset), or a linear head on an encoder's frozen features (encoder
    set). The penalties' strengths come from a one-seed sweep on clear-mini (linear regime, best Acc: ewc_lambda 1 of
    1/10/100, si_c 0.01 of 0.001/0.01/0.1, lwf_alpha 1 of 0.1/0.3/1); the curvature of the EWC and SI quadratics is
    capped at 1 / lr per weight, so that SGD on them cannot diverge.
    """

    architecture: str = "resnet_mini"
    """The network trained when no encoder is set: resnet_mini, resnet18, resnet34, or package.module:factory, a
    callable given num_classes and in_channels (keywords, those it accepts) returning a torch module that maps
    images [N, C, H, W] to class scores [N, num_classes]."""
    resolution: int | None = None
    """The side, in pixels, images are resized to (unset: the task's own resolution, else the native size)."""
    epochs: int = 5
    """Epochs of SGD on each bucket or task (5 fits a CPU budget; the paper trained ResNet18 for far longer)."""
    batch_size: int = 64
    """Images per SGD step."""
    lr: float = 0.1
    """The learning rate of SGD, divided by 10 after the lr_step fraction of the epochs."""
    weight_decay: float = 1e-5
    """The weight decay of SGD."""
    momentum: float = 0.9
    """SGD momentum, in [0, 1)."""
    lr_step: float = 0.6
    """The fraction of the epochs, in (0, 1], after which the learning rate is divided by 10 (1: never)."""
    augment: bool = True
    """Augment the training images: a random resized crop and a random mirror (none in the linear regime, nor on
    tasks whose pixels have no spatial layout: permuted-mnist's)."""
    no_flip_domains: tuple[str, ...] = ("ocr",)
    """Task domains whose images are never mirrored, since mirroring can change their class (case-insensitive)."""
    init: str = "previous"
    """Where each bucket's training starts: previous (the last bucket's model, its head kept: the label space is
    fixed) or scratch (fresh random weights)."""
    train_on: str = "bucket"
    """What each bucket trains on: bucket, bucket+buffer or buffer (the buffer updated with the bucket first)."""
    buffer: str = "none"
    """The replay buffer's policy: none, reservoir, biased, class-balanced (GDumb's greedy sampler) or
    class-reservoir (equal class shares, each a uniform sample of its class so far: Avalanche's GDumb)."""
    buffer_size: int | None = None
    """The items the buffer holds (unset: as many as the first bucket)."""
    replay_mixing: str = "concat"
    """How train_on=bucket+buffer mixes the two: concat (the bucket and the buffer shuffled together, an epoch over
    both) or batch (each step one mini-batch of the bucket plus one of replay_batch_size buffer items, the buffer
    cycling; an epoch over the bucket alone: Avalanche's Replay)."""
    replay_batch_size: int | None = None
    """Buffer items per step with replay_mixing=batch (unset: batch_size)."""
    alpha: float | None = None
    """The biased buffer's fixed selection factor: a new item is kept with probability min(1, alpha k / n), k the
    buffer's size and n the items seen (unset: 1; give alpha or c, not both)."""
    c: float | None = None
    """The biased buffer's dynamic factor, in (0, 1]: every new item is kept with probability c (1 keeps only the
    newest bucket when buckets hold as many items as the buffer)."""
    penalty: str = "none"
    """The regulariser against forgetting: none, ewc, si, mas or lwf (each with its own strength option)."""
    ewc_lambda: float = 1.0
    """The strength of the EWC penalty (penalty=ewc)."""
    ewc_fisher: str = "item"
    """EWC's Fisher estimate: item (the mean over items of the squared per-item gradient: the EWC paper's) or batch
    (the mean over mini-batches of the squared gradient of the batch's mean loss: Avalanche's, which the CLEAR paper
    ran; one backward a batch, and smaller, so ewc_lambda must be converted: docs/clear.md)."""
    ewc_fisher_batch_size: int | None = None
    """Items per mini-batch of ewc_fisher=batch (unset: batch_size)."""
    ewc_decay: float = 1.0
    """How much of the previous Fisher information online EWC keeps at each new bucket (1: all of it)."""
    si_c: float = 0.01
    """The strength of the Synaptic Intelligence penalty (penalty=si)."""
    si_xi: float = 1e-3
    """Synaptic Intelligence's damping, a positive number added to each weight's squared change."""
    mas_lambda: float = 1.0
    """The strength of the Memory Aware Synapses penalty (penalty=mas), its importance from the squared output
    norm."""
    lwf_alpha: float = 1.0
    """The weight of Learning without Forgetting's distillation from the previous bucket's model (penalty=lwf)."""
    lwf_temperature: float = 2.0
    """The softmax temperature of Learning without Forgetting's distillation, a positive number."""
    curvature_cap: bool = True
    """Cap the curvature of the EWC, SI and MAS quadratics (lambda F, 2 si_c Omega, 2 mas_lambda Omega) at 1 / lr per
    weight, so that SGD on them cannot diverge; false: uncapped, as in the papers and Avalanche (a strength too large
    for the learning rate then makes those weights oscillate and training diverge)."""
    encoder: str | None = None
    """Switches to the linear regime: features (the datasets already hold float32 features) or an encoder spec
    (a model name, a toolkit checkpoint, torchscript:FILE, hf:FOLDER), frozen under a linear head; buffers then
    hold features."""
    linear_lr: float = 1.0
    """The linear head's learning rate (the paper: 1.0)."""
    linear_epochs: int = 30
    """Epochs of the linear head on each bucket (the paper: 100)."""
    linear_batch_size: int = 256
    """Items per step of the linear head (the paper: 256)."""
    linear_weight_decay: float = 0.0
    """The linear head's weight decay (the paper: 0)."""
    count_encoder_flops: bool = True
    """Count the encoder's forward FLOPs over the items encoded for training as training FLOPs."""
    eval_batch_size: int = 256
    """Images per batch when predicting."""

    def __post_init__(self) -> None:
        if self.resolution is not None and self.resolution < 1:
            raise ValueError(f"resolution must be a positive int or None (the task's), got {self.resolution}")
        check_architecture(self.architecture, resolution=self.resolution)
        for name in ("epochs", "batch_size", "linear_epochs", "linear_batch_size", "eval_batch_size"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("replay_batch_size", "ewc_fisher_batch_size"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or int(value) < 1):
                raise ValueError(f"{name} must be unset or >= 1, got {value!r}")
        for name in ("lr", "linear_lr", "lwf_temperature"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        for name in (
            "weight_decay",
            "linear_weight_decay",
            "ewc_lambda",
            "ewc_decay",
            "si_c",
            "mas_lambda",
            "lwf_alpha",
        ):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not 0 <= self.momentum < 1 or not self.si_xi > 0:
            raise ValueError(f"need 0 <= momentum < 1 and si_xi > 0, got momentum={self.momentum}, si_xi={self.si_xi}")
        step_lr(1, self.lr_step)  # validates lr_step
        for name, value, choices in (
            ("init", self.init, INITS),
            ("train_on", self.train_on, TRAIN_ON),
            ("buffer", self.buffer, ("none", *POLICIES)),
            ("penalty", self.penalty, PENALTIES),
            ("replay_mixing", self.replay_mixing, REPLAY_MIXING),
            ("ewc_fisher", self.ewc_fisher, EWC_FISHER),
        ):
            if value not in choices:
                raise ValueError(f"unknown {name} {value!r}; choose one of {choices}")
        if self.keeps_buffer() != (self.buffer != "none"):
            raise ValueError(
                f"train_on={self.train_on!r} with buffer={self.buffer!r}: training on a buffer needs a buffer "
                "policy, and a buffer is only kept when training uses it (train_on 'bucket+buffer' or 'buffer')"
            )
        if self.replay_mixing == "batch" and self.train_on != "bucket+buffer":
            raise ValueError(
                f"replay_mixing=batch mixes bucket and buffer mini-batches, so it needs train_on='bucket+buffer' "
                f"(the er learner); got train_on={self.train_on!r}"
            )
        if self.buffer == "none" and (self.buffer_size is not None or self.alpha is not None or self.c is not None):
            raise ValueError(f"buffer_size / alpha / c need a buffer: set buffer (one of {', '.join(POLICIES)})")
        if self.buffer != "none":
            self.empty_buffer()  # validates buffer_size, alpha, c
        if self.encoder is not None and not str(self.encoder).strip():
            raise ValueError("encoder must be None (CNN regime), 'features', or an encoder spec; got an empty string")
        if self.encoder is not None and self.encoder != FEATURES:
            encoders.check_encoder_spec(self.encoder)  # a missing encoder file fails here, before any training
        object.__setattr__(self, "no_flip_domains", tuple(d.lower() for d in self.no_flip_domains))

    @property
    def linear(self) -> bool:
        """True in the linear regime (frozen encoder or given features, trainable linear head)."""
        return self.encoder is not None

    def keeps_buffer(self) -> bool:
        """Whether the learner keeps a buffer: to train on it (`train_on`), or, in a subclass, as a memory it never
        trains on (A-GEM's; such a buffer is filled with each bucket after the bucket's training)."""
        return self.train_on != "bucket"

    def empty_buffer(self) -> ReplayBuffer | None:
        """The buffer a run starts with (None without one)."""
        if self.buffer == "none":
            return None
        return ReplayBuffer(self.buffer, capacity=self.buffer_size, alpha=self.alpha, c=self.c)
