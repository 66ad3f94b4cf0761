"""Low-resolution ResNets (docs/protocols/nevis.md#training-recipe): 3x3 stride-1 stem, no max-pool, BasicBlock stages.

A model is a `backbone` (images -> pooled features [N, D]) followed by a linear `head`, so that later
learners can swap heads, fine-tune backbones and score relatedness on frozen features.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

ModelFactory = Callable[..., "ResNet"]


def _conv3x3(in_channels: int, out_channels: int, stride: int) -> nn.Conv2d:
    return nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 conv-BN layers with a residual connection (1x1 conv-BN projection when the shape changes)."""

    def __init__(self, in_channels: int, out_channels: int, stride: int) -> None:
        super().__init__()
        self.conv1 = _conv3x3(in_channels, out_channels, stride)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = _conv3x3(out_channels, out_channels, 1)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + self.shortcut(x))


class ResNetBackbone(nn.Module):
    """Images [N, C, H, W] -> globally average-pooled features [N, widths[-1]]; any H, W >= 1 works."""

    def __init__(self, blocks: Sequence[int], widths: Sequence[int], in_channels: int = 3) -> None:
        super().__init__()
        blocks, widths = tuple(int(b) for b in blocks), tuple(int(w) for w in widths)
        if not blocks or len(blocks) != len(widths):
            raise ValueError(
                f"blocks {blocks} and widths {widths} must be non-empty and of equal length (one entry per stage)"
            )
        if min(blocks) < 1 or min(widths) < 1 or in_channels < 1:
            raise ValueError(
                f"blocks {blocks}, widths {widths} and in_channels {in_channels} must all be positive integers"
            )
        self.blocks, self.widths, self.in_channels = blocks, widths, in_channels
        self.stem = nn.Sequential(_conv3x3(in_channels, widths[0], 1), nn.BatchNorm2d(widths[0]), nn.ReLU())
        stages: list[nn.Module] = []
        channels = widths[0]
        for stage, (count, width) in enumerate(zip(blocks, widths, strict=True)):
            layers = []
            for i in range(count):
                stride = 2 if stage > 0 and i == 0 else 1
                layers.append(BasicBlock(channels, width, stride))
                channels = width
            stages.append(nn.Sequential(*layers))
        self.stages = nn.Sequential(*stages)
        self.out_features = channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.stages(self.stem(x)).mean(dim=(2, 3))


class ResNet(nn.Module):
    """`backbone` (features) + linear `head` (one logit per class)."""

    def __init__(
        self,
        num_classes: int,
        *,
        blocks: Sequence[int],
        widths: Sequence[int],
        in_channels: int = 3,
        seed: int | None = None,
    ) -> None:
        super().__init__()
        if num_classes < 1:
            raise ValueError(f"num_classes must be >= 1, got {num_classes}")
        self.backbone = ResNetBackbone(blocks, widths, in_channels)
        self.head = nn.Linear(self.backbone.out_features, num_classes)
        self.in_channels = in_channels
        self.num_classes = num_classes
        initialise(self, seed)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Pooled backbone features [N, D] (D = `backbone.out_features`)."""
        return self.backbone(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x))


def initialise(model: nn.Module, seed: int | None = None) -> nn.Module:
    """(Re)initialise every conv, BN and linear layer; with a seed the weights depend on nothing else.

    Convs: He-normal (fan-out); BN: weight 1, bias 0; linear: uniform(+-1/sqrt(fan_in)) for weight and bias.
    """
    gen = None if seed is None else torch.Generator().manual_seed(int(seed))
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu", generator=gen)
                if module.bias is not None:
                    module.bias.zero_()
            elif isinstance(module, nn.BatchNorm2d):
                module.weight.fill_(1.0)
                module.bias.zero_()
                module.reset_running_stats()
            elif isinstance(module, nn.Linear):
                bound = module.in_features**-0.5
                nn.init.uniform_(module.weight, -bound, bound, generator=gen)
                if module.bias is not None:
                    nn.init.uniform_(module.bias, -bound, bound, generator=gen)
    return model


def resnet(
    num_classes: int,
    *,
    blocks: Sequence[int] = (3, 4, 6, 3),
    widths: Sequence[int] = (64, 128, 256, 512),
    in_channels: int = 3,
    seed: int | None = None,
) -> ResNet:
    """A low-resolution ResNet with BasicBlock stages; defaults give the paper's ResNet-34."""
    return ResNet(num_classes, blocks=blocks, widths=widths, in_channels=in_channels, seed=seed)


def resnet18(num_classes: int, *, in_channels: int = 3, seed: int | None = None) -> ResNet:
    """ResNet-18 (blocks 2-2-2-2, widths 64-128-256-512)."""
    return resnet(num_classes, blocks=(2, 2, 2, 2), in_channels=in_channels, seed=seed)


def resnet34(num_classes: int, *, in_channels: int = 3, seed: int | None = None) -> ResNet:
    """ResNet-34 (blocks 3-4-6-3, widths 64-128-256-512), the paper's Independent backbone."""
    return resnet(num_classes, blocks=(3, 4, 6, 3), in_channels=in_channels, seed=seed)


def resnet_mini(num_classes: int, *, in_channels: int = 3, seed: int | None = None) -> ResNet:
    """A scaled-down ResNet (blocks 1-1-1-1, widths 16-32-64-128) that trains in seconds on a 2-core CPU."""
    return resnet(num_classes, blocks=(1, 1, 1, 1), widths=(16, 32, 64, 128), in_channels=in_channels, seed=seed)


ARCHITECTURES: dict[str, ModelFactory] = {"resnet18": resnet18, "resnet34": resnet34, "resnet_mini": resnet_mini}


def make_model(architecture: str, num_classes: int, *, in_channels: int = 3, seed: int | None = None) -> nn.Module:
    """Build a named architecture (a key of `ARCHITECTURES`) or a `package.module:factory` network.

    A factory is called with keyword arguments only: `num_classes` and `in_channels` (the channels of the images
    the learner feeds, 3 unless its module has an `in_channels` attribute), each only if its signature takes it
    (or takes **kwargs). It runs with the torch RNG seeded from `seed`, so that one seed gives one set of weights.
    """
    factory = ARCHITECTURES.get(architecture)
    if factory is not None:
        return factory(num_classes, in_channels=in_channels, seed=seed)
    factory = _import_factory(architecture)
    offered = {"num_classes": num_classes, "in_channels": in_channels}
    with torch.random.fork_rng(devices=[]):
        if seed is not None:
            torch.manual_seed(int(seed))
        module = factory(**_accepted(factory, offered))
    if not isinstance(module, nn.Module):
        raise ValueError(f"network factory {architecture!r} returned a {type(module).__name__}, not a torch nn.Module")
    return module


def _import_factory(architecture: str) -> Callable[..., Any]:
    """The callable of a `package.module:factory` spec; ValueError naming the forms an architecture takes."""
    from lifelong.training.encoders.wrap import import_callable  # lazy: encoders imports this module

    if ":" not in architecture:  # neither a name of ARCHITECTURES nor package.module:factory
        raise ValueError(
            f"unknown architecture {architecture!r}; choose one of {sorted(ARCHITECTURES)} or give "
            "package.module:factory (a callable returning a torch nn.Module)"
        )
    return import_callable(architecture, what=f"network factory {architecture!r}")


def _accepted(factory: Callable[..., Any], offered: dict[str, Any]) -> dict[str, Any]:
    """The keywords of `offered` that `factory` accepts (all of them when it takes **kwargs or has no signature)."""
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return offered
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return offered
    keywords = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {k: v for k, v in offered.items() if k in params and params[k].kind in keywords}


PROBE_CLASSES = 5  # num_classes of the config-time probe network
PROBE_SIDE = 32  # its input side when the learner's resolution is unset


def check_architecture(architecture: str, *, resolution: int | None = None, transfer: bool = False) -> None:
    """Check an architecture at config time: a known name, or a factory that imports, is callable and maps a probe
    batch [2, C, side, side] to [2, num_classes]; with `transfer`, that its network has a `backbone` and a linear
    `head` (the transfer learners swap them). ValueError saying what is wrong. Side: `resolution`; unset (each
    task's own size), 32, and a network that fails on that side is let through: the task's images decide."""
    if architecture in ARCHITECTURES:
        return
    side = PROBE_SIDE if resolution is None else int(resolution)
    transferable = _probe(architecture, side, strict=resolution is not None)
    if transfer and not transferable:
        raise ValueError(
            f"-o architecture={architecture}: this learner transfers a network's `backbone` and replaces its linear "
            "`head`, and the factory's network has no such pair; build it as a `backbone` module followed by an "
            "nn.Linear `head`, or use a learner that trains each task from scratch (independent, the continual ones)"
        )


@functools.lru_cache(maxsize=64)
def _probe(architecture: str, side: int, *, strict: bool) -> bool:
    """Build the factory's network once and run a probe batch; whether it has a `backbone` and a linear `head`.
    A forward pass that fails is an error only when `strict` (the side is the one training will use)."""
    model = make_model(architecture, PROBE_CLASSES, seed=0)
    transferable = isinstance(getattr(model, "backbone", None), nn.Module) and isinstance(
        getattr(model, "head", None), nn.Linear
    )
    channels = int(getattr(model, "in_channels", 3))
    shape = (2, channels, side, side)
    model.eval()
    try:
        with torch.no_grad():
            out = model(torch.zeros(shape))
    except Exception as exc:
        if not strict:
            return transferable
        raise ValueError(
            f"network factory {architecture!r} failed on a probe batch {list(shape)} ({type(exc).__name__}: {exc}); "
            "set -o resolution= to a side the network takes"
        ) from exc
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (2, PROBE_CLASSES):
        got = list(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(
            f"network factory {architecture!r} must map images [N, C, H, W] to class scores [N, num_classes]; with "
            f"num_classes={PROBE_CLASSES} it gave {got} for a batch {list(shape)}"
        )
    return transferable


def count_parameters(model: nn.Module) -> int:
    """Number of parameters (trainable or not) of `model`."""
    return sum(p.numel() for p in model.parameters())
