"""Small archives with the real datasets' layouts (file names, folders, side files) for the converter tests.

Each writer returns the archive's bytes (or writes files) and the images and labels it holds, so a test can
check that the converted folder loads through lifelong.data.sources with exactly those.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import pickle
import tarfile
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np
from PIL import Image
from support import idx_bytes


def digest(data: bytes, algo: str = "sha256") -> str:
    return hashlib.new(algo, data).hexdigest()


def mnist_files(seed: int = 0, train: int = 12, test: int = 6) -> tuple[dict[str, bytes], dict[str, np.ndarray]]:
    """MNIST's four gzipped IDX files (the published names) and the arrays in them."""
    rng = np.random.default_rng(seed)
    arrays = {
        "train_images": rng.integers(0, 256, (train, 28, 28), dtype=np.uint8),
        "train_labels": rng.integers(0, 10, train, dtype=np.uint8),
        "test_images": rng.integers(0, 256, (test, 28, 28), dtype=np.uint8),
        "test_labels": rng.integers(0, 10, test, dtype=np.uint8),
    }
    files = {
        "train-images-idx3-ubyte.gz": gzip.compress(idx_bytes(arrays["train_images"]), mtime=0),
        "train-labels-idx1-ubyte.gz": gzip.compress(idx_bytes(arrays["train_labels"]), mtime=0),
        "t10k-images-idx3-ubyte.gz": gzip.compress(idx_bytes(arrays["test_images"]), mtime=0),
        "t10k-labels-idx1-ubyte.gz": gzip.compress(idx_bytes(arrays["test_labels"]), mtime=0),
    }
    return files, arrays


def tar_bytes(members: dict[str, bytes], mode: str = "w:gz", links: dict[str, str] | None = None) -> bytes:
    """A tar archive (gzipped unless `mode` is "w") of the members, plus symbolic links {name: target}."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tf.addfile(info)
    return buffer.getvalue()


def fetch_one_off(tmp_path: Path, files: dict[str, bytes], converter: str, options: dict, name: str = "d") -> Path:
    """Fetch a manifest entry made for the test (the files handed over with --from); the converted folder."""
    from lifelong.data.fetch import FetchRequest, fetch
    from lifelong.data.fetch.manifest import Artefact, DatasetEntry

    artefacts = tuple(Artefact(f, sha256=digest(b)) for f, b in files.items())
    entry = DatasetEntry(
        name=name, title=name, access="manual", converter=converter, artefacts=artefacts, options=options
    )
    return fetch(FetchRequest(entry, tmp_path / "root", from_dir=write_files(tmp_path / f"dl-{name}", files))).path


def labels_by_item(data, key=lambda item: Path(item).name) -> dict[str, tuple]:
    """key(item id) -> (class name, or sorted class names of a multi-label item, official split or None)."""
    out = {}
    for i, item in enumerate(data.ids):
        label = data.labels[i]
        names = (
            data.class_names[int(label)]
            if np.ndim(label) == 0
            else tuple(sorted(data.class_names[k] for k in np.flatnonzero(label)))
        )
        out[key(item)] = (names, None if data.official_split is None else data.official_split[i])
    return out


def cifar10_archive(seed: int = 0, per_batch: int = 4) -> tuple[bytes, np.ndarray, np.ndarray]:
    """cifar-10-python.tar.gz: cifar-10-batches-py/data_batch_1..5, test_batch, batches.meta (Python pickles)."""
    rng = np.random.default_rng(seed)
    members, images, labels = {}, [], []
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8)
        batch_labels = [int(v) for v in rng.integers(0, 10, per_batch)]
        members[f"cifar-10-batches-py/{name}"] = pickle.dumps(
            {b"batch_label": name.encode(), b"labels": batch_labels, b"data": data}, protocol=2
        )
        images.append(data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
        labels.extend(batch_labels)
    names = [b"airplane", b"automobile", b"bird", b"cat", b"deer", b"dog", b"frog", b"horse", b"ship", b"truck"]
    members["cifar-10-batches-py/batches.meta"] = pickle.dumps({b"label_names": names}, protocol=2)
    members["cifar-10-batches-py/readme.html"] = b"<html></html>"
    return tar_bytes(members), np.concatenate(images), np.array(labels)


def image_folder_zip(seed: int = 0) -> tuple[bytes, dict[str, dict[str, int]]]:
    """A zip holding Dataset/train/<class>/*.jpg and Dataset/test/<class>/*.jpg (plus a stray readme)."""
    rng = np.random.default_rng(seed)
    counts = {"train": {"cat": 3, "dog": 2}, "test": {"cat": 1, "dog": 2}}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("Dataset/README.txt", "a dataset")
        for split, classes in counts.items():
            for name, n in classes.items():
                for i in range(n):
                    image = Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8))
                    out = io.BytesIO()
                    image.save(out, format="PNG")
                    zf.writestr(f"Dataset/{split}/{name}/{i}.png", out.getvalue())
    return buffer.getvalue(), counts


def manifest_toml(entries: list[dict]) -> str:
    """A user manifest's TOML text from plain dicts (artefacts as a list of dicts, licence as a dict)."""

    def value(v: object) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int):
            return str(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines: list[str] = []
    for entry in entries:
        lines.append("[[dataset]]")
        for key, v in entry.items():
            if key not in ("artefacts", "licence", "options"):
                lines.append(f"{key} = {value(v)}")
        for table in ("licence", "options"):
            if table in entry:
                lines.append(f"[dataset.{table}]")
                lines.extend(f"{k} = {value(v)}" for k, v in entry[table].items())
        for artefact in entry.get("artefacts", []):
            lines.append("[[dataset.artefacts]]")
            lines.extend(f"{k} = {value(v)}" for k, v in artefact.items())
    return "\n".join(lines) + "\n"


def write_files(folder: Path, files: dict[str, bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def clear_archives(seed: int = 0, buckets=(1, 2), classes=("bus", "camera"), train: int = 3, test: int = 2):
    """CLEAR's newer release: clear10-train-image-only.zip (train_image_only/...) and clear10-test.zip (test/...).

    Each holds class_names.txt, labeled_metadata.json and labeled_images/<bucket>/<class>/<id>.jpg; returns the
    archives' bytes by file name and the image counts per (folder, bucket, class).
    """
    rng = np.random.default_rng(seed)
    archives, counts = {}, {}
    for top, file, n in (
        ("train_image_only", "clear10-train-image-only.zip", train),
        ("test", "clear10-test.zip", test),
    ):
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as zf:
            zf.writestr(f"{top}/class_names.txt", "\n".join(classes) + "\n")
            zf.writestr(f"{top}/labeled_metadata.json", "{}")
            for b in buckets:
                for name in classes:
                    for i in range(n):
                        out = io.BytesIO()
                        Image.fromarray(rng.integers(0, 256, (9, 12, 3), dtype=np.uint8)).save(out, format="JPEG")
                        zf.writestr(f"{top}/labeled_images/{b}/{name}/{1000 * b + i}.jpg", out.getvalue())
                    counts[(top, b, name)] = n
        archives[file] = buffer.getvalue()
    return archives, counts


def png_bytes(rng: np.random.Generator, shape=(8, 8, 3)) -> bytes:
    out = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8)).save(out, format="PNG")
    return out.getvalue()


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def coil20_archive(seed: int = 0, objects: int = 3, poses: int = 4) -> tuple[bytes, dict[str, str]]:
    """coil-20-proc.zip: coil-20-proc/obj<k>__<pose>.png (the object number is the class); path -> class."""
    rng = np.random.default_rng(seed)
    members, labels = {}, {}
    for k in range(1, objects + 1):
        for pose in range(poses):
            name = f"coil-20-proc/obj{k}__{pose}.png"
            members[name] = png_bytes(rng, (8, 8))
            labels[name] = str(k)
    members["coil-20-proc/Thumbs.db"] = b"not an image"
    return zip_bytes(members), labels


def oxford_pets_archives(seed: int = 0) -> tuple[dict[str, bytes], dict[str, tuple[str, str]]]:
    """images.tar.gz (images/<Breed>_<n>.jpg) and annotations.tar.gz (annotations/trainval.txt, test.txt: lines
    `<image> <class id> <species> <breed id>` after `#` comment lines); image -> (class id, split)."""
    rng = np.random.default_rng(seed)
    images, truth = {}, {}
    lists = {
        "trainval": ["#Image CLASS-ID SPECIES BREED ID", "# comments"],
        "test": ["#Image CLASS-ID SPECIES BREED ID"],
    }
    for i, (breed, class_id) in enumerate([("Abyssinian", 1), ("Bengal", 2), ("boxer", 3)] * 2):
        stem = f"{breed}_{i}"
        out = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (9, 7, 3), dtype=np.uint8)).save(out, format="JPEG")
        images[f"images/{stem}.jpg"] = out.getvalue()
        split = "trainval" if i < 4 else "test"
        lists[split].append(f"{stem} {class_id} {1 + (breed == 'boxer')} {i}")
        truth[stem] = (str(class_id), "train" if split == "trainval" else "test")
    annotations = {f"annotations/{s}.txt": ("\n".join(rows) + "\n").encode() for s, rows in lists.items()}
    return {"images.tar.gz": tar_bytes(images), "annotations.tar.gz": tar_bytes(annotations)}, truth


def voc_archive(seed: int = 0) -> tuple[bytes, dict[str, tuple[list[str], str]]]:
    """VOCtrainval.tar: VOCdevkit/VOC2007/{Annotations/<id>.xml, JPEGImages/<id>.jpg, ImageSets/Main/<split>.txt}."""
    rng = np.random.default_rng(seed)
    objects = {"000001": ["dog", "person"], "000002": ["car"], "000003": ["dog", "dog", "cat"], "000004": ["bird"]}
    split = {"000001": "train", "000002": "train", "000003": "val", "000004": "val"}
    members, truth = {}, {}
    for image_id, names in objects.items():
        xml = "".join(f"<object><name>{n}</name><difficult>0</difficult></object>" for n in names)
        members[f"VOCdevkit/VOC2007/Annotations/{image_id}.xml"] = (
            f"<annotation><folder>VOC2007</folder><filename>{image_id}.jpg</filename>{xml}</annotation>"
        ).encode()
        out = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (10, 12, 3), dtype=np.uint8)).save(out, format="JPEG")
        members[f"VOCdevkit/VOC2007/JPEGImages/{image_id}.jpg"] = out.getvalue()
        truth[image_id] = (sorted(set(names)), split[image_id])
    for s in ("train", "val"):
        ids = [i for i in objects if split[i] == s]
        members[f"VOCdevkit/VOC2007/ImageSets/Main/{s}.txt"] = ("\n".join(ids) + "\n").encode()
    return tar_bytes(members, "w"), truth


def svhn_mat_files(seed: int = 0, n: int = 5) -> tuple[dict[str, bytes], dict[str, tuple[np.ndarray, np.ndarray]]]:
    """train_32x32.mat and test_32x32.mat: X uint8 [32, 32, 3, N], y [N, 1] with 10 standing for the digit 0."""
    from scipy.io import savemat

    rng = np.random.default_rng(seed)
    files, arrays = {}, {}
    for split in ("train", "test"):
        images = rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
        labels = rng.integers(1, 11, n)
        out = io.BytesIO()
        savemat(out, {"X": images.transpose(1, 2, 3, 0), "y": labels.reshape(-1, 1)})
        files[f"{split}_32x32.mat"] = out.getvalue()
        arrays[split] = (images, labels % 10)
    return files, arrays


def imagenet_archives(seed: int = 0) -> tuple[dict[str, bytes], dict[str, Counter]]:
    """ILSVRC2012_img_train.tar (per-class tars <wnid>.tar of JPEGs), ILSVRC2012_img_val.tar (flat
    ILSVRC2012_val_<n>.JPEG) and ILSVRC2012_devkit_t12.tar.gz (data/meta.mat synsets, data/..._ground_truth.txt)."""
    from scipy.io import savemat

    rng = np.random.default_rng(seed)
    wnids = ["n01440764", "n01443537", "n02102040"]  # ILSVRC2012_IDs 1, 2, 3 (the devkit's order is not sorted order)
    ids = {"n01440764": 3, "n01443537": 1, "n02102040": 2}

    def jpeg() -> bytes:
        out = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (9, 8, 3), dtype=np.uint8)).save(out, format="JPEG")
        return out.getvalue()

    inner = {f"{w}.tar": tar_bytes({f"{w}_{i}.JPEG": jpeg() for i in range(k + 1)}, "w") for k, w in enumerate(wnids)}
    truth_wnids = ["n02102040", "n01440764", "n02102040", "n01443537"]
    val = {f"ILSVRC2012_val_{i + 1:08d}.JPEG": jpeg() for i in range(len(truth_wnids))}
    synsets = np.zeros(4, dtype=[("ILSVRC2012_ID", "O"), ("WNID", "O"), ("num_children", "O")])
    for row, w in enumerate(wnids):
        synsets[row] = (ids[w], w, 0)
    synsets[3] = (1001, "n00001740", 3)  # an inner node of the hierarchy, as the real meta.mat has
    meta = io.BytesIO()
    savemat(meta, {"synsets": synsets})
    devkit = {
        "ILSVRC2012_devkit_t12/data/meta.mat": meta.getvalue(),
        "ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt": (
            "\n".join(str(ids[w]) for w in truth_wnids) + "\n"
        ).encode(),
    }
    files = {
        "ILSVRC2012_img_train.tar": tar_bytes(inner, "w"),
        "ILSVRC2012_img_val.tar": tar_bytes(val, "w"),
        "ILSVRC2012_devkit_t12.tar.gz": tar_bytes(devkit),
    }
    expected = {"train": Counter({w: k + 1 for k, w in enumerate(wnids)}), "val": Counter(truth_wnids)}
    return files, expected
