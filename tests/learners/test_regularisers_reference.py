"""The regularisers' importances against independent computations, not against the functions the learners call.

EWC's and IMM's diagonal Fisher: the mean over items of the squared per-item gradient, here by one backward pass
per item in a plain loop. SI's path integral: SGD on a diagonal quadratic, where it has a closed form.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from learners.test_continual import FAST, _events, _run
from learners.test_fact_embedding import CNN, make_stream
from learners.test_fact_imm import _events as _fact_events
from torch import nn

from lifelong.learners.continual_methods import EWCLearner
from lifelong.learners.fact_embedding import FactDistanceLoss, fact_space
from lifelong.learners.fact_imm import FactIMMLearner
from lifelong.learners.penalties import SI
from lifelong.training.continual_loop import model_inputs, train_continual
from lifelong.training.recipe import materialize


def _looped_fisher(model: nn.Module, x: torch.Tensor, labels: torch.Tensor, loss) -> dict[str, torch.Tensor]:
    """Mean over items of the squared gradient of loss(model(x_i), y_i), one backward pass per item, eval mode."""
    model.eval()
    params = {name: p for name, p in model.named_parameters() if p.requires_grad}
    total = {name: torch.zeros_like(p, dtype=torch.float64) for name, p in params.items()}
    for i in range(len(x)):
        grads = torch.autograd.grad(loss(model(x[i : i + 1]), labels[i : i + 1]), list(params.values()))
        for name, g in zip(params, grads, strict=True):
            total[name] += g.double() ** 2
    return {name: t / len(x) for name, t in total.items()}


def _assert_same(kept: dict[str, torch.Tensor], expected: dict[str, torch.Tensor]) -> None:
    assert kept.keys() == expected.keys()
    for name, value in expected.items():
        torch.testing.assert_close(kept[name].double(), value, rtol=1e-4, atol=1e-9 * float(value.max()), msg=name)


def test_ewc_keeps_the_decayed_sum_of_per_item_squared_gradient_means():
    learner = EWCLearner(**FAST, ewc_decay=0.5)
    states = _run(learner, buckets=2)
    trains, _ = _events(2)
    expected = None
    for event, state in zip(trains, states, strict=True):
        data = materialize(event.train_and_dev)
        x = model_inputs(data.images, resolution=state["resolution"])
        fisher = _looped_fisher(learner._model(state), x, torch.from_numpy(data.labels()), F.cross_entropy)
        expected = fisher if expected is None else {k: 0.5 * expected[k] + v for k, v in fisher.items()}
        _assert_same(state["penalty"]["fisher"], expected)


@pytest.mark.filterwarnings("ignore:stream 'toy-facts'")
def test_imm_keeps_each_tasks_per_item_squared_gradient_mean_of_the_fact_loss():
    learner = FactIMMLearner(**CNN)
    event = _fact_events(make_stream())[0][0]
    state, _ = learner.train(event, learner.init(0))
    data = materialize(event.train_and_dev)
    loss = FactDistanceLoss(*fact_space(event.task))
    x = model_inputs(data.images, resolution=state["resolution"])
    labels = torch.from_numpy(np.asarray(data.labels(), dtype=np.int64))
    _assert_same(state["imm"]["fishers"][0], _looped_fisher(learner._model(state), x, labels, loss))


class _Quadratic(nn.Module):
    """One weight vector; the output repeats it per item, so the data loss can be any function of the weights."""

    def __init__(self, start: np.ndarray) -> None:
        super().__init__()
        self.theta = nn.Parameter(torch.tensor(start, dtype=torch.float32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.theta.expand(len(x), -1)


def _quadratic_loss(h: np.ndarray, target: np.ndarray):
    """L(theta) = 1/2 sum_k h_k (theta_k - target_k)^2 as train_continual's data loss."""
    h_t, target_t = torch.tensor(h, dtype=torch.float32), torch.tensor(target, dtype=torch.float32)
    return lambda outputs, labels: 0.5 * (h_t * (outputs.mean(0) - target_t) ** 2).sum()


def _si_closed_form(h, pull, start, target, anchor, lr, steps, xi):
    """(SI's new importance, end weights) after `steps` plain SGD steps on L + the SI pull, per coordinate.

    The pull adds 1/2 p (theta - anchor)^2: with H = h + p and minimum m = (h target + p anchor) / H, u_k =
    theta_k - m = s^k u_0 (s = 1 - lr H). The path integral of the task gradient alone, sum_k -g_k (theta_{k+1} -
    theta_k) with g_k = h (u_k + d), d = m - target, and theta_{k+1} - theta_k = -lr H u_k, is
    lr h H (u_0^2 (1 - s^2K) / (1 - s^2) + d u_0 (1 - s^K) / (1 - s)); without a pull it is
    h (start - target)^2 (1 - s^2K) / (2 - lr h). The importance is w / ((theta_K - start)^2 + xi), at least 0.
    """
    curvature = h + pull
    m = (h * target + pull * anchor) / curvature
    u0, d, s = start - m, m - target, 1.0 - lr * curvature
    w = lr * h * curvature * (u0**2 * (1 - s ** (2 * steps)) / (1 - s**2) + d * u0 * (1 - s**steps) / (1 - s))
    end = m + s**steps * u0
    return np.maximum(w / ((end - start) ** 2 + xi), 0.0), end


def _train_si(model: nn.Module, term: SI, loss, lr: float, steps: int) -> dict:
    """`steps` plain SGD steps (no momentum, decay or lr step) through train_continual with the SI term."""
    items, labels = np.zeros((4, 1), dtype=np.float32), np.zeros(4, dtype=np.int64)
    term.start(model)
    sgd = dict(epochs=steps, batch_size=4, lr=lr, weight_decay=0.0, momentum=0.0, lr_step=1.0, augment=False, seed=0)
    train_continual(model, items, labels, penalty=term, step_hook=term, data_loss=loss, **sgd)
    kept, _ = term.finish(model, items, labels, model_inputs)
    return kept


def test_si_importance_matches_the_closed_form_path_integral_of_sgd_on_a_quadratic():
    """Two buckets as SILearner runs them (curvature cap 1 / lr); the second's path excludes SI's own pull."""
    h = np.array([0.5, 1.0, 2.0, 4.0, 0.25])
    start = np.array([0.0, 1.0, -1.0, 2.0, 0.5])
    targets = (np.array([1.0, -2.0, 0.5, 3.0, -1.0]), np.array([-1.0, 0.0, 2.0, 1.0, 1.5]))
    lr, steps, c, xi = 0.1, 12, 3.0, 1e-3
    model = _Quadratic(start)
    omega, anchor, kept, pull = np.zeros_like(h), start, None, None
    for target in targets:
        pull = np.minimum(2 * c * omega, 1 / lr)
        new, end = _si_closed_form(h, pull, anchor, target, anchor, lr, steps, xi)
        kept = _train_si(model, SI(kept, c, xi, max_curvature=1 / lr), _quadratic_loss(h, target), lr, steps)
        omega, anchor = omega + new, end
        np.testing.assert_allclose(kept["anchor"]["theta"].numpy(), end, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(kept["omega"]["theta"].numpy(), omega, rtol=1e-4)
    assert (pull == 1 / lr).any() and (0 < pull).all() and (pull < 1 / lr).any()  # the cap bound one weight's pull
