"""Temporal stream helpers: timestamp parsing, equal-count and window bucketing, LabeledFeatures."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from lifelong.data.temporal import (
    CLEAR_EDGES,
    LabeledFeatures,
    OfficialSplits,
    OfficialSplitSource,
    TemporalSource,
    equal_count_buckets,
    iso_date,
    parse_timestamps,
    window_buckets,
)


def _utc(*args: int) -> float:
    return dt.datetime(*args, tzinfo=dt.UTC).timestamp()


def test_parse_timestamps_reads_dates_datetimes_and_unix_numbers():
    values = ["2008-03-21", "2008-03-21T12:30:00", "2008-03-21 12:30:00.5", "2008-03-21T12:30:00+02:00", 1206057600]
    values += [1206057600.5, "1206057600", " 1206057600.25 ", "2008-03-21T00:00:00Z", dt.date(2008, 3, 21)]
    got = parse_timestamps(values)
    assert got.dtype == np.float64
    day = _utc(2008, 3, 21)
    expected = [day, day + 45000, day + 45000.5, day + 45000 - 7200, day, day + 0.5, day, day + 0.25, day, day]
    np.testing.assert_array_equal(got, expected)
    assert iso_date(got[1]) == "2008-03-21"
    np.testing.assert_array_equal(parse_timestamps(np.array([1, 2], dtype=np.int64)), [1.0, 2.0])


@pytest.mark.parametrize("bad", ["2008-13-01", "yesterday", "", None, "nan", True])
def test_parse_timestamps_names_the_bad_row_and_value(bad):
    with pytest.raises(ValueError, match=r"row 1: bad timestamp"):
        parse_timestamps(["2008-01-01", bad])
    with pytest.raises(ValueError, match=r"f\.csv:7: bad timestamp " + repr(bad).replace("(", r"\(")):
        parse_timestamps([bad], rows=["f.csv:7"])


def _brute_equal_count(times: np.ndarray, k: int) -> np.ndarray:
    """Sort by (time, input position), then cut the ranks at ceil(b n / k): blocks of n//k or n//k + 1 items."""
    n = len(times)
    order = sorted(range(n), key=lambda i: (times[i], i))
    starts = [-(-b * n // k) for b in range(k + 1)]
    sizes = [starts[b + 1] - starts[b] for b in range(k)]
    out = np.empty(n, dtype=np.int64)
    position = 0
    for b, size in enumerate(sizes):
        for i in order[position : position + size]:
            out[i] = b
        position += size
    return out


@pytest.mark.parametrize(("n", "k"), [(33, 11), (34, 11), (10, 3), (5, 5), (7, 1), (3, 5), (0, 4)])
def test_equal_count_buckets_matches_a_brute_force_cut(n, k):
    rng = np.random.default_rng(n * 100 + k)
    times = rng.integers(0, 6, size=n).astype(float)  # many ties
    got = equal_count_buckets(times, k)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, _brute_equal_count(times, k))
    sizes = np.bincount(got, minlength=k)
    assert sizes.max() - sizes.min() <= 1 and sizes.sum() == n
    if n:  # time order is kept: every item of bucket b is no later than any item of bucket b + 1
        for b in range(k - 1):
            if sizes[b] and sizes[b + 1]:
                assert times[got == b].max() <= times[got == b + 1].min()


def test_equal_count_buckets_keeps_input_order_for_ties_and_accepts_dates():
    np.testing.assert_array_equal(equal_count_buckets([5.0] * 6, 3), [0, 0, 1, 1, 2, 2])
    dates = ["2010-01-03", "2010-01-01", "2010-01-02", "2010-01-04"]
    np.testing.assert_array_equal(equal_count_buckets(dates, 2), [1, 0, 0, 1])
    with pytest.raises(ValueError, match="num_buckets"):
        equal_count_buckets([1.0], 0)


def test_window_buckets_matches_a_simple_loop_and_marks_outsiders():
    edges = list(CLEAR_EDGES)
    bounds = parse_timestamps(edges)
    rng = np.random.default_rng(0)
    times = np.concatenate([rng.uniform(bounds[0] - 1e8, bounds[-1] + 1e8, 500), bounds, bounds - 1])
    expected = []
    for t in times:
        found = -1
        for k in range(len(bounds) - 1):
            if bounds[k] <= t < bounds[k + 1]:
                found = k
        expected.append(found)
    got = window_buckets(times, edges)
    np.testing.assert_array_equal(got, expected)
    assert got.max() == 10 and (got == -1).any()
    assert len(CLEAR_EDGES) == 12  # 11 buckets


def test_window_buckets_rejects_unsorted_edges():
    with pytest.raises(ValueError, match="strictly ascending.*'2008-01-01'"):
        window_buckets([0.0], ["2009-01-01", "2008-01-01"])
    with pytest.raises(ValueError, match="at least 2"):
        window_buckets([0.0], ["2009-01-01"])


def test_labeled_features_validates_and_subsets():
    feats = LabeledFeatures(np.ones((3, 4), np.float64), np.array([0, 1, 1]), ["a", "b", "c"], ("x", "y"))
    assert feats.features.dtype == np.float32 and feats.labels.dtype == np.int64 and len(feats) == 3
    sub = feats.subset([2, 0])
    assert sub.ids == ["c", "a"] and sub.labels.tolist() == [1, 0]
    with pytest.raises(ValueError, match="item 'c': label 2"):
        LabeledFeatures(np.ones((3, 4)), np.array([0, 1, 2]), ["a", "b", "c"], ("x", "y"))
    with pytest.raises(ValueError, match=r"\[N, D\]"):
        LabeledFeatures(np.ones((2, 4)), np.array([0, 1, 1]), ["a", "b", "c"], ("x", "y"))


def test_temporal_source_protocol_is_checkable():
    class Fake:
        name = "fake"
        class_names = ("a",)
        num_buckets = 2
        labeled_buckets = (1,)
        windows = (("", ""), ("", ""))
        resolution = None

        def labeled(self, bucket):
            return None

        def unlabeled(self, bucket):
            return np.zeros((0, 1, 1, 1), np.uint8)

    assert isinstance(Fake(), TemporalSource)


def test_official_splits_name_the_split_a_run_uses():
    seeded = OfficialSplits("seeded", "/data/clear10/training_folder/testset_ratio_0.3", seeds=(0, 1, 2, 3, 4))
    assert seeded.name(2) == "official:split_2" and seeded.problem is None
    assert OfficialSplits("test-folder", "/data/clear10/test").name(7) == "official:test-folder"
    with pytest.raises(ValueError, match="kind must be one of"):
        OfficialSplits("random", "/x")


def test_official_split_sources_are_recognised():
    class WithSplits:
        official_splits = None

        def official_split(self, bucket, seed):
            raise ValueError("none")

    assert isinstance(WithSplits(), OfficialSplitSource) and not isinstance(object(), OfficialSplitSource)
