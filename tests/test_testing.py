import dataclasses

import numpy as np
import pytest

from lifelong.learners.independent import IndependentLearner
from lifelong.learners.nearest_mean import NearestMeanLearner
from lifelong.testing import LearnerCheckError, check_learner


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


@pytest.mark.parametrize(
    "learner, match",
    [
        (Unseeded(), "different predictions"),
        (Unpicklable(), "not picklable"),
        (WrongShape(), r"failed on the tiny stream.*shape"),
        (Nameless(), "no callable `train`"),
    ],
)
def test_protocol_violations_are_reported(learner, match):
    with pytest.raises(LearnerCheckError, match=match):
        check_learner(learner)
