import numpy as np
import pytest

from lifelong.core.tasks import TaskKey, TaskKind
from lifelong.data.build import build_task_splits
from lifelong.data.sources import load_source
from lifelong.data.splits import SPLIT_NAMES


def test_build_task_splits_end_to_end_on_builtin_letters():
    data = load_source("builtin:letters", n_per_class=20, seed=0)
    # plant exact duplicates and one conflicting copy: they must not reach two splits
    images = np.concatenate([data.images, data.images[:5], data.images[5:6]])
    labels = np.concatenate([data.labels, data.labels[:5], (data.labels[5:6] + 1) % 10])
    data = type(data)(images, labels, data.ids + [f"copy[{i}]" for i in range(6)], data.class_names, data.kind)
    key = TaskKey("letters", TaskKind.MULTI_CLASS, 10, class_names=data.class_names)
    splits = build_task_splits(key, data, resolution=16, channels=3, seed=0)
    sizes = {name: len(splits.get(name)) for name in SPLIT_NAMES}
    assert sizes == {"train": 112, "dev": 24, "dev_test": 24, "test": 40}
    assert splits.train.image_shape == (16, 16, 3)
    assert splits.notes["dedup"]["duplicates_removed"] == 5
    assert splits.notes["dedup"]["conflicting_labels"] == 1
    assert splits.notes["split_sizes"] == sizes
    seen = [{splits.get(n).images[i].tobytes() for i in range(len(splits.get(n)))} for n in SPLIT_NAMES]
    assert sum(len(s) for s in seen) == len(set().union(*seen)), "an image appears in two splits"
    again = build_task_splits(key, data, resolution=16, channels=3, seed=0)
    assert np.array_equal(again.test.images, splits.test.images)
    assert np.array_equal(again.test.labels(), splits.test.labels())


def test_official_split_and_multi_label_source():
    data = load_source("builtin:multi_shapes", n_per_class=6, seed=1)
    data.official_split = np.where(np.arange(len(data)) < 36, "train", "test")
    key = TaskKey("multi", TaskKind.MULTI_LABEL, 8)
    splits = build_task_splits(key, data, resolution=8, channels=1)
    assert {n: len(splits.get(n)) for n in SPLIT_NAMES} == {"train": 25, "dev": 6, "dev_test": 5, "test": 12}
    assert splits.test.labels().shape == (12, 8)
    assert splits.train.image_shape == (8, 8, 1)


def test_too_few_items_names_the_task_and_empty_split():
    data = load_source("builtin:digits", n_per_class=None, seed=0).subset(np.arange(3))
    key = TaskKey("tiny_digits", TaskKind.MULTI_CLASS, 10)
    with pytest.raises(ValueError, match=r"task 'tiny_digits'.*\['dev', 'dev_test'\].*would be empty"):
        build_task_splits(key, data, resolution=8)


def test_task_and_data_must_agree():
    data = load_source("builtin:digits", n_per_class=5, seed=0)
    with pytest.raises(ValueError, match="declares 12 classes but its data has 10"):
        build_task_splits(TaskKey("d", TaskKind.MULTI_CLASS, 12), data, resolution=8)
    with pytest.raises(ValueError, match="is multi-label but its data is multi-class"):
        build_task_splits(TaskKey("d", TaskKind.MULTI_LABEL, 10), data, resolution=8)
