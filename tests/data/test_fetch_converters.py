"""The labels.csv converters on archives with real datasets' layouts, read back through the csv source."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest
from fetch_fixtures import coil20_archive, digest, oxford_pets_archives, svhn_mat_files, voc_archive, write_files
from PIL import Image

from lifelong.data.fetch import FetchRequest, fetch
from lifelong.data.fetch.manifest import Artefact, DatasetEntry
from lifelong.data.sources import detect_source, load_source


def fetched(tmp_path: Path, name: str, files: dict[str, bytes], converter: str, options: dict):
    artefacts = tuple(Artefact(f, sha256=digest(b)) for f, b in files.items())
    entry = DatasetEntry(
        name=name, title=name, access="manual", converter=converter, artefacts=artefacts, options=options
    )
    outcome = fetch(FetchRequest(entry, tmp_path / "root", from_dir=write_files(tmp_path / f"dl-{name}", files)))
    assert detect_source(outcome.path) == f"csv:{outcome.path / 'labels.csv'}"
    return load_source(f"csv:{outcome.path / 'labels.csv'}"), outcome.path


def by_name(data) -> dict[str, int]:
    return {Path(i).name: int(k) for i, k in zip(data.ids, data.labels, strict=True)}


def test_pattern_takes_classes_from_file_names_and_ignores_what_does_not_match(tmp_path):
    archive, truth = coil20_archive()
    data, _ = fetched(tmp_path, "coil20", {"coil-20-proc.zip": archive}, "pattern",
                      {"files": r"coil-20-proc/obj(?P<label>\d+)__\d+\.png"})  # fmt: skip
    assert len(data.ids) == len(truth)  # Thumbs.db left out
    assert {n: data.class_names[k] for n, k in by_name(data).items()} == {
        Path(p).name: label for p, label in truth.items()
    }
    original = Image.open(io.BytesIO(zipfile.ZipFile(io.BytesIO(archive)).read("coil-20-proc/obj2__1.png")))
    index = next(k for k, i in enumerate(data.ids) if i.endswith("obj2__1.png"))
    np.testing.assert_array_equal(data.images[index][..., 0], np.asarray(original))


def test_pattern_split_groups_are_mapped_and_unknown_ones_named(tmp_path):
    archive, _ = coil20_archive()
    data, _ = fetched(tmp_path, "coil", {"c.zip": archive}, "pattern",
                      {"files": r"coil-20-proc/obj(?P<label>\d+)__(?P<split>[0-3])\.png",
                       "splits": {"0": "test", "1": "train", "2": "train", "3": "train"}})  # fmt: skip
    assert sorted(set(data.official_split)) == ["test", "train"]
    assert (data.official_split == "test").sum() == 3
    with pytest.raises(ValueError, match="split '0' is neither train, val nor test"):
        fetched(tmp_path, "coil_bad", {"c.zip": archive}, "pattern",
                {"files": r"coil-20-proc/obj(?P<label>\d+)__(?P<split>[0-3])\.png"})  # fmt: skip
    assert not (tmp_path / "root" / "coil_bad").exists()


def test_table_reads_oxford_pets_lists_one_file_per_split(tmp_path):
    files, truth = oxford_pets_archives()
    options = {"table_splits": {"annotations/trainval.txt": "train", "annotations/test.txt": "test"},
               "delimiter": "whitespace", "header": False, "path": 0, "label": 1, "skip_rows": 0,
               "path_template": "images/{}.jpg", "path_root": "/", "comment": "#"}  # fmt: skip
    with pytest.raises(
        ValueError, match="not in the artefacts"
    ):  # the '#' header lines are rows without comment support
        fetched(tmp_path, "pets_raw", files, "table", {k: v for k, v in options.items() if k != "comment"})
    data, _ = fetched(tmp_path, "pets", files, "table", options)
    got = {
        Path(i).stem: (data.class_names[k], s)
        for i, k, s in zip(data.ids, data.labels, data.official_split, strict=True)
    }
    assert got == truth


def test_table_with_a_header_and_label_columns_is_multi_label(tmp_path):
    from fetch_fixtures import png_bytes, zip_bytes

    rng = np.random.default_rng(1)
    members = {f"ISIC-2017_Training_Data/ISIC_{i:07d}.jpg": png_bytes(rng) for i in range(4)}
    members["ISIC-2017_Training_Part3_GroundTruth.csv"] = (
        b"image_id,melanoma,seborrheic_keratosis\nISIC_0000000,1.0,0.0\nISIC_0000001,0.0,1.0\n"
        b"ISIC_0000002,0.0,0.0\nISIC_0000003,1.0,1.0\n"
    )
    data, _ = fetched(tmp_path, "isic", {"train.zip": zip_bytes(members)}, "table",
                      {"table": "*GroundTruth.csv", "path": "image_id", "path_root": "ISIC-2017_Training_Data",
                       "path_template": "{}.jpg", "label_columns": ["melanoma", "seborrheic_keratosis"]})  # fmt: skip
    assert data.kind.value == "multi-label" and data.class_names == ("melanoma", "seborrheic_keratosis")
    rows = {Path(i).stem: tuple(int(v) for v in row) for i, row in zip(data.ids, data.labels, strict=True)}
    assert rows == {"ISIC_0000000": (1, 0), "ISIC_0000001": (0, 1), "ISIC_0000002": (0, 0), "ISIC_0000003": (1, 1)}


def test_voc_annotations_give_each_image_its_object_classes_and_the_listed_split(tmp_path):
    archive, truth = voc_archive()
    data, _ = fetched(tmp_path, "pascal_2007", {"VOCtrainval_06-Nov-2007.tar": archive}, "voc",
                      {"splits": {"train": "ImageSets/Main/train.txt", "val": "ImageSets/Main/val.txt"}})  # fmt: skip
    got = {
        Path(i).stem: (sorted(data.class_names[k] for k in np.flatnonzero(row)), split)
        for i, row, split in zip(data.ids, data.labels, data.official_split, strict=True)
    }
    assert got == truth


def test_mat_arrays_become_png_files_with_the_svhn_axis_order_and_label_map(tmp_path):
    files, arrays = svhn_mat_files()
    data, _ = fetched(tmp_path, "svhn", files, "mat",
                      {"files": {"train": "train_32x32.mat", "test": "test_32x32.mat"}, "images": "X", "labels": "y",
                       "axes": "HWCN", "label_map": {"10": "0"}})  # fmt: skip
    for split in ("train", "test"):
        images, labels = arrays[split]
        chosen = np.flatnonzero(data.official_split == split)
        np.testing.assert_array_equal(np.stack([data.images[i] for i in chosen]), images)
        assert [int(data.class_names[k]) for k in data.labels[chosen]] == labels.tolist()


def test_imagenet_streams_the_per_class_tars_and_labels_validation_from_the_devkit(tmp_path):
    from collections import Counter

    from fetch_fixtures import imagenet_archives

    from lifelong.data.fetch import load_manifest

    files, expected = imagenet_archives()
    entry = load_manifest()["imagenet"]
    assert entry.access == "manual" and entry.licence.requires_acceptance
    assert sorted(a.file for a in entry.artefacts) == sorted(files)
    artefacts = tuple(Artefact(f, sha256=digest(b)) for f, b in files.items())
    mini = DatasetEntry(name="imagenet", title="ImageNet", access="manual", converter="imagenet", artefacts=artefacts)
    outcome = fetch(FetchRequest(mini, tmp_path / "root", from_dir=write_files(tmp_path / "dl", files)))
    data = load_source(f"folder:{outcome.path}")
    for split in ("train", "val"):
        chosen = data.labels[data.official_split == split]
        assert Counter(data.class_names[k] for k in chosen) == expected[split]
