"""Metrics: error, chance agreement, kappa, aggregate error, Pearson and the error decomposition."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.stats import pearsonr
from sklearn.metrics import cohen_kappa_score

from lifelong.sortsearch.bitmatrix import PackedRows, pack
from lifelong.sortsearch.row_metrics import (
    aggregate_error,
    agreement,
    chance_agreement,
    cohen_kappa,
    decomposition,
    pearson,
    sample_level_error,
    step_agreement,
)
from lifelong.sortsearch.search import dp_threshold, predict_rows, scatter


def rows(m: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random true rows and estimates with varied accuracies."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, (m, 1))
    return (rng.random((m, n)) < p).astype(np.uint8), (rng.random((m, n)) < p).astype(np.uint8)


def test_metrics_equal_direct_formulas_and_sklearn() -> None:
    a, y = rows(40, 97, 0)
    n = a.shape[1]
    error = (a != y).mean(axis=1)
    pa, py = a.mean(axis=1), y.mean(axis=1)
    e_rand = pa * py + (1 - pa) * (1 - py)
    assert np.allclose(sample_level_error(a, y), error)
    assert np.allclose(chance_agreement(a, y), e_rand)
    assert np.allclose(cohen_kappa(a, y), ((1 - error) - e_rand) / (1 - e_rand))
    assert np.allclose(cohen_kappa(a, y), [cohen_kappa_score(a[i], y[i]) for i in range(40)])
    assert np.allclose(aggregate_error(a, y), np.abs(py - pa))
    # packed rows (and PackedRows views) give the same numbers
    assert np.allclose(sample_level_error(pack(a), pack(y), n), error)
    assert np.allclose(cohen_kappa(PackedRows(pack(a), n), PackedRows(pack(y), n)), cohen_kappa(a, y))
    assert isinstance(sample_level_error(a[0], y[0]), float)
    assert sample_level_error(a[0], y[0]) == pytest.approx(error[0])


def test_kappa_is_nan_only_when_chance_agreement_is_one() -> None:
    ones, zeros = np.ones((1, 10), np.uint8), np.zeros((1, 10), np.uint8)
    mixed = np.array([[1, 0] * 5], np.uint8)
    assert np.isnan(cohen_kappa(ones, ones)[0]) and np.isnan(cohen_kappa(zeros, zeros)[0])
    assert chance_agreement(ones, ones)[0] == 1.0
    assert cohen_kappa(ones, zeros)[0] == 0.0  # E_rand = 0 here: defined
    assert cohen_kappa(ones, mixed)[0] == 0.0
    assert cohen_kappa(mixed, 1 - mixed)[0] == -1.0  # can be negative
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isnan(cohen_kappa_score(ones[0], ones[0]))


def test_shapes_must_match() -> None:
    a, y = rows(3, 10, 1)
    with pytest.raises(ValueError, match="same shape"):
        sample_level_error(a, y[:, :9])


def test_pearson_matches_scipy() -> None:
    rng = np.random.default_rng(2)
    x = rng.random(50)
    y = x + rng.normal(0, 0.1, 50)
    assert pearson(x, y) == pytest.approx(pearsonr(x, y).statistic, abs=1e-12)
    assert np.isnan(pearson(np.ones(5), np.arange(5)))
    with pytest.raises(ValueError, match="at least 2"):
        pearson([0.5], [0.5])


def test_step_agreement_equals_materialised_predictions() -> None:
    a, _ = rows(30, 203, 3)
    rng = np.random.default_rng(3)
    order, k = rng.permutation(203), rng.integers(0, 204, 30)
    y = scatter(predict_rows(k, 203), order)
    direct, counted = agreement(pack(a), y, 203), step_agreement(PackedRows(pack(a), 203), order, k)
    for name in ("ones_a", "ones_y", "ones_both"):
        assert np.array_equal(getattr(direct, name), getattr(counted, name))
    assert np.array_equal(step_agreement(a, order, k).ones_both, direct.ones_both)


def test_decomposition() -> None:
    a, _ = rows(25, 150, 4)
    rng = np.random.default_rng(4)
    order = rng.permutation(150)
    k_star = dp_threshold(a[:, order])
    y_star = scatter(predict_rows(k_star, 150), order)
    aleatoric, epistemic = decomposition(a, order, k_star)
    assert np.allclose(aleatoric, sample_level_error(pack(a), y_star, 150))
    assert np.all(epistemic == 0)
    k = rng.integers(0, 151, 25)
    aleatoric2, epistemic2 = decomposition(PackedRows(pack(a), 150), order, k)
    assert np.allclose(aleatoric2, aleatoric)
    assert np.allclose(epistemic2, np.abs(k - k_star) / 150)
    total = sample_level_error(pack(a), scatter(predict_rows(k, 150), order), 150)
    assert np.all(total <= aleatoric2 + epistemic2 + 1e-12)  # triangle inequality
    assert np.all(total >= aleatoric2 - 1e-12)  # y* is the best step under this order
