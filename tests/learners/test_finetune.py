"""Fine-tuning learners: FT-prev's chain, kNN selection (static vs dynamic), state, determinism, conformance."""

import dataclasses
import pickle

import numpy as np
import pytest
import torch

import lifelong.training.independent_recipe as independent
from lifelong.core import ArrayDataset, TaskKey, TrainEvent
from lifelong.learners import make_learner
from lifelong.learners.finetune import FinetuneKnnConfig, FinetuneKnnLearner, FinetunePrevLearner
from lifelong.learners.independent import IndependentLearner
from lifelong.testing import check_learner
from lifelong.training.models import count_parameters, make_model
from lifelong.training.recipe import FitJob
from lifelong.training.relatedness import RANDOM_INIT, backbone_state

FAST = {"resolution": None, "epochs": 4, "min_batch_size": 16, "max_batch_size": 16, "augment": False}
TINY = {"resolution": None, "epochs": 1, "min_batch_size": 16, "max_batch_size": 32}
COLOURS = np.array([[230, 30, 30], [30, 230, 30], [30, 30, 230]])


def _stripes(name, n, seed):
    """Faint horizontal (class 0) or vertical (class 1) stripes under strong noise: random features do poorly."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % 2
    horizontal = np.broadcast_to(np.where(np.arange(8) % 2 == 0, 20, -20)[:, None], (8, 8))
    pattern = np.where(labels[:, None, None] == 0, horizontal, horizontal.T)[..., None]
    images = np.clip(128 + pattern + rng.normal(0, 60, (n, 8, 8, 3)), 0, 255).astype(np.uint8)
    return ArrayDataset(TaskKey(name, "multi-class", 2), "train", images, labels)


def _colours(name, n, seed):
    """Noisy red / green / blue 8x8 images: any features separate them."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % 3
    images = np.clip(COLOURS[labels][:, None, None, :] + rng.normal(0, 25, (n, 8, 8, 3)), 0, 255).astype(np.uint8)
    return ArrayDataset(TaskKey(name, "multi-class", 3), "train", images, labels)


def _event(index, make, name, seed, n=128):
    train, dev = make(name, n, seed), make(name, 96, seed + 100)
    return TrainEvent(2 * index, index, train.task, train, dev, train)


# stripes, then an unrelated colour task, then stripes again
EVENTS = [_event(0, _stripes, "s1", 1), _event(1, _colours, "col", 2), _event(2, _stripes, "s2", 3)]


class _SearchSpy:
    """Wraps the learners' search, recording the initial backbone and work folder of every search."""

    def __init__(self):
        self.calls = []
        self._search = independent.search

    def __call__(self, fit, trials, **kwargs):
        self.calls.append((fit.init_backbone, kwargs.get("workdir")))
        return self._search(fit, trials, **kwargs)


def _run(learner, events, seed=0, state=None):
    state = learner.init(seed) if state is None else state
    states, resources = [], []
    for event in events:
        state, used = learner.train(event, state)
        states.append(state)
        resources.append(used)
    return states, resources


@pytest.fixture(scope="module")
def knn_runs():
    """finetune-knn over EVENTS in both modes, with every search's initial backbone recorded."""
    runs = {}
    with pytest.MonkeyPatch.context() as patch:
        for mode in ("dynamic", "static"):
            spy = _SearchSpy()
            patch.setattr(independent, "search", spy)
            states, resources = _run(FinetuneKnnLearner(**FAST, mode=mode), EVENTS)
            runs[mode] = (states, resources, spy.calls)
    return runs


def _equal(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_finetune_prev_starts_each_task_from_the_previous_model(monkeypatch):
    spy = _SearchSpy()
    monkeypatch.setattr(independent, "search", spy)
    learner = FinetunePrevLearner(**TINY)
    states, resources = _run(learner, EVENTS[:2])
    (first_init, _), (second_init, _) = spy.calls
    assert first_init is None and states[0]["init_from"] == RANDOM_INIT
    assert _equal(second_init, backbone_state(states[0]["model"]))
    assert states[1]["init_from"] == "task:s1"
    assert [s["init"] for s in states[1]["selections"]] == [RANDOM_INIT, "task:s1"]
    model = count_parameters(make_model("resnet_mini", 3))
    backbone = count_parameters(make_model("resnet_mini", 3).backbone)
    assert resources[0].peak_parameters == count_parameters(make_model("resnet_mini", 2))
    assert resources[1].peak_parameters == model + backbone  # the previous model is held while training
    assert all(r.train_flops > 0 and r.dev_curve for r in resources)


def test_static_knn_picks_the_related_past_task_not_the_unrelated_one(knn_runs):
    states, _, calls = knn_runs["static"]
    last = states[-1]["selections"][-1]
    assert last["init"] == "task:s1"
    scores = last["scores"]
    assert scores["task:s1"] > scores[RANDOM_INIT] > scores["task:col"]
    # searches: s1, col, col's independent model, s2, s2's independent model
    assert _equal(calls[3][0], dict(states[1]["backbones"])["s1"])  # s2 starts from s1's own model
    assert calls[2][0] is None and calls[4][0] is None
    assert last["feature_flops"] > 0 and last["knn_items"] == (128, 96)


def test_dynamic_knn_follows_the_chain_of_finetuned_models(knn_runs):
    states, _, _ = knn_runs["dynamic"]
    choices = [s["init"] for s in states[-1]["selections"]]
    # col ties s1 with random init (colours are easy for any features) and starts from s1, so col's own model
    # keeps s1's stripe features: with features of the actual models, s2 sees col as related too.
    assert choices[:2] == [RANDOM_INIT, "task:s1"]
    scores = states[-1]["selections"][-1]["scores"]
    assert min(scores["task:s1"], scores["task:col"]) > scores[RANDOM_INIT]
    static_scores = knn_runs["static"][0][-1]["selections"][-1]["scores"]
    assert scores["task:s1"] == static_scores["task:s1"]  # s1 started from random: its model is independent
    assert scores["task:col"] != static_scores["task:col"]  # col did not: static scores it with another model


def test_static_scores_with_independent_models_whose_flops_count(knn_runs):
    states, resources, calls = knn_runs["static"]
    references = dict(states[-1]["references"])
    assert references["s1"] is None  # s1 started from random weights: its own model is independent
    independent_state, independent_used = IndependentLearner(**FAST).train(EVENTS[1], IndependentLearner().init(0))
    assert _equal(references["col"], backbone_state(independent_state["model"]))
    dynamic_resources = knn_runs["dynamic"][1]
    assert resources[1].train_flops == pytest.approx(dynamic_resources[1].train_flops + independent_used.train_flops)
    assert [workdir for _, workdir in calls] == [None] * len(calls)  # no workdir given: nothing persisted
    assert len(calls) == 5  # three tasks + independent models for col and s2


def _unrelated_past_then_train(**options):
    """Train a colour task on a state holding two past backbones whose features carry nothing (all zeros)."""
    learner = FinetuneKnnLearner(**TINY, **options)
    state = learner.init(0)
    blank = {k: torch.zeros_like(v) for k, v in make_model("resnet_mini", 2).backbone.state_dict().items()}
    state["backbones"] = [("old-a", blank), ("old-b", blank)]
    return learner.train(_event(0, _colours, "now", 5, n=64), state)


def test_knn_never_starts_from_random_init_once_a_past_model_exists_by_default(monkeypatch):
    spy = _SearchSpy()
    monkeypatch.setattr(independent, "search", spy)
    state, resources = _unrelated_past_then_train()
    selection = state["selections"][-1]
    scores = selection["scores"]
    assert scores[RANDOM_INIT] > max(scores["task:old-a"], scores["task:old-b"]), "random init is still scored"
    assert selection["best_scored"] == RANDOM_INIT
    assert selection["init"] == "task:old-b" == state["init_from"], "the best past model (most recent on a tie)"
    assert spy.calls[0][0] is not None and all(not v.any() for v in spy.calls[0][0].values())
    backbone = count_parameters(make_model("resnet_mini", 3).backbone)
    assert resources.peak_parameters == count_parameters(make_model("resnet_mini", 3)) + 2 * backbone


def test_knn_picks_random_init_when_allowed_and_no_past_model_is_related(monkeypatch):
    spy = _SearchSpy()
    monkeypatch.setattr(independent, "search", spy)
    state, resources = _unrelated_past_then_train(allow_random_init=True)
    selection = state["selections"][-1]
    assert selection["init"] == selection["best_scored"] == RANDOM_INIT and spy.calls[0][0] is None
    assert selection["scores"][RANDOM_INIT] > max(selection["scores"]["task:old-a"], selection["scores"]["task:old-b"])
    backbone = count_parameters(make_model("resnet_mini", 3).backbone)
    assert resources.peak_parameters == count_parameters(make_model("resnet_mini", 3)) + 2 * backbone


def test_state_keeps_a_bounded_number_of_past_models_and_pickles():
    learner = FinetuneKnnLearner(**TINY, max_past_models=1)
    states, _ = _run(learner, [_event(0, _colours, "a", 1, n=48), _event(1, _colours, "b", 2, n=48)])
    assert [uid for uid, _ in states[0]["backbones"]] == ["a"]
    assert [uid for uid, _ in states[1]["backbones"]] == ["b"]
    assert all(v.device.type == "cpu" for _, b in states[1]["backbones"] for v in b.values())
    restored = pickle.loads(pickle.dumps(states[1]))
    assert _equal(restored["backbones"][0][1], states[1]["backbones"][0][1])


def test_same_seed_gives_the_same_choices_and_weights():
    events = [_event(0, _colours, "a", 1, n=48), _event(1, _stripes, "b", 2, n=48)]
    a, _ = _run(FinetuneKnnLearner(**TINY), events, seed=3)
    b, _ = _run(FinetuneKnnLearner(**TINY), events, seed=3)
    assert a[-1]["selections"] == b[-1]["selections"]
    assert _equal(a[-1]["model"], b[-1]["model"])


def test_options_are_checked():
    with pytest.raises(ValueError, match="mode must be one of"):
        FinetuneKnnLearner(mode="sometimes")
    with pytest.raises(ValueError, match=r"unknown FinetuneKnnLearner option 'colour'"):
        FinetuneKnnLearner(colour="red")
    with pytest.raises(ValueError, match="max_past_models"):
        FinetuneKnnLearner(max_past_models=0)
    with pytest.raises(ValueError, match="allow_random_init.*'yes'.*true or false"):
        FinetuneKnnLearner(allow_random_init="yes")
    with pytest.raises(ValueError, match="allow_random_init must be true or false, got 'yes'"):
        FinetuneKnnConfig(allow_random_init="yes")
    assert make_learner("finetune-knn").config.allow_random_init is False
    assert make_learner("finetune-knn", allow_random_init=True).config.allow_random_init is True
    with pytest.raises(ValueError, match="unknown FinetunePrevLearner option"):
        FinetunePrevLearner(mode="static")
    assert isinstance(make_learner("finetune-prev", **TINY), FinetunePrevLearner)
    assert make_learner("finetune-knn", mode="static").config.mode == "static"


@pytest.mark.parametrize(
    "name, options",
    [("finetune-prev", {}), ("finetune-knn", {"mode": "dynamic"}), ("finetune-knn", {"mode": "static"})],
)
def test_check_learner_passes(name, options):
    summary = check_learner(make_learner(name, **TINY, **options))
    assert summary["cumulative_train_flops"] > 0


def test_finished_trials_in_the_workdir_are_not_trained_again(tmp_path, monkeypatch):
    learner = FinetuneKnnLearner(**TINY, mode="static")
    first = _event(0, _colours, "a", 1, n=48)
    state, _ = learner.train(first, learner.init(0))
    event = dataclasses.replace(_event(1, _colours, "b", 2, n=48), workdir=tmp_path)
    done, used = learner.train(event, state)
    assert done["init_from"] == "task:a"  # colours again: a's model is as good as any, and comes first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["independent", "trials"]

    def no_training(self, trial):
        raise AssertionError("a finished trial was trained again")

    monkeypatch.setattr(FitJob, "__call__", no_training)
    again, used_again = learner.train(event, state)
    assert _equal(again["model"], done["model"]) and used_again == used
