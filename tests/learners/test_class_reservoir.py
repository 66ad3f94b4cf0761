"""The class-reservoir buffer (Avalanche's GDumb sampler): equal class shares, each a uniform sample of its class.

Expected values are hand computations: a class's share of k, and the probability share / items-of-the-class-seen
that an item is kept; frequencies come from many seeded runs.
"""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest
from scipy import stats

from lifelong.learners.buffers import ReplayBuffer
from lifelong.learners.continual_methods import GDumbLearner

# Three buckets, each a list of (class, items offered); items are numbered globally in offer order.
BUCKETS = [[(0, 6), (1, 4)], [(0, 5), (2, 3)], [(1, 6), (0, 3)]]
K = 7
# Hand computation, per bucket: the classes seen, their shares of K (ascending class, remainder first) and the
# items of each class seen so far.
SHARES = [{0: 4, 1: 3}, {0: 3, 1: 2, 2: 2}, {0: 3, 1: 2, 2: 2}]
SEEN = [{0: 6, 1: 4}, {0: 11, 1: 4, 2: 3}, {0: 14, 1: 10, 2: 3}]


def _stream() -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray, np.ndarray]:
    """The buckets as (ids, labels), and every id's label and bucket."""
    buckets, start = [], 0
    for spec in BUCKETS:
        labels = np.concatenate([np.full(n, c) for c, n in spec])
        buckets.append((np.arange(start, start + len(labels)), labels))
        start += len(labels)
    return buckets, np.concatenate([b[1] for b in buckets]), np.repeat(np.arange(3), [len(b[0]) for b in buckets])


def _run(seed: int, capacity: int = K) -> list[ReplayBuffer]:
    rng = np.random.default_rng(seed)
    buffer, out = ReplayBuffer("class-reservoir", capacity=capacity), []
    for t, (ids, labels) in enumerate(_stream()[0]):
        buffer = buffer.update(ids, labels, t, rng)
        out.append(buffer)
    return out


def test_shares_follow_the_equal_split_with_the_remainder_to_the_lowest_classes() -> None:
    for t, buffer in enumerate(_run(0)):
        counts = dict(zip(*np.unique(buffer.labels, return_counts=True), strict=True))
        assert {int(c): int(n) for c, n in counts.items()} == SHARES[t]
        assert buffer.classes.tolist() == sorted(SHARES[t]) and buffer.seen == sum(SEEN[t].values())
    # k = 11 over 4 classes: 2 each, the remainder 3 to classes 0, 1, 2; class 9 (seen last) gets 2
    rng = np.random.default_rng(1)
    labels = np.repeat([9, 2, 0, 5], 20)  # offered out of class order
    buffer = ReplayBuffer("class-reservoir", capacity=11).update(np.arange(80), labels, 0, rng)
    assert buffer.class_counts(10)[[0, 2, 5, 9]].tolist() == [3, 3, 3, 2]
    # a class with fewer items than its share holds all of them; its unused slots stay free
    small = ReplayBuffer("class-reservoir", capacity=10).update(np.arange(21), np.r_[0, np.ones(20, int)], 0, rng)
    assert small.class_counts(2).tolist() == [1, 5] and len(small) == 6


def test_a_class_seen_later_takes_its_share_from_the_others_keeping_their_top_keys() -> None:
    rng = np.random.default_rng(3)
    first = ReplayBuffer("class-reservoir", capacity=12).update(np.arange(60), np.arange(60) % 3, 0, rng)
    assert first.class_counts(4).tolist() == [4, 4, 4, 0]
    grown = first.update(np.arange(60, 70), np.full(10, 3), 1, rng)
    assert grown.class_counts(4).tolist() == [3, 3, 3, 3]
    for c in range(3):  # a shrinking class keeps its largest keys: a subset of what it held
        held, keys = first.items[first.labels == c], first.keys[first.labels == c]
        assert set(grown.items[grown.labels == c].tolist()) == set(held[np.argsort(-keys)[:3]].tolist())
    assert (grown.origin[grown.labels == 3] == 1).all()


def test_every_item_is_kept_with_probability_share_over_items_of_its_class_seen() -> None:
    runs = 2000
    _, label_of, _ = _stream()
    hits = np.zeros((len(BUCKETS), len(label_of)))
    pairs = np.zeros(45)  # class 1 at the end: 10 items (4 from bucket 0, 6 from bucket 2), share 2
    class1 = np.flatnonzero(label_of == 1)
    pair_index = {p: i for i, p in enumerate(itertools.combinations(class1.tolist(), 2))}
    for seed in range(runs):
        for t, buffer in enumerate(_run(seed)):
            hits[t, buffer.items] += 1
        pairs[pair_index[tuple(sorted(buffer.items[buffer.labels == 1].tolist()))]] += 1
    offered = np.cumsum([len(ids) for ids, _ in _stream()[0]])
    for t in range(len(BUCKETS)):
        p = np.zeros(len(label_of))
        for c, share in SHARES[t].items():
            p[: offered[t]][label_of[: offered[t]] == c] = min(1.0, share / SEEN[t][c])
        se = np.sqrt(p * (1 - p) / runs)
        assert np.all(np.abs(hits[t] / runs - p) <= 4.5 * se + 1e-12), (t, hits[t] / runs, p)
    # the first bucket's class-0 items after three buckets: 3/14 each, not the greedy sampler's "all kept"
    assert np.allclose(hits[2, :6] / runs, 3 / 14, atol=0.05)
    # class 1 is a uniform 2-subset of its 10 items: every one of the 45 pairs equally likely
    assert stats.chisquare(pairs).pvalue > 1e-3


def _reference(buckets: list[tuple[np.ndarray, np.ndarray]], k: int, seed: int) -> list[set[int]]:
    """Avalanche's adaptive class-balanced buffer, one reservoir per class, written item by item with the same keys:
    each class's reservoir takes its new items and keeps its largest keys up to its length, then every class is
    resized to its length (k // m, the remainder to the first classes in ascending order)."""
    rng, groups, seen, out = np.random.default_rng(seed), {}, set(), []
    for ids, labels in buckets:
        keys = rng.random(len(ids))
        seen |= set(labels.tolist())
        order = sorted(seen)
        lengths = {c: k // len(order) + (i < k - len(order) * (k // len(order))) for i, c in enumerate(order)}
        for item, label, key in zip(ids.tolist(), labels.tolist(), keys.tolist(), strict=True):
            groups.setdefault(label, []).append((key, item))
        for c in groups:
            groups[c] = sorted(groups[c], reverse=True)[: lengths[c]]
        out.append({item for group in groups.values() for _, item in group})
    return out


def test_the_buffer_equals_a_per_class_reservoir_written_item_by_item() -> None:
    for seed in range(30):
        rng = np.random.default_rng(1000 + seed)
        k, start, buckets = int(rng.integers(1, 15)), 0, []
        for _ in range(4):
            size = int(rng.integers(1, 25))
            buckets.append((np.arange(start, start + size), rng.integers(0, 6, size) * 3))  # sparse class indices
            start += size
        buffer, rng = ReplayBuffer("class-reservoir", capacity=k), np.random.default_rng(seed)
        for t, (expected, (ids, labels)) in enumerate(zip(_reference(buckets, k, seed), buckets, strict=True)):
            buffer = buffer.update(ids, labels, t, rng)
            assert set(buffer.items.tolist()) == expected and len(buffer) == len(expected)


def test_domain_incremental_stream_keeps_later_buckets_unlike_the_greedy_sampler() -> None:
    ids, labels = np.arange(300), np.arange(300) % 5  # three buckets of 100, every class in each
    buffers = {}
    for policy in ("class-balanced", "class-reservoir"):
        rng, buffer = np.random.default_rng(0), ReplayBuffer(policy, capacity=50)
        for t in range(3):
            buffer = buffer.update(ids[100 * t : 100 * (t + 1)], labels[100 * t : 100 * (t + 1)], t, rng)
        buffers[policy] = buffer
    assert buffers["class-balanced"].origin_counts(3).tolist() == [50, 0, 0]
    assert buffers["class-reservoir"].class_counts(5).tolist() == [10] * 5
    assert (buffers["class-reservoir"].origin_counts(3) > 5).all()


def test_items_labels_origin_and_keys_stay_aligned() -> None:
    _, label_of, bucket_of = _stream()
    for seed in range(20):
        for buffer in _run(seed):
            assert np.array_equal(buffer.labels, label_of[buffer.items])
            assert np.array_equal(buffer.origin, bucket_of[buffer.items])
            assert len(buffer.keys) == len(buffer) and len(set(buffer.items.tolist())) == len(buffer)
            assert buffer.keys.dtype == np.float64 and ((buffer.keys >= 0) & (buffer.keys < 1)).all()
    # images keep their rows: each kept image is the offered one
    images = np.random.default_rng(0).integers(0, 255, (40, 3, 3, 2), dtype=np.uint8)
    images[:, 0, 0, 0] = np.arange(40)
    buffer = ReplayBuffer("class-reservoir", capacity=9).update(images, np.arange(40) % 4, 0, np.random.default_rng(2))
    assert np.array_equal(buffer.items, images[buffer.items[:, 0, 0, 0]])
    assert np.array_equal(buffer.labels, buffer.items[:, 0, 0, 0] % 4)


def test_the_same_seed_gives_the_same_buffer() -> None:
    a, b, other = _run(11)[-1], _run(11)[-1], _run(12)[-1]
    for field in ("items", "labels", "origin", "keys", "classes"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert not np.array_equal(a.keys, other.keys)


def test_a_buffer_smaller_than_the_classes_remembers_every_class_seen() -> None:
    rng = np.random.default_rng(4)
    buffer = ReplayBuffer("class-reservoir", capacity=3).update(np.arange(50), np.arange(50) % 5, 0, rng)
    assert buffer.class_counts(6).tolist() == [1, 1, 1, 0, 0, 0] and buffer.classes.tolist() == [0, 1, 2, 3, 4]
    # a bucket of class 4 alone: 5 classes still share 3 slots, so class 4 gets none and nothing changes
    same = buffer.update(np.arange(50, 60), np.full(10, 4), 1, rng)
    assert sorted(same.items.tolist()) == sorted(buffer.items.tolist())
    # a sixth class appears: still none for the classes after the third
    more = same.update(np.arange(60, 70), np.full(10, 5), 2, rng)
    assert more.class_counts(6).tolist() == [1, 1, 1, 0, 0, 0] and len(more.classes) == 6


def test_capacity_defaults_to_the_first_bucket_and_an_empty_bucket_returns_self() -> None:
    rng = np.random.default_rng(0)
    buffer = ReplayBuffer("class-reservoir").update(np.arange(9), np.arange(9) % 2, 0, rng)
    assert buffer.capacity == 9 and buffer.class_counts(2).tolist() == [5, 4]
    assert buffer.update(np.zeros(0, int), np.zeros(0, int), 1, rng) is buffer


def test_pickle_round_trip_and_older_pickles_load() -> None:
    first, *_ = _run(5)
    again = pickle.loads(pickle.dumps(first))
    ids, labels = _stream()[0][1]
    a = first.update(ids, labels, 1, np.random.default_rng(8))
    b = again.update(ids, labels, 1, np.random.default_rng(8))
    for field in ("items", "labels", "origin", "keys", "classes"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    with pytest.raises(ValueError):
        again.keys[0] = 0.5  # read-only
    # a buffer pickled before keys / classes existed loads with them empty and keeps working
    old = ReplayBuffer("reservoir", capacity=4).update(np.arange(6), np.zeros(6, int), 0, np.random.default_rng(0))
    del old.__dict__["keys"], old.__dict__["classes"]
    loaded = pickle.loads(pickle.dumps(old))
    assert loaded.keys.size == 0 and loaded.classes.size == 0 and len(loaded) == 4
    assert len(loaded.update(np.arange(6, 9), np.zeros(3, int), 1, np.random.default_rng(1))) == 4


def test_keys_must_match_the_items() -> None:
    buffer = _run(0)[0]
    with pytest.raises(ValueError, match="keys hold 6 entries, need 7"):
        ReplayBuffer("class-reservoir", 7, None, None, buffer.items, buffer.labels, buffer.origin, 10, buffer.keys[:6])
    with pytest.raises(ValueError, match="none under 'reservoir'"):
        ReplayBuffer("reservoir", 7, None, None, buffer.items, buffer.labels, buffer.origin, 10, buffer.keys)


def test_gdumb_takes_the_class_reservoir_option() -> None:
    learner = GDumbLearner(buffer="class-reservoir", buffer_size=33)
    assert learner.config.empty_buffer().policy == "class-reservoir"
    assert GDumbLearner().config.buffer == "class-balanced"  # the default is unchanged
