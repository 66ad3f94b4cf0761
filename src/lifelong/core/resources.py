"""Compute a learner spent on a task."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resources:
    """Training FLOPs (float: streams overflow int64 quickly) and the peak number of parameters held.

    `dev_curve`, optional, is the held-out (dev) error of the selected model after each epoch: forward
    transfer is measured from it (the protocol keeps evaluation splits from the learner). Optional too: the
    optimizer steps taken (`train_steps`), the mean training loss of each epoch of the last fit (`train_losses`)
    and how that fit ended (`stopped`: "epochs", "converged" or "cap"). Combining adds FLOPs and steps, keeps the
    larger peak and the later non-empty curve, losses and ending.
    """

    train_flops: float = 0.0
    peak_parameters: int = 0
    dev_curve: tuple[float, ...] = ()
    train_steps: int = 0
    train_losses: tuple[float, ...] = ()
    stopped: str = ""

    def __post_init__(self) -> None:
        if not self.train_flops >= 0.0:
            raise ValueError(f"train_flops must be a finite non-negative float, got {self.train_flops!r}")
        if self.train_steps < 0:
            raise ValueError(f"train_steps must be >= 0, got {self.train_steps!r}")
        if self.peak_parameters < 0:
            raise ValueError(f"peak_parameters must be >= 0, got {self.peak_parameters!r}")

    def combine(self, other: Resources) -> Resources:
        return Resources(
            train_flops=self.train_flops + other.train_flops,
            peak_parameters=max(self.peak_parameters, other.peak_parameters),
            dev_curve=other.dev_curve or self.dev_curve,
            train_steps=self.train_steps + other.train_steps,
            train_losses=other.train_losses or self.train_losses,
            stopped=other.stopped or self.stopped,
        )
