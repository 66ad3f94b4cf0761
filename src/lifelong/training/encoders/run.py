"""Running an encoder over uint8 images: batched, in stored order, and its FLOPs per image."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from lifelong.training.encoders.base import Encoder
from lifelong.training.flops import count_inference_flops
from lifelong.training.inputs import prepare_batch


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


def encode_images(
    encoder: Encoder, images: Sequence[np.ndarray], *, batch_size: int = 32, logits: bool = False
) -> np.ndarray:
    """uint8 images [H, W, C] of any sizes -> float32 features [N, D] (or, with `logits`, the head's [N, classes])
    with the encoder's own preprocessing, in batches on the current accelerator (eval mode, no gradients)."""
    import torch

    from lifelong.training.devices import current_accelerator

    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if logits and encoder.head is None:
        raise ValueError(f"{encoder.description or 'this encoder'} has no classifier head")
    width = len(encoder.labels) if logits and encoder.labels else encoder.feature_dim
    if len(images) == 0:
        return np.zeros((0, width), dtype=np.float32)
    acc = current_accelerator()
    model = acc.place(encoder)
    was_training = model.training
    model.eval()
    out = []
    try:
        with inference_layout(model) as layout, torch.inference_mode(), acc.autocast():
            for s in range(0, len(images), batch_size):
                x = layout(acc.batch(model.prepare(images[s : s + batch_size])))
                out.append((model.classify(x) if logits else model(x)).float().cpu())
    finally:
        model.train(was_training)
    return torch.cat(out).numpy()


@contextlib.contextmanager
def inference_layout(model: Any) -> Iterator[Callable[[Any], Any]]:
    """Run `model`'s inference in channels_last unless the accelerator's layout is set (or the model keeps its own
    layout); yields the function that lays a batch out to match. Same features, 1.2-1.45x the images/s of NCHW for
    EfficientNet-Lite and the toolkit ResNet on a 2-core CPU (benchmarks/bench_encoders.py). Layout restored
    after."""
    import torch

    from lifelong.training.devices import KEEPS_LAYOUT, current_accelerator

    acc = current_accelerator()
    nhwc = (
        acc.channels_last is None
        and not acc.uses_channels_last  # placed in channels_last already (CUDA's default): nothing to do
        and not any(getattr(m, KEEPS_LAYOUT, False) for m in model.modules())
    )
    if not nhwc:
        yield lambda x: x
        return
    model.to(memory_format=torch.channels_last)
    try:
        yield lambda x: x.contiguous(memory_format=torch.channels_last) if x.dim() == 4 else x
    finally:
        model.to(memory_format=torch.contiguous_format)
