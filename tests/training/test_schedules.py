"""Batch-size rule and warm-up + cosine schedule (docs/protocols/nevis.md#batch-size-and-schedule)."""

import math

import pytest
import torch

from lifelong.training import batch_size_for, warmup_cosine, warmup_steps_for


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (0, 16),
        (1, 16),
        (399, 16),
        (400, 16),
        (6399, 16),
        (6400, 16),
        (12799, 16),
        (12800, 32),
        (25600, 64),
        (102399, 128),
        (102400, 256),
        (204799, 256),
        (204800, 512),
        (10**9, 512),
    ],
)
def test_batch_size_rule_boundaries(n, expected):
    assert batch_size_for(n) == expected
    # Cross-check the paper's float formula away from exact powers of two.
    if n >= 400 and n % 400:
        assert expected == min(512, max(16, 2 ** math.floor(math.log2(0.0025 * n))))


def test_batch_size_bounds_are_configurable():
    assert batch_size_for(2000, min_size=32, max_size=128) == 32
    assert batch_size_for(10**6, min_size=4, max_size=64) == 64
    assert batch_size_for(1600, min_size=1, max_size=512) == 4
    with pytest.raises(ValueError, match="min_size"):
        batch_size_for(100, min_size=64, max_size=32)
    with pytest.raises(ValueError, match="num_examples"):
        batch_size_for(-1)


def test_warmup_length():
    assert warmup_steps_for(1000, 10, 7) == 70
    assert warmup_steps_for(50, 10, 7) == 49  # max_steps - 1
    assert warmup_steps_for(1, 10, 7) == 0
    assert warmup_steps_for(100, 10, 0) == 0


def test_warmup_linear_peak_then_cosine_to_zero():
    total, warm = 100, 10
    lr = warmup_cosine(total, warm)
    ramp = [lr(s) for s in range(warm + 1)]
    assert ramp[0] > 0
    assert ramp[-1] == pytest.approx(1.0)
    steps = [b - a for a, b in zip(ramp, ramp[1:], strict=False)]
    assert all(d == pytest.approx(steps[0]) for d in steps)  # linear
    decay = [lr(s) for s in range(warm, total)]
    assert all(b < a for a, b in zip(decay, decay[1:], strict=False))
    assert max(lr(s) for s in range(total)) == pytest.approx(1.0)
    assert lr(total - 1) < 1e-2
    assert lr((warm + total) // 2) == pytest.approx(0.5, abs=0.02)  # cosine: half-way through the decay


def test_schedule_drives_lambda_lr_and_rejects_bad_lengths():
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.2)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(20, 4))
    seen = []
    for _ in range(20):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert seen[4] == pytest.approx(0.2)
    assert seen[0] == pytest.approx(0.2 / 5)
    assert seen[-1] < 0.01
    with pytest.raises(ValueError, match="warmup_steps_for"):
        warmup_cosine(10, 10)
