"""`-o architecture=package.module:factory`: a factory's network (tests/_factories.py) in the continual and the
Nevis learners; bad specs refused at config time; its FLOPs, checkpoint round trip and seeding."""

from __future__ import annotations

import pickle

import _factories
import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.core import ArrayDataset, PredictEvent, TaskKey, TrainEvent
from lifelong.learners.continual_methods import FinetuneLearner
from lifelong.learners.finetune import FinetuneKnnLearner, FinetunePrevLearner
from lifelong.learners.independent import IndependentLearner
from lifelong.training.flops import architecture_forward_flops, count_inference_flops, count_training_flops
from lifelong.training.models import count_parameters, make_model

MLP = "_factories:mlp"
CLASSES, SIDE, HIDDEN = 4, _factories.SIDE, _factories.HIDDEN
IN = 3 * SIDE * SIDE
COLOURS = np.array([[230, 30, 30], [30, 230, 30], [30, 30, 230], [230, 230, 30]])
CONTINUAL = {"architecture": MLP, "resolution": SIDE, "epochs": 3, "batch_size": 16, "lr": 0.05, "augment": False}
NEVIS = {"architecture": MLP, "resolution": SIDE, "epochs": 3, "min_batch_size": 16, "max_batch_size": 16}


def _key(name: str) -> TaskKey:
    return TaskKey(name, "multi-class", CLASSES, tuple("abcd"), domain="synthetic", metadata={"resolution": SIDE})


def _colours(key: TaskKey, n: int, seed: int, split: str = "train") -> ArrayDataset:
    """Noisy constant-colour images, one colour per class (a task an MLP learns in a few steps)."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % CLASSES
    noise = rng.normal(0, 25, (n, SIDE, SIDE, 3))
    return ArrayDataset(key, split, np.clip(COLOURS[labels][:, None, None] + noise, 0, 255).astype(np.uint8), labels)


def _events(tasks: int) -> tuple[list[TrainEvent], list[PredictEvent]]:
    """`tasks` buckets over one label space (or, for the Nevis learners, tasks), 32 training images each."""
    trains, predicts = [], []
    for t in range(tasks):
        key = _key(f"bucket{t}")
        data = _colours(key, 32, 1 + t)
        trains.append(TrainEvent(2 * t, t, key, data, _colours(key, 16, 50 + t, "dev"), data))
        predicts.append(PredictEvent(2 * t + 1, t, key, "test", _colours(key, 40, 99, "test")))
    return trains, predicts


def _hand_flops(batch: int, classes: int = CLASSES) -> tuple[float, float]:
    """(forward, training) FLOPs of the MLP on `batch` images, 2 per multiply-add (tests/_factories.py):
    forward 2*IN*HIDDEN + 2*HIDDEN*classes per image; backward: the first layer's weight gradient only (nothing
    needs the input's), the head's weight and input gradients; biases and activations are not counted."""
    forward = 2 * IN * HIDDEN + 2 * HIDDEN * classes
    backward = 2 * IN * HIDDEN + 2 * (2 * HIDDEN * classes)
    return batch * forward, batch * (forward + backward)


def test_finetune_trains_the_factory_mlp_over_a_stream() -> None:
    trains, predicts = _events(2)
    learner = FinetuneLearner(**CONTINUAL)
    state = learner.init(0)
    for event in trains:
        state, resources = learner.train(event, state)
        assert resources.peak_parameters == IN * HIDDEN + HIDDEN + HIDDEN * CLASSES + CLASSES
        # 32 items, batch 16: 2 steps per epoch, each counted as the hand count of a 16-image step
        assert resources.train_flops == pytest.approx(3 * 2 * _hand_flops(16)[1], rel=1e-12)
    for event in predicts:
        scores = learner.predict(event, state)
        assert scores.shape == (40, CLASSES)
        assert np.mean(scores.argmax(1) == event.dataset.labels()) > 0.9  # chance: 0.25


def test_independent_trains_the_factory_mlp() -> None:
    trains, predicts = _events(1)
    learner = IndependentLearner(**NEVIS)
    state, resources = learner.train(trains[0], learner.init(0))
    assert resources.peak_parameters == count_parameters(make_model(MLP, CLASSES))
    assert resources.train_flops == pytest.approx(3 * 2 * _hand_flops(16)[1], rel=1e-12)
    scores = learner.predict(predicts[0], state)
    assert scores.shape == (40, CLASSES)
    assert np.mean(scores.argmax(1) == predicts[0].dataset.labels()) > 0.9


def test_factory_gets_keywords_only_and_only_those_it_accepts() -> None:
    _factories.CALLS.clear()
    make_model("_factories:recording", 7, in_channels=3, seed=0)
    assert _factories.CALLS == [{"num_classes": 7, "in_channels": 3}]
    model = make_model("_factories:plain_mlp", 7, in_channels=3, seed=0)  # takes no in_channels: still works
    assert model(torch.zeros(2, 3, SIDE, SIDE)).shape == (2, 7)
    learner = FinetuneLearner(**{**CONTINUAL, "architecture": "_factories:plain_mlp", "epochs": 1})
    trains, predicts = _events(1)
    state, _ = learner.train(trains[0], learner.init(0))
    assert learner.predict(predicts[0], state).shape == (40, CLASSES)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_such_module_xyz:net", "cannot import 'no_such_module_xyz'"),
        ("_factories:missing", "'_factories' has no callable 'missing'"),
        ("_factories:NOT_CALLABLE", "'_factories' has no callable 'NOT_CALLABLE'"),
        ("_factories:not_a_module", "returned a str, not a torch nn.Module"),
        ("_factories:features_only", r"class scores \[N, num_classes\].*gave \[2, 192\]"),
        ("resnet_tiny", "unknown architecture 'resnet_tiny'.*package.module:factory"),
    ],
)
@pytest.mark.parametrize("learner", [FinetuneLearner, IndependentLearner])
def test_a_bad_spec_is_refused_when_the_learner_is_made(learner, spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        learner(architecture=spec, resolution=SIDE)
    assert str(info.value).startswith(f"-o architecture={spec}")


def test_a_network_failing_on_the_probe_is_refused_when_the_side_is_set() -> None:
    with pytest.raises(ValueError, match=r"failed on a probe batch \[2, 3, 16, 16\].*-o resolution="):
        FinetuneLearner(architecture=MLP, resolution=16)
    FinetuneLearner(architecture=MLP)  # resolution unset: each task's own side decides, so no verdict yet


def test_transfer_learners_need_a_backbone_and_a_linear_head() -> None:
    with pytest.raises(ValueError, match=r"-o architecture=_factories:plain_mlp: .*`backbone`.*`head`"):
        FinetunePrevLearner(architecture="_factories:plain_mlp", resolution=SIDE)
    trains, predicts = _events(2)
    # the MLP has both: the second task starts from the first's backbone (chosen by kNN on its features for knn)
    for learner in (FinetunePrevLearner(**NEVIS), FinetuneKnnLearner(**NEVIS, allow_random_init=False)):
        state = learner.init(0)
        for event in trains:
            state, _ = learner.train(event, state)
        assert state["init_from"] == "task:bucket0"
        assert learner.predict(predicts[1], state).shape == (40, CLASSES)


def test_flops_of_the_factory_network_match_a_hand_count() -> None:
    model = make_model(MLP, CLASSES, seed=0)
    batch = (torch.zeros(5, 3, SIDE, SIDE), torch.zeros(5, dtype=torch.long))
    forward, training = _hand_flops(5)
    assert count_training_flops(model, batch) == training
    assert count_inference_flops(model, batch[0]) == forward
    assert architecture_forward_flops("_factories:plain_mlp", CLASSES, SIDE, SIDE) == _hand_flops(1)[0]


def test_pickled_state_and_learner_resume_with_identical_predictions() -> None:
    trains, predicts = _events(3)
    learner = FinetuneLearner(**CONTINUAL)
    state, _ = learner.train(trains[0], learner.init(3))
    resumed_learner = pickle.loads(pickle.dumps(learner))
    resumed = pickle.loads(pickle.dumps(state))
    for event in trains[1:]:
        state, _ = learner.train(event, state)
        resumed, _ = resumed_learner.train(event, resumed)
    for event in predicts:
        assert np.array_equal(learner.predict(event, state), resumed_learner.predict(event, resumed))
    nevis = IndependentLearner(**NEVIS)
    state, _ = nevis.train(trains[0], nevis.init(3))
    again = pickle.loads(pickle.dumps(nevis)).predict(predicts[0], pickle.loads(pickle.dumps(state)))
    assert np.array_equal(nevis.predict(predicts[0], state), again)


def test_one_seed_gives_one_set_of_weights() -> None:
    rng_before = torch.get_rng_state()
    a, b, c = (make_model(MLP, CLASSES, seed=s).state_dict() for s in (5, 5, 6))
    assert torch.equal(torch.get_rng_state(), rng_before)  # the factory's draws leave the global RNG alone
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(a["head.weight"], c["head.weight"])
    trains, predicts = _events(1)

    def scores(learner_class, options, seed: int) -> np.ndarray:
        learner = learner_class(**options)
        state, _ = learner.train(trains[0], learner.init(seed))
        return learner.predict(predicts[0], state)

    for learner_class, options in ((FinetuneLearner, CONTINUAL), (IndependentLearner, NEVIS)):
        first = scores(learner_class, options, 1)
        assert np.array_equal(first, scores(learner_class, options, 1))
        assert not np.array_equal(first, scores(learner_class, options, 2))


def test_help_of_finetune_names_the_factory_form() -> None:
    shown = CliRunner().invoke(app, ["learners", "finetune"], terminal_width=80)
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    assert "package.module:factory" in text and "num_classes" in text
