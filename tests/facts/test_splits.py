"""Fact splits: MST single linkage equals scipy's, S-only chaining at height 0, random-split balance, save/load."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.cluster.hierarchy as sch
from scipy.spatial.distance import squareform

from lifelong.facts.linkage import cut_mst, single_linkage_mst
from lifelong.facts.splits import (
    Split,
    balance_score,
    balance_table,
    encode_facts,
    load_split,
    random_split,
    save_split,
    semantic_split,
)


def random_facts(n: int, seed: int, vocab=(400, 60, 300), dim: int = 16, kinds=(0.8, 0.15, 0.05)):
    """Distinct random facts (SPO / SP / S mix) over small vocabularies with random continuous word vectors."""
    rng = np.random.default_rng(seed)
    vectors = [rng.normal(size=(v, dim)) for v in vocab]
    ids = np.stack([rng.integers(0, v, 3 * n) for v in vocab], axis=1)
    kind = rng.choice(3, size=3 * n, p=kinds)
    ids[kind >= 1, 2] = -1
    ids[kind == 2, 1] = -1
    _, first = np.unique(ids, axis=0, return_index=True)
    return ids[np.sort(first)[:n]], vectors


def reference_condensed(ids: np.ndarray, vectors) -> np.ndarray:
    """The paper's distance written plainly: sum over parts defined in both facts of 1 - cos."""
    n = len(ids)
    d = np.zeros((n, n))
    for c in range(3):
        units = vectors[c] / np.linalg.norm(vectors[c], axis=1, keepdims=True)
        defined = ids[:, c] >= 0
        u = np.where(defined[:, None], units[np.maximum(ids[:, c], 0)], 0.0)
        d += np.outer(defined, defined) * (1.0 - u @ u.T)
    np.fill_diagonal(d, 0.0)
    return squareform(np.maximum(d, 0.0), checks=False)


def same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    pairs = len(set(zip(a.tolist(), b.tolist(), strict=True)))
    return pairs == len(set(a.tolist())) == len(set(b.tolist()))


def refines(a: np.ndarray, b: np.ndarray) -> bool:
    """Every cluster of `a` lies inside one cluster of `b`."""
    return len(set(zip(a.tolist(), b.tolist(), strict=True))) == len(set(a.tolist()))


def check_against_scipy(n: int, seed: int, kinds=(0.8, 0.15, 0.05)) -> int:
    """Heights equal scipy's; cuts T = 2..8 equal scipy's partition, or at a tied height lie between scipy's
    partitions just below and at that height. Returns how many cuts were tie-free (compared exactly)."""
    ids, vectors = random_facts(n, seed, kinds=kinds)
    z = sch.linkage(reference_condensed(ids, vectors), method="single")
    u, v, w = single_linkage_mst(ids, vectors)
    assert len(w) == len(ids) - 1
    np.testing.assert_allclose(np.sort(w), z[:, 2], rtol=0, atol=1e-9)
    exact = 0
    for t in range(2, 9):
        task, info = cut_mst(u, v, w, len(ids), t)
        assert len(set(task.tolist())) == t
        h = info["cut_height"]
        if info["tie_at_cut"]:  # S-only / SP facts are equidistant to facts differing in their undefined parts
            assert refines(sch.fcluster(z, h - 1e-9, criterion="distance"), task)
            assert refines(task, sch.fcluster(z, h + 1e-9, criterion="distance"))
        else:
            assert same_partition(task, sch.fcluster(z, t, criterion="maxclust"))
            exact += 1
    return exact


def test_mst_single_linkage_matches_scipy_spo_only():
    assert check_against_scipy(2_000, seed=1, kinds=(1.0, 0.0, 0.0)) == 7


def test_mst_single_linkage_matches_scipy_mixed():
    check_against_scipy(2_500, seed=1)


def test_mst_single_linkage_matches_scipy_5000():
    check_against_scipy(5_000, seed=2)


def test_s_only_fact_chains_at_height_zero():
    rng = np.random.default_rng(3)
    vectors = [rng.normal(size=(5, 8)) for _ in range(3)]
    facts = [(0, 1, 2), (0, 3, 4), (0, 2, -1), (0, -1, -1), (1, 1, 2), (1, 3, -1), (2, 0, 0), (2, 0, -1), (2, 0, 3)]
    ids = np.array(facts)
    u, v, w = single_linkage_mst(ids, vectors)
    z = sch.linkage(reference_condensed(ids, vectors), method="single")
    np.testing.assert_allclose(np.sort(w), z[:, 2], atol=1e-12)
    # <0> joins every fact with S=0 at height 0; <2,0> joins <2,0,0> and <2,0,3>; nothing else is at distance 0.
    zero = sch.fcluster(z, 1e-12, criterion="distance")
    assert len(set(zero[:4])) == 1 and len(set(zero[6:])) == 1 and len(set(zero.tolist())) == 4
    assert int((w == 0).sum()) == 5
    task = semantic_split(ids, vectors, tasks=4).task
    assert same_partition(task, zero)


@pytest.mark.parametrize("method", ["average", "complete"])
def test_average_and_complete_match_scipy(method):
    ids, vectors = random_facts(300, seed=4, kinds=(1.0, 0.0, 0.0))
    z = sch.linkage(reference_condensed(ids, vectors), method=method)
    for t in (2, 4, 8):
        split = semantic_split(ids, vectors, tasks=t, linkage=method)
        assert same_partition(split.task, sch.fcluster(z, t, criterion="maxclust"))
        assert split.linkage == method and split.method == "semantic"


def test_unknown_linkage_and_too_many_tasks():
    ids, vectors = random_facts(20, seed=5)
    with pytest.raises(ValueError, match="unknown linkage 'median'"):
        semantic_split(ids, vectors, tasks=2, linkage="median")
    with pytest.raises(ValueError, match="cannot split 20 facts into 21 tasks"):
        semantic_split(ids, vectors, tasks=21)


def test_random_split_keeps_the_most_balanced_candidate_and_is_reproducible():
    images = np.random.default_rng(6).integers(1, 200, 500)
    split = random_split(500, 5, images_per_fact=images, seed=11, candidates=100)
    scores = [balance_score(np.random.default_rng([11, c]).integers(0, 5, 500), 5, images) for c in range(100)]
    assert split.score == min(scores)
    assert split.info["candidate"] == scores.index(min(scores))
    assert split.seed == 11 and split.method == "random"
    assert sum(r["images"] for r in split.balance) == int(images.sum())
    again = random_split(500, 5, images_per_fact=images, seed=11)
    np.testing.assert_array_equal(split.task, again.task)
    assert not np.array_equal(split.task, random_split(500, 5, images_per_fact=images, seed=12).task)
    assert "task" in balance_table(split)


def test_empty_task_is_an_error_naming_it():
    with pytest.raises(ValueError, match="task 1 of 3 has no facts"):
        Split(np.array([0, 0, 2]), 3, "random")
    with pytest.raises(ValueError, match="cannot split 2 facts into 3 tasks"):
        random_split(2, 3)
    with pytest.raises(ValueError, match="all 1 random candidates left a task with no facts"):
        random_split(3, 3, seed=0, candidates=1)


def test_save_and_load_round_trip(tmp_path):
    facts = [("lion", None, None), ("lion", "eating", "meat"), ("tiger", "jumping", None), ("man", "riding", "horse")]
    ids, vocab = encode_facts(facts)
    assert ids.tolist()[0] == [vocab[0].index("lion"), -1, -1]
    rng = np.random.default_rng(7)
    vectors = [rng.normal(size=(len(v), 8)) for v in vocab]
    split = semantic_split(ids, vectors, tasks=2, images_per_fact=np.array([3, 5, 7, 11]))
    path = save_split(split, facts, tmp_path / "split.csv")
    assert path.read_text().splitlines()[:2] == ["S,P,O,task", "lion,*,*,0"]
    loaded, loaded_facts = load_split(path)
    assert loaded_facts == facts
    np.testing.assert_array_equal(loaded.task, split.task)
    assert (loaded.method, loaded.linkage, loaded.balance, loaded.info) == (
        split.method,
        split.linkage,
        split.balance,
        split.info,
    )
    rsplit = random_split(4, 2, seed=3)
    loaded_r, _ = load_split(save_split(rsplit, facts, tmp_path / "random.csv"))
    assert (loaded_r.seed, loaded_r.score) == (3, rsplit.score)
    with pytest.raises(ValueError, match="appears twice"):
        save_split(rsplit, [facts[0], facts[0], facts[1], facts[2]], tmp_path / "dup.csv")
