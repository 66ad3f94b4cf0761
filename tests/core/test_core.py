import pickle
import subprocess
import sys

import numpy as np
import pytest

from lifelong.core import ArrayDataset, Resources, TaskKey, TaskKind
from lifelong.testing import tiny_stream


def key(kind=TaskKind.MULTI_CLASS, classes=3, **kw):
    return TaskKey("toy", kind, classes, **kw)


def test_core_imports_without_torch():
    code = "import sys, lifelong.core, lifelong.testing; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_task_key_occurrence_gives_unique_uid_and_links_first():
    first, again = key(occurrence=0), key(occurrence=1)
    assert first.uid == "toy" and again.uid == "toy#1"
    assert again.first_uid == first.uid
    assert first != again


@pytest.mark.parametrize(
    "kwargs, message",
    [({"name": ""}, "non-empty"), ({"num_classes": 1}, ">= 2 classes"), ({"class_names": ("a",)}, "1 class names")],
)
def test_task_key_rejects_bad_values(kwargs, message):
    base = {"name": "t", "kind": TaskKind.MULTI_CLASS, "num_classes": 3} | kwargs
    with pytest.raises(ValueError, match=message):
        TaskKey(**base)


def test_resources_combine_adds_flops_and_keeps_peak():
    total = Resources(1e12, 10).combine(Resources(2.5e12, 7))
    assert total == Resources(3.5e12, 10)
    with pytest.raises(ValueError):
        Resources(float("nan"))


def test_label_out_of_range_names_task_label_and_classes():
    images = np.zeros((4, 2, 2, 3), np.uint8)
    with pytest.raises(ValueError, match=r"task 'toy'.*item 2: label 7 is out of range for 3 classes"):
        ArrayDataset(key(), "train", images, np.array([0, 1, 7, 2]))


def test_multi_label_targets_validated():
    images = np.zeros((2, 2, 2, 1), np.uint8)
    ds = ArrayDataset(key(TaskKind.MULTI_LABEL, 3), "dev", images, np.array([[1, 0, 1], [0, 0, 0]]))
    assert ds.labels().dtype == np.uint8
    with pytest.raises(ValueError, match="item 0: multi-hot entry for class 0 is 2, expected 0 or 1"):
        ArrayDataset(key(TaskKind.MULTI_LABEL, 3), "dev", images, np.array([[2, 0, 1], [0, 0, 0]]))
    with pytest.raises(ValueError, match=r"shape \(N, 3\)"):
        ArrayDataset(key(TaskKind.MULTI_LABEL, 3), "dev", images, np.array([1, 0]))


def test_batches_cover_dataset_in_order_and_shuffle_is_seeded():
    images = np.arange(10 * 2 * 2 * 1, dtype=np.uint8).reshape(10, 2, 2, 1)
    ds = ArrayDataset(key(classes=5), "train", images, np.arange(10) % 5)
    ordered = np.concatenate([b.indices for b in ds.batches(4)])
    assert ordered.tolist() == list(range(10))
    a = np.concatenate([b.indices for b in ds.batches(4, shuffle=True, seed=3)])
    b = np.concatenate([b.indices for b in ds.batches(4, shuffle=True, seed=3)])
    assert a.tolist() == b.tolist() and sorted(a.tolist()) == list(range(10)) and a.tolist() != ordered.tolist()
    assert sum(len(b.indices) for b in ds.batches(4, drop_last=True)) == 8
    with pytest.raises(ValueError, match="needs a seed"):
        next(ds.batches(4, shuffle=True))
    for batch in ds.batches(3, shuffle=True, seed=1):
        assert np.array_equal(batch.images, images[batch.indices])


def test_stream_events_alternate_train_and_predict_and_load_lazily():
    loads = []
    stream = tiny_stream()
    for task in stream.tasks:
        original = task.load
        object.__setattr__(task, "load", lambda original=original, uid=task.key.uid: loads.append(uid) or original())
    events = stream.events()
    assert [type(e).__name__ for e in events] == ["TrainEvent", "PredictEvent"] * 3
    assert [e.index for e in events] == list(range(6))
    assert loads == []  # listing events does not touch data
    assert len(events[1].dataset) > 0 and loads == ["bars3"]
    assert events[0].train_and_dev.labels().shape[0] == len(events[0].train) + len(events[0].dev)
    assert [k.uid for k in stream.meta_test_tasks] == ["bars4", "bars_ml"]


def test_stream_is_picklable_for_executors():
    stream = tiny_stream()
    clone = pickle.loads(pickle.dumps(stream))
    assert [t.key for t in clone.tasks] == [t.key for t in stream.tasks]
