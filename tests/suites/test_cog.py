"""The CoG stream over a features set: tasks per (level, shots), splits, options, and clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lifelong.data.feature_files import FORMAT as FEATURES_FORMAT
from lifelong.suites import get_stream
from lifelong.suites.cog import (
    FORMAT,
    INDEX_FILE,
    CogFeaturesError,
    cog_stream,
    parse_shots,
    split_task_name,
)


def write_features_set(
    folder, levels=("seen", "L1", "L2"), classes=4, train=20, test=6, dim=8, seed=0, seen_classes=None
):
    """A features set laid out as `lifelong cog run` writes it: separability falls level by level."""
    rng = np.random.default_rng(seed)
    index = {"format": FORMAT, "dataset": "cog-mini", "encoder": {"name": "toy"}, "levels": []}
    all_classes = classes
    for number, level in enumerate(levels):
        classes = seen_classes if level == "seen" and seen_classes else all_classes
        centres = rng.normal(size=(classes, dim)) * (3.0 / (1 + number))
        for split, per in (("train", train), ("test", test)):
            labels = np.repeat(np.arange(classes), per)
            x = (centres[labels] + rng.normal(size=(len(labels), dim))).astype(np.float16)
            where = folder / level / split
            where.mkdir(parents=True)
            np.save(where / "features.npy", x)
            np.save(where / "labels.npy", labels.astype(np.int64))
            manifest = {"format": FEATURES_FORMAT, "complete": True, "rows": len(labels), "feature_dim": dim}
            (where / "manifest.json").write_text(json.dumps(manifest))
        wnids = [f"n{number:04d}{k:04d}" for k in range(classes)]
        index["levels"].append({"name": level, "wnids": wnids})
    (folder / INDEX_FILE).write_text(json.dumps(index))
    return folder


def test_tasks_per_level_and_shots_with_feature_splits(tmp_path):
    folder = write_features_set(tmp_path / "set")
    stream = cog_stream(str(folder), levels="seen,2", shots="all,2")
    assert [t.key.uid for t in stream.tasks] == ["cog-seen-all", "cog-seen-2shot", "cog-L2-all", "cog-L2-2shot"]
    assert stream.tasks[1].key.metadata["shots"] == 2 and stream.tasks[0].key.metadata["shots"] is None
    splits = stream.splits(2)
    assert splits.train.is_features and splits.train.images.dtype == np.float16  # stored rows, memory-mapped
    assert isinstance(splits.train.images, np.memmap) and splits.train_and_dev().images is splits.train.images
    assert next(splits.train.batches(8)).images.dtype == np.float32
    assert len(splits.train) == 80 and len(splits.dev) == 0 and len(splits.test) == 24
    assert np.array_equal(splits.dev_test.labels(), splits.test.labels())
    assert split_task_name("cog-L2-2shot") == ("L2", "2") and split_task_name("cog-seen-all") == ("seen", "all")


def test_registered_streams_by_name_and_data_root(tmp_path):
    write_features_set(tmp_path / "cog-features" / "toy")
    stream = get_stream("cog-mini", data_root=str(tmp_path), features="toy", eval_split="test")
    assert stream.name == "cog-mini:toy:seen+L1+L2:all" and len(stream.tasks) == 3
    assert get_stream("cog", data_root=str(tmp_path), features="toy", levels="1").tasks[0].key.uid == "cog-L1-all"


def test_errors_say_what_to_do(tmp_path):
    with pytest.raises(CogFeaturesError, match="lifelong cog run"):
        cog_stream(None)
    with pytest.raises(CogFeaturesError, match="lifelong cog run"):
        cog_stream(str(tmp_path / "nowhere"))
    folder = write_features_set(tmp_path / "set")
    with pytest.raises(ValueError, match="choose among"):
        cog_stream(str(folder), levels="7")
    with pytest.raises(ValueError, match="shots"):
        parse_shots("all,0")
    manifest = folder / "L1" / "test" / "manifest.json"
    unfinished = json.loads(manifest.read_text()) | {"complete": False, "files_done": 3, "inputs": {"count": 12}}
    manifest.write_text(json.dumps(unfinished))
    with pytest.raises(CogFeaturesError, match=r"test features of level 'L1'.*unfinished \(3 of 12"):
        cog_stream(str(folder), levels="1").splits(0)
    np.save(folder / "L2" / "train" / "labels.npy", np.zeros(5, np.int64))
    with pytest.raises(CogFeaturesError, match=r"level 'L2'.*has 80 rows but .*labels.npy has 5 labels"):
        cog_stream(str(folder), levels="2").splits(0)


def test_the_seen_level_is_probed_as_seeded_draws_of_a_levels_size(tmp_path):
    from lifelong.suites.cog import base_level

    folder = write_features_set(tmp_path / "set", seen_classes=10)
    stream = cog_stream(str(folder), levels="seen,1")
    names = [t.key.uid for t in stream.tasks]
    assert names == [f"cog-seen-d{k}-all" for k in range(1, 6)] + ["cog-L1-all"]
    index = json.loads((folder / INDEX_FILE).read_text())
    seen_wnids = index["levels"][0]["wnids"]
    all_train = np.load(folder / "seen" / "train" / "labels.npy")
    all_x = np.load(folder / "seen" / "train" / "features.npy")
    draws = []
    for task_index in range(5):
        key = stream.tasks[task_index].key
        assert key.num_classes == 4 and list(key.class_names) == sorted(key.class_names)
        chosen = [seen_wnids.index(w) for w in key.class_names]
        splits = stream.splits(task_index)
        assert sorted(set(splits.train.labels().tolist())) == [0, 1, 2, 3] and len(splits.test) == 4 * 6
        expected_rows = np.flatnonzero(np.isin(all_train, chosen))
        assert np.array_equal(np.asarray(splits.train.images), all_x[expected_rows])  # the drawn concepts' rows
        assert np.array_equal(np.array(chosen)[splits.train.labels()], all_train[expected_rows])  # renumbered
        draws.append(tuple(key.class_names))
        assert base_level(split_task_name(key.uid)[0]) == "seen"
    assert len(set(draws)) > 1  # the draws differ, and are the same for another run of the stream
    assert [t.key.class_names for t in cog_stream(str(folder), levels="seen").tasks] == draws
    whole = cog_stream(str(folder), levels="seen", seen_draws=0)
    assert [t.key.uid for t in whole.tasks] == ["cog-seen-all"] and whole.tasks[0].key.num_classes == 10
    same_size = write_features_set(tmp_path / "same")  # the seen set is no larger than a level: no draws
    assert [t.key.uid for t in cog_stream(str(same_size), levels="seen").tasks] == ["cog-seen-all"]
    with pytest.raises(ValueError, match="seen_draws is -1"):
        cog_stream(str(folder), levels="seen", seen_draws=-1)
