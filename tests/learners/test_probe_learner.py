"""linear-probe: options, fresh probe per task, few-shot tasks, scores for the evaluation split, determinism."""

from __future__ import annotations

import numpy as np
import pytest
from suites.test_cog import write_features_set

from lifelong.learners import make_learner
from lifelong.run.environment import run
from lifelong.suites.cog import cog_stream


@pytest.fixture
def stream(tmp_path):
    return cog_stream(str(write_features_set(tmp_path / "set")), shots="all,2")


def test_runs_the_stream_and_separable_levels_score_high(stream):
    result = run(make_learner("linear-probe", probe="fast"), stream, seed=22)
    errors = {r["task"]: r["error"] for r in result.records if r["type"] == "predict"}
    assert set(errors) == {t.key.uid for t in stream.tasks}
    assert errors["cog-seen-all"] < 0.2  # well-separated clusters
    assert result.learner_state["probe"]["method"] == "fast"


def test_same_seed_same_scores_and_predict_checks_task(stream):
    learner = make_learner("linear-probe")
    events = stream.events()
    train = events[0]
    stream.splits(0)
    state_a, _ = learner.train(train, learner.init(37))
    state_b, _ = learner.train(train, learner.init(37))
    assert np.array_equal(state_a["weight"], state_b["weight"])
    scores = learner.predict(events[1], state_a)
    assert scores.shape == (len(events[1].dataset), stream.tasks[0].key.num_classes)
    other = next(e for e in events if e.task.uid != train.task.uid and type(e).__name__ == "PredictEvent")
    with pytest.raises(ValueError, match="trained on"):
        learner.predict(other, state_a)


def test_options_are_checked():
    assert make_learner("linear-probe").config.probe == "reference"  # naver/cog's recipe unless asked
    assert make_learner("linear-probe", probe="reference", trials=2, epochs=3).config.trials == 2
    with pytest.raises(ValueError, match="probe must be one of"):
        make_learner("linear-probe", probe="slow")
    with pytest.raises(ValueError, match="unknown"):
        make_learner("linear-probe", lr=0.1)


def test_scores_with_the_probes_own_classifier(stream):
    """The learner keeps the probe's final classifier: its scores reproduce the probe's test top-1."""
    from lifelong.learners.probe import _features
    from lifelong.training.probes import fast_probe

    learner = make_learner("linear-probe", probe="fast")
    train = stream.events()[0]
    state, _ = learner.train(train, learner.init(45))
    x, y = _features(train.train_and_dev, "test")
    result = fast_probe(x, y, x, y, seed=45, shots=None, class_names=train.task.class_names or None, device=None)
    assert np.array_equal(state["weight"], result.weight) and np.array_equal(state["bias"], result.bias)
    top1 = 100.0 * float(np.mean(np.argmax(x @ result.weight + result.bias, axis=1) == y))
    assert top1 == pytest.approx(result.test_top1, abs=1e-6)


def test_memory_mapped_features_go_to_the_probe_uncopied_and_train_as_in_memory(stream):
    """A level is handed to the probe as its float16 memmap (never loaded whole); same classifier as float32 rows."""
    from lifelong.learners.probe import _features
    from lifelong.training.probes import fast_probe

    train = stream.events()[0]
    x, y = _features(train.train_and_dev, "test")
    assert isinstance(x, np.memmap) and x.dtype == np.float16
    mapped = fast_probe(x, y, x, y, seed=22, device="cpu")
    in_memory = np.asarray(x, dtype=np.float32)
    loaded = fast_probe(in_memory, y, in_memory, y, seed=22, device="cpu")
    assert np.array_equal(mapped.weight, loaded.weight) and mapped.test_top1 == loaded.test_top1
