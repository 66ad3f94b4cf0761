"""FLOPs of one training update step, and of one forward pass, counted by torch's FlopCounterMode (spec section 3).

A run's training FLOPs are the update count, taken once per model and batch shape, times the number of steps;
inference FLOPs (reported apart, never part of cFLOP) are the forward count per example times the examples.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _default_loss(outputs: torch.Tensor, targets: torch.Tensor | None) -> torch.Tensor:
    if targets is None:
        return outputs.sum()
    if targets.is_floating_point():
        return F.binary_cross_entropy_with_logits(outputs, targets)
    return F.cross_entropy(outputs, targets)


def model_device(model: nn.Module) -> torch.device:
    for p in model.parameters():
        return p.device
    return torch.device("cpu")


def count_training_flops(
    model: nn.Module,
    batch: torch.Tensor | tuple[torch.Tensor, torch.Tensor],
    *,
    loss_fn: LossFn | None = None,
) -> float:
    """FLOPs of one training update on `batch` (inputs, or (inputs, targets)): forward + loss + backward.

    Counted by `FlopCounterMode`: matmuls and convolutions only, 2 FLOPs per multiply-add, in the forward
    pass and in the backward pass (gradients w.r.t. every parameter with `requires_grad`, and w.r.t.
    intermediate activations that need them; not w.r.t. the input batch). Not counted: elementwise ops
    (activations, BatchNorm, the loss itself, pooling), the optimizer update, data loading and augmentation.
    Without targets the backward pass starts from `outputs.sum()`; with targets, `loss_fn` (default:
    cross-entropy for integer targets, sigmoid BCE for float targets). The model's parameters, gradients,
    buffers (BatchNorm running statistics), train/eval modes and the global CPU (and CUDA) RNG are left unchanged.
    """
    inputs, targets = (batch[0], batch[1]) if isinstance(batch, tuple | list) else (batch, None)
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no parameter with requires_grad=True: there is no training step to count")
    device = model_device(model)
    inputs = inputs.to(device)
    targets = None if targets is None else targets.to(device)
    saved_buffers = [(b, b.detach().clone()) for b in model.buffers()]
    saved_modes = [(m, m.training) for m in model.modules()]
    counter = FlopCounterMode(display=False)
    try:
        model.train()
        rng_devices = [device] if device.type == "cuda" else []  # the RNG the model's random ops draw from
        with torch.random.fork_rng(devices=rng_devices), counter:
            outputs = model(inputs)
            loss = loss_fn(outputs, targets) if loss_fn is not None else _default_loss(outputs, targets)
            torch.autograd.grad(loss, params, allow_unused=True)  # leaves .grad untouched
    finally:
        with torch.no_grad():
            for buffer, value in saved_buffers:
                buffer.copy_(value)
        for module, mode in saved_modes:
            module.train(mode)
    return float(counter.get_total_flops())


def count_inference_flops(model: nn.Module, inputs: torch.Tensor) -> float:
    """FLOPs of one forward pass on `inputs` in eval mode, without gradients (same counting rules as above).

    Divide by the batch size for a per-example cost (forward FLOPs are linear in it). The model's train/eval
    modes, parameters and buffers are left unchanged (eval mode does not touch BatchNorm statistics).
    """
    saved_modes = [(m, m.training) for m in model.modules()]
    counter = FlopCounterMode(display=False)
    try:
        model.eval()
        with torch.no_grad(), counter:
            model(inputs.to(model_device(model)))
    finally:
        for module, mode in saved_modes:
            module.train(mode)
    return float(counter.get_total_flops())


@functools.cache
def architecture_forward_flops(architecture: str, num_classes: int, height: int, width: int) -> float:
    """Forward FLOPs per example of a `models.make_model` architecture on 3-channel height x width inputs (cached)."""
    from lifelong.training.models import make_model

    model = make_model(architecture, num_classes, seed=0)
    return count_inference_flops(model, torch.zeros(1, model.in_channels, height, width))
