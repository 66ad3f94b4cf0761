"""Training until convergence: one stated rule, the same for every method (issue 25 part 2).

`Convergence(tol, window)`: after each epoch, the loss has plateaued when its best value over the last `window`
epochs is less than `tol` (relative) below its best value over all earlier epochs of the same phase. At the first
plateau the learning rate drops 10x (a second phase starts); at the second plateau training stops. `epochs` is the
cap in any case. With `decay=False` the first plateau stops training. The fit reports how it ended
("converged" or "cap"), its epochs, steps and the per-epoch mean losses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Convergence:
    """The stopping rule (module docstring): relative improvement `tol` over `window` epochs, one 10x lr decay."""

    tol: float = 0.01
    window: int = 3
    decay: bool = True

    def __post_init__(self) -> None:
        if not 0 <= self.tol < 1 or self.window < 1:
            raise ValueError(f"need 0 <= converge_tol < 1 and converge_window >= 1, got {self.tol}, {self.window}")

    def plateaued(self, losses: Sequence[float]) -> bool:
        """Whether the losses of one phase (oldest first) have stopped improving by `tol` over `window` epochs."""
        if len(losses) <= self.window:
            return False
        before, recent = min(losses[: -self.window]), min(losses[-self.window :])
        return before - recent < self.tol * abs(before)

    def describe(self) -> str:
        then = "lr / 10 at the first plateau, stop at the second" if self.decay else "stop at the first plateau"
        return f"plateau: < {100 * self.tol:g}% better over {self.window} epochs; {then}"


__all__ = ["Convergence"]
