"""ClearFolder (CLEAR's released layout) and TimestampCsv (path,label,timestamp rows) on tiny files in tmp_path."""

from __future__ import annotations

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
    import lifelong.data.sources.clear as clear_module

    real = clear_module.decode_files
    monkeypatch.setattr(clear_module, "decode_files", lambda *a, **k: calls.append(1) or real(*a, **k))
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
