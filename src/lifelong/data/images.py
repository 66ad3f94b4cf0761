"""Image decoding and the evaluation resize rule (central square crop, bilinear resize), batched where possible."""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image

from lifelong.core.errors import DataError

# The file suffixes read as images by folder and manifest sources (case-insensitive).
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm", ".pbm")


def is_image_file(path: Path) -> bool:
    """A visible file whose suffix names an image format (what folder sources load; the rest is ignored)."""
    return path.suffix.lower() in IMAGE_SUFFIXES and not path.name.startswith(".")


_DECODE_ERRORS = (OSError, SyntaxError, ValueError, EOFError, struct.error, Image.DecompressionBombError)


class CorruptImageError(DataError, ValueError):
    """An image file (or buffer) that Pillow cannot decode completely; the message names the item."""


def decode_image(source: str | Path | bytes, *, item: str | None = None) -> np.ndarray:
    """Decode a file or encoded bytes to uint8 [H, W, C] (C = 1 or 3), forcing a full decode to catch truncation.

    Grayscale (and 1-bit) images give C = 1; palette, RGBA and CMYK images become RGB (alpha dropped);
    16/32-bit grayscale is scaled to 8 bits. `item` names the image in errors (defaults to the path).
    """
    name = item if item is not None else (str(source) if not isinstance(source, bytes) else "<bytes>")
    if not isinstance(source, bytes) and not Path(source).is_file():
        raise FileNotFoundError(f"image file not found: {str(source)!r} (item {name!r})")
    try:
        with Image.open(io.BytesIO(source) if isinstance(source, bytes) else source) as img:
            img.load()
            return _to_uint8_hwc(img, name)
    except FileNotFoundError:
        raise
    except _DECODE_ERRORS as exc:
        raise CorruptImageError(
            f"cannot decode image {name!r}: {exc}; replace or remove the file, or pass --skip-corrupt to skip (and "
            "count) corrupt images"
        ) from exc


def _to_uint8_hwc(img: Image.Image, name: str) -> np.ndarray:
    mode = img.mode
    if mode in ("L", "1", "LA"):
        array = np.asarray(img.convert("L"))
    elif mode in ("I", "I;16", "I;16B", "I;16L", "I;16N"):
        wide = np.asarray(img).astype(np.int64)
        array = (np.clip(wide, 0, 65535) // 257).astype(np.uint8)
    elif mode in ("RGB", "RGBA", "RGBX", "P", "PA", "CMYK", "YCbCr", "LAB", "HSV"):
        array = np.asarray(img.convert("RGB"))
    else:
        raise CorruptImageError(f"image {name!r} has unsupported mode {mode!r}; convert it to RGB or grayscale")
    if array.ndim == 2:
        array = array[:, :, None]
    return np.ascontiguousarray(array, dtype=np.uint8)


def decode_workers() -> int:
    """Threads that decode image files at once: the cores, at most 8 (Pillow decodes without holding the GIL)."""
    return max(1, min(8, os.cpu_count() or 1))


def decode_files(
    paths: Sequence[str | Path], *, skip_corrupt: bool, workers: int | None = None
) -> tuple[list[np.ndarray], list[int], list[str]]:
    """Decode many files; returns (images, indices of decoded paths, skipped corrupt paths), in the order of `paths`.

    Without `skip_corrupt` the first corrupt file (in that order) raises CorruptImageError naming it; with it,
    corrupt files are left out and returned so the caller can count them. `workers` threads decode at once
    (None: `decode_workers()`; 1: one after the other); the result does not depend on it.
    """
    workers = decode_workers() if workers is None else workers
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    threaded = workers > 1 and len(paths) >= 2 * workers
    pool = ThreadPoolExecutor(workers, thread_name_prefix="lifelong-decode") if threaded else None
    outcomes: Iterable[np.ndarray | CorruptImageError] = (
        pool.map(_decoded_or_error, paths) if pool is not None else map(_decoded_or_error, paths)
    )
    images: list[np.ndarray] = []
    kept: list[int] = []
    skipped: list[str] = []
    try:
        for i, (path, outcome) in enumerate(zip(paths, outcomes, strict=True)):
            if isinstance(outcome, CorruptImageError):
                if not skip_corrupt:
                    raise outcome
                skipped.append(str(path))
                continue
            images.append(outcome)
            kept.append(i)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)  # a corrupt file raised: the rest need not be decoded
    return images, kept, skipped


def _decoded_or_error(path: str | Path) -> np.ndarray | CorruptImageError:
    """The decoded image, or the CorruptImageError naming it (returned, so the caller raises it in order)."""
    try:
        return decode_image(path)
    except CorruptImageError as exc:
        return exc


def to_channels(image: np.ndarray, channels: int) -> np.ndarray:
    """Convert uint8 [..., H, W, C] with C in (1, 3) to `channels` (1 or 3): replicate gray, or BT.601 luma."""
    if channels not in (1, 3):
        raise ValueError(f"channels must be 1 or 3, got {channels}")
    have = image.shape[-1]
    if have not in (1, 3):
        raise ValueError(f"images must have 1 or 3 channels, got shape {image.shape}")
    if have == channels:
        return image
    if channels == 3:
        return np.repeat(image, 3, axis=-1)
    # Pillow's own fixed-point "L" conversion: L = (19595 R + 38470 G + 7471 B + 2^15) >> 16.
    rgb = image.astype(np.uint32)
    luma = (rgb[..., 0] * 19595 + rgb[..., 1] * 38470 + rgb[..., 2] * 7471 + 0x8000) >> 16
    return luma.astype(np.uint8)[..., None]


def center_crop(images: np.ndarray) -> np.ndarray:
    """The central square of uint8 [..., H, W, C] images (side min(H, W)), as a view."""
    h, w = images.shape[-3], images.shape[-2]
    side = min(h, w)
    top, left = (h - side) // 2, (w - side) // 2
    return images[..., top : top + side, left : left + side, :]


def center_crop_resize(image: np.ndarray, size: int) -> np.ndarray:
    """The evaluation resize rule: central square crop, then bilinear (Pillow) resize to size x size."""
    return _resize_squares(center_crop(image)[None], size)[0]


def resize_all(images: Sequence[np.ndarray] | np.ndarray, size: int, channels: int) -> np.ndarray:
    """Apply `to_channels` and `center_crop_resize` to every image; returns uint8 [N, size, size, channels].

    Images that share a shape are processed together: one batched Pillow pass per shape (results equal
    the per-image rule exactly), and no resize at all where the crop already has the target size.
    """
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    n = len(images)
    out = np.empty((n, size, size, channels), dtype=np.uint8)
    if n == 0:
        return out
    if isinstance(images, np.ndarray):
        groups = {images.shape[1:]: None}  # None: the whole array, no gather or scatter copy
    else:
        by_shape: dict[tuple[int, ...], list[int]] = {}
        for i, image in enumerate(images):
            by_shape.setdefault(image.shape, []).append(i)
        groups = {shape: np.asarray(idx) for shape, idx in by_shape.items()}
    for idx in groups.values():
        if idx is None:
            batch = images
        else:
            batch = images[idx] if isinstance(images, np.ndarray) else np.stack([images[i] for i in idx])
        batch = center_crop(batch)
        if channels < batch.shape[-1]:  # reduce channels first: less to resize
            batch = to_channels(batch, channels)
        elif batch.shape[-1] not in (1, channels):
            raise ValueError(f"images must have 1 or 3 channels, got shape {batch.shape[1:]}")
        resized = _resize_squares(batch, size)
        rows = slice(None) if idx is None else idx
        if resized.shape[-1] == channels:
            out[rows] = resized
        else:  # 1 -> 3 channels, one plain copy per channel (much faster than a broadcast assignment)
            target = out if idx is None else np.empty((len(idx), size, size, channels), dtype=np.uint8)
            for c in range(channels):
                target[..., c] = resized[..., 0]
            if idx is not None:
                out[idx] = target
    return out


def _resize_squares(batch: np.ndarray, size: int) -> np.ndarray:
    """Bilinear resize of square uint8 [N, S, S, C] images with Pillow, two separable passes over a mosaic.

    Pillow resizes rows then columns with the same 1-D filter, so stacking the images into one tall
    image and resizing its width (twice, transposing in between) equals resizing each image alone.
    """
    n, side, _, c = batch.shape
    if side == size:
        return batch
    if c not in (1, 3):
        raise ValueError(f"images must have 1 or 3 channels, got shape {batch.shape[1:]}")

    def widen(rows: np.ndarray, width: int) -> np.ndarray:  # rows: [R, W, C] -> [R, width, C]
        mosaic = np.ascontiguousarray(rows[..., 0] if c == 1 else rows)
        resized = np.asarray(Image.fromarray(mosaic).resize((width, len(rows)), Image.Resampling.BILINEAR))
        return resized.reshape(len(rows), width, c)

    once = widen(batch.reshape(n * side, side, c), size).reshape(n, side, size, c)
    columns = once.transpose(0, 2, 1, 3).reshape(n * size, side, c)
    twice = widen(columns, size).reshape(n, size, size, c)
    return np.ascontiguousarray(twice.transpose(0, 2, 1, 3))
