"""The network of the peer comparison (benchmarks/bench_peers.py): one MLP both libraries build from this file.

Imports torch alone, so the toolkit (`-o architecture=_peer_mlp:mlp`, this folder on PYTHONPATH) and Avalanche's
virtual environment load the same class, and the same state dict gives both the same starting weights.
"""

from __future__ import annotations

from torch import nn

SIDE = 28  # MNIST images, one channel
HIDDEN = 256


class PeerMLP(nn.Module):
    """Flatten -> 784-256-256 ReLU MLP (`backbone`) -> linear `head`; takes [N, 1, 28, 28] images."""

    in_channels = 1  # the toolkit feeds one-channel images as they are (no 1 -> 3 replication)

    def __init__(self, num_classes: int = 10, hidden: int = HIDDEN) -> None:
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Flatten(), nn.Linear(SIDE * SIDE, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()
        )
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, x):
        return self.head(self.backbone(x))


def mlp(*, num_classes: int = 10) -> PeerMLP:
    """The peer comparison's MLP (the toolkit's factory: keyword arguments only)."""
    return PeerMLP(num_classes)
