"""Networks for `-o architecture=package.module:factory` in the tests (tests/ is on the path: `_factories:mlp`)."""

from __future__ import annotations

from typing import Any

from torch import nn

SIDE, HIDDEN = 8, 16  # the MLPs take 8 x 8 images
CALLS: list[dict[str, Any]] = []  # the keywords `recording` was called with


class MLP(nn.Module):
    """Flatten -> Linear -> ReLU (`backbone`), then a linear `head`: a 2-layer MLP the transfer learners can use."""

    def __init__(self, num_classes: int, in_channels: int, hidden: int = HIDDEN) -> None:
        super().__init__()
        self.backbone = nn.Sequential(nn.Flatten(), nn.Linear(in_channels * SIDE * SIDE, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, x):
        return self.head(self.backbone(x))


def mlp(*, num_classes: int, in_channels: int = 3) -> MLP:
    """The MLP; keyword-only parameters, so a positional call would fail."""
    return MLP(num_classes, in_channels)


def plain_mlp(*, num_classes: int) -> nn.Module:
    """An MLP without `in_channels` (3 assumed) and without a backbone / head pair."""
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * SIDE * SIDE, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, num_classes))


def recording(**kwargs: Any) -> nn.Module:
    """Records the keywords it gets, then builds the MLP."""
    CALLS.append(dict(kwargs))
    return mlp(num_classes=kwargs["num_classes"], in_channels=kwargs["in_channels"])


def features_only(*, num_classes: int) -> nn.Module:
    """Wrong: maps images to flattened pixels, not to num_classes scores."""
    return nn.Flatten()


def not_a_module(*, num_classes: int) -> str:
    """Wrong: returns no torch module."""
    return "mlp"


NOT_CALLABLE = 3
