"""The toolkit's own encoder checkpoints (`lifelong-encoder-v1`, written by `save_encoder`, e.g. after
`lifelong pretrain-ssl` or `lifelong cog pretrain`): a models.py backbone, its input settings, and how it was made."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from lifelong.training.checkpoints import write_torch_file
from lifelong.training.devices import current_accelerator
from lifelong.training.encoders.base import Encoder
from lifelong.training.models import initialise, make_model

FORMAT = "lifelong-encoder-v1"


@dataclass
class EncoderCheckpoint:
    """A `lifelong-encoder-v1` checkpoint: a models.py backbone, its input settings, and how it was made."""

    architecture: str
    backbone_state: dict[str, torch.Tensor]
    resolution: int | None
    in_channels: int
    feature_dim: int
    method: str = ""
    source: str = ""
    seed: int = 0
    epochs: int = 0
    train_flops: float = 0.0
    history: list[dict[str, float]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The saved form (tensors and plain values only, so it loads with weights_only=True)."""
        return {
            "format": FORMAT,
            "architecture": self.architecture,
            "backbone_state": {k: v.detach().to("cpu") for k, v in self.backbone_state.items()},
            "resolution": self.resolution,
            "in_channels": int(self.in_channels),
            "feature_dim": int(self.feature_dim),
            "method": self.method,
            "source": self.source,
            "seed": int(self.seed),
            "epochs": int(self.epochs),
            "train_flops": float(self.train_flops),
            "history": [dict(h) for h in self.history],
            "details": dict(self.details),
        }

    @classmethod
    def from_dict(cls, contents: Mapping[str, Any]) -> EncoderCheckpoint:
        """Inverse of `to_dict` (checks the format tag)."""
        if contents.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} checkpoint (format {contents.get('format')!r})")
        return cls(
            architecture=contents["architecture"],
            backbone_state=dict(contents["backbone_state"]),
            resolution=contents["resolution"],
            in_channels=int(contents["in_channels"]),
            feature_dim=int(contents["feature_dim"]),
            method=contents.get("method", ""),
            source=contents.get("source", ""),
            seed=int(contents.get("seed", 0)),
            epochs=int(contents.get("epochs", 0)),
            train_flops=float(contents.get("train_flops", 0.0)),
            history=list(contents.get("history", [])),
            details=dict(contents.get("details", {})),
        )

    def to_encoder(self, *, resolution: int | None = None) -> Encoder:
        """A frozen Encoder with these weights (`resolution` overrides the stored one)."""
        description = f"{self.method or 'encoder'} {self.architecture}" + (f" on {self.source}" if self.source else "")
        return backbone_encoder(
            self.architecture,
            self.backbone_state,
            in_channels=self.in_channels,
            resolution=self.resolution if resolution is None else resolution,
            description=description,
        )


def backbone_encoder(
    architecture: str,
    state: Mapping[str, torch.Tensor],
    *,
    in_channels: int,
    resolution: int | None,
    description: str,
) -> Encoder:
    backbone = make_model(architecture, 1, in_channels=in_channels).backbone
    try:
        backbone.load_state_dict(state)
    except RuntimeError as exc:
        raise ValueError(
            f"the saved backbone does not fit architecture {architecture!r} with in_channels={in_channels}: {exc}"
        ) from exc
    encoder = Encoder(
        backbone,
        feature_dim=backbone.out_features,
        resolution=resolution,
        in_channels=in_channels,
        description=description,
    )
    return current_accelerator().place(encoder)


def untrained_encoder(
    architecture: str, *, in_channels: int = 3, resolution: int | None = None, seed: int = 0
) -> EncoderCheckpoint:
    """A randomly initialised (seeded) backbone as a checkpoint: the control that says how much of a probe's
    accuracy the architecture and the pixels give without any training."""
    backbone = initialise(make_model(architecture, 1, in_channels=in_channels).backbone, seed)
    return EncoderCheckpoint(
        architecture=architecture,
        backbone_state=backbone.state_dict(),
        resolution=resolution,
        in_channels=in_channels,
        feature_dim=backbone.out_features,
        method="random-init",
        seed=seed,
    )


def save_encoder(checkpoint: EncoderCheckpoint, path: str | Path) -> Path:
    """Write `checkpoint` atomically to `path` (a file; parents are created) and return the path."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{str(path)!r} is a folder; give a file path such as {str(path / 'encoder.pt')!r}")
    return write_torch_file(checkpoint.to_dict(), path)
