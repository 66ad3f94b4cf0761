"""Regularisers of the continual baselines: EWC, SI, MAS and LwF, as extra loss terms
(docs/protocols/clear.md#regularisers, docs/protocols/facts.md#methods).

Each is a small object made per bucket from what the learner state keeps (CPU tensors keyed by parameter
name, copied to the model's device once per bucket): it is the `penalty(model, x, logits)` of `train_continual`,
optionally its step hook (SI), and `finish(...)` returns what the state keeps for the next bucket (CPU tensors).
On the first bucket there is nothing to hold on to, so the term is zero. The label space is fixed, so every
class's logit is regularised.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap

from lifelong.training.devices import DeviceCopies, cpu_tensors
from lifelong.training.flops import count_training_flops, model_device

Tensors = dict[str, torch.Tensor]
Inputs = Callable[[np.ndarray], torch.Tensor]  # items -> prepared model inputs (eval transform)


def _params(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p for name, p in model.named_parameters() if p.requires_grad}


def _curvature(weights: Tensors, scale: float, max_curvature: float | None) -> Tensors:
    """The penalty's per-coordinate curvature h = scale * weights, capped at `max_curvature`.

    Why the cap: SGD (lr, momentum m) on the quadratic (h / 2) (theta - theta*)^2 diverges once lr h > 2 (1 + m);
    importances of a barely trained network can exceed that, so the learners cap h at 1 / lr.
    """
    h = {k: scale * v for k, v in weights.items()}
    return h if max_curvature is None else {k: torch.clamp(v, max=max_curvature) for k, v in h.items()}


def _quadratic(model: nn.Module, curvature: Tensors, anchor: Tensors) -> torch.Tensor:
    """(1 / 2) sum_k h_k (theta_k - anchor_k)^2 over the trainable parameters (h and anchor on their device)."""
    total = None
    for name, p in _params(model).items():
        term = (curvature[name] * (p - anchor[name]) ** 2).sum()
        total = term if total is None else total + term
    if total is None:
        raise ValueError("the model has no trainable parameters to regularise")
    return 0.5 * total


def _zero(logits: torch.Tensor) -> torch.Tensor:
    return logits.new_zeros(())


class Term:
    """No regulariser: the base of the others (zero penalty, nothing kept)."""

    name = "none"
    step_hook = None

    def __call__(self, model: nn.Module, x: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        return _zero(logits)

    def start(self, model: nn.Module) -> None:
        """Called before training on a bucket starts."""

    def finish(
        self, model: nn.Module, items: np.ndarray, labels: np.ndarray, inputs: Inputs
    ) -> tuple[dict | None, float]:
        """(what the state keeps for the next bucket, FLOPs spent computing it) after training on (items, labels)."""
        return None, 0.0

    def held_parameters(self) -> int:
        """Numbers held besides the model while training (anchors, importances, teacher weights)."""
        return 0


class _Anchored(Term):
    """A quadratic pull towards the weights kept after the last bucket (`kept["anchor"]`) with curvature `_h`."""

    kept: dict | None = None
    _h: Tensors | None = None
    _pull: tuple[DeviceCopies, DeviceCopies] | None = None

    def pull(self, model: nn.Module) -> tuple[Tensors, Tensors] | None:
        """(curvature, anchor) on the model's device, copied there once per bucket; None on the first bucket."""
        if self.kept is None or self._h is None:
            return None
        if self._pull is None:
            self._pull = (DeviceCopies(self._h), DeviceCopies(self.kept["anchor"]))
        device = model_device(model)
        return self._pull[0].on(device), self._pull[1].on(device)

    def __call__(self, model: nn.Module, x: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        held = self.pull(model)
        return _zero(logits) if held is None else _quadratic(model, *held)


class EWC(_Anchored):
    """Online EWC: (lambda / 2) sum_k F_k (theta_k - theta*_k)^2, F the diagonal empirical Fisher.

    F is the mean over the just-finished bucket's items of the squared gradient of log p(y | x) at the true
    label (per-item gradients, model in eval mode; `fisher="batch"`: `batch_fisher`'s cheaper estimate instead),
    accumulated as F <- decay F + F_new; theta* = the weights after that bucket. lambda F is capped at
    `max_curvature` (see `_curvature`; None: no cap).
    """

    name = "ewc"

    def __init__(
        self,
        kept: dict | None,
        strength: float,
        decay: float = 1.0,
        chunk: int = 64,
        max_curvature: float | None = None,
        loss: ItemLoss | None = None,
        fisher: str = "item",
        batch_size: int = 64,
    ) -> None:
        if fisher not in ("item", "batch"):
            raise ValueError(f"EWC's fisher must be 'item' or 'batch', got {fisher!r}")
        self.kept, self.strength, self.decay, self.chunk, self.loss = kept, strength, decay, chunk, loss
        self.fisher, self.batch_size = fisher, batch_size
        self._h = None if kept is None else _curvature(kept["fisher"], strength, max_curvature)

    def finish(
        self, model: nn.Module, items: np.ndarray, labels: np.ndarray, inputs: Inputs
    ) -> tuple[dict | None, float]:
        if self.fisher == "batch":
            fisher, flops = batch_fisher(model, items, labels, inputs, self.batch_size, self.loss)
        else:
            fisher, flops = diagonal_fisher(model, items, labels, inputs, self.chunk, self.loss)
        if self.kept is not None:
            fisher = {k: self.decay * self.kept["fisher"][k] + v for k, v in fisher.items()}
        return {"fisher": fisher, "anchor": cpu_tensors(_params(model))}, flops

    def held_parameters(self) -> int:
        return 0 if self.kept is None else 2 * sum(v.numel() for v in self.kept["fisher"].values())


ItemLoss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (outputs [B, ...], labels [B]) -> mean loss


def diagonal_fisher(
    model: nn.Module,
    items: np.ndarray,
    labels: np.ndarray,
    inputs: Inputs,
    chunk: int = 64,
    loss: ItemLoss | None = None,
) -> tuple[Tensors, float]:
    """(mean squared per-item gradient of the loss at the true labels, FLOPs), the model in eval mode.

    The loss is the cross-entropy (log p(y | x)) unless `loss` is given (a model trained with another data loss,
    e.g. the fact embedding's distance). FLOPs: one counted update step on a chunk, per item, times the items.
    """
    item_loss = loss if loss is not None else F.cross_entropy
    return per_item_mean(model, items, labels, inputs, lambda out, y: item_loss(out, y), torch.square, chunk)


def batch_fisher(
    model: nn.Module,
    items: np.ndarray,
    labels: np.ndarray,
    inputs: Inputs,
    batch_size: int = 64,
    loss: ItemLoss | None = None,
) -> tuple[Tensors, float]:
    """(mean over mini-batches of the squared gradient of the batch's mean loss, FLOPs), the model in eval mode.

    Consecutive batches of `batch_size` items in stored order, the last one possibly smaller, each weighing the
    same: Avalanche's EWC estimate (the CLEAR paper's). One backward a batch instead of one a item; where per-item
    gradients are uncorrelated it is about 1 / batch_size of `diagonal_fisher` (plus the squared mean gradient).
    FLOPs: one counted update step per batch (per item of the first, times the items).
    """
    if len(items) == 0:
        raise ValueError("a Fisher estimate needs at least one item")
    item_loss = loss if loss is not None else F.cross_entropy
    params = _params(model)
    total = {k: torch.zeros_like(v) for k, v in params.items()}
    batches = _EvalBatches(model, items, labels, inputs, batch_size, item_loss)
    count = 0
    for x, y in batches:
        grads = torch.autograd.grad(item_loss(model(x), y), list(params.values()), allow_unused=True)
        for name, g in zip(params, grads, strict=True):
            if g is not None:
                total[name] += g.detach().square()
        count += 1
    return {k: (v / count).cpu() for k, v in total.items()}, batches.flops_per_item * len(items)


class _EvalBatches:
    """Consecutive (inputs, labels) batches of `size` items on the model's device, the model in eval mode while they
    are iterated (its mode restored after); `flops_per_item`: one counted update step of `value` on the first batch,
    per item."""

    def __init__(self, model: nn.Module, items: np.ndarray, labels: np.ndarray, inputs: Inputs, size: int, value):
        self.model, self.items, self.labels, self.inputs, self.size, self.value = (
            model,
            items,
            labels,
            inputs,
            size,
            value,
        )
        self.flops_per_item = 0.0

    def __iter__(self):
        device = model_device(self.model)
        was_training = self.model.training
        self.model.eval()
        try:
            for start in range(0, len(self.items), self.size):
                x = self.inputs(self.items[start : start + self.size]).to(device)
                y = torch.from_numpy(np.asarray(self.labels[start : start + self.size], dtype=np.int64)).to(x.device)
                if not self.flops_per_item:
                    self.flops_per_item = count_training_flops(self.model, (x, y), loss_fn=self.value) / len(x)
                yield x, y
        finally:
            self.model.train(was_training)


def output_sensitivity(model: nn.Module, items: np.ndarray, inputs: Inputs, chunk: int = 64) -> tuple[Tensors, float]:
    """(MAS importance: mean over items of |d ||F(x)||^2 / d theta|, FLOPs), F the model's output, eval mode.

    Needs no label: the importance says how much the learned function moves, so it can be computed on any data
    the learner has trained on (never on test data).
    """
    labels = np.zeros(len(items), dtype=np.int64)  # unused by the squared output norm
    return per_item_mean(model, items, labels, inputs, lambda out, _: out.square().sum(), torch.abs, chunk)


def per_item_mean(
    model: nn.Module,
    items: np.ndarray,
    labels: np.ndarray,
    inputs: Inputs,
    value: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    transform: Callable[[torch.Tensor], torch.Tensor],
    chunk: int = 64,
) -> tuple[Tensors, float]:
    """(mean over items of transform(d value(F(x), y) / d theta), FLOPs): per-item gradients via vmap, eval mode.

    `value(outputs [1, ...], y [1])` is one item's scalar. FLOPs: one counted update step per item, times the items.
    Inputs go to the model's device; the result is on the CPU.
    """
    if len(items) == 0:
        raise ValueError("a per-item importance needs at least one item")
    params = {k: v.detach() for k, v in _params(model).items()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def item_value(p: Tensors, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return value(functional_call(model, (p, buffers), (x[None],)), y[None])

    per_item = vmap(grad(item_value), in_dims=(None, 0, 0))
    total = {k: torch.zeros_like(v) for k, v in params.items()}
    batches = _EvalBatches(model, items, labels, inputs, chunk, value)
    for x, y in batches:
        with torch.no_grad():
            grads = per_item(params, x, y)
        for k, g in grads.items():
            total[k] += transform(g).sum(0)
    return {k: (v / len(items)).cpu() for k, v in total.items()}, batches.flops_per_item * len(items)


class MAS(_Anchored):
    """Memory Aware Synapses (Aljundi et al. 2018): lambda sum_k Omega_k (theta_k - theta*_k)^2.

    Omega = mean over the just-finished task's training items of |d ||F(x)||^2 / d theta| (F the model's output),
    accumulated across tasks (Omega <- Omega + Omega_new); theta* = the weights after that task. 2 lambda Omega is
    capped at `max_curvature` (see `_curvature`).
    """

    name = "mas"

    def __init__(self, kept: dict | None, strength: float, chunk: int = 64, max_curvature: float | None = None) -> None:
        self.kept, self.strength, self.chunk = kept, strength, chunk
        self._h = None if kept is None else _curvature(kept["omega"], 2.0 * strength, max_curvature)

    def finish(
        self, model: nn.Module, items: np.ndarray, labels: np.ndarray, inputs: Inputs
    ) -> tuple[dict | None, float]:
        omega, flops = output_sensitivity(model, items, inputs, self.chunk)
        if self.kept is not None:
            omega = {k: self.kept["omega"][k] + v for k, v in omega.items()}
        return {"omega": omega, "anchor": cpu_tensors(_params(model))}, flops

    def held_parameters(self) -> int:
        return 0 if self.kept is None else 2 * sum(v.numel() for v in self.kept["omega"].values())


class SI(_Anchored):
    """Synaptic Intelligence (Zenke et al. 2017): c sum_k Omega_k (theta_k - theta*_k)^2.

    Along each bucket's optimisation path, w_k += -g_k dtheta_k per step (g the gradient of the loss without
    this penalty); at its end Omega_k += max(0, w_k / (Delta_k^2 + xi)) (Delta the bucket's total change; the
    clamp keeps importances non-negative) and theta* = the weights. 2 c Omega is capped at `max_curvature`.
    """

    name = "si"

    def __init__(self, kept: dict | None, strength: float, damping: float, max_curvature: float | None = None) -> None:
        self.kept, self.strength, self.damping = kept, strength, damping
        self._h = None if kept is None else _curvature(kept["omega"], 2.0 * strength, max_curvature)
        self.step_hook = self
        self._start: Tensors = {}
        self._before: Tensors = {}
        self._task_grad: Tensors = {}
        self._path: Tensors = {}

    def start(self, model: nn.Module) -> None:
        self._start = {k: v.detach().clone() for k, v in _params(model).items()}
        self._path = {k: torch.zeros_like(v) for k, v in self._start.items()}

    # SI's step hook is elementwise only (copies, products, sums): no forward or backward pass, so it adds no
    # counted FLOPs (matmuls and convolutions) to the fit's and keeps no `flops` total (continual_loop.StepHook).
    def before_step(self, model: nn.Module) -> None:
        pull = self.pull(model)
        for name, p in _params(model).items():
            g = torch.zeros_like(p) if p.grad is None else p.grad.detach().clone()
            if pull is not None:  # remove this penalty's gradient h (theta - theta*)
                g -= pull[0][name] * (p.detach() - pull[1][name])
            self._task_grad[name] = g
            self._before[name] = p.detach().clone()

    def after_step(self, model: nn.Module) -> None:
        for name, p in _params(model).items():
            self._path[name] -= self._task_grad[name] * (p.detach() - self._before[name])

    def finish(
        self, model: nn.Module, items: np.ndarray, labels: np.ndarray, inputs: Inputs
    ) -> tuple[dict | None, float]:
        if not self._path:
            raise RuntimeError("SI.finish called without start(): the path integral was not recorded")
        omega = {}
        for name, p in _params(model).items():
            delta = p.detach() - self._start[name]
            new = torch.clamp(self._path[name] / (delta**2 + self.damping), min=0.0).cpu()
            omega[name] = new if self.kept is None else self.kept["omega"][name] + new
        return {"omega": omega, "anchor": cpu_tensors(_params(model))}, 0.0

    def held_parameters(self) -> int:
        size = sum(v.numel() for v in self._start.values()) if self._start else 0
        kept = 0 if self.kept is None else 2 * sum(v.numel() for v in self.kept["omega"].values())
        return kept + 4 * size  # start weights, path integral, per-step gradient and weights


class LwF(Term):
    """Learning without Forgetting: alpha T^2 KL(softmax(teacher / T) || softmax(student / T)) on the inputs.

    The teacher is the previous bucket's model (eval mode, frozen); its forward pass runs in every step and is
    counted in the step's FLOPs.
    """

    name = "lwf"

    def __init__(self, teacher: nn.Module | None, strength: float, temperature: float = 2.0) -> None:
        self.teacher, self.strength, self.temperature = teacher, strength, temperature
        if teacher is not None:
            teacher.eval()
            teacher.requires_grad_(False)

    def __call__(self, model: nn.Module, x: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        if self.teacher is None:
            return _zero(logits)
        with torch.no_grad():
            target = self.teacher(x)
        return self.strength * distillation(logits, target, self.temperature)

    def held_parameters(self) -> int:
        return 0 if self.teacher is None else sum(p.numel() for p in self.teacher.parameters())


def distillation(student: torch.Tensor, teacher: torch.Tensor, temperature: float) -> torch.Tensor:
    """T^2 KL(softmax(teacher / T) || softmax(student / T)), averaged over the batch; 0 when they agree."""
    t = temperature
    log_p_student = F.log_softmax(student / t, dim=1)
    log_p_teacher = F.log_softmax(teacher / t, dim=1)
    return (t * t) * F.kl_div(log_p_student, log_p_teacher, reduction="batchmean", log_target=True)


PENALTIES = ("none", "ewc", "si", "mas", "lwf")

__all__ = [
    "EWC",
    "ItemLoss",
    "MAS",
    "PENALTIES",
    "SI",
    "LwF",
    "Term",
    "batch_fisher",
    "diagonal_fisher",
    "distillation",
    "output_sensitivity",
    "per_item_mean",
]
