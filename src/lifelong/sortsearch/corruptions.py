"""Image corruptions of the zoo's test samples: uint8 [N, H, W, C] -> uint8 of the same shape, each a function of
the images, a level (noise std, blur sigma, ...) and a generator, so the same seed gives the same pixels."""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from lifelong.core.seeds import derive_seed
from lifelong.core.suggest import did_you_mean

_CORRUPT = 16  # derive_seed tag (the zoo's tags are 11-15)


def _to_uint8(x: np.ndarray | torch.Tensor) -> np.ndarray:
    x = x.numpy() if isinstance(x, torch.Tensor) else x
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)


def _nchw(images: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).to(torch.float32)


def _nhwc(x: torch.Tensor) -> np.ndarray:
    return _to_uint8(x.permute(0, 2, 3, 1).contiguous())


def gaussian_noise(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """Additive Gaussian pixel noise with standard deviation `level` x 255."""
    return _to_uint8(images + rng.normal(0.0, level * 255.0, images.shape))


def gaussian_blur(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """Separable Gaussian blur with standard deviation `level` pixels (reflected borders)."""
    radius = max(1, math.ceil(3 * level))
    t = torch.arange(-radius, radius + 1, dtype=torch.float32)
    kernel = torch.exp(-0.5 * (t / level) ** 2)
    kernel /= kernel.sum()
    x = _nchw(images)
    c = x.shape[1]
    x = F.pad(x, (radius, radius, radius, radius), mode="reflect")
    x = F.conv2d(x, kernel.view(1, 1, 1, -1).expand(c, 1, 1, -1), groups=c)
    x = F.conv2d(x, kernel.view(1, 1, -1, 1).expand(c, 1, -1, 1), groups=c)
    return _nhwc(x)


def reduce_contrast(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """Pixels pulled towards each image's mean: x' = mean + `level` x (x - mean)."""
    x = images.astype(np.float32)
    mean = x.mean(axis=(1, 2, 3), keepdims=True)
    return _to_uint8(mean + level * (x - mean))


def rotate(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """Rotation by +-`level` degrees (random sign per image, bilinear, black corners)."""
    n = len(images)
    angle = np.deg2rad(level) * rng.choice((-1.0, 1.0), size=n)
    cos, sin = torch.from_numpy(np.cos(angle)).float(), torch.from_numpy(np.sin(angle)).float()
    zero = torch.zeros(n)
    theta = torch.stack([torch.stack([cos, -sin, zero], 1), torch.stack([sin, cos, zero], 1)], 1)
    x = _nchw(images)
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    return _nhwc(F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False))


def occlude(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """A mid-gray square of side `level` x the image side, at a random position in each image."""
    n, height, width, _ = images.shape
    side = max(1, round(level * min(height, width)))
    top = rng.integers(0, height - side + 1, size=n)
    left = rng.integers(0, width - side + 1, size=n)
    rows = np.arange(height)[None, :, None]
    cols = np.arange(width)[None, None, :]
    in_rows = (rows >= top[:, None, None]) & (rows < (top + side)[:, None, None])
    inside = in_rows & (cols >= left[:, None, None]) & (cols < (left + side)[:, None, None])
    out = images.copy()
    out[inside] = 128
    return out


@dataclass(frozen=True)
class Corruption:
    """A corruption function and its level (noise std, blur sigma, ...) at severities 1..5."""

    apply: Callable[[np.ndarray, float, np.random.Generator], np.ndarray]
    levels: tuple[float, ...]


CORRUPTIONS: dict[str, Corruption] = {
    "noise": Corruption(gaussian_noise, (0.06, 0.12, 0.2, 0.3, 0.45)),
    "blur": Corruption(gaussian_blur, (0.5, 0.8, 1.1, 1.5, 2.0)),
    "contrast": Corruption(reduce_contrast, (0.6, 0.45, 0.3, 0.2, 0.12)),
    "rotation": Corruption(rotate, (10.0, 20.0, 30.0, 45.0, 60.0)),
    "occlusion": Corruption(occlude, (0.2, 0.3, 0.4, 0.5, 0.6)),
}


def corruption_level(name: str, severity: int) -> float:
    """The level (noise std, blur sigma, ...) of corruption `name` at `severity`; an error for unknown ones."""
    if name not in CORRUPTIONS:
        raise ValueError(
            f"unknown corruption {name!r}{did_you_mean(name, CORRUPTIONS)}; "
            f"choose from {', '.join(sorted(CORRUPTIONS))}"
        )
    levels = CORRUPTIONS[name].levels
    if not isinstance(severity, int | np.integer) or not 1 <= severity <= len(levels):
        raise ValueError(f"corruption {name!r}: severity must be an integer in 1..{len(levels)}, got {severity!r}")
    return levels[severity - 1]


def corrupt(images: np.ndarray, name: str, severity: int, seed: int = 0) -> np.ndarray:
    """`images` (uint8 [N, H, W, C]) under corruption `name` at `severity` (1..5); the same seed, the same pixels."""
    level = corruption_level(name, severity)
    images = np.asarray(images)
    if images.ndim != 4 or images.dtype != np.uint8:
        raise ValueError(f"images must be uint8 [N, H, W, C], got {images.dtype} {images.shape}")
    rng = np.random.default_rng(derive_seed(seed, _CORRUPT, zlib.crc32(name.encode()), int(severity)))
    return CORRUPTIONS[name].apply(images, level, rng)
