"""Sort: sum, confidence, recursive and model orders."""

from __future__ import annotations

import numpy as np
import pytest

from lifelong.sortsearch.bitmatrix import PackedRows, pack
from lifelong.sortsearch.search import optimal_thresholds
from lifelong.sortsearch.sort import (
    descending_order,
    model_order,
    sort_by_confidence,
    sort_by_sum,
    sort_recursive,
    tie_keys,
)


def splitmix64(j: int) -> int:
    """Vigna's splitmix64 output for state (j + 1) * golden gamma, in Python integers (written independently)."""
    mask = (1 << 64) - 1
    z = ((j + 1) * 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)


def reference_order(keys: np.ndarray) -> np.ndarray:
    """Descending keys, ties by the sample's splitmix64 tie key, written independently."""
    return np.array(sorted(range(keys.size), key=lambda j: (-keys[j], splitmix64(j))))


def test_tie_keys_are_splitmix64_and_a_bijection() -> None:
    keys = tie_keys(1000)
    assert [int(k) for k in keys[:50]] == [splitmix64(j) for j in range(50)]
    assert int(keys[999]) == splitmix64(999)
    assert np.unique(keys).size == 1000
    assert np.array_equal(tie_keys(1200)[:1000], keys)  # a sample's key never changes as the benchmark grows


def test_sort_by_sum_ties_by_tie_key_dense_and_packed() -> None:
    A = (np.random.default_rng(0).random((5, 300)) < 0.5).astype(np.uint8)  # 6 distinct sums: many ties
    order = sort_by_sum(A)
    assert order.dtype == np.int32
    assert np.array_equal(order, reference_order(A.sum(axis=0).astype(int)))
    assert np.array_equal(sort_by_sum(PackedRows(pack(A), 300)), order)
    assert np.array_equal(sort_by_sum(A.astype(bool)), order)
    assert np.array_equal(sort_by_sum(A), order)  # deterministic


def test_sum_sort_recovers_planted_steps() -> None:
    rng = np.random.default_rng(1)
    n, m = 400, 30
    difficulty = rng.permutation(n)  # sample j is the difficulty[j]-th easiest
    thresholds = np.sort(rng.choice(np.arange(1, n), m, replace=False))
    A = (difficulty[None, :] < thresholds[:, None]).astype(np.uint8)  # model i solves the t_i easiest
    ranked = A[:, sort_by_sum(A)]
    assert np.all(np.diff(ranked.astype(int), axis=1) <= 0)  # every row is a step [1_k 0_{n-k}]
    assert np.array_equal(ranked.sum(axis=1), thresholds)
    assert np.array_equal(optimal_thresholds(A, sort_by_sum(A)).k, thresholds)


def test_descending_order_handles_floats_and_rejects_nan() -> None:
    keys = np.array([0.5, 0.7, 0.5, 1.0, -0.0, 0.0])
    assert np.array_equal(descending_order(keys), reference_order(keys))
    assert set(descending_order(keys)[:2]) == {3, 1} and set(descending_order(keys)[2:4]) == {0, 2}
    with pytest.raises(ValueError, match="finite"):
        descending_order(np.array([0.1, np.nan]))


def test_sort_by_confidence_array_and_chunks() -> None:
    rng = np.random.default_rng(2)
    C = rng.random((7, 50))
    C[:, 10] = C[:, 20]  # an exact tie: by tie key
    expected = reference_order(C.sum(axis=0))
    assert np.array_equal(sort_by_confidence(C), expected)
    assert np.array_equal(sort_by_confidence(C, chunk=2), expected)
    assert np.array_equal(sort_by_confidence(lambda: (C[i : i + 3] for i in range(0, 7, 3))), expected)
    with pytest.raises(ValueError, match="probabilities"):
        sort_by_confidence(C * 2)
    with pytest.raises(ValueError, match="no rows"):
        sort_by_confidence(lambda: iter([]))


def step_error(A: np.ndarray, order: np.ndarray) -> int:
    """Total ||A P - Y*||_1 with every row's optimal step."""
    best = optimal_thresholds(A, order)
    return int(A.sum() - best.score.sum())


def test_recursive_sort_reorders_only_within_equal_sum_blocks() -> None:
    rng = np.random.default_rng(3)
    ability, difficulty = rng.normal(size=40), rng.normal(size=600)
    A = (rng.random((40, 600)) < 1 / (1 + np.exp(-2 * (ability[:, None] - difficulty[None, :])))).astype(np.uint8)
    sums = A.sum(axis=0)
    plain = sort_by_sum(A)
    assert np.array_equal(sort_recursive(A, levels=1), plain)
    for levels in (2, 3):
        refined = sort_recursive(A, levels=levels)
        assert not np.array_equal(refined, plain)
        assert np.array_equal(sums[refined], sums[plain])  # same blocks in the same place
        for s in np.unique(sums):
            assert set(np.flatnonzero(sums == s)) == set(refined[sums[refined] == s])
        assert step_error(A, refined) <= step_error(A, plain)  # alternating minimisation never hurts the fit
    assert np.array_equal(sort_recursive(PackedRows(pack(A), 600)), sort_recursive(A))


def test_recursive_sort_uses_thresholds_inside_the_block() -> None:
    # columns 0, 1, 4, 5 share sum 1 and tie in the order of their tie keys (4, 5, 1, 0); model X reads 1, 0, 1, 0
    # there, so its DP cut (k=2) falls inside the block, which is re-sorted by X's outcomes (4 and 1 before 5 and 0,
    # each pair still in tie-key order); Y's cut (k=1) and Z's (k=0) lie on block edges and have no say
    A = np.array(
        [
            [0, 1, 1, 0, 1, 0],  # X
            [0, 0, 1, 0, 0, 0],  # Y
            [1, 0, 0, 0, 0, 1],  # Z
        ],
        np.uint8,
    )
    assert [splitmix64(j) for j in (4, 5, 1, 0)] == sorted(splitmix64(j) for j in (0, 1, 4, 5))
    assert np.array_equal(sort_by_sum(A), [2, 4, 5, 1, 0, 3])
    assert np.array_equal(optimal_thresholds(A, sort_by_sum(A)).k, [2, 1, 0])
    assert np.array_equal(sort_recursive(A), [2, 4, 1, 5, 0, 3])
    assert step_error(A, sort_recursive(A)) < step_error(A, sort_by_sum(A))
    # a cut on a block edge only: nothing moves
    B = np.array([[1, 1, 0, 0], [1, 1, 1, 0]], np.uint8)  # cuts at k=2 and k=3: both on block edges
    assert np.array_equal(sort_recursive(B), sort_by_sum(B))


def test_model_order_most_accurate_first() -> None:
    assert splitmix64(2) < splitmix64(0)  # the tied models 0 and 2 in tie-key order
    assert np.array_equal(model_order([0.5, 0.9, 0.5, 0.1]), [1, 2, 0, 3])
    with pytest.raises(ValueError, match="1-D"):
        model_order(np.zeros((2, 2)))


def test_ids_in_tie_order_serve_any_smaller_count_after_a_larger_one_and_orders_match_lexsort():
    from lifelong.sortsearch.sort import descending_order, ids_in_tie_order, tie_keys

    big = ids_in_tie_order(5000)
    for n in (1, 7, 4096, 5000):
        assert np.array_equal(ids_in_tie_order(n), np.argsort(tie_keys(n)))
    assert np.array_equal(ids_in_tie_order(5000), big) and not big.flags.writeable
    rng = np.random.default_rng(3)
    for keys in (rng.integers(0, 5, 3000), rng.random(3000), rng.integers(0, 2, 3000).astype(bool)):
        expected = np.lexsort((tie_keys(keys.size), -keys.astype(np.float64)))
        assert np.array_equal(descending_order(keys), expected)
