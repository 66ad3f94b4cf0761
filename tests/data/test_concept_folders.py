"""ImageNet-style concept folders: label order, the seeded per-concept test split, and the input errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lifelong.concepts.wnids import MalformedWnidError, UnknownConceptError
from lifelong.data.sources.concept_folders import TooFewImagesError, scan_concept_folders

# Real ImageNet-1K wnids (tench, goldfish, great white shark), created out of sorted order below.
WNIDS = ("n01484850", "n01440764", "n01443537")


def _concepts(root: Path, counts: dict[str, int], suffix: str = ".JPEG") -> Path:
    """root/<wnid>/img_<i><suffix> files (contents are never decoded by the scan)."""
    for wnid, count in counts.items():
        folder = root / wnid
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(count):
            (folder / f"img_{i:03d}{suffix}").write_bytes(b"not decoded")
    return root


def test_labels_follow_sorted_wnids_and_each_concept_gives_its_test_images(tmp_path):
    root = _concepts(tmp_path, {w: 6 + k for k, w in enumerate(WNIDS)})
    (root / WNIDS[0] / "notes.txt").write_text("ignored")
    (root / WNIDS[0] / ".hidden.jpg").write_bytes(b"ignored")
    (root / WNIDS[1] / "upper.PNG").write_bytes(b"counted")
    (root / "README.txt").write_text("a file at the root is ignored")
    splits = scan_concept_folders(root, test_per_class=2, seed=3)
    assert splits.wnids == tuple(sorted(WNIDS))
    assert np.array_equal(splits.test_labels, np.repeat([0, 1, 2], 2))
    for label, wnid in enumerate(splits.wnids):
        every = sorted(str(p) for p in (root / wnid).iterdir() if p.suffix.lower() in (".jpeg", ".png"))
        train = [f for f, y in zip(splits.train_files, splits.train_labels, strict=True) if y == label]
        test = [f for f, y in zip(splits.test_files, splits.test_labels, strict=True) if y == label]
        assert all(Path(f).parent.name == wnid for f in train + test)
        assert len(test) == 2 and not set(train) & set(test)
        assert sorted(train + test) == every
    assert splits.split("train") == (splits.train_files, splits.train_labels)


def test_split_is_seeded_and_independent_of_the_other_concepts(tmp_path):
    root = _concepts(tmp_path, {w: 20 for w in WNIDS})
    first = scan_concept_folders(root, test_per_class=5, seed=1)
    assert first.test_files == scan_concept_folders(root, test_per_class=5, seed=1).test_files
    assert first.test_files != scan_concept_folders(root, test_per_class=5, seed=2).test_files
    alone = scan_concept_folders(root, test_per_class=5, seed=1, wnids=[WNIDS[0]])
    assert alone.wnids == (WNIDS[0],)
    assert set(alone.test_files) <= set(first.test_files)


def test_malformed_folder_name_is_an_error_naming_it(tmp_path):
    root = _concepts(tmp_path, {WNIDS[0]: 3, "goldfish": 3})
    with pytest.raises(MalformedWnidError, match="goldfish"):
        scan_concept_folders(root, test_per_class=1)


def test_unknown_wnid_is_an_error_unless_any_wnid_is_accepted(tmp_path):
    root = _concepts(tmp_path, {WNIDS[0]: 3, "n00000042": 3})
    with pytest.raises(UnknownConceptError, match="n00000042.*known=None"):
        scan_concept_folders(root, test_per_class=1)
    assert scan_concept_folders(root, test_per_class=1, known=None).wnids == ("n00000042", WNIDS[0])


def test_too_few_images_is_an_error_naming_the_concept_and_its_count(tmp_path):
    root = _concepts(tmp_path, {WNIDS[0]: 60, WNIDS[1]: 50})
    with pytest.raises(TooFewImagesError, match=rf"{WNIDS[1]} \(.*\) has 50.*at least 51 \(50 test \+ 1 train\)"):
        scan_concept_folders(root)
    assert len(scan_concept_folders(root, wnids=[WNIDS[0]]).test_files) == 50


def test_missing_requested_concepts_and_empty_roots_are_errors(tmp_path):
    root = _concepts(tmp_path / "data", {WNIDS[0]: 3})
    with pytest.raises(FileNotFoundError, match=WNIDS[1]):
        scan_concept_folders(root, test_per_class=1, wnids=[WNIDS[0], WNIDS[1]])
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no concept folders"):
        scan_concept_folders(tmp_path / "empty")
    with pytest.raises(FileNotFoundError, match="not found"):
        scan_concept_folders(tmp_path / "nowhere")


def test_at_most_max_train_training_images_a_seeded_choice_and_too_few_named(tmp_path):
    root = _concepts(tmp_path / "in21k", {WNIDS[0]: 30, WNIDS[1]: 12})
    splits = scan_concept_folders(root, test_per_class=5, min_train=4, max_train=10, seed=3)
    files, labels = splits.split("train")
    per_concept = np.bincount(labels)
    assert per_concept.tolist() == [7, 10]  # label order is sorted wnids: 12 -> all 7; 30 -> 10 of the 25 left
    assert not set(files) & set(splits.test_files)
    again = scan_concept_folders(root, test_per_class=5, min_train=4, max_train=10, seed=3)
    other = scan_concept_folders(root, test_per_class=5, min_train=4, max_train=10, seed=4)
    assert again.train_files == files and other.train_files != files
    with pytest.raises(TooFewImagesError, match=rf"{WNIDS[1]} .* has 12.*at least 20"):
        scan_concept_folders(root, test_per_class=5, min_train=15, max_train=20)


def test_the_seen_test_set_comes_from_the_validation_folders(tmp_path):
    from lifelong.data.sources.concept_folders import seen_concepts

    train = _concepts(tmp_path / "train", {w: 8 for w in WNIDS})
    val = _concepts(tmp_path / "val", {w: 3 for w in WNIDS})
    splits = seen_concepts(train, val, list(WNIDS))
    assert len(splits.train_files) == 24 and all(str(train) in f for f in splits.train_files)
    assert len(splits.test_files) == 9 and all(str(val) in f for f in splits.test_files)
    assert splits.wnids == tuple(sorted(WNIDS)) and splits.test_labels.tolist() == [0] * 3 + [1] * 3 + [2] * 3
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "ILSVRC2012_val_00000001.JPEG").write_bytes(b"x")
    with pytest.raises(FileNotFoundError, match="loose images: sort the validation images into <wnid>/ folders"):
        seen_concepts(train, loose, list(WNIDS))
    (val / WNIDS[2]).rename(tmp_path / "moved")
    with pytest.raises(TooFewImagesError, match=rf"val/{WNIDS[2]}"):
        seen_concepts(train, val, list(WNIDS))
