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
    json = { "test/labeled_metadata.json" = { "1" = { bus = "labeled_metadata/1/bus.json" } } }  # TOML as JSON
    mats = { "cars_annos.mat" = { annotations = { fields = { class = { values = [1, 3] }, test = {...} } } } }
    # (a MATLAB struct array: one element per value of each field)
    pickles = { "levels.pkl" = { python2 = true, value = [["n01000001"]] } }   # or protocol = N (Python 3's)
    # value: TOML data, where { array = V, dtype = "S" } is a numpy array and { format = "/a/{}.JPEG", count = 50 }
    # the strings format.format(k) for k < count; python2 = true writes Python 2's cPickle protocol 2 (str as str)
    tensors = { "f/1/bus.pth" = { ids = ["48", "52"], dim = 4 }, "f/1/all.pth" = { targets = [0, 1], dim = 4 } }
    # (torch.save of a dict id -> [dim] tensor, or of ([N, dim] tensor, targets): CLEAR's feature files)
    [expect]
    classes = { "1" = 1 }                  # images per class (multi-label: images carrying each class)
    splits = { train = 1 }                 # optional: images per official split

For a Nevis'22 dataset the converted data must also suit its task's split rule (e.g. `train_test` needs an
official train and test split): the rule is applied as the stream applies it. The datasets of other streams load
as their stream reads them, and their [expect] says more:
- clear (ClearFolder through `--stream clear`'s source: the data root itself for clear10, else <root>/<name>):
  classes and splits count every labeled bucket's official train and test images (seed 0); `buckets` = the labeled
  buckets, `unlabeled` = images per bucket in the unlabeled pool (labeled bucket 0 lands there), `official` = the
  official split's kind; `features = { moco_b0 = { train = 4, test = 2 } }` counts them read with -s feature=NAME.
- cog (the level files `lifelong cog run --levels-file --split-file` reads, with naver/cog's bounds): classes =
  images per concept, splits = train and test images over every level's concepts, `levels` = concepts per level.
- facts (every splits/<T>tasks_<split>/ folder as `-s facts=... -s split=authors` reads it, images decoded):
  classes = images per fact, splits = train and test images, `tasks` = tasks per folder.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import os
import pickle
import struct
import tarfile
import tomllib
import zipfile
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pytest
from _prereq import import_or_missing, missing
from archive_writers import compress_bytes, rar_bytes
from fetch_fixtures import digest
from PIL import Image
from support import idx_bytes

from lifelong.concepts.level_files import read_levels_file, read_split_file
from lifelong.data.build import item_groups
from lifelong.data.fetch import FetchRequest, fetch, load_manifest
from lifelong.data.fetch.archives_libarchive import MissingLibarchive, libarchive
from lifelong.data.fetch.manifest import Artefact, DatasetEntry
from lifelong.data.sources import detect_source, load_source
from lifelong.data.sources.fact_manifest import SPLITS, load_fact_manifest
from lifelong.data.splits import split_indices
from lifelong.suites.clear import CLEAR_FOLDER, clear_folder_source
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
    if "fields" in spec:  # a MATLAB struct array: element k holds the k-th value of each field
        (count,) = {len(values["values"]) for values in spec["fields"].values()}
        record = np.zeros(count, dtype=[(name, object) for name in spec["fields"]])
        for name, values in spec["fields"].items():
            record[name] = values["values"]
        return record
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
    members |= {name: json.dumps(value).encode() for name, value in archive.get("json", {}).items()}
    members |= {name: pickle_bytes(spec) for name, spec in archive.get("pickles", {}).items()}
    members |= {name: tensor_bytes(spec, rng) for name, spec in archive.get("tensors", {}).items()}
    return members


def tensor_bytes(spec: dict, rng: np.random.Generator) -> bytes:
    """A torch.save file of random features: a dict id -> [dim] tensor, or ([N, dim] tensor, targets)."""
    import torch

    if "ids" in spec:
        value = {key: torch.from_numpy(rng.random(spec["dim"], dtype=np.float32)) for key in spec["ids"]}
    else:
        value = (torch.from_numpy(rng.random((len(spec["targets"]), spec["dim"]), dtype=np.float32)), spec["targets"])
    out = io.BytesIO()
    torch.save(value, out)
    return out.getvalue()


def pickle_bytes(spec: dict) -> bytes:
    """The pickle of a fixture's value, as Python 2's cPickle (python2 = true) or Python 3 (protocol) writes it."""
    value = pickled_value(spec["value"])
    if not spec.get("python2"):
        return pickle.dumps(value, protocol=spec.get("protocol", pickle.DEFAULT_PROTOCOL))
    out = io.BytesIO()
    Python2Pickler(out, protocol=2).dump(value)
    return out.getvalue()


def pickled_value(value):
    """A fixture's TOML value as the data to pickle: {array = V, dtype = D} a numpy array, {format = F, count = N}
    the strings F.format(k) for k < N, other tables dicts."""
    if isinstance(value, dict) and "format" in value:
        return [value["format"].format(k) for k in range(value["count"])]
    if isinstance(value, dict) and "array" in value:
        return np.asarray(pickled_value(value["array"]), dtype=value.get("dtype"))
    if isinstance(value, dict):
        return {key: pickled_value(item) for key, item in value.items()}
    return [pickled_value(item) for item in value] if isinstance(value, list) else value


class Python2Pickler(pickle._Pickler):
    """Protocol 2 as Python 2's cPickle wrote it: its str (text and bytes alike) as SHORT_BINSTRING / BINSTRING,
    numpy's functions under numpy.core."""

    dispatch = dict(pickle._Pickler.dispatch)

    def save_str(self, obj: str | bytes) -> None:
        raw = obj.encode("latin1") if isinstance(obj, str) else obj
        size = bytes([len(raw)]) if len(raw) < 256 else struct.pack("<i", len(raw))
        self.write((pickle.SHORT_BINSTRING if len(raw) < 256 else pickle.BINSTRING) + size + raw)
        self.memoize(obj)

    dispatch[str] = dispatch[bytes] = save_str

    def save_global(self, obj, name=None) -> None:
        module = obj.__module__.replace("numpy._core", "numpy.core")  # numpy 2's name for numpy 1's module
        self.write(pickle.GLOBAL + f"{module}\n{name or obj.__qualname__}\n".encode())
        self.memoize(obj)


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
    expect = spec["expect"]
    got = READERS.get(entry.streams[0] if entry.streams else "", read_folder)(entry, outcome.path, expect)
    assert got.classes == expect["classes"]
    if "splits" in expect:
        assert got.splits == expect["splits"], f"{fixture.stem}: official splits"
    assert got.more == {key: expect.get(key) for key in got.more}


@dataclass
class Loaded:
    """What a converted dataset holds as its stream reads it: items per class and per official split, and more."""

    classes: dict[str, int]
    splits: dict[str, int] | None
    more: dict = field(default_factory=dict)


def read_folder(entry: DatasetEntry, path: Path, expect: dict) -> Loaded:
    """Through the source `lifelong data status` finds; a Nevis'22 task's split rule must accept it."""
    source = detect_source(path)
    assert source is not None, f"{entry.name}: the converted folder holds no layout the sources read"
    data = load_source(source)
    labels = np.asarray(data.labels)
    if labels.ndim == 2:
        counts = {data.class_names[k]: int(n) for k, n in enumerate(labels.sum(axis=0)) if n}
    else:
        counts = {data.class_names[k]: n for k, n in Counter(labels.tolist()).items()}
    splits = None if data.official_split is None else dict(Counter(data.official_split.tolist()))
    task = NEVIS_DATASETS.get(entry.name)
    if task is not None and all(name.isdigit() for name in data.class_names):  # numbered classes: 0- or 1-based
        numbers = [int(name) for name in data.class_names]
        assert max(numbers) < task.num_classes or (min(numbers) >= 1 and max(numbers) <= task.num_classes), (
            f"{entry.name}: class numbers {min(numbers)}..{max(numbers)} do not fit the task's {task.num_classes}"
        )
    if task is not None:  # the stream's split rule must accept what the conversion gives
        items = data.official_split if data.official_split is not None else len(data.labels)
        split_indices(items, rule=task.split_rule, groups=item_groups(data, task.split_rule))
    return Loaded(counts, splits)


def read_clear(entry: DatasetEntry, path: Path, expect: dict) -> Loaded:
    """As `--stream clear` reads it: the data root itself for clear10 (its default folder), else --data-root PATH."""
    root = path.parent if entry.name == CLEAR_FOLDER else path
    source = clear_folder_source(root)
    classes, splits = clear_counts(source)
    unlabeled = {str(b): n for b in range(source.num_buckets) if (n := len(source.unlabeled(b)))}
    more = {"buckets": list(source.labeled_buckets), "unlabeled": unlabeled, "official": source.official_splits.kind}
    features = {name: clear_counts(clear_folder_source(root, feature=name))[1] for name in expect.get("features", {})}
    return Loaded(classes, splits, more | ({"features": features} if features else {}))


def clear_counts(source) -> tuple[dict[str, int], dict[str, int]]:
    """Items per class and per split of every labeled bucket under the official split of seed 0."""
    classes: Counter = Counter()
    splits: Counter = Counter()
    for bucket in source.labeled_buckets:
        for split, data in zip(("train", "test"), source.official_split(bucket, seed=0), strict=True):
            classes.update(data.class_names[k] for k in np.asarray(data.labels).tolist())
            splits[split] += len(data.labels)
    return dict(classes), dict(splits)


def read_cog(entry: DatasetEntry, path: Path, expect: dict) -> Loaded:
    """As `lifelong cog run --levels-file --split-file` reads the two files (naver/cog's image counts checked)."""
    levels = read_levels_file(path / "cog_levels_mapping_file.pkl")
    images = read_split_file(path / "cog_concepts_split_file.pkl", [wnid for level in levels for wnid in level])
    classes = {wnid: len(concept.train) + len(concept.test) for wnid, concept in images.items()}
    splits = {split: sum(len(getattr(concept, split)) for concept in images.values()) for split in ("train", "test")}
    return Loaded(classes, splits, {"levels": [len(level) for level in levels]})


def read_facts(entry: DatasetEntry, path: Path, expect: dict) -> Loaded:
    """Each of the authors' task folders splits/<T>tasks_<split>/ as `-s facts=FOLDER -s split=authors` reads it,
    images decoded; the folders group the same images and facts into tasks differently."""
    found, tasks = [], {}
    for folder in sorted(p for p in (path / "splits").iterdir() if p.is_dir()):
        manifest = load_fact_manifest(folder)
        classes: Counter = Counter()
        for split in SPLITS:
            classes.update(manifest.facts[k].text for k in manifest.images(split)[1].tolist())
        found.append(Loaded(dict(classes), {split: len(manifest.images(split)[0]) for split in SPLITS}))
        tasks[folder.name] = int(manifest.fact_task.max()) + 1
    assert found and all(f == found[0] for f in found), f"{entry.name}: the task folders hold different data"
    return replace(found[0], more={"tasks": tasks})


READERS = {"clear": read_clear, "cog": read_cog, "facts": read_facts}
