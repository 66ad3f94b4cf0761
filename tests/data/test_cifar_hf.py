"""CIFAR pickle layouts written here, and a Hugging Face save_to_disk round trip (skipped without `datasets`)."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import numpy as np
import pytest
from _prereq import needs_package

from lifelong.core.tasks import TaskKind
from lifelong.data.images import CorruptImageError
from lifelong.data.sources import detect_source, load_source
from lifelong.data.sources.cifar import cifar_layout

needs_datasets = needs_package("datasets", "hf")


def _batch(seed: int, n: int, **labels: list[int]) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
        **labels,
        "filenames": [f"{i}.png" for i in range(n)],
    }


def _dump(path: Path, content: dict, *, as_bytes: bool = False, protocol: int = pickle.DEFAULT_PROTOCOL) -> None:
    """Pickle `content`; `as_bytes` gives it bytes keys, as the Python 2 pickles of the real archives have."""
    if as_bytes:
        content = {k.encode(): v for k, v in content.items()}
    path.write_bytes(pickle.dumps(content, protocol=protocol))


def test_cifar10_batches_with_meta_give_official_split_and_names(tmp_path):
    first = _batch(0, 4, labels=[0, 1, 2, 3])
    _dump(tmp_path / "data_batch_1", first, as_bytes=True, protocol=2)
    _dump(tmp_path / "data_batch_2", _batch(1, 3, labels=[9, 8, 7]))
    _dump(tmp_path / "test_batch", _batch(2, 2, labels=[5, 4]))
    names = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
    _dump(tmp_path / "batches.meta", {"label_names": [n.encode() for n in names]}, as_bytes=True, protocol=2)
    assert cifar_layout(tmp_path) == "cifar10" and detect_source(tmp_path) == f"cifar:{tmp_path}"
    data = load_source(f"cifar:{tmp_path}")
    assert data.images.shape == (9, 32, 32, 3) and data.class_names == tuple(names)
    assert data.labels.tolist() == [0, 1, 2, 3, 9, 8, 7, 5, 4]
    assert data.official_split.tolist() == ["train"] * 7 + ["test"] * 2
    # channel-major rows: pixel (0, 0) of image 0 is data[0, 0] (red), data[0, 1024] (green), data[0, 2048] (blue)
    assert data.images[0, 0, 0].tolist() == [first["data"][0, 0], first["data"][0, 1024], first["data"][0, 2048]]
    assert data.ids[0] == "data_batch_1[0]" and data.ids[-1] == "test_batch[1]"


def test_cifar100_fine_and_coarse_labels_and_nested_archive_folder(tmp_path):
    root = tmp_path / "cifar-100-python"
    root.mkdir()
    _dump(root / "train", _batch(0, 5, fine_labels=[0, 99, 5, 6, 7], coarse_labels=[0, 19, 1, 1, 2]))
    _dump(root / "test", _batch(1, 2, fine_labels=[3, 4], coarse_labels=[3, 4]))
    assert detect_source(tmp_path) == f"cifar:{root}", "a lone unpacked archive folder is looked into"
    fine = load_source(f"cifar:{root}")
    assert fine.num_classes == 100 and fine.class_names[:3] == ("0", "1", "2") and fine.labels.tolist()[:2] == [0, 99]
    coarse = load_source(f"cifar:{root}", label="coarse")
    assert coarse.num_classes == 20 and coarse.labels.tolist() == [0, 19, 1, 1, 2, 3, 4]
    assert coarse.official_split.tolist() == ["train"] * 5 + ["test"] * 2
    with pytest.raises(ValueError, match="'fine' or 'coarse'"):
        load_source(f"cifar:{root}", label="super")


class _Payload:
    def __reduce__(self):
        return (print, ("ran code",))


def test_cifar_pickles_may_not_run_code_and_wrong_content_is_named(tmp_path):
    _dump(tmp_path / "train", {"data": _Payload(), "fine_labels": [0]})
    _dump(tmp_path / "test", _batch(0, 1, fine_labels=[0]))
    with pytest.raises(CorruptImageError, match=r"train.*references builtins\.print.*runs code"):
        load_source(f"cifar:{tmp_path}")
    _dump(tmp_path / "train", _batch(0, 2, labels=[0, 1]))  # a CIFAR-10 batch in a CIFAR-100 folder
    with pytest.raises(CorruptImageError, match="lacks 'data' or 'fine_labels'"):
        load_source(f"cifar:{tmp_path}")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no CIFAR pickles"):
        load_source(f"cifar:{tmp_path / 'empty'}")


def _pil_images(count: int, seed: int) -> list:
    from PIL import Image

    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 256, (5 + i % 3, 6, 3), dtype=np.uint8)) for i in range(count)]


@needs_datasets
def test_hf_save_to_disk_round_trip_with_splits_classes_and_groups(tmp_path):
    import datasets

    features = datasets.Features(
        {
            "image": datasets.Image(),
            "label": datasets.ClassLabel(names=["cat", "dog", "fox"]),
            "group": datasets.Value("string"),
        }
    )

    def part(n: int, seed: int):
        return datasets.Dataset.from_dict(
            {
                "image": _pil_images(n, seed),
                "label": [i % 3 for i in range(n)],
                "group": [str(5 * i) for i in range(n)],
            },
            features=features,
        )

    datasets.DatasetDict({"train": part(6, 0), "validation": part(2, 1), "test": part(3, 2)}).save_to_disk(
        tmp_path / "ds"
    )
    assert detect_source(tmp_path / "ds") == f"hf:{tmp_path / 'ds'}"
    data = load_source(f"hf:{tmp_path / 'ds'}")
    assert len(data) == 11 and data.class_names == ("cat", "dog", "fox") and data.kind is TaskKind.MULTI_CLASS
    assert data.official_split.tolist() == ["train"] * 6 + ["val"] * 2 + ["test"] * 3
    assert data.labels.tolist()[:6] == [0, 1, 2, 0, 1, 2]
    assert data.images[1].shape == (6, 6, 3) and np.array_equal(data.images[0], np.asarray(_pil_images(1, 0)[0]))
    assert data.notes["groups"][data.ids[1]] == "5"


@needs_datasets
def test_hf_single_dataset_multi_label_has_no_official_split(tmp_path):
    import datasets

    labels = [[0, 2], [], [1]]
    features = datasets.Features(
        {"image": datasets.Image(), "labels": datasets.Sequence(datasets.ClassLabel(names=["a", "b", "c"]))}
    )
    datasets.Dataset.from_dict({"image": _pil_images(3, 4), "labels": labels}, features=features).save_to_disk(tmp_path)
    data = load_source(f"hf:{tmp_path}")
    assert data.kind is TaskKind.MULTI_LABEL and data.official_split is None
    assert data.class_names == ("a", "b", "c") and data.labels.tolist() == [[1, 0, 1], [0, 0, 0], [0, 1, 0]]


def test_hf_without_datasets_tells_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    (tmp_path / "dataset_dict.json").write_text("{}")
    with pytest.raises(ImportError, match=r"pip install 'lifelong\[hf\]'"):
        load_source(f"hf:{tmp_path}")


@needs_datasets
def test_hf_hub_name_offline_fails_with_a_clear_message(monkeypatch):
    import datasets
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # read when `datasets` is imported; patch the loaded values too
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(FileNotFoundError, match="cannot load Hugging Face hub dataset 'no-such/dataset'.*save_to_disk"):
        load_source("hf:hub/no-such/dataset")
