"""Mode-IMM on the fact model: the merge, Fishers from training data only, predict on the merge, runs end to end."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from learners.test_fact_embedding import CNN, FAST, make_stream

from lifelong import testing
from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.learners import make_learner
from lifelong.learners.fact_embedding import FactDistanceLoss, FactLearner, fact_space
from lifelong.learners.fact_imm import FactIMMLearner, imm_alphas, mode_imm_merge
from lifelong.learners.penalties import diagonal_fisher
from lifelong.run.environment import run
from lifelong.training.continual_loop import model_inputs
from lifelong.training.recipe import materialize


def _task_weights(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {
        "conv.weight": torch.randn(4, 3, 2, 2, generator=g),
        "fc.bias": torch.randn(5, generator=g),
        "bn.running_mean": torch.randn(5, generator=g),
        "bn.num_batches_tracked": torch.tensor(10 * (seed + 1)),
    }


def _fisher(seed: int, zero_fraction: float = 0.3) -> dict[str, torch.Tensor]:
    rng = np.random.default_rng(100 + seed)
    out = {}
    for name, shape in (("conv.weight", (4, 3, 2, 2)), ("fc.bias", (5,))):
        f = rng.exponential(10.0 ** rng.uniform(-4, 1), size=shape) * (rng.random(shape) > zero_fraction)
        out[name] = torch.tensor(f, dtype=torch.float32)
    return out


def test_mode_imm_merge_matches_a_direct_numpy_computation():
    params, fishers, alphas, eps = [_task_weights(k) for k in range(3)], [_fisher(k) for k in range(3)], [1, 2, 5], 1e-8
    fishers[0]["fc.bias"][:] = 0.0
    fishers[1]["fc.bias"][:2] = 0.0
    fishers[2]["fc.bias"][:2] = 0.0  # entries 0 and 1: no task has any Fisher
    merged = mode_imm_merge(params, fishers, alphas, eps)
    a = np.asarray(alphas, dtype=np.float64) / sum(alphas)
    for name in ("conv.weight", "fc.bias"):
        theta = np.stack([p[name].double().numpy() for p in params])
        weight = a.reshape(-1, *[1] * (theta.ndim - 1)) * (np.stack([f[name].double().numpy() for f in fishers]) + eps)
        np.testing.assert_allclose(merged[name].numpy(), (weight * theta).sum(0) / weight.sum(0), rtol=1e-5)
        assert torch.isfinite(merged[name]).all()
    theta_bias = np.stack([p["fc.bias"].double().numpy() for p in params])
    np.testing.assert_allclose(merged["fc.bias"][:2].numpy(), (a[:, None] * theta_bias[:, :2]).sum(0), rtol=1e-5)
    buffer = np.stack([p["bn.running_mean"].numpy() for p in params])
    np.testing.assert_allclose(merged["bn.running_mean"].numpy(), (a[:, None] * buffer).sum(0), rtol=1e-5)
    assert merged["bn.num_batches_tracked"].dtype == torch.int64
    assert merged["bn.num_batches_tracked"].item() == round(float(a @ np.array([10, 20, 30])))


def test_equal_fishers_reduce_to_the_alpha_weighted_mean():
    params = [_task_weights(k) for k in range(3)]
    same = _fisher(7, zero_fraction=0.0)
    merged = mode_imm_merge(params, [same, same, same], [0.2, 0.3, 0.5])
    for name in ("conv.weight", "fc.bias", "bn.running_mean"):
        mean = 0.2 * params[0][name] + 0.3 * params[1][name] + 0.5 * params[2][name]
        torch.testing.assert_close(merged[name], mean, rtol=1e-5, atol=1e-6)


def test_one_task_gives_back_its_own_weights():
    params = _task_weights(3)
    merged = mode_imm_merge([params], [_fisher(3)], [1.0])
    for name, value in params.items():
        assert torch.equal(merged[name], value)


def test_merge_refuses_mismatched_inputs():
    with pytest.raises(ValueError, match="one Fisher and one alpha per model"):
        mode_imm_merge([_task_weights(0)], [], [1.0])
    with pytest.raises(ValueError, match="positive sum"):
        mode_imm_merge([_task_weights(0)], [_fisher(0)], [0.0])


def test_alphas_are_uniform_or_proportional_to_training_images():
    np.testing.assert_allclose(imm_alphas([10, 30], "uniform"), [0.5, 0.5])
    np.testing.assert_allclose(imm_alphas([10, 30], "images"), [0.25, 0.75])


def _events(stream):
    events = stream.events()
    return [e for e in events if isinstance(e, TrainEvent)], [e for e in events if isinstance(e, PredictEvent)]


def _train_all(learner, stream, seed=0):
    trains, predicts = _events(stream)
    state, spent = learner.init(seed), []
    for event in trains:
        state, resources = learner.train(event, state)
        spent.append(resources)
    return state, spent, trains, predicts


def test_predict_uses_the_merge_and_training_continues_from_the_task_model():
    learner = FactIMMLearner(**CNN)
    state, spent, trains, predicts = _train_all(learner, make_stream())
    imm = state["imm"]
    assert len(imm["models"]) == len(imm["fishers"]) == 2 and imm["models"][-1] is state["model"]
    merged = mode_imm_merge(imm["models"], imm["fishers"], [0.5, 0.5], learner.config.imm_eps)
    event = predicts[-1]
    plain = FactLearner(**CNN)
    np.testing.assert_array_equal(learner.predict(event, state), plain.predict(event, {**state, "model": merged}))
    assert not np.allclose(learner.predict(event, state), plain.predict(event, state))  # not the task model
    n_params = sum(v.numel() for v in imm["fishers"][0].values())
    assert spent[-1].peak_parameters == 2 * 2 * n_params  # two models and two Fishers


def test_fisher_comes_from_the_task_training_items_and_predict_changes_nothing():
    learner = FactIMMLearner(**CNN)
    state, _, trains, predicts = _train_all(learner, make_stream())
    before = copy.deepcopy(state)
    for event in predicts:
        learner.predict(event, state)
    for name, value in before["imm"]["models"][0].items():
        assert torch.equal(state["imm"]["models"][0][name], value)
    for name, value in before["imm"]["fishers"][1].items():
        assert torch.equal(state["imm"]["fishers"][1][name], value)
    task = trains[0]
    data = materialize(task.train_and_dev)
    targets, mask = fact_space(task.task)
    model = learner._model({**state, "model": state["imm"]["models"][0]})
    expected, _ = diagonal_fisher(
        model,
        data.images,
        np.asarray(data.labels(), dtype=np.int64),
        lambda x: model_inputs(x, resolution=state["resolution"]),
        loss=FactDistanceLoss(targets, mask),
    )
    for name, value in expected.items():
        torch.testing.assert_close(state["imm"]["fishers"][0][name], value, rtol=1e-4, atol=1e-10)
    assert state["imm"]["images"] == [len(materialize(e.train_and_dev)) for e in trains]


def test_l2_transfer_keeps_the_next_task_model_nearer_the_previous_one():
    def drift(**options):
        state, *_ = _train_all(FactIMMLearner(**CNN, **options), make_stream())
        first, second = state["imm"]["models"]
        return sum(float((second[k] - first[k]).square().sum()) for k in state["imm"]["fishers"][0])

    assert drift(imm_l2=10.0) < 0.5 * drift()


def test_imm_refuses_other_regularisers():
    with pytest.raises(ValueError, match="IMM merges per-task models"):
        FactIMMLearner(penalty="ewc")
    with pytest.raises(ValueError, match="imm_alpha"):
        FactIMMLearner(imm_alpha="tasks")


def test_imm_passes_the_protocol_checks_and_runs_a_fact_stream():
    summary = testing.check_learner(make_learner("fact-imm", **FAST, imm_alpha="images"), stream=make_stream)
    assert summary["fact_generalized_mean_over_tasks"] is not None
    result = run(make_learner("fact-imm", **FAST), make_stream(), seed=0).summary
    assert result["fact_train_steps"] > 0 and len(result["fact_train_final_losses"]) == 2  # what training did
    for key in ("fact_standard_mean_over_tasks", "fact_generalized_mean_over_examples", "fact_bwt", "fact_fwt"):
        assert result[key] is not None
