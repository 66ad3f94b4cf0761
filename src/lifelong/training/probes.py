"""ImageNet-CoG linear probes on frozen, l2-normalised features (docs/protocols/cog.md#linear-probe).

`reference_probe` is naver/cog's recipe as the protocol page describes it (30 Optuna TPE trials x 100 epochs, then a
retrain); `fast_probe` trains a grid of (lr, weight decay) heads together on a short schedule and retrains the
best (benchmarks/bench_probe.py compares the two). Both take the features as a 2-D array, a float16 `np.memmap`
included (streamed, never loaded whole), and return a `ProbeResult` for one seed; `probe_seeds` runs the five
protocol seeds and reports the mean and the population standard deviation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from lifelong.training.probe_data import (
    FEW_SHOT_COUNTS,
    ProbeResult,
    TrialRecord,
    few_shot_indices,
    stratified_split,
)
from lifelong.training.probe_fast import fast_probe
from lifelong.training.probe_reference import reference_probe

COG_SEEDS = (22, 37, 45, 77, 93)

__all__ = [
    "COG_SEEDS",
    "FEW_SHOT_COUNTS",
    "ProbeResult",
    "SeedSummary",
    "TrialRecord",
    "fast_probe",
    "few_shot_indices",
    "population_std",
    "probe_seeds",
    "reference_probe",
    "stratified_split",
]


def population_std(values: Sequence[float]) -> float:
    """Standard deviation with divisor n (the protocol's population std), not n - 1."""
    if len(values) == 0:
        raise ValueError("population_std needs at least one value")
    return float(np.std(np.asarray(values, dtype=np.float64), ddof=0))


@dataclass(frozen=True)
class SeedSummary:
    """Test top-1 over seeds: mean and population std (percent), and every seed's result."""

    mean: float
    std: float
    results: tuple[ProbeResult, ...]


def probe_seeds(
    probe: Callable[..., ProbeResult],
    train_x: np.ndarray,
    train_y: np.ndarray,
    test_x: np.ndarray,
    test_y: np.ndarray,
    *,
    seeds: Sequence[int] = COG_SEEDS,
    **options,
) -> SeedSummary:
    """Run `probe` (reference_probe or fast_probe) once per seed with the same options; summarise test top-1."""
    if not seeds:
        raise ValueError("probe_seeds needs at least one seed")
    results = tuple(probe(train_x, train_y, test_x, test_y, seed=seed, **options) for seed in seeds)
    scores = [result.test_top1 for result in results]
    return SeedSummary(float(np.mean(scores)), population_std(scores), results)
