"""ClearFolder (CLEAR's released layout) and TimestampCsv (path,label,timestamp rows) on tiny files in tmp_path."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from support import write_corrupt_png, write_png

from lifelong.data.images import CorruptImageError
from lifelong.data.sources.clear import ClearFolder, TimestampCsv
from lifelong.data.temporal import CLEAR_EDGES, LabeledFeatures, TemporalSource

CLASSES = ("bus", "BACKGROUND", "camera")  # sorted: BACKGROUND, bus, camera


def _write_jpeg(path: Path, seed: int, size: tuple[int, int] = (12, 9)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path, quality=90)
    return path


def _clear_tree(root: Path, buckets=(1, 2), per_class: int = 2, unlabeled=(0, 1)) -> Path:
    """root/labeled_images/<b>/<class>/<id>.png|jpg and root/unlabeled_images/<b>/<sub>/<id>.jpg."""
    seed = 0
    for b in buckets:
        for c in CLASSES:
            for i in range(per_class):
                seed += 1
                file = root / "labeled_images" / str(b) / c / f"{seed}.{'png' if i % 2 else 'jpg'}"
                write_png(file, seed, 10 + i, 14) if i % 2 else _write_jpeg(file, seed)
    for b in unlabeled:
        for i in range(3):
            _write_jpeg(root / "unlabeled_images" / str(b) / "x" / f"u{b}_{i}.jpg", 100 + 10 * b + i, (20, 16))
    return root


def test_clear_folder_reads_the_released_layout_lazily(tmp_path, monkeypatch):
    root = _clear_tree(tmp_path / "clear10")
    calls = []
    import lifelong.data.sources.file_stream as file_stream_module

    real = file_stream_module.decode_files
    monkeypatch.setattr(file_stream_module, "decode_files", lambda *a, **k: calls.append(1) or real(*a, **k))
    source = ClearFolder(root, unlabeled_size=8)
    assert calls == []  # nothing decoded at construction
    assert isinstance(source, TemporalSource)
    assert source.class_names == ("BACKGROUND", "bus", "camera")
    assert source.num_buckets == 3 and source.labeled_buckets == (1, 2)
    assert source.windows == (("", ""),) * 3
    data = source.labeled(2)
    assert len(data) == 6 and sorted(np.bincount(data.labels).tolist()) == [2, 2, 2]
    assert all(Path(i).parts[-4:-2] == ("labeled_images", "2") for i in data.ids)
    assert {Path(i).parent.name for i, y in zip(data.ids, data.labels, strict=True) if y == 1} == {"bus"}
    assert {img.shape for img in data.images} == {(9, 12, 3), (11, 14, 3)}  # sizes vary; the lead resizes
    pool = source.unlabeled(0)
    assert pool.shape == (3, 8, 8, 3) and pool.dtype == np.uint8
    assert source.unlabeled(2).shape == (0, 8, 8, 3)
    with pytest.raises(ValueError, match="bucket 0 has no labeled data"):
        source.labeled(0)


def test_clear_folder_finds_the_release_subfolder_and_clear_windows(tmp_path):
    root = tmp_path / "clear10"
    _clear_tree(root / "train_image_only", buckets=range(1, 11), per_class=1, unlabeled=())
    (root / "train_image_only" / "class_names.txt").write_text("BACKGROUND\nbus\ncamera\n")
    source = ClearFolder(root)
    assert source.labeled_buckets == tuple(range(1, 11)) and source.num_buckets == 11
    assert source.windows[1] == (CLEAR_EDGES[1], CLEAR_EDGES[2])
    assert len(source.unlabeled(0)) == 0


def test_clear_folder_class_mismatches_are_errors_naming_the_bucket(tmp_path):
    root = _clear_tree(tmp_path / "c")
    write_png(root / "labeled_images" / "2" / "dress" / "1.png", 1, 5, 5)
    with pytest.raises(
        ValueError, match=r"bucket 2 has different classes from bucket 1: missing \[\], extra \['dress'\]"
    ):
        ClearFolder(root)
    root = _clear_tree(tmp_path / "d")
    (root / "class_names.txt").write_text("BACKGROUND\nbus\n")
    with pytest.raises(ValueError, match=r"class_names.txt.*disagree.*missing \['camera'\]"):
        ClearFolder(root)
    (tmp_path / "e" / "labeled_images" / "first").mkdir(parents=True)
    with pytest.raises(ValueError, match="not a bucket number"):
        ClearFolder(tmp_path / "e")
    with pytest.raises(FileNotFoundError, match="does not look like a CLEAR release"):
        ClearFolder(tmp_path)


def test_clear_folder_corrupt_image_is_named_or_skipped_and_counted(tmp_path):
    root = _clear_tree(tmp_path / "c")
    bad = write_corrupt_png(root / "labeled_images" / "1" / "bus" / "bad.png")
    with pytest.raises(CorruptImageError, match="bad.png"):
        ClearFolder(root).labeled(1)
    source = ClearFolder(root, skip_corrupt=True)
    data = source.labeled(1)
    assert len(data) == 6 and data.notes["corrupt_files"] == [str(bad)]
    assert source.notes["corrupt_skipped"] == 1


def _save(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(value, path)


def test_clear_folder_loads_feature_files_in_the_release_formats(tmp_path):
    root = _clear_tree(tmp_path / "c")
    g = torch.Generator().manual_seed(0)
    features = root / "features" / "moco_b0"
    for c in ("BACKGROUND", "bus", "camera"):  # bucket 1: dict id -> [D] tensor; bucket 2: one [N, D] tensor
        _save(features / "1" / f"{c}.pth", {f"{c}-{i}": torch.randn(5, generator=g) for i in range(3)})
        _save(features / "2" / f"{c}.pth", torch.randn(2, 5, generator=g))
    source = ClearFolder(root, feature="moco_b0")
    assert source.labeled_buckets == (1, 2)
    one = source.labeled(1)
    assert isinstance(one, LabeledFeatures)
    assert one.features.shape == (9, 5) and one.features.dtype == np.float32
    assert (
        one.ids[:3] == ["BACKGROUND-0", "BACKGROUND-1", "BACKGROUND-2"]
        and one.labels.tolist() == [0] * 3 + [1] * 3 + [2] * 3
    )
    expected = torch.load(features / "1" / "bus.pth", weights_only=True)["bus-1"].numpy()
    np.testing.assert_array_equal(one.features[4], expected)
    two = source.labeled(2)
    assert two.features.shape == (6, 5) and two.labels.tolist() == [0, 0, 1, 1, 2, 2]
    assert source.unlabeled(0).shape[0] == 3  # images still come from the folders


def test_clear_folder_features_all_pth_follows_class_names_txt(tmp_path):
    root = tmp_path / "c"
    (root).mkdir()
    (root / "class_names.txt").write_text("camera\nBACKGROUND\nbus\n")  # target 0 means camera
    _save(root / "features" / "imagenet" / "1" / "all.pth", ([torch.ones(4), torch.zeros(4)], [0, 2]))
    source = ClearFolder(root, feature="imagenet")
    data = source.labeled(1)
    assert source.class_names == ("BACKGROUND", "bus", "camera")
    assert data.labels.tolist() == [2, 1] and data.features.shape == (2, 4)
    assert source.unlabeled(1).shape == (0, 32, 32, 3)


def test_clear_folder_feature_class_mismatch_names_the_bucket(tmp_path):
    root = _clear_tree(tmp_path / "c")
    for b in (1, 2):
        for c in ("BACKGROUND", "bus") if b == 2 else ("BACKGROUND", "bus", "camera"):
            _save(root / "features" / "f" / str(b) / f"{c}.pth", torch.zeros(1, 3))
    with pytest.raises(ValueError, match=r"features/f/2 has different classes.*missing \['camera'\]"):
        ClearFolder(root, feature="f")
    with pytest.raises(FileNotFoundError, match="no features named 'g'.*'f'"):
        ClearFolder(root, feature="g")


# ---------------------------------------------------------------------------------------------------------
# TimestampCsv


def _csv(tmp_path: Path, rows: list[tuple[str, str, str]], n_images: int = 0) -> Path:
    for i in range(n_images):
        write_png(tmp_path / "img" / f"{i}.png", i, 6 + i % 3, 7)
    lines = ["path,label,timestamp", *(",".join(r) for r in rows)]
    path = tmp_path / "stream.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_timestamp_csv_cuts_equal_buckets_and_moves_bucket0_labels_to_pretraining(tmp_path):
    labels = ["cat", "", "dog", "cat", "dog", "", "cat", "dog", "dog"]
    rows = [(f"img/{i}.png", labels[i], f"2010-01-{i + 1:02d}") for i in range(9)]
    rows = rows[::-1]  # file order is not time order
    source = TimestampCsv(_csv(tmp_path, rows, 9), num_buckets=3, unlabeled_size=4)
    assert isinstance(source, TemporalSource)
    assert source.class_names == ("cat", "dog") and source.num_buckets == 3
    assert source.windows == (("2010-01-01", "2010-01-03"), ("2010-01-04", "2010-01-06"), ("2010-01-07", "2010-01-09"))
    assert source.labeled_buckets == (1, 2)
    assert source.unlabeled(0).shape == (3, 4, 4, 3)  # 0 (cat), 1 (unlabeled), 2 (dog): all pretraining
    one = source.labeled(1)
    assert [Path(i).name for i in one.ids] == ["4.png", "3.png"] and one.labels.tolist() == [1, 0]
    assert source.unlabeled(1).shape == (1, 4, 4, 3)
    assert source.labeled(2).labels.tolist() == [1, 1, 0]


def test_timestamp_csv_windows_drop_rows_outside_the_edges(tmp_path):
    rows = [(f"img/{i}.png", "a" if i else "", str(1_000_000 * i)) for i in range(5)]
    source = TimestampCsv(_csv(tmp_path, rows, 5), edges=[500_000, 1_500_000, 3_500_000], class_names=["a", "b"])
    assert source.num_buckets == 2 and source.class_names == ("a", "b")
    assert source.notes["outside_edges"] == 2  # t = 0 and t = 4e6
    assert source.labeled_buckets == (1,) and len(source.labeled(1)) == 2
    assert len(source.unlabeled(0)) == 1


@pytest.mark.parametrize(
    ("row", "error", "message"),
    [
        (("img/9.png", "a", "2010-01-01"), FileNotFoundError, r"stream\.csv:3: image file not found"),
        (("img/1.png", "a", "someday"), ValueError, r"stream\.csv:3: bad timestamp 'someday'"),
        (("img/1.png", "zebra", "2010-01-01"), ValueError, r"stream\.csv:3: label 'zebra' is not one of"),
    ],
)
def test_timestamp_csv_errors_name_the_row(tmp_path, row, error, message):
    path = _csv(tmp_path, [("img/0.png", "a", "2010-01-01"), row], 2)
    with pytest.raises(error, match=message):
        TimestampCsv(path, num_buckets=2, class_names=["a", "b"])


def test_timestamp_csv_needs_its_columns(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("path,label\nx.png,a\n")
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['timestamp'\]"):
        TimestampCsv(path)
    with pytest.raises(ValueError, match="not both"):
        TimestampCsv(path, num_buckets=2, edges=["2010-01-01", "2011-01-01"])


def test_timestamp_csv_corrupt_image_is_named_or_skipped(tmp_path):
    write_corrupt_png(tmp_path / "img" / "bad.png")
    rows = [("img/0.png", "a", "1"), ("img/1.png", "a", "2"), ("img/bad.png", "a", "3"), ("img/2.png", "a", "4")]
    path = _csv(tmp_path, rows, 3)
    with pytest.raises(CorruptImageError, match="bad.png"):
        TimestampCsv(path, num_buckets=2).labeled(1)
    source = TimestampCsv(path, num_buckets=2, skip_corrupt=True)
    assert len(source.labeled(1)) == 1 and source.notes["corrupt_skipped"] == 1


# ---------------------------------------------------------------------------------------------------------
# CLEAR's official splits: the original release's split files and the newer release's test folder

SORTED = ("BACKGROUND", "bus", "camera")


def _solid(path: Path, value: int) -> None:
    """A 4x4 PNG of one grey value: the value names the image after decoding."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (4, 4), (value,) * 3).save(path)


def _labeled(folder: Path, buckets=(1, 2), per_class: int = 4, start: int = 0) -> dict[int, list]:
    """folder/labeled_images/<b>/<class>/<value>.png -> {bucket: [(path relative to folder, class index, value)]}."""
    rows: dict[int, list] = {}
    value = start
    for b in buckets:
        for k, name in enumerate(SORTED):
            for _ in range(per_class):
                value += 1
                rel = f"labeled_images/{b}/{name}/{value}.png"
                _solid(folder / rel, value)
                rows.setdefault(b, []).append((rel, k, value))
    return rows


def _original_release(root: Path, seeds=range(5)) -> dict[tuple[int, int], dict[str, set[int]]]:
    """CLEAR's first release: labeled_images/ and training_folder/testset_ratio_0.3/split_<seed>/<bucket>/*.txt.

    Each bucket holds 12 images; every split puts int(12 * 0.3) = 3 in test, as the release's script does.
    Returns {(seed, bucket): {"train": values, "test": values}}.
    """
    rows = _labeled(root)
    (root / "class_names.txt").write_text("\n".join(SORTED))
    expected = {}
    for seed in seeds:
        for bucket, items in rows.items():
            order = np.random.default_rng(seed).permutation(len(items))
            parts = {"test": [items[i] for i in order[:3]], "train": [items[i] for i in order[3:]]}
            folder = root / "training_folder" / "testset_ratio_0.3" / f"split_{seed}" / str(bucket)
            folder.mkdir(parents=True)
            for part, chosen in parts.items():
                (folder / f"{part}.txt").write_text("\n".join(f"{rel} {k}" for rel, k, _ in chosen))
            expected[seed, bucket] = {part: {v for *_, v in chosen} for part, chosen in parts.items()}
    return expected


def _values(data) -> set[int]:
    return {int(img[0, 0, 0]) for img in data.images}


def test_clear_folder_reads_the_original_release_split_files_for_each_seed(tmp_path):
    expected = _original_release(tmp_path / "clear10")
    source = ClearFolder(tmp_path / "clear10")
    splits = source.official_splits
    assert splits is not None and splits.problem is None
    assert (splits.kind, splits.seeds) == ("seeded", (0, 1, 2, 3, 4))
    assert splits.where == str(tmp_path / "clear10" / "training_folder" / "testset_ratio_0.3")
    assert splits.name(2) == "official:split_2"
    for seed in range(5):
        for bucket in (1, 2):
            train, test = source.official_split(bucket, seed)
            assert (len(train), len(test)) == (9, 3)  # the files' sizes, not our 70/30 (8 / 4 at 12)
            assert _values(train) == expected[seed, bucket]["train"] and _values(test) == expected[seed, bucket]["test"]
            for data in (train, test):  # labels follow the class folders
                assert all(Path(i).parent.name == SORTED[y] for i, y in zip(data.ids, data.labels, strict=True))
    assert len(source.labeled(1)) == 12  # the whole bucket stays available (streaming)
    with pytest.raises(ValueError, match=r"no official split for seed 7.*seeds \[0, 1, 2, 3, 4\]"):
        source.official_split(1, 7)


def test_clear_folder_reads_the_newer_release_test_folder(tmp_path):
    _labeled(tmp_path / "train_image_only", per_class=3)
    _labeled(tmp_path / "test", per_class=2, start=100)
    for root in (tmp_path, tmp_path / "train_image_only"):  # the release folder, or its training folder
        source = ClearFolder(root)
        splits = source.official_splits
        assert (splits.kind, splits.where, splits.problem) == ("test-folder", str(tmp_path / "test"), None)
        assert splits.name(7) == "official:test-folder"
        assert _values(source.labeled(1)) == set(range(1, 10))
        train, test = source.official_split(2, seed=7)  # any seed: one test set
        assert (len(train), len(test)) == (9, 6)
        assert _values(train) == set(range(10, 19)) and _values(test) == set(range(107, 113))
        assert all(Path(i).is_relative_to(tmp_path / "test") for i in test.ids)


def test_clear_folder_without_official_splits_says_so(tmp_path):
    source = ClearFolder(_clear_tree(tmp_path / "c"))
    assert source.official_splits is None
    with pytest.raises(ValueError, match="no official split here"):
        source.official_split(1, 0)
    only_test = tmp_path / "t"  # a test set alone is read as the data, never as its own test set
    _labeled(only_test / "test")
    assert ClearFolder(only_test).official_splits is None
    assert ClearFolder(only_test / "test").official_splits is None
    _labeled(tmp_path / "test", buckets=(1,))  # a sibling of a plain release folder is not its test set
    assert ClearFolder(tmp_path / "c").official_splits is None


def test_official_split_layout_problems_name_the_path(tmp_path):
    ratio = tmp_path / "a" / "training_folder" / "testset_ratio_0.3"
    _original_release(tmp_path / "a", seeds=(0,))
    (ratio / "latest").mkdir()
    assert str(ratio / "latest") in ClearFolder(tmp_path / "a").official_splits.problem
    _original_release(tmp_path / "b", seeds=(0, 1))
    missing = tmp_path / "b" / "training_folder" / "testset_ratio_0.3" / "split_1" / "2" / "test.txt"
    missing.unlink()
    splits = ClearFolder(tmp_path / "b").official_splits
    assert f"official split file {str(missing)!r} is missing" in splits.problem and splits.seeds == (0, 1)
    _labeled(tmp_path / "c" / "train_image_only")
    (tmp_path / "c" / "test" / "images").mkdir(parents=True)
    problem = ClearFolder(tmp_path / "c").official_splits.problem
    assert f"the test set {str(tmp_path / 'c' / 'test')!r} cannot be read" in problem
    _labeled(tmp_path / "d" / "train_image_only", buckets=(1, 2))
    _labeled(tmp_path / "d" / "test", buckets=(1,))
    assert "has no labeled bucket [2]" in ClearFolder(tmp_path / "d").official_splits.problem
    not_a_release = tmp_path / "d" / "test" / "labeled_images"
    with pytest.raises(FileNotFoundError, match=re.escape(f"{str(not_a_release)!r} does not look like a CLEAR")):
        ClearFolder(not_a_release)  # not a release: the error names it


def test_official_split_file_errors_name_the_line(tmp_path):
    _original_release(tmp_path, seeds=(0,))
    train_txt = tmp_path / "training_folder" / "testset_ratio_0.3" / "split_0" / "1" / "train.txt"
    lines = train_txt.read_text().splitlines()
    source = ClearFolder(tmp_path)
    train_txt.write_text("\n".join([lines[0].replace("labeled_images/1/", "labeled_images/2/"), *lines[1:]]))
    with pytest.raises(ValueError, match=r"train\.txt:1: .* is not under labeled_images/1/"):
        source.official_split(1, 0)
    rel, k = lines[0].split()
    train_txt.write_text("\n".join([f"{rel} {(int(k) + 1) % 3}", *lines[1:]]))
    with pytest.raises(ValueError, match=r"train\.txt:1: class index \d \(\w+\) but .* is of class"):
        source.official_split(1, 0)
    train_txt.write_text("\n".join([*lines, lines[0]]))
    with pytest.raises(ValueError, match=r"train\.txt:10: .* is listed twice"):
        source.official_split(1, 0)


def test_official_split_of_all_pth_features_uses_the_index_lists(tmp_path):
    (tmp_path / "class_names.txt").write_text("\n".join(SORTED))
    ratio = tmp_path / "training_folder" / "testset_ratio_0.3"
    for bucket in (1, 2):
        _save(
            tmp_path / "features" / "moco_b0" / str(bucket) / "all.pth",
            (torch.arange(10.0)[:, None], [0, 1, 2] * 3 + [0]),
        )
        (ratio / "split_0" / str(bucket)).mkdir(parents=True)
        (ratio / "split_0" / str(bucket) / "train_indices.json").write_text("[9, 0, 4, 5, 6, 7, 8]")
        (ratio / "split_0" / str(bucket) / "test_indices.json").write_text("[1, 2, 3]")
    source = ClearFolder(tmp_path, feature="moco_b0")
    assert (source.official_splits.kind, source.official_splits.seeds) == ("seeded", (0,))
    train, test = source.official_split(1, 0)
    assert train.features[:, 0].tolist() == [9, 0, 4, 5, 6, 7, 8] and test.labels.tolist() == [1, 2, 0]
