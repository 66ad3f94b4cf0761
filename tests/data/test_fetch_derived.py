"""Derived labels and images (BIWI's pose bins, MNIST-rot's rotations) and the table options DDSM and SUN397 need,
each checked against an independent computation: scipy's Euler angles, a brute-force binning, a step-by-step
replay of dm_nevis's random draws, pandas' merge and drop_duplicates."""

from __future__ import annotations

import gzip
import io
import zipfile
from pathlib import Path

import numpy as np
import pytest
from _prereq import import_or_missing
from fetch_fixtures import fetch_one_off, labels_by_item, png_bytes, zip_bytes
from scipy.ndimage import rotate
from scipy.spatial.transform import Rotation
from support import idx_bytes

from lifelong.data.fetch.conversion import ConversionError
from lifelong.data.fetch.converters_derived import bin_of, equal_frequency_edges, rotation_angles, yaw_pitch_roll
from lifelong.data.sources import detect_source, load_source

RNG = np.random.default_rng(0)


def fetched(tmp_path: Path, files: dict[str, bytes], converter: str, options: dict, name: str = "d"):
    return load_source(detect_source(fetch_one_off(tmp_path, files, converter, options, name)))


def labels_by_name(data) -> dict[str, tuple]:
    """image path below images/ -> (class name or sorted class names, split)."""
    return labels_by_item(data, key=lambda item: item.split("images/", 1)[-1])


def test_yaw_pitch_roll_are_scipys_extrinsic_zyx_angles_in_every_branch_of_the_trace_method():
    rotations = Rotation.random(400, random_state=1)
    for matrix, expected in zip(rotations.as_matrix(), rotations.as_euler("zyx", degrees=True), strict=True):
        assert np.allclose(yaw_pitch_roll(matrix), expected, atol=1e-7)
    # the four branches of the trace method: m22 < 0 with m00 > m11 or not, m22 >= 0 with m00 < -m11 or not
    branches = {(m[2, 2] < 0, m[0, 0] > m[1, 1] if m[2, 2] < 0 else m[0, 0] < -m[1, 1]) for m in rotations.as_matrix()}
    assert len(branches) == 4
    # a matrix printed with 6 digits (BIWI's files) is not quite orthogonal: still scipy's angles to 1e-3 degrees
    matrix = np.round(Rotation.from_euler("zyx", [12.5, -33.0, 7.25], degrees=True).as_matrix(), 6)
    assert np.allclose(yaw_pitch_roll(matrix), [12.5, -33.0, 7.25], atol=1e-3)


def brute_force_bins(values: np.ndarray, bins: int) -> np.ndarray:
    """Edges at positions k * n / bins of the sorted values (linear between neighbours, the last value beyond the
    end), then each value's bin by scanning the edges; the maximum goes to the last bin."""
    ordered, n = sorted(values), len(values)
    edges = []
    for k in range(bins + 1):
        position = k * n / bins
        low = min(int(position), n - 1)
        high = min(low + 1, n - 1)
        edges.append(ordered[low] + (position - low) * (ordered[high] - ordered[low]) if low < n - 1 else ordered[-1])
    found = []
    for v in values:
        j = next((j for j in range(bins) if edges[j] <= v < edges[j + 1]), bins - 1)
        found.append(j)
    return np.array(found)


@pytest.mark.parametrize("n", [6, 7, 50, 101])
def test_equal_frequency_bins_match_a_brute_force_and_split_the_values_evenly(n):
    values = np.random.default_rng(n).normal(0, 20, n)
    got = bin_of(values, equal_frequency_edges(values, 5))
    assert got.tolist() == brute_force_bins(values, 5).tolist()
    counts = np.bincount(got, minlength=5)
    assert counts.min() >= n // 5 - 1 and counts.max() <= n // 5 + 2  # equal frequency, up to the edges' rounding


def pose_text(yaw: float, pitch: float, roll: float) -> bytes:
    matrix = Rotation.from_euler("zyx", [yaw, pitch, roll], degrees=True).as_matrix()
    rows = "".join(" ".join(f"{v:.6g}" for v in row) + " \n" for row in matrix)
    return (rows + "\n88.7665 -4.08406 878.874 \n").encode()


POSES = {  # frame -> (yaw, pitch, roll)
    "faces_0/01/frame_00001": (3.0, -12.0, 5.0),
    "faces_0/01/frame_00002": (-20.0, 4.0, -1.0),
    "faces_0/02/frame_00001": (15.0, 9.0, 11.0),
    "faces_0/03/frame_00001": (-8.0, -30.0, 2.5),
    "faces_0/03/frame_00002": (30.0, 22.0, -14.0),
    "faces_0/04/frame_00001": (0.5, 1.5, 20.0),
    "faces_0/04/frame_00002": (-33.0, 17.0, -6.0),  # a pose without its image: it counts for the bins only
}


def biwi_zip() -> bytes:
    members = {f"{frame}_pose.txt": pose_text(*angles) for frame, angles in POSES.items()}
    members |= {f"{frame}_rgb.png": png_bytes(RNG) for frame in list(POSES)[:-1]}
    members["faces_0/02/frame_00009_rgb.png"] = png_bytes(RNG)  # an image without a pose: not an example
    members["faces_0/01/frame_00001_depth.bin"] = RNG.bytes(32)
    return zip_bytes(members)


BIWI_OPTIONS = {
    "subject": r"^faces_0/(?P<subject>\d{2})/",
    "subject_splits": {"train": [1, 2], "val": [3], "test": [4]},
}


def test_pose_bins_label_each_image_by_its_three_angle_bins_over_every_pose_file(tmp_path):
    data = fetched(tmp_path, {"biwi.zip": biwi_zip()}, "pose_bins", BIWI_OPTIONS)
    angles = np.array([angles for angles in POSES.values()])  # the independent angles: those the matrices were made of
    bins = np.stack([brute_force_bins(angles[:, k], 5) for k in range(3)], axis=1)
    subjects = {"01": "train", "02": "train", "03": "val", "04": "test"}
    expected = {
        f"{frame}_rgb.png": (tuple(sorted(str(b + 5 * k) for k, b in enumerate(row))), subjects[frame.split("/")[1]])
        for frame, row in zip(list(POSES)[:-1], bins[:-1], strict=True)
    }
    assert labels_by_name(data) == expected


def test_pose_files_that_are_not_rotations_or_subjects_outside_the_lists_fail_naming_them(tmp_path):
    bad = {
        "faces_0/01/frame_00001_pose.txt": b"1 0 0\n0 1 0\n0 0 2\n",
        "faces_0/01/frame_00001_rgb.png": png_bytes(RNG),
    }
    with pytest.raises(ConversionError, match="frame_00001_pose.txt: its matrix is not a rotation"):
        fetched(tmp_path, {"biwi.zip": zip_bytes(bad)}, "pose_bins", {}, name="a")
    short = {"faces_0/01/frame_00001_pose.txt": b"1 0 0\n0 1\n", "faces_0/01/frame_00001_rgb.png": png_bytes(RNG)}
    with pytest.raises(ConversionError, match="frame_00001_pose.txt: the first three lines are not a 3x3 matrix"):
        fetched(tmp_path, {"biwi.zip": zip_bytes(short)}, "pose_bins", {}, name="b")
    options = {**BIWI_OPTIONS, "subject_splits": {"train": [1, 2, 3]}}
    with pytest.raises(ConversionError, match="subject 4 is in no list"):
        fetched(tmp_path, {"biwi.zip": biwi_zip()}, "pose_bins", options, name="c")


STORED = {"seed": 0, "fractions": {"train": 0.7, "dev": 0.15, "dev-test": 0.15}}


def replay_dm_nevis_draws(n: int) -> np.ndarray:
    """dm_nevis's MNIST-rot step by step: np.random.seed(99999); each split generator it writes (dev, dev-test,
    train) runs over every image drawing np.random.randint(0, high=360), and keeps the images assigned to it by
    RandomState(0).multinomial(1, [dev, dev-test, train]) on first sight, in image order."""
    chooser = np.random.RandomState(0)
    assigned = [int(np.argmax(chooser.multinomial(1, [0.15, 0.15, 0.7]))) for _ in range(n)]
    np.random.seed(99999)
    kept = {}
    for split in range(3):
        for i in range(n):
            angle = np.random.randint(0, high=360)
            if assigned[i] == split:
                kept[i] = angle
    return np.array([kept[i] for i in range(n)])


def test_rotation_angles_replay_dm_nevis_draws_per_stored_split_or_one_pass():
    assert rotation_angles(500, 99999, STORED).tolist() == replay_dm_nevis_draws(500).tolist()
    np.random.seed(99999)
    assert rotation_angles(50, 99999, None).tolist() == [np.random.randint(0, high=360) for _ in range(50)]


def test_rotated_idx_rotates_the_train_images_only_and_keeps_the_labels(tmp_path):
    train = RNG.integers(0, 256, (20, 28, 28), dtype=np.uint8)
    test = RNG.integers(0, 256, (4, 28, 28), dtype=np.uint8)
    labels = np.arange(20) % 10
    files = {
        "train-images-idx3-ubyte.gz": gzip.compress(idx_bytes(train)),
        "train-labels-idx1-ubyte.gz": gzip.compress(idx_bytes(labels)),
        "t10k-images-idx3-ubyte.gz": gzip.compress(idx_bytes(test)),
        "t10k-labels-idx1-ubyte.gz": gzip.compress(idx_bytes(np.array([3, 1, 4, 1]))),
    }
    data = fetched(tmp_path, files, "rotated_idx", {"rotate": "train", "seed": 99999, "stored_splits": STORED})
    angles = replay_dm_nevis_draws(20)
    expected = np.stack([rotate(image, int(a), reshape=False) for image, a in zip(train, angles, strict=True)])
    split = np.asarray(data.official_split)
    images = np.stack([np.asarray(data.image(i)).reshape(28, 28) for i in range(len(data.ids))])
    assert np.array_equal(images[split == "train"], expected) and np.array_equal(images[split == "test"], test)
    assert [data.class_names[k] for k in np.asarray(data.labels)[split == "train"]] == [str(v) for v in labels]
    # a quarter turn of a spline-interpolated image is exact: the rotation is the image's, not noise
    assert np.array_equal(rotate(train[0], 90, reshape=False), np.rot90(train[0]))


def ddsm_archive() -> bytes:
    members = {f"jpeg/{uid}/1-1.jpg": png_bytes(RNG) for uid in ("u1", "u2", "u3", "u4")}
    members["csv/dicom_info.csv"] = (
        b"image_path,PatientID\n"
        b"CBIS-DDSM/jpeg/u1/1-1.jpg,Calc-Training_P_1_LEFT_CC\n"
        b"CBIS-DDSM/jpeg/u2/1-1.jpg,Calc-Training_P_1_LEFT_CC\n"  # two images of one key: one-to-many
        b"CBIS-DDSM/jpeg/u3/1-1.jpg,Mass-Training_P_2_RIGHT_MLO\n"
        b"CBIS-DDSM/jpeg/u4/1-1.jpg,Mass-Test_P_3_LEFT_CC\n"
        b"CBIS-DDSM/jpeg/u9/1-1.jpg,Mass-Training_P_2_RIGHT_MLO_1\n"
    )
    case = "pathology,image file path\n"
    members["csv/calc_case_description_train_set.csv"] = (
        case + "BENIGN,Calc-Training_P_1_LEFT_CC/s/a/000000.dcm\n"
        "MALIGNANT,Calc-Training_P_1_LEFT_CC/s/a/000000.dcm\n"
        "MALIGNANT,Calc-Training_P_9_LEFT_CC/s/a/000000.dcm\n"  # no dicom_info row: dropped (inner join)
    ).encode()
    members["csv/mass_case_description_train_set.csv"] = (
        case + "BENIGN_WITHOUT_CALLBACK,Mass-Training_P_2_RIGHT_MLO/s/b/000000.dcm\n"
        "MALIGNANT,Mass-Training_P_2_RIGHT_MLO/s/b/000000.dcm\n"
    ).encode()
    members["csv/mass_case_description_test_set.csv"] = (
        case + "MALIGNANT,Mass-Test_P_3_LEFT_CC/s/c/000000.dcm\n"
    ).encode()
    return zip_bytes(members)


DDSM_OPTIONS = {
    "table_splits": {"csv/*_train_set.csv": "train", "csv/*_test_set.csv": "test"},
    "join": [
        {
            "table": "csv/dicom_info.csv",
            "on": "PatientID",
            "main_on": "image file path",
            "main_key": "^(?P<key>[^/]*)",
            "many": True,
            "columns": {"image_path": "image_path"},
        }
    ],
    "path": "image_path",
    "path_sub": ["^.*/([^/]+/[^/]+)$", r"jpeg/\1"],
    "path_root": "/",
    "first_per_image": True,
    "label": "pathology",
}


def test_a_key_from_a_cell_a_one_to_many_join_a_path_rewrite_and_the_first_row_per_image_are_pandas_answer(tmp_path):
    pandas = import_or_missing("pandas", "hf")  # a dependency of datasets

    archive = ddsm_archive()
    data = fetched(tmp_path, {"cbis.zip": archive}, "table", DDSM_OPTIONS)
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:  # dm_nevis's recipe, in pandas
        info = pandas.read_csv(zf.open("csv/dicom_info.csv"))
        info["key"] = info["PatientID"]
        info["image_path"] = info["image_path"].map(lambda p: "jpeg/" + "/".join(p.split("/")[-2:]))
        expected = {}
        for split in ("train", "test"):
            parts = [f"csv/{kind}_case_description_{split}_set.csv" for kind in ("calc", "mass")]
            cases = pandas.concat([pandas.read_csv(zf.open(p)) for p in parts if p in zf.namelist()])
            cases["key"] = cases["image file path"].map(lambda p: p.split("/")[0])
            merged = pandas.merge(cases, info, on="key", how="inner").drop_duplicates(subset="image_path")
            expected |= {row.image_path: (row.pathology, split) for row in merged.itertuples()}
    assert labels_by_name(data) == expected
    assert expected["jpeg/u1/1-1.jpg"] == ("BENIGN", "train") and len(expected) == 4  # the cases the test is about


def test_a_join_key_that_the_main_key_regex_does_not_find_fails_naming_the_row(tmp_path):
    options = {**DDSM_OPTIONS, "join": [{**DDSM_OPTIONS["join"][0], "main_key": "^(?P<key>Mass-[^/]+)/"}]}
    with pytest.raises(ConversionError, match=r"calc_case_description_train_set.csv:2: .* has no join key"):
        fetched(tmp_path, {"cbis.zip": ddsm_archive()}, "table", options)


@pytest.mark.parametrize("lead", ["/", ""])
def test_sun397_lists_with_or_without_a_leading_slash_give_the_folder_path_as_class(tmp_path, lead):
    names = ["a/abbey/sun_a.jpg", "a/apse/indoor/sun_b.jpg", "c/church/outdoor/sun_bhenjvsvrtumjuri.jpg"]
    members = {f"SUN397/{name}": png_bytes(RNG) for name in [*names, "a/abbey/sun_c.jpg", "b/bedroom/sun_d.jpg"]}
    files = {"SUN397.zip": zip_bytes(members), "tr.txt": "".join(f"{lead}{n}\n" for n in names).encode()}
    files["te.txt"] = f"{lead}a/abbey/sun_c.jpg\n".encode()
    options = {
        "table_splits": {"tr.txt": "train", "te.txt": "test"},
        "header": False,
        "delimiter": "whitespace",
        "path": 0,
        "path_sub": ["^/+", ""],
        "path_root": "SUN397",
        "exclude": r"^c/church/outdoor/sun_bhenjvsvrtumjuri\.jpg$",
        "path_label": "(?P<label>.+)/[^/]+",
    }
    assert labels_by_name(fetched(tmp_path, files, "table", options)) == {
        "SUN397/a/abbey/sun_a.jpg": ("a/abbey", "train"),
        "SUN397/a/apse/indoor/sun_b.jpg": ("a/apse/indoor", "train"),
        "SUN397/a/abbey/sun_c.jpg": ("a/abbey", "test"),
    }
