"""CLEAR accuracy-matrix metrics: identity, a direct double-loop reference, a hand-computed example, validation,
the AccuracyMatrix metric over shuffled records, protocols, and the seed summary."""

from __future__ import annotations

import math
import pickle
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from lifelong.metrics import (
    IID_METRICS,
    STREAMING_METRICS,
    AccuracyMatrix,
    clear_metrics,
    matrix_from_records,
    reported_metrics,
    summarize_matrix_seeds,
)
from lifelong.metrics.base import Metric, compute_all


def accuracy_matrices(min_n: int = 2, max_n: int = 8):
    """Hypothesis strategy: N x N matrices of accuracies in [0, 1]."""
    return st.integers(min_n, max_n).flatmap(
        lambda n: arrays(np.float64, (n, n), elements=st.floats(0.0, 1.0, allow_nan=False))
    )


def direct_metrics(R) -> dict[str, float]:
    """Spec section 3 written out with plain loops, independently of the vectorised code."""
    n = len(R)
    diagonal = lower = strictly_lower = upper = next_domain = 0.0
    for i in range(n):
        for j in range(n):
            value = float(R[i][j])
            if i == j:
                diagonal += value
            if j <= i:
                lower += value
            if j < i:
                strictly_lower += value
            if j > i:
                upper += value
            if j == i + 1:
                next_domain += value
    pairs = n * (n - 1) / 2
    return {
        "in_domain": diagonal / n,
        "next_domain": next_domain / (n - 1),
        "acc": lower / (n * (n + 1) / 2),
        "bwt": strictly_lower / pairs,
        "fwt": upper / pairs,
    }


def run_records(R, *, with_untrained: bool = True) -> list[dict]:
    """Environment-like records of one run: train bucket i, then predict every bucket (error = 1 - R[i, j])."""
    n = len(R)
    records: list[dict] = []
    if with_untrained:  # predictions before any training: no row
        for j in range(n):
            records.append({"type": "predict", "task_index": j, "after_task_index": None, "error": 0.9})
    for i in range(n):
        records.append({"type": "train", "task_index": i, "train_flops": 1.0})
        for j in range(n):
            records.append(
                {
                    "type": "predict",
                    "task_index": j,
                    "after_task_index": i,
                    "error": 1.0 - float(R[i][j]),
                    "task": f"b{j}",
                }
            )
    for event, record in enumerate(records):
        record["event"] = event
    return records


def fold(metric, records):
    state = metric.init()
    for record in records:
        state = metric.add(state, record)
    return state


# ------------------------------------------------------------------------------------------- clear_metrics


@settings(max_examples=60, deadline=None)
@given(accuracy_matrices())
def test_acc_identity(R):
    n = len(R)
    m = clear_metrics(R)
    assert m["acc"] == pytest.approx((n * m["in_domain"] + n * (n - 1) / 2 * m["bwt"]) / (n * (n + 1) / 2), abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(accuracy_matrices())
def test_metrics_match_direct_double_loop(R):
    m = clear_metrics(R)
    expected = direct_metrics(R)
    assert list(m) == list(IID_METRICS)
    assert all(type(v) is float for v in m.values())
    for name in IID_METRICS:
        assert m[name] == pytest.approx(expected[name], abs=1e-12), name


@pytest.mark.parametrize("n", [2, 3, 5, 10, 17])
def test_metrics_match_direct_on_seeded_matrices(n):
    R = np.random.default_rng(n).uniform(size=(n, n))
    m = clear_metrics(R)
    for name, value in direct_metrics(R).items():
        assert m[name] == pytest.approx(value, abs=1e-12)


def test_hand_computed_3x3():
    R = [[0.9, 0.6, 0.3], [0.8, 0.7, 0.5], [0.6, 0.4, 1.0]]
    m = clear_metrics(R)
    assert m["in_domain"] == pytest.approx(2.6 / 3)  # 0.9, 0.7, 1.0
    assert m["next_domain"] == pytest.approx(0.55)  # 0.6, 0.5
    assert m["acc"] == pytest.approx(4.4 / 6)  # 0.9 | 0.8 0.7 | 0.6 0.4 1.0
    assert m["bwt"] == pytest.approx(0.6)  # 0.8, 0.6, 0.4
    assert m["fwt"] == pytest.approx(1.4 / 3)  # 0.6, 0.3, 0.5


def test_plain_averages_not_differences():
    # a constant matrix: every region averages to the constant (GEM-style BwT/FwT would be 0)
    m = clear_metrics(np.full((4, 4), 0.7))
    assert all(v == pytest.approx(0.7) for v in m.values())


def test_nan_cell_is_named():
    R = np.full((3, 3), 0.5)
    R[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"\(1, 2\) = nan.*not finite"):
        clear_metrics(R)
    with pytest.raises(ValueError, match=r"\(0, 1\) = None|\(0, 1\) = nan"):
        clear_metrics([[0.5, None], [0.5, 0.5]])


def test_inf_cell_is_named():
    R = np.full((2, 2), 0.5)
    R[1, 0] = np.inf
    with pytest.raises(ValueError, match=r"\(1, 0\) = inf"):
        clear_metrics(R)


def test_percentages_rejected():
    with pytest.raises(ValueError, match=r"\(0, 0\) = 85\.0.*outside \[0, 1\].*percentages"):
        clear_metrics([[85.0, 0.5], [0.5, 0.5]])
    with pytest.raises(ValueError, match=r"\(1, 1\) = -0\.1"):
        clear_metrics([[0.5, 0.5], [0.5, -0.1]])


@pytest.mark.parametrize("R", [np.full((2, 3), 0.5), np.full(4, 0.5), np.full((2, 2, 2), 0.5), [[0.5]]])
def test_shape_rejected(R):
    with pytest.raises(ValueError, match="square|N >= 2"):
        clear_metrics(R)


def test_non_numeric_rejected():
    with pytest.raises(ValueError, match="numeric"):
        clear_metrics([["a", "b"], ["c", "d"]])


def test_reported_metrics():
    assert reported_metrics("iid") == IID_METRICS == ("in_domain", "next_domain", "acc", "bwt", "fwt")
    assert reported_metrics("streaming") == STREAMING_METRICS == ("next_domain", "fwt")
    with pytest.raises(ValueError, match=r"'online'.*\['iid', 'streaming'\]"):
        reported_metrics("online")


# ------------------------------------------------------------------------------------------- AccuracyMatrix


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_accuracy_matrix_from_shuffled_records(seed):
    n = 3 + seed
    R = np.random.default_rng(seed).uniform(size=(n, n))
    records = run_records(R)
    random.Random(seed).shuffle(records)
    metric = AccuracyMatrix(n)
    assert isinstance(metric, Metric)
    out = metric.compute(fold(metric, records))
    assert out["matrix_complete"] is True
    assert out["matrix_protocol"] == "iid"
    np.testing.assert_allclose(np.array(out["accuracy_matrix"]), R, atol=1e-12)
    np.testing.assert_allclose(matrix_from_records(records, n), R, atol=1e-12)
    expected = direct_metrics(R)
    assert list(out["clear_metrics"]) == list(IID_METRICS)
    for name, value in out["clear_metrics"].items():
        assert value == pytest.approx(expected[name], abs=1e-12)
    assert compute_all([metric], records)["clear_metrics"] == out["clear_metrics"]


def test_state_is_immutable_and_picklable():
    metric = AccuracyMatrix(2, labels=["2008", "2009"])
    records = run_records([[0.9, 0.8], [0.7, 0.6]])
    empty = metric.init()
    state = fold(metric, records)
    assert metric.compute(empty)["matrix_complete"] is False  # folding did not change the initial state
    restored = pickle.loads(pickle.dumps(state))
    assert metric.compute(restored) == metric.compute(state)
    assert metric.compute(state)["matrix_labels"] == ["2008", "2009"]
    with pytest.raises(AttributeError):
        state.cells = ()


def test_incomplete_matrix_has_no_metrics():
    R = [[0.9, 0.8, 0.7], [0.6, 0.5, 0.4], [0.3, 0.2, 0.1]]
    records = [r for r in run_records(R) if not (r.get("after_task_index") == 2)]  # last row missing
    metric = AccuracyMatrix(3)
    out = metric.compute(fold(metric, records))
    assert out["matrix_complete"] is False
    assert out["clear_metrics"] == {}
    assert out["accuracy_matrix"][2] == [None, None, None]
    assert out["accuracy_matrix"][0] == pytest.approx([0.9, 0.8, 0.7])
    assert np.isnan(matrix_from_records(records, 3)[2]).all()


def test_duplicate_cell_named():
    records = run_records([[0.9, 0.8], [0.7, 0.6]], with_untrained=False)
    duplicate = {**records[-1], "event": 99}
    metric = AccuracyMatrix(2)
    with pytest.raises(ValueError, match=r"cell \(1, 1\) is filled twice, by events 5 and 99"):
        fold(metric, [*records, duplicate])
    with pytest.raises(ValueError, match=r"cell \(1, 1\) is filled twice"):
        matrix_from_records([*records, duplicate], 2)


def test_streaming_reports_only_next_domain_and_fwt():
    R = [[0.9, 0.6, 0.3], [0.8, 0.7, 0.5], [0.6, 0.4, 1.0]]
    metric = AccuracyMatrix(3, protocol="streaming")
    out = metric.compute(fold(metric, run_records(R)))
    assert out["matrix_protocol"] == "streaming"
    assert list(out["clear_metrics"]) == ["next_domain", "fwt"]
    assert out["clear_metrics"]["next_domain"] == pytest.approx(0.55)
    assert out["clear_metrics"]["fwt"] == pytest.approx(1.4 / 3)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_tasks": 1}, "num_tasks"),
        ({"num_tasks": 3, "protocol": "online"}, "protocol"),
        ({"num_tasks": 3, "labels": ["a", "b"]}, "labels"),
    ],
)
def test_accuracy_matrix_arguments_checked(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AccuracyMatrix(**kwargs)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"task_index": 3}, "task_index = 3.*0..2"),
        ({"after_task_index": -1}, "after_task_index = -1"),
        ({"error": None}, r"event 7 \(cell \(0, 1\)\) has error None"),
        ({"error": float("nan")}, "has error nan"),
    ],
)
def test_bad_records_named(change, match):
    record = {"type": "predict", "event": 7, "task_index": 1, "after_task_index": 0, "error": 0.2, **change}
    metric = AccuracyMatrix(3)
    with pytest.raises(ValueError, match=match):
        metric.add(metric.init(), record)


def test_ignored_records():
    metric = AccuracyMatrix(2)
    state = metric.init()
    for record in (
        {"type": "train", "task_index": 0},
        {"type": "predict", "task_index": 1, "after_task_index": None, "error": 0.5},
        {"type": "predict", "task_index": 1, "error": 0.5},  # no after_task_index at all
    ):
        state = metric.add(state, record)
    assert metric.compute(state)["accuracy_matrix"] == [[None, None], [None, None]]


# ------------------------------------------------------------------------------------------- seeds


def test_summarize_seeds_against_numpy():
    rng = np.random.default_rng(5)
    matrices = [rng.uniform(size=(4, 4)) for _ in range(5)]
    per_seed = []
    for R in matrices:
        metric = AccuracyMatrix(4)
        per_seed.append(metric.compute(fold(metric, run_records(R))))
    summary = summarize_matrix_seeds(per_seed)
    assert summary["num_seeds"] == 5
    assert list(summary["metrics"]) == list(IID_METRICS)
    for name in IID_METRICS:
        values = np.array([clear_metrics(R)[name] for R in matrices])
        entry = summary["metrics"][name]
        assert entry["n"] == 5
        np.testing.assert_allclose(entry["values"], values, atol=1e-12)
        assert entry["mean"] == pytest.approx(values.mean(), abs=1e-12)
        assert entry["std"] == pytest.approx(values.std(ddof=1), abs=1e-12)
    np.testing.assert_allclose(np.array(summary["mean_matrix"]), np.mean(matrices, axis=0), atol=1e-12)


def test_summarize_one_seed_and_plain_dicts():
    summary = summarize_matrix_seeds([clear_metrics([[0.9, 0.6], [0.8, 0.7]])])
    assert summary["metrics"]["acc"] == {
        "mean": pytest.approx(0.8),
        "std": None,
        "n": 1,
        "values": [pytest.approx(0.8)],
    }
    assert summary["mean_matrix"] is None


def test_summarize_streaming_and_partial_mean_matrix():
    per_seed = [
        {"clear_metrics": {"next_domain": 0.5, "fwt": 0.4}, "accuracy_matrix": [[0.9, 0.5], [None, 0.7]]},
        {"clear_metrics": {"next_domain": 0.7, "fwt": 0.6}, "accuracy_matrix": [[0.7, 0.7], [0.6, 0.9]]},
    ]
    summary = summarize_matrix_seeds(per_seed)
    assert list(summary["metrics"]) == ["next_domain", "fwt"]
    assert summary["metrics"]["fwt"]["mean"] == pytest.approx(0.5)
    assert summary["metrics"]["fwt"]["std"] == pytest.approx(math.sqrt(0.02))
    assert summary["mean_matrix"][1][0] is None
    assert summary["mean_matrix"][0] == pytest.approx([0.8, 0.6])


def test_summarize_errors():
    with pytest.raises(ValueError, match="no seeds"):
        summarize_matrix_seeds([])
    with pytest.raises(ValueError, match="seed 1 has no CLEAR metrics"):
        summarize_matrix_seeds([{"clear_metrics": {"fwt": 0.5}}, {"clear_metrics": {}}])
    with pytest.raises(ValueError, match="seed 1 reports"):
        summarize_matrix_seeds([{"fwt": 0.5, "next_domain": 0.4}, {"fwt": 0.5}])


def test_gem_bwt_is_the_last_rows_change_from_the_diagonal_by_brute_force() -> None:
    from lifelong.metrics import gem_bwt

    rng = np.random.default_rng(3)
    for n in (2, 3, 5):
        R = rng.uniform(size=(n, n))
        changes = [R[n - 1][j] - R[j][j] for j in range(n - 1)]  # after the last bucket minus just after bucket j
        assert gem_bwt(R) == pytest.approx(sum(changes) / len(changes))
    R = [[0.9, 0.1, 0.1], [0.6, 0.8, 0.1], [0.5, 0.7, 0.95]]
    assert gem_bwt(R) == pytest.approx(((0.5 - 0.9) + (0.7 - 0.8)) / 2)  # forgetting: negative
    assert clear_metrics(R)["bwt"] == pytest.approx((0.6 + 0.5 + 0.7) / 3)  # CLEAR's: a plain mean instead
    with pytest.raises(ValueError, match="square"):
        gem_bwt([[0.5, 0.5]])
