"""GP-UCB search (Nevis'22's BHPO): the acquisition's next point against a brute-force UCB over a grid with the
same fitted GP, the initial trials, failed trials, the large space's coordinates, and resuming a killed search."""

import itertools
import json
import math

import numpy as np
import pytest

from lifelong.training.bayesopt import (
    GpUcb,
    decode,
    dimensions,
    encode,
    fit_surrogate,
    gp_ucb_search,
    maximise_ucb,
    objective,
    propose,
    ucb,
)
from lifelong.training.hpsearch import SearchSpace, Trial, TrialResult, identical, sample_trials


def _result(trial: Trial, error: float | None) -> TrialResult:
    return TrialResult(trial, error, 1e9 * (trial.index + 1), 10, {}, (error,) if error is not None else ())


def _bowl(trial: Trial) -> float:
    """A smooth dev error with its minimum at lr = 1e-2, label smoothing 0.1 (and, in the large space, cosine,
    batch x1, crop on, flip off, weight decay 1e-4)."""
    error = 0.2 + 0.05 * (math.log10(trial.lr) + 2) ** 2 + 2.0 * (trial.label_smoothing - 0.1) ** 2
    if trial.weight_decay is not None:
        error += 0.02 * (math.log10(trial.weight_decay) + 4) ** 2 + 0.05 * (trial.schedule != "cosine")
        error += 0.04 * abs(trial.batch_scale) + 0.03 * (not trial.crop) + 0.03 * trial.flip
    return error


class _Fit:
    """fit(trial) -> TrialResult of `_bowl`; counts calls; raises KeyboardInterrupt at call `stop_at`."""

    def __init__(self, stop_at: int | None = None):
        self.calls, self.stop_at = [], stop_at

    def __call__(self, trial: Trial) -> TrialResult:
        if self.stop_at is not None and len(self.calls) == self.stop_at:
            raise KeyboardInterrupt
        self.calls.append(trial.index)
        return _result(trial, _bowl(trial))


def _fitted(space: SearchSpace, n: int, seed: int = 3):
    trials = sample_trials(space, seed)[:n]
    dims = dimensions(space)
    results = [_result(t, _bowl(t)) for t in trials]
    points = np.stack([encode(dims, t) for t in trials])
    return dims, results, fit_surrogate(points, objective(results), seed)


def test_the_next_point_maximises_ucb_against_a_brute_force_grid():
    space = SearchSpace(trials=20)
    dims, _, gp = _fitted(space, 6)
    settings = GpUcb(kappa=1.8)
    found = maximise_ucb(gp, dims, settings, np.random.default_rng(0))
    axis = np.linspace(0.0, 1.0, 301)
    grid = np.array(list(itertools.product(axis, axis)))
    values = ucb(gp, grid, settings.kappa)
    best = grid[int(np.argmax(values))]
    assert ucb(gp, found, settings.kappa)[0] >= values.max() - 1e-6
    assert np.abs(found - best).max() <= 2 / 300  # the same optimum, within the grid's spacing


def test_with_a_choice_coordinate_the_next_point_beats_every_choice_on_a_grid():
    space = SearchSpace(trials=20, lr_grid=(1e-4, 1e-3, 1e-2, 1e-1))
    dims, _, gp = _fitted(space, 5)
    assert [d.scale for d in dims] == ["choice", "linear"]
    found = maximise_ucb(gp, dims, GpUcb(), np.random.default_rng(1))
    lr_points = [dims[0].to_unit(v) for v in dims[0].choices]
    grid = np.array([(u, s) for u in lr_points for s in np.linspace(0, 1, 1001)])
    assert found[0] in lr_points  # a valid grid lr
    assert ucb(gp, found, 1.8)[0] >= ucb(gp, grid, 1.8).max() - 1e-6


def test_ucb_is_the_gp_mean_plus_kappa_standard_deviations():
    space = SearchSpace(trials=20)
    dims, _, gp = _fitted(space, 5)
    points = np.random.default_rng(0).random((7, len(dims)))
    mean, std = gp.predict(points, return_std=True)
    np.testing.assert_allclose(ucb(gp, points, 2.5), mean + 2.5 * std)
    np.testing.assert_allclose(ucb(gp, points, 0.0), mean)


def test_the_first_trials_are_the_random_search_ones_then_the_gp_proposes():
    space = SearchSpace(trials=6)
    best, results = gp_ucb_search(_Fit(), space, seed=4, settings=GpUcb(init_trials=3))
    random = sample_trials(space, 4)
    assert [r.trial for r in results[:3]] == random[:3]
    assert [r.trial for r in results[3:]] != random[3:]
    assert best == min(results, key=lambda r: (r.dev_error, r.trial.index))
    # each proposal is the UCB maximiser of the GP fitted to the trials before it
    for index in range(3, 6):
        assert propose(space, results[:index], index, 4, GpUcb(init_trials=3)) == results[index].trial


def test_gp_ucb_finds_a_lower_error_than_its_random_start_on_a_smooth_bowl():
    space = SearchSpace(trials=12)
    _, results = gp_ucb_search(_Fit(), space, seed=0, settings=GpUcb(init_trials=3))
    assert min(r.dev_error for r in results[3:]) < min(r.dev_error for r in results[:3])


def test_the_large_space_has_seven_coordinates_that_round_trip():
    space = SearchSpace(trials=8, size="large")
    dims = dimensions(space)
    assert [d.name for d in dims] == [
        "lr",
        "label_smoothing",
        "weight_decay",
        "schedule",
        "batch_scale",
        "crop",
        "flip",
    ]
    for trial in sample_trials(space, 2):
        again = decode(dims, encode(dims, trial), trial.index, space)
        assert again.schedule == trial.schedule and again.batch_scale == trial.batch_scale
        assert (again.crop, again.flip) == (trial.crop, trial.flip)
        assert math.isclose(again.lr, trial.lr, rel_tol=1e-9)
        assert math.isclose(again.weight_decay, trial.weight_decay, rel_tol=1e-9)
    _, results = gp_ucb_search(_Fit(), space, seed=1, settings=GpUcb(init_trials=3))
    for r in results:
        assert r.trial.schedule in ("cosine", "piecewise") and r.trial.batch_scale in (-1, 0, 1)
        assert 1e-5 <= r.trial.weight_decay <= 1e-3 and 1e-4 <= r.trial.lr <= 1e-1


def test_a_fixed_label_smoothing_is_kept_and_not_modelled():
    space = SearchSpace(trials=5, fixed_label_smoothing=0.15)
    assert [d.name for d in dimensions(space)] == ["lr"]
    _, results = gp_ucb_search(_Fit(), space, seed=0, settings=GpUcb(init_trials=2))
    assert {r.trial.label_smoothing for r in results} == {0.15}


def test_failed_trials_count_as_the_worst_error_and_a_missing_dev_split_is_refused():
    trials = sample_trials(SearchSpace(trials=3), 0)
    values = objective([_result(trials[0], 0.3), _result(trials[1], math.nan), _result(trials[2], 0.5)])
    np.testing.assert_allclose(values, [-0.3, -0.5, -0.5])
    with pytest.raises(ValueError, match="no dev split"):
        objective([_result(trials[0], None)])


def test_a_killed_search_resumes_without_redoing_finished_trials_and_gives_the_same_results(tmp_path):
    space, settings = SearchSpace(trials=7), GpUcb(init_trials=2)
    _, whole = gp_ucb_search(_Fit(), space, seed=5, settings=settings, workdir=tmp_path / "whole")
    killed = _Fit(stop_at=4)
    with pytest.raises(KeyboardInterrupt):
        gp_ucb_search(killed, space, seed=5, settings=settings, workdir=tmp_path / "resumed")
    assert killed.calls == [0, 1, 2, 3]
    again = _Fit()
    _, resumed = gp_ucb_search(again, space, seed=5, settings=settings, workdir=tmp_path / "resumed")
    assert again.calls == [4, 5, 6]  # the finished trials were loaded, not run
    assert all(identical(a, b) for a, b in zip(whole, resumed, strict=True))


def test_a_folder_of_another_search_is_refused(tmp_path):
    gp_ucb_search(_Fit(), SearchSpace(trials=3), seed=0, settings=GpUcb(init_trials=2), workdir=tmp_path)
    assert json.loads((tmp_path / "search.json").read_text())["search"] == "gp-ucb"
    with pytest.raises(ValueError, match="another search"):
        gp_ucb_search(_Fit(), SearchSpace(trials=3), seed=1, settings=GpUcb(init_trials=2), workdir=tmp_path)
    (tmp_path / "search.json").unlink()  # trials without the settings: a random search's folder
    with pytest.raises(ValueError, match="not GP-UCB"):
        gp_ucb_search(_Fit(), SearchSpace(trials=3), seed=0, settings=GpUcb(init_trials=2), workdir=tmp_path)


@pytest.mark.parametrize(
    ("options", "message"),
    [({"init_trials": 0}, "initial random trials"), ({"kappa": -1.0}, "kappa"), ({"candidates": 0}, "candidates")],
)
def test_gp_settings_are_checked(options, message):
    with pytest.raises(ValueError, match=message):
        GpUcb(**options)
