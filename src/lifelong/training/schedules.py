"""Batch-size rule and learning-rate schedule of the common training recipe
(docs/protocols/nevis.md#batch-size-and-schedule)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass


def batch_size_for(num_examples: int, *, min_size: int = 16, max_size: int = 512, per_example: int = 400) -> int:
    """B = min(max_size, max(min_size, 2^floor(log2(N / per_example)))); the paper's 0.0025 N is N / 400.

    Computed in integers, so boundaries (N = 400 * 2^k) are exact.
    """
    if num_examples < 0:
        raise ValueError(f"num_examples must be >= 0, got {num_examples}")
    if not 1 <= min_size <= max_size:
        raise ValueError(f"need 1 <= min_size <= max_size, got min_size={min_size}, max_size={max_size}")
    if per_example < 1:
        raise ValueError(f"per_example must be >= 1, got {per_example}")
    ratio = num_examples // per_example  # floor(log2(N / p)) == floor(log2(floor(N / p))) for N >= p
    power = 1 << (ratio.bit_length() - 1) if ratio >= 1 else 0
    return min(max_size, max(min_size, power))


def warmup_steps_for(max_steps: int, steps_per_epoch: int, warmup_epochs: float = 7.0) -> int:
    """Warm-up length: min(max_steps - 1, warmup_epochs * steps_per_epoch) steps (rounded down), at least 0."""
    if max_steps < 1 or steps_per_epoch < 1 or warmup_epochs < 0:
        raise ValueError(
            f"need max_steps >= 1, steps_per_epoch >= 1 and warmup_epochs >= 0; got {max_steps}, "
            f"{steps_per_epoch}, {warmup_epochs}"
        )
    return max(0, min(max_steps - 1, math.floor(warmup_epochs * steps_per_epoch)))


@dataclass(frozen=True)
class WarmupCosine:
    """LR multiplier lr(step) for `LambdaLR`: linear up to 1 at step `warmup_steps`, then cosine towards 0.

    Warm-up: lr(s) = (s + 1) / (W + 1) for s <= W, so the first step already moves. Decay:
    lr(s) = (1 + cos(pi (s - W) / (T - W))) / 2 for W <= s < T, which is small but positive at the last step T - 1.
    A frozen dataclass rather than a closure, so schedulers holding it can be pickled.
    """

    max_steps: int
    warmup_steps: int

    def __post_init__(self) -> None:
        if self.max_steps < 1 or not 0 <= self.warmup_steps < self.max_steps:
            raise ValueError(
                f"need max_steps >= 1 and 0 <= warmup_steps < max_steps, got max_steps={self.max_steps}, "
                f"warmup_steps={self.warmup_steps}; use warmup_steps_for() to clamp"
            )

    def __call__(self, step: int) -> float:
        w = self.warmup_steps
        if step <= w:
            return (step + 1) / (w + 1)
        progress = min(1.0, (step - w) / (self.max_steps - w))
        return 0.5 * (1.0 + math.cos(math.pi * progress))


def warmup_cosine(max_steps: int, warmup_steps: int) -> Callable[[int], float]:
    """The warm-up + cosine multiplier as a callable for `torch.optim.lr_scheduler.LambdaLR`."""
    return WarmupCosine(max_steps, warmup_steps)


@dataclass(frozen=True)
class WarmupPiecewise:
    """LR multiplier: the same linear warm-up, then piecewise constant: 1, then times `scale` at each of
    `boundaries` (fractions of `max_steps`; dm_nevis's "piecewise constant, progress aligned" schedule). The
    defaults, x0.1 at 50% and again at 75% of training, are the classic step decay; the paper does not give its own.
    """

    max_steps: int
    warmup_steps: int
    boundaries: tuple[float, ...] = (0.5, 0.75)
    scale: float = 0.1

    def __post_init__(self) -> None:
        WarmupCosine(self.max_steps, self.warmup_steps)  # the same bounds on the steps
        if not all(0 < b < 1 for b in self.boundaries) or not 0 < self.scale <= 1:
            raise ValueError(f"need boundaries in (0, 1) and 0 < scale <= 1, got {self.boundaries}, {self.scale}")

    def __call__(self, step: int) -> float:
        if step <= self.warmup_steps:
            return (step + 1) / (self.warmup_steps + 1)
        passed = sum(step >= int(b * self.max_steps) for b in self.boundaries)
        return self.scale**passed


SCHEDULE_FACTORIES: dict[str, Callable[[int, int], Callable[[int], float]]] = {
    "cosine": WarmupCosine,
    "piecewise": WarmupPiecewise,
}


def lr_schedule(name: str, max_steps: int, warmup_steps: int) -> Callable[[int], float]:
    """The multiplier of schedule `name` (cosine or piecewise), warm-up included, for `LambdaLR`."""
    try:
        factory = SCHEDULE_FACTORIES[name]
    except KeyError:
        raise ValueError(f"unknown schedule {name!r}; choose one of {sorted(SCHEDULE_FACTORIES)}") from None
    return factory(max_steps, warmup_steps)
