"""Compute a learner spent on a task."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resources:
    """Training FLOPs (float: streams overflow int64 quickly) and the peak number of parameters held.

    `dev_curve`, optional, is the held-out (dev) error of the selected model after each epoch: forward
    transfer is measured from it (the protocol keeps evaluation splits from the learner). Combining adds
    FLOPs, keeps the larger peak and the later non-empty curve.
    """

    train_flops: float = 0.0
    peak_parameters: int = 0
    dev_curve: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if not self.train_flops >= 0.0:
            raise ValueError(f"train_flops must be a finite non-negative float, got {self.train_flops!r}")
        if self.peak_parameters < 0:
            raise ValueError(f"peak_parameters must be >= 0, got {self.peak_parameters!r}")

    def combine(self, other: Resources) -> Resources:
        return Resources(
            train_flops=self.train_flops + other.train_flops,
            peak_parameters=max(self.peak_parameters, other.peak_parameters),
            dev_curve=other.dev_curve or self.dev_curve,
        )
