"""Image batches -> model inputs: scaling, channel handling, augmentation, resizing
(docs/protocols/nevis.md#training-recipe).

Everything works on whole batches in torch; random choices come from a `torch.Generator`, so the same
seed gives the same pixels.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

Size = int | tuple[int, int]

CROP_AREA = (0.08, 1.0)
CROP_RATIO = (3.0 / 4.0, 4.0 / 3.0)
_CROP_ATTEMPTS = 10


def to_input_tensor(images: np.ndarray | torch.Tensor, channels: int = 3) -> torch.Tensor:
    """uint8 [N, H, W, C] -> float32 [N, channels, H, W] in [-1, 1]; 1-channel images are replicated to 3."""
    if isinstance(images, np.ndarray):
        images = torch.from_numpy(np.ascontiguousarray(images))
    if images.ndim != 4 or images.dtype != torch.uint8:
        raise ValueError(
            f"images must be uint8 [N, H, W, C], got {images.dtype} {tuple(images.shape)}; "
            "convert with np.asarray(images, dtype=np.uint8) and add a channel axis if missing"
        )
    have = images.shape[-1]
    if have != channels:
        if have == 1 and channels == 3:
            images = images.expand(-1, -1, -1, 3)
        else:
            raise ValueError(
                f"images have {have} channels but the model expects {channels}; only 1 -> 3 is converted "
                "automatically: build the model with in_channels matching the data"
            )
    # make the uint8 tensor contiguous first (4x less to move), then scale in place: one float pass. The float
    # copy gets standard NCHW strides even with one channel, where torch keeps the NHWC stride of the size-1
    # dimension: oneDNN (torch 2.13, CPU) corrupts the heap training narrow convolutions on such strides.
    x = images.permute(0, 3, 1, 2).contiguous().to(torch.float32, memory_format=torch.contiguous_format)
    return x.div_(127.5).sub_(1.0)


def _hw(size: Size | None, x: torch.Tensor) -> tuple[int, int]:
    if size is None:
        return int(x.shape[-2]), int(x.shape[-1])
    if isinstance(size, int):
        size = (size, size)
    if len(size) != 2 or min(size) < 1:
        raise ValueError(f"size must be a positive int or (height, width), got {size!r}")
    return int(size[0]), int(size[1])


def _check_batch(x: torch.Tensor) -> None:
    if x.ndim != 4 or not x.is_floating_point():
        raise ValueError(f"expected a float batch [N, C, H, W] (from to_input_tensor), got {x.dtype} {tuple(x.shape)}")


def sample_crop_boxes(
    n: int,
    height: int,
    width: int,
    generator: torch.Generator,
    area: tuple[float, float] = CROP_AREA,
    ratio: tuple[float, float] = CROP_RATIO,
) -> torch.Tensor:
    """Random crop boxes [n, 4] = (top, left, crop height, crop width) in pixels (floats).

    Each box covers a fraction of the image area uniform in `area`, with aspect ratio (w/h) log-uniform in
    `ratio`; 10 tries per image, then the largest centred box whose ratio lies within `ratio`.
    """
    if not (0 < area[0] <= area[1] <= 1) or not (0 < ratio[0] <= ratio[1]):
        raise ValueError(f"need 0 < area[0] <= area[1] <= 1 and 0 < ratio[0] <= ratio[1], got {area}, {ratio}")
    u = torch.rand(n, _CROP_ATTEMPTS, 4, generator=generator, dtype=torch.float64)
    target = height * width * (area[0] + (area[1] - area[0]) * u[..., 0])
    log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
    aspect = torch.exp(log_lo + (log_hi - log_lo) * u[..., 1])
    w = torch.sqrt(target * aspect)
    h = torch.sqrt(target / aspect)
    fits = (w <= width) & (h <= height)
    first = torch.argmax(fits.to(torch.int8), dim=1)  # first fitting attempt (0 when none fits)
    rows = torch.arange(n)
    h, w, u = h[rows, first], w[rows, first], u[rows, first]
    top = (height - h) * u[:, 2]
    left = (width - w) * u[:, 3]
    # Fallback: the whole image, narrowed to the nearest allowed aspect ratio, centred.
    image_ratio = width / height
    if image_ratio < ratio[0]:
        fh, fw = width / ratio[0], float(width)
    elif image_ratio > ratio[1]:
        fh, fw = float(height), height * ratio[1]
    else:
        fh, fw = float(height), float(width)
    ok = fits.any(dim=1)
    h = torch.where(ok, h, torch.full_like(h, fh))
    w = torch.where(ok, w, torch.full_like(w, fw))
    top = torch.where(ok, top, torch.full_like(top, (height - fh) / 2))
    left = torch.where(ok, left, torch.full_like(left, (width - fw) / 2))
    return torch.stack([top, left, h, w], dim=1)


def crop_and_resize(
    x: torch.Tensor, boxes: torch.Tensor, size: Size | None = None, flip: torch.Tensor | None = None
) -> torch.Tensor:
    """Bilinearly resample box `boxes[i]` (top, left, h, w in pixels) of each image to `size`, mirrored where `flip`."""
    _check_batch(x)
    n, _, height, width = x.shape
    out_h, out_w = _hw(size, x)
    boxes = boxes.to(torch.float64)
    top, left, h, w = boxes.unbind(dim=1)
    sign = torch.ones(n, dtype=torch.float64) if flip is None else 1.0 - 2.0 * flip.to(torch.float64)
    # The crop is axis-aligned, so the sampling grid is separable: one coordinate vector per axis and image
    # (what affine_grid computes for a scale+shift theta with align_corners=False, without the 3x3 matmuls).
    base_x = (2.0 * torch.arange(out_w, dtype=torch.float64) + 1.0) / out_w - 1.0
    base_y = (2.0 * torch.arange(out_h, dtype=torch.float64) + 1.0) / out_h - 1.0
    gx = (sign * w / width)[:, None] * base_x + (2.0 * (left + w / 2) / width - 1.0)[:, None]
    gy = (h / height)[:, None] * base_y + (2.0 * (top + h / 2) / height - 1.0)[:, None]
    grid = torch.stack([gx[:, None, :].expand(n, out_h, out_w), gy[:, :, None].expand(n, out_h, out_w)], dim=-1).to(
        x.dtype
    )
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)


def augment(
    x: torch.Tensor,
    generator: torch.Generator,
    *,
    size: Size | None = None,
    flip: bool = True,
    area: tuple[float, float] = CROP_AREA,
    ratio: tuple[float, float] = CROP_RATIO,
    crop: bool = True,
) -> torch.Tensor:
    """Training augmentation: random resized crop to `size` (None: input size) and, if `flip`, a random mirror.

    Set `flip=False` for tasks where mirroring changes the class (OCR). `crop=False` (a point of the large search
    space) resamples the central square instead of a random box; the random draws are the same.
    """
    _check_batch(x)
    n, _, height, width = x.shape
    boxes = sample_crop_boxes(n, height, width, generator, area, ratio)
    mirror = torch.rand(n, generator=generator) < 0.5
    if not crop:
        side = min(height, width)
        boxes = torch.tensor([[(height - side) / 2, (width - side) / 2, side, side]], dtype=boxes.dtype).expand(n, 4)
    return crop_and_resize(x, boxes, size, mirror if flip else None)


def center_resize(x: torch.Tensor, size: Size | None = None) -> torch.Tensor:
    """Evaluation transform: central square crop, then an anti-aliased bilinear resize to `size`.

    With `size=None` the batch is returned unchanged (native resolution, no crop).
    """
    _check_batch(x)
    if size is None:
        return x
    out_h, out_w = _hw(size, x)
    height, width = x.shape[-2:]
    side = min(height, width)
    top, left = (height - side) // 2, (width - side) // 2
    x = x[:, :, top : top + side, left : left + side]
    if (side, side) == (out_h, out_w):
        return x
    return F.interpolate(x, size=(out_h, out_w), mode="bilinear", align_corners=False, antialias=True)


def prepare_batch(
    images: np.ndarray | torch.Tensor,
    *,
    channels: int = 3,
    size: Size | None = None,
    generator: torch.Generator | None = None,
    flip: bool = True,
    crop: bool = True,
) -> torch.Tensor:
    """uint8 NHWC images -> model input; augmented (training) when a generator is given, else centre-resized."""
    x = to_input_tensor(images, channels)
    if generator is None:
        return center_resize(x, size)
    return augment(x, generator, size=size, flip=flip, crop=crop)
