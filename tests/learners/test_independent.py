"""IndependentLearner on tiny synthetic tasks (single run, HP search, resume, inference FLOPs), and the registry."""

import dataclasses
import pickle

import numpy as np
import pytest
import torch
from _prereq import import_or_missing
from torch.utils.flop_counter import FlopCounterMode

from lifelong.core import ArrayDataset, Learner, PredictEvent, Resources, TaskKey, TrainEvent
from lifelong.learners import LEARNERS, describe_learners, make_learner
from lifelong.learners.independent import IndependentConfig, IndependentLearner
from lifelong.training import count_training_flops, make_model
from lifelong.training.hpsearch import SearchSpace, Trial, sample_trials
from lifelong.training.inputs import prepare_batch
from lifelong.training.recipe import FitJob

COLOURS = np.array([[230, 30, 30], [30, 230, 30], [30, 30, 230], [230, 230, 30]])
COLOURS_KEY = TaskKey("colours", "multi-class", 4)
FAST = {"resolution": None, "epochs": 4, "min_batch_size": 16, "max_batch_size": 16, "lr": 0.05}


def _colours(key, n, seed):
    """Noisy constant-colour 8x8 images; multi-label tasks mark which of two colour channels are on."""
    rng = np.random.default_rng(seed)
    if key.is_multi_label:
        labels = rng.integers(0, 2, (n, 2)).astype(np.uint8)
        base = 40 + 180 * np.concatenate([labels, np.zeros((n, 1), dtype=np.uint8)], axis=1)
    else:
        labels = rng.integers(0, key.num_classes, n)
        base = COLOURS[labels]
    images = np.clip(base[:, None, None, :] + rng.normal(0, 25, (n, 8, 8, 3)), 0, 255).astype(np.uint8)
    return ArrayDataset(key, "train", images, labels)


def _events(key, task_index=0, n=192):
    train, dev, test = _colours(key, n, 1 + task_index), _colours(key, 64, 50 + task_index), _colours(key, 96, 99)
    train_event = TrainEvent(2 * task_index, task_index, key, train, dev, train)
    return train_event, PredictEvent(2 * task_index + 1, task_index, key, "dev_test", test)


def _run(seed, key=COLOURS_KEY, **options):
    learner = IndependentLearner(**{**FAST, **options})
    train_event, predict_event = _events(key)
    state, resources = learner.train(train_event, learner.init(seed))
    return learner, state, resources, learner.predict(predict_event, state), predict_event


def test_learns_a_separable_task_and_reports_resources():
    learner, state, resources, scores, event = _run(0)
    assert isinstance(learner, Learner)
    assert scores.shape == (96, 4)
    assert np.mean(scores.argmax(1) != event.dataset.labels()) < 0.2  # chance is 0.75
    assert isinstance(resources, Resources) and resources.train_flops > 0
    model = make_model("resnet_mini", 4)
    assert resources.peak_parameters == sum(p.numel() for p in model.parameters())
    per_step = count_training_flops(model, (torch.zeros(16, 3, 8, 8), torch.zeros(16, dtype=torch.long)))
    steps = FAST["epochs"] * (192 // 16)
    assert resources.train_flops == pytest.approx(per_step * steps, rel=1e-12)
    assert state["task_uid"] == "colours" and state["past_tasks"] == ["colours"]


def test_same_seed_identical_and_different_seeds_differ():
    a = _run(7)[3]
    b = _run(7)[3]
    c = _run(8)[3]
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_multilabel_returns_probabilities():
    _, _, resources, scores, _ = _run(0, key=TaskKey("duo", "multi-label", 2), epochs=2)
    assert scores.shape == (96, 2)
    assert ((scores >= 0) & (scores <= 1)).all()
    assert resources.train_flops > 0


def test_state_is_picklable_and_resume_gives_identical_numbers():
    learner = IndependentLearner(**{**FAST, "epochs": 1})
    first, second = TaskKey("a", "multi-class", 4), TaskKey("b", "multi-class", 3)
    t0, _ = _events(first, 0, n=64)
    t1, p1 = _events(second, 1, n=64)
    state0, _ = learner.train(t0, learner.init(3))
    resumed = pickle.loads(pickle.dumps(state0))
    state1, r1 = learner.train(t1, state0)
    state1b, r1b = learner.train(t1, resumed)
    assert r1 == r1b
    assert np.array_equal(learner.predict(p1, state1), learner.predict(p1, state1b))
    assert state1["past_tasks"] == ["a", "b"]
    with pytest.raises(ValueError, match="keeps only the latest model"):
        learner.predict(_events(first, 0, n=64)[1], state1)


def test_predict_before_training_is_explained():
    learner = IndependentLearner()
    with pytest.raises(ValueError, match="never trained on it"):
        learner.predict(_events(TaskKey("x", "multi-class", 4))[1], learner.init(0))


def test_config_validation_and_registry():
    assert IndependentLearner().config == IndependentConfig()
    with pytest.raises(ValueError, match="unknown IndependentLearner option"):
        IndependentLearner(epoch=3)
    with pytest.raises(ValueError, match="unknown architecture"):
        IndependentConfig(architecture="vgg")
    with pytest.raises(ValueError, match="min_batch_size"):
        IndependentConfig(min_batch_size=64, max_batch_size=32)
    assert "independent" in LEARNERS
    learner = make_learner("independent", epochs=2)
    assert isinstance(learner, IndependentLearner) and learner.config.epochs == 2
    with pytest.raises(ValueError, match=r"unknown learner 'nope'; known learners: .*independent"):
        make_learner("nope")
    names = dict(describe_learners())
    assert names["independent"].startswith("Trains a fresh")


@pytest.mark.slow
def test_defaults_on_2000_rgb_32px_images():
    key = TaskKey("colours32", "multi-class", 4)
    rng = np.random.default_rng(0)

    def data(n):
        labels = rng.integers(0, 4, n)
        noise = rng.normal(0, 40, (n, 32, 32, 3))
        return ArrayDataset(
            key, "train", np.clip(COLOURS[labels][:, None, None] + noise, 0, 255).astype(np.uint8), labels
        )

    train, dev, test = data(2000), data(400), data(400)
    learner = IndependentLearner()
    state, resources = learner.train(TrainEvent(0, 0, key, train, dev, train), learner.init(0))
    scores = learner.predict(PredictEvent(1, 0, key, "dev_test", test), state)
    assert np.mean(scores.argmax(1) != test.labels()) < 0.2
    assert resources.train_flops > 0


def _trial_files(workdir):
    return {p.name: pickle.loads(p.read_bytes()) for p in sorted(workdir.glob("trial-*.pkl"))}


def test_search_counts_every_trial_and_keeps_the_winner(tmp_path):
    learner = IndependentLearner(**{**FAST, "epochs": 2, "trials": 3})
    train_event, predict_event = _events(COLOURS_KEY, n=64)
    train_event = dataclasses.replace(train_event, workdir=tmp_path / "work")
    state, resources = learner.train(train_event, learner.init(0))
    results = list(_trial_files(tmp_path / "work").values())
    assert [r.trial for r in results] == sample_trials(SearchSpace(trials=3), seed=0)  # seeded by task index
    best = min(results, key=lambda r: (r.dev_error, r.trial.index))
    assert state["trial"] == dataclasses.asdict(best.trial) and state["dev_error"] == best.dev_error
    assert resources.train_flops == sum(r.train_flops for r in results) > best.train_flops
    assert resources.dev_curve == best.dev_curve and len(best.dev_curve) == 2
    assert all(torch.equal(v, best.state_dict[k]) for k, v in state["model"].items())
    assert learner.predict(predict_event, state).shape == (96, 4)


def test_resume_mid_search_redoes_only_unfinished_trials(tmp_path, monkeypatch):
    learner = IndependentLearner(**{**FAST, "epochs": 1, "trials": 3})
    train_event = dataclasses.replace(_events(COLOURS_KEY, n=64)[0], workdir=tmp_path)
    state, resources = learner.train(train_event, learner.init(2))
    (tmp_path / "trial-0001.pkl").unlink()  # as if the run was killed while training trial 1
    calls = []
    fit = FitJob.__call__
    monkeypatch.setattr(FitJob, "__call__", lambda job, trial: calls.append(trial.index) or fit(job, trial))
    state2, resources2 = learner.train(train_event, learner.init(2))
    assert calls == [1]
    assert resources2 == resources and state2["trial"] == state["trial"]
    assert all(torch.equal(v, state2["model"][k]) for k, v in state["model"].items())


def test_trials_and_search_space_options():
    cfg = IndependentConfig(lr=0.02, label_smoothing=0.05)
    assert cfg.trials_for(3) == [Trial(0, 0.02, 0.05)]  # the default: one run, no search
    frugal = IndependentConfig(trials=4, fixed_label_smoothing=0.15, lr_grid=[1e-4, 1e-3, 1e-2, 1e-1])
    assert frugal.lr_grid == (1e-4, 1e-3, 1e-2, 1e-1)
    trials = frugal.trials_for(5)
    assert sorted(t.lr for t in trials) == [1e-4, 1e-3, 1e-2, 1e-1] and {t.label_smoothing for t in trials} == {0.15}
    wide = IndependentConfig(trials=16, lr_range=[1e-3, 1e-2])
    assert wide.trials_for(1) == sample_trials(SearchSpace(trials=16, lr=(1e-3, 1e-2)), seed=1)
    assert wide.trials_for(1) != wide.trials_for(2)
    with pytest.raises(ValueError, match="lr must be a range"):
        IndependentConfig(trials=4, lr_range=(0.1, 0.01))
    with pytest.raises(ValueError, match="choose executor='local'"):
        IndependentConfig(executor="spark")
    with pytest.raises(ValueError, match="choose executor='local'"):
        IndependentConfig(ray_num_cpus=2)
    assert IndependentConfig(executor="ray", ray_num_cpus=2).trial_executor(1).name == "ray"
    assert IndependentConfig().trial_executor(1) is None


@pytest.mark.parametrize("resolution", [None, 16])
def test_predict_flops_is_forward_flops_per_example_times_items(resolution):
    learner, state, _, _, event = _run(0, resolution=resolution, epochs=1)
    flops = learner.predict_flops(event, state)
    model = make_model("resnet_mini", 4).eval()
    images = next(event.dataset.batches(32)).images
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(prepare_batch(images, size=resolution))
    assert flops == pytest.approx(counter.get_total_flops() / 32 * len(event.dataset), rel=1e-12)
    assert learner.predict_flops(event, state) == flops  # cached per model and input shape
    with pytest.raises(ValueError, match="never trained on it"):
        learner.predict_flops(event, learner.init(0))


@pytest.mark.slow
def test_ray_executor_gives_the_local_result():
    ray = import_or_missing("ray", "ray")
    options = {**FAST, "epochs": 1, "trials": 2}
    train_event, _ = _events(COLOURS_KEY, n=64)
    local = IndependentLearner(**options)
    remote = IndependentLearner(**options, executor="ray", ray_num_cpus=2)
    try:
        state, resources = local.train(train_event, local.init(1))
        state2, resources2 = remote.train(train_event, remote.init(1))
    finally:
        ray.shutdown()
    assert resources == resources2 and state["trial"] == state2["trial"]
    assert all(torch.equal(v, state2["model"][k]) for k, v in state["model"].items())
