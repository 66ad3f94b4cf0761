"""The offline default stream `mini`: its shape (years, kinds, repeats, resolutions) and its cheap tasks' splits."""

from __future__ import annotations

import hashlib
from collections import Counter

import numpy as np
import pytest

from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.core.tasks import TaskKind
from lifelong.data.splits import SPLIT_NAMES
from lifelong.suites import STREAMS, describe_stream, get_stream


@pytest.fixture(scope="module")
def mini():
    return get_stream("mini")


def _index(stream, uid: str) -> int:
    return [t.key.uid for t in stream.tasks].index(uid)


def _row_hashes(data) -> list[str]:
    """One digest per row: image bytes and label bytes together."""
    labels = data.labels()
    return [hashlib.md5(data.images[i].tobytes() + labels[i].tobytes()).hexdigest() for i in range(len(data))]


def test_mini_is_listed_and_builds_without_reading_data(monkeypatch):
    def no_reading(*args, **kwargs):
        raise AssertionError("building mini must not load any source")

    monkeypatch.setattr("lifelong.data.sources.load_source", no_reading)
    assert "mini" in STREAMS
    stream = get_stream("mini")
    assert stream.name == "mini" and len(stream.tasks) >= 8


def test_mini_tasks_have_chronological_years(mini):
    years = [t.key.year for t in mini.tasks]
    assert all(isinstance(y, int) for y in years), years
    assert years == sorted(years), "a stream is chronological"
    assert len(set(years)) == len(years)


def test_mini_has_a_multi_label_task(mini):
    multi = [t.key for t in mini.tasks if t.key.kind is TaskKind.MULTI_LABEL]
    assert len(multi) >= 1
    assert any(t.key.kind is TaskKind.MULTI_CLASS for t in mini.tasks)


def test_mini_repeats_a_dataset_linked_to_its_first_occurrence(mini):
    uids = [t.key.uid for t in mini.tasks]
    assert len(set(uids)) == len(uids)
    repeats = [t.key for t in mini.tasks if t.key.occurrence == 1]
    assert repeats, "mini must repeat at least one dataset"
    for key in repeats:
        assert key.uid == f"{key.name}#1" and key.first_uid == key.name
        first = mini.tasks[uids.index(key.first_uid)].key
        assert uids.index(key.first_uid) < uids.index(key.uid)
        assert first.occurrence == 0 and first.class_names == key.class_names and first.kind == key.kind
    counts = Counter(t.key.name for t in mini.tasks)
    assert {name for name, n in counts.items() if n > 1} == {k.name for k in repeats}


def test_mini_mixes_resolutions_and_class_counts(mini):
    resolutions = {t.key.metadata["resolution"] for t in mini.tasks}
    assert len(resolutions) >= 2, resolutions
    assert len({t.key.num_classes for t in mini.tasks}) >= 2


def test_mini_meta_train_and_meta_test_counts(mini):
    boundary = mini.meta_test_from_year
    assert boundary is not None
    expected_test = [t.key.uid for t in mini.tasks if t.key.year >= boundary]
    assert [k.uid for k in mini.meta_test_tasks] == expected_test
    assert len(mini.meta_train_tasks) + len(mini.meta_test_tasks) == len(mini.tasks)
    assert mini.meta_train_tasks and mini.meta_test_tasks
    assert any(k.occurrence == 1 for k in mini.meta_test_tasks), "a repeated dataset comes back in meta-test"
    summary = describe_stream(mini)
    assert summary["tasks"] == len(mini.tasks)
    assert summary["meta_train"] == len(mini.meta_train_tasks) and summary["meta_test"] == len(expected_test)
    assert summary["multi_label"] == sum(t.key.is_multi_label for t in mini.tasks)
    years = [t.key.year for t in mini.tasks]
    assert summary["years"] == [min(years), max(years)]


def test_mini_events_alternate_train_and_predict(mini):
    events = mini.events()
    assert len(events) == 2 * len(mini.tasks)
    assert [type(e) for e in events[:2]] == [TrainEvent, PredictEvent]
    assert all(isinstance(e, TrainEvent) == (i % 2 == 0) for i, e in enumerate(events))
    assert all(e.split == "dev_test" for e in events if isinstance(e, PredictEvent))
    final = get_stream("mini", eval_split="test")
    assert all(e.split == "test" for e in final.events() if isinstance(e, PredictEvent))
    with pytest.raises(ValueError, match="eval_split"):
        get_stream("mini", eval_split="train")


@pytest.mark.parametrize("uid", ["shapes_small", "textures", "multi_shapes"])
def test_mini_cheap_tasks_load_at_their_resolution(mini, uid):
    i = _index(mini, uid)
    key = mini.tasks[i].key
    splits = mini.splits(i)
    side = key.metadata["resolution"]
    for name in SPLIT_NAMES:
        data = splits.get(name)
        assert len(data) > 0 and data.task == key
        assert data.images.dtype == np.uint8 and data.images.shape[1:] == (side, side, 3)
    labels = np.concatenate([splits.get(s).labels() for s in SPLIT_NAMES])
    if key.is_multi_label:
        assert labels.shape[1] == key.num_classes
        assert labels.sum(axis=1).min() >= 1, "every multi_shapes image holds at least one shape"
    else:
        assert set(labels.tolist()) == set(range(key.num_classes))


def test_mini_splits_are_deterministic_across_builds():
    first, second = get_stream("mini"), get_stream("mini")
    i = _index(first, "shapes_small")
    a, b = first.splits(i), second.splits(i)
    for name in SPLIT_NAMES:
        assert np.array_equal(a.get(name).images, b.get(name).images), name
        assert np.array_equal(a.get(name).labels(), b.get(name).labels()), name
    other = get_stream("mini", split_seed=1).splits(i)
    assert not np.array_equal(a.train.labels(), other.train.labels()), "split_seed changes the assignment"


@pytest.mark.parametrize("uid", ["shapes_small", "multi_shapes"])
def test_mini_splits_are_disjoint(mini, uid):
    splits = mini.splits(_index(mini, uid))
    hashes = {name: _row_hashes(splits.get(name)) for name in SPLIT_NAMES}
    every = [h for name in SPLIT_NAMES for h in hashes[name]]
    assert len(every) == len(set(every)), "an image+label appears twice (within or across splits)"
    assert sum(len(v) for v in hashes.values()) == splits.notes["dedup"]["n_kept"]
    images = [img.tobytes() for name in SPLIT_NAMES for img in splits.get(name).images]
    assert len(images) == len(set(images)), "an image appears twice"


def test_mini_repeated_dataset_reloads_the_same_data(mini):
    first = mini.splits(_index(mini, "letters"))
    again = mini.splits(_index(mini, "letters#1"))
    assert again.train.task.uid == "letters#1"
    for name in SPLIT_NAMES:
        assert np.array_equal(first.get(name).images, again.get(name).images), name
        assert np.array_equal(first.get(name).labels(), again.get(name).labels()), name
