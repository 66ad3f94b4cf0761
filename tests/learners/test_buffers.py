"""Replay buffers: sampling statistics against their expectations (Monte Carlo, fixed seeds), and mechanics."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from lifelong.learners.buffers import ReplayBuffer


def _offer(buffer: ReplayBuffer, sizes: list[int], rng: np.random.Generator) -> ReplayBuffer:
    """Offer consecutive buckets of the given sizes; items are their global indices, labels index % 3."""
    start = 0
    for bucket, size in enumerate(sizes):
        ids = np.arange(start, start + size)
        buffer = buffer.update(ids, ids % 3, bucket, rng)
        start += size
    return buffer


def test_reservoir_keeps_every_item_with_probability_k_over_n() -> None:
    sizes, k, runs = [20, 25, 15], 15, 2000
    n = sum(sizes)
    hits = np.zeros(n)
    for seed in range(runs):
        buffer = _offer(ReplayBuffer("reservoir", capacity=k), sizes, np.random.default_rng(seed))
        assert len(buffer) == k and buffer.seen == n
        assert len(set(buffer.items.tolist())) == k  # no duplicates
        hits[buffer.items] += 1
    p = k / n
    se = np.sqrt(p * (1 - p) / runs)
    assert np.abs(hits / runs - p).max() < 4.5 * se  # 60 items: 4.5 SE bounds all of them w.h.p.
    assert np.isclose(hits.sum(), k * runs)


def test_reservoir_fills_before_replacing_and_tracks_origin() -> None:
    buffer = ReplayBuffer("reservoir", capacity=10).update(np.arange(6), np.zeros(6, int), 0, np.random.default_rng(0))
    assert len(buffer) == 6 and not buffer.full
    buffer = buffer.update(np.arange(6, 10), np.ones(4, int), 1, np.random.default_rng(1))
    assert buffer.items.tolist() == list(range(10)) and buffer.full
    assert buffer.origin.tolist() == [0] * 6 + [1] * 4
    assert buffer.labels.dtype == np.int64


def _expected_retention(sizes: list[int], k: int, p: list[float]) -> np.ndarray:
    """E[c_s(t)] = p_s |B_s| prod_{u=s+1..t} (1 - p_u |B_u| / k), with c_1(1) = k (rows t, columns s)."""
    t_max = len(sizes)
    out = np.zeros((t_max, t_max))
    for t in range(t_max):
        for s in range(t + 1):
            value = k if s == 0 else p[s] * sizes[s]
            for u in range(s + 1, t + 1):
                value *= 1 - p[u] * sizes[u] / k
            out[t, s] = value
    return out


@pytest.mark.parametrize("options", [{"alpha": 1.0}, {"alpha": 2.0}, {"c": 0.5}])
def test_biased_reservoir_retention_matches_expectation(options: dict) -> None:
    sizes, runs = [20, 12, 16, 20, 8], 1500
    k = sizes[0]  # capacity None: one bucket
    seen = np.cumsum(sizes)
    if "c" in options:
        p = [1.0] + [options["c"]] * (len(sizes) - 1)
    else:
        p = [1.0] + [min(1.0, options["alpha"] * k / n) for n in seen[1:]]
    expected = _expected_retention(sizes, k, p)
    counts = np.zeros((runs, len(sizes), len(sizes)))
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        buffer = ReplayBuffer("biased", **options)
        for t, size in enumerate(sizes):
            if t:
                assert buffer.selection_probability(size) == pytest.approx(p[t])
            buffer = buffer.update(np.arange(size), np.zeros(size, int), t, rng)
            assert len(buffer) == k and buffer.capacity == k
            counts[seed, t] = buffer.origin_counts(len(sizes))
    mean, se = counts.mean(0), counts.std(0) / np.sqrt(runs)
    assert np.all(np.abs(mean - expected) <= 5 * se + 1e-9), (mean, expected)


def test_biased_c_one_is_fifo_and_huge_alpha_keeps_the_newest_bucket() -> None:
    for options in ({"c": 1.0}, {"alpha": 1e9}):
        buffer = ReplayBuffer("biased", **options)
        rng = np.random.default_rng(0)
        for t in range(4):
            ids = np.arange(10) + 100 * t
            buffer = buffer.update(ids, np.zeros(10, int), t, rng)
            assert sorted(buffer.items.tolist()) == ids.tolist()
            assert (buffer.origin == t).all()


def test_biased_more_selected_than_capacity_keeps_a_random_k() -> None:
    buffer = ReplayBuffer("biased", capacity=5, alpha=1e9).update(
        np.arange(8), np.zeros(8, int), 0, np.random.default_rng(0)
    )
    assert len(buffer) == 5 and len(set(buffer.items.tolist())) == 5
    buffer = buffer.update(np.arange(100, 120), np.zeros(20, int), 1, np.random.default_rng(1))
    assert len(buffer) == 5 and all(100 <= v < 120 for v in buffer.items.tolist())


def test_class_balanced_sampler_balances_classes() -> None:
    labels = np.array([0] * 30 + [1] * 10 + [2] * 10)
    buffer = ReplayBuffer("class-balanced", capacity=12).update(np.arange(50), labels, 0, np.random.default_rng(0))
    assert buffer.class_counts(3).tolist() == [4, 4, 4]
    assert np.array_equal(labels[buffer.items], buffer.labels)  # items and labels stay paired
    # a class with as many items as the largest is skipped
    full = buffer.update(np.arange(50, 53), np.array([0, 1, 2]), 1, np.random.default_rng(1))
    assert full.class_counts(3).tolist() == [4, 4, 4] and (full.origin == 0).all()
    # a new class takes slots from the largest ones
    grown = buffer.update(np.arange(60, 63), np.full(3, 3), 1, np.random.default_rng(2))
    assert grown.class_counts(4).tolist() == [3, 3, 3, 3]


def test_capacity_defaults_to_the_first_bucket() -> None:
    for policy in ("reservoir", "biased", "class-balanced"):
        buffer = _offer(ReplayBuffer(policy), [7, 9, 4], np.random.default_rng(0))
        assert buffer.capacity == 7 and len(buffer) == 7 and buffer.seen == 20


def test_updates_are_deterministic_immutable_and_picklable() -> None:
    images = np.random.default_rng(0).integers(0, 255, (30, 4, 4, 3), dtype=np.uint8)
    labels = np.arange(30) % 5
    for policy in ("reservoir", "biased", "class-balanced"):
        first = ReplayBuffer(policy, capacity=12).update(images[:20], labels[:20], 0, np.random.default_rng(5))
        before = first.items.copy()
        a = first.update(images[20:], labels[20:], 1, np.random.default_rng(9))
        b = pickle.loads(pickle.dumps(first)).update(images[20:], labels[20:], 1, np.random.default_rng(9))
        assert np.array_equal(first.items, before) and first.seen == 20  # the old buffer is unchanged
        assert np.array_equal(a.items, b.items) and np.array_equal(a.origin, b.origin)
        assert a.items.dtype == np.uint8 and a.items.shape[1:] == (4, 4, 3)
        with pytest.raises(ValueError):
            a.items[0] = 0  # read-only
        with pytest.raises(AttributeError):
            a.seen = 0  # type: ignore[misc]


def test_invalid_options_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown buffer policy"):
        ReplayBuffer("fifo")
    with pytest.raises(ValueError, match="not both"):
        ReplayBuffer("biased", alpha=1.0, c=0.5)
    with pytest.raises(ValueError, match="c must be in"):
        ReplayBuffer("biased", c=1.5)
    with pytest.raises(ValueError, match="only to the 'biased'"):
        ReplayBuffer("reservoir", alpha=2.0)
    with pytest.raises(ValueError, match="capacity"):
        ReplayBuffer("reservoir", capacity=0)
    buffer = ReplayBuffer().update(np.zeros((3, 2), np.float32), np.zeros(3, int), 0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="do not match"):
        buffer.update(np.zeros((3, 4), np.float32), np.zeros(3, int), 1, np.random.default_rng(0))
