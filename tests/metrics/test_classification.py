"""Per-evaluation errors: top-1 error and mAP, checked against direct computations and scikit-learn."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.metrics import average_precision_score

from lifelong.core.tasks import TaskKind
from lifelong.metrics import average_precision_details, error_rate, mean_average_precision, task_error


def sklearn_map(targets: np.ndarray, scores: np.ndarray) -> float:
    keep = targets.any(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(average_precision_score(targets[:, keep], scores[:, keep], average="macro"))


@st.composite
def multilabel_problems(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Multi-hot targets with at least one positive, and scores drawn from a few values (many ties) or floats."""
    n = draw(st.integers(1, 40))
    c = draw(st.integers(1, 6))
    targets = draw(hnp.arrays(np.int64, (n, c), elements=st.integers(0, 1)))
    if not targets.any():
        targets[draw(st.integers(0, n - 1)), draw(st.integers(0, c - 1))] = 1
    if draw(st.booleans()):
        levels = draw(st.integers(1, 4))
        scores = draw(hnp.arrays(np.int64, (n, c), elements=st.integers(0, levels - 1))) / levels
    else:
        scores = draw(hnp.arrays(np.float64, (n, c), elements=st.floats(0.0, 1.0, width=32)))
    return targets, scores


@settings(max_examples=200, deadline=None)
@given(multilabel_problems())
def test_map_equals_sklearn_bit_for_bit(problem: tuple[np.ndarray, np.ndarray]) -> None:
    targets, scores = problem
    assert mean_average_precision(targets, scores) == sklearn_map(targets, scores)


@settings(max_examples=100, deadline=None)
@given(multilabel_problems())
def test_per_label_ap_and_skipped_labels(problem: tuple[np.ndarray, np.ndarray]) -> None:
    targets, scores = problem
    mean_ap, per_label, skipped = average_precision_details(targets, scores)
    keep = targets.any(axis=0)
    assert skipped == int((~keep).sum())
    assert np.isnan(per_label[~keep]).all()
    for j in np.flatnonzero(keep):
        assert per_label[j] == average_precision_score(targets[:, j], scores[:, j])
        assert 0.0 < per_label[j] <= 1.0 + 1e-12  # sklearn too can sum precisions to 1 + 2e-16
    assert mean_ap == np.mean(per_label[keep])


@settings(max_examples=50, deadline=None)
@given(multilabel_problems(), st.integers(0, 2**32 - 1))
def test_map_ignores_item_order(problem: tuple[np.ndarray, np.ndarray], seed: int) -> None:
    targets, scores = problem
    order = np.random.default_rng(seed).permutation(len(targets))
    assert mean_average_precision(targets[order], scores[order]) == pytest.approx(
        mean_average_precision(targets, scores), rel=1e-12
    )


def test_map_on_larger_random_data_with_ties_and_float32() -> None:
    rng = np.random.default_rng(0)
    targets = (rng.random((2000, 40)) < 0.1).astype(np.uint8)
    targets[:, 3] = 0  # a label without a positive
    scores = np.round(rng.random((2000, 40)), 2).astype(np.float32)
    mean_ap, per_label, skipped = average_precision_details(targets, scores)
    assert skipped == 1 and np.isnan(per_label[3])
    assert mean_ap == sklearn_map(targets, scores)


def test_all_positive_label_has_ap_one_and_tied_scores_give_prevalence() -> None:
    targets = np.array([[1, 1], [1, 0], [1, 0], [1, 1]])
    scores = np.array([[0.1, 0.5], [0.9, 0.5], [0.3, 0.5], [0.2, 0.5]])
    _, per_label, skipped = average_precision_details(targets, scores)
    assert per_label[0] == 1.0  # every item positive: precision is 1 at every threshold
    assert per_label[1] == 0.5  # one threshold: recall 1 at precision 2/4
    assert skipped == 0


def test_perfect_and_worst_rankings() -> None:
    targets = np.array([[1], [1], [0], [0]])
    assert mean_average_precision(targets, np.array([[4.0], [3.0], [2.0], [1.0]])) == 1.0
    assert mean_average_precision(targets, np.array([[1.0], [2.0], [3.0], [4.0]])) == pytest.approx((1 / 3 + 2 / 4) / 2)


def test_no_positive_anywhere_is_an_error() -> None:
    with pytest.raises(ValueError, match="no label has a positive"):
        mean_average_precision(np.zeros((5, 3)), np.random.default_rng(0).random((5, 3)))


@pytest.mark.parametrize(
    ("targets", "scores", "message"),
    [
        (np.ones((3, 2)), np.ones((3, 3)), "does not match targets shape"),
        (np.ones((3, 2)), np.ones((4, 2)), "4 rows but there are 3 items"),
        (np.ones(3), np.ones((3, 1)), "2-d multi-hot"),
        (np.array([[1, 2]]), np.ones((1, 2)), "item 0, label 1 is 2"),
        (np.ones((2, 2)), np.array([[0.1, np.nan], [0.2, 0.3]]), "item 0, column 1 is nan"),
        (np.ones((2, 2)), np.array([[0.1, 0.2], [np.inf, 0.3]]), "item 1, column 0 is inf"),
        (np.ones((0, 2)), np.ones((0, 2)), "empty"),
    ],
)
def test_map_rejects_bad_inputs(targets: np.ndarray, scores: np.ndarray, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        mean_average_precision(targets, scores)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 50), st.integers(2, 8), st.integers(0, 2**32 - 1), st.booleans())
def test_error_rate_equals_direct_count(n: int, c: int, seed: int, ties: bool) -> None:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, c, n)
    scores = rng.integers(0, 3, (n, c)).astype(float) if ties else rng.standard_normal((n, c))
    wrong = 0
    for label, row in zip(labels, scores, strict=True):
        best = max(range(c), key=lambda j: (row[j], -j))  # highest score, lowest index among ties
        wrong += best != label
    assert error_rate(labels, scores) == wrong / n


def test_error_rate_ties_resolve_to_lowest_index() -> None:
    scores = np.array([[0.5, 0.5, 0.1], [0.2, 0.7, 0.7]])
    assert error_rate(np.array([0, 1]), scores) == 0.0
    assert error_rate(np.array([1, 2]), scores) == 1.0


@pytest.mark.parametrize(
    ("labels", "scores", "message"),
    [
        (np.array([0, 1]), np.array([[0.1, np.nan], [0.2, 0.3]]), "item 0, column 1 is nan"),
        (np.array([0, 1]), np.ones((3, 2)), "3 rows but there are 2 items"),
        (np.array([0, 1]), np.ones(2), "2-d array"),
        (np.array([[0, 1]]), np.ones((1, 2)), "1-d array"),
        (np.array([0.0, 1.0]), np.ones((2, 2)), "must be integers"),
        (np.array([0, 2]), np.ones((2, 2)), "label 2 of item 1 is out of range"),
        (np.array([], dtype=int), np.ones((0, 2)), "empty"),
        (np.array([0, 1]), np.array([["a", "b"], ["c", "d"]]), "real numbers"),
    ],
)
def test_error_rate_rejects_bad_inputs(labels: np.ndarray, scores: np.ndarray, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        error_rate(labels, scores)


def test_task_error_by_kind() -> None:
    scores = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    assert task_error(TaskKind.MULTI_CLASS, np.array([0, 1, 1]), scores) == (pytest.approx(1 / 3), 0)
    targets = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 0]])
    multi_scores = np.array([[0.9, 0.1, 0.3], [0.2, 0.8, 0.1], [0.6, 0.4, 0.2]])
    error, skipped = task_error("multi-label", targets, multi_scores)
    assert error == pytest.approx(0.0) and skipped == 1
    with pytest.raises(ValueError, match="unknown task kind 'ranking'"):
        task_error("ranking", targets, multi_scores)
