"""`cog pretrain --concepts all`: the supplement's control, an encoder trained on every concept's training images."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import torch
from PIL import Image
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.commands import cog_prepare
from lifelong.training.encoders import load_encoder

LEVELS = {"seen": ["n02129604", "n07753592"], "L1": ["n02503517"], "L2": ["n07697100", "n02834778"]}


def _exported(root):
    """An exported cog-mini tree root/<level>/train/<wnid>/*.png (4 images each) and a matching fake CogMini."""
    rng = np.random.default_rng(0)
    levels = {}
    for level, wnids in LEVELS.items():
        for wnid in wnids:
            folder = root / level / "train" / wnid
            folder.mkdir(parents=True)
            for i in range(4):
                Image.fromarray(rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)).save(folder / f"{i}.png")
        levels[level] = SimpleNamespace(train_images=np.zeros((4 * len(wnids), 16, 16, 3), np.uint8))
    return SimpleNamespace(levels=levels)


def test_all_concepts_train_one_class_per_concept_of_every_level(tmp_path, monkeypatch):
    root = tmp_path / "folders"
    cog = _exported(root)
    asked = []

    def folders(data_root, levels, test_style=None, progress=True):
        asked.append(levels)
        return cog, root

    monkeypatch.setattr(cog_prepare, "_cog_mini_folders", folders)
    args = ["cog", "pretrain", "--kind", "supervised", "--epochs", "1", "--resolution", "16"]
    result = CliRunner().invoke(app, [*args, "--concepts", "all", "--out", str(tmp_path / "all.pt")])
    assert result.exit_code == 0, result.output
    assert asked == [None]  # every level exported
    linked = sorted(p.name for p in (root / "all" / "train").iterdir())
    assert linked == sorted(w for wnids in LEVELS.values() for w in wnids)
    trained = torch.load(tmp_path / "all.pt", weights_only=False)
    assert sorted(trained["class_names"]) == linked  # one class per concept of every level
    assert load_encoder(tmp_path / "all.pt").feature_dim > 0
    seen = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "seen.pt")])
    assert seen.exit_code == 0 and asked[-1] == ["seen"]
    wrong = CliRunner().invoke(app, [*args, "--concepts", "unseen", "--out", str(tmp_path / "x.pt")])
    assert wrong.exit_code != 0 and "choose seen or all" in wrong.output
