"""Feature extraction to memory-mapped files: alignment with unreadable images, resume after a kill, file checks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from support import write_corrupt_png

from lifelong.data.feature_files import (
    FEATURES_FILE,
    LABELS_FILE,
    MANIFEST_FILE,
    FeatureFileError,
    feature_files,
    load_features,
)
from lifelong.data.sources.concept_folders import scan_concept_folders
from lifelong.training.features import extract_features, load_square

WNIDS = ("n01440764", "n01443537", "n01484850")
FACTORY = textwrap.dedent(
    """
    import torch
    from torch import nn

    def make():
        torch.manual_seed(0)
        return nn.Sequential(nn.Conv2d(3, 6, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(6, 5))
    """
)
SPEC = "tiny_features_encoder:make"


@pytest.fixture
def encoder_path(tmp_path, monkeypatch):
    """A 'package.module:factory' encoder (5-d features) importable from tmp_path/encoders."""
    folder = tmp_path / "encoders"
    folder.mkdir()
    (folder / "tiny_features_encoder.py").write_text(FACTORY)
    monkeypatch.syspath_prepend(str(folder))
    return folder


def _write_image(path: Path, seed: int, mode: str, size: tuple[int, int]) -> None:
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 4), dtype=np.uint8)
    image = Image.fromarray(pixels, "RGBA")
    image = image.convert(mode) if mode != "P" else image.convert("RGB").quantize(16)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, format="PNG")


@pytest.fixture
def concepts(tmp_path):
    """3 concepts x 5 images of mixed modes and sizes (named .JPEG, as in ImageNet), one of them corrupt."""
    root = tmp_path / "images"
    modes = ("RGB", "L", "RGBA", "P", "RGB")
    for k, wnid in enumerate(WNIDS):
        for i, mode in enumerate(modes):
            _write_image(root / wnid / f"{wnid}_{i}.JPEG", 10 * k + i, mode, (14 + 3 * i, 11 + 2 * k))
    write_corrupt_png(root / WNIDS[1] / f"{WNIDS[1]}_2.JPEG")
    return scan_concept_folders(root, test_per_class=1, seed=0)


def _extract(files, labels, out, **options):
    options = {"resolution": 12, "batch_size": 3, "device": "cpu", "workers": 2} | options
    return extract_features(SPEC, files, labels, out, **options)


def test_corrupt_image_is_skipped_with_labels_aligned(tmp_path, encoder_path, concepts):
    files, labels = concepts.train_files, concepts.train_labels
    features, row_labels, manifest = _extract(files, labels, tmp_path / "out")
    corrupt = str(Path(concepts.root) / WNIDS[1] / f"{WNIDS[1]}_2.JPEG")
    assert corrupt in files
    assert isinstance(features, np.memmap) and features.dtype == np.float16  # float16 by default
    assert features.shape == (len(files) - 1, 5)
    assert [s["file"] for s in manifest["skipped"]] == [corrupt]
    assert "cannot decode" in manifest["skipped"][0]["reason"]
    kept = [i for i, f in enumerate(files) if f != corrupt]
    assert np.array_equal(row_labels, labels[kept])
    assert feature_files(tmp_path / "out") == [files[i] for i in kept]
    np.testing.assert_allclose(np.linalg.norm(features.astype(np.float32), axis=1), 1.0, atol=2e-3)
    # each row is its own image's features: extracting the readable files alone, one by one, gives the same rows
    alone, alone_labels, _ = _extract([files[i] for i in kept], labels[kept], tmp_path / "alone", batch_size=1)
    assert np.array_equal(alone_labels, row_labels)
    np.testing.assert_allclose(alone, features, atol=2e-3)


def test_resume_after_an_interruption_gives_identical_features(tmp_path, encoder_path, concepts):
    files, labels = concepts.train_files, concepts.train_labels
    clean = _extract(files, labels, tmp_path / "clean")
    calls = []

    def stop_after_first_batch(advance=0, description=None, **_):
        calls.append(advance)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _extract(files, labels, tmp_path / "out", progress=stop_after_first_batch)
    assert calls == [3]
    with pytest.raises(FeatureFileError, match="unfinished.*3 of 12"):
        load_features(tmp_path / "out")
    resumed = _extract(files, labels, tmp_path / "out", progress=calls.append)
    assert calls[1:] == [3, 3, 3]  # the first batch was not redone
    assert np.array_equal(resumed.features, clean.features)
    assert np.array_equal(resumed.labels, clean.labels)
    assert resumed.manifest["skipped"] == clean.manifest["skipped"]
    again = _extract(files, labels, tmp_path / "out", progress=calls.append)  # finished: nothing to redo
    assert len(calls) == 4 and np.array_equal(again.features, clean.features)


def test_resume_after_sigkill_gives_identical_features(tmp_path, encoder_path, concepts):
    files, labels = concepts.train_files, concepts.train_labels
    clean = _extract(files, labels, tmp_path / "clean")
    job = {"files": files, "labels": labels.tolist(), "out": str(tmp_path / "out")}
    (tmp_path / "job.json").write_text(json.dumps(job))
    script = textwrap.dedent(
        f"""
        import json, os, signal, torch
        from lifelong.training.features import extract_features
        torch.set_num_threads(1)
        job = json.load(open({str(tmp_path / "job.json")!r}))
        done = []
        def kill_after_two_batches(advance=0, description=None, **_):
            done.append(advance)
            if len(done) == 2:
                os.kill(os.getpid(), signal.SIGKILL)
        extract_features({SPEC!r}, job["files"], job["labels"], job["out"], resolution=12, batch_size=3,
                         device="cpu", workers=2, progress=kill_after_two_batches)
        """
    )
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(encoder_path), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, timeout=120)
    assert result.returncode == -signal.SIGKILL, result.stderr.decode()
    manifest = json.loads((tmp_path / "out" / MANIFEST_FILE).read_text())
    assert (manifest["files_done"], manifest["complete"]) == (6, False)
    resumed = _extract(files, labels, tmp_path / "out")
    assert np.array_equal(resumed.features, clean.features)
    assert np.array_equal(resumed.labels, clean.labels)


def test_row_count_mismatch_is_an_error_naming_both_counts(tmp_path, encoder_path, concepts):
    out = tmp_path / "out"
    features, labels, _ = _extract(concepts.train_files, concepts.train_labels, out, dtype="float32")
    assert features.dtype == np.float32
    np.save(out / LABELS_FILE, np.asarray(labels)[:-2])
    with pytest.raises(
        FeatureFileError, match=rf"has {len(labels)} rows but .*labels.npy has {len(labels) - 2} labels"
    ):
        load_features(out)
    np.save(out / FEATURES_FILE, np.zeros((3, 5), np.float32))
    np.save(out / LABELS_FILE, np.zeros(3, np.int64))
    with pytest.raises(FeatureFileError, match=rf"shape \(3, 5\) but .* records {len(labels)} rows"):
        load_features(out)


def test_other_settings_do_not_resume_silently(tmp_path, encoder_path, concepts):
    files, labels = concepts.train_files, concepts.train_labels
    out = tmp_path / "out"
    _extract(files, labels, out)
    with pytest.raises(FeatureFileError, match="differs in: resolution"):
        _extract(files, labels, out, resolution=10)
    with pytest.raises(FeatureFileError, match="differs in: inputs"):
        _extract(files[:-1], labels[:-1], out)
    redone = _extract(files[:-1], labels[:-1], out, resume=False)
    assert redone.manifest["inputs"]["count"] == len(files) - 1


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch >= 2.9 marks TorchScript deprecated
def test_torchscript_file_is_recorded_with_its_digest(tmp_path, concepts):
    torch.manual_seed(1)
    module = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())
    path = tmp_path / "encoder.pt"
    torch.jit.save(torch.jit.script(module), str(path))
    features, _, manifest = extract_features(
        path, concepts.test_files, concepts.test_labels, tmp_path / "out", resolution=8, device="cpu"
    )
    assert features.shape == (3, 4)
    assert manifest["encoder"]["spec"] == str(path) and len(manifest["encoder"]["file_sha256"]) == 64


def test_load_square_resizes_the_shorter_side_and_crops_the_centre(tmp_path):
    stripes = np.zeros((10, 30, 3), dtype=np.uint8)
    stripes[:, :10, 0] = stripes[:, 10:20, 1] = stripes[:, 20:, 2] = 255
    Image.fromarray(stripes).save(tmp_path / "wide.png")
    square = load_square(tmp_path / "wide.png", 5)
    assert square.shape == (5, 5, 3)
    assert (square[:, 1:4, 1] > 200).all() and (square[:, 1:4, [0, 2]] < 50).all()
    Image.fromarray(np.full((7, 9), 100, np.uint8)).save(tmp_path / "gray.png")
    assert load_square(tmp_path / "gray.png", 14).shape == (14, 14, 1)


def test_input_errors(tmp_path, encoder_path, concepts):
    files, labels = concepts.train_files, concepts.train_labels
    with pytest.raises(ValueError, match="12 files and labels of shape \\(11,\\)"):
        _extract(files, labels[:-1], tmp_path / "out")
    with pytest.raises(ValueError, match="dtype must be one of"):
        _extract(files, labels, tmp_path / "out", dtype="int8")
    with pytest.raises(FileNotFoundError, match="not a features folder"):
        load_features(tmp_path / "nothing")
