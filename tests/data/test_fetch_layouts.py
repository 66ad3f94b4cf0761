"""Every manifest dataset with a layout fixture converts a miniature of its real artefacts into a loadable folder.

A fixture `tests/data/fetch_layouts/<dataset>.toml` describes the real artefacts' members (image paths, side
files as text, MATLAB arrays) at a tiny size, and what the converted dataset must hold (images per class and per
split). The test builds those archives, runs the package manifest's entry for the dataset (its converter and
options; the checksums are the miniature's), and loads the result through the source `lifelong data status`
would use. `$LIFELONG_FETCH_EXTRA_MANIFEST` adds a manifest file while entries are being written.

    [[archive]]
    file = "coil-20-proc.zip"             # name in the manifest: .zip .tar .tar.gz .tgz .rar .tar.Z .gz .bz2 .Z, plain
    images = ["coil-20-proc/obj1__0.png"]  # members written as tiny images (format from the suffix)
    text = { "coil-20-proc/labels.txt" = "..." }
    mats = { "data/train.mat" = { X = { shape = [32, 32, 3, 2] }, y = { values = [1, 10] } } }  # strings: a cell array
    idx = { "train-labels-idx1-ubyte" = { values = [3, 1] }, "train-images-idx3-ubyte" = { shape = [2, 28, 28] } }
    h5 = { "x.h5" = { x = { shape = [2, 96, 96, 3] }, y = { values = [0, 1] } } }     # HDF5 (h5py)
    hex = { "data/a.gnt" = "0e000000b0a1020002000102030405" }                         # any bytes, as hex
    noise = { "package/Images/img1.sdt" = 1048576 }                                   # that many random bytes
    nested = { "inner/n01440764.tar" = { images = ["a.JPEG"] }, "d/t10k-labels-idx1-ubyte.gz" = { idx = {...} } }
    # (an archive or a .gz file inside the artefact, built from the same keys; names ending .gz hold one member)
    [expect]
    classes = { "1" = 1 }                  # images per class (multi-label: images carrying each class)
    splits = { train = 1 }                 # optional: images per official split

For a Nevis'22 dataset the converted data must also suit its task's split rule (e.g. `train_test` needs an
official train and test split): the rule is applied as the stream applies it.
"""

from __future__ import annotations

import bz2
import gzip
import io
import os
import tarfile
import tomllib
import zipfile
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from _prereq import import_or_missing, missing
from archive_writers import compress_bytes, rar_bytes
from fetch_fixtures import digest
from PIL import Image
from support import idx_bytes

from lifelong.data.build import item_groups
from lifelong.data.fetch import FetchRequest, fetch, load_manifest
from lifelong.data.fetch.archives_libarchive import MissingLibarchive, libarchive
from lifelong.data.fetch.manifest import Artefact
from lifelong.data.sources import detect_source, load_source
from lifelong.data.splits import split_indices
from lifelong.suites.nevis_tasks import FULL_TASKS

LAYOUTS = Path(__file__).parent / "fetch_layouts"
FIXTURES = sorted(LAYOUTS.glob("*.toml"))
NEVIS_DATASETS = {task.name: task for task in FULL_TASKS}
FORMATS = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG", ".bmp": "BMP", ".ppm": "PPM", ".pgm": "PPM"}
FORMATS |= {".tif": "TIFF", ".tiff": "TIFF", ".gif": "GIF", ".pbm": "PPM"}


def image_bytes(name: str, rng: np.random.Generator) -> bytes:
    suffix = Path(name).suffix.lower()
    grey = suffix in (".pgm", ".pbm")
    pixels = rng.integers(0, 256, (6, 7) if grey else (6, 7, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format=FORMATS[suffix])
    return out.getvalue()


def mat_bytes(spec: dict, rng: np.random.Generator) -> bytes:
    from scipy.io import savemat

    out = io.BytesIO()
    savemat(out, {key: array_of(array, rng) for key, array in spec.items()})
    return out.getvalue()


def array_of(spec: dict, rng: np.random.Generator) -> np.ndarray:
    if "values" in spec and all(isinstance(v, str) for v in spec["values"]):  # a MATLAB cell array of strings
        cells = np.empty((len(spec["values"]), 1), dtype=object)
        cells[:, 0] = spec["values"]
        return cells
    if "values" in spec:
        return np.asarray(spec["values"]).reshape(spec.get("shape", [-1]))
    return rng.integers(0, 256, spec["shape"], dtype=np.uint8)


def h5_bytes(spec: dict, rng: np.random.Generator, folder: Path) -> bytes:
    h5py = import_or_missing("h5py", "fetch")
    path = folder / f"fixture-{rng.integers(1 << 30)}.h5"
    with h5py.File(path, "w") as f:
        for key, array in spec.items():
            f.create_dataset(key, data=array_of(array, rng))
    return path.read_bytes()


def members_of(archive: dict, rng: np.random.Generator, scratch: Path) -> dict[str, bytes]:
    members = {name: image_bytes(name, rng) for name in archive.get("images", [])}
    members |= {name: h5_bytes(spec, rng, scratch) for name, spec in archive.get("h5", {}).items()}
    members |= {name: pack(name, members_of(spec, rng, scratch)) for name, spec in archive.get("nested", {}).items()}
    members |= {name: idx_bytes(array_of(spec, rng)) for name, spec in archive.get("idx", {}).items()}
    members |= {name: text.encode() for name, text in archive.get("text", {}).items()}
    members |= {name: bytes.fromhex(text) for name, text in archive.get("hex", {}).items()}
    members |= {name: rng.bytes(int(size)) for name, size in archive.get("noise", {}).items()}
    members |= {name: mat_bytes(spec, rng) for name, spec in archive.get("mats", {}).items()}
    return members


def pack(file: str, members: dict[str, bytes]) -> bytes:
    lower = file.lower()
    buffer = io.BytesIO()
    if lower.endswith((".rar", ".z")):  # written here without it, but only libarchive unpacks them
        try:
            libarchive()
        except MissingLibarchive as exc:
            missing(str(exc))
    if lower.endswith(".rar"):
        return rar_bytes(members)
    if file.endswith(".tar.Z"):
        return compress_bytes(pack(file[:-2], members))
    if lower.endswith(".zip"):
        with zipfile.ZipFile(buffer, "w") as zf:
            for name, data in members.items():
                zf.writestr(name, data)
    elif lower.endswith((".tar", ".tar.gz", ".tgz")):
        with tarfile.open(fileobj=buffer, mode="w" if lower.endswith(".tar") else "w:gz") as tf:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    else:
        (only,) = members.values()  # a single-file artefact: its one member, compressed when the name says so
        if lower.endswith(".gz"):
            return gzip.compress(only, mtime=0)
        if file.endswith(".Z"):
            return compress_bytes(only)
        return bz2.compress(only) if lower.endswith(".bz2") else only
    return buffer.getvalue()


def manifest():
    extra = os.environ.get("LIFELONG_FETCH_EXTRA_MANIFEST")
    return load_manifest([extra] if extra else [])


def test_every_fixture_names_a_manifest_dataset():
    entries = manifest()
    assert [f.stem for f in FIXTURES if f.stem not in entries] == []


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.stem for f in FIXTURES])
def test_a_miniature_of_the_real_artefacts_converts_into_what_the_loaders_read(tmp_path, fixture):
    spec = tomllib.loads(fixture.read_text())
    entry = manifest()[fixture.stem]
    rng = np.random.default_rng(0)
    files = {a["file"]: pack(a["file"], members_of(a, rng, tmp_path)) for a in spec["archive"]}
    assert sorted(files) == sorted(a.file for a in entry.artefacts), "the fixture builds every artefact"
    entry = replace(entry, artefacts=tuple(Artefact(f, sha256=digest(b)) for f, b in files.items()))
    entry = replace(entry, licence=replace(entry.licence, requires_acceptance=False), access="manual")
    folder = tmp_path / "have"
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    outcome = fetch(FetchRequest(entry, tmp_path / "root", from_dir=folder))
    source = detect_source(outcome.path)
    assert source is not None, f"{fixture.stem}: the converted folder holds no layout the sources read"
    data = load_source(source)
    labels = np.asarray(data.labels)
    if labels.ndim == 2:
        counts = {data.class_names[k]: int(n) for k, n in enumerate(labels.sum(axis=0)) if n}
    else:
        counts = {data.class_names[k]: n for k, n in Counter(labels.tolist()).items()}
    assert counts == spec["expect"]["classes"]
    if "splits" in spec["expect"]:
        assert data.official_split is not None, f"{fixture.stem}: no official split"
        assert dict(Counter(data.official_split.tolist())) == spec["expect"]["splits"]
    task = NEVIS_DATASETS.get(fixture.stem)
    if task is not None and all(name.isdigit() for name in data.class_names):  # numbered classes: 0- or 1-based
        numbers = [int(name) for name in data.class_names]
        assert max(numbers) < task.num_classes or (min(numbers) >= 1 and max(numbers) <= task.num_classes), (
            f"{fixture.stem}: class numbers {min(numbers)}..{max(numbers)} do not fit the task's {task.num_classes}"
        )
    if task is not None:  # the stream's split rule must accept what the conversion gives
        items = data.official_split if data.official_split is not None else len(data.labels)
        split_indices(items, rule=task.split_rule, groups=item_groups(data, task.split_rule))
