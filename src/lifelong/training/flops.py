"""FLOPs of one training update step, and of one forward pass, counted by torch's FlopCounterMode
(docs/run.md#what-is-counted-as-compute).

A run's training FLOPs are the update count, taken once per model and batch shape, times the number of steps;
inference FLOPs (reported apart, never part of cFLOP) are the forward count per example times the examples.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode, conv_flop_count

aten = torch.ops.aten

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _default_loss(outputs: torch.Tensor, targets: torch.Tensor | None) -> torch.Tensor:
    if targets is None:
        return outputs.sum()
    if targets.is_floating_point():
        return F.binary_cross_entropy_with_logits(outputs, targets)
    return F.cross_entropy(outputs, targets)


def _conv_backward_flop(
    grad_out_shape: list[int],
    x_shape: list[int],
    w_shape: list[int],
    _bias: object,
    _stride: object,
    _padding: object,
    _dilation: object,
    transposed: bool,
    _output_padding: object,
    _groups: int,
    output_mask: list[bool],
    out_shape: tuple[list[int] | None, ...],
    **kwargs: object,
) -> int:
    """torch's convolution-backward count, with the weight gradient of a grouped (e.g. depthwise) convolution
    counted per group: torch 2.x counts it as if the convolution were dense (groups x too many FLOPs, 8-30x
    EfficientNet's whole backward pass). The weight gradient costs what the forward costs: 2 x batch x
    output positions (input positions when transposed) x the weight's size, whose shape already holds 1/groups
    of the input channels. The input gradient (a transposed convolution with the same weight) is torch's own."""
    count = 0
    if output_mask[0]:
        count += conv_flop_count(grad_out_shape, w_shape, list(out_shape[0] or x_shape), not transposed)
    if output_mask[1]:
        positions = (x_shape if transposed else grad_out_shape)[2:]
        count += 2 * x_shape[0] * math.prod(positions) * math.prod(w_shape)
    return count


def _counter() -> FlopCounterMode:
    return FlopCounterMode(display=False, custom_mapping={aten.convolution_backward: _conv_backward_flop})


def model_device(model: nn.Module) -> torch.device:
    for p in model.parameters():
        return p.device
    return torch.device("cpu")


@dataclass(frozen=True)
class StepFlops:
    """FLOPs of one training update, split: `forward` (every layer that runs, frozen ones included, and the loss)
    and `backward` (gradients of the trainable part only)."""

    forward: float
    backward: float

    @property
    def total(self) -> float:
        return self.forward + self.backward


def count_step_flops(
    model: nn.Module,
    batch: torch.Tensor | tuple[torch.Tensor, torch.Tensor],
    *,
    loss_fn: LossFn | None = None,
) -> StepFlops:
    """FLOPs of one training update on `batch` (inputs, or (inputs, targets)), forward and backward apart.

    Counted by `FlopCounterMode`: matmuls and convolutions only, 2 FLOPs per multiply-add (the weight gradient of
    grouped convolutions corrected, see `_conv_backward_flop`). The forward count
    holds every layer the step runs, frozen ones (requires_grad False) included. The backward count holds what
    autograd computes: gradients w.r.t. every parameter with `requires_grad`, and w.r.t. the activations that
    lead to one; nothing for a frozen prefix of the network (its parameters need no gradient and nothing before
    it does), nor w.r.t. the input batch. So a trainable layer costs about 2x its forward in the backward pass
    (weight and input gradients), the first trainable one 1x (weight gradient only), a frozen one 0x.
    Not counted: elementwise ops (activations, BatchNorm, the loss itself, pooling), the optimizer update,
    data loading and augmentation. Without targets the backward pass starts from `outputs.sum()`; with targets,
    `loss_fn` (default: cross-entropy for integer targets, sigmoid BCE for float targets). The model is put in
    train mode for the count (an `Encoder` keeps its frozen parts in eval mode); its parameters, gradients,
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
    forward_counter = _counter()
    backward_counter = _counter()
    try:
        model.train()
        rng_devices = [device] if device.type == "cuda" else []  # the RNG the model's random ops draw from
        with torch.random.fork_rng(devices=rng_devices):
            with forward_counter:
                outputs = model(inputs)
                loss = loss_fn(outputs, targets) if loss_fn is not None else _default_loss(outputs, targets)
            with backward_counter:
                torch.autograd.grad(loss, params, allow_unused=True)  # leaves .grad untouched
    finally:
        with torch.no_grad():
            for buffer, value in saved_buffers:
                buffer.copy_(value)
        for module, mode in saved_modes:
            module.train(mode)
    return StepFlops(float(forward_counter.get_total_flops()), float(backward_counter.get_total_flops()))


def count_training_flops(
    model: nn.Module,
    batch: torch.Tensor | tuple[torch.Tensor, torch.Tensor],
    *,
    loss_fn: LossFn | None = None,
) -> float:
    """FLOPs of one training update on `batch` (inputs, or (inputs, targets)): forward + loss + backward, with
    frozen layers (requires_grad False) in the forward count only; see `count_step_flops` for the rules."""
    return count_step_flops(model, batch, loss_fn=loss_fn).total


def count_inference_flops(model: nn.Module, inputs: torch.Tensor) -> float:
    """FLOPs of one forward pass on `inputs` in eval mode, without gradients (same counting rules as above).

    Divide by the batch size for a per-example cost (forward FLOPs are linear in it). The model's train/eval
    modes, parameters and buffers are left unchanged (eval mode does not touch BatchNorm statistics).
    """
    saved_modes = [(m, m.training) for m in model.modules()]
    counter = _counter()
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
    channels = int(getattr(model, "in_channels", 3))  # a factory's network may not say (3: what is fed)
    return count_inference_flops(model, torch.zeros(1, channels, height, width))
