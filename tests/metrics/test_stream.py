"""The stream summary: unweighted means, example-weighted errors beside them, FLOPs; checked by hand."""

from __future__ import annotations

import pickle

import pytest

from lifelong.metrics.stream import StreamSummary, _SummaryState


def _predict(task: str, error: float, items: int | None, meta_test: bool, event: int = 0) -> dict:
    record = {"type": "predict", "event": event, "task": task, "error": error, "meta_test": meta_test}
    return record if items is None else {**record, "num_items": items}


RECORDS = [
    {"type": "train", "task": "a", "train_flops": 100.0, "peak_parameters": 7},
    _predict("a", 0.5, 10, False),
    {"type": "train", "task": "b", "train_flops": 20.0, "peak_parameters": 9},
    _predict("b", 0.2, 30, True),
    {"type": "train", "task": "c", "train_flops": 3.0, "peak_parameters": 8},
    _predict("c", 0.1, 60, True),
]


def _summary(records: list[dict], state: _SummaryState | None = None) -> dict:
    metric = StreamSummary()
    state = metric.init() if state is None else state
    for record in records:
        state = metric.add(state, record)
    return metric.compute(state)


def test_example_weighted_errors_match_a_hand_computation_and_the_other_keys_stay():
    summary = _summary(RECORDS)
    # by hand: errors 0.5, 0.2, 0.1 on 10, 30, 60 items; b and c are meta-test
    assert summary["example_weighted_error"] == pytest.approx((0.5 * 10 + 0.2 * 30 + 0.1 * 60) / 100)  # 0.17
    assert summary["meta_test_example_weighted_error"] == pytest.approx((0.2 * 30 + 0.1 * 60) / 90)  # 0.1333
    assert {k: v for k, v in summary.items() if "example_weighted" not in k} == {
        "mean_error": pytest.approx(0.8 / 3),
        "meta_test_mean_error": pytest.approx(0.15),
        "num_evaluated_tasks": 3,
        "num_meta_test_tasks": 2,
        "cumulative_train_flops": 123.0,
        "peak_parameters": 9,
        "inference_flops": 0.0,
        "skipped_labels": 0,
        "corrupt_skipped": 0,
        "duplicates_removed": 0,
        "per_task_error": {"a": 0.5, "b": 0.2, "c": 0.1},
    }


def test_example_weighted_errors_are_none_when_an_item_count_is_unknown():
    summary = _summary([*RECORDS, _predict("d", 0.3, None, True)])
    assert summary["example_weighted_error"] is None and summary["meta_test_example_weighted_error"] is None
    assert summary["mean_error"] == pytest.approx(1.1 / 4), "the unweighted mean does not need counts"
    only_train = _summary(RECORDS[1:2])
    assert only_train["meta_test_example_weighted_error"] is None and only_train["example_weighted_error"] == 0.5
    assert _summary([_predict("e", 0.4, 0, False)])["example_weighted_error"] is None, "no items: nothing to weigh"
    with pytest.raises(ValueError, match="event 4 has num_items -3"):
        _summary([_predict("f", 0.1, -3, True, event=4)])


def test_a_state_saved_before_item_counts_existed_resumes():
    old = _SummaryState(errors=(("a", 0.5, False),))  # as a checkpoint written by an earlier version holds it
    restored = pickle.loads(pickle.dumps(old))
    summary = _summary(RECORDS[3:4], restored)
    assert summary["mean_error"] == pytest.approx(0.35) and summary["per_task_error"] == {"a": 0.5, "b": 0.2}
    assert summary["example_weighted_error"] is None, "a's item count was never recorded"
    assert summary["meta_test_example_weighted_error"] == 0.2, "the meta-test evaluation (b) has its count"
