"""Search: DP optimality, sampling, extrapolation, step predictions, scatter and prefix counts."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lifelong.sortsearch.bitmatrix import PackedRows, pack, unpack
from lifelong.sortsearch.search import (
    dp_threshold,
    estimate_accuracies,
    extrapolate,
    global_threshold,
    optimal_thresholds,
    predict_rows,
    prefix_ones,
    sample_positions,
    scatter,
)


def steps(k: np.ndarray, n: int) -> np.ndarray:
    """Dense step rows [1_k 0_{n-k}], written plainly."""
    return (np.arange(n)[None, :] < np.asarray(k)[:, None]).astype(np.uint8)


@settings(max_examples=120, deadline=None)
@given(st.lists(st.integers(0, 1), min_size=0, max_size=40))
def test_dp_is_the_first_optimal_step(row: list[int]) -> None:
    b = np.array(row, np.uint8)
    errors = [int(np.abs(b.astype(int) - steps([k], b.size)[0]).sum()) for k in range(b.size + 1)]
    k = dp_threshold(b)
    assert errors[k] == min(errors)  # optimal (Theorem 4.1)
    assert k == int(np.argmin(errors))  # ties: the smallest k
    assert dp_threshold(b.astype(bool)) == k == dp_threshold(b.astype(np.int64))


def test_dp_edge_cases_and_batches() -> None:
    assert dp_threshold(np.zeros(5, np.uint8)) == 0
    assert dp_threshold(np.ones(5, np.uint8)) == 5
    assert dp_threshold(np.array([0, 1], np.uint8)) == 0  # S(2) = 0 ties S(0) = 0: k = 0
    assert dp_threshold(np.array([1, 0, 1, 0], np.uint8)) == 1  # S(1) = S(3) = 1: first maximum
    assert dp_threshold(np.array([True, False, True, True])) == 4  # bool input is not 2b-1 on bools
    assert dp_threshold(np.zeros(0, np.uint8)) == 0
    rng = np.random.default_rng(0)
    B = (rng.random((300, 50)) < 0.6).astype(np.uint8)
    batch = dp_threshold(B)
    assert batch.dtype == np.int64
    assert np.array_equal(batch, [dp_threshold(r) for r in B])
    with pytest.raises(ValueError, match="only 0 and 1"):
        dp_threshold(np.array([[0, 2]]))


@pytest.mark.parametrize("n, n_prime", [(10, 10), (10, 1), (1, 1), (100, 7), (1000, 999), (2048, 8), (12345, 2048)])
def test_uniform_positions_are_bin_midpoints(n: int, n_prime: int) -> None:
    pos = sample_positions(n, n_prime)
    assert pos.size == n_prime and np.all(np.diff(pos) > 0) and pos[0] >= 0 and pos[-1] < n
    assert np.array_equal(pos, [math.floor(Fraction(2 * i + 1, 2) * Fraction(n, n_prime)) for i in range(n_prime)])
    i = np.arange(n_prime)
    assert np.all((pos * n_prime < (i + 1) * n) & ((pos + 1) * n_prime > i * n))  # cell [p, p+1) meets bin i


def test_sampler_edge_cases() -> None:
    assert np.array_equal(sample_positions(10, 10), np.arange(10))
    assert np.array_equal(sample_positions(10, 10, "random", seed=1), np.arange(10))
    assert np.array_equal(sample_positions(9, 1), [4])
    with pytest.raises(ValueError, match="n'=11 must lie in"):
        sample_positions(10, 11)
    with pytest.raises(ValueError, match="n'=0 must lie in"):
        sample_positions(10, 0)
    with pytest.raises(ValueError, match="needs a seed"):
        sample_positions(10, 3, "random")
    with pytest.raises(ValueError, match="unknown sampling"):
        sample_positions(10, 3, "stratified")


def test_random_positions_are_seeded_sorted_and_exact() -> None:
    a = sample_positions(1000, 64, "random", seed=7)
    assert a.size == 64 and np.all(np.diff(a) > 0)
    assert np.array_equal(a, sample_positions(1000, 64, "random", seed=7))
    assert not np.array_equal(a, sample_positions(1000, 64, "random", seed=8))
    assert np.array_equal(a, sample_positions(1000, 64, "random", seed=np.random.default_rng(7)))


def test_extrapolation_convention() -> None:
    pos = np.array([10, 30, 50, 70, 90])
    # k' = 0: cut between 0 and position 10 -> 5; k' = 2: between 31 (after 30) and 50 -> 40; k' = 5: 91..100 -> 95
    assert np.array_equal(extrapolate([0, 1, 2, 5], pos, 100), [5, 20, 40, 95])
    assert extrapolate(2, pos, 100) == 40
    assert np.array_equal(extrapolate(np.arange(11), np.arange(10), 10), np.arange(11))  # n' = n: identity
    with pytest.raises(ValueError, match="thresholds must lie in"):
        extrapolate([6], pos, 100)
    with pytest.raises(ValueError, match="strictly increasing"):
        extrapolate([1], [5, 5], 100)


@settings(max_examples=100, deadline=None)
@given(n=st.integers(1, 300), frac=st.floats(0, 1), seed=st.integers(0, 1000), data=st.data())
def test_extrapolated_step_agrees_with_every_sampled_item(n: int, frac: float, seed: int, data) -> None:
    n_prime = max(1, int(frac * n))
    pos = sample_positions(n, n_prime, "random", seed=seed)
    k_sampled = data.draw(st.integers(0, n_prime))
    k = extrapolate(k_sampled, pos, n)
    assert np.array_equal(steps([k], n)[0][pos], steps([k_sampled], n_prime)[0])


def test_global_threshold_counts_correct_samples() -> None:
    pos = np.array([10, 30, 50, 70, 90])
    sampled = np.array([[1, 0, 0, 1, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]], np.uint8)
    assert np.array_equal(global_threshold(sampled, pos, 100), extrapolate([2, 0, 5], pos, 100))


@pytest.mark.parametrize("n", [1, 8, 13, 100])
def test_predict_rows_are_packed_steps(n: int) -> None:
    k = np.arange(n + 1)
    packed = predict_rows(k, n)
    assert np.array_equal(unpack(packed, n), steps(k, n))
    assert np.array_equal(estimate_accuracies(k, n), k / n)


def test_scatter_dense_and_packed() -> None:
    rng = np.random.default_rng(1)
    n = 37
    order = rng.permutation(n)
    k = rng.integers(0, n + 1, 6)
    dense_ranked = steps(k, n)
    dense = scatter(dense_ranked, order)
    assert np.array_equal(dense[:, order], dense_ranked)
    assert np.array_equal(unpack(scatter(predict_rows(k, n), order), n), dense)
    assert np.array_equal(unpack(scatter(PackedRows(predict_rows(k, n), n), order), n), dense)
    assert np.array_equal(scatter(dense_ranked[0], order), dense[0])
    with pytest.raises(ValueError, match="permutation"):
        scatter(dense_ranked, np.zeros(n, int))
    with pytest.raises(ValueError, match="fit neither"):
        scatter(dense_ranked[:, :7], order)


def test_optimal_thresholds_and_prefix_counts_match_dense() -> None:
    rng = np.random.default_rng(2)
    A = (rng.random((23, 301)) < 0.5).astype(np.uint8)
    order = rng.permutation(301)
    best = optimal_thresholds(PackedRows(pack(A), 301), order, rows_per_chunk=4)
    assert np.array_equal(best.k, dp_threshold(A[:, order]))
    ranked_scores = np.cumsum(2 * A[:, order].astype(int) - 1, axis=1)
    assert np.array_equal(best.score, np.maximum(0, ranked_scores.max(axis=1)))
    k = rng.integers(0, 302, 23)
    expected = [A[i, order[: k[i]]].sum() for i in range(23)]
    assert np.array_equal(prefix_ones(A, order, k), expected)
    assert np.array_equal(prefix_ones(PackedRows(pack(A), 301), order, k, rows_per_chunk=5), expected)
