"""Fact learning analyses: transfer against explicit loops and the paper's 1-based formula, long tail against a
brute-force count over items, few-shot and compositional on hand-counted examples, task similarity against scipy's
cosine distance and explicit set Jaccards, and validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial import distance

from lifelong.metrics.fact_analysis import compositional, fact_transfer, few_shot, long_tail, task_similarity

# ------------------------------------------------------------------------------------------------- transfer


def _spec_transfer(R: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """The paper's formulas written 1-based: BWT = mean_{i<T} (R[T,i] - R[i,i]); FWT = mean_{i>=2} (R[i-1,i] - b_i)."""
    T = len(R)

    def r(i, j):  # 1-based view
        return R[i - 1][j - 1]

    bwt = sum(r(T, i) - r(i, i) for i in range(1, T)) / (T - 1)
    fwt = sum(r(i - 1, i) - b[i - 1] for i in range(2, T + 1)) / (T - 1)
    return bwt, fwt


@pytest.mark.parametrize("T", [2, 3, 5, 8])
def test_transfer_matches_loops_and_spec(T):
    rng = np.random.default_rng(T)
    R, b = rng.random((T, T)), rng.random(T)
    out = fact_transfer(R, b)
    bwt = fwt = 0.0
    for i in range(T - 1):
        bwt += R[T - 1, i] - R[i, i]
    for i in range(1, T):
        fwt += R[i - 1, i] - b[i]
    assert out["bwt"] == pytest.approx(bwt / (T - 1))
    assert out["fwt"] == pytest.approx(fwt / (T - 1))
    assert (out["bwt"], out["fwt"]) == pytest.approx(_spec_transfer(R, b))
    assert out["final_mean_over_tasks"] == pytest.approx(sum(R[T - 1]) / T)
    assert out["R"] == R.tolist() and out["b"] == b.tolist()
    assert len(out["backward_per_task"]) == len(out["forward_per_task"]) == T - 1


def test_transfer_hand_example():
    out = fact_transfer([[0.5, 0.2], [0.3, 0.6]], [0.1, 0.05])
    assert out["bwt"] == pytest.approx(-0.2)  # R[1,0] - R[0,0]
    assert out["fwt"] == pytest.approx(0.15)  # R[0,1] - b[1]
    assert out["final_mean_over_tasks"] == pytest.approx(0.45)
    assert out["R"] == [[0.5, 0.2], [0.3, 0.6]]


@pytest.mark.parametrize(
    ("R", "b", "match"),
    [
        ([[0.5, 0.2, 0.1], [0.3, 0.6, 0.1]], [0.1, 0.1], "square"),
        ([[0.5]], [0.1], "N >= 2"),
        ([[0.5, 1.2], [0.3, 0.6]], [0.1, 0.1], r"outside \[0, 1\]"),
        ([[0.5, -0.1], [0.3, 0.6]], [0.1, 0.1], r"outside \[0, 1\]"),
        ([[0.5, math.nan], [0.3, 0.6]], [0.1, 0.1], "not finite"),
        ([[0.5, 0.2], [0.3, 0.6]], [0.1, 0.1, 0.1], "one accuracy per task"),
        ([[0.5, 0.2], [0.3, 0.6]], [0.1, 40.0], r"not an accuracy in \[0, 1\]"),
        ([[0.5, 0.2], [0.3, 0.6]], [0.1, math.nan], r"not an accuracy in \[0, 1\]"),
    ],
)
def test_transfer_rejects(R, b, match):
    with pytest.raises(ValueError, match=match):
        fact_transfer(R, b)


# ------------------------------------------------------------------------------------------------ long tail


def _random_counts(seed: int, n: int = 60):
    rng = np.random.default_rng(seed)
    train = rng.integers(0, 300, n)
    train[rng.random(n) < 0.2] = 0  # zero-shot facts
    train[:5] = [1, 2, 3, 4, 7]
    if seed == 2:
        train[train == 0] = 5  # no zero-shot fact: the bins start at 1
    items = rng.integers(0, 6, n)
    correct = np.array([rng.integers(0, k + 1) for k in items])
    return train, items, correct


def _brute_bin(train, items, correct, low, high):
    """Expand every fact into its test items and count those whose fact has low <= train < high."""
    rows = [(train[f], k < correct[f]) for f in range(len(train)) for k in range(items[f])]
    hits = [ok for n, ok in rows if low <= n < high]
    facts = {f for f in range(len(train)) if items[f] > 0 and low <= train[f] < high}
    return len(facts), len(hits), sum(hits)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_long_tail_default_edges_brute_force(seed):
    train, items, correct = _random_counts(seed)
    rows = long_tail(train, items, correct)
    counted = train[items > 0]
    assert rows[0]["low"] == (0 if (counted == 0).any() else 1)
    assert rows[-1]["high"] > counted.max() >= rows[-1]["low"]
    for row, nxt in zip(rows, rows[1:], strict=False):
        assert nxt["low"] == row["high"]
    for row in rows[1:] if rows[0]["low"] == 0 else rows:
        assert row["high"] == 2 * row["low"]  # powers of two
    for row in rows:
        facts, n_items, n_correct = _brute_bin(train, items, correct, row["low"], row["high"])
        assert (row["facts"], row["items"], row["correct"]) == (facts, n_items, n_correct)
        assert row["accuracy"] == (n_correct / n_items if n_items else None)
    assert sum(r["items"] for r in rows) == items.sum()


def test_long_tail_hand_example_and_custom_edges():
    train = [1, 1, 3, 9, 0, 2]
    items = [2, 1, 4, 3, 5, 0]  # fact 5 has no test items: ignored
    correct = [1, 1, 0, 3, 2, 0]
    rows = long_tail(train, items, correct)
    assert [(r["low"], r["high"]) for r in rows] == [(0, 1), (1, 2), (2, 4), (4, 8), (8, 16)]
    assert [(r["facts"], r["items"], r["correct"]) for r in rows] == [
        (1, 5, 2),
        (2, 3, 2),
        (1, 4, 0),
        (0, 0, 0),
        (1, 3, 3),
    ]
    assert rows[3]["accuracy"] is None and rows[1]["accuracy"] == pytest.approx(2 / 3)
    rows = long_tail(train, items, correct, edges=[0, 2, np.inf])
    assert [(r["low"], r["high"], r["items"], r["correct"]) for r in rows] == [(0, 2, 8, 4), (2, math.inf, 7, 3)]
    assert long_tail([3], [0], [0]) == []


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (([1, 2], [1, 1], [1]), {}, "one entry per fact"),
        (([1, 2], [1, 1], [2, 0]), {}, "correct > items"),
        (([1, -2], [1, 1], [1, 0]), {}, "not a count"),
        (([1, 2.5], [1, 1], [1, 0]), {}, "not a count"),
        (([1, 20], [1, 1], [1, 0]), {"edges": [1, 2, 4]}, "outside the bins"),
        (([1, 2], [1, 1], [1, 0]), {"edges": [1, 4, 2]}, "strictly increasing"),
        (([1, 2], [1, 1], [1, 0]), {"edges": [1]}, "strictly increasing"),
    ],
)
def test_long_tail_rejects(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        long_tail(*args, **kwargs)


# ------------------------------------------------------------------------------------------------- few-shot


def test_few_shot_hand_example():
    train = [0, 1, 10, 11, 3, 0]
    items = [2, 3, 4, 5, 0, 0]
    correct = [1, 1, 2, 5, 0, 0]
    out = few_shot(train, items, correct, threshold=10)
    assert out == {
        "threshold": 10,
        "facts": 2,
        "items": 7,
        "correct": 3,
        "accuracy": pytest.approx(3 / 7),
        "zero_shot": {"facts": 1, "items": 2, "correct": 1, "accuracy": 0.5},
    }
    out = few_shot(train[1:], items[1:], correct[1:], threshold=1)
    assert "zero_shot" not in out and (out["facts"], out["items"], out["accuracy"]) == (1, 3, pytest.approx(1 / 3))
    assert few_shot([50], [3], [1])["accuracy"] is None
    with pytest.raises(ValueError, match="threshold"):
        few_shot(train, items, correct, threshold=0)


# -------------------------------------------------------------------------------------------- compositional

FACTS = [
    ("man", "riding", "horse"),  # 0: rare, parts frequent -> compositional
    ("man", None, None),  # 1
    ("woman", "riding", "bike"),  # 2
    ("dog", "chasing", "horse"),  # 3
    ("man", "riding", "bike"),  # 4: rare (10 <= 10) -> compositional
    ("man", "riding", "*"),  # 5: SP fact ("*" undefined): never compositional
    ("cat", "riding", "horse"),  # 6: S "cat" seen 3 times
    ("woman", "chasing", "bike"),  # 7: 11 images, not rare
    ("dog", "riding", "horse"),  # 8: compositional by counts but no test items
    ("horse", None, None),  # 9: "horse" as S must not count towards O "horse"
]
TRAIN = [5, 60, 70, 50, 10, 0, 3, 11, 1, 1000]
ITEMS = [4, 3, 3, 3, 2, 4, 5, 3, 0, 2]
CORRECT = [3, 3, 1, 2, 0, 4, 5, 1, 0, 2]
# word counts: S man 75, woman 81, dog 51, cat 3, horse 1000; P riding 89, chasing 61; O horse 59, bike 91


def _brute_compositional(facts, train, items, rare, frequent):
    chosen = []
    for i, f in enumerate(facts):
        parts = [None if p in (None, "*") else p for p in f]
        if items[i] == 0 or train[i] > rare or None in parts:
            continue
        counts = [sum(train[j] for j, g in enumerate(facts) if g[c] == parts[c]) for c in range(3)]
        if min(counts) >= frequent:
            chosen.append(i)
    return chosen


def test_compositional_hand_example():
    out = compositional(FACTS, TRAIN, ITEMS, CORRECT, rare=10, frequent=50)
    assert out == {
        "rare": 10,
        "frequent": 50,
        "facts": 2,
        "items": 6,
        "correct": 3,
        "accuracy": 0.5,
        "fact_indices": [0, 4],
    }
    out = compositional(FACTS, TRAIN, ITEMS, CORRECT, rare=10, frequent=60)  # O horse: 59 < 60
    assert (out["fact_indices"], out["items"], out["accuracy"]) == ([4], 2, 0.0)
    out = compositional(FACTS, TRAIN, ITEMS, CORRECT, rare=4, frequent=50)
    assert (out["facts"], out["items"], out["accuracy"]) == (0, 0, None)
    for rare, frequent in [(10, 50), (10, 60), (3, 1), (11, 52), (100, 1)]:
        expected = _brute_compositional(FACTS, TRAIN, ITEMS, rare, frequent)
        assert compositional(FACTS, TRAIN, ITEMS, CORRECT, rare=rare, frequent=frequent)["fact_indices"] == expected


def test_compositional_rejects():
    with pytest.raises(ValueError, match="one .S, P, O. triple per fact"):
        compositional(FACTS[:-1], TRAIN, ITEMS, CORRECT)
    with pytest.raises(ValueError, match="triple"):
        compositional(["man riding horse"], [1], [1], [1])
    with pytest.raises(ValueError, match="frequent"):
        compositional(FACTS, TRAIN, ITEMS, CORRECT, frequent=0)


# ------------------------------------------------------------------------------------------ task similarity


def _vocab(facts, owner, t, c):
    return {f[c] for f, k in zip(facts, owner, strict=True) if k == t and f[c] is not None}


def test_task_similarity_against_scipy_and_sets():
    rng = np.random.default_rng(7)
    n, T = 40, 4
    words = [["a", "b", "c", "d", "e"], ["p", "q", "r", None], ["x", "y", "z", None, None]]
    facts = [tuple(w[rng.integers(len(w))] for w in words) for _ in range(n)]
    owner = np.arange(n) % T
    vectors = rng.normal(size=(n, 3, 4))
    out = task_similarity(vectors, owner, facts)
    assert out["tasks"] == T
    flat = vectors.reshape(n, -1)
    for a in range(T):
        for b in range(T):
            expected = 1 - distance.cosine(flat[owner == a].mean(0), flat[owner == b].mean(0))
            assert out["cosine"][a, b] == pytest.approx(expected)
            jaccards = []
            for c in range(3):
                A, B = _vocab(facts, owner, a, c), _vocab(facts, owner, b, c)
                if A | B:
                    jaccards.append(len(A & B) / len(A | B))
            assert out["spo_overlap"][a, b] == pytest.approx(math.prod(jaccards) ** (1 / len(jaccards)))
    assert np.allclose(np.diag(out["cosine"]), 1) and np.allclose(np.diag(out["spo_overlap"]), 1)
    assert np.allclose(out["cosine"], out["cosine"].T) and np.allclose(out["spo_overlap"], out["spo_overlap"].T)


def test_task_similarity_empty_parts_left_out():
    facts = [("man", None, None), ("dog", None, None), ("man", None, None), ("cat", "*", None), ("dog", "eat", "meat")]
    owner = [0, 0, 1, 1, 2]
    vectors = np.eye(5)[[0, 1, 0, 2, 3]] + 0.1
    out = task_similarity(vectors, owner, facts)
    # tasks 0 and 1: only S defined in both: J_S = |{man}| / |{man, dog, cat}|, P and O left out
    assert out["spo_overlap"][0, 1] == pytest.approx(1 / 3)
    assert math.isnan(out["jaccard"]["P"][0, 1]) and math.isnan(out["jaccard"]["O"][0, 1])
    # tasks 0 and 2: J_S = 1/2, J_P = J_O = 0 (one side empty) -> 0
    assert out["spo_overlap"][0, 2] == 0.0
    assert out["jaccard"]["S"][0, 2] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("vectors", "owner", "facts", "tasks", "match"),
    [
        (np.ones((2, 3)), [0, 1], [("a", None, None)] * 2, 3, "own no fact"),
        (np.ones((2, 3)), [0, 1, 1], [("a", None, None)] * 2, None, "one integer task index per fact"),
        (np.ones((2, 3)), [0, 1], [("a", None, None)] * 3, None, "one .S, P, O. triple per fact"),
        (np.array([[1.0, 0.0], [0.0, 0.0]]), [0, 1], [("a", None, None)] * 2, None, "zero mean embedding"),
        (np.ones((2, 3)), [0, 2], [("a", None, None)] * 2, 2, "must lie in"),
        (np.ones(3), [0, 1, 2], [("a", None, None)] * 3, None, r"\[n, D\]"),
    ],
)
def test_task_similarity_rejects(vectors, owner, facts, tasks, match):
    with pytest.raises(ValueError, match=match):
        task_similarity(vectors, owner, facts, tasks=tasks)
