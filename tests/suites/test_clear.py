"""CLEAR streams: protocol splits, evaluate-all events, and stream construction from a temporal source."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.data.labeled import LabeledImages
from lifelong.data.sources.clear import ClearFolder
from lifelong.data.temporal import LabeledFeatures
from lifelong.suites.clear import get_temporal_stream, iid_split, is_temporal, temporal_stream

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
    assert splits.test.images.shape[1:] == (8, 8, 1)  # grayscale buckets stay one channel
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


# ---------------------------------------------------------------------------------------------------------
# which split the IID protocol uses: CLEAR's official ones when released with the data, else ours


def _bucket_images(folder: Path, per_class: int, start: int) -> dict[int, list[tuple[str, int, int]]]:
    """folder/labeled_images/<b>/<class>/<value>.png for buckets 1, 2: 4x4 images of one grey value each."""
    rows: dict[int, list] = {}
    value = start
    for bucket in (1, 2):
        for k, name in enumerate(sorted(CLASSES)):
            for _ in range(per_class):
                value += 1
                rel = f"labeled_images/{bucket}/{name}/{value}.png"
                (folder / rel).parent.mkdir(parents=True, exist_ok=True)
                Image.new("RGB", (4, 4), (value,) * 3).save(folder / rel)
                rows.setdefault(bucket, []).append((rel, k, value))
    return rows


def _with_split_files(root: Path) -> dict[tuple[int, int], tuple[set[int], set[int]]]:
    """CLEAR's first release, 12 images a bucket, split files for seeds 0-4 (3 test each) -> (train, test) values."""
    expected = {}
    for bucket, rows in _bucket_images(root, 4, 0).items():
        for seed in range(5):
            order = np.random.default_rng([seed, bucket]).permutation(len(rows))
            folder = root / "training_folder" / "testset_ratio_0.3" / f"split_{seed}" / str(bucket)
            folder.mkdir(parents=True)
            for part, idx in (("test", order[:3]), ("train", order[3:])):
                (folder / f"{part}.txt").write_text("\n".join(f"{rows[i][0]} {rows[i][1]}" for i in idx) + "\n")
            expected[seed, bucket] = ({rows[i][2] for i in order[3:]}, {rows[i][2] for i in order[:3]})
    return expected


def _with_test_folder(root: Path) -> None:
    """The newer release: train_image_only/ (values 1-18, 9 a bucket) and test/ (values 101-112, 6 a bucket)."""
    _bucket_images(root / "train_image_only", 3, 0)
    _bucket_images(root / "test", 2, 100)


def _grey(data) -> set[int]:
    return set(data.images[:, 0, 0, 0].tolist())


def test_iid_uses_the_official_split_of_the_runs_seed(tmp_path):
    expected = _with_split_files(tmp_path)
    source = ClearFolder(tmp_path)
    for seed in range(5):
        stream = temporal_stream(source, protocol="iid", split_seed=seed)
        for task, bucket in enumerate((1, 2)):
            splits = stream.splits(task)
            assert splits.notes["split"] == f"official:split_{seed}"
            assert splits.notes["split_sizes"]["train_and_dev"] == 9 and splits.notes["split_sizes"]["eval"] == 3
            assert (_grey(splits.train_and_dev()), _grey(splits.test)) == expected[seed, bucket]
        assert stream.tasks[0].key.metadata["split"] == f"official:split_{seed}"


def test_a_seed_without_official_split_is_an_error_unless_split_ours(tmp_path):
    _with_split_files(tmp_path)
    source = ClearFolder(tmp_path)
    with pytest.raises(ValueError, match=r"official splits for seeds \[0, 1, 2, 3, 4\].*not for seed 7.*split=ours"):
        temporal_stream(source, protocol="iid", split_seed=7)
    for seed in (7, 2):
        splits = temporal_stream(source, protocol="iid", split_seed=seed, split="ours").splits(0)
        assert splits.notes["split"] == "ours"
        assert (len(splits.train_and_dev()), len(splits.test)) == (8, 4)  # our round(0.7 n) at n = 12
    assert temporal_stream(source, protocol="streaming", split_seed=7).splits(1).notes["split"] == "whole-bucket"


def test_iid_trains_on_the_training_folder_and_evaluates_the_test_folder(tmp_path):
    _with_test_folder(tmp_path)
    stream = temporal_stream(ClearFolder(tmp_path), protocol="iid", split_seed=7)  # one test set for every seed
    splits = stream.splits(1)
    assert splits.notes["split"] == "official:test-folder"
    assert splits.notes["split_sizes"] == {"train_and_dev": 9, "train": 8, "dev": 1, "eval": 6}
    assert _grey(splits.train_and_dev()) == set(range(10, 19)) and _grey(splits.test) == set(range(107, 113))
    assert splits.test.images.shape[1:] == (4, 4, 3)
    ours = temporal_stream(ClearFolder(tmp_path), protocol="iid", split="ours").splits(1)
    assert ours.notes["split"] == "ours" and _grey(ours.test) < set(range(10, 19))  # training images re-split


def test_streaming_with_a_test_folder_trains_and_evaluates_whole_training_buckets(tmp_path):
    _with_test_folder(tmp_path)
    splits = temporal_stream(ClearFolder(tmp_path), protocol="streaming").splits(0)
    assert splits.notes["split"] == "whole-bucket"
    assert _grey(splits.train_and_dev()) == _grey(splits.test) == set(range(1, 10))


def test_plain_layout_uses_our_split_and_split_option_is_checked(tmp_path):
    _bucket_images(tmp_path, 4, 0)
    source = ClearFolder(tmp_path)
    splits = temporal_stream(source, protocol="iid", split_seed=7).splits(0)
    assert splits.notes["split"] == "ours" and (len(splits.train_and_dev()), len(splits.test)) == (8, 4)
    with pytest.raises(ValueError, match="has no official split"):
        temporal_stream(source, protocol="iid", split="official")
    with pytest.raises(ValueError, match=r"unknown split 'theirs'"):
        temporal_stream(source, protocol="iid", split="theirs")
    assert temporal_stream(TinySource(), protocol="iid").splits(0).notes["split"] == "ours"


def test_unusable_official_splits_stop_iid_with_their_path(tmp_path):
    _bucket_images(tmp_path / "train_image_only", 3, 0)
    (tmp_path / "test" / "readme").mkdir(parents=True)  # not a test set
    source = ClearFolder(tmp_path)
    with pytest.raises(ValueError, match=rf"the test set '{tmp_path / 'test'}' cannot be read.*split=ours"):
        temporal_stream(source, protocol="iid")
    assert temporal_stream(source, protocol="iid", split="ours").splits(0).notes["split"] == "ours"
    assert temporal_stream(source, protocol="streaming").splits(0).notes["split"] == "whole-bucket"


def test_split_option_reaches_the_clear_stream_by_name(tmp_path):
    _with_split_files(tmp_path)
    stream = get_temporal_stream("clear", data_root=tmp_path, protocol="iid", split_seed=3)
    assert stream.splits(0).notes["split"] == "official:split_3"
    stream = get_temporal_stream("clear", data_root=tmp_path, protocol="iid", split_seed=7, split="ours")
    assert stream.splits(0).notes["split"] == "ours"
