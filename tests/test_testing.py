import dataclasses
import subprocess
import sys

import numpy as np
import pytest

from lifelong import testing
from lifelong.learners.independent import IndependentLearner
from lifelong.learners.nearest_mean import NearestMeanLearner
from lifelong.testing import (
    LEARNER_CHECKS,
    LearnerCheckError,
    check_learner,
    parametrize_with_checks,
    tiny_stream,
)

RULES = [rule.__name__ for rule in LEARNER_CHECKS]


@parametrize_with_checks([NearestMeanLearner()])
def test_nearest_mean_passes_every_rule(learner, check, request):
    assert request.node.callspec.id == f"nearest-mean-{check.__name__}"
    check(learner)


@pytest.mark.parametrize("learner", [NearestMeanLearner(), IndependentLearner(epochs=1)], ids=["nearest-mean", "indep"])
def test_shipped_learners_conform(learner):
    summary = check_learner(learner)
    assert summary["num_evaluated_tasks"] == 3


@dataclasses.dataclass(frozen=True)
class Unseeded(NearestMeanLearner):
    def predict(self, event, state):
        scores = super().predict(event, state)
        return scores if event.task.is_multi_label else scores + np.random.default_rng().normal(0, 1e-3, 1)


@dataclasses.dataclass(frozen=True)
class Unpicklable(NearestMeanLearner):
    def train(self, event, state):
        state, resources = super().train(event, state)
        return {**state, "hook": lambda: None}, resources


@dataclasses.dataclass(frozen=True)
class WrongShape(NearestMeanLearner):
    def predict(self, event, state):
        return super().predict(event, state)[:, :1]


class Nameless:
    def init(self, seed):
        return None


class Broken:
    """Every defect at once: no name, an unpicklable state, noisy predictions, a dict where Resources belong."""

    def __init__(self):
        self.inner = NearestMeanLearner()

    def init(self, seed):
        return self.inner.init(seed)

    def train(self, event, state):
        state, resources = self.inner.train(event, state)
        return {**state, "hook": lambda: None}, {"train_flops": resources.train_flops}

    def predict(self, event, state):
        scores = self.inner.predict(event, state)
        return scores if event.task.is_multi_label else scores + np.random.default_rng().normal(0, 1e-3, 1)


@pytest.mark.parametrize(
    "learner, rule, match",
    [
        (Unseeded(), "check_same_seed_same_predictions", "different predictions"),
        (Unpicklable(), "check_state_picklable", "did not go through pickle"),
        (WrongShape(), "check_runs_in_environment", r"failed on the check stream 'tiny'.*shape"),
        (Nameless(), "check_has_protocol_methods", "no callable `train`, `predict`"),
        (Nameless(), "check_has_name", "needs a string `name`"),
    ],
)
def test_protocol_violations_are_reported(learner, rule, match):
    with pytest.raises(LearnerCheckError, match=match) as raised:
        check_learner(learner)
    assert rule in raised.value.failures and rule in str(raised.value)
    with pytest.raises(LearnerCheckError, match=f"^{rule}: .*{match}"):
        getattr(testing, rule)(learner)


def test_check_learner_reports_every_failed_rule_at_once():
    with pytest.raises(LearnerCheckError) as raised:
        check_learner(Broken())
    failed = set(RULES) - {"check_has_protocol_methods"}
    assert set(raised.value.failures) == failed
    message = str(raised.value)
    assert f"failed {len(failed)} of {len(RULES)} rules" in message
    assert all(f"- {rule}: " in message for rule in failed)
    assert "train must return (state, Resources), got dict" in raised.value.failures["check_train_returns_resources"]


def test_generate_only_lists_every_rule_once_per_learner():
    learners = [NearestMeanLearner(), Nameless()]
    pairs = parametrize_with_checks(learners, generate_only=True)
    for learner in learners:
        assert [check.__name__ for who, check in pairs if who is learner] == RULES
    assert len(pairs) == len(learners) * len(RULES)


def test_decorator_ids_name_learner_and_rule():
    mark = parametrize_with_checks([NearestMeanLearner(), Nameless()]).mark
    argnames, pairs = mark.args
    assert argnames == "learner, check" and len(pairs) == 2 * len(RULES)
    assert mark.kwargs["ids"] == [f"nearest-mean-{r}" for r in RULES] + [f"Nameless-{r}" for r in RULES]


def test_checks_use_the_given_stream_and_share_their_work():
    calls = {"streams": 0, "inits": 0}

    def stream(seed=0):
        calls["streams"] += 1
        return tiny_stream(n_per_task=60, seed=seed)

    @dataclasses.dataclass(frozen=True)
    class Counting(NearestMeanLearner):
        def init(self, seed):
            calls["inits"] += 1
            return super().init(seed)

    learner = Counting()
    for who, check in parametrize_with_checks([learner], stream=stream, generate_only=True):
        check(who)
    # one environment run and three passes (twice uninterrupted, once through pickle), however many rules
    assert calls == {"streams": 2, "inits": 4}


def test_importing_and_listing_needs_no_pytest():
    code = (
        "import sys; sys.modules['pytest'] = None\n"
        "from lifelong.testing import parametrize_with_checks\n"
        "from lifelong.learners.nearest_mean import NearestMeanLearner\n"
        "assert len(parametrize_with_checks([NearestMeanLearner()], generate_only=True)) == 7\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
