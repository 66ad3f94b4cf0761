"""The convergence rule (issue 25 part 2): the plateau test against its definition written out, and
train_continual stopping at the second plateau (after one lr decay) or at the cap."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from lifelong.training.continual_loop import train_continual
from lifelong.training.convergence import Convergence


def plateau_by_hand(losses, tol, window):
    """Best of the last `window` epochs is not `tol` (relative) below the best of all epochs before them."""
    if len(losses) <= window:
        return False
    earlier = losses[: len(losses) - window]
    recent = losses[len(losses) - window :]
    best_before = earlier[0]
    for value in earlier:
        best_before = min(best_before, value)
    best_recent = recent[0]
    for value in recent:
        best_recent = min(best_recent, value)
    return not (best_before - best_recent >= tol * abs(best_before))


@pytest.mark.parametrize("seed", range(20))
def test_plateau_matches_its_definition(seed):
    rng = np.random.default_rng(seed)
    rule = Convergence(tol=float(rng.choice([0.0, 0.01, 0.1])), window=int(rng.integers(1, 5)))
    losses = list(np.cumprod(rng.uniform(0.8, 1.05, size=int(rng.integers(0, 15)))))
    for end in range(len(losses) + 1):
        assert rule.plateaued(losses[:end]) == plateau_by_hand(losses[:end], rule.tol, rule.window)


def test_bad_rules_are_refused():
    with pytest.raises(ValueError, match="converge_tol"):
        Convergence(tol=1.5)
    with pytest.raises(ValueError, match="converge_window"):
        Convergence(window=0)


def fit(epochs, convergence):
    torch.manual_seed(0)
    x = np.random.default_rng(0).normal(size=(64, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    model = nn.Linear(4, 2)
    return train_continual(
        model,
        x,
        y,
        epochs=epochs,
        batch_size=16,
        lr=0.5,
        weight_decay=0.0,
        seed=0,
        augment=False,
        convergence=convergence,
    )


def test_training_stops_at_the_second_plateau_or_at_the_cap():
    rule = Convergence(tol=0.05, window=2)
    done = fit(200, rule)
    assert done.stopped == "converged" and len(done.epoch_losses) < 200
    losses = done.epoch_losses
    first = next(e for e in range(len(losses) + 1) if rule.plateaued(losses[:e]))  # the lr decay
    assert first < len(losses) and rule.plateaued(losses[first:])  # the second phase ended on a plateau too
    assert done.steps == len(losses) * 4
    capped = fit(3, rule)
    assert capped.stopped == "cap" and len(capped.epoch_losses) == 3
    assert fit(3, None).stopped == "epochs"
