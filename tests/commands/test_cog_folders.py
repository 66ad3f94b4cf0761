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


def write_concepts(root, wnids, seed=0, count=IMAGES_PER_CONCEPT):
    """One folder of `count` small coloured PNGs per wnid, each concept its own mean colour (so a probe can separate
    them; the seed decides the colours)."""
    rng = np.random.default_rng(seed)
    for wnid in wnids:
        folder = root / wnid
        folder.mkdir(parents=True)
        colour = rng.integers(0, 256, size=3)
        for i in range(count):
            pixels = np.clip(colour + rng.normal(0, 20, size=(12, 12, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(folder / f"{wnid}_{i}.png")


VAL_PER_CONCEPT = 5


def seen_val_args(tmp_path, seen, seed=1):
    """Validation folders (VAL_PER_CONCEPT images) of the seen concepts, and the `cog run` args that use them
    (with --min-images lowered to the small folders' size)."""
    write_concepts(tmp_path / "val", seen, seed=seed, count=VAL_PER_CONCEPT)
    return ["--seen-val", str(tmp_path / "val"), "--min-images", str(IMAGES_PER_CONCEPT)]


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
    args += ["--probe", "fast"]
    args += ["--seeds", "1", "--out", str(tmp_path / "runs"), "--data-root", str(tmp_path / "data")]
    no_val = CliRunner().invoke(app, args)
    assert no_val.exit_code != 0 and "--seen-val" in no_val.output  # never a split of training images
    args += seen_val_args(tmp_path, seen)
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
    seen_test = json.loads((index_file.parent / "seen" / "test" / "manifest.json").read_text())
    seen_train = json.loads((index_file.parent / "seen" / "train" / "manifest.json").read_text())
    assert seen_test["rows"] == 3 * VAL_PER_CONCEPT and seen_train["rows"] == 3 * IMAGES_PER_CONCEPT

    missing = CliRunner().invoke(app, args[:6] + ["--seeds", "1", "--data-root", str(tmp_path / "data")])
    assert missing.exit_code != 0 and "--levels-file" in missing.output


def test_run_with_the_authors_levels_pickle_and_split_file(tmp_path):
    """The level concepts' images are exactly the ones the split file lists (paths under --data, leading "/"
    stripped); the seen level is still read from its folders."""
    import os
    import pickle

    from lifelong.concepts.level_files import MIN_TRAIN_IMAGES, TEST_IMAGES

    seen = imagenet1k()[:2]
    in1k = set(imagenet1k())
    unseen = [w for w in imagenet21k() if w not in in1k][:4]
    images = tmp_path / "images"
    write_concepts(images, seen + unseen)
    split = {}
    for wnid in unseen:  # one real file per concept, the rest hard links: the split file's counts, little disk
        source = images / wnid / f"{wnid}_0.png"
        names = [f"{wnid}/listed_{i}.png" for i in range(MIN_TRAIN_IMAGES + TEST_IMAGES)]
        for name in names:
            os.link(source, images / name)
        split[wnid] = {"train": ["/" + n for n in names[:MIN_TRAIN_IMAGES]], "test": names[MIN_TRAIN_IMAGES:]}
    split[imagenet1k()[5]] = {"train": [], "test": []}  # entries of other concepts are not read
    (tmp_path / "split.pkl").write_bytes(pickle.dumps(split))
    (tmp_path / "levels.pkl").write_bytes(pickle.dumps([unseen[:2], unseen[2:]]))
    encoder = save_encoder(untrained_encoder("resnet_mini", resolution=8), tmp_path / "random.pt")
    levels = tmp_path / "levels.pkl"
    args = ["cog", "run", "--encoder", str(encoder), "--data", str(images), "--levels-file", str(levels)]
    args += ["--split-file", str(tmp_path / "split.pkl"), "--seeds", "1", "--out", str(tmp_path / "runs")]
    args += ["--data-root", str(tmp_path / "data"), *seen_val_args(tmp_path, seen), "--probe", "fast"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (index_file,) = (tmp_path / "data" / "cog-features").glob("*/cog.json")
    index = json.loads(index_file.read_text())
    assert [(lv["name"], lv["wnids"]) for lv in index["levels"]] == [
        ("seen", sorted(seen)),
        ("L1", sorted(unseen[:2])),
        ("L2", sorted(unseen[2:])),
    ]
    for split_name, rows in (("train", MIN_TRAIN_IMAGES), ("test", TEST_IMAGES)):
        manifest = json.loads((index_file.parent / "L1" / split_name / "manifest.json").read_text())
        assert manifest["rows"] == 2 * rows
    seen_train = json.loads((index_file.parent / "seen" / "train" / "manifest.json").read_text())
    assert seen_train["rows"] == 2 * IMAGES_PER_CONCEPT

    split[unseen[0]] = {"train": ["a.png"] * 5, "test": ["b.png"]}
    (tmp_path / "bad.pkl").write_bytes(pickle.dumps(split))
    bad = CliRunner().invoke(app, args[:8] + ["--split-file", str(tmp_path / "bad.pkl")] + args[10:])
    assert bad.exit_code != 0 and f"concept {unseen[0]} has 5 train and 1 test images" in bad.output
    (tmp_path / "partial.pkl").write_bytes(pickle.dumps({unseen[0]: split[unseen[1]]}))
    partial = CliRunner().invoke(app, args[:8] + ["--split-file", str(tmp_path / "partial.pkl")] + args[10:])
    assert partial.exit_code != 0 and f"has no entry for {unseen[1]}" in partial.output
