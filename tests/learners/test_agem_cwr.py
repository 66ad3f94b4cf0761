"""A-GEM and CWR* against closed forms and hand computations, on tiny fixed-label-space streams."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from learners.test_continual import CLASSES, FAST, _events, _fixed_space_stream, _key
from torch import nn

from lifelong import testing
from lifelong.core.datasets import ArrayDataset
from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.learners import continual
from lifelong.learners.agem import AGEMLearner, project_gradient, reference_gradient
from lifelong.learners.continual_methods import FinetuneLearner
from lifelong.learners.cwr import CWRLearner, consolidate, head_rows
from lifelong.training.flops import count_training_flops
from lifelong.training.models import make_model

# ---- A-GEM ------------------------------------------------------------------------------------------------------


def test_projection_matches_the_closed_form() -> None:
    g, g_ref = torch.tensor([1.0, 0.0]), torch.tensor([-1.0, 1.0])
    # g . g_ref = -1, g_ref . g_ref = 2: g + 0.5 g_ref
    assert torch.equal(project_gradient(g, g_ref), torch.tensor([0.5, 0.5]))
    agreeing = torch.tensor([1.0, 2.0])
    assert project_gradient(agreeing, torch.tensor([1.0, 0.0])) is agreeing  # g . g_ref = 1 > 0: kept
    orthogonal = torch.tensor([0.0, 3.0])
    assert project_gradient(orthogonal, torch.tensor([2.0, 0.0])) is orthogonal  # g . g_ref = 0: kept
    assert project_gradient(g, torch.zeros(2)) is g  # an empty reference never conflicts
    rng = np.random.default_rng(0)
    for _ in range(20):
        a, b = rng.normal(size=7), rng.normal(size=7)
        if a @ b > 0:
            b = -b
        out = project_gradient(torch.from_numpy(a), torch.from_numpy(b)).numpy()
        np.testing.assert_allclose(out, a - (a @ b) / (b @ b) * b, rtol=1e-12)
        assert abs(out @ b) < 1e-12 and out @ a > 0  # orthogonal to g_ref, still a descent direction for g


def _linear_bucket(bucket: int, x: np.ndarray, y: np.ndarray, classes: int) -> TrainEvent:
    key = _key(bucket, classes=classes, names=tuple(f"c{i}" for i in range(classes)))
    data = ArrayDataset(key, "train", x.astype(np.float32), y.astype(np.int64))
    return TrainEvent(2 * bucket, bucket, key, data, data, data)


def _softmax_gradient(w: np.ndarray, b: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """d mean cross-entropy / d (W, b) of a linear softmax model, in closed form, flattened (W then b)."""
    z = x @ w.T + b
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    r = (p - np.eye(w.shape[0])[y]) / len(x)
    return np.concatenate([(r.T @ x).ravel(), r.sum(0)])


def test_an_agem_step_applies_the_hand_projected_gradient_and_counts_the_reference_pass() -> None:
    rng = np.random.default_rng(1)
    classes, dim, n = 3, 5, 12
    y0 = np.arange(n) % classes
    x0 = rng.normal(size=(n, dim)) + 2 * np.eye(classes, dim)[y0]
    x1 = x0 + 0.1 * rng.normal(size=(n, dim))  # the same inputs, each class relabelled as the next one
    events = [_linear_bucket(0, x0, y0, classes), _linear_bucket(1, x1, (y0 + 1) % classes, classes)]
    # one full-batch step per bucket, plain SGD: the weights move by -lr x the (projected) gradient
    options = {"encoder": "features", "linear_epochs": 1, "linear_batch_size": 64, "momentum": 0.0, "linear_lr": 0.5}
    learner = AGEMLearner(**options)
    state0, res0 = learner.train(events[0], learner.init(0))
    memory = state0["buffer"]
    assert np.array_equal(memory.items, x0.astype(np.float32)) and np.array_equal(memory.labels, y0)
    state1, res1 = learner.train(events[1], state0)
    w0, b0 = (state0["model"][k].double().numpy() for k in ("weight", "bias"))
    g = _softmax_gradient(w0, b0, x1.astype(np.float32), (y0 + 1) % classes)
    g_ref = _softmax_gradient(w0, b0, x0.astype(np.float32), y0)  # the whole memory: it holds fewer than 64
    assert g @ g_ref < 0  # the toy is built to conflict
    expected = np.concatenate([w0.ravel(), b0]) - 0.5 * (g - (g @ g_ref) / (g_ref @ g_ref) * g_ref)
    got = np.concatenate([state1["model"]["weight"].double().numpy().ravel(), state1["model"]["bias"].numpy()])
    np.testing.assert_allclose(got, expected, atol=1e-6)
    assert not np.allclose(got, np.concatenate([w0.ravel(), b0]) - 0.5 * g, atol=1e-4)  # unprojected differs
    # FLOPs: bucket 0 (empty memory) costs what fine-tuning costs; bucket 1 one reference step more
    finetune = FinetuneLearner(**options)
    ft0, ft_res0 = finetune.train(events[0], finetune.init(0))
    _, ft_res1 = finetune.train(events[1], ft0)
    reference = count_training_flops(nn.Linear(dim, classes), (torch.zeros(n, dim), torch.zeros(n, dtype=torch.long)))
    assert res0.train_flops == ft_res0.train_flops
    assert res1.train_flops == ft_res1.train_flops + reference > ft_res1.train_flops


def test_agem_memory_is_filled_after_each_bucket_and_its_reference_steps_are_counted() -> None:
    trains, _ = _events(3)
    learner, finetune = AGEMLearner(**FAST), FinetuneLearner(**FAST)
    state, ft_state = learner.init(0), finetune.init(0)
    flops = []
    for i, event in enumerate(trains):
        state, resources = learner.train(event, state)
        ft_state, ft_resources = finetune.train(event, ft_state)
        flops.append(resources.train_flops - ft_resources.train_flops)
        if i == 0:  # one bucket's worth: after bucket 0 the memory is bucket 0, in order
            data = event.train_and_dev
            assert np.array_equal(state["buffer"].items, data.images) and np.array_equal(
                state["buffer"].labels, data.labels()
            )
    memory = state["buffer"]
    assert memory.capacity == 88 and len(memory) == 88 and memory.seen == 3 * 88
    assert set(np.unique(memory.origin)) <= {0, 1, 2} and len(np.unique(memory.origin)) >= 2
    # 88 items, batch 32: 2 steps per bucket, each with a reference step on 32 memory items at 8x8
    model = make_model("resnet_mini", CLASSES, seed=0)
    step = count_training_flops(model, (torch.zeros(32, 3, 8, 8), torch.zeros(32, dtype=torch.long)))
    assert flops == [0.0, 2 * step, 2 * step]
    small = AGEMLearner(buffer_size=20, agem_sample_size=8, **FAST)
    state = small.init(0)
    for event in trains:
        state, _ = small.train(event, state)
    assert len(state["buffer"]) == 20 and state["buffer"].capacity == 20


def test_the_reference_pass_leaves_gradients_and_batchnorm_statistics_alone() -> None:
    model = make_model("resnet_mini", CLASSES, seed=0)
    x, y = torch.rand(6, 3, 8, 8), torch.arange(6) % CLASSES
    params = [p for p in model.parameters() if p.requires_grad]
    stats = {k: v.clone() for k, v in model.state_dict().items()}
    grads = reference_gradient(model, params, x, y)
    assert all(p.grad is None for p in params)
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in stats.items())  # running means, counts
    nn.functional.cross_entropy(model(x), y).backward()
    assert all(torch.allclose(g, p.grad, atol=1e-6) for g, p in zip(grads, params, strict=True))


def test_agem_and_cwr_options_are_checked() -> None:
    with pytest.raises(ValueError, match="train_on='bucket'"):
        AGEMLearner(train_on="buffer")
    with pytest.raises(ValueError, match="buffer policy"):
        AGEMLearner(buffer="none")
    with pytest.raises(ValueError, match="agem_sample_size"):
        AGEMLearner(agem_sample_size=0)
    with pytest.raises(ValueError, match="penalty='none'"):
        CWRLearner(penalty="ewc")
    with pytest.raises(ValueError, match="init='scratch'"):
        CWRLearner(freeze_backbone=True, init="scratch")
    assert AGEMLearner().config.sample_size == 64 and AGEMLearner(encoder="features").config.sample_size == 256


# ---- CWR* -------------------------------------------------------------------------------------------------------


def test_consolidate_follows_the_papers_rule_on_hand_numbers() -> None:
    cw = torch.tensor([[1.0, 1.0], [7.0, 7.0], [0.0, 0.0]])
    trained = torch.tensor([[3.0, 5.0], [9.0, 9.0], [2.0, 6.0]])
    # classes 0 and 2 in the bucket (1 and 3 items); class 1 absent. avg of their rows: (3+5+2+6)/4 = 4
    new, past = consolidate(cw, np.array([4, 2, 0]), trained, np.array([1, 0, 3]))
    # class 0: w = [-1, 1], wpast = sqrt(4 / 1) = 2: ([2, 2] + [-1, 1]) / 3; class 2 is new: w = [-2, 2]
    assert torch.allclose(new, torch.tensor([[1 / 3, 1.0], [7.0, 7.0], [-2.0, 2.0]]))
    assert past.tolist() == [5, 2, 3]


def test_cwr_consolidation_and_predictions_match_a_hand_computation(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    classes, dim = 4, 3
    labels = [np.repeat([0, 1, 2], [6, 3, 3]), np.repeat([1, 2, 3], [2, 4, 6])]  # class 3 new, class 0 absent
    events = [_linear_bucket(b, rng.normal(size=(len(y), dim)) + y[:, None], y, classes) for b, y in enumerate(labels)]
    seen: list[tuple[np.ndarray, np.ndarray]] = []  # (head before training, head after) per bucket
    real = continual.train_continual

    def recording(model: nn.Module, *args: object, **kwargs: object) -> object:
        before = head_rows(model).double().numpy()
        fit = real(model, *args, **kwargs)
        seen.append((before, head_rows(model).double().numpy()))
        return fit

    monkeypatch.setattr(continual, "train_continual", recording)
    learner = CWRLearner(encoder="features", linear_epochs=3)
    states = [learner.init(0)]
    for event in events:
        states.append(learner.train(event, states[-1])[0])
    # by hand: cw starts at 0; a row is mean-shifted by the mean of every trained entry of the bucket's classes
    cw, past = np.zeros((classes, dim + 1)), np.zeros(classes)
    for (before, trained), y in zip(seen, labels, strict=True):
        cur = np.bincount(y, minlength=classes)
        start = np.where((cur > 0)[:, None], cw, 0.0)
        np.testing.assert_allclose(before, start, atol=1e-6)  # present classes from cw, the others at zero
        avg = trained[cur > 0].mean()
        for j in np.flatnonzero(cur):
            wpast = np.sqrt(past[j] / cur[j])
            cw[j] = (cw[j] * wpast + trained[j] - avg) / (wpast + 1)
            past[j] += cur[j]
    kept = states[-1]["penalty"]
    assert kept["past"].tolist() == [6, 5, 7, 6] == past.tolist()
    np.testing.assert_allclose(kept["cw"].double().numpy(), cw, atol=1e-5)
    assert not np.allclose(cw, seen[-1][1], atol=1e-3)  # cw is not the trained head
    # predictions use cw
    x = rng.normal(size=(9, dim)).astype(np.float32)
    key = events[1].task
    scores = learner.predict(PredictEvent(5, 1, key, "test", ArrayDataset(key, "test", x, np.zeros(9))), states[-1])
    np.testing.assert_allclose(scores, x @ cw[:, :dim].T + cw[:, dim], atol=1e-5)


def test_cwr_freeze_backbone_trains_the_head_alone_after_the_first_bucket() -> None:
    trains, _ = _events(2)
    states = {}
    for freeze in (False, True):
        learner = CWRLearner(freeze_backbone=freeze, **FAST)
        state0, _ = learner.train(trains[0], learner.init(0))
        state1, _ = learner.train(trains[1], state0)
        states[freeze] = (state0, state1)
        assert not torch.equal(state0["model"]["head.weight"], state1["model"]["head.weight"])
    frozen0, frozen1 = (s["model"] for s in states[True])
    assert all(torch.equal(frozen0[k], frozen1[k]) for k in frozen0 if not k.startswith("head."))  # BN stats too
    trained0, trained1 = (s["model"] for s in states[False])
    assert not torch.equal(trained0["backbone.stem.0.weight"], trained1["backbone.stem.0.weight"])


# ---- both ------------------------------------------------------------------------------------------------------

LEARNERS = [AGEMLearner, CWRLearner]


@pytest.mark.parametrize("cls", LEARNERS, ids=lambda c: c.name)
def test_pickled_state_resumes_with_identical_predictions(cls: type) -> None:
    trains, predicts = _events(3)
    learner = cls(**FAST)
    state, _ = learner.train(trains[0], learner.init(3))
    state, _ = learner.train(trains[1], state)
    resumed = pickle.loads(pickle.dumps(state))
    state, _ = learner.train(trains[2], state)
    resumed, _ = learner.train(trains[2], resumed)
    for event in predicts:
        scores = learner.predict(event, state)
        assert scores.shape == (len(event.dataset), CLASSES)
        assert np.array_equal(scores, learner.predict(event, resumed))


@pytest.mark.parametrize("cls", LEARNERS, ids=lambda c: c.name)
def test_both_pass_the_conformance_check(cls: type) -> None:
    testing.check_learner(cls(**FAST), seed=0, stream=_fixed_space_stream)
