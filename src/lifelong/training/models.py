"""Low-resolution ResNets (docs/protocols/nevis.md#training-recipe): 3x3 stride-1 stem, no max-pool, BasicBlock stages.

A model is a `backbone` (images -> pooled features [N, D]) followed by a linear `head`, so that later
learners can swap heads, fine-tune backbones and score relatedness on frozen features.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

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


def make_model(architecture: str, num_classes: int, *, in_channels: int = 3, seed: int | None = None) -> ResNet:
    """Build a named architecture (a key of `ARCHITECTURES`)."""
    try:
        factory = ARCHITECTURES[architecture]
    except KeyError:
        raise ValueError(f"unknown architecture {architecture!r}; choose one of {sorted(ARCHITECTURES)}") from None
    return factory(num_classes, in_channels=in_channels, seed=seed)


def count_parameters(model: nn.Module) -> int:
    """Number of parameters (trainable or not) of `model`."""
    return sum(p.numel() for p in model.parameters())
