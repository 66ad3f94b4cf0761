"""The large search space (weight decay, schedule, batch size, crop, mirror) from its draws to the training run,
and `-o search=random|gp-ucb -o space=small|large` on the learners that search."""

import dataclasses
import json
import math

import numpy as np
import pytest
import torch
from learners.test_independent import COLOURS_KEY, FAST, _events

from lifelong.core import ArrayDataset, TaskKey
from lifelong.learners.independent import IndependentConfig, IndependentLearner
from lifelong.training.hpsearch import BATCH_SCALES, SCHEDULES, SearchSpace, Trial, sample_trials
from lifelong.training.inputs import augment, crop_and_resize, to_input_tensor
from lifelong.training.recipe import FitJob
from lifelong.training.schedules import WarmupCosine, WarmupPiecewise, lr_schedule


def test_the_large_space_draws_the_small_spaces_trials_plus_five_fields():
    small, large = sample_trials(SearchSpace(trials=200), 3), sample_trials(SearchSpace(trials=200, size="large"), 3)
    assert [(t.lr, t.label_smoothing) for t in large] == [(t.lr, t.label_smoothing) for t in small]
    assert all(t.settings().keys() == {"lr", "label_smoothing"} for t in small)
    assert {t.schedule for t in large} == set(SCHEDULES) and {t.batch_scale for t in large} == set(BATCH_SCALES)
    assert {t.crop for t in large} == {t.flip for t in large} == {False, True}
    decays = np.log10([t.weight_decay for t in large])
    assert decays.min() >= -5 and decays.max() <= -3 and abs(decays.mean() + 4) < 0.15  # log-uniform in [1e-5, 1e-3]


@pytest.mark.parametrize(
    ("options", "message"),
    [({"size": "huge"}, "search space must be one of"), ({"weight_decay": (1e-3, 1e-5)}, "weight_decay must be")],
)
def test_search_space_options_are_checked(options, message):
    with pytest.raises(ValueError, match=message):
        SearchSpace(**options)


def test_piecewise_schedule_warms_up_then_steps_down_tenfold_at_half_and_three_quarters():
    schedule = WarmupPiecewise(100, 9)
    assert [schedule(s) for s in (0, 4, 9)] == [0.1, 0.5, 1.0]
    assert [schedule(s) for s in (10, 49)] == [1.0, 1.0]
    assert math.isclose(schedule(50), 0.1) and math.isclose(schedule(74), 0.1)
    assert math.isclose(schedule(75), 0.01) and math.isclose(schedule(99), 0.01)
    assert isinstance(lr_schedule("cosine", 100, 9), WarmupCosine)
    with pytest.raises(ValueError, match="unknown schedule 'step'"):
        lr_schedule("step", 100, 9)


def test_without_crop_the_augmentation_resamples_the_central_square_and_still_mirrors():
    images = np.random.default_rng(0).integers(0, 256, (6, 10, 14, 3), dtype=np.uint8)
    x = to_input_tensor(images, 3)
    out = augment(x, torch.Generator().manual_seed(1), size=8, crop=False)
    mirrored = augment(x, torch.Generator().manual_seed(1), size=8, crop=True)  # the same draws decide the mirror
    centre = torch.tensor([[0.0, 2.0, 10.0, 10.0]]).expand(6, 4)
    plain = crop_and_resize(x, centre, 8)
    for i in range(6):
        flipped = torch.equal(out[i], plain[i].flip(-1))
        assert flipped or torch.equal(out[i], plain[i])
    assert not torch.equal(out, mirrored)  # the random crop is what differs


def _job(**options):
    key = TaskKey("colours", "multi-class", 3)
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 64)
    images = rng.integers(0, 256, (64, 8, 8, 3), dtype=np.uint8)
    data = ArrayDataset(key, "train", images, labels)
    return FitJob("resnet_mini", 3, key.kind, data, None, seed=4, epochs=2, resolution=None, warmup_epochs=0, **options)


def test_a_trials_large_space_fields_reach_the_training_run():
    job = _job(min_batch_size=16, max_batch_size=16)
    base = job(Trial(0, 0.05, 0.1))
    assert job(Trial(0, 0.05, 0.1, batch_scale=-1)).steps == 2 * base.steps  # batch 8: twice the steps
    assert job(Trial(0, 0.05, 0.1, batch_scale=1)).steps == base.steps // 2
    assert job(Trial(0, 0.05, 0.1, batch_scale=0, schedule="cosine", crop=True, flip=True)).state_dict.keys()
    same = job(Trial(0, 0.05, 0.1, batch_scale=0, schedule="cosine", crop=True, flip=True, weight_decay=1e-4))
    assert all(torch.equal(v, same.state_dict[k]) for k, v in base.state_dict.items())  # the recipe's values
    for changed in ({"schedule": "piecewise"}, {"crop": False}, {"flip": False}, {"weight_decay": 1e-3}):
        other = job(Trial(0, 0.05, 0.1, **changed))
        assert any(not torch.equal(v, other.state_dict[k]) for k, v in base.state_dict.items()), changed


def test_search_options_are_checked_in_cli_words():
    with pytest.raises(ValueError, match="search must be one of random, gp-ucb"):
        IndependentConfig(trials=4, search="tpe")
    with pytest.raises(ValueError, match="need trials > 1"):
        IndependentConfig(search="gp-ucb")
    with pytest.raises(ValueError, match="need trials > 1"):
        IndependentConfig(space="large")
    with pytest.raises(ValueError, match="initial random trials"):
        IndependentConfig(trials=4, search="gp-ucb", gp_init_trials=0)
    assert IndependentConfig(trials=4, space="large").trials_for(2) == sample_trials(
        SearchSpace(trials=4, size="large"), 2
    )


def test_the_learner_runs_a_gp_ucb_search_in_the_large_space_and_keeps_its_best(tmp_path):
    learner = IndependentLearner(**{**FAST, "epochs": 1, "trials": 4, "search": "gp-ucb", "space": "large"})
    event = dataclasses.replace(_events(COLOURS_KEY, n=64)[0], workdir=tmp_path)
    state, resources = learner.train(event, learner.init(0))
    signature = json.loads((tmp_path / "search.json").read_text())
    assert signature["search"] == "gp-ucb" and signature["space"]["size"] == "large"
    assert sorted(p.name for p in tmp_path.glob("trial-*.pkl")) == [f"trial-{i:04d}.pkl" for i in range(4)]
    assert {"weight_decay", "schedule", "batch_scale", "crop", "flip"} <= set(state["trial"])
    assert resources.train_flops > 0


def test_a_learner_killed_during_a_gp_proposed_trial_resumes_it_alone_with_the_same_result(tmp_path, monkeypatch):
    learner = IndependentLearner(**{**FAST, "epochs": 1, "trials": 4, "search": "gp-ucb", "gp_init_trials": 2})
    event = dataclasses.replace(_events(COLOURS_KEY, n=64)[0], workdir=tmp_path)
    state, resources = learner.train(event, learner.init(0))
    for index in (2, 3):  # as if killed while training trial 2, the first the GP proposed
        (tmp_path / f"trial-{index:04d}.pkl").unlink()
    calls = []
    fit = FitJob.__call__
    monkeypatch.setattr(FitJob, "__call__", lambda job, trial: calls.append(trial.index) or fit(job, trial))
    state2, resources2 = learner.train(event, learner.init(0))
    assert calls == [2, 3]
    assert resources2 == resources and state2["trial"] == state["trial"]
    assert all(torch.equal(v, state2["model"][k]) for k, v in state["model"].items())
