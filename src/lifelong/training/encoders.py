"""Frozen feature encoders (spec/clear.md section 4): load, save and run a backbone for linear probing.

An `Encoder` maps images prepared by `lifelong.training.inputs.prepare_batch` to features [N, D]. It can come
from our own checkpoint (`save_encoder`, e.g. written after `lifelong.training.ssl.pretrain_simclr`), from a
supervised checkpoint of `lifelong.training.pretrain`, from a TorchScript file or from a "package.module:factory"
import path, so the linear regime can probe any backbone the same way.
"""

from __future__ import annotations

import importlib
import re
import warnings
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from lifelong.training.checkpoints import format_tag, read_torch_file, write_torch_file
from lifelong.training.devices import KEEPS_LAYOUT, current_accelerator
from lifelong.training.flops import count_inference_flops, model_device
from lifelong.training.inputs import prepare_batch
from lifelong.training.models import initialise, make_model
from lifelong.training.pretrain import FORMAT as PRETRAINED_FORMAT
from lifelong.training.pretrain import load_pretrained

FORMAT = "lifelong-encoder-v1"
DEFAULT_RESOLUTION = 32  # input side for TorchScript / factory encoders when none is given
_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*$")


class Encoder(nn.Module):
    """Prepared images [N, C, H, W] -> features [N, feature_dim]; frozen and in eval mode unless `unfreeze()`d.

    While frozen, `train(True)` keeps the wrapped module in eval mode, so a probe trained around it never
    updates BatchNorm statistics. `resolution`: side images are centre-resized to (None: native size).
    """

    def __init__(
        self,
        module: nn.Module,
        *,
        feature_dim: int,
        resolution: int | None = None,
        in_channels: int = 3,
        description: str = "",
        frozen: bool = True,
        keep_layout: bool = False,
    ) -> None:
        super().__init__()
        if feature_dim < 1 or in_channels < 1 or (resolution is not None and resolution < 1):
            raise ValueError(
                f"need feature_dim >= 1, in_channels >= 1 and resolution None or >= 1; got feature_dim={feature_dim}, "
                f"in_channels={in_channels}, resolution={resolution}"
            )
        self.module = module
        self.feature_dim = int(feature_dim)
        self.resolution = None if resolution is None else int(resolution)
        self.in_channels = int(in_channels)
        self.description = description
        setattr(self, KEEPS_LAYOUT, keep_layout)  # a user's module may `.view` its activations: NCHW in, NCHW weights
        self.frozen = False
        if frozen:
            self.freeze()

    def freeze(self) -> Encoder:
        """Stop gradients to every parameter and switch to eval mode (the default)."""
        self.frozen = True
        for p in self.parameters():
            p.requires_grad_(False)
        return self.eval()

    def unfreeze(self) -> Encoder:
        """Let the parameters train again (fine-tuning); train/eval mode is then the caller's choice."""
        self.frozen = False
        for p in self.parameters():
            p.requires_grad_(True)
        return self

    def train(self, mode: bool = True) -> Encoder:
        return super().train(mode and not self.frozen)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.module(x.contiguous() if getattr(self, KEEPS_LAYOUT, False) else x)

    def extra_repr(self) -> str:
        return (
            f"feature_dim={self.feature_dim}, resolution={self.resolution}, in_channels={self.in_channels}, "
            f"frozen={self.frozen}, description={self.description!r}"
        )


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
        return _backbone_encoder(
            self.architecture,
            self.backbone_state,
            in_channels=self.in_channels,
            resolution=self.resolution if resolution is None else resolution,
            description=description,
        )


def _backbone_encoder(
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


def _first_conv_channels(module: nn.Module) -> int | None:
    for m in module.modules():
        if isinstance(m, nn.Conv2d):
            return int(m.in_channels)
        if getattr(m, "original_name", None) == "Conv2d":  # inside a TorchScript module
            try:
                return int(m.in_channels)
            except (AttributeError, RuntimeError, TypeError):
                return None
    return None


def _wrap_module(module: Any, *, resolution: int | None, in_channels: int | None, description: str) -> Encoder:
    """An Encoder around an arbitrary module; the feature size comes from one forward pass on zeros."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"{description} gave a {type(module).__name__}, not a torch.nn.Module")
    side = DEFAULT_RESOLUTION if resolution is None else int(resolution)
    channels = in_channels or _first_conv_channels(module) or 3
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            out = module(torch.zeros(2, channels, side, side, device=model_device(module)))
    except Exception as exc:
        raise ValueError(
            f"{description} failed on a dummy batch [2, {channels}, {side}, {side}] ({type(exc).__name__}: {exc}); "
            "pass resolution= (and in_channels=) that the module accepts"
        ) from exc
    finally:
        module.train(was_training)
    if not isinstance(out, torch.Tensor) or out.ndim != 2 or out.shape[0] != 2:
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(
            f"{description} must return features [N, D] for a batch [N, C, H, W]; got {shape} for N=2: "
            "pool and flatten inside the module (e.g. end with nn.AdaptiveAvgPool2d(1), nn.Flatten())"
        )
    encoder = Encoder(
        module,
        feature_dim=int(out.shape[1]),
        resolution=side,
        in_channels=channels,
        description=description,
        keep_layout=True,
    )
    return current_accelerator().place(encoder)


def _is_torchscript(path: Path) -> bool:
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    return any(n.endswith("constants.pkl") or "/code/" in n for n in names)


def _from_import_path(spec: str, *, resolution: int | None, in_channels: int | None) -> Encoder:
    module_name, factory_name = spec.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r} of encoder spec {spec!r}: {exc}") from exc
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise ValueError(f"{module_name!r} has no callable {factory_name!r} (encoder spec {spec!r})")
    return _wrap_module(factory(), resolution=resolution, in_channels=in_channels, description=f"factory {spec}")


def check_encoder_spec(spec: str | Path) -> str:
    """Which kind a usable encoder spec is ("file" or "import path"); FileNotFoundError naming it otherwise."""
    text = str(spec)
    if Path(text).is_file():
        return "file"
    if not Path(text).exists() and _IMPORT_PATH.match(text):
        return "import path"
    raise FileNotFoundError(
        f"encoder {text!r} not found: give a checkpoint file (save_encoder / `lifelong pretrain`), a TorchScript "
        "file, or an import path 'package.module:factory'"
    )


def load_encoder(spec: str | Path, *, resolution: int | None = None, in_channels: int | None = None) -> Encoder:
    """A frozen Encoder from `spec`: a lifelong-encoder-v1 or lifelong-pretrained-v1 checkpoint, a TorchScript
    file, or "package.module:factory" (factory() returns an nn.Module mapping [N, C, H, W] to [N, D]), on the
    current accelerator.

    `resolution` overrides a checkpoint's input side; for TorchScript and factories it is the input side
    (default 32), and `in_channels` (default: the first Conv2d's, else 3) the input channels.
    """
    text = str(spec)
    path = Path(text)
    if check_encoder_spec(text) == "import path":
        return _from_import_path(text, resolution=resolution, in_channels=in_channels)
    if _is_torchscript(path):
        with warnings.catch_warnings():  # torch >= 2.9 marks TorchScript deprecated; loading still works
            warnings.simplefilter("ignore", DeprecationWarning)
            module = torch.jit.load(str(path), map_location="cpu")
        return _wrap_module(module, resolution=resolution, in_channels=in_channels, description=f"TorchScript {text}")
    contents = read_torch_file(path, f"{text!r} is neither a TorchScript file nor a readable checkpoint ({{cause}})")
    found = format_tag(contents)
    if found == FORMAT:
        return EncoderCheckpoint.from_dict(contents).to_encoder(resolution=resolution)
    if found == PRETRAINED_FORMAT:
        ckpt = load_pretrained(path)
        channels = int(ckpt.backbone["stem.0.weight"].shape[1])
        side = ckpt.details.get("resolution") if resolution is None else resolution
        return _backbone_encoder(
            ckpt.architecture,
            ckpt.backbone,
            in_channels=channels,
            resolution=None if side is None else int(side),
            description=f"supervised {ckpt.architecture} on {ckpt.source}",
        )
    raise ValueError(
        f"{text!r} has unknown format {found!r}; expected {FORMAT!r} (save_encoder), {PRETRAINED_FORMAT!r} "
        "(`lifelong pretrain`) or a TorchScript file (torch.jit.save)"
    )


def check_images(images: np.ndarray) -> np.ndarray:
    """`images` as uint8 [N, H, W, C], else a ValueError saying how to convert them."""
    images = np.asarray(images)
    if images.ndim != 4 or images.dtype != np.uint8:
        raise ValueError(
            f"images must be uint8 [N, H, W, C], got {images.dtype} {images.shape}; "
            "convert with np.asarray(images, dtype=np.uint8) and add a channel axis if missing"
        )
    return images


def encode(encoder: Encoder, images: np.ndarray, *, batch_size: int = 256) -> np.ndarray:
    """uint8 [N, H, W, C] -> float32 features [N, D] in stored order (eval mode, no gradients; mode restored)."""
    from lifelong.training.continual_loop import predict_items

    images = check_images(images)
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if len(images) == 0:
        return np.zeros((0, encoder.feature_dim), dtype=np.float32)
    return predict_items(encoder, images, batch_size, resolution=encoder.resolution)


def encoder_flops(encoder: Encoder, image_shape: Sequence[int]) -> float:
    """Forward FLOPs per image of shape (H, W, C) or (H, W): the cost of `encode` per example."""
    shape = tuple(int(s) for s in image_shape)
    if len(shape) == 2:
        shape = (*shape, 1)
    if len(shape) != 3 or min(shape) < 1:
        raise ValueError(f"image_shape must be (H, W) or (H, W, C) with positive sides, got {tuple(image_shape)}")
    x = prepare_batch(np.zeros((1, *shape), dtype=np.uint8), channels=encoder.in_channels, size=encoder.resolution)
    return count_inference_flops(encoder, x)
