"""Learners build their models on the current accelerator and keep device-independent state.

What a learner returns for checkpointing (its state, and the learner object itself when pickled) holds CPU tensors
only, whatever the accelerator; a state made under one accelerator resumes under another. On a machine without a
GPU the accelerators compared are CPU fp32 and CPU bf16 + channels_last; placement is then visible through
channels_last weights.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from learners.test_continual import _events as bucket_events
from learners.test_fact_embedding import FAST as FACT_FAST
from learners.test_fact_embedding import make_stream
from learners.test_fact_expertgate import GATE
from learners.test_independent import COLOURS_KEY
from learners.test_independent import FAST as INDEPENDENT_FAST
from learners.test_independent import _events as colour_events

from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.learners.continual import ContinualLearner
from lifelong.learners.continual_methods import EWCLearner, LwFLearner, SILearner
from lifelong.learners.fact_embedding import FactEWCLearner
from lifelong.learners.fact_expertgate import FactExpertGateLearner
from lifelong.learners.fact_imm import FactIMMLearner
from lifelong.learners.independent import IndependentLearner
from lifelong.learners.probe import ProbeConfig
from lifelong.sortsearch.zoo_models import ModelSpec, make_zoo_model
from lifelong.training.devices import Accelerator, accelerator_scope, available_devices
from lifelong.training.encoders import untrained_encoder
from lifelong.training.relatedness import backbone_model

FP32 = Accelerator(device="cpu", precision="fp32")
BF16 = Accelerator(device="cpu", precision="bf16", channels_last=True)
CONTINUAL_FAST = {"epochs": 1, "batch_size": 32}


def _tensors(value, seen=None):
    """Every tensor reachable from `value` through dicts, lists, tuples and object attributes."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v, seen)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _tensors(v, seen)
    elif hasattr(value, "__getstate__") and not isinstance(value, type | np.ndarray | str | bytes | int | float):
        state = value.__getstate__()
        if isinstance(state, dict | tuple | list):
            yield from _tensors(state, seen)


def _cpu_only(value) -> bool:
    found = list(_tensors(value))
    return all(t.device.type == "cpu" for t in found)


# ---- learners over their streams --------------------------------------------------------------------------------


def _fact_events():
    events = make_stream().events()
    return [e for e in events if isinstance(e, TrainEvent)], [e for e in events if isinstance(e, PredictEvent)]


LEARNERS = {
    "ewc": (lambda: EWCLearner(**CONTINUAL_FAST), lambda: bucket_events(2)),
    "si": (lambda: SILearner(**CONTINUAL_FAST), lambda: bucket_events(2)),
    "lwf": (lambda: LwFLearner(**CONTINUAL_FAST), lambda: bucket_events(2)),
    "mas": (lambda: ContinualLearner(penalty="mas", **CONTINUAL_FAST), lambda: bucket_events(2)),
    "fact-ewc": (lambda: FactEWCLearner(**FACT_FAST), _fact_events),
    "fact-imm": (lambda: FactIMMLearner(**FACT_FAST, imm_l2=0.1), _fact_events),
    "fact-expertgate": (lambda: FactExpertGateLearner(**FACT_FAST, **GATE), _fact_events),
}


def _train(learner, trains, state, accelerator):
    with accelerator_scope(accelerator):
        for event in trains:
            state, _ = learner.train(event, state)
    return state


@pytest.mark.parametrize("name", sorted(LEARNERS))
@pytest.mark.parametrize("device", available_devices())
def test_checkpoint_state_and_the_pickled_learner_hold_only_cpu_tensors(name, device):
    make, events = LEARNERS[name]
    learner = make()
    trains, predicts = events()
    state = _train(learner, trains, learner.init(0), Accelerator(device=device))
    assert list(_tensors(state)) and _cpu_only(state)
    assert _cpu_only(learner.__getstate__())
    restored = pickle.loads(pickle.dumps((learner, state)))
    with accelerator_scope(Accelerator(device=device)):
        scores = restored[0].predict(predicts[-1], restored[1])
    assert np.isfinite(scores).all()


@pytest.mark.parametrize("name", sorted(LEARNERS))
@pytest.mark.parametrize(("first", "second"), [(FP32, BF16), (BF16, FP32)], ids=["fp32-then-bf16", "bf16-then-fp32"])
def test_a_state_resumes_under_another_accelerator(name, first, second):
    make, events = LEARNERS[name]
    trains, predicts = events()
    learner = make()
    state = _train(learner, trains[:1], learner.init(0), first)
    learner, state = pickle.loads(pickle.dumps((learner, state)))  # as a checkpoint gives them back
    state = _train(learner, trains[1:], state, second)
    assert _cpu_only(state)
    with accelerator_scope(second):
        scores = learner.predict(predicts[-1], state)
    with accelerator_scope(FP32):
        reference = learner.predict(predicts[-1], state)
    assert scores.dtype == np.float32 and np.isfinite(scores).all()
    # the same weights score alike under both precisions (bf16 keeps ~3 significant digits)
    np.testing.assert_allclose(scores, reference, atol=0.15 * max(1.0, float(np.abs(reference).max())))


def test_independent_learner_state_is_cpu_and_predicts_under_bf16():
    learner = IndependentLearner(**{**INDEPENDENT_FAST, "epochs": 1})
    train_event, predict_event = colour_events(COLOURS_KEY, n=64)
    with accelerator_scope(BF16):
        state, _ = learner.train(train_event, learner.init(0))
        scores = learner.predict(predict_event, state)
    assert _cpu_only(state) and np.isfinite(scores).all()
    with accelerator_scope(FP32):
        np.testing.assert_allclose(learner.predict(predict_event, state), scores, atol=0.2)


# ---- build sites place their models ----------------------------------------------------------------------------


def _channels_last(model: torch.nn.Module) -> bool:
    convs = [p for p in model.parameters() if p.dim() == 4]
    return bool(convs) and all(p.is_contiguous(memory_format=torch.channels_last) for p in convs)


def test_build_sites_place_models_on_the_current_accelerator():
    trains, _ = bucket_events(1)
    learner = ContinualLearner(**CONTINUAL_FAST)
    state = _train(learner, trains, learner.init(0), FP32)
    with accelerator_scope(BF16):
        assert _channels_last(learner._model(state))
        assert _channels_last(make_zoo_model(ModelSpec(0, "cnn", 8, 1, 32, False, 0.01, 0), (8, 8, 3), 2))
        assert _channels_last(backbone_model("resnet_mini", None))
        assert _channels_last(untrained_encoder("resnet_mini").to_encoder())
        fact = FactEWCLearner(**FACT_FAST, encoder="none")  # the small CNN: convolutions to lay out
        assert _channels_last(fact._fact_model(4, (16, 16, 3), 0, 16))
    with accelerator_scope(FP32):
        assert not _channels_last(learner._model(state))  # the CPU default leaves the memory format alone


def test_probe_device_option_defaults_to_the_current_accelerator():
    assert ProbeConfig().device is None
    assert ProbeConfig(device=" CPU ").device == "cpu"
    with pytest.raises(ValueError, match="auto, cpu, cuda or cuda:N"):
        ProbeConfig(device="gpu")
