"""Transfer matrix on a tiny stream: shape, diagonal, agreement with Independent, resumable cache."""

import json

import pytest

from lifelong.core.streams import Stream
from lifelong.learners.independent import IndependentLearner
from lifelong.testing import tiny_stream
from lifelong.training.transfer_matrix import transfer_matrix

OPTIONS = {"architecture": "resnet_mini", "epochs": 1, "trials": 1, "seed": 0, "executor": "local"}
RECIPE = {"resolution": 8, "min_batch_size": 16, "max_batch_size": 32}


def _two_tasks():
    stream = tiny_stream(n_per_task=80)
    return Stream("tiny2", stream.tasks[:2])


def test_shape_diagonal_and_differences(tmp_path):
    result = transfer_matrix(_two_tasks(), **OPTIONS, recipe=RECIPE, cache_dir=tmp_path)
    assert result["tasks"] == ["bars3", "bars4"]
    matrix, accuracy, base = result["matrix"], result["finetuned_accuracy"], result["independent_accuracy"]
    assert len(matrix) == 2 and all(len(row) == 2 for row in matrix)
    assert matrix[0][0] == matrix[1][1] == 0.0
    assert accuracy[0][0] == base[0] and accuracy[1][1] == base[1]
    assert matrix[0][1] == pytest.approx(accuracy[0][1] - base[1])
    assert matrix[1][0] == pytest.approx(accuracy[1][0] - base[0])
    assert all(0.0 <= a <= 1.0 for row in accuracy for a in row)
    assert result["train_flops"] > 0
    json.dumps(result)  # JSON-ready


def test_independent_accuracy_matches_an_independent_run():
    stream = _two_tasks()
    result = transfer_matrix(stream, **OPTIONS, recipe=RECIPE)
    learner = IndependentLearner(architecture="resnet_mini", epochs=1, **RECIPE)
    events = stream.events()
    state = learner.init(0)
    state, _ = learner.train(events[0], state)
    scores = learner.predict(events[1], state)
    accuracy = float((scores.argmax(1) == events[1].dataset.labels()).mean())
    assert result["independent_accuracy"][0] == pytest.approx(accuracy)


def test_cache_skips_finished_cells_and_refuses_other_settings(tmp_path, monkeypatch):
    first = transfer_matrix(_two_tasks(), **OPTIONS, recipe=RECIPE, cache_dir=tmp_path)
    assert sorted(p.name for p in tmp_path.glob("*.pt")) == [
        "cell-000-001.pt",
        "cell-001-000.pt",
        "independent-000.pt",
        "independent-001.pt",
    ]
    import lifelong.training.independent_recipe as module

    def no_training(*args, **kwargs):
        raise AssertionError("a finished cell was trained again")

    monkeypatch.setattr(module, "search", no_training)
    again = transfer_matrix(_two_tasks(), **OPTIONS, recipe=RECIPE, cache_dir=tmp_path)
    assert again == first
    with pytest.raises(ValueError, match=r"other settings \(\['epochs'\] differ"):
        transfer_matrix(_two_tasks(), **{**OPTIONS, "epochs": 2}, recipe=RECIPE, cache_dir=tmp_path)
