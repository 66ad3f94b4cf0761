"""Hyper-parameter search: seeded trial sampling, best-on-dev selection, resume from a work folder, Ray = local."""

import math
import pickle
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch
from _prereq import import_or_missing

from lifelong.core import ArrayDataset, TaskKey
from lifelong.core.executors import LocalExecutor, RayExecutor
from lifelong.training.hpsearch import SearchSpace, Trial, TrialResult, identical, sample_trials, search
from lifelong.training.recipe import FitJob

GRID = (1e-4, 1e-3, 1e-2, 1e-1)


@dataclass
class FakeFit:
    """A fit that returns a set dev error per trial index, counts its calls, and can fail at one trial."""

    errors: dict[int, float | None] = field(default_factory=dict)
    fail_at: int | None = None
    calls: list[int] = field(default_factory=list)

    def __call__(self, trial: Trial) -> TrialResult:
        if trial.index == self.fail_at:
            raise KeyboardInterrupt(f"killed during trial {trial.index}")
        self.calls.append(trial.index)
        error = self.errors.get(trial.index, 0.5)
        weights = {"w": torch.full((2,), trial.lr)}
        return TrialResult(trial, error, 10.0 * (trial.index + 1), 3, weights, (0.9, error or 0.9))


def test_sampling_is_seeded_and_within_ranges():
    space = SearchSpace(trials=16)
    trials = sample_trials(space, seed=3)
    assert trials == sample_trials(space, seed=3)
    assert trials != sample_trials(space, seed=4)
    assert [t.index for t in trials] == list(range(16))
    assert all(1e-4 <= t.lr <= 1e-1 and 0.0 <= t.label_smoothing <= 0.3 for t in trials)
    assert len({t.lr for t in trials}) == 16


def test_lr_is_log_uniform_and_smoothing_uniform():
    trials = sample_trials(SearchSpace(trials=4000, lr=(1e-4, 1e-1), label_smoothing=(0.0, 0.3)), seed=0)
    log_lr = np.log10([t.lr for t in trials])
    # log-uniform: each decade holds a third of the draws (a uniform lr would put ~90 % in the top decade)
    counts = np.histogram(log_lr, bins=[-4, -3, -2, -1])[0] / len(trials)
    assert np.allclose(counts, 1 / 3, atol=0.03)
    smoothing = np.array([t.label_smoothing for t in trials])
    assert np.allclose(np.histogram(smoothing, bins=3, range=(0, 0.3))[0] / len(trials), 1 / 3, atol=0.03)


def test_frugal_variant_walks_the_grid_with_fixed_smoothing():
    space = SearchSpace(trials=4, fixed_label_smoothing=0.15, lr_grid=GRID)
    trials = sample_trials(space, seed=5)
    assert sorted(t.lr for t in trials) == list(GRID)
    assert {t.label_smoothing for t in trials} == {0.15}
    assert trials == sample_trials(space, seed=5)
    twice = sample_trials(SearchSpace(trials=8, fixed_label_smoothing=0.15, lr_grid=GRID), seed=5)
    assert sorted(t.lr for t in twice) == sorted(GRID * 2)
    two = sample_trials(SearchSpace(trials=2, lr_grid=GRID), seed=1)
    assert len({t.lr for t in two}) == 2 and all(0 <= t.label_smoothing <= 0.3 for t in two)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"trials": 0}, "trials must be a positive integer"),
        ({"lr": (0.1, 0.01)}, "lr must be a range"),
        ({"lr": (0.0, 0.1)}, "lr must be a range"),
        ({"label_smoothing": (0.0, 1.0)}, "label_smoothing must be a range"),
        ({"fixed_label_smoothing": 1.5}, "fixed_label_smoothing must be in"),
        ({"lr_grid": ()}, "lr_grid must be None or a non-empty"),
        ({"lr_grid": (0.1, -1.0)}, "lr_grid must be None or a non-empty"),
    ],
)
def test_search_space_validation(options, message):
    with pytest.raises(ValueError, match=message):
        SearchSpace(**options)


def test_sample_trials_needs_a_non_negative_seed():
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        sample_trials(SearchSpace(), seed=-1)


def _trials(n):
    return [Trial(i, 10.0 ** -(i % 4 + 1), 0.1) for i in range(n)]


@pytest.mark.parametrize(
    ("errors", "winner"),
    [
        ({0: 0.4, 1: 0.2, 2: 0.3}, 1),
        ({0: 0.4, 1: 0.2, 2: 0.2}, 1),  # tie: lowest index
        ({0: None, 1: 0.7, 2: None}, 1),  # None loses to any error
        ({0: math.nan, 1: None, 2: 0.9}, 2),  # NaN loses too
        ({0: None, 1: None, 2: None}, 0),  # no dev split: the first trial
        ({0: math.nan, 1: math.nan, 2: math.nan}, 0),
    ],
)
def test_best_is_lowest_dev_error_with_ties_to_lowest_index(errors, winner):
    best, results = search(FakeFit(errors), _trials(3))
    assert best.trial.index == winner
    assert [r.trial.index for r in results] == [0, 1, 2]
    assert sum(r.train_flops for r in results) == 60.0  # every trial's FLOPs are reported


def test_resume_reuses_finished_trials_from_the_workdir(tmp_path):
    errors = {0: 0.5, 1: 0.3, 2: 0.4, 3: 0.3, 4: 0.6}
    interrupted = FakeFit(errors, fail_at=3)
    with pytest.raises(KeyboardInterrupt):
        search(interrupted, _trials(5), workdir=tmp_path)
    assert interrupted.calls == [0, 1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trial-0000.pkl", "trial-0001.pkl", "trial-0002.pkl"]

    resumed = FakeFit(errors)
    seen = []
    best, results = search(resumed, _trials(5), workdir=tmp_path, progress=lambda r: seen.append(r.trial.index))
    assert resumed.calls == [3, 4]  # finished trials are loaded, not run again
    assert seen == [0, 1, 2, 3, 4]

    again = FakeFit(errors)
    best2, results2 = search(again, _trials(5), workdir=tmp_path)
    assert again.calls == []
    fresh_best, fresh = search(FakeFit(errors), _trials(5))
    assert best.trial.index == best2.trial.index == fresh_best.trial.index == 1
    assert all(identical(a, b) and identical(a, c) for a, b, c in zip(results, results2, fresh, strict=True))


def test_executor_map_also_persists_each_finished_trial(tmp_path):
    interrupted = FakeFit(fail_at=2)
    with pytest.raises(KeyboardInterrupt):
        search(interrupted, _trials(4), workdir=tmp_path, executor=LocalExecutor())
    assert len(list(tmp_path.glob("trial-*.pkl"))) == 2
    resumed = FakeFit()
    _, results = search(resumed, _trials(4), workdir=tmp_path, executor=LocalExecutor())
    assert resumed.calls == [2, 3] and len(results) == 4


class OutOfOrderExecutor:
    """Like a remote executor: items end in reverse order, and the fit cannot see the caller's work folder."""

    name = "fake-remote"

    def __init__(self, workdir):
        self.workdir = workdir
        self.files_when_called_back = []

    def map(self, fn, items, on_result=None):
        results = {}
        for index in reversed(range(len(items))):
            before = sorted(self.workdir.iterdir())
            results[index] = fn(items[index])
            assert sorted(self.workdir.iterdir()) == before  # the worker wrote nothing here
            on_result(index, results[index])
            self.files_when_called_back.append(len(list(self.workdir.iterdir())))
        return [results[i] for i in range(len(items))]


def test_with_an_executor_each_trial_is_persisted_by_the_caller_as_it_arrives(tmp_path):
    executor = OutOfOrderExecutor(tmp_path)
    best, results = search(FakeFit({2: 0.1}), _trials(3), workdir=tmp_path, executor=executor)
    assert executor.files_when_called_back == [1, 2, 3]  # saved one by one, as results came back
    assert best.trial.index == 2 and [r.trial.index for r in results] == [0, 1, 2]
    resumed = FakeFit()
    search(resumed, _trials(3), workdir=tmp_path, executor=OutOfOrderExecutor(tmp_path))
    assert resumed.calls == []


def test_a_workdir_of_another_search_is_refused(tmp_path):
    search(FakeFit(), _trials(2), workdir=tmp_path)
    other = [Trial(0, 0.5, 0.0), Trial(1, 0.1, 0.1)]
    with pytest.raises(ValueError, match="belongs to another search"):
        search(FakeFit(), other, workdir=tmp_path)
    (tmp_path / "trial-0001.pkl").write_bytes(b"not a pickle")
    with pytest.raises(ValueError, match="cannot read finished trial"):
        search(FakeFit(), _trials(2), workdir=tmp_path)


def test_search_checks_its_inputs_and_fit_results():
    with pytest.raises(ValueError, match="at least one trial"):
        search(FakeFit(), [])
    with pytest.raises(ValueError, match="unique"):
        search(FakeFit(), [Trial(0, 0.1, 0.0), Trial(0, 0.01, 0.0)])
    with pytest.raises(TypeError, match="must return a TrialResult for that trial"):
        search(lambda trial: 0.5, _trials(1))


def _tiny_job(seed=0):
    key = TaskKey("colours", "multi-class", 3)
    rng = np.random.default_rng(seed)

    def data(n, split):
        labels = rng.integers(0, 3, n)
        colours = np.array([[220, 30, 30], [30, 220, 30], [30, 30, 220]])
        noise = rng.normal(0, 30, (n, 8, 8, 3))
        return ArrayDataset(
            key, split, np.clip(colours[labels][:, None, None] + noise, 0, 255).astype(np.uint8), labels
        )

    return FitJob("resnet_mini", 3, key.kind, data(64, "train"), data(32, "dev"), seed=seed, epochs=1, resolution=None)


@pytest.mark.slow
def test_ray_gives_the_same_trial_results_as_local():
    import_or_missing("ray", "ray")
    job = _tiny_job()
    pickle.loads(pickle.dumps(job))  # the job travels to the workers
    trials = sample_trials(SearchSpace(trials=3), seed=0)  # more trials than workers: results keep their order
    local_best, local = search(job, trials)
    executor = RayExecutor(num_cpus=2)
    try:
        ray_best, remote = search(job, trials, executor=executor)
    finally:
        executor.shutdown()
    assert all(identical(a, b) for a, b in zip(local, remote, strict=True))
    assert local_best.trial == ray_best.trial


def test_independent_trials_take_gpus_per_trial_on_ray():
    from lifelong.training.independent_recipe import IndependentConfig

    executor = IndependentConfig(executor="ray", gpus_per_trial=0.5).trial_executor(threads=2)
    assert (executor.name, executor.cpus_per_item, executor.gpus_per_item) == ("ray", 2, 0.5)
    assert IndependentConfig().trial_executor(threads=1) is None
    for executor in ("spark", "local"):  # GPUs per trial are a Ray option
        with pytest.raises(ValueError, match="gpus_per_trial=0.5: choose executor='local'"):
            IndependentConfig(executor=executor, gpus_per_trial=0.5)
    with pytest.raises(ValueError, match="whole number"):
        IndependentConfig(executor="ray", gpus_per_trial=1.5)
