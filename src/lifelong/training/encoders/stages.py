"""An encoder cut into stages that run one after another, for models that share lower layers and branch above them.

`encoder_stages(encoder)` returns (name, module) pairs, input side first, named as `finetune.layer_groups` names
the encoder's groups (EfficientNet-Lite: stem, stage1..stage7, head; the toolkit's ResNets: stem, layer1..layer4),
such that running them in turn on `encoder.normalise(x)` gives `encoder(x)`: the last stage ends with the global
average pool. The stages hold the encoder's own modules (no copies). Encoders of other architectures cannot be cut
and get a ValueError naming what can.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from lifelong.training.encoders.base import Encoder
from lifelong.training.encoders.finetune import _efficientnet_groups, _unwrap


class EfficientNetStem(nn.Module):
    """conv_stem, BN, the network's activation."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.conv, self.bn, self.act = net._conv_stem, net._bn0, net._swish

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.bn(self.conv(x)))


class EfficientNetBlocks(nn.Module):
    """Consecutive MBConv blocks, each with the drop-connect rate of its place in the whole network."""

    def __init__(self, blocks: Sequence[nn.Module], rates: Sequence[float]) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.rates = tuple(float(r) for r in rates)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block, rate in zip(self.blocks, self.rates, strict=True):
            x = block(x, drop_connect_rate=rate)
        return x


class EfficientNetHead(nn.Module):
    """conv_head, BN, activation, global average pool, flatten."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.conv, self.bn, self.act = net._conv_head, net._bn1, net._swish

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flatten(nn.functional.adaptive_avg_pool2d(self.act(self.bn(self.conv(x))), 1), 1)


class PooledStage(nn.Module):
    """A ResNet's last stage followed by the global average pool."""

    def __init__(self, stage: nn.Module) -> None:
        super().__init__()
        self.stage = stage

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.stage(x).mean(dim=(2, 3))


def _efficientnet_stages(net: nn.Module) -> list[tuple[str, nn.Module]]:
    groups = _efficientnet_groups(net)
    total = len(net._blocks)
    rate = float(net._global_params.drop_connect_rate or 0.0)
    index = {id(block): i for i, block in enumerate(net._blocks)}
    out: list[tuple[str, nn.Module]] = [("stem", EfficientNetStem(net))]
    for name, blocks in groups[1:-1]:
        out.append((name, EfficientNetBlocks(blocks, [rate * index[id(b)] / total for b in blocks])))
    out.append(("head", EfficientNetHead(net)))
    return out


def _resnet_stages(backbone: nn.Module) -> list[tuple[str, nn.Module]]:
    stages = list(backbone.stages)
    out: list[tuple[str, nn.Module]] = [("stem", backbone.stem)]
    out += [(f"layer{i + 1}", stage) for i, stage in enumerate(stages[:-1])]
    out.append((f"layer{len(stages)}", PooledStage(stages[-1])))
    return out


def encoder_stages(encoder: Encoder) -> list[tuple[str, nn.Module]]:
    """The encoder's stages, input side first (module docstring); ValueError for an architecture it cannot cut."""
    root = _unwrap(encoder.module)
    net = getattr(root, "net", root)  # EfficientNetFeatures wraps the package's network
    if hasattr(net, "_blocks") and hasattr(net, "_conv_stem") and hasattr(net, "_conv_head"):
        return _efficientnet_stages(net)
    if hasattr(root, "stem") and isinstance(getattr(root, "stages", None), nn.Sequential):
        return _resnet_stages(root)
    raise ValueError(
        f"{encoder.description or type(encoder.module).__name__} cannot be cut into stages for separate S and P/O "
        "branches (EfficientNet-Lite and the toolkit's ResNets can): give -o branch_from=none to share the whole "
        "encoder between the branches"
    )


def stage_names(encoder: Encoder) -> list[str]:
    return [name for name, _ in encoder_stages(encoder)]


__all__ = ["encoder_stages", "stage_names"]
