"""Bootstrap intervals over units (concepts) against scipy's percentile bootstrap and the normal approximation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from lifelong.metrics.statistics import bootstrap_interval


def test_the_interval_agrees_with_scipy_and_the_normal_approximation():
    rng = np.random.default_rng(0)
    per_concept = rng.beta(4, 2, size=80)  # accuracies of 80 concepts
    low, high = bootstrap_interval(per_concept, resamples=4000, seed=1)
    reference = stats.bootstrap(
        (per_concept,), np.mean, n_resamples=4000, method="percentile", random_state=2
    ).confidence_interval
    assert low == pytest.approx(reference.low, abs=0.006) and high == pytest.approx(reference.high, abs=0.006)
    half = 1.96 * per_concept.std(ddof=1) / np.sqrt(per_concept.size)
    assert (high - low) / 2 == pytest.approx(half, rel=0.1)
    assert low < per_concept.mean() < high


def test_seeded_constant_and_bad_input():
    values = np.array([0.2, 0.9, 0.4, 0.7])
    assert bootstrap_interval(values, seed=3) == bootstrap_interval(values, seed=3)
    assert bootstrap_interval(np.full(5, 0.5)) == (0.5, 0.5)
    wider = bootstrap_interval(values, confidence=0.99)
    narrower = bootstrap_interval(values, confidence=0.5)
    assert wider[0] <= narrower[0] and narrower[1] <= wider[1]
    with pytest.raises(ValueError, match="at least one value"):
        bootstrap_interval(np.array([]))
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_interval(values, confidence=1.0)
