"""The zoo's members: the configuration space they are drawn from, each member's drawn `ModelSpec`, and the small
architectures (an MLP, a two-stage CNN, a narrow ResNet) they are built with."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from lifelong.core.seeds import derive_seed
from lifelong.training.devices import current_accelerator
from lifelong.training.models import initialise, resnet

ARCHITECTURES = ("mlp", "cnn", "resnet_mini")
_SPEC, _INIT = 11, 13  # derive_seed tags (the zoo's others are 12, 14-16)


@dataclass(frozen=True)
class ModelSpec:
    """One zoo member's configuration; `seed` drives its training subset, initialisation and training order."""

    id: int
    architecture: str
    width: int
    epochs: int
    train_size: int
    augment: bool
    lr: float
    seed: int

    @property
    def name(self) -> str:
        """A readable unique name, e.g. m0007-cnn16-e3-n1000-aug-lr0.042."""
        aug = "aug" if self.augment else "noaug"
        return f"m{self.id:04d}-{self.architecture}{self.width}-e{self.epochs}-n{self.train_size}-{aug}-lr{self.lr:.2g}"


@dataclass(frozen=True)
class ZooSpace:
    """The configuration space a zoo member is drawn from (defaults: each model trains in seconds on one core).

    `architectures`: name -> sampling weight; `widths`: hidden units (mlp) or base channels (cnn, resnet_mini);
    `lr_ranges`: log-uniform learning-rate range per architecture (the small CNN diverges above ~0.05).
    """

    architectures: Mapping[str, float] = field(default_factory=lambda: {"mlp": 0.3, "cnn": 0.35, "resnet_mini": 0.35})
    widths: Mapping[str, tuple[int, ...]] = field(
        default_factory=lambda: {"mlp": (32, 64, 128, 256), "cnn": (8, 16, 24), "resnet_mini": (4, 8, 16)}
    )
    lr_ranges: Mapping[str, tuple[float, float]] = field(
        default_factory=lambda: {"mlp": (0.01, 0.2), "cnn": (0.002, 0.05), "resnet_mini": (0.01, 0.3)}
    )
    train_sizes: tuple[int, ...] = (250, 500, 1000, 2000, 4000)
    max_epochs: int = 4
    augment_probability: float = 0.3

    def __post_init__(self) -> None:
        names = set(self.architectures)
        unknown = names - set(ARCHITECTURES)
        if not names or unknown or any(w < 0 for w in self.architectures.values()):
            raise ValueError(
                f"architectures must map some of {sorted(ARCHITECTURES)} to weights >= 0, "
                f"got {dict(self.architectures)}"
            )
        missing = [a for a in names if not self.widths.get(a) or a not in self.lr_ranges]
        if missing:
            raise ValueError(f"architectures {missing} need widths and an lr range in the zoo space")
        if not self.train_sizes or min(self.train_sizes) < 1 or self.max_epochs < 1:
            raise ValueError(f"need train sizes >= 1 and max_epochs >= 1, got {self.train_sizes}, {self.max_epochs}")
        if not 0.0 <= self.augment_probability <= 1.0:
            raise ValueError(f"augment_probability must be in [0, 1], got {self.augment_probability}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (recorded in zoo.json)."""
        return {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in asdict(self).items()}


def draw_spec(model_id: int, seed: int, n_train: int, space: ZooSpace | None = None) -> ModelSpec:
    """Model `model_id`'s configuration, drawn from (seed, model_id) alone; train sizes are capped at `n_train`."""
    space = space or ZooSpace()
    rng = np.random.default_rng(derive_seed(seed, _SPEC, model_id))
    names = list(space.architectures)
    weights = np.array([space.architectures[a] for a in names], dtype=np.float64)
    architecture = names[int(rng.choice(len(names), p=weights / weights.sum()))]
    width = int(rng.choice(space.widths[architecture]))
    epochs = int(rng.integers(1, space.max_epochs + 1))
    train_size = min(int(rng.choice(space.train_sizes)), n_train)
    augment = bool(rng.random() < space.augment_probability)
    lo, hi = np.log(space.lr_ranges[architecture])
    lr = float(np.round(np.exp(rng.uniform(lo, hi)), 5))
    return ModelSpec(model_id, architecture, width, epochs, train_size, augment, lr, derive_seed(seed, model_id))


class MLP(nn.Module):
    """Flattened pixels -> two ReLU hidden layers of `width` units (`backbone`) -> linear `head`."""

    def __init__(self, image_shape: tuple[int, int, int], num_classes: int, width: int, seed: int) -> None:
        super().__init__()
        height, wide, channels = image_shape
        self.in_channels = channels
        self.backbone = nn.Sequential(
            nn.Flatten(), nn.Linear(channels * height * wide, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU()
        )
        self.head = nn.Linear(width, num_classes)
        initialise(self, seed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x))


class SmallCNN(nn.Module):
    """Two conv-BN-ReLU-maxpool stages (`width`, 2 x `width` channels) as `backbone`, flattened into a linear `head`."""

    def __init__(self, image_shape: tuple[int, int, int], num_classes: int, width: int, seed: int) -> None:
        super().__init__()
        height, wide, channels = image_shape
        self.in_channels = channels
        layers: list[nn.Module] = []
        for out in (width, 2 * width):
            layers += [nn.Conv2d(channels, out, 3, padding=1, bias=False), nn.BatchNorm2d(out), nn.ReLU()]
            layers.append(nn.MaxPool2d(2))
            channels = out
        self.backbone = nn.Sequential(*layers, nn.Flatten())
        self.head = nn.Linear(channels * (height // 4) * (wide // 4), num_classes)
        initialise(self, seed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x))


def make_zoo_model(spec: ModelSpec, image_shape: tuple[int, int, int], num_classes: int) -> nn.Module:
    """The network of `spec` for images of `image_shape` (H, W, C), seeded from the spec, on the current accelerator."""
    seed = derive_seed(spec.seed, _INIT)
    channels = image_shape[2]
    model: nn.Module
    if spec.architecture == "mlp":
        model = MLP(image_shape, num_classes, spec.width, seed)
    elif spec.architecture == "cnn":
        model = SmallCNN(image_shape, num_classes, spec.width, seed)
    elif spec.architecture == "resnet_mini":  # resnet_mini's 1-1-1-1 blocks at base width `width` (16 = resnet_mini)
        widths = tuple(spec.width * k for k in (1, 2, 4, 8))
        model = resnet(num_classes, blocks=(1, 1, 1, 1), widths=widths, in_channels=channels, seed=seed)
    else:
        raise ValueError(f"unknown zoo architecture {spec.architecture!r}; choose from {sorted(ARCHITECTURES)}")
    return current_accelerator().place(model)
