import dataclasses

import numpy as np
import pytest

from lifelong.core import Resources
from lifelong.learners.nearest_mean import NearestMeanLearner
from lifelong.run.checkpoint import CheckpointStore
from lifelong.run.environment import EventError, run
from lifelong.run.validation import LearnerOutputError
from lifelong.testing import tiny_stream


def without_seconds(records):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


def test_run_records_every_event_and_summarises():
    result = run(NearestMeanLearner(), tiny_stream(), seed=0)
    records = result.records
    assert [r["type"] for r in records] == ["train", "predict"] * 3
    predict = [r for r in records if r["type"] == "predict"]
    assert all(0.0 <= r["error"] <= 0.2 for r in predict), predict  # bars are easy for nearest mean
    flops = np.cumsum([r["train_flops"] for r in records])
    assert [r["cumulative_train_flops"] for r in records] == pytest.approx(flops.tolist())
    summary = result.summary
    assert summary["num_evaluated_tasks"] == 3 and summary["num_meta_test_tasks"] == 2
    assert summary["mean_error"] == pytest.approx(np.mean([r["error"] for r in predict]))
    assert summary["meta_test_mean_error"] == pytest.approx(np.mean([r["error"] for r in predict if r["meta_test"]]))
    assert summary["cumulative_train_flops"] == pytest.approx(flops[-1])
    assert predict[-1]["task_kind"] == "multi-label" and predict[-1]["split"] == "dev_test"


def test_resume_from_checkpoint_matches_uninterrupted_run(tmp_path):
    full = run(NearestMeanLearner(), tiny_stream(), seed=0)
    store = CheckpointStore(tmp_path / "ckpt.pkl")
    part = run(NearestMeanLearner(), tiny_stream(), checkpoint=store, seed=0, stop_after=3)
    assert len(part.records) == 3 and store.load().next_event == 3
    rest = run(NearestMeanLearner(), tiny_stream(), checkpoint=store, seed=0, resume=True)
    assert without_seconds(rest.records) == without_seconds(full.records)
    assert rest.summary["mean_error"] == full.summary["mean_error"]


def test_resume_refuses_another_seed(tmp_path):
    store = CheckpointStore(tmp_path / "ckpt.pkl")
    run(NearestMeanLearner(), tiny_stream(), checkpoint=store, seed=0, stop_after=1)
    with pytest.raises(ValueError, match="seed 0 vs 1"):
        run(NearestMeanLearner(), tiny_stream(), checkpoint=store, seed=1, resume=True)


@dataclasses.dataclass(frozen=True)
class BrokenLearner(NearestMeanLearner):
    """Nearest mean with one fault injected into its predictions or resources."""

    fault: str = "nan"

    def train(self, event, state):
        state, resources = super().train(event, state)
        return state, (None if self.fault == "resources" else resources)

    def predict(self, event, state):
        scores = super().predict(event, state)
        if self.fault == "nan":
            scores[5, 1] = np.nan
        elif self.fault == "shape":
            scores = scores[:, :-1]
        elif self.fault == "range" and event.task.is_multi_label:
            scores = scores + 1.5
        elif self.fault == "raise":
            raise RuntimeError("boom")
        return scores


@pytest.mark.parametrize(
    "fault, match",
    [
        ("nan", r"event 1 \(predict 'bars3' on 'dev_test'\).*non-finite.*item 5, class 1"),
        ("shape", r"event 1 \(predict 'bars3'.*shape \(\d+, 2\); task 'bars3' needs \(\d+, 3\)"),
        ("range", r"event 5 \(predict 'bars_ml'.*outside \[0, 1\]"),
        ("resources", r"event 0 \(train 'bars3'\).*Resources"),
    ],
)
def test_bad_learner_output_names_event_and_task(fault, match, tmp_path):
    store = CheckpointStore(tmp_path / "ckpt.pkl")
    with pytest.raises(LearnerOutputError, match=match):
        run(BrokenLearner(fault=fault), tiny_stream(), checkpoint=store)
    if fault == "range":  # everything before the failing event stays checkpointed
        assert store.load().next_event == 5


def test_learner_exception_is_wrapped_with_event():
    with pytest.raises(EventError, match=r"event 1 \(predict 'bars3' on 'dev_test'\): RuntimeError: boom"):
        run(BrokenLearner(fault="raise"), tiny_stream())


def test_resources_are_summed_as_floats():
    assert Resources(1.0).combine(Resources(2.0)).train_flops == 3.0


@dataclasses.dataclass(frozen=True)
class WorkdirLearner(NearestMeanLearner):
    """Writes a marker into the event's workdir; fails once on the second task if asked to."""

    fail_on: str = ""

    def train(self, event, state):
        assert event.workdir is not None
        event.workdir.mkdir(parents=True, exist_ok=True)
        marker = event.workdir / "trial-0.done"
        resumed = marker.exists()
        marker.write_text("done")
        if event.task.uid == self.fail_on:
            raise RuntimeError("crash mid-event")
        state, resources = super().train(event, state)
        return {**state, "resumed": resumed}, resources


def test_workdir_survives_a_crash_mid_event_and_is_cleared_after(tmp_path):
    store = CheckpointStore(tmp_path / "ckpt.pkl")
    with pytest.raises(EventError, match="crash mid-event"):
        run(WorkdirLearner(fail_on="bars4"), tiny_stream(), checkpoint=store)
    assert not (tmp_path / "work" / "bars3").exists()  # finished event: cleared
    assert (tmp_path / "work" / "bars4" / "trial-0.done").exists()  # unfinished: kept for the resume
    result = run(WorkdirLearner(), tiny_stream(), checkpoint=store, resume=True)
    assert result.learner_state["resumed"] is False  # last task (bars_ml) started afresh
    assert store.load().records[2]["task"] == "bars4"
    assert not (tmp_path / "work").exists() or not any((tmp_path / "work").iterdir())
