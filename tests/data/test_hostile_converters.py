"""Hostile converter inputs: paths from options, annotation files, table cells and archive members that would lead
out of the dataset are refused by the one containment check (exit 2 at the CLI), and nothing outside the fetch's
staging folder is written, moved or read into the output."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
from fetch_fixtures import mnist_files, png_bytes, tar_bytes, write_files, zip_bytes
from PIL import Image

from lifelong.data.fetch.containment import UnsafePathError

RNG = np.random.default_rng(38)
UP = "../" * 40  # climbs past the filesystem root from wherever a converter stands


def jpeg_bytes(shape=(10, 12, 3)) -> bytes:
    out = io.BytesIO()
    Image.fromarray(RNG.integers(0, 256, shape, dtype=np.uint8)).save(out, format="JPEG")
    return out.getvalue()


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A file of the host, outside the artefacts and the data root (an image, so a converter would take it)."""
    path = tmp_path / "host" / "secret.jpg"
    path.parent.mkdir()
    path.write_bytes(jpeg_bytes())
    return path


def snapshot(tmp_path: Path) -> dict[str, str]:
    """Every file under tmp_path but the data root's staging folder (.fetch): path -> sha256 of its bytes."""
    staging = tmp_path / "root" / ".fetch"
    return {
        p.relative_to(tmp_path).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in tmp_path.rglob("*")
        if p.is_file() and staging not in p.parents
    }


def convert(tmp_path: Path, files: dict[str, bytes], converter: str, options: dict) -> Path:
    """Run a converter in the folders a fetch gives it (root/.fetch/work/d-PID/{scratch,d}); the output folder.
    The installer would remove them after an error: kept here, to look at what the converter wrote."""
    from lifelong.data.fetch.conversion import Conversion
    from lifelong.data.fetch.converters import CONVERTERS

    folder = write_files(tmp_path / "dl-d", files)
    work = tmp_path / "root" / ".fetch" / "work" / "d-1"
    (work / "scratch").mkdir(parents=True)
    (work / "d").mkdir()
    CONVERTERS[converter](Conversion("d", {n: folder / n for n in files}, work / "scratch", work / "d", options))
    return work / "d"


def refused(tmp_path: Path, files: dict[str, bytes], converter: str, options: dict, match: str) -> None:
    """The converter fails with the containment check's error; outside the fetch's staging folder nothing changed,
    and no file it wrote holds the bytes of a file outside the artefacts."""
    write_files(tmp_path / "dl-d", files)  # the artefacts' folder exists before the snapshot
    before = snapshot(tmp_path)
    with pytest.raises(UnsafePathError, match=match) as caught:
        convert(tmp_path, files, converter, options)
    assert str(caught.value).startswith("d: ") and "refused" in str(caught.value)
    assert snapshot(tmp_path) == before
    outside = set(before.values()) - {hashlib.sha256(b).hexdigest() for b in files.values()}
    written = [p for p in (tmp_path / "root" / ".fetch" / "work" / "d-1" / "d").rglob("*") if p.is_file()]
    assert not {hashlib.sha256(p.read_bytes()).hexdigest() for p in written} & outside


def test_idx_rename_that_climbs_out_is_refused(tmp_path):
    files, _ = mnist_files()
    escape = "../../../../../escaped-images-idx3-ubyte.gz"  # from out/ (root/.fetch/work/d-PID/d) up to tmp_path
    refused(
        tmp_path,
        files,
        "idx",
        {"rename": {"train-images-idx3-ubyte.gz": escape}},
        r"option rename\['train-images-idx3-ubyte.gz'\] '\.\./.*escaped-images-idx3-ubyte.gz' climbs",
    )
    assert not (tmp_path / "escaped-images-idx3-ubyte.gz").exists()


def test_idx_rename_to_an_absolute_path_is_refused(tmp_path):
    files, _ = mnist_files()
    target = tmp_path / "abs-images-idx3-ubyte.gz"
    refused(
        tmp_path,
        files,
        "idx",
        {"rename": {"train-images-idx3-ubyte.gz": str(target)}},
        "option rename.* is an absolute path",
    )
    assert not target.exists()


def voc_tar(filenames: dict[str, str], actions: bool = False) -> bytes:
    """VOC2007's layout: Annotations/<id>.xml naming <filename> (as given), JPEGImages/<id>.jpg."""
    box = "<bndbox><xmin>1</xmin><ymin>1</ymin><xmax>6</xmax><ymax>6</ymax></bndbox>"
    extra = f"{box}<actions><jumping>1</jumping></actions>" if actions else ""
    members = {}
    for image_id, filename in filenames.items():
        members[f"VOCdevkit/VOC2007/Annotations/{image_id}.xml"] = (
            f"<annotation><filename>{filename}</filename><object><name>person</name>{extra}</object></annotation>"
        ).encode()
        members[f"VOCdevkit/VOC2007/JPEGImages/{image_id}.jpg"] = jpeg_bytes()
    return tar_bytes(members, "w")


@pytest.mark.parametrize("mode", ["labels", "actions"])
def test_voc_filename_that_climbs_out_is_refused(tmp_path, host, mode):
    """Without the check, labels mode moves the host file (labels.csv then points outside), actions mode crops it
    into the installed dataset."""
    archive = voc_tar({"000001": "000001.jpg", "000005": UP + str(host).lstrip("/")}, actions=mode == "actions")
    options = {"root": "VOCdevkit/VOC2007"} | ({"mode": "actions"} if mode == "actions" else {})
    refused(
        tmp_path,
        {"voc.tar": archive},
        "voc",
        options,
        r"VOC <filename> in VOCdevkit/VOC2007/Annotations/000005.xml '(\.\./)+.*secret.jpg' climbs",
    )


def test_voc_absolute_filename_is_refused(tmp_path, host):
    archive = voc_tar({"000001": str(host)})
    refused(tmp_path, {"voc.tar": archive}, "voc", {}, "VOC <filename> in .*000001.xml .* is an absolute path")


def folder_zip() -> bytes:
    return zip_bytes({f"D/train/{c}/{i}.png": png_bytes(RNG) for c in ("cat", "dog") for i in range(2)})


@pytest.mark.parametrize(
    ("converter", "options", "match"),
    [
        ("folder", {"splits": {"{tmp}/escaped": "D/train"}}, r"option splits \(a split name\) .* is an absolute path"),
        ("folder", {"root": "{tmp}/host"}, "option root .* is an absolute path"),
        ("folder", {"splits": {"train": "../../../../../../host"}}, r"option splits.train .* climbs out"),
        ("table", {"table": "D/t.csv", "label": "label", "path_root": "{tmp}/host"}, "option path_root .* absolute"),
        ("voc", {"splits": {"train": "{tmp}/host/list.txt"}}, r"option splits.train .* is an absolute path"),
        ("voc", {"root": "../../../../../../host"}, "option root .* climbs out"),
        ("voc", {"ids_from": "../../../../../../../../host/*.txt"}, "option ids_from .* climbs out"),
    ],
)
def test_options_naming_a_path_outside_are_refused(tmp_path, host, converter, options, match):
    (host.parent / "list.txt").write_text("000001\n")
    options = json.loads(json.dumps(options).replace("{tmp}", str(tmp_path)))
    files = {"f.zip": folder_zip()}
    if converter == "table":
        files = {"f.zip": zip_bytes({"D/t.csv": b"path,label\nsecret.jpg,cat\n"})}
    if converter == "voc":
        files = {"voc.tar": voc_tar({"000001": "000001.jpg"})}
    refused(tmp_path, files, converter, options, match)
    assert not (tmp_path / "escaped").exists()


@pytest.mark.parametrize("cell", ["UP", "../images/a.png", "images/../../images/a.png"])
def test_table_cell_with_dot_dot_is_refused(tmp_path, host, cell):
    """A `..` in a path cell is refused even when the path would land back inside the artefacts."""
    cell = UP + str(host).lstrip("/") if cell == "UP" else cell
    members = {"data/images/a.png": png_bytes(RNG), "data/lists/labels.csv": f"path,label\n{cell},cat\n".encode()}
    refused(
        tmp_path,
        {"t.zip": zip_bytes(members)},
        "table",
        {"table": "data/lists/labels.csv", "label": "label"},
        r"image path of labels.csv:2 '.*' climbs out with '\.\.'",
    )


@pytest.mark.parametrize("search", [False, True])
@pytest.mark.parametrize("cell", ["HOST", "/etc/hostname"])
def test_table_cell_naming_a_host_file_is_refused(tmp_path, host, cell, search):
    cell = str(host) if cell == "HOST" else cell
    members = {"imgs/a.png": png_bytes(RNG), "labels.csv": f"path,label\nimgs/a.png,cat\n{cell},dog\n".encode()}
    refused(
        tmp_path,
        {"t.zip": zip_bytes(members)},
        "table",
        {"table": "labels.csv", "label": "label", "path_root": "/", "path_search": search},
        "image path of labels.csv:3 .* is an absolute path",
    )


def test_coco_file_name_that_climbs_out_is_refused(tmp_path, host):
    content = {
        "categories": [{"id": 1, "name": "cat"}],
        "images": [{"id": 1, "file_name": "a.png"}, {"id": 2, "file_name": UP + str(host).lstrip("/")}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 4, 4]},
            {"id": 2, "image_id": 2, "category_id": 1, "bbox": [0, 0, 4, 4]},
        ],
    }
    members = {"imgs/a.png": png_bytes(RNG), "ann.json": json.dumps(content).encode()}
    refused(
        tmp_path,
        {"c.zip": zip_bytes(members)},
        "coco",
        {"annotations": {"train": "ann.json"}, "path_root": "imgs"},
        "file_name in ann.json .* climbs out",
    )


def test_coco_box_id_that_climbs_out_is_refused(tmp_path):
    content = {
        "categories": [{"id": 1, "name": "cat"}],
        "images": [{"id": 1, "file_name": "a.png"}],
        "annotations": [{"id": "/../../../../../../../escaped", "image_id": 1, "category_id": 1, "bbox": [0, 0, 4, 4]}],
    }
    members = {"imgs/a.png": png_bytes(RNG, (9, 9, 3)), "ann.json": json.dumps(content).encode()}
    refused(
        tmp_path,
        {"c.zip": zip_bytes(members)},
        "coco",
        {"annotations": {"train": "ann.json"}, "path_root": "imgs", "mode": "box"},
        r"image path \(its annotation id\) .* climbs out",
    )
    assert not list(tmp_path.glob("escaped*"))


def test_mat_table_path_that_climbs_out_is_refused(tmp_path, host):
    from scipy.io import savemat

    out = io.BytesIO()
    paths = np.array(["a.png", UP + str(host).lstrip("/")], dtype=object)
    savemat(out, {"files": paths.reshape(-1, 1), "labels": np.array([[1], [2]])})
    members = {"imgs/a.png": png_bytes(RNG), "list.mat": out.getvalue()}
    options = {"mats": [{"file": "list.mat", "paths": "files", "labels": "labels"}], "path_root": "imgs"}
    refused(tmp_path, {"m.zip": zip_bytes(members)}, "mat_table", options, "image path in list.mat .* climbs out")


def test_side_file_template_that_leads_out_is_not_read(tmp_path, host):
    (host.parent / "count.txt").write_text("1\n2\n3\n")
    members = {f"T/{n}.jpg": png_bytes(RNG) for n in ("a", "b")}
    options = {
        "files": r"T/(?P<stem>\w+)\.jpg",
        "count": {"lines": str(host.parent / "count.txt")},
        "max_size": 5,
        "classes": 2,
    }
    refused(tmp_path, {"t.zip": zip_bytes(members)}, "counts", options, r"side file of T/a.jpg .* is an absolute path")


def test_split_names_that_climb_out_of_the_image_folder_are_refused(tmp_path):
    """A split name (a manifest key) becomes part of every PNG path save_png writes: checked there once."""
    from scipy.io import savemat

    out = io.BytesIO()
    savemat(out, {"X": RNG.integers(0, 256, (4, 4, 2), dtype=np.uint8), "y": np.array([[1], [2]])})
    options = {"files": {"../../../../../../escaped": "x.mat"}, "images": "X", "labels": "y", "axes": "HWN"}
    refused(tmp_path, {"x.mat": out.getvalue()}, "mat", options, "image path .* climbs out")
    assert not (tmp_path / "escaped").exists()


def test_imagenet_member_names_that_climb_out_are_refused(tmp_path):
    from fetch_fixtures import imagenet_archives

    files, _ = imagenet_archives()
    inner = tar_bytes({"../../../../../../../escaped.JPEG": jpeg_bytes()}, "w")
    files["ILSVRC2012_img_train.tar"] = tar_bytes({"n01440764.tar": inner}, "w")
    refused(
        tmp_path,
        files,
        "imagenet",
        {},
        r"member name in n01440764.tar in ILSVRC2012_img_train.tar '.*escaped.JPEG' climbs",
    )
    assert not list(tmp_path.glob("escaped*"))


def test_the_cli_exits_2_naming_the_dataset_the_option_and_the_value(tmp_path):
    from fetch_fixtures import digest, manifest_toml
    from typer.testing import CliRunner

    from lifelong.cli import app

    files, _ = mnist_files()
    artefacts = [{"file": f, "urls": [f"https://example.org/{f}"], "sha256": digest(b)} for f, b in files.items()]
    entry = {"name": "lab_digits", "title": "Lab digits", "access": "auto", "converter": "idx", "artefacts": artefacts}
    escape = "../../../../escaped-images-idx3-ubyte.gz"
    manifest = tmp_path / "lab.toml"
    manifest.write_text(
        manifest_toml([entry]) + f'[dataset.options]\nrename = {{ "{next(iter(files))}" = "{escape}" }}\n'
    )
    args = [
        "data",
        "fetch",
        "lab_digits",
        "--manifest",
        str(manifest),
        "--from",
        str(write_files(tmp_path / "have", files)),
    ]
    result = CliRunner().invoke(app, [*args, "--data-root", str(tmp_path / "root")])
    assert result.exit_code == 2, result.output
    assert "lab_digits: option rename['train-images-idx3-ubyte.gz']" in result.output and escape in result.output
    assert not list(tmp_path.rglob("escaped-*"))
