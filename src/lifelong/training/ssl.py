"""Self-supervised pretraining: SimCLR-style contrastive learning sized for a CPU
(docs/protocols/clear.md#training-regimes).

The paper pretrains MoCo v2 on the unlabeled bucket 0 and then fits a linear layer on frozen features. Here a
models.py backbone plus a 2-layer projection head learns to match two augmented views of each image (NT-Xent
over the 2B views of a batch); the backbone is returned as an `EncoderCheckpoint` for
`lifelong.training.encoders`. Every random choice (initialisation, order, augmentation) is seeded, and a
`workdir` makes the run resumable epoch by epoch with the same final weights.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lifelong.training.checkpoints import format_tag, read_torch_file, write_torch_file
from lifelong.training.devices import cpu_tensors, current_accelerator
from lifelong.training.encoders import EncoderCheckpoint, check_images
from lifelong.training.flops import count_training_flops
from lifelong.training.inputs import augment, to_input_tensor
from lifelong.training.loop import EpochLoss, derive_seed, torch_threads
from lifelong.training.models import initialise, make_model
from lifelong.training.schedules import warmup_cosine, warmup_steps_for

STATE_FORMAT = "lifelong-simclr-state-v1"
STATE_FILE = "simclr_state.pt"
# Stream tags for derive_seed.
_INIT, _ORDER, _AUGMENT = 1, 2, 3

Progress = Callable[[int, int, float], None]


@dataclass(frozen=True)
class ViewAugmentation:
    """How each of the two views is drawn: random resized crop, then photometric changes (all in torch).

    crop_area: fraction of the image a crop covers; flip: random mirror (off for glyphs, where it changes
    the class); jitter_p: probability of brightness (+-brightness, in [-1, 1] pixel units) and contrast
    (x(1 +- contrast)) jitter; grayscale_p: probability of replacing RGB by its mean (3-channel inputs only);
    noise: gaussian noise with a per-view std uniform in [0, noise]; invert_p: probability of x -> -x.
    """

    crop_area: tuple[float, float] = (0.2, 1.0)
    flip: bool = False
    jitter_p: float = 0.8
    brightness: float = 0.4
    contrast: float = 0.4
    grayscale_p: float = 0.2
    noise: float = 0.1
    invert_p: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "crop_area", tuple(float(a) for a in self.crop_area))
        probs = {"jitter_p": self.jitter_p, "grayscale_p": self.grayscale_p, "invert_p": self.invert_p}
        bad = {k: v for k, v in probs.items() if not 0.0 <= v <= 1.0}
        if bad:
            raise ValueError(f"probabilities must lie in [0, 1], got {bad}")
        if min(self.brightness, self.contrast, self.noise) < 0:
            raise ValueError(
                f"brightness, contrast and noise must be >= 0, got {self.brightness}, {self.contrast}, {self.noise}"
            )
        lo, hi = self.crop_area
        if not 0 < lo <= hi <= 1:
            raise ValueError(f"crop_area must satisfy 0 < low <= high <= 1, got {self.crop_area}")

    @classmethod
    def coerce(cls, value: ViewAugmentation | Mapping[str, Any] | None) -> ViewAugmentation:
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        unknown = sorted(set(value) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown augmentation options {unknown}; choose from {[f.name for f in fields(cls)]}")
        return cls(**value)

    def __call__(self, x: torch.Tensor, generator: torch.Generator, size: int | None) -> torch.Tensor:
        """One random view of each image of a batch x [N, C, H, W] in [-1, 1] (from to_input_tensor)."""
        x = augment(x, generator, size=size, flip=self.flip, area=self.crop_area)
        n, c = x.shape[:2]
        u = torch.rand(n, 7, generator=generator)  # one fixed draw per image, whichever options are on
        jitter = (u[:, 0] < self.jitter_p).view(n, 1, 1, 1)
        shift = (2 * u[:, 1] - 1).mul(self.brightness).view(n, 1, 1, 1)
        scale = (1 + (2 * u[:, 2] - 1).mul(self.contrast)).view(n, 1, 1, 1)
        mean = x.mean(dim=(1, 2, 3), keepdim=True)
        x = torch.where(jitter, (x - mean) * scale + mean + shift, x)
        if c == 3:
            gray = (u[:, 3] < self.grayscale_p).view(n, 1, 1, 1)
            x = torch.where(gray, x.mean(dim=1, keepdim=True).expand_as(x), x)
        x = x + (u[:, 4] * self.noise).view(n, 1, 1, 1) * torch.randn(x.shape, generator=generator)
        x = torch.where((u[:, 5] < self.invert_p).view(n, 1, 1, 1), -x, x)
        return x.clamp_(-1.0, 1.0)


def nt_xent(z1: torch.Tensor, z2: torch.Tensor, temperature: float) -> torch.Tensor:
    """NT-Xent loss of the 2B views: view i's positive is its twin, the other 2B - 2 views are negatives.

    Mean over all 2B anchors of -log softmax(cos / temperature) at the positive (self-similarity excluded).
    """
    if z1.shape != z2.shape or z1.ndim != 2:
        raise ValueError(f"z1 and z2 must both be [B, P], got {tuple(z1.shape)} and {tuple(z2.shape)}")
    b = z1.shape[0]
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    logits = z @ z.t() / temperature
    logits = logits.masked_fill(torch.eye(2 * b, dtype=torch.bool, device=z.device), float("-inf"))
    targets = torch.cat([torch.arange(b, 2 * b, device=z.device), torch.arange(b, device=z.device)])
    return F.cross_entropy(logits, targets)


class SimCLRModel(nn.Module):
    """Backbone + projection head (Linear-BN-ReLU-Linear); the loss sees projections, probes see the backbone."""

    def __init__(self, backbone: nn.Module, feature_dim: int, projection_dim: int) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = nn.Sequential(
            nn.Linear(feature_dim, feature_dim, bias=False),
            nn.BatchNorm1d(feature_dim),
            nn.ReLU(),
            nn.Linear(feature_dim, projection_dim),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x))


def _fingerprint(images: np.ndarray) -> str:
    digest = hashlib.sha256()
    digest.update(str((images.shape, images.dtype.str)).encode())
    digest.update(np.ascontiguousarray(images).data)
    return digest.hexdigest()


def _load_state(path: Path, config: Mapping[str, Any]) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    state = read_torch_file(path, "cannot read the resumable state {path!r} ({cause}); delete it to start over")
    if format_tag(state) != STATE_FORMAT:
        raise ValueError(f"{str(path)!r} is not a {STATE_FORMAT} file; delete it or use another workdir")
    if state["config"] != dict(config):
        diff = sorted(k for k in set(config) | set(state["config"]) if state["config"].get(k) != config.get(k))
        raise ValueError(
            f"workdir state {str(path)!r} belongs to another run (differs in {diff}); use the same arguments "
            "and images to resume, or another workdir"
        )
    return state


def pretrain_simclr(
    images: np.ndarray,
    *,
    architecture: str = "resnet_mini",
    resolution: int = 16,
    in_channels: int = 3,
    epochs: int = 30,
    batch_size: int = 256,
    lr: float = 0.5,
    weight_decay: float = 5e-4,
    momentum: float = 0.9,
    warmup_epochs: float = 2.0,
    temperature: float = 0.2,
    projection_dim: int = 64,
    augmentation: ViewAugmentation | Mapping[str, Any] | None = None,
    seed: int = 0,
    progress: Progress | None = None,
    workdir: str | Path | None = None,
    source: str = "",
) -> EncoderCheckpoint:
    """Pretrain `architecture`'s backbone on unlabeled uint8 images [N, H, W, C] with SimCLR; return its checkpoint.

    Each step draws B = min(batch_size, N) images (order reshuffled per epoch, last partial batch dropped),
    makes two views at `resolution`, and takes one SGD (Nesterov momentum, warm-up + cosine) step on NT-Xent.
    `train_flops` = FLOPs of one counted step x steps. `progress(epoch, epochs, mean loss)` runs after each
    epoch; with `workdir` the run state is saved atomically after each epoch and a later call with the same
    arguments resumes from it (identical final weights, given the same torch thread count). Views are drawn on
    the CPU (seeded) and the model trains on the current accelerator; the saved state holds CPU tensors, so a run
    resumes on any device.
    """
    images = check_images(images)
    if len(images) < 2:
        raise ValueError(f"contrastive pretraining needs at least 2 images (one batch of 2), got {len(images)}")
    if epochs < 1 or batch_size < 2 or not lr > 0 or not temperature > 0 or projection_dim < 1 or resolution < 1:
        raise ValueError(
            f"need epochs >= 1, batch_size >= 2, lr > 0, temperature > 0, projection_dim >= 1, resolution >= 1; got "
            f"epochs={epochs}, batch_size={batch_size}, lr={lr}, temperature={temperature}, "
            f"projection_dim={projection_dim}, resolution={resolution}"
        )
    views = ViewAugmentation.coerce(augmentation)
    threads = torch_threads()
    n = len(images)
    batch = min(batch_size, n)
    steps_per_epoch = n // batch
    max_steps = epochs * steps_per_epoch

    backbone = make_model(architecture, 1, in_channels=in_channels).backbone
    model = SimCLRModel(backbone, backbone.out_features, projection_dim)
    initialise(model, derive_seed(seed, _INIT))
    acc = current_accelerator()
    forward = acc.forward_fn(acc.place(model))
    decay = [p for p in model.parameters() if p.ndim > 1]  # no weight decay on BN and biases
    other = [p for p in model.parameters() if p.ndim <= 1]
    optimizer = torch.optim.SGD(
        [{"params": decay, "weight_decay": weight_decay}, {"params": other, "weight_decay": 0.0}],
        lr=lr,
        momentum=momentum,
        nesterov=momentum > 0,
    )
    schedule = warmup_cosine(max_steps, warmup_steps_for(max_steps, steps_per_epoch, warmup_epochs))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    generator = torch.Generator().manual_seed(derive_seed(seed, _AUGMENT))
    config = {
        "architecture": architecture,
        "resolution": int(resolution),
        "in_channels": int(in_channels),
        "epochs": int(epochs),
        "batch_size": int(batch),
        "lr": float(lr),
        "weight_decay": float(weight_decay),
        "momentum": float(momentum),
        "warmup_epochs": float(warmup_epochs),
        "temperature": float(temperature),
        "projection_dim": int(projection_dim),
        "augmentation": asdict(views),
        "seed": int(seed),
        "images": _fingerprint(images),
    }
    state_path = None if workdir is None else Path(workdir) / STATE_FILE
    history: list[dict[str, float]] = []
    flops_per_step: float | None = None
    start_epoch = 0
    state = None if state_path is None else _load_state(state_path, config)
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        generator.set_state(state["generator"])
        history, flops_per_step, start_epoch = list(state["history"]), state["flops_per_step"], int(state["epoch"])

    def loss_fn(outputs: torch.Tensor, _targets: torch.Tensor | None = None) -> torch.Tensor:
        return nt_xent(outputs[:batch], outputs[batch:], temperature)

    for epoch in range(start_epoch, epochs):
        model.train()
        order = torch.randperm(n, generator=torch.Generator().manual_seed(derive_seed(seed, _ORDER, epoch))).numpy()
        losses = EpochLoss()
        for i in range(steps_per_epoch):
            x = to_input_tensor(images[np.sort(order[i * batch : (i + 1) * batch])], in_channels)
            both = acc.batch(torch.cat([views(x, generator, resolution), views(x, generator, resolution)]))
            if flops_per_step is None:
                flops_per_step = count_training_flops(model, both, loss_fn=loss_fn)
            with acc.autocast():
                projections = forward(both).float()
            loss = loss_fn(projections)  # outside autocast: the cosine logits stay in fp32
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses.add(loss)
        mean_loss = losses.mean()
        history.append({"epoch": epoch + 1, "loss": mean_loss, "lr": float(scheduler.get_last_lr()[0])})
        if state_path is not None:
            write_torch_file(
                {
                    "format": STATE_FORMAT,
                    "config": config,
                    "epoch": epoch + 1,
                    "model": cpu_tensors(model.state_dict()),
                    "optimizer": cpu_tensors(optimizer.state_dict()),
                    "scheduler": scheduler.state_dict(),
                    "generator": generator.get_state(),
                    "history": history,
                    "flops_per_step": flops_per_step,
                },
                state_path,
            )
        if progress is not None:
            progress(epoch + 1, epochs, mean_loss)

    assert flops_per_step is not None  # max_steps >= 1
    return EncoderCheckpoint(
        architecture=architecture,
        backbone_state=cpu_tensors(model.backbone.state_dict()),
        resolution=int(resolution),
        in_channels=int(in_channels),
        feature_dim=int(backbone.out_features),
        method="simclr",
        source=source,
        seed=int(seed),
        epochs=int(epochs),
        train_flops=float(flops_per_step * max_steps),
        history=history,
        details={
            **{k: v for k, v in config.items() if k not in ("architecture", "resolution", "in_channels", "epochs")},
            "num_images": n,
            "steps": max_steps,
            "flops_per_step": float(flops_per_step),
            "threads": threads,
        },
    )
