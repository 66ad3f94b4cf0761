"""The multitask learner (MT): auxiliary tasks chosen by kNN relatedness (top-K, all), the data it holds, its search
space with the auxiliary weight, exact resume, options, and the learner conformance checks."""

import json
import pickle

import numpy as np
import pytest
import torch
from learners.test_finetune import EVENTS, FAST, TINY, _event, _stripes
from typer.testing import CliRunner

import lifelong.training.independent_recipe as recipe
from lifelong.learners.multitask import MultitaskConfig, MultitaskLearner, auxiliary_ranking, held_summary
from lifelong.testing import check_learner
from lifelong.training.relatedness import RANDOM_INIT

_SEARCH = recipe.search  # the search itself, before any spy wraps it

# a fourth task: stripes again, so two past stripe tasks and one colour task compete as auxiliary tasks
EVENTS4 = [*EVENTS, _event(3, _stripes, "s3", 4)]


class _FitSpy:
    """Wraps the recipe's search, recording the auxiliary tasks (their uids) of every search's job."""

    def __init__(self):
        self.calls = []
        self._search = _SEARCH

    def __call__(self, fit, trials, **kwargs):
        self.calls.append([a.train.task.uid for a in fit.auxiliary])
        return self._search(fit, trials, **kwargs)


def _run(learner, events, state=None):
    state = learner.init(0) if state is None else state
    states = []
    for event in events:
        state, _ = learner.train(event, state)
        states.append(state)
    return states


@pytest.fixture(scope="module")
def runs():
    out = {}
    with pytest.MonkeyPatch.context() as patch:
        for aux_tasks in (1, "all"):
            spy = _FitSpy()
            patch.setattr(recipe, "search", spy)
            out[aux_tasks] = (_run(MultitaskLearner(**FAST, aux_tasks=aux_tasks), EVENTS4), spy.calls)
    return out


def _ranked_by_score(selection):
    past = {name[5:]: score for name, score in selection["scores"].items() if name.startswith("task:")}
    return sorted(past, key=lambda uid: -past[uid])


def test_top1_trains_beside_the_task_it_starts_from(runs):
    states, calls = runs[1]
    selections = states[-1]["selections"]
    assert calls[0] == [] and selections[0]["init"] == RANDOM_INIT  # the first task has no past task
    for selection, aux in zip(selections[1:], calls[1:], strict=True):
        assert aux == [selection["init"][len("task:") :]] == selection["aux_tasks"]
        assert aux == _ranked_by_score(selection)[:1]  # the most related past task by the kNN score
    assert selections[-1]["aux_tasks"] != ["col"]  # s3 co-trains with a stripe task, not the colours


def test_all_trains_beside_every_past_task_most_related_first(runs):
    states, calls = runs["all"]
    selections = states[-1]["selections"]
    for index, (selection, aux) in enumerate(zip(selections, calls, strict=True)):
        assert sorted(aux) == sorted(e.task.uid for e in EVENTS4[:index])
        assert aux == selection["aux_tasks"] == _ranked_by_score(selection)
    assert calls[-1][0] in ("s1", "s2")  # s3 co-trains first with a stripe task


def test_the_state_holds_every_past_training_split_and_says_how_much(runs):
    state = runs[1][0][-1]
    assert [uid for uid, _ in state["datasets"]] == ["s1", "col", "s2", "s3"]
    for (_, held), event in zip(state["datasets"], EVENTS4, strict=True):
        assert np.array_equal(held.images, event.train.images) and np.array_equal(held.labels(), event.train.labels())
    images = sum(e.train.images.nbytes + e.train.labels().nbytes for e in EVENTS4)
    assert state["held_data"] == {"tasks": 4, "items": sum(len(e.train) for e in EVENTS4), "bytes": images}


def test_max_held_items_keeps_a_seeded_subset():
    learner = MultitaskLearner(**TINY, max_held_items=50)
    states = _run(learner, EVENTS[:2])
    held = dict(states[-1]["datasets"])
    assert {uid: len(d) for uid, d in held.items()} == {"s1": 50, "col": 50}
    again = dict(_run(MultitaskLearner(**TINY, max_held_items=50), EVENTS[:2])[-1]["datasets"])
    assert all(np.array_equal(held[uid].images, again[uid].images) for uid in held)
    assert held_summary(list(held.items()))["items"] == 100


def test_the_search_explores_the_auxiliary_weight_with_lr_and_label_smoothing():
    config = MultitaskConfig(trials=4, aux_weight_range=(0.2, 0.8))
    trials = config.trials_for(3)
    assert all(0.2 <= t.aux_weight <= 0.8 for t in trials)
    assert [(t.lr, t.label_smoothing) for t in trials] == [
        (t.lr, t.label_smoothing) for t in recipe.IndependentConfig(trials=4).trials_for(3)
    ]  # the same lr and label smoothing as the other learners' trials, plus the weight
    assert MultitaskConfig(aux_weight=0.5).trials_for(0)[0].aux_weight == 0.5


def test_resume_from_a_pickled_state_is_exact():
    learner = MultitaskLearner(**TINY)
    whole = _run(learner, EVENTS)
    first = _run(learner, EVENTS[:2])
    resumed = _run(learner, EVENTS[2:], state=pickle.loads(pickle.dumps(first[-1])))
    assert resumed[-1]["selections"] == whole[-1]["selections"]
    assert all(torch.equal(resumed[-1]["model"][k], v) for k, v in whole[-1]["model"].items())


def test_auxiliary_ranking_puts_the_start_first_then_by_score_nan_last():
    scores = {"task:a": 0.5, "task:b": 0.9, "task:c": float("nan"), "task:d": 0.7, RANDOM_INIT: 0.99}
    assert auxiliary_ranking(scores, "task:d", ["a", "b", "c", "d"]) == ["d", "b", "a", "c"]
    assert auxiliary_ranking(scores, RANDOM_INIT, ["a", "c"]) == ["a", "c"]  # only tasks whose data is held


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"aux_tasks": 0}, "aux_tasks must be a positive integer K or all"),
        ({"aux_tasks": "some"}, "aux_tasks must be"),
        ({"aux_weight": -1.0}, "aux_weight must be >= 0"),
        ({"max_held_items": 0}, "max_held_items"),
        ({"aux_weight_range": (0.0, 1.0)}, "aux_weight must be a range"),
    ],
)
def test_options_are_checked(options, message):
    with pytest.raises(ValueError, match=message):
        MultitaskConfig(**options)


def test_aux_tasks_takes_k_as_text_from_the_command_line():
    assert MultitaskConfig(aux_tasks="3").aux_tasks == 3 and MultitaskConfig(aux_tasks="all").aux_tasks == "all"


def test_learners_multitask_json_lists_its_options():
    from lifelong.cli import app

    listed = CliRunner().invoke(app, ["learners", "multitask", "--json"])
    assert listed.exit_code == 0, listed.output
    options = {o["name"]: o for o in json.loads(listed.stdout)["options"]}
    assert {"aux_tasks", "aux_weight", "aux_weight_range", "max_held_items", "search", "space", "trials"} <= set(
        options
    )
    assert options["aux_tasks"]["default"] == "1" and options["search"]["default"] == "random"


def test_multitask_passes_the_learner_checks():
    check_learner(MultitaskLearner(**TINY))
