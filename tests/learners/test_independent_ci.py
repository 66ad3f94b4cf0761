"""CI-sized versions of the slow Independent tests, on a few hundred real Fashion-MNIST images: the default config
learns, and HP trials run on Ray are bit-identical to the same trials run here (the slow tests in
test_independent.py and training/test_hpsearch.py check the same at a larger size)."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest
import torch
from _prereq import import_or_missing, needs_fashion_mnist

from lifelong.core import ArrayDataset, PredictEvent, TaskKey, TrainEvent
from lifelong.data.sources import load_source
from lifelong.learners.independent import IndependentLearner
from lifelong.training.hpsearch import SearchSpace, identical, sample_trials

pytestmark = needs_fashion_mnist

CLASSES = [0, 1, 7, 8]  # T-shirt/top, Trouser, Sneaker, Bag
KEY = TaskKey("fashion4", "multi-class", len(CLASSES))


@pytest.fixture(scope="module")
def fashion():
    return load_source("fashion-mnist")


def _subset(data, split: str, n: int, seed: int) -> ArrayDataset:
    """`n` seeded images of CLASSES from the official `split`, labels 0..3 in CLASSES order."""
    pool = np.flatnonzero((data.official_split == split) & np.isin(data.labels, CLASSES))
    rows = np.sort(np.random.default_rng(seed).choice(pool, n, replace=False))
    return ArrayDataset(KEY, "train", data.images[rows], np.searchsorted(CLASSES, data.labels[rows]))


def _train_event(fashion, n_train: int, n_dev: int) -> TrainEvent:
    train, dev = _subset(fashion, "train", n_train, 0), _subset(fashion, "train", n_dev, 1)
    return TrainEvent(0, 0, KEY, train, dev, train)


def test_the_default_config_learns_a_small_real_task(fashion):
    """All defaults (32 px, 10 epochs, warmup, augmentation, label smoothing): chance and a constant guess err 0.75."""
    learner = IndependentLearner()
    state, resources = learner.train(_train_event(fashion, 128, 64), learner.init(0))
    test = _subset(fashion, "test", 200, 2)
    scores = learner.predict(PredictEvent(1, 0, KEY, "dev_test", test), state)
    assert np.mean(scores.argmax(1) != test.labels()) < 0.3  # about 0.1 on a loaded 2-core machine
    assert resources.train_flops > 0


def _trial_results(workdir) -> list:
    return [pickle.loads(p.read_bytes()) for p in sorted(workdir.glob("trial-*.pkl"))]


def test_ray_trials_are_bit_identical_to_local_trials(fashion, tmp_path):
    ray = import_or_missing("ray", "ray")
    options = {"resolution": None, "epochs": 1, "min_batch_size": 16, "max_batch_size": 16, "trials": 2}
    event = _train_event(fashion, 48, 32)
    local, remote = IndependentLearner(**options), IndependentLearner(**options, executor="ray", ray_num_cpus=2)
    try:
        state, resources = local.train(dataclasses.replace(event, workdir=tmp_path / "local"), local.init(1))
        state2, resources2 = remote.train(dataclasses.replace(event, workdir=tmp_path / "ray"), remote.init(1))
    finally:
        ray.shutdown()
    here, there = _trial_results(tmp_path / "local"), _trial_results(tmp_path / "ray")
    assert [r.trial for r in here] == [r.trial for r in there] == sample_trials(SearchSpace(trials=2), seed=0)
    assert not identical(here[0], here[1])  # two different trials: the comparison below can tell results apart
    assert all(identical(a, b) for a, b in zip(here, there, strict=True))
    assert resources == resources2 and state["trial"] == state2["trial"]
    assert all(torch.equal(v, state2["model"][k]) for k, v in state["model"].items())
