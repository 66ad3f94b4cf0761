"""ExpertGate on the fact model: gates route images to their task's expert, experts start from the most related one,
predictions score every fact, the state survives pickling, and the learner runs a fact stream end to end."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from learners.test_fact_embedding import CNN, FACTS, FAST, _images, _vectors, make_stream

from lifelong import testing
from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.facts.splits import Split
from lifelong.learners import make_learner
from lifelong.learners.fact_embedding import FactLearner
from lifelong.learners.fact_expertgate import FactExpertGateLearner, gate_errors, relatedness, train_gate
from lifelong.run.environment import run
from lifelong.suites.facts import fact_stream
from lifelong.training.encoders import save_encoder, untrained_encoder
from lifelong.training.models import count_parameters
from lifelong.training.recipe import materialize

GATE = {"gate_epochs": 30, "gate_lr": 0.01, "gate_batch_size": 16, "gate_hidden": 16}


def _shaded_stream(task_of_fact: list[int], shades: list[str]):
    """A fact stream whose task t's images are all dark or all bright (shades[t]), fact patterns kept."""
    task = np.asarray(task_of_fact)
    split = Split(task=task, tasks=len(shades), method="custom")
    bright = np.array([shades[t] == "bright" for t in task])

    def images(which: str) -> tuple[np.ndarray, np.ndarray]:
        base, labels = _images(which)
        scaled = 0.3 * base.astype(float) + np.where(bright[labels], 178.0, 0.0)[:, None, None, None]
        return scaled.astype(np.uint8), labels

    return fact_stream("shaded-facts", FACTS, split, _vectors(), images, np.full(len(FACTS), 12), resolution=16)


def _train_all(learner, stream, seed=0):
    events = stream.events()
    state, spent = learner.init(seed), []
    for event in (e for e in events if isinstance(e, TrainEvent)):
        state, resources = learner.train(event, state)
        spent.append(resources)
    return state, spent, [e for e in events if isinstance(e, PredictEvent)]


@pytest.fixture(scope="module")
def dark_bright():
    """Two tasks, dark then bright, trained once for the tests that only read the result."""
    learner = FactExpertGateLearner(**CNN, **GATE)
    state, spent, predicts = _train_all(learner, _shaded_stream([0] * 5 + [1] * 5, ["dark", "bright"]))
    return learner, state, spent, predicts


def test_relatedness_is_one_for_the_own_error_and_falls_as_errors_grow():
    np.testing.assert_allclose(relatedness(np.array([0.1, 0.2, 0.3]), 0.1), [1.0, 0.0, -1.0])


def test_a_gate_reconstructs_its_own_distribution_better_than_another():
    rng = np.random.default_rng(0)
    own, other = rng.normal(0, 1, size=(80, 30)), rng.normal(3, 1, size=(80, 30))
    gate, flops = train_gate(own, hidden=8, epochs=30, lr=0.01, batch_size=16, seed=0)
    assert gate_errors(gate, own[:40]).mean() < gate_errors(gate, other[:40]).mean() and flops > 0


def test_gates_route_each_distribution_to_its_own_expert(dark_bright):
    learner, state, _, predicts = dark_bright
    for event in predicts[-2:]:  # after the last task: each task's test split
        routes = learner.route(materialize(event.dataset).images, state)
        assert np.mean(routes == event.task_index) >= 0.9


def test_predict_scores_every_fact_with_the_routed_expert(dark_bright):
    learner, state, _, predicts = dark_bright
    event = predicts[-1]
    scores = learner.predict(event, state)
    assert scores.shape == (len(materialize(event.dataset)), len(FACTS))
    routes = learner.route(materialize(event.dataset).images, state)
    for k in np.unique(routes):
        expert = FactLearner(**CNN).predict(event, {**state, "model": state["experts"][k]})
        np.testing.assert_array_equal(scores[routes == k], expert[routes == k])


def test_before_training_it_predicts_like_the_fact_learner():
    stream = make_stream()
    event = next(e for e in stream.events() if isinstance(e, PredictEvent))
    learner, plain = FactExpertGateLearner(**CNN, **GATE), FactLearner(**CNN)
    np.testing.assert_array_equal(learner.predict(event, learner.init(3)), plain.predict(event, plain.init(3)))


def test_state_survives_pickle_and_counts_every_expert_and_gate(dark_bright):
    learner, state, spent, predicts = dark_bright
    restored = pickle.loads(pickle.dumps(state))
    for event in predicts[-2:]:
        np.testing.assert_array_equal(learner.predict(event, restored), learner.predict(event, state))
    expert = count_parameters(learner._model(state))
    gates = sum(sum(v.numel() for v in g["weights"].values()) + g["mean"].size + g["std"].size for g in state["gates"])
    assert spent[-1].peak_parameters == 2 * expert + gates


def test_a_new_task_starts_from_the_most_related_expert(monkeypatch):
    starts = []
    original = FactLearner.train

    def spy(self, event, state):
        starts.append(state["model"])
        return original(self, event, state)

    monkeypatch.setattr(FactLearner, "train", spy)
    stream = _shaded_stream([0] * 4 + [1] * 3 + [2] * 3, ["dark", "bright", "dark"])
    state, *_ = _train_all(FactExpertGateLearner(**CNN, **GATE), stream)
    assert state["parents"] == [None, 0, 0]
    assert state["relatedness"][2][0] > state["relatedness"][2][1]
    assert starts[0] is None and starts[2] is state["experts"][0]


def test_a_gate_encoder_gives_the_gates_its_features_and_is_not_pickled(tmp_path):
    spec = str(save_encoder(untrained_encoder("resnet_mini", resolution=16), tmp_path / "encoder.pt"))
    learner = FactExpertGateLearner(**CNN, gate_encoder=spec)
    images = _images("test")[0][:5]
    features, flops = learner.gate_features(images)
    assert features.shape == (5, learner._gate_encoder().feature_dim) and flops > 0
    assert pickle.loads(pickle.dumps(learner))._gate_module is None


def test_expertgate_refuses_a_shared_model_regulariser():
    with pytest.raises(ValueError, match="one expert per task"):
        FactExpertGateLearner(penalty="mas")


def test_expertgate_passes_the_protocol_checks_and_runs_a_fact_stream():
    summary = testing.check_learner(make_learner("fact-expertgate", **FAST, **GATE), stream=make_stream)
    assert summary["fact_generalized_mean_over_tasks"] is not None
    result = run(make_learner("fact-expertgate", **FAST, **GATE), make_stream(), seed=0).summary
    assert result["fact_train_steps"] > 0 and len(result["fact_train_final_losses"]) == 2  # what training did
    for key in ("fact_standard_mean_over_tasks", "fact_generalized_mean_over_examples", "fact_bwt", "fact_fwt"):
        assert result[key] is not None
