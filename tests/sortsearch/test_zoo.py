"""The model zoo: output files, determinism, corruptions and resuming (tiny zoos on rendered letters)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

import lifelong.sortsearch.zoo as zoo
from lifelong.data.sources import load_source
from lifelong.sortsearch.corruptions import CORRUPTIONS, corrupt
from lifelong.sortsearch.zoo import build_zoo
from lifelong.sortsearch.zoo_models import ZooSpace, draw_spec

# every architecture at its smallest, trained for one epoch on 48 images: a model takes well under a second
TINY = ZooSpace(widths={"mlp": (16,), "cnn": (4,), "resnet_mini": (2,)}, train_sizes=(48,), max_epochs=1)
SOURCE = "builtin:letters"
OPTIONS = {"n_per_class": 12}  # 120 letters: 60 test, 60 training


def tiny_zoo(out: Path, n_models: int = 4, **kwargs) -> dict:
    """A tiny zoo: 60 test letters plus one corrupted copy (noise, severity 2)."""
    options = {"n_test": 60, "corruptions": ("noise",), "severities": (2,), "seed": 3, "space": TINY}
    options |= {"source": SOURCE, "source_options": OPTIONS, "progress": False} | kwargs
    return build_zoo(out, n_models=n_models, **options)


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_tiny_zoo_writes_every_file_with_the_right_shapes(tmp_path: Path) -> None:
    summary = tiny_zoo(tmp_path / "zoo")
    out = tmp_path / "zoo"
    correctness, confidence = np.load(out / "correctness.npy"), np.load(out / "confidence.npy")
    assert correctness.dtype == np.uint8 and correctness.shape == (4, 120) and set(np.unique(correctness)) <= {0, 1}
    assert confidence.dtype == np.float16 and confidence.shape == (4, 120)
    assert ((confidence >= 0) & (confidence <= 1)).all()
    assert np.load(out / "images.npy").shape == (120, 28, 28, 1)
    samples = read_csv(out / "samples.csv")
    assert [row["id"] for row in samples] == [str(j) for j in range(120)]
    assert [row["domain"] for row in samples] == ["clean"] * 60 + ["noise-2"] * 60
    assert {row["source"] for row in samples} == {SOURCE}
    models = read_csv(out / "models.csv")
    assert list(models[0]) == [
        "id", "name", "architecture", "width", "epochs", "train_size", "augment", "lr", "clean_accuracy", "seed"
    ]  # fmt: skip
    clean = correctness[:, :60].mean(axis=1)
    assert np.allclose([float(m["clean_accuracy"]) for m in models], clean, atol=1e-4)
    assert summary["trained"] == 4 and summary["reused"] == 0 and summary["n_samples"] == 120
    assert set(summary["domain_accuracy"]) == {"clean", "noise-2"}
    assert json.loads((out / "zoo.json").read_text())["settings"]["space"]["train_sizes"] == [48]


def test_zoo_is_deterministic(tmp_path: Path) -> None:
    tiny_zoo(tmp_path / "a", n_models=3)
    tiny_zoo(tmp_path / "b", n_models=3)
    for name in ("correctness.npy", "confidence.npy", "images.npy"):
        assert np.array_equal(np.load(tmp_path / "a" / name), np.load(tmp_path / "b" / name)), name
    for name in ("samples.csv", "models.csv"):
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text(), name


def test_resume_reuses_finished_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trainings: list[int] = []
    real_train = zoo.train_model

    def counting_train(model, *args, **kwargs):
        trainings.append(1)
        return real_train(model, *args, **kwargs)

    monkeypatch.setattr(zoo, "train_model", counting_train)
    out = tmp_path / "zoo"
    tiny_zoo(out, n_models=2)
    first = np.load(out / "correctness.npy")
    assert len(trainings) == 2
    summary = tiny_zoo(out, n_models=3)  # a larger zoo keeps the two finished models
    assert len(trainings) == 3 and summary["reused"] == 2 and summary["trained"] == 1
    assert np.array_equal(np.load(out / "correctness.npy")[:2], first)
    tiny_zoo(out, n_models=3)
    assert len(trainings) == 3
    with pytest.raises(ValueError, match="other settings"):
        tiny_zoo(out, n_models=1, seed=4)  # another seed draws other models and samples


def test_corruptions_change_images_deterministically_and_keep_labels(tmp_path: Path) -> None:
    images = load_source(SOURCE, n_per_class=2).images
    for name in CORRUPTIONS:
        for severity in (1, 3):
            out = corrupt(images, name, severity, seed=1)
            assert out.dtype == np.uint8 and out.shape == images.shape
            assert not np.array_equal(out, images), (name, severity)
            assert np.array_equal(out, corrupt(images, name, severity, seed=1))
        stronger = np.abs(corrupt(images, name, 3, seed=1).astype(int) - images).mean()
        assert stronger > np.abs(corrupt(images, name, 1, seed=1).astype(int) - images).mean(), name
    with pytest.raises(ValueError, match="unknown corruption"):
        corrupt(images, "fog", 1)
    with pytest.raises(ValueError, match="severity"):
        corrupt(images, "noise", 9)
    tiny_zoo(tmp_path / "zoo", n_models=1, corruptions=("rotation", "occlusion"), severities=(1,))
    samples = read_csv(tmp_path / "zoo" / "samples.csv")
    by_domain: dict[str, list[dict[str, str]]] = {}
    for row in samples:
        by_domain.setdefault(row["domain"], []).append(row)
    assert list(by_domain) == ["clean", "rotation-1", "occlusion-1"]
    for rows in by_domain.values():  # the same items with the same labels, but other pixels
        assert [r["label"] for r in rows] == [r["label"] for r in by_domain["clean"]]
        assert [r["source_item"] for r in rows] == [r["source_item"] for r in by_domain["clean"]]
    assert not {r["content_hash"] for r in by_domain["clean"]} & {r["content_hash"] for r in by_domain["rotation-1"]}


def test_model_configurations_vary_and_depend_on_seed_and_id_only() -> None:
    specs = [draw_spec(i, 0, 60_000) for i in range(100)]
    assert specs[7] == draw_spec(7, 0, 60_000) and specs[7] != draw_spec(7, 1, 60_000)
    assert {s.architecture for s in specs} == {"mlp", "cnn", "resnet_mini"}
    assert len({s.width for s in specs}) >= 6 and {s.augment for s in specs} == {False, True}
    assert len({s.epochs for s in specs}) == 4 and len({s.train_size for s in specs}) == 5
    assert len({s.name for s in specs}) == 100


def test_missing_fashion_mnist_is_an_error_unless_a_fallback_is_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("lifelong.data.sources.idx.FASHION_MNIST_DIRS", (tmp_path / "nowhere",))
    space = ZooSpace(widths=TINY.widths, train_sizes=(20,), max_epochs=1)
    options = {"n_models": 1, "source": "fashion-mnist", "n_test": 20, "corruptions": (), "space": space}
    with pytest.raises(FileNotFoundError, match="apt-get install dataset-fashion-mnist"):
        build_zoo(tmp_path / "zoo", progress=False, **options)
    assert not (tmp_path / "zoo").exists()
    summary = build_zoo(tmp_path / "zoo", progress=False, fallback_source="builtin:letters", **options)
    assert summary["source"] == SOURCE and "builtin:letters" in summary["notes"][0]
    recorded = json.loads((tmp_path / "zoo" / "zoo.json").read_text())["settings"]
    assert recorded["source"] == SOURCE and recorded["requested_source"] == "fashion-mnist"  # what ran, and why
    assert summary["settings"]["flip"] is False  # mirrored letters change class


def test_a_zoo_job_carries_its_makers_accelerator_to_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ZooJob pickled to a Ray worker trains under the accelerator of the process that made it."""
    import pickle

    from lifelong.sortsearch.zoo import ZooJob
    from lifelong.training.devices import Accelerator, accelerator_scope, current_accelerator

    bf16 = Accelerator(device="cpu", precision="bf16")
    with accelerator_scope(bf16):
        job = ZooJob(train=None, samples=None)  # type: ignore[arg-type]
    assert pickle.loads(pickle.dumps(job)).accelerator == bf16
    seen = []
    monkeypatch.setattr(ZooJob, "_run", lambda self, spec: seen.append(current_accelerator()))
    job(None)  # type: ignore[arg-type]
    assert seen == [bf16] and current_accelerator() == Accelerator(device="cpu")
