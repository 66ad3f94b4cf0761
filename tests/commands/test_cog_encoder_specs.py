"""`lifelong cog run --encoder SPEC` takes every encoder spec (hf:FOLDER, package.module:factory, names)."""

from __future__ import annotations

import csv
import json

from _prereq import needs_package
from commands.test_cog_folders import IMAGES_PER_CONCEPT, seen_val_args, write_concepts
from support import save_tiny_hf_resnet
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.commands.cog_prepare import plan_features
from lifelong.concepts.wnids import imagenet1k, imagenet21k

needs_transformers = needs_package("transformers", "models")


def _data(tmp_path):
    """(images folder, levels file, the `cog run` args of the seen validation folder)."""
    seen = imagenet1k()[:3]
    in1k = set(imagenet1k())
    unseen = [w for w in imagenet21k() if w not in in1k][:2]
    write_concepts(tmp_path / "images", seen + unseen)
    levels = tmp_path / "levels.csv"
    with open(levels, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["wnid", "name", "similarity", "level"])
        writer.writerows([[w, w, 0.5, 1] for w in unseen])
    return tmp_path / "images", levels, seen_val_args(tmp_path, seen)


@needs_transformers
def test_cog_run_with_an_hf_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    save_tiny_hf_resnet(tmp_path / "tiny", side=20)
    images, levels, val = _data(tmp_path)
    args = ["cog", "run", "--encoder", f"hf:{tmp_path / 'tiny'}", "--data", str(images), "--levels-file", str(levels)]
    args += ["--probe", "fast"]
    args += ["--seeds", "1", "--out", str(tmp_path / "runs"), "--data-root", str(tmp_path / "data"), *val]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (index_file,) = (tmp_path / "data" / "cog-features").glob("images-tiny-*/cog.json")
    index = json.loads(index_file.read_text())
    assert index["encoder"] == {"name": "tiny", "spec": f"hf:{tmp_path / 'tiny'}"}
    features = json.loads((index_file.parent / "seen" / "train" / "manifest.json").read_text())
    assert features["rows"] == 3 * IMAGES_PER_CONCEPT and "L1" in result.output


def test_feature_sets_of_different_weights_get_different_names(tmp_path, monkeypatch):
    (tmp_path / "cog_spec_mod.py").write_text(
        "import torch\nfrom torch import nn\n"
        "def make(seed):\n    torch.manual_seed(seed)\n"
        "    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten())\n"
        "def a():\n    return make(0)\n"
        "def b():\n    return make(1)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    images, levels, _ = _data(tmp_path)
    common = {"levels_file": levels, "seen_val": tmp_path / "val", "data_root": tmp_path / "d"}
    first = plan_features("cog_spec_mod:a", str(images), **common)
    again = plan_features("cog_spec_mod:a", str(images), **common)
    other = plan_features("cog_spec_mod:b", str(images), **common)
    assert first.name == again.name != other.name and first.name.startswith("images-cog_spec_mod-a-")


def test_an_unknown_encoder_name_is_a_cli_error_listing_the_models(tmp_path):
    images, levels, _ = _data(tmp_path)
    args = ["cog", "run", "--encoder", "efficientnet-lite9", "--data", str(images), "--levels-file", str(levels)]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "runs"), "--data-root", str(tmp_path / "d")])
    assert result.exit_code == 2 and "efficientnet-lite0" in result.output and "Traceback" not in result.output
