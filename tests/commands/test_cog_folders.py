"""`lifelong cog run --data DIR --levels-file FILE`: ImageNet-style concept folders, levels from `cog levels`."""

from __future__ import annotations

import csv
import json

import numpy as np
from PIL import Image
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.concepts.wnids import imagenet1k, imagenet21k
from lifelong.data.sources.concept_folders import TEST_PER_CLASS
from lifelong.training.encoders import save_encoder, untrained_encoder

IMAGES_PER_CONCEPT = TEST_PER_CLASS + 6


def write_concepts(root, wnids, seed=0):
    """One folder of small coloured PNGs per wnid, each concept its own mean colour (so a probe can separate them)."""
    rng = np.random.default_rng(seed)
    for wnid in wnids:
        folder = root / wnid
        folder.mkdir(parents=True)
        colour = rng.integers(0, 256, size=3)
        for i in range(IMAGES_PER_CONCEPT):
            pixels = np.clip(colour + rng.normal(0, 20, size=(12, 12, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(folder / f"{wnid}_{i}.png")


def test_run_on_concept_folders_with_a_levels_file(tmp_path):
    seen = imagenet1k()[:3]
    in1k = set(imagenet1k())
    unseen = [w for w in imagenet21k() if w not in in1k][:4]
    write_concepts(tmp_path / "images", seen + unseen)
    levels = tmp_path / "levels.csv"
    with open(levels, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["wnid", "name", "similarity", "level"])
        writer.writerows([[w, w, 0.5, 1 + i // 2] for i, w in enumerate(unseen)])
    encoder = save_encoder(untrained_encoder("resnet_mini", resolution=16), tmp_path / "random.pt")
    args = ["cog", "run", "--encoder", str(encoder), "--data", str(tmp_path / "images"), "--levels-file", str(levels)]
    args += ["--seeds", "1", "--out", str(tmp_path / "runs"), "--data-root", str(tmp_path / "data")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    for level in ("seen", "L1", "L2"):
        assert level in result.output
    (index_file,) = (tmp_path / "data" / "cog-features").glob("*/cog.json")
    index = json.loads(index_file.read_text())
    assert [lv["name"] for lv in index["levels"]] == ["seen", "L1", "L2"]
    assert index["levels"][0]["wnids"] == sorted(seen) and index["levels"][2]["wnids"] == sorted(unseen[2:])
    manifest = json.loads((index_file.parent / "L1" / "train" / "manifest.json").read_text())
    assert manifest["rows"] == 2 * (IMAGES_PER_CONCEPT - TEST_PER_CLASS)

    missing = CliRunner().invoke(app, args[:6] + ["--seeds", "1", "--data-root", str(tmp_path / "data")])
    assert missing.exit_code != 0 and "--levels-file" in missing.output
