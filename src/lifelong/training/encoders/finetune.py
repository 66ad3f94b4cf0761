"""Fine-tuning controls for any encoder (issue 23, part 3): frozen (features only), fully fine-tuned, or fine-tuned
with the first layer groups frozen and a learning-rate multiplier per trainable group (the fact-learning authors
freeze the first blocks of their network and train the rest at 1/2/4/10/20 x the base rate).

`layer_groups` splits an encoder into ordered groups, input side first: EfficientNet-Lite into stem, one group per
stage of blocks and head (conv_head + its BN); the toolkit's ResNets (and torchvision-style ones) into stem and
layer1..layer4; Hugging Face models into embeddings and one group per encoder layer / stage; anything else into
its top-level children in order. Parameters no named group holds go to a last group `final`, so the groups cover
every parameter of the features; an encoder's ImageNet classifier head is not part of them (not in `forward`).

`param_groups(encoder, frozen_groups=K, lr=..., multipliers=...)` freezes the first K groups (eval mode, so
BatchNorm statistics and drop-connect stay fixed, and requires_grad False, so they get no gradient and no update)
and returns the optimizer's param groups for the rest, each at lr x its multiplier. FLOPs follow from what runs:
`lifelong.training.flops` counts the frozen groups in the forward pass and not in the backward pass.
Learners take the three options `-o finetune=frozen|full|partial`, `-o frozen_groups=K`,
`-o lr_multipliers=1,2,4,10,20` (and `-o head_lr_multiplier=X` for their own new head): `FineTune.from_options`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from torch import nn

from lifelong.core.suggest import did_you_mean
from lifelong.training.encoders.base import Encoder

MODES = ("frozen", "full", "partial")
BLOCK_LISTS = (("layer", "layer"), ("layers", "layer"), ("stages", "stage"), ("blocks", "block"))  # HF names


@dataclass(frozen=True)
class LayerGroup:
    """One group of an encoder's layers, trained (or frozen) together at one learning-rate multiplier."""

    name: str
    modules: tuple[nn.Module, ...]

    def parameters(self) -> list[nn.Parameter]:
        seen: dict[int, nn.Parameter] = {}
        for module in self.modules:
            for p in module.parameters():
                seen.setdefault(id(p), p)
        return list(seen.values())

    @property
    def numel(self) -> int:
        return sum(p.numel() for p in self.parameters())


def _has_params(module: nn.Module) -> bool:
    return any(True for _ in module.parameters())


def _unwrap(module: nn.Module) -> nn.Module:
    """Descend through wrappers that hold a single child with parameters and none of their own."""
    while True:
        if any(True for _ in module.parameters(recurse=False)):
            return module
        children = [c for c in module.children() if _has_params(c)]
        if len(children) != 1:
            return module
        module = children[0]


def _efficientnet_groups(net: nn.Module) -> list[tuple[str, list[nn.Module]]]:
    """stem, stage1..stageN (consecutive blocks sharing kernel size, expansion and output width), head."""
    stages: list[list[nn.Module]] = []
    previous = None
    for block in net._blocks:
        args = getattr(block, "_block_args", None)
        key = None if args is None else (args.kernel_size, args.expand_ratio, args.output_filters)
        if key is None or key != previous or not stages:
            stages.append([])
        stages[-1].append(block)
        previous = key
    groups: list[tuple[str, list[nn.Module]]] = [("stem", [net._conv_stem, net._bn0])]
    groups += [(f"stage{i + 1}", blocks) for i, blocks in enumerate(stages)]
    groups.append(("head", [net._conv_head, net._bn1]))
    return groups


def _named_groups(root: nn.Module) -> list[tuple[str, list[nn.Module]]]:
    """The architecture's own groups (see the module docstring), before the `final` remainder is added."""
    if hasattr(root, "_blocks") and hasattr(root, "_conv_stem") and hasattr(root, "_conv_head"):
        return _efficientnet_groups(root)
    if hasattr(root, "backbone") and hasattr(root.backbone, "stages") and hasattr(root.backbone, "stem"):
        root = root.backbone  # the toolkit's ResNet model (backbone + head): the head falls into `final`
    if hasattr(root, "stem") and isinstance(getattr(root, "stages", None), nn.Sequential):  # models.ResNetBackbone
        return [("stem", [root.stem])] + [(f"layer{i + 1}", [s]) for i, s in enumerate(root.stages)]
    if hasattr(root, "conv1") and hasattr(root, "layer1"):  # torchvision-style ResNet
        stem = [m for m in (getattr(root, "conv1", None), getattr(root, "bn1", None)) if m is not None]
        layers = [(f"layer{i}", [getattr(root, f"layer{i}")]) for i in range(1, 5) if hasattr(root, f"layer{i}")]
        return [("stem", stem), *layers]
    embeddings = next((getattr(root, a) for a in ("embeddings", "embedder") if hasattr(root, a)), None)
    if embeddings is not None:  # Hugging Face vision models: blocks in model.encoder or (transformers 5) the model
        body = getattr(root, "encoder", None)
        for container in (body, root):
            for attribute, prefix in BLOCK_LISTS:
                blocks = getattr(container, attribute, None) if isinstance(container, nn.Module) else None
                if isinstance(blocks, nn.ModuleList | nn.Sequential):
                    return [("embeddings", [embeddings])] + [(f"{prefix}{i + 1}", [b]) for i, b in enumerate(blocks)]
        if isinstance(body, nn.Module):
            return [("embeddings", [embeddings]), ("encoder", [body])]
    return [(name, [child]) for name, child in root.named_children() if _has_params(child)]


def layer_groups(model: nn.Module) -> list[LayerGroup]:
    """`model`'s layer groups in input-to-output order; together they hold every parameter of the features once.

    For an `Encoder` the groups cover its feature module (`encoder.module`) and leave out its classifier `head`;
    any other module is grouped whole. Groups without parameters are dropped.
    """
    exclude: set[int] = set()
    root = model
    if isinstance(model, Encoder):
        root = model.module
        if model.head is not None:
            exclude = {id(p) for p in model.head.parameters()}
    root = _unwrap(root)
    groups: list[LayerGroup] = []
    claimed: set[int] = set(exclude)
    for name, modules in _named_groups(root):
        group = LayerGroup(name, tuple(modules))
        params = [p for p in group.parameters() if id(p) not in claimed]
        if not params:
            continue
        claimed.update(id(p) for p in params)
        groups.append(group)
    inside = {id(m) for g in groups for top in g.modules for m in top.modules()}
    rest = [
        m
        for m in root.modules()
        if id(m) not in inside
        and any(id(p) not in claimed for p in m.parameters(recurse=False))
        and not any(id(p) in exclude for p in m.parameters(recurse=False))
    ]
    if rest:
        groups.append(LayerGroup("final", tuple(rest)))
    if not groups:
        raise ValueError(f"{_name(model)} has no parameters: nothing to group or fine-tune")
    return groups


def describe_groups(model: nn.Module) -> str:
    """The groups in one line, e.g. 'stem, stage1, ..., head (9 groups)'."""
    groups = layer_groups(model)
    return f"{', '.join(g.name for g in groups)} ({len(groups)} groups)"


def _name(model: nn.Module) -> str:
    description = getattr(model, "description", "") or type(model).__name__
    return description.split(" (")[0]


def freeze_groups(encoder: Encoder, count: int) -> list[LayerGroup]:
    """Freeze the first `count` layer groups of `encoder` and make the others trainable; return the trainable ones.

    Frozen groups get requires_grad False and stay in eval mode whatever `encoder.train()` is called with (their
    BatchNorm statistics do not move, their dropout / drop-connect is off), so their weights and buffers stay
    bit-identical through training. `count` 0 fine-tunes everything; the number of groups freezes it all (as
    `encoder.freeze()`). The classifier head, not part of the features, is left out of training.
    """
    if not isinstance(encoder, Encoder):
        raise TypeError(f"freeze_groups needs an Encoder (load one with load_encoder), got {type(encoder).__name__}")
    groups = layer_groups(encoder)
    count = int(count)
    if not 0 <= count <= len(groups):
        raise ValueError(
            f"-o frozen_groups={count} is out of range: {_name(encoder)} has {len(groups)} layer groups "
            f"({', '.join(g.name for g in groups)}); give 0 to {len(groups) - 1}, or -o finetune=frozen"
        )
    if count == len(groups):
        encoder.freeze()
        return []
    for p in encoder.parameters():
        p.requires_grad_(False)
    for group in groups[count:]:
        for p in group.parameters():
            p.requires_grad_(True)
    encoder.freeze_parts([m for g in groups[:count] for m in g.modules])
    return groups[count:]


def parse_multipliers(value: Any) -> tuple[float, ...] | None:
    """'1,2,4,10,20' (or a list of numbers; None or '' for none) -> positive floats; ValueError in CLI words."""
    if value is None or value == "" or value == []:
        return None
    items: Iterable[Any] = value.split(",") if isinstance(value, str) else value
    try:
        numbers = tuple(float(v) for v in items)
    except (TypeError, ValueError):
        numbers = ()
    if not numbers or any(not n > 0 or n == float("inf") for n in numbers):
        raise ValueError(f"-o lr_multipliers={value} must be positive numbers separated by commas, e.g. 1,2,4,10,20")
    return numbers


def param_groups(
    encoder: Encoder,
    *,
    frozen_groups: int = 0,
    lr: float,
    multipliers: Sequence[float] | str | None = None,
    head: nn.Module | None = None,
    head_multiplier: float | None = None,
    weight_decay: float | None = None,
) -> list[dict[str, Any]]:
    """Freeze the first `frozen_groups` layer groups of `encoder` (`freeze_groups`) and return the optimizer's
    param groups for the rest: one dict per trainable group, {'params', 'lr': lr x multiplier, 'lr_multiplier',
    'name'} (plus 'weight_decay' when given), then one for `head` (the learner's own new layers, if any).

    `multipliers`: one per trainable group, input side first (None: all 1); their count must match.
    `head_multiplier`: the head's (None: the last group's multiplier, 1 without multipliers).
    Pass the result to torch.optim.SGD(groups, lr=lr, ...): schedulers scale each group's own lr.
    """
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    factors = parse_multipliers(multipliers)
    total = len(layer_groups(encoder))
    if factors is not None and len(factors) != total - int(frozen_groups) and 0 <= int(frozen_groups) <= total:
        after = f" after the {frozen_groups} frozen ones" if frozen_groups else ""
        raise ValueError(
            f"-o lr_multipliers has {len(factors)} values but {_name(encoder)} has {total - frozen_groups} "
            f"groups{after} ({describe_groups(encoder)}); give one multiplier per trainable group"
        )
    trainable = freeze_groups(encoder, frozen_groups)
    factors = factors or (1.0,) * len(trainable)
    out: list[dict[str, Any]] = []
    for group, factor in zip(trainable, factors, strict=True):
        out.append({"params": group.parameters(), "lr": lr * factor, "lr_multiplier": factor, "name": group.name})
    if head is not None:
        if head_multiplier is not None and not head_multiplier > 0:
            raise ValueError(f"-o head_lr_multiplier={head_multiplier} must be a positive number")
        factor = head_multiplier if head_multiplier is not None else (factors[-1] if factors else 1.0)
        params = [p for p in head.parameters() if p.requires_grad]
        if params:
            out.append({"params": params, "lr": lr * factor, "lr_multiplier": factor, "name": "new head"})
    if not out:
        raise ValueError(f"nothing to train: every layer group of {_name(encoder)} is frozen and there is no head")
    if weight_decay is not None:
        for group in out:
            group["weight_decay"] = weight_decay
    return out


@dataclass(frozen=True)
class FineTune:
    """A learner's fine-tuning choice: `mode` frozen (features only), full, or partial (the first
    `frozen_groups` layer groups frozen); `lr_multipliers` one per trainable group (None: all 1);
    `head_lr_multiplier` for the learner's new head (None: the last group's)."""

    mode: str = "frozen"
    frozen_groups: int = 0
    lr_multipliers: tuple[float, ...] | None = None
    head_lr_multiplier: float | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            hint = did_you_mean(self.mode, MODES)
            raise ValueError(f"-o finetune={self.mode} is not one of {', '.join(MODES)}{hint}")
        if self.mode == "partial" and self.frozen_groups < 1:
            raise ValueError(
                "-o finetune=partial needs -o frozen_groups=K, how many layer groups to freeze from the input side "
                "(1 or more)"
            )
        if self.mode != "partial" and self.frozen_groups:
            raise ValueError(f"-o frozen_groups={self.frozen_groups} needs -o finetune=partial (not {self.mode})")
        if self.frozen_groups < 0:
            raise ValueError(f"-o frozen_groups={self.frozen_groups} must be 0 or more")
        if self.mode == "frozen" and self.lr_multipliers is not None:
            raise ValueError("-o lr_multipliers needs -o finetune=full or partial: a frozen encoder does not train")
        if self.head_lr_multiplier is not None and not self.head_lr_multiplier > 0:
            raise ValueError(f"-o head_lr_multiplier={self.head_lr_multiplier} must be a positive number")

    @classmethod
    def from_options(
        cls,
        finetune: str = "frozen",
        frozen_groups: int | None = None,
        lr_multipliers: Any = None,
        head_lr_multiplier: float | None = None,
    ) -> FineTune:
        """From the learner options as typed: `-o frozen_groups=K` alone implies partial."""
        frozen = int(frozen_groups or 0)
        mode = "partial" if frozen and finetune == "frozen" else str(finetune)
        head = None if head_lr_multiplier is None else float(head_lr_multiplier)
        return cls(mode, frozen, parse_multipliers(lr_multipliers), head)

    @property
    def trains_encoder(self) -> bool:
        return self.mode != "frozen"

    def apply(self, encoder: Encoder) -> list[LayerGroup]:
        """Set `encoder`'s frozen and trainable parts; return the trainable groups (none when frozen)."""
        if self.mode == "frozen":
            encoder.freeze()
            return []
        return freeze_groups(encoder, self.frozen_groups)

    def param_groups(
        self,
        encoder: Encoder,
        *,
        lr: float,
        head: nn.Module | None = None,
        weight_decay: float | None = None,
    ) -> list[dict[str, Any]]:
        """`apply` plus the optimizer's param groups (see `param_groups`); frozen: the head's group only."""
        frozen = len(layer_groups(encoder)) if self.mode == "frozen" else self.frozen_groups
        return param_groups(
            encoder,
            frozen_groups=frozen,
            lr=lr,
            multipliers=self.lr_multipliers,
            head=head,
            head_multiplier=self.head_lr_multiplier,
            weight_decay=weight_decay,
        )

    def describe(self) -> str:
        if self.mode == "frozen":
            return "frozen encoder (features only)"
        what = "fully fine-tuned" if self.mode == "full" else f"fine-tuned, first {self.frozen_groups} groups frozen"
        if self.lr_multipliers:
            what += ", lr x " + "/".join(f"{m:g}" for m in self.lr_multipliers)
        return what
