"""The `facts-mini` stream from the registry: 186 facts in 4 tasks, semantic and random splits of the same data."""

from __future__ import annotations

import numpy as np
import pytest
from _prereq import emoji_art

from lifelong.suites import STREAMS, get_stream

SMALL = {"size": 16, "n_images": 600, "min_per_fact": 1, "test_per_fact": 1}  # the default 186 facts, few images


@pytest.fixture(scope="module")
def streams(tmp_path_factory):
    emoji_art()
    root = tmp_path_factory.mktemp("data")
    return {split: get_stream("facts-mini", data_root=root, split=split, **SMALL) for split in ("semantic", "random")}


def test_facts_mini_is_registered():
    assert "facts-mini" in STREAMS


@pytest.mark.parametrize("split", ["semantic", "random"])
def test_four_tasks_partition_the_186_facts(streams, split):
    stream = streams[split]
    assert stream.name == f"facts-mini-{split}" and len(stream.tasks) == 4
    owned = [task.key.metadata["task_facts"] for task in stream.tasks]
    assert sorted(f for task in owned for f in task) == list(range(186))
    for task in stream.tasks:
        vectors = task.key.metadata["fact_vectors"]
        assert vectors.ndim == 3 and vectors.shape[:2] == (186, 3) and vectors.shape[2] > 0
        assert len(task.key.class_names) == 186


def test_semantic_and_random_splits_differ(streams):
    assert streams["semantic"].metadata["fact_task"] != streams["random"].metadata["fact_task"]
    assert streams["semantic"].metadata["facts"] == streams["random"].metadata["facts"]


def _test_union(stream) -> list[tuple[int, bytes]]:
    pairs = []
    for t in range(len(stream.tasks)):
        test = stream.splits(t).test
        pairs += [(int(label), image.tobytes()) for label, image in zip(test.labels(), test.images, strict=True)]
    return sorted(pairs)


def test_the_tasks_test_images_are_the_same_union_on_both_splits(streams):
    semantic, random = _test_union(streams["semantic"]), _test_union(streams["random"])
    assert len(semantic) == 186  # test_per_fact=1
    assert semantic == random
    labels = np.array([label for label, _ in semantic])
    assert np.array_equal(np.sort(labels), np.arange(186))
