"""The `counts` converter (dm_nevis's count buckets) and the `raw` converter (headerless images, side-file flags)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from fetch_fixtures import fetch_one_off, labels_by_item, png_bytes, tar_bytes, zip_bytes
from scipy.io import savemat

from lifelong.data.fetch.converters_counts import count_buckets, dm_nevis_class_names, first_array, line_count
from lifelong.data.sources import load_source

RNG = np.random.default_rng(0)


def convert(tmp_path: Path, files: dict[str, bytes], converter: str, options: dict, name: str = "d"):
    out = fetch_one_off(tmp_path, files, converter, options, name)
    return load_source(f"csv:{out / 'labels.csv'}"), out


def by_file(data) -> dict[str, tuple[str, str | None]]:
    return labels_by_item(data)


def brute_force_buckets(counts: list[int], max_size: int, classes: int) -> list[int]:
    """The rule in words, by direct counting: bucket k ends at the last count c with fewer than k * total /
    classes images at or below c; walking up the counts, a count past the current bucket's end opens the next
    bucket (one step per count)."""
    clipped = [min(c, max_size - 1) for c in counts]
    ends = []
    for k in range(1, classes):
        below = [c for c in range(max_size) if sum(x <= c for x in clipped) < k * (len(clipped) / classes)]
        ends.append(below[-1])
    ideal = [sum(end < c for end in ends) for c in range(max_size)]  # buckets that end below c
    labels = [0]
    for c in range(1, max_size):
        labels.append(min(labels[-1] + 1, ideal[c]))
    return labels


def test_buckets_match_a_brute_force_of_the_rule_and_hold_equal_shares():
    checked = 0
    for trial in range(400):
        max_size, classes = int(RNG.choice([12, 30, 60])), int(RNG.integers(2, 11))
        top = max_size + 5 if trial % 2 else int(RNG.integers(2, 6))  # few distinct counts: bucket ends coincide
        counts = [int(c) for c in RNG.integers(1, top, int(RNG.integers(classes, 80)))]
        try:
            ours = count_buckets(counts, max_size, classes)
        except ValueError:
            continue
        assert ours == brute_force_buckets(counts, max_size, classes), (counts, max_size, classes)
        assert ours == sorted(ours) and set(ours) == set(range(classes))  # contiguous ranges, every bucket used
        checked += 1
    assert checked > 100
    # distinct counts: the first k buckets hold within one image of k * n / classes
    counts = [int(c) for c in RNG.permutation(97)[:40]]
    buckets = count_buckets(counts, 100, 10)
    for k in range(1, 10):
        held = sum(buckets[c] < k for c in counts)
        assert k * 4 - 1 <= held <= k * 4


def test_buckets_worked_by_hand():
    # counts 0..19 once each, 4 classes: bucket k ends at the last c with c + 1 < 5k, so at 3, 8, 13
    buckets = count_buckets(list(range(20)), 20, 4)
    assert buckets == [0] * 4 + [1] * 5 + [2] * 5 + [3] * 6
    assert dm_nevis_class_names(buckets) == ["0-4", "5-9", "10-14", "15-20"]  # dm_nevis's names, one count late
    # counts 1..10, 10 classes: count 0 (no image) is bucket 0 alone, 10 joins 9 in the last bucket
    assert count_buckets(list(range(1, 11)), 12, 10) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9]
    # half the images at count 2: buckets 2 and 3 both end at count 1, yet the walk opens one bucket per count
    assert count_buckets([0, 1, 2, 2, 2, 2, 3, 4], 6, 5) == [0, 1, 2, 3, 4, 4]
    # clipping: counts at or above max_size count as max_size - 1
    assert count_buckets([1, 2, 3, 50], 5, 4) == count_buckets([1, 2, 3, 4], 5, 4)


def test_buckets_refuse_counts_that_cannot_fill_them():
    with pytest.raises(ValueError, match="count 0"):
        count_buckets([0, 0, 0, 1, 2, 3], 10, 3)
    with pytest.raises(ValueError, match="fill 3 buckets, not 4"):  # ends 0, 0, 1: counts 0, 1, 2 open three
        count_buckets([1, 1, 2, 2], 3, 4)


def test_line_count_is_readlines_and_first_array_is_dm_nevis_index_path():
    for data in (b"", b"1 2\n", b"1 2\n3 4", b"1 2\n\n", b"\n"):
        assert line_count(data) == len(io.BytesIO(data).readlines())
    mat = shanghaitech_mat(RNG.uniform(0, 500, (7, 2)))
    from scipy.io import loadmat

    info = loadmat(io.BytesIO(mat))["image_info"]
    assert first_array(info).shape == info[0][0][0][0][0].shape == (7, 2)


def shanghaitech_mat(location: np.ndarray) -> bytes:
    """A GT_IMG_<n>.mat as ShanghaiTech ships it: a 1x1 cell 'image_info' holding a struct (location, number)."""
    record = np.empty((1, 1), dtype=[("location", "O"), ("number", "O")])
    record[0, 0] = (location, np.array([[float(len(location))]]))
    cell = np.empty((1, 1), dtype=object)
    cell[0, 0] = record
    out = io.BytesIO()
    savemat(out, {"image_info": cell})
    return out.getvalue()


def test_counts_from_one_array_by_frame_number_with_number_ranges(tmp_path):
    counts = {1: 3, 2: 5, 3: 8, 801: 4, 802: 9, 900: 6}
    column = np.zeros((1000, 1))
    for frame, n in counts.items():
        column[frame - 1] = n
    out = io.BytesIO()
    savemat(out, {"count": column})
    members = {f"mall_dataset/frames/seq_{f:06d}.jpg": png_bytes(RNG) for f in counts}
    members["mall_dataset/mall_gt.mat"] = out.getvalue()
    options = {
        "files": r"mall_dataset/frames/seq_(?P<number>\d+)\.jpg",
        "count": {"mat": "mall_dataset/mall_gt.mat", "key": "count"},
        "max_size": 10,
        "classes": 3,
        "number_ranges": {"train": [1, 800], "test": [801, 899]},
    }
    data, folder = convert(tmp_path, {"mall.zip": zip_bytes(members)}, "counts", options)
    # 6 images, share 2: ends at the last c with under 2 / under 4 images <= c: 3 and 5
    assert by_file(data) == {
        "seq_000001.jpg": ("0", "train"),
        "seq_000002.jpg": ("1", "train"),
        "seq_000003.jpg": ("2", "train"),
        "seq_000801.jpg": ("1", "test"),
        "seq_000802.jpg": ("2", "test"),
    }  # frame 900 counts towards the buckets but is in no range
    table = (folder / "count_classes.tsv").read_text().splitlines()
    assert table[1:] == ["0\t0\t3\t1\t0-4", "1\t4\t5\t2\t5-6", "2\t6\t9\t3\t7-10"]


def test_counts_from_side_files_with_split_lists_and_mat_rows(tmp_path):
    names = ["image-1-000001", "image-1-000002", "image-2-000001", "image-2-000002"]
    members = {f"T/images/{n}.jpg": png_bytes(RNG) for n in names}
    members |= {f"T/images/{n}.txt": b"1 1\n" * k for n, k in zip(names, [1, 4, 2, 3], strict=True)}
    members["T/image_sets/training.txt"] = b"image-1-000001.jpg\nimage-1-000002.jpg\n"
    members["T/image_sets/test.txt"] = b"image-2-000001.jpg\nimage-2-000002.jpg\n"
    options = {
        "files": r"T/images/(?P<stem>image-[^/]+)\.jpg",
        "count": {"lines": "T/images/{stem}.txt"},
        "max_size": 10,
        "classes": 2,
        "split_lists": {"train": "T/image_sets/training.txt", "test": "T/image_sets/test.txt"},
    }
    data, _ = convert(tmp_path, {"t.tar.gz": tar_bytes(members)}, "counts", options)
    # counts 1, 4, 2, 3 and share 2: bucket 0 holds the counts with under 2 images at or below them (count 1)
    assert by_file(data) == {
        "image-1-000001.jpg": ("0", "train"),
        "image-1-000002.jpg": ("1", "train"),
        "image-2-000001.jpg": ("1", "test"),
        "image-2-000002.jpg": ("1", "test"),
    }
    heads = {"train_data/images/IMG_1": 2, "train_data/images/IMG_2": 6, "test_data/images/IMG_1": 0}
    members = {f"S/part_A/{k}.jpg": png_bytes(RNG) for k in heads}
    members |= {
        f"S/part_A/{k.replace('images/', 'ground-truth/GT_')}.mat": shanghaitech_mat(np.ones((n, 2)))
        for k, n in heads.items()
    }
    options = {
        "files": r"S/(?P<part>part_[AB])/(?P<split>train|test)_data/images/(?P<stem>IMG_\d+)\.jpg",
        "count": {"mat_rows": "S/{part}/{split}_data/ground-truth/GT_{stem}.mat", "key": "image_info"},
        "max_size": 10,
        "classes": 2,
    }
    data, _ = convert(tmp_path, {"s.zip": zip_bytes(members)}, "counts", options, name="s")
    labels = sorted((data.class_names[int(k)], s) for k, s in zip(data.labels, data.official_split, strict=True))
    assert labels == [("0", "test"), ("1", "train"), ("1", "train")]  # share 1.5: bucket 0 ends at count 1
    del members["S/part_A/train_data/ground-truth/GT_IMG_2.mat"]
    with pytest.raises(ValueError, match="train_data/images/IMG_2.jpg: its side file .*GT_IMG_2.mat is not in"):
        convert(tmp_path, {"s.zip": zip_bytes(members)}, "counts", options, name="s2")


def test_raw_images_keep_their_pixels_and_take_the_side_file_flag(tmp_path):
    pixels = {f"img{k}": RNG.integers(0, 256, (6, 5), dtype=np.uint8) for k in (1, 2, 3)}
    members = {f"package/Images/{k}.sdt": p.tobytes() for k, p in pixels.items()}
    members["package/Images/img1.spr"] = b"header, not read\n"
    members |= {
        "package/GroundTruths/img1.lxyr": b"3 10 10 2\n1 4 4 3\n",
        "package/GroundTruths/img2.lxyr": b"2 1 1 1\n4 2 2 2\n11 3 3 3\n",
        "package/GroundTruths/img3.lxyr": b"",
    }
    options = {
        "files": r"package/Images/(?P<stem>img\d+)\.sdt",
        "shape": [6, 5],
        "flag": {"file": "package/GroundTruths/{stem}.lxyr", "first_field": ["1"]},
    }
    data, _ = convert(tmp_path, {"volcanoes.tar.gz": tar_bytes(members)}, "raw", options)
    assert by_file(data) == {"img1.png": ("1", None), "img2.png": ("0", None), "img3.png": ("0", None)}
    for item, image in zip(data.ids, data.images, strict=True):
        np.testing.assert_array_equal(np.asarray(image)[..., 0], pixels[Path(item).stem])
    wide = RNG.integers(0, 4096, (2, 3)).astype(">u2")  # 12-bit values, big-endian, mapped by range onto 0-255
    options16 = {"files": r"(?P<label>[ab])\.raw", "shape": [2, 3], "dtype": ">u2", "range": [0, 4095]}
    data, _ = convert(tmp_path, {"w.tar.gz": tar_bytes({"a.raw": wide.tobytes()})}, "raw", options16, name="w")
    expected = np.clip(np.round(wide.astype(float) / 4095 * 255), 0, 255)
    np.testing.assert_array_equal(np.asarray(data.images[0])[..., 0], expected)
    members["package/Images/img2.sdt"] = members["package/Images/img2.sdt"][:-1]
    with pytest.raises(ValueError, match=r"package/Images/img2.sdt holds 29 bytes; .* \[6, 5\] has 30"):
        convert(tmp_path, {"volcanoes.tar.gz": tar_bytes(members)}, "raw", options, name="short")
