"""The labels.csv converters' options, each against a small archive whose answer is known by construction."""

from __future__ import annotations

import bz2
import io
import struct
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from _prereq import import_or_missing
from fetch_fixtures import fetch_one_off, labels_by_item, png_bytes, zip_bytes
from PIL import Image

from lifelong.data.sources import load_source


def convert(tmp_path: Path, files: dict[str, bytes], converter: str, options: dict, name: str = "d"):
    return load_source(f"csv:{fetch_one_off(tmp_path, files, converter, options, name) / 'labels.csv'}")


table = labels_by_item


RNG = np.random.default_rng(0)


def test_join_keep_and_split_values_like_cub(tmp_path):
    images = {f"CUB/images/{c}/{i}.jpg": png_bytes(RNG) for c, i in [("001.Gull", 1), ("001.Gull", 2), ("002.Tern", 3)]}
    images["CUB/images.txt"] = b"1 001.Gull/1.jpg\n2 001.Gull/2.jpg\n3 002.Tern/3.jpg\n"
    images["CUB/image_class_labels.txt"] = b"1 1\n2 1\n3 2\n"
    images["CUB/train_test_split.txt"] = b"1 1\n2 0\n3 1\n"
    options = {
        "table": "CUB/images.txt",
        "delimiter": "whitespace",
        "header": False,
        "path": "1",
        "path_root": "CUB/images",
        "join": [
            {"table": "CUB/image_class_labels.txt", "on": "0", "columns": {"1": "class"}},
            {"table": "CUB/train_test_split.txt", "on": "0", "columns": {"1": "is_train"}},
        ],
        "label": "class",
        "split": "is_train",
        "split_values": {"1": "train", "0": "test"},
    }
    got = table(convert(tmp_path, {"CUB.zip": zip_bytes(images)}, "table", options))
    assert got == {"1.jpg": ("1", "train"), "2.jpg": ("1", "test"), "3.jpg": ("2", "train")}


def test_per_class_lists_with_flags_grouped_into_multi_label_like_pascal_2006(tmp_path):
    members = {f"VOC2006/PNGImages/{i}.png": png_bytes(RNG) for i in ("000001", "000002", "000003")}
    members["VOC2006/ImageSets/car_trainval.txt"] = b"000001  1\n000002 -1\n000003  1\n"
    members["VOC2006/ImageSets/dog_trainval.txt"] = b"000001  1\n000002  1\n000003 -1\n"
    members["VOC2006/ImageSets/car_test.txt"] = b""
    options = {
        "table": "VOC2006/ImageSets/*_*.txt",
        "table_label": r"VOC2006/ImageSets/(?P<label>[a-z]+)_(?P<split>trainval|test)\.txt",
        "split_values": {"trainval": "train"},
        "delimiter": "whitespace",
        "header": False,
        "path": "0",
        "path_root": "VOC2006/PNGImages",
        "path_template": "{}.png",
        "keep": {"1": "1"},
        "group": True,
    }
    got = table(convert(tmp_path, {"voc2006.zip": zip_bytes(members)}, "table", options))
    assert got == {
        "000001.png": (("car", "dog"), "train"),
        "000002.png": (("dog",), "train"),
        "000003.png": (("car",), "train"),
    }


def test_labels_from_listed_paths_per_table_roots_and_maxsplit(tmp_path):
    members = {f"food/images/{c}/{i}.jpg": png_bytes(RNG) for c, i in [("pie", 1), ("pie", 2), ("soup", 3)]}
    members["food/meta/train.txt"] = b"pie/1\nsoup/3\n"
    members["food/meta/test.txt"] = b"pie/2\n"
    options = {
        "table_splits": {"food/meta/train.txt": "train", "food/meta/test.txt": "test"},
        "header": False,
        "delimiter": "whitespace",
        "path": "0",
        "path_root": "food/images",
        "path_template": "{}.jpg",
        "path_label": r"(?P<label>[^/]+)/\d+",
    }
    got = table(convert(tmp_path, {"food.zip": zip_bytes(members)}, "table", options))
    assert got == {"1.jpg": ("pie", "train"), "2.jpg": ("pie", "test"), "3.jpg": ("soup", "train")}
    planes = {f"air/images/{i}.jpg": png_bytes(RNG) for i in (10, 11)}
    planes["air/families_trainval.txt"] = b"10 Boeing 737\n11 Cessna Citation\n"
    options = {
        "tables": [{"table": "air/families_trainval.txt", "table_split": "train"}],
        "header": False,
        "delimiter": "whitespace",
        "maxsplit": 1,
        "path": "0",
        "label": "1",
        "path_root": "air/images",
        "path_template": "{}.jpg",
    }
    got = table(convert(tmp_path, {"air.zip": zip_bytes(planes)}, "table", options, name="air"))
    assert got == {"10.jpg": ("Boeing 737", "train"), "11.jpg": ("Cessna Citation", "train")}


def test_one_hot_columns_with_one_of_and_a_none_label_like_isic(tmp_path):
    members = {f"Train/ISIC_{i}.jpg": png_bytes(RNG) for i in range(3)}
    members["truth.csv"] = b"image_id,melanoma,seborrheic_keratosis\nISIC_0,1.0,0.0\nISIC_1,0.0,0.0\nISIC_2,0.0,1.0\n"
    options = {
        "table": "truth.csv",
        "path": "image_id",
        "path_root": "Train",
        "path_template": "{}.jpg",
        "label_columns": ["melanoma", "seborrheic_keratosis"],
        "one_of": True,
        "none_label": "nevus",
    }
    got = table(convert(tmp_path, {"isic.zip": zip_bytes(members)}, "table", options))
    assert got == {
        "ISIC_0.jpg": ("melanoma", None),
        "ISIC_1.jpg": ("nevus", None),
        "ISIC_2.jpg": ("seborrheic_keratosis", None),
    }


def test_parts_combine_path_labels_and_a_table_like_tiny_imagenet(tmp_path):
    members = {f"tiny/train/{w}/images/{w}_{i}.JPEG": png_bytes(RNG) for w in ("n01", "n02") for i in range(2)}
    members |= {f"tiny/val/images/val_{i}.JPEG": png_bytes(RNG) for i in range(3)}
    members["tiny/val/val_annotations.txt"] = (
        b"val_0.JPEG\tn02\t0\t0\t5\t5\nval_1.JPEG\tn01\t1\t1\t5\t5\nval_2.JPEG\tn02\t0\t0\t1\t1\n"
    )
    options = {
        "parts": [
            {"converter": "pattern", "files": r"tiny/(?P<split>train)/(?P<label>n\d+)/images/[^/]+\.JPEG"},
            {
                "converter": "table",
                "table": "tiny/val/val_annotations.txt",
                "delimiter": "\t",
                "header": False,
                "path": "0",
                "label": "1",
                "path_template": "images/{}",
                "table_split": "val",
            },
        ]
    }
    data = convert(tmp_path, {"tiny.zip": zip_bytes(members)}, "parts", options)
    assert Counter((data.class_names[k], s) for k, s in zip(data.labels, data.official_split, strict=True)) == {
        ("n01", "train"): 2,
        ("n02", "train"): 2,
        ("n02", "val"): 2,
        ("n01", "val"): 1,
    }


def test_min_per_class_train_per_class_and_grid_crops(tmp_path):
    members = {
        f"lfw/{p}/{p}_{i}.jpg": png_bytes(RNG) for p, n in [("Ann", 3), ("Bob", 1), ("Cid", 2)] for i in range(n)
    }
    data = convert(
        tmp_path,
        {"lfw.tgz": zip_bytes(members)},
        "pattern",
        {"files": r"lfw/(?P<label>[^/]+)/[^/]+\.jpg", "min_per_class": 2, "train_per_class": 1},
    )
    assert Counter((data.class_names[k], s) for k, s in zip(data.labels, data.official_split, strict=True)) == {
        ("Ann", "train"): 1,
        ("Ann", "test"): 2,
        ("Cid", "train"): 1,
        ("Cid", "test"): 1,
    }
    plate = np.arange(6 * 9, dtype=np.uint8).reshape(6, 9)
    out = io.BytesIO()
    Image.fromarray(plate).save(out, format="GIF")
    data = convert(
        tmp_path,
        {"D1.gif": out.getvalue()},
        "pattern",
        {"files": r"(?P<label>D\d+)\.gif", "grid": [2, 3]},
        name="brodatz",
    )
    crops = {Path(i).name: np.asarray(data.images[k])[..., 0] for k, i in enumerate(data.ids)}
    assert len(crops) == 6
    np.testing.assert_array_equal(crops["D1_1_2.png"], plate[3:6, 6:9])


def test_hdf5_arrays_with_flattened_column_major_items_and_bgr(tmp_path):
    h5py = import_or_missing("h5py", "fetch")
    images = RNG.integers(0, 256, (3, 4, 5, 3), dtype=np.uint8)  # N, H, W, C (BGR)
    path = tmp_path / "x.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("images", data=images[..., ::-1])  # stored BGR
        f.create_dataset("labels", data=np.array([1, 2, 1]))
    data = convert(
        tmp_path,
        {"pacs.h5": path.read_bytes()},
        "hdf5",
        {"files": {"train": "pacs.h5"}, "images": "images", "labels": "labels", "channels": [2, 1, 0]},
    )
    np.testing.assert_array_equal(np.stack(data.images), images)
    from scipy.io import savemat

    flat = RNG.integers(0, 2, (2, 6), dtype=np.uint8) * 255  # rows of 2x3 images flattened column-major
    out = io.BytesIO()
    savemat(out, {"X": flat, "Y": np.array([[1], [2]])})
    data = convert(
        tmp_path,
        {"sil.mat": out.getvalue()},
        "mat",
        {"files": {"test": "sil.mat"}, "images": "X", "labels": "Y", "shape": [2, 3], "order": "F"},
        name="sil",
    )
    np.testing.assert_array_equal(np.stack(data.images)[..., 0], flat.reshape(2, 3, 2).transpose(0, 2, 1))


def test_mat_table_numbers_with_label_every_and_a_struct_array(tmp_path):
    from scipy.io import savemat

    members = {f"jpg/image_{n:04d}.jpg": png_bytes(RNG) for n in range(1, 7)}
    out = io.BytesIO()
    savemat(out, {"trn1": np.array([[1, 4, 5]]), "tst1": np.array([[2, 6]])})
    members["datasplits.mat"] = out.getvalue()
    options = {
        "mats": [
            {"file": "datasplits.mat", "index": "trn1", "split": "train"},
            {"file": "datasplits.mat", "index": "tst1", "split": "test"},
        ],
        "path_template": "jpg/image_{:04d}.jpg",
        "label_every": 3,
    }
    got = table(convert(tmp_path, {"17flowers.zip": zip_bytes(members)}, "mat_table", options))
    assert got == {
        "image_0001.jpg": ("0", "train"),
        "image_0004.jpg": ("1", "train"),
        "image_0005.jpg": ("1", "train"),
        "image_0002.jpg": ("0", "test"),
        "image_0006.jpg": ("1", "test"),
    }
    annotations = np.zeros(2, dtype=[("relative_im_path", "O"), ("class", "O"), ("test", "O")])
    annotations[0] = ("car_ims/000001.jpg", 3, 0)
    annotations[1] = ("car_ims/000002.jpg", 7, 1)
    out = io.BytesIO()
    savemat(out, {"annotations": annotations})
    cars = {f"car_ims/00000{i}.jpg": png_bytes(RNG) for i in (1, 2)} | {"cars_annos.mat": out.getvalue()}
    options = {
        "mats": [
            {
                "file": "cars_annos.mat",
                "struct": "annotations",
                "paths": "relative_im_path",
                "labels": "class",
                "split": {"field": "test", "values": {"0": "train", "1": "test"}},
            }
        ]
    }
    got = table(convert(tmp_path, {"cars.zip": zip_bytes(cars)}, "mat_table", options, name="cars"))
    assert got == {"000001.jpg": ("3", "train"), "000002.jpg": ("7", "test")}


def test_text_rows_libsvm_from_a_bz2_file_and_dense_one_hot_rows(tmp_path):
    pixels = np.array([[-1.0, 1.0], [0.0, 1.0]])
    line = "3 " + " ".join(f"{i + 1}:{v}" for i, v in enumerate(pixels.reshape(-1)) if v != 0) + "\n"
    data = convert(
        tmp_path,
        {"usps.bz2": bz2.compress(line.encode())},
        "text_rows",
        {"decompress": True, "files": {"train": "usps"}, "format": "libsvm", "shape": [2, 2], "range": [-1, 1]},
    )
    assert data.class_names == ("3",)
    np.testing.assert_array_equal(np.asarray(data.images[0])[..., 0], [[0, 255], [128, 255]])
    rows = b"1 0 0 1 0 0 1\n0 1 1 0 1 0 0\n"  # 4 pixels then a one-hot block of 3
    data = convert(
        tmp_path,
        {"semeion.data": rows},
        "text_rows",
        {"files": {"all": "semeion.data"}, "shape": [2, 2], "label_columns": [4, 7], "range": [0, 1]},
        name="sem",
    )
    assert [data.class_names[k] for k in data.labels] == ["2", "0"] and data.official_split is None


def test_a_corrupt_zip_member_is_an_error_naming_it_or_is_skipped_and_recorded_when_the_entry_says(tmp_path):
    import json
    import zipfile

    members = {f"art/{c}/{i}.png": png_bytes(RNG) for c, i in [("a", 0), ("a", 1), ("b", 2)]}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    raw = bytearray(buffer.getvalue())
    with zipfile.ZipFile(io.BytesIO(bytes(raw))) as zf:
        info = zf.getinfo("art/a/1.png")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    raw[start : start + 8] = b"\xff" * 8  # damage the member's compressed bytes
    options = {"files": r"art/(?P<label>[ab])/\d+\.png"}
    with pytest.raises(ValueError, match=r"member 'art/a/1.png' is corrupt.*skip_bad_members"):
        convert(tmp_path, {"w.zip": bytes(raw)}, "pattern", options)
    data = convert(tmp_path, {"w.zip": bytes(raw)}, "pattern", {**options, "skip_bad_members": True}, name="ok")
    assert sorted(Path(i).name for i in data.ids) == ["0.png", "2.png"]
    provenance = json.loads((tmp_path / "root" / "ok" / "provenance.json").read_text())
    assert provenance["skipped_members"] == ["w.zip:art/a/1.png"]


def gnt_record(label: str, pixels: np.ndarray) -> bytes:
    h, w = pixels.shape
    return struct.pack("<I2sHH", w * h + 10, label.encode("gb2312"), w, h) + pixels.astype(np.uint8).tobytes()


def norb_matrix(array: np.ndarray) -> bytes:
    magic = {np.dtype(np.uint8): 0x1E3D4C55, np.dtype(np.int32): 0x1E3D4C54}[array.dtype]
    dims = list(array.shape) + [1] * (3 - array.ndim)
    return (
        struct.pack(f"<ii{len(dims)}i", magic, array.ndim, *dims)
        + array.astype(array.dtype.newbyteorder("<")).tobytes()
    )


def test_gnt_records_are_characters_with_inverted_ink(tmp_path):
    glyphs = [
        ("啊", RNG.integers(0, 256, (3, 4), dtype=np.uint8)),
        ("阿", RNG.integers(0, 256, (5, 2), dtype=np.uint8)),
    ]
    file = b"".join(gnt_record(label, pixels) for label, pixels in glyphs)
    data = convert(
        tmp_path, {"Gnt1.1Test.zip": zip_bytes({"Gnt1.1Test/1001-t.gnt": file})}, "gnt", {"files": {"test": "*.gnt"}}
    )
    assert sorted(data.class_names) == ["啊", "阿"]
    for (label, pixels), image, k in zip(glyphs, data.images, data.labels, strict=True):
        assert data.class_names[k] == label
        np.testing.assert_array_equal(np.asarray(image)[..., 0], 255 - pixels)
    with pytest.raises(ValueError, match="is cut short|says"):
        convert(tmp_path, {"bad.zip": zip_bytes({"x.gnt": file[:-3]})}, "gnt", {"files": {"test": "*.gnt"}}, name="bad")


def test_norb_matrices_take_the_left_view_and_file_each_image_under_its_instance(tmp_path):
    import gzip

    pairs = RNG.integers(0, 256, (3, 2, 4, 4), dtype=np.uint8)
    cats = np.array([0, 4, 2], dtype=np.int32)
    info = np.array([[4, 0, 0, 0], [7, 1, 2, 3], [9, 0, 4, 1]], dtype=np.int32)
    stem = "smallnorb-5x46789x9x18x6x2x96x96-training"
    files = {
        f"{stem}-{k}.mat.gz": gzip.compress(norb_matrix(a)) for k, a in (("dat", pairs), ("cat", cats), ("info", info))
    }
    data = convert(
        tmp_path,
        files,
        "norb",
        {
            "decompress": True,
            "parts": [{"split": "train", "dat": "*-dat.mat", "cat": "*-cat.mat", "info": "*-info.mat"}],
        },
    )
    np.testing.assert_array_equal(np.stack([np.asarray(im)[..., 0] for im in data.images]), pairs[:, 0])
    assert [data.class_names[k] for k in data.labels] == ["0", "4", "2"]
    assert [Path(i).parent.name for i in data.ids] == ["instance4", "instance7", "instance9"]


def test_coco_annotations_label_whole_images_or_crop_their_boxes(tmp_path):
    import json

    photo = RNG.integers(0, 256, (20, 30, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(photo).save(out, format="PNG")
    content = {
        "categories": [{"id": 1, "name": "bobcat"}, {"id": 7, "name": "empty"}],
        "images": [{"id": "a", "file_name": "a.png"}, {"id": "b", "file_name": "b.png"}],
        "annotations": [
            {"id": 1, "image_id": "a", "category_id": 1, "bbox": [2, 3, 10, 12]},
            {"id": 2, "image_id": "b", "category_id": 7, "bbox": [0, 0, 5, 5]},
        ],
    }
    members = {
        "imgs/a.png": out.getvalue(),
        "imgs/b.png": out.getvalue(),
        "ann/train.json": json.dumps(content).encode(),
    }
    data = convert(
        tmp_path,
        {"cct.zip": zip_bytes(members)},
        "coco",
        {"annotations": {"train": "ann/train.json"}, "path_root": "imgs"},
    )
    assert {Path(i).name: data.class_names[k] for i, k in zip(data.ids, data.labels, strict=True)} == {
        "a.png": "bobcat",
        "b.png": "empty",
    }
    crops = convert(
        tmp_path,
        {"coco.zip": zip_bytes(members)},
        "coco",
        {"annotations": {"train": "ann/train.json"}, "path_root": "imgs", "mode": "box", "min_box": 8, "label": "id"},
        name="crops",
    )
    assert [crops.class_names[k] for k in crops.labels] == ["1"]  # the 5x5 box is under min_box
    np.testing.assert_array_equal(np.asarray(crops.images[0]), photo[3:15, 2:12])


def test_voc_actions_crop_each_person_box_with_its_flagged_actions(tmp_path):
    photo = RNG.integers(0, 256, (20, 30, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(photo).save(out, format="PNG")
    person = (
        "<object><name>person</name><bndbox><xmin>{}</xmin><ymin>{}</ymin><xmax>{}</xmax><ymax>{}</ymax></bndbox>"
        "<actions><jumping>{}</jumping><phoning>{}</phoning><other>0</other></actions></object>"
    )
    people = person.format(1, 2, 11, 12, 1, 0) + person.format(5, 5, 25, 15, 1, 1)
    xml = f"<annotation><filename>2011_1.png</filename>{people}</annotation>"
    members = {
        "VOCdevkit/VOC2012/JPEGImages/2011_1.png": out.getvalue(),
        "VOCdevkit/VOC2012/JPEGImages/2011_2.png": out.getvalue(),
        "VOCdevkit/VOC2012/Annotations/2011_1.xml": xml.encode(),
        "VOCdevkit/VOC2012/Annotations/2011_2.xml": b"<annotation><filename>2011_2.png</filename></annotation>",
        "VOCdevkit/VOC2012/ImageSets/Action/jumping_trainval.txt": b"2011_1  1\n",
        "VOCdevkit/VOC2012/ImageSets/Action/phoning_trainval.txt": b"2011_1  1\n",
    }
    data = convert(
        tmp_path,
        {"VOCtrainval.tar": zip_bytes(members)},
        "voc",
        {"mode": "actions", "ids_from": "ImageSets/Action/*_trainval.txt"},
    )
    got = table(data)
    assert got == {"2011_1_0.png": (("jumping",), None), "2011_1_1.png": (("jumping", "phoning"), None)}
    first = next(k for k, i in enumerate(data.ids) if i.endswith("2011_1_0.png"))
    np.testing.assert_array_equal(np.asarray(data.images[first]), photo[2:12, 1:11])


def test_two_fetches_at_once_keep_their_own_file_name_index(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    def archive(tag: str) -> dict[str, bytes]:
        members = {f"deep/{tag}/{i}.png": png_bytes(RNG) for i in range(30)}
        members["list.csv"] = ("path,label\n" + "".join(f"{i}.png,{tag}\n" for i in range(30))).encode()
        return {f"{tag}.zip": zip_bytes(members)}

    options = {"table": "list.csv", "path_search": True, "label": "label"}
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda tag: convert(tmp_path, archive(tag), "table", options, name=tag), ["a", "b"]))
    assert [d.class_names for d in done] == [("a",), ("b",)] and all(len(d.ids) == 30 for d in done)
