"""The linear regime's features come from the shared feature cache: a second run or seed of the same encoder on
the same buckets runs no encoder forward pass, and another forward precision is another cache entry."""

from __future__ import annotations

import numpy as np
import pytest
from learners.test_continual import _events, _ToyEncoder

from lifelong.learners.continual_methods import ERLearner
from lifelong.training.devices import Accelerator, accelerator_scope


def _run(seed):
    """(buffer features, predictions) of a 2-bucket ER run in the linear regime."""
    trains, predicts = _events(2)
    learner = ERLearner(encoder="toy", linear_epochs=2)
    state = learner.init(seed)
    for event in trains:
        state, _ = learner.train(event, state)
    return np.array(state["buffer"].items), learner.predict(predicts[0], state)


@pytest.fixture
def toy(monkeypatch):
    """The encoder every learner loads for spec 'toy', counting the images of its forward passes."""
    from lifelong.training import encoders

    encoder = _ToyEncoder()
    encoder.calls = []
    encoder.register_forward_pre_hook(lambda module, args: encoder.calls.append(len(args[0])))
    monkeypatch.setattr(encoders, "load_encoder", lambda spec: encoder)
    monkeypatch.setattr(encoders, "check_encoder_spec", lambda spec: "file")
    return encoder


def test_a_second_seed_reuses_the_cached_features_without_a_forward_pass(toy, tmp_path, monkeypatch):
    monkeypatch.setenv("LIFELONG_CACHE", str(tmp_path))
    items, _ = _run(0)
    assert sum(toy.calls) > 0
    toy.calls.clear()
    again, predictions = _run(0)  # another run: a new learner object
    assert toy.calls == [1]  # only the FLOP count's one zero image: no features were computed
    assert np.array_equal(again, items) and predictions.shape[0] > 0
    toy.calls.clear()
    _run(1)  # another seed
    assert toy.calls == [1]
    folders = sorted((tmp_path / "features").iterdir())
    with accelerator_scope(Accelerator(device="cpu", precision="bf16")):
        _run(0)
    assert sum(toy.calls) > 0  # bf16 features are not read from the fp32 entries
    assert len(list((tmp_path / "features").iterdir())) == 2 * len(folders)
