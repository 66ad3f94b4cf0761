"""train_model / predict_scores on tiny synthetic data."""

import math

import numpy as np
import pytest
import torch

from lifelong.core import ArrayDataset, TaskKey
from lifelong.training import (
    TrainingLoss,
    classification_error,
    count_training_flops,
    derive_seed,
    predict_scores,
    resnet,
    train_model,
)

KEY = TaskKey("bars", "multi-class", 2)
ML_KEY = TaskKey("bars-ml", "multi-label", 2)


def _bars(n, seed, key=KEY):
    """Vertical (class 0) or horizontal (class 1) bright bar on a noisy 8x8 background."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    x = rng.integers(0, 60, (n, 8, 8, 1))
    pos = rng.integers(1, 7, n)
    for i in range(n):
        if y[i] == 0:
            x[i, :, pos[i]] = 255
        else:
            x[i, pos[i], :] = 255
    labels = y if not key.is_multi_label else np.stack([y == 0, y == 1], axis=1).astype(np.uint8)
    return ArrayDataset(key, "train", x.astype(np.uint8), labels)


def _model(classes=2, seed=0):
    return resnet(classes, blocks=(1, 1), widths=(8, 16), seed=seed)


def _train(seed=0, **kw):
    model = _model()
    options = dict(kind="multi-class", epochs=3, batch_size=16, lr=0.1, seed=seed, augment=False)
    options.update(kw)
    return model, train_model(model, _bars(160, 1), _bars(64, 2), **options)


def test_learns_counts_flops_and_keeps_best():
    records = []
    model, result = _train(progress=records.append)
    assert result.steps == 3 * (160 // 16) == records[-1].step
    assert [r.epoch for r in records] == [1, 2, 3]
    assert result.dev_error == min(r.dev_error for r in records) < 0.25
    x = torch.randn(16, 3, 8, 8)
    per_step = count_training_flops(_model(), (x, torch.zeros(16, dtype=torch.long)))
    assert result.flops_per_step == per_step
    assert result.train_flops == per_step * result.steps
    for name, value in model.state_dict().items():  # the selected weights are loaded back
        assert torch.equal(value, result.state_dict[name]), name


def test_same_seed_is_bit_identical_and_seeds_differ():
    _, a = _train(seed=3, augment=True)
    _, b = _train(seed=3, augment=True)
    _, c = _train(seed=4, augment=True)
    for name, value in a.state_dict.items():
        assert torch.equal(value, b.state_dict[name]), name
    assert not torch.equal(a.state_dict["head.weight"], c.state_dict["head.weight"])


def test_steps_budget_small_dataset_and_no_dev():
    model = _model()
    result = train_model(model, _bars(10, 1), None, kind="multi-class", steps=7, batch_size=16, lr=0.05, seed=0)
    assert result.steps == 7 and result.batch_size == 10 and result.dev_error is None
    assert result.train_flops == 7 * result.flops_per_step


def test_multilabel_training_and_probabilities():
    model = _model()
    result = train_model(
        model,
        _bars(160, 1, ML_KEY),
        _bars(64, 2, ML_KEY),
        kind="multi-label",
        epochs=2,
        batch_size=16,
        lr=0.1,
        seed=0,
        label_smoothing=0.1,
    )
    scores = predict_scores(model, _bars(30, 5, ML_KEY), "multi-label", batch_size=8)
    assert scores.shape == (30, 2) and scores.dtype == np.float32
    assert ((scores >= 0) & (scores <= 1)).all()
    assert 0 <= result.dev_error <= 1


def test_predict_scores_are_logits_in_stored_order():
    model = _model().eval()
    data = _bars(20, 4)
    scores = predict_scores(model, data, "multi-class", batch_size=7, resolution=8)
    full = predict_scores(model, data, "multi-class", batch_size=64)
    np.testing.assert_allclose(scores, full, rtol=1e-5, atol=1e-6)
    assert scores.shape == (20, 2)
    assert not model.training


def test_classification_error_and_loss():
    labels = np.array([0, 1, 1])
    assert classification_error(np.array([[2.0, 1], [0, 1], [3, 0]]), labels, "multi-class") == pytest.approx(1 / 3)
    ml = np.array([[1, 0], [0, 0], [1, 0]])
    assert classification_error(np.array([[0.9, 0.1], [0.1, 0.5], [0.8, 0.2]]), ml, "multi-label") == 0.0
    assert math.isnan(classification_error(np.zeros((2, 2)), np.zeros((2, 2), dtype=int), "multi-label"))
    loss = TrainingLoss("multi-label", 0.2)
    target = torch.tensor([[1.0, 0.0]])
    expected = torch.nn.functional.binary_cross_entropy_with_logits(torch.zeros(1, 2), torch.tensor([[0.9, 0.1]]))
    assert loss(torch.zeros(1, 2), target) == pytest.approx(expected.item())


def test_argument_errors_and_seed_derivation():
    with pytest.raises(ValueError, match="exactly one of epochs or steps"):
        train_model(_model(), _bars(10, 1), None, kind="multi-class", batch_size=4, lr=0.1, seed=0)
    assert derive_seed(1, 2) == derive_seed(1, 2) != derive_seed(1, 3)
    with pytest.raises(ValueError, match="non-negative"):
        derive_seed(-1)
