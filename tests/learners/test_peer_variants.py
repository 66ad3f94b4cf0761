"""The variants that match Avalanche's implementations (docs/clear.md#the-avalanche-comparison): EWC's batch Fisher,
replay that mixes a bucket and a buffer mini-batch per step, and the seeded global RNG of continual training."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from learners.test_agem_cwr import _linear_bucket, _softmax_gradient
from learners.test_continual import FAST, _events
from torch import nn

from lifelong.learners.continual_methods import ERLearner, EWCLearner
from lifelong.learners.penalties import batch_fisher, diagonal_fisher
from lifelong.training.continual_loop import _ReplayBatches, train_continual


def _features(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.asarray(x, np.float32))


def _linear(dim: int, classes: int, seed: int = 0) -> nn.Linear:
    torch.manual_seed(seed)
    return nn.Linear(dim, classes)


def _closed_form_batch_fisher(model: nn.Linear, x: np.ndarray, y: np.ndarray, batch: int) -> np.ndarray:
    """Mean over consecutive batches (the last one partial) of the squared closed-form batch-mean gradient."""
    w, b = model.weight.detach().double().numpy(), model.bias.detach().double().numpy()
    squares = [_softmax_gradient(w, b, x[s : s + batch], y[s : s + batch]) ** 2 for s in range(0, len(x), batch)]
    return np.mean(squares, axis=0)


# ---- EWC's Fisher ---------------------------------------------------------------------------------------------------


def test_the_batch_fisher_is_the_mean_squared_batch_gradient_in_closed_form() -> None:
    rng = np.random.default_rng(0)
    classes, dim, n, batch = 3, 4, 23, 5  # 5 batches, the last of 3 items
    x, y = rng.normal(size=(n, dim)).astype(np.float32), rng.integers(0, classes, n)
    model = _linear(dim, classes)
    fisher, flops = batch_fisher(model, x, y, _features, batch_size=batch)
    got = np.concatenate([fisher["weight"].double().numpy().ravel(), fisher["bias"].double().numpy()])
    np.testing.assert_allclose(got, _closed_form_batch_fisher(model, x.astype(np.float64), y, batch), rtol=1e-5)
    # batch size 1 is the per-item (empirical) Fisher, item by item
    per_item, _ = diagonal_fisher(model, x, y, _features)
    single, _ = batch_fisher(model, x, y, _features, batch_size=1)
    for k in per_item:
        torch.testing.assert_close(single[k], per_item[k], rtol=1e-5, atol=1e-8)
    assert flops > 0 and model.training  # the mode is restored


def test_ewc_with_the_batch_fisher_keeps_it_and_costs_one_step_per_batch() -> None:
    rng = np.random.default_rng(2)
    classes, dim, n = 3, 5, 40
    y = np.arange(n) % classes
    x = (rng.normal(size=(n, dim)) + 2 * np.eye(classes, dim)[y]).astype(np.float32)
    options = {"encoder": "features", "linear_epochs": 1, "linear_batch_size": 16, "ewc_fisher_batch_size": 8}
    batch, item = EWCLearner(ewc_fisher="batch", **options), EWCLearner(**options)
    event = _linear_bucket(0, x, y, classes)
    state, resources = batch.train(event, batch.init(0))
    item_state, item_resources = item.train(event, item.init(0))
    model = _linear(dim, classes)
    model.load_state_dict(state["model"])
    expected = _closed_form_batch_fisher(model, x.astype(np.float64), y, 8)
    kept = state["penalty"]["fisher"]
    np.testing.assert_allclose(
        np.concatenate([kept["weight"].double().numpy().ravel(), kept["bias"].double().numpy()]), expected, rtol=1e-5
    )
    # the same weights (the Fisher is computed after training), a smaller estimate than the per-item one
    assert all(torch.equal(state["model"][k], item_state["model"][k]) for k in state["model"])
    assert sum(v.sum() for v in kept.values()) < sum(v.sum() for v in item_state["penalty"]["fisher"].values())
    assert resources.train_flops == item_resources.train_flops  # one counted step per item either way (linear FLOPs)


def test_the_fisher_options_are_checked() -> None:
    with pytest.raises(ValueError, match="ewc_fisher"):
        EWCLearner(ewc_fisher="exact")
    with pytest.raises(ValueError, match="ewc_fisher_batch_size"):
        EWCLearner(ewc_fisher="batch", ewc_fisher_batch_size=0)


# ---- replay that mixes mini-batches ---------------------------------------------------------------------------------


def test_replay_batches_are_distinct_cover_the_buffer_and_repeat_with_the_seed() -> None:
    items, labels = np.arange(10)[:, None], np.arange(10)
    replay = _ReplayBatches(items, labels, 3, seed=5)
    batches = [replay.next_indices() for _ in range(9)]  # 3 passes of 3 batches (the 10th item skipped each pass)
    assert all(len(set(b.tolist())) == 3 for b in batches)
    for p in range(3):
        seen = np.concatenate(batches[3 * p : 3 * p + 3])
        assert len(set(seen.tolist())) == 9
    assert not np.array_equal(np.concatenate(batches[:3]), np.concatenate(batches[3:6]))  # reshuffled each pass
    again = _ReplayBatches(items, labels, 3, seed=5)
    assert all(np.array_equal(again.next_indices(), b) for b in batches)
    more, more_labels = _ReplayBatches(items, labels, 30, seed=0).appended(np.zeros((2, 1), int), np.zeros(2, int))
    assert len(more) == 12 and sorted(more_labels[2:].tolist()) == list(range(10))  # capped at the buffer's size


class _Recording(nn.Module):
    """A linear model that records the size of every training batch."""

    def __init__(self, dim: int, classes: int) -> None:
        super().__init__()
        self.linear, self.sizes = nn.Linear(dim, classes), []

    def forward(self, x):
        if self.training:
            self.sizes.append(len(x))
        return self.linear(x)


def test_train_continual_appends_a_replay_batch_to_every_step_and_counts_it() -> None:
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(40, 4)).astype(np.float32), rng.integers(0, 3, 40)
    memory, memory_labels = rng.normal(size=(7, 4)).astype(np.float32), rng.integers(0, 3, 7)
    common = {"epochs": 2, "batch_size": 8, "lr": 0.1, "weight_decay": 0.0, "seed": 0, "augment": False}
    plain_model, mixed_model = _Recording(4, 3), _Recording(4, 3)
    plain = train_continual(plain_model, x, y, **common)
    mixed = train_continual(mixed_model, x, y, replay=(memory, memory_labels), replay_batch_size=5, **common)
    assert plain.steps == mixed.steps == 10  # an epoch is the bucket's
    assert set(mixed_model.sizes[1:]) == {13} and set(plain_model.sizes[1:]) == {8}  # 8 + 5 (the first: FLOP count)
    assert mixed.flops_per_step == pytest.approx(plain.flops_per_step * 13 / 8)
    assert not torch.equal(plain_model.linear.weight, mixed_model.linear.weight)


def test_er_with_batch_mixing_trains_bucket_batches_with_buffer_batches() -> None:
    trains, _ = _events(3)
    concat, mixed = ERLearner(**FAST), ERLearner(replay_mixing="batch", **FAST)
    c_state, m_state = concat.init(0), mixed.init(0)
    c_flops, m_flops = [], []
    for event in trains:
        c_state, c_res = concat.train(event, c_state)
        m_state, m_res = mixed.train(event, m_state)
        c_flops.append(c_res.train_flops)
        m_flops.append(m_res.train_flops)
    # bucket 0: no buffer yet, the same training; later: concat has twice the steps of 32, mixed the bucket's steps
    # of 32 + 32 items, the same items per epoch (88 + 88 in 64-item steps vs 2 steps of 64)
    assert c_flops[0] == m_flops[0]
    assert len(m_state["buffer"]) == len(c_state["buffer"]) == 88
    assert m_flops[1] == pytest.approx(c_flops[1] * (2 * 64) / (5 * 32), rel=0.05)


def test_batch_mixing_needs_bucket_plus_buffer() -> None:
    with pytest.raises(ValueError, match="replay_mixing=batch"):
        EWCLearner(replay_mixing="batch")
    with pytest.raises(ValueError, match="replay_mixing"):
        ERLearner(replay_mixing="interleave")


# ---- the global RNG -----------------------------------------------------------------------------------------------


def test_a_dropout_network_trains_to_the_same_weights_whatever_the_global_rng_was() -> None:
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(32, 6)).astype(np.float32), rng.integers(0, 2, 32)
    weights = []
    for global_seed in (1, 2):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 2))
        torch.manual_seed(global_seed)  # another process: another global state
        before = torch.get_rng_state()
        train_continual(model, x, y, epochs=2, batch_size=8, lr=0.1, weight_decay=0.0, seed=3, augment=False)
        weights.append([p.detach().clone() for p in model.parameters()])
        assert torch.equal(torch.get_rng_state(), before)  # the caller's RNG is restored
    assert all(torch.equal(a, b) for a, b in zip(*weights, strict=True))


# ---- the curvature cap ----------------------------------------------------------------------------------------------


def test_the_curvature_cap_can_be_lifted_for_the_papers_uncapped_quadratic() -> None:
    fisher = {"weight": torch.tensor([[0.5, 50.0]]), "bias": torch.tensor([500.0])}
    kept = {"fisher": fisher, "anchor": {k: torch.zeros_like(v) for k, v in fisher.items()}}
    state = {"penalty": kept, "model": None}
    model = nn.Linear(2, 1)
    capped = EWCLearner(ewc_lambda=2.0, lr=0.1)._penalty(state, model)
    uncapped = EWCLearner(ewc_lambda=2.0, lr=0.1, curvature_cap=False)._penalty(state, model)
    # lambda F = [1, 100] and [1000]; the cap is 1 / lr = 10
    assert torch.equal(capped._h["weight"], torch.tensor([[1.0, 10.0]])) and capped._h["bias"].item() == 10.0
    assert torch.equal(uncapped._h["weight"], torch.tensor([[1.0, 100.0]])) and uncapped._h["bias"].item() == 1000.0


# ---- CWR* without the bias ------------------------------------------------------------------------------------------


def test_cwr_without_the_bias_consolidates_the_weights_alone_and_leaves_the_bias_to_train() -> None:
    from lifelong.learners.cwr import CWRLearner, CWRStar

    head = _linear(3, 2)
    bias = head.bias.detach().clone()
    term = CWRStar(None, bias=False)
    term.load(head, np.array([0, 0, 1]))
    assert torch.equal(head.weight, torch.zeros(2, 3)) and torch.equal(head.bias, bias)  # weights reset, bias kept
    with torch.no_grad():
        head.weight.copy_(torch.tensor([[1.0, 2.0, 3.0], [5.0, 6.0, 7.0]]))
        head.bias.copy_(torch.tensor([10.0, -10.0]))
    kept, _ = term.finish(head, np.zeros((3, 3)), np.array([0, 0, 1]), _features)
    # avg over the weights only = 4: cw = trained - 4; the bias (10, -10) is neither shifted nor consolidated
    assert torch.equal(kept["cw"], torch.tensor([[-3.0, -2.0, -1.0], [1.0, 2.0, 3.0]]))
    assert torch.equal(head.weight, kept["cw"]) and torch.equal(head.bias, torch.tensor([10.0, -10.0]))
    assert kept["past"].tolist() == [2, 1]
    with pytest.raises(ValueError, match="consolidate_bias"):
        CWRLearner(consolidate_bias="maybe")
