"""The Encoder: a frozen backbone that knows its input preprocessing, feature size, identity and optional ImageNet head.

Every encoder takes images in the toolkit's input convention (float [N, C, H, W] in [-1, 1], what
`lifelong.training.inputs.prepare_batch` makes) and maps them to its own normalisation inside `forward`, so callers
that prepare batches the toolkit's way keep working; `prepare` turns uint8 HWC images of any size into such a batch
with the encoder's own resize and crop (`Preprocessing`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch import nn

from lifelong.training.devices import KEEPS_LAYOUT, current_accelerator
from lifelong.training.inputs import to_input_tensor

TOOLKIT_RANGE = "[-1, 1]"


@dataclass(frozen=True)
class Preprocessing:
    """How uint8 images become this encoder's input.

    `resolution`: side of the square input (None: native size, no resize). `crop_fraction`: the centre square
    kept, as a fraction of the shorter side, before the bicubic resize to `resolution` (TF's eval transform keeps
    R / (R + 32)); 1.0 keeps the whole shorter side. `mean` and `std` act on pixels scaled to [0, 1]
    (mean 0.5, std 0.5 is the toolkit's own [-1, 1]).
    """

    resolution: int | None = None
    crop_fraction: float = 1.0
    mean: tuple[float, ...] = (0.5, 0.5, 0.5)
    std: tuple[float, ...] = (0.5, 0.5, 0.5)

    def __post_init__(self) -> None:
        if self.resolution is not None and int(self.resolution) < 1:
            raise ValueError(f"resolution must be None or >= 1, got {self.resolution}")
        if not 0.0 < self.crop_fraction <= 1.0:
            raise ValueError(f"crop_fraction must be in (0, 1], got {self.crop_fraction}")
        if len(self.mean) != len(self.std) or min(self.std) <= 0:
            raise ValueError(f"mean and std need one value per channel and std > 0; got {self.mean}, {self.std}")

    @property
    def is_toolkit_range(self) -> bool:
        return all(m == 0.5 for m in self.mean) and all(s == 0.5 for s in self.std)

    def describe(self) -> str:
        """One line for listings and sidecars."""
        size = "native size" if self.resolution is None else f"{self.resolution}x{self.resolution}"
        crop = "" if self.crop_fraction == 1.0 else f"centre crop {self.crop_fraction:.3f} of the shorter side, "
        if self.is_toolkit_range:
            norm = "pixels scaled to [-1, 1]"
        else:
            mean = ", ".join(f"{255 * m:.4g}" for m in self.mean)
            std = ", ".join(f"{255 * v:.4g}" for v in self.std)
            norm = f"pixels (0-255) minus mean ({mean}) over std ({std})"
        return f"{crop}bicubic resize to {size}, {norm}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "mean": list(self.mean), "std": list(self.std)}


def square_image(image: np.ndarray, resolution: int | None, crop_fraction: float = 1.0) -> np.ndarray:
    """uint8 [H, W, C] -> uint8 [R, R, C]: centre square of `crop_fraction` x the shorter side, bicubic to R."""
    if image.ndim != 3 or image.dtype != np.uint8:
        raise ValueError(f"an image must be uint8 [H, W, C], got {image.dtype} {image.shape}")
    if resolution is None:
        return image
    h, w, channels = image.shape
    side = max(1, round(min(h, w) * crop_fraction))
    top, left = (h - side) // 2, (w - side) // 2
    crop = image[top : top + side, left : left + side]
    if side == resolution:
        return np.ascontiguousarray(crop)
    pil = Image.fromarray(crop[:, :, 0] if channels == 1 else crop)
    out = np.asarray(pil.resize((resolution, resolution), Image.Resampling.BICUBIC))
    return out.reshape(resolution, resolution, channels)


def weights_sha256(module: nn.Module) -> str:
    """A digest of every parameter and buffer (names, dtypes, shapes, bytes): the weights' identity."""
    digest = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        flat = tensor.detach().to("cpu").contiguous().reshape(-1)
        digest.update(f"{name}:{flat.dtype}:{tuple(tensor.shape)};".encode())
        if flat.numel():
            digest.update(flat.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


class Encoder(nn.Module):
    """Prepared images [N, C, H, W] in [-1, 1] -> features [N, feature_dim]; frozen and in eval mode unless
    `unfreeze()`d.

    While frozen, `train(True)` keeps the wrapped module in eval mode, so a probe trained around it never updates
    BatchNorm statistics. `resolution`: the side images are brought to (None: native size). `head` (optional):
    features -> logits over `labels` (ImageNet-1K wnids for the built-in models). `source` and `licence` say where
    the weights come from, for `lifelong models list`.
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
        preprocessing: Preprocessing | None = None,
        head: nn.Module | None = None,
        labels: Sequence[str] | None = None,
        source: str = "",
        licence: str = "",
    ) -> None:
        super().__init__()
        if feature_dim < 1 or in_channels < 1 or (resolution is not None and resolution < 1):
            raise ValueError(
                f"need feature_dim >= 1, in_channels >= 1 and resolution None or >= 1; got feature_dim={feature_dim}, "
                f"in_channels={in_channels}, resolution={resolution}"
            )
        if (head is None) != (labels is None):
            raise ValueError("give a head together with its labels (one per output), or neither")
        self.module = module
        self.head = head
        self.labels = None if labels is None else list(labels)
        self.feature_dim = int(feature_dim)
        self.in_channels = int(in_channels)
        self.description = description
        self.source = source
        self.licence = licence
        base = preprocessing or Preprocessing()
        self.preprocessing = Preprocessing(
            resolution if resolution is not None else base.resolution, base.crop_fraction, base.mean, base.std
        )
        self._set_normalisation()
        setattr(self, KEEPS_LAYOUT, keep_layout)  # a user's module may `.view` its activations: NCHW in, NCHW weights
        self.frozen = False
        self._frozen_parts: tuple[nn.Module, ...] = ()  # kept in eval mode while the rest fine-tunes
        if frozen:
            self.freeze()

    def _set_normalisation(self) -> None:
        p = self.preprocessing
        if p.is_toolkit_range:
            self.register_buffer("_scale", None, persistent=False)
            self.register_buffer("_shift", None, persistent=False)
            return
        channels = self.in_channels
        mean = torch.tensor(p.mean if len(p.mean) == channels else p.mean[:1] * channels, dtype=torch.float32)
        std = torch.tensor(p.std if len(p.std) == channels else p.std[:1] * channels, dtype=torch.float32)
        # x in [-1, 1] -> ((x + 1) / 2 - mean) / std, as one affine map per channel
        self.register_buffer("_scale", (0.5 / std).view(1, -1, 1, 1), persistent=False)
        self.register_buffer("_shift", ((0.5 - mean) / std).view(1, -1, 1, 1), persistent=False)

    @property
    def resolution(self) -> int | None:
        return self.preprocessing.resolution

    @resolution.setter
    def resolution(self, value: int | None) -> None:
        p = self.preprocessing
        self.preprocessing = Preprocessing(None if value is None else int(value), p.crop_fraction, p.mean, p.std)

    def freeze(self) -> Encoder:
        """Stop gradients to every parameter and switch to eval mode (the default)."""
        self.frozen = True
        self._frozen_parts = ()
        for p in self.parameters():
            p.requires_grad_(False)
        return self.eval()

    def unfreeze(self) -> Encoder:
        """Let the parameters train again (fine-tuning); train/eval mode is then the caller's choice."""
        self.frozen = False
        self._frozen_parts = ()
        for p in self.parameters():
            p.requires_grad_(True)
        return self

    def freeze_parts(self, modules: Sequence[nn.Module]) -> Encoder:
        """Keep `modules` (submodules, e.g. the first layer groups) in eval mode whatever `train()` is given, the
        rest of the encoder trainable in mode; requires_grad is the caller's (`finetune.freeze_groups` sets both)."""
        self.frozen = False
        self._frozen_parts = tuple(modules)
        return self.train(self.training)

    def layer_groups(self) -> list[Any]:
        """The feature module's layer groups, input side first (`finetune.layer_groups`)."""
        from lifelong.training.encoders.finetune import layer_groups

        return layer_groups(self)

    def train(self, mode: bool = True) -> Encoder:
        super().train(mode and not self.frozen)
        for part in self._frozen_parts if mode else ():
            part.train(False)
        return self

    def normalise(self, x: torch.Tensor) -> torch.Tensor:
        """Toolkit-range input -> this encoder's normalisation."""
        if self._scale is None:
            return x
        return x * self._scale.to(x.dtype) + self._shift.to(x.dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.normalise(x)
        return self.module(x.contiguous() if getattr(self, KEEPS_LAYOUT, False) else x)

    def classify(self, x: torch.Tensor) -> torch.Tensor:
        """Prepared images -> logits over `labels`; ValueError for an encoder without a head."""
        if self.head is None:
            raise ValueError(f"{self.description or 'this encoder'} has no classifier head")
        return self.head(self(x))

    def prepare(self, images: np.ndarray | Sequence[np.ndarray]) -> torch.Tensor:
        """uint8 images [H, W, C] of any sizes (or one array [N, H, W, C]) -> a batch for `forward`, with this
        encoder's resize and crop; 1-channel images are replicated to 3 channels (and the reverse is refused)."""
        p = self.preprocessing
        squares = [square_image(np.asarray(image), p.resolution, p.crop_fraction) for image in images]
        if not squares:
            raise ValueError("no images to prepare")
        shapes = {s.shape[:2] for s in squares}
        if len(shapes) > 1:
            raise ValueError(f"images of native size differ ({sorted(shapes)}); give the encoder a resolution")
        squares = [np.repeat(s, 3, axis=2) if s.shape[2] == 1 and self.in_channels == 3 else s for s in squares]
        return to_input_tensor(np.stack(squares), self.in_channels)

    def identity(self, precision: str | None = None) -> dict[str, Any]:
        """What makes two encoders' features comparable: weights, preprocessing and precision (None: the current
        accelerator's)."""
        if precision is None:
            precision = current_accelerator().resolved_precision
        return {
            "weights_sha256": weights_sha256(self),
            "preprocessing": self.preprocessing.to_dict(),
            "precision": precision,
            "feature_dim": self.feature_dim,
            "in_channels": self.in_channels,
            "description": self.description,
        }

    def extra_repr(self) -> str:
        return (
            f"feature_dim={self.feature_dim}, resolution={self.resolution}, in_channels={self.in_channels}, "
            f"frozen={self.frozen}{', partly' if self._frozen_parts else ''}, "
            f"head={self.head is not None}, description={self.description!r}"
        )
