"""Wildcard-aware top-K: the vectorised scorer against plain loops, the tie rule, and its input errors."""

from __future__ import annotations

import numpy as np
import pytest

from lifelong.facts.facts import Fact
from lifelong.facts.topk import topk_accuracy, topk_correct


def brute_force(similarity, candidates, truths, k):
    """docs/protocols/facts.md#top-k-correctness written plainly: rank by (similarity desc, index asc); a truth's
    defined parts must match."""
    out = []
    for row, truth in zip(similarity, truths, strict=True):
        order = sorted(range(len(candidates)), key=lambda j: (-row[j], j))[:k]
        hit = False
        for j in order:
            cand = [None if p == "*" else p for p in candidates[j]]
            want = [None if p == "*" else p for p in truth]
            if all(w is None or w == c for w, c in zip(want, cand, strict=True)):
                hit = True
        out.append(hit)
    return np.array(out)


def random_fact(rng):
    s = f"s{rng.integers(3)}"
    p = f"p{rng.integers(2)}" if rng.random() < 0.7 else None
    o = f"o{rng.integers(2)}" if rng.random() < 0.5 else None
    return (s, p, o)


@pytest.mark.parametrize("seed", range(12))
def test_matches_brute_force_with_wildcards_and_ties(seed):
    rng = np.random.default_rng(seed)
    candidates = [random_fact(rng) for _ in range(int(rng.integers(1, 15)))]
    truths = [random_fact(rng) for _ in range(40)]
    similarity = rng.integers(0, 4, size=(40, len(candidates))).astype(float)  # few values: many ties
    for k in range(1, len(candidates) + 1):
        expected = brute_force(similarity.tolist(), candidates, truths, k)
        np.testing.assert_array_equal(topk_correct(similarity, candidates, truths, k=k), expected)


def test_blocks_give_the_same_answer(monkeypatch):
    from lifelong.facts import topk

    rng = np.random.default_rng(1)
    candidates = [random_fact(rng) for _ in range(30)]
    truths = [random_fact(rng) for _ in range(200)]
    similarity = rng.normal(size=(200, 30)).round(1)
    whole = topk_correct(similarity, candidates, truths, k=5)
    monkeypatch.setattr(topk, "BLOCK_ELEMENTS", 7 * 30)  # 7 images per block
    np.testing.assert_array_equal(topk_correct(similarity, candidates, truths, k=5), whole)
    np.testing.assert_array_equal(whole, brute_force(similarity.tolist(), candidates, truths, 5))


def test_the_spec_wildcard_rule():
    candidates = [Fact("lion"), Fact("lion", "eating", "meat"), Fact("tiger", "jumping"), Fact("lion", "eating")]
    one_hot = np.eye(4)
    # each truth with only candidate j ranked first (k = 1)
    assert topk_correct(one_hot[[1]], candidates, [Fact("lion")], k=1)[0]  # S matches any same-S candidate
    assert topk_correct(one_hot[[1]], candidates, [("lion", "eating", None)], k=1)[0]  # SP matches SPO
    assert topk_correct(one_hot[[3]], candidates, [("lion", "eating", "*")], k=1)[0]  # "*" is undefined
    assert not topk_correct(one_hot[[0]], candidates, [Fact("lion", "eating")], k=1)[0]  # <lion> lacks P
    assert not topk_correct(one_hot[[3]], candidates, [Fact("lion", "eating", "meat")], k=1)[0]  # SPO needs exact
    assert not topk_correct(one_hot[[2]], candidates, [Fact("lion")], k=1)[0]


def test_ties_rank_the_smaller_index_first():
    candidates = [("a",), ("b",), ("c",)]
    similarity = [[1.0, 1.0, 1.0]]
    assert topk_correct(similarity, candidates, [("a",)], k=1).tolist() == [True]
    assert topk_correct(similarity, candidates, [("b",)], k=1).tolist() == [False]
    assert topk_correct(similarity, candidates, [("c",)], k=2).tolist() == [False]
    assert topk_correct(similarity, candidates, [("c",)], k=3).tolist() == [True]


def test_accuracy_and_lists():
    candidates = [("a", None, None), ("b", None, None)]
    assert topk_accuracy([[0.9, 0.1], [0.9, 0.1]], candidates, [("a", None, None), ("b", None, None)], k=1) == 0.5
    assert topk_correct(np.zeros((0, 2)), candidates, [], k=1).shape == (0,)


@pytest.mark.parametrize(
    ("similarity", "k", "message"),
    [
        (np.zeros((2, 3)), 0, "k must be >= 1"),
        (np.zeros((2, 3)), 4, "k = 4 is larger than the number of candidates (3)"),
        (np.zeros((3, 3)), 1, "expected (2 images, 3 candidates)"),
        (np.zeros((2, 2)), 1, "expected (2 images, 3 candidates)"),
        (np.array([[0, 1, 2], [0, np.nan, 1]]), 1, "similarity row 1"),
    ],
)
def test_errors(similarity, k, message):
    candidates = [("a",), ("b",), ("c",)]
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        topk_correct(similarity, candidates, [("a",), ("b",)], k=k)


def test_a_truth_without_parts_is_an_error():
    with pytest.raises(ValueError, match="truth 1"):
        topk_correct(np.zeros((2, 1)), [("a",)], [("a",), (None, None, None)], k=1)
    with pytest.raises(ValueError, match="candidate 0"):
        topk_correct(np.zeros((1, 1)), ["abc"], [("a",)], k=1)


def authors_brute_force(similarity, candidates, truths, k):
    """The authors' rule written plainly: full ranking by (similarity desc, index asc), 1-based ranks; a <S> or
    <S,P> truth hits when its best-ranked compatible candidate's rank is at most K + |G| - 1; any other truth only
    when the identical candidate ranks within K."""
    out = []
    for row, truth in zip(similarity, truths, strict=True):
        order = sorted(range(len(candidates)), key=lambda j: (-row[j], j))
        rank = {j: position + 1 for position, j in enumerate(order)}
        want = [None if p == "*" else p for p in truth]
        wildcard = want[0] is not None and want[2] is None
        group = []
        for j, candidate in enumerate(candidates):
            have = [None if p == "*" else p for p in candidate]
            if wildcard:
                compatible = all(w is None or w == h for w, h in zip(want, have, strict=True))
            else:
                compatible = want == have
            if compatible:
                group.append(j)
        window = k + len(group) - 1 if wildcard else k
        out.append(bool(group) and min(rank[j] for j in group) <= window)
    return np.array(out)


@pytest.mark.parametrize("seed", range(12))
def test_the_authors_rule_matches_its_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    candidates = [random_fact(rng) for _ in range(int(rng.integers(1, 15)))]
    truths = [random_fact(rng) for _ in range(40)]
    similarity = rng.integers(0, 4, size=(40, len(candidates))).astype(float)  # few values: many ties
    for k in range(1, len(candidates) + 1):
        expected = authors_brute_force(similarity.tolist(), candidates, truths, k)
        got = topk_correct(similarity, candidates, truths, k=k, rule="authors")
        np.testing.assert_array_equal(got, expected)


def test_the_authors_rule_widens_the_window_for_wildcards_only():
    # rank order by similarity: <tiger,jumping>, <lion,eating,meat>, <lion,eating>, <zebra>, <lion>, <lion,*,meat>
    candidates = [Fact("lion"), Fact("lion", "eating", "meat"), Fact("tiger", "jumping"), Fact("lion", "eating")]
    candidates += [Fact("zebra"), ("lion", None, "meat")]
    row = np.array([[2.0, 5.0, 6.0, 4.0, 3.0, 1.0]])
    lion = [Fact("lion")]  # G = <lion>, <lion,eating,meat>, <lion,eating>, <lion,*,meat>: best at rank 2
    assert topk_correct(row, candidates, lion, k=1, rule="authors")[0]  # 2 <= 1 + 4 - 1
    assert not topk_correct(row, candidates, lion, k=1, rule="strict")[0]
    full = [Fact("lion", "eating", "meat")]  # exact only: rank 2
    assert not topk_correct(row, candidates, full, k=1, rule="authors")[0]
    assert topk_correct(row, candidates, full, k=2, rule="authors")[0]
    gap = [("lion", None, "meat")]  # <S,*,O>: only the identical candidate, rank 6
    assert not topk_correct(row, candidates, gap, k=5, rule="authors")[0]
    assert topk_correct(row, candidates, gap, k=2, rule="strict")[0]  # ours: <lion,eating,meat> matches it
    with pytest.raises(ValueError, match="rule must be one of"):
        topk_correct(row, candidates, lion, k=1, rule="paper")


def test_the_authors_rule_in_blocks(monkeypatch):
    from lifelong.facts import topk

    rng = np.random.default_rng(3)
    candidates = [random_fact(rng) for _ in range(30)]
    truths = [random_fact(rng) for _ in range(200)]
    similarity = rng.normal(size=(200, 30)).round(1)
    whole = topk_correct(similarity, candidates, truths, k=5, rule="authors")
    monkeypatch.setattr(topk, "BLOCK_ELEMENTS", 7 * 30)
    np.testing.assert_array_equal(topk_correct(similarity, candidates, truths, k=5, rule="authors"), whole)
    np.testing.assert_array_equal(whole, authors_brute_force(similarity.tolist(), candidates, truths, 5))


@pytest.mark.parametrize("rule", ["strict", "authors"])
@pytest.mark.parametrize("seed", range(6))
def test_chance_is_the_hit_rate_over_every_ranking(seed, rule):
    """topk_chance against the exact average of topk_correct over all C! orderings of a few candidates."""
    import itertools

    from lifelong.facts.topk import topk_chance

    rng = np.random.default_rng(200 + seed)
    candidates = [random_fact(rng) for _ in range(int(rng.integers(2, 7)))]
    truths = [random_fact(rng) for _ in range(10)]
    orders = list(itertools.permutations(range(len(candidates))))
    for k in range(1, len(candidates) + 1):
        hits = np.zeros(len(truths))
        for order in orders:
            scores = np.tile(-np.argsort(order).astype(float), (len(truths), 1))  # candidate order[0] ranks first
            hits += topk_correct(scores, candidates, truths, k=k, rule=rule)
        np.testing.assert_allclose(topk_chance(candidates, truths, k=k, rule=rule), hits / len(orders), atol=1e-12)
