"""CLEAR streams: protocol splits, evaluate-all events, and stream construction from a temporal source."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.data.labeled import LabeledImages
from lifelong.data.temporal import LabeledFeatures
from lifelong.suites.clear import iid_split, is_temporal, temporal_stream

CLASSES = ("A", "B", "BACKGROUND")


@dataclass
class TinySource:
    """Buckets 0..3 of 3 classes; bucket b's images are filled with value 10 * b + label (easy to trace)."""

    name: str = "tiny"
    class_names: tuple = CLASSES
    num_buckets: int = 4
    labeled_buckets: tuple = (1, 2, 3)
    windows: tuple = (
        ("2004-01-01", "2005-01-01"),
        ("2005-01-01", "2006-01-01"),
        ("2006-01-01", "2007-01-01"),
        ("2007-01-01", "2008-01-01"),
    )
    resolution: int = 8
    per_bucket: int = 30
    features: bool = False

    def labeled(self, bucket):
        labels = np.arange(self.per_bucket) % len(self.class_names)
        ids = [f"b{bucket}/{i}" for i in range(self.per_bucket)]
        if self.features:
            feats = np.stack([labels + 10.0 * bucket, np.ones(self.per_bucket)], axis=1).astype(np.float32)
            return LabeledFeatures(feats, labels, ids, self.class_names)
        images = (
            np.zeros((self.per_bucket, 8, 8, 1), np.uint8)
            + (10 * bucket + labels).astype(np.uint8)[:, None, None, None]
        )
        return LabeledImages(images, labels, ids, self.class_names, "multi-class")

    def unlabeled(self, bucket):
        return np.zeros((5, 8, 8, 1), np.uint8)


def test_iid_split_sizes_match_clear():
    train, test = iid_split(3300, seed=0, bucket=1)
    assert (len(train), len(test)) == (2310, 990)
    assert len(np.intersect1d(train, test)) == 0 and len(np.union1d(train, test)) == 3300
    other, _ = iid_split(3300, seed=1, bucket=1)
    assert not np.array_equal(train, other)  # each seed draws its own split
    again, _ = iid_split(3300, seed=0, bucket=1)
    np.testing.assert_array_equal(train, again)


@pytest.mark.parametrize("protocol", ["iid", "streaming"])
def test_stream_evaluates_every_bucket_after_each_training(protocol):
    stream = temporal_stream(TinySource(), protocol=protocol, split_seed=3)
    events = stream.events()
    n = 3
    assert len(events) == n + n * n
    rows = [e for e in events if isinstance(e, PredictEvent)]
    assert [(e.after_task_index, e.task_index) for e in rows] == [(i, j) for i in range(n) for j in range(n)]
    assert [e.task.uid for e in events if isinstance(e, TrainEvent)] == ["bucket1", "bucket2", "bucket3"]
    assert stream.tasks[0].key.year == 2005 and stream.protocol == protocol and stream.name == f"tiny-{protocol}"
    splits = stream.splits(0)
    if protocol == "iid":
        assert len(splits.train_and_dev()) == 21 and len(splits.test) == 9
        train_values = set(splits.train_and_dev().images[:, 0, 0, 0].tolist())
        assert len(splits.dev) >= 1
    else:
        assert len(splits.train_and_dev()) == 30 and len(splits.test) == 30
        np.testing.assert_array_equal(splits.test.labels(), np.arange(30) % 3)  # whole bucket, stored order
    assert splits.test.images.shape[1:] == (8, 8, 3)
    assert set(splits.test.images[:, 0, 0, 0].tolist()) <= {10, 11, 12}
    if protocol == "iid":
        assert train_values <= {10, 11, 12}


def test_feature_buckets_become_feature_datasets():
    stream = temporal_stream(TinySource(features=True), protocol="iid")
    data = stream.splits(1).test
    assert data.is_features and data.image_shape == (2,)
    assert set(data.images[:, 0] - data.labels()) == {20.0}


def test_protocol_and_bucket_checks():
    with pytest.raises(ValueError, match="protocol"):
        temporal_stream(TinySource(), protocol="online")
    with pytest.raises(ValueError, match="at least 2"):
        temporal_stream(TinySource(labeled_buckets=(1,)))
    assert is_temporal("clear-mini") and is_temporal("photos.csv") and not is_temporal("mini")
