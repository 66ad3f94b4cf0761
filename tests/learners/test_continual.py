"""Continual learners on tiny synthetic fixed-label-space streams (11 classes, 8x8 images, 1 epoch)."""

from __future__ import annotations

import functools
import pickle

import numpy as np
import pytest
import torch
from torch import nn

from lifelong import testing
from lifelong.core.datasets import ArrayDataset
from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.core.streams import Stream, StreamTask, TaskSplits
from lifelong.core.tasks import TaskKey, TaskKind
from lifelong.learners.continual import ContinualConfig, ContinualLearner
from lifelong.learners.continual_methods import (
    ERLearner,
    EWCLearner,
    FinetuneLearner,
    GDumbLearner,
    LwFLearner,
    ReplayLearner,
    ScratchLearner,
    SILearner,
)
from lifelong.learners.penalties import EWC, SI, LwF, distillation
from lifelong.training.continual_loop import model_inputs, step_lr, train_continual
from lifelong.training.flops import count_inference_flops

CLASSES = 11
NAMES = tuple(sorted(f"class{c:02d}" for c in range(CLASSES - 1))) + ("zz_background",)
FAST = {"epochs": 1, "batch_size": 32}
LEARNERS = [FinetuneLearner, ScratchLearner, ReplayLearner, ERLearner, GDumbLearner, EWCLearner, SILearner, LwFLearner]


def _key(bucket: int, classes: int = CLASSES, names: tuple[str, ...] = NAMES) -> TaskKey:
    return TaskKey(
        f"bucket{bucket}",
        TaskKind.MULTI_CLASS,
        classes,
        names,
        year=2000 + bucket,
        domain="synthetic",
        metadata={"resolution": 8},
    )


def _bucket(key: TaskKey, bucket: int, per_class: int = 8, split: str = "train") -> ArrayDataset:
    """Class c lights pixel row c % 8 in channel c // 8; the background level drifts with the bucket."""
    rng = np.random.default_rng(100 * bucket + len(split))
    labels = np.repeat(np.arange(key.num_classes), per_class)
    images = rng.integers(0, 40, (len(labels), 8, 8, 3)).astype(np.uint8) + np.uint8(10 * bucket)
    for i, y in enumerate(labels):
        images[i, y % 8, :, y // 8 % 3] = 230
    return ArrayDataset(key, split, images, labels)


def _events(buckets: int = 3) -> tuple[list[TrainEvent], list[PredictEvent]]:
    trains, predicts = [], []
    for b in range(buckets):
        key = _key(b)
        data = _bucket(key, b)
        trains.append(TrainEvent(2 * b, b, key, data, data, data))
        predicts.append(PredictEvent(2 * b + 1, b, key, "test", _bucket(key, b, per_class=3, split="test")))
    return trains, predicts


def _run(learner: ContinualLearner, buckets: int = 3, seed: int = 0) -> list[dict]:
    trains, _ = _events(buckets)
    state, states = learner.init(seed), []
    for event in trains:
        state, resources = learner.train(event, state)
        assert resources.train_flops > 0 and resources.peak_parameters > 0
        states.append(state)
    return states


def _fixed_space_stream(seed: int = 0) -> Stream:
    """A stream for lifelong.testing.check_learner with one label space (tiny_stream's tasks differ in classes)."""

    def load(key: TaskKey, b: int) -> TaskSplits:
        return TaskSplits(
            *(
                _bucket(key, b, per_class=4 if s != "train" else 8, split=s)
                for s in ("train", "dev", "dev_test", "test")
            )
        )

    tasks = [StreamTask(_key(b), functools.partial(load, _key(b), b + seed), source="tiny") for b in range(3)]
    return Stream("tiny-fixed", tasks)


@pytest.mark.parametrize("cls", LEARNERS, ids=lambda c: c.name)
def test_every_learner_passes_the_conformance_check(cls: type) -> None:
    learner = cls(**FAST)
    testing.check_learner(learner, seed=0, stream=_fixed_space_stream)
    assert learner.__doc__ and cls.name in {"finetune", "scratch", "replay", "er", "gdumb", "ewc", "si", "lwf"}


def test_finetune_continues_from_the_previous_model_and_scratch_ignores_history() -> None:
    ft, sc = _run(FinetuneLearner(**FAST)), _run(ScratchLearner(**FAST))
    assert not torch.equal(ft[1]["model"]["head.weight"], sc[1]["model"]["head.weight"])
    # a vanishing learning rate leaves the previous bucket's weights, head included, in place
    frozen = _run(FinetuneLearner(epochs=1, batch_size=32, lr=1e-12), buckets=2)
    for name, value in frozen[0]["model"].items():
        if value.is_floating_point() and "running" not in name:
            assert torch.allclose(value, frozen[1]["model"][name], atol=1e-6), name
    # scratch on bucket 2 depends only on (seed, bucket): training it straight from init gives the same weights
    trains, _ = _events(2)
    learner = ScratchLearner(**FAST)
    direct, _ = learner.train(trains[1], learner.init(0))
    for name, value in sc[1]["model"].items():
        assert torch.equal(value, direct["model"][name]), name


def test_buffers_of_replay_er_and_gdumb() -> None:
    replay = _run(ReplayLearner(**FAST))
    buffer = replay[-1]["buffer"]
    assert buffer.capacity == 88 and len(buffer) == 88 and buffer.seen == 3 * 88  # one bucket by default
    assert set(np.unique(buffer.origin)) <= {0, 1, 2} and len(np.unique(buffer.origin)) >= 2
    biased = _run(ReplayLearner(buffer="biased", c=1.0, **FAST))[-1]["buffer"]
    assert (biased.origin == 2).all()  # c = 1: FIFO of whole buckets
    gdumb = _run(GDumbLearner(buffer_size=33, **FAST))[-1]["buffer"]
    assert gdumb.class_counts(CLASSES).tolist() == [3] * CLASSES
    # er trains bucket 2 on the bucket plus the 88 buffered items: twice the steps of fine-tuning
    trains, _ = _events(2)
    flops = []
    for learner in (ERLearner(epochs=1, batch_size=8), FinetuneLearner(epochs=1, batch_size=8)):
        state, _ = learner.train(trains[0], learner.init(0))
        flops.append(learner.train(trains[1], state)[1].train_flops)
    assert flops[0] == pytest.approx(2 * flops[1])


def test_pickled_state_resumes_with_identical_predictions() -> None:
    trains, predicts = _events(3)
    learner = ERLearner(**FAST)
    state, _ = learner.train(trains[0], learner.init(3))
    resumed = pickle.loads(pickle.dumps(state))
    for event in trains[1:]:
        state, _ = learner.train(event, state)
        resumed, _ = learner.train(event, resumed)
    for event in predicts:
        scores = learner.predict(event, state)
        assert scores.shape == (len(event.dataset), CLASSES)
        assert np.array_equal(scores, learner.predict(event, resumed))


def test_label_space_mismatch_is_refused() -> None:
    trains, _ = _events(1)
    learner = FinetuneLearner(**FAST)
    state, _ = learner.train(trains[0], learner.init(0))
    other = _key(1, classes=4, names=("a", "b", "c", "d"))
    data = _bucket(other, 1)
    with pytest.raises(ValueError, match="fixed label space.*") as info:
        learner.train(TrainEvent(2, 1, other, data, data, data), state)
    assert "bucket0" in str(info.value) and "bucket1" in str(info.value)


def test_ewc_penalty_is_zero_at_the_anchor_and_positive_away() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    items = np.random.default_rng(0).normal(size=(20, 4)).astype(np.float32)
    labels = np.arange(20) % 3
    kept, flops = EWC(None, 1.0).finish(model, items, labels, model_inputs)
    assert flops > 0 and all((f >= 0).all() and f.sum() > 0 for f in kept["fisher"].values())
    term = EWC(kept, strength=10.0)
    x = torch.from_numpy(items)
    assert term(model, x, model(x)).item() == 0.0
    with torch.no_grad():
        model.weight.add_(0.1)
    assert term(model, x, model(x)).item() > 0
    # online: a second bucket adds its Fisher to the first (decay 1)
    again, _ = EWC(kept, 1.0).finish(model, items, labels, model_inputs)
    assert all((again["fisher"][k] >= kept["fisher"][k]).all() for k in kept["fisher"])


def test_si_importances_are_non_negative_and_the_learner_keeps_them() -> None:
    states = _run(SILearner(**FAST), buckets=2)
    omega = states[-1]["penalty"]["omega"]
    assert all((w >= 0).all() for w in omega.values()) and sum(w.sum() for w in omega.values()) > 0
    # the per-step task gradient excludes SI's own term: at the anchor the penalty and its gradient vanish
    model = nn.Linear(4, 3)
    term = SI(
        {
            "omega": {k: torch.ones_like(v) for k, v in model.named_parameters()},
            "anchor": {k: v.detach().clone() for k, v in model.named_parameters()},
        },
        strength=1.0,
        damping=0.1,
    )
    x = torch.zeros(2, 4)
    assert term(model, x, model(x)).item() == 0.0


def test_lwf_distillation_is_zero_when_student_matches_teacher() -> None:
    logits = torch.randn(5, CLASSES)
    assert distillation(logits, logits.clone(), 2.0).item() == pytest.approx(0.0, abs=1e-6)
    assert distillation(logits, torch.randn(5, CLASSES), 2.0).item() > 0
    model = nn.Linear(4, 3)
    teacher = nn.Linear(4, 3)
    teacher.load_state_dict(model.state_dict())
    x = torch.randn(6, 4)
    assert LwF(teacher, 1.0)(model, x, model(x)).item() == pytest.approx(0.0, abs=1e-6)
    states = _run(LwFLearner(**FAST), buckets=2)
    assert states[-1]["penalty"] is None  # LwF keeps nothing beyond the previous model


def _feature_events(buckets: int = 2, dim: int = 16) -> tuple[list[TrainEvent], list[PredictEvent]]:
    centres = np.random.default_rng(7).normal(0, 3, (CLASSES, dim))
    trains, predicts = [], []
    for b in range(buckets):
        key = _key(b)
        rng = np.random.default_rng(b)
        sets = []
        for n in (20, 10):
            labels = np.repeat(np.arange(CLASSES), n)
            feats = (centres[labels] + rng.normal(0, 1, (len(labels), dim)) + 0.3 * b).astype(np.float32)
            sets.append(ArrayDataset(key, "train", feats, labels))
        trains.append(TrainEvent(2 * b, b, key, sets[0], sets[0], sets[0]))
        predicts.append(PredictEvent(2 * b + 1, b, key, "test", sets[1]))
    return trains, predicts


@pytest.mark.parametrize("cls", [FinetuneLearner, ERLearner, EWCLearner], ids=lambda c: c.name)
def test_linear_regime_on_features_beats_chance(cls: type) -> None:
    trains, predicts = _feature_events()
    learner = cls(encoder="features", linear_epochs=10)
    state = learner.init(0)
    for event in trains:
        state, resources = learner.train(event, state)
    assert resources.peak_parameters >= 16 * CLASSES
    for event in predicts:
        accuracy = (learner.predict(event, state).argmax(1) == event.dataset.labels()).mean()
        assert accuracy > 0.6  # chance is 1/11
        assert learner.predict_flops(event, state) == 2.0 * 16 * CLASSES * len(event.dataset)
    if cls is ERLearner:
        assert state["buffer"].items.dtype == np.float32 and state["buffer"].items.shape[1:] == (16,)


def test_regime_and_input_mismatches_say_what_to_do() -> None:
    trains, _ = _feature_events(1)
    with pytest.raises(ValueError, match="encoder=features"):
        FinetuneLearner(**FAST).train(trains[0], FinetuneLearner(**FAST).init(0))
    images, _ = _events(1)
    learner = FinetuneLearner(encoder="features")
    with pytest.raises(ValueError, match="float32"):
        learner.train(images[0], learner.init(0))


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="buffer policy"):
        ContinualConfig(train_on="buffer")
    with pytest.raises(ValueError, match="unknown penalty"):
        ContinualConfig(penalty="l2-sp")
    with pytest.raises(ValueError, match="alpha or c, not both"):
        ReplayLearner(buffer="biased", alpha=2.0, c=0.5)
    with pytest.raises(ValueError, match="only to the 'biased'"):
        ReplayLearner(alpha=2.0)
    with pytest.raises(ValueError, match="unknown"):
        FinetuneLearner(bogus=1)
    assert ReplayLearner(buffer="biased", alpha=2.0).config.train_on == "buffer"
    assert GDumbLearner().config.init == "scratch" and ScratchLearner().config.train_on == "bucket"


def test_training_loop_step_decay_and_hooks() -> None:
    assert step_lr(5, 0.6) == 3 and step_lr(100, 0.6) == 60 and step_lr(1, 0.6) == 1 and step_lr(4, 1.0) == 4
    calls = []

    class Hook:
        def before_step(self, model: nn.Module) -> None:
            calls.append("before")

        def after_step(self, model: nn.Module) -> None:
            calls.append("after")

    model = nn.Linear(4, 3)
    items = np.random.default_rng(0).normal(size=(40, 4)).astype(np.float32)
    fit = train_continual(
        model,
        items,
        np.arange(40) % 3,
        epochs=2,
        batch_size=16,
        lr=0.1,
        weight_decay=0.0,
        seed=0,
        penalty=lambda m, x, logits: logits.pow(2).mean(),
        step_hook=Hook(),
    )
    assert fit.steps == 4 and fit.batch_size == 16 and calls == ["before", "after"] * 4
    assert fit.train_flops == pytest.approx(4 * fit.flops_per_step) and fit.flops_per_step > 0


class _ToyEncoder(nn.Module):
    feature_dim, resolution, in_channels = 12, 8, 3

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Conv2d(3, 12, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def test_linear_regime_with_an_encoder_spec_counts_encoder_flops(monkeypatch: pytest.MonkeyPatch) -> None:
    from lifelong.training import encoders

    encoder = _ToyEncoder()
    monkeypatch.setattr(encoders, "load_encoder", lambda spec: encoder)
    monkeypatch.setattr(encoders, "check_encoder_spec", lambda spec: "file")
    trains, predicts = _events(2)
    flops = {}
    for count in (True, False):
        learner = ERLearner(encoder="toy", linear_epochs=2, count_encoder_flops=count)
        state = learner.init(0)
        for event in trains:
            state, resources = learner.train(event, state)
        flops[count] = resources.train_flops
        assert state["buffer"].items.shape[1:] == (12,) and state["buffer"].items.dtype == np.float32
        assert resources.peak_parameters == 12 * CLASSES + CLASSES + sum(p.numel() for p in encoder.parameters())
        assert learner.predict(predicts[0], state).shape == (len(predicts[0].dataset), CLASSES)
    per_image = count_inference_flops(encoder, torch.zeros(1, 3, 8, 8))
    assert flops[True] - flops[False] == pytest.approx(per_image * len(trains[1].train_and_dev))
