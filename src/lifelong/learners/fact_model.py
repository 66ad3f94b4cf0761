"""The fact-learning authors' "Model_2" on a pretrained encoder: shared lower layers, separate S and P/O upper blocks.

The authors fine-tune an ImageNet VGG16: conv1-conv3 shared by both branches (conv1-conv2 frozen), then each branch
has its own copy of conv4-conv5 and fc6-fc7, ending in a new linear layer to w(S) (300-d) or [w(P); w(O)] (600-d).
Learning rates: shared conv3 and the S branch at 1 x lr, the P/O branch's convolutions at 2 x, the new last layers
(and the P/O fully connected layers) at 10 x; every bias at 2 x its layer's rate and without weight decay.

`BranchedFactModel` does the same on any encoder `encoder_stages` can cut (EfficientNet-Lite, the toolkit's
ResNets): stages before `frozen` are frozen (eval mode, no gradient), stages up to `branch_from` are shared, the
rest is copied into an S branch and a P/O branch (both start from the pretrained weights), each followed by a new
linear layer to dim (S) or 2 x dim (P and O). `BranchHeads` is the cheap form on a trunk shared whole (frozen, its
features computed once): each branch's upper block is a new hidden layer. `branch_param_groups` gives the optimizer
the four groups (shared, S branch, P/O branch, new layers) at lr x their multipliers, biases at 2 x that without
weight decay.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
from torch import nn

from lifelong.training.encoders import Encoder
from lifelong.training.encoders.stages import encoder_stages

AUTHORS_MULTIPLIERS = (1.0, 1.0, 2.0, 10.0)  # shared, S branch, P/O branch, new last layers
AUTHORS_BIAS_MULTIPLIER = 2.0
# The authors' layout mapped onto each family's stages: VGG16 conv1-conv2 frozen, conv3 shared (its output at 1/8
# of the input side), conv4 onwards per branch. EfficientNet-Lite: stem..stage2 (1/4) frozen, stage3 (1/8) shared;
# the toolkit's ResNets: stem and layer1 frozen, layer2 (1/2 of their input side) shared.
DEFAULT_LAYOUT = {"stage4": 3, "layer3": 2}  # first branch stage -> frozen stages


def default_layout(names: Sequence[str]) -> tuple[int, int]:
    """(frozen stages, first branch stage) of the authors' layout for an encoder with these stage names."""
    for branch, frozen in DEFAULT_LAYOUT.items():
        if branch in names:
            return frozen, list(names).index(branch)
    raise ValueError(f"no default branch point for stages {', '.join(names)}: give -o branch_from=STAGE")


def stage_index(names: Sequence[str], name: str, option: str) -> int:
    """The index of stage `name` in `names`; a ValueError in CLI words listing them."""
    if name not in names:
        raise ValueError(f"-o {option}={name}: the encoder's stages are {', '.join(names)}")
    return list(names).index(name)


class FactHead(nn.Module):
    """S branch (linear -> w(S)) and P-O branch (linear, ReLU, linear -> [w(P); w(O)]) on encoder features."""

    def __init__(self, in_features: int, dim: int, hidden: int) -> None:
        super().__init__()
        self.subject = nn.Linear(in_features, dim)
        self.predicate_object = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, 2 * dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.subject(x), self.predicate_object(x)], dim=1)


class EncoderFactModel(nn.Module):
    """A trainable copy of an Encoder (`backbone`, with `out_features`) followed by a fact head (`head`)."""

    def __init__(self, encoder: Encoder, head: nn.Module) -> None:
        super().__init__()
        self.backbone = copy.deepcopy(encoder).unfreeze()
        self.backbone.out_features = encoder.feature_dim
        self.head = head
        self.in_channels = encoder.in_channels

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.backbone(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x))


class BranchHeads(nn.Module):
    """On shared features: an S branch (linear to `hidden`, ReLU) and a P/O branch (the same), each followed by a
    new linear layer to dim (S) or 2 x dim (P and O): separate upper layers over a trunk shared whole."""

    def __init__(self, in_features: int, dim: int, hidden: int) -> None:
        super().__init__()
        self.subject_branch = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU())
        self.predicate_object_branch = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU())
        self.subject = nn.Linear(hidden, dim)
        self.predicate_object = nn.Linear(hidden, 2 * dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.subject(self.subject_branch(x))
        return torch.cat([s, self.predicate_object(self.predicate_object_branch(x))], dim=1)


def branch_param_groups(
    model: nn.Module, lr: float, weight_decay: float, multipliers: Sequence[float], bias_multiplier: float
) -> list[dict]:
    """SGD param groups of a two-branch fact model (`BranchedFactModel`, `BranchHeads` or a model holding one as
    `head` after a shared `backbone`): shared, S branch, P/O branch, new layers at lr x multipliers; biases at
    bias_multiplier x their group's rate and no weight decay. Parameters that do not train are in none."""
    if len(multipliers) != 4:
        raise ValueError(
            f"-o lr_multipliers needs 4 values for the two-branch fact model (shared, S branch, P/O branch, new "
            f"layers), e.g. {','.join(f'{m:g}' for m in AUTHORS_MULTIPLIERS)}; got {len(multipliers)}"
        )
    heads = getattr(model, "head", model)
    shared = getattr(model, "shared", getattr(model, "backbone", None))
    parts = (
        [] if shared is None else list(shared.parameters()),
        list(heads.subject_branch.parameters()),
        list(heads.predicate_object_branch.parameters()),
        [*heads.subject.parameters(), *heads.predicate_object.parameters()],
    )
    biases = {id(p) for m in model.modules() for name, p in m.named_parameters(recurse=False) if name == "bias"}
    groups = []
    for params, multiplier in zip(parts, multipliers, strict=True):
        weights = [p for p in params if id(p) not in biases and p.requires_grad]
        bias = [p for p in params if id(p) in biases and p.requires_grad]
        if weights:
            groups.append({"params": weights, "lr": lr * multiplier, "weight_decay": weight_decay})
        if bias:
            groups.append({"params": bias, "lr": lr * multiplier * bias_multiplier, "weight_decay": 0.0})
    return groups


class BranchedFactModel(nn.Module):
    """Images -> [S (dim); P, O (2 dim)] through a frozen prefix, shared stages and two branches (module docstring)."""

    def __init__(self, encoder: Encoder, dim: int, *, frozen: int, branch_from: int) -> None:
        super().__init__()
        own = copy.deepcopy(encoder).unfreeze()
        stages = [module for _, module in encoder_stages(own)]
        if not 0 <= frozen <= branch_from < len(stages):
            raise ValueError(
                f"need 0 <= frozen stages ({frozen}) <= the first branch stage ({branch_from}) < stages ({len(stages)})"
            )
        self.register_buffer("_scale", own._scale, persistent=False)
        self.register_buffer("_shift", own._shift, persistent=False)
        self.frozen = nn.Sequential(*stages[:frozen])
        self.shared = nn.Sequential(*stages[frozen:branch_from])
        self.subject_branch = nn.Sequential(*stages[branch_from:])
        self.predicate_object_branch = copy.deepcopy(self.subject_branch)
        self.subject = nn.Linear(encoder.feature_dim, dim)
        self.predicate_object = nn.Linear(encoder.feature_dim, 2 * dim)
        self.in_channels = encoder.in_channels
        self.feature_dim = encoder.feature_dim
        for p in self.frozen.parameters():
            p.requires_grad_(False)
        self.train()

    def train(self, mode: bool = True) -> BranchedFactModel:
        super().train(mode)
        self.frozen.train(False)  # frozen BatchNorm statistics and drop-connect stay as pretrained
        return self

    def trunk(self, x: torch.Tensor) -> torch.Tensor:
        """The shared lower layers' output (the frozen prefix, then the shared trainable stages)."""
        if self._scale is not None:
            x = x * self._scale.to(x.dtype) + self._shift.to(x.dtype)
        return self.shared(self.frozen(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.trunk(x)
        s = self.subject(self.subject_branch(h))
        return torch.cat([s, self.predicate_object(self.predicate_object_branch(h))], dim=1)


__all__ = [
    "AUTHORS_BIAS_MULTIPLIER",
    "AUTHORS_MULTIPLIERS",
    "BranchHeads",
    "BranchedFactModel",
    "EncoderFactModel",
    "FactHead",
    "branch_param_groups",
    "default_layout",
    "stage_index",
]
