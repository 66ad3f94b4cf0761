"""Per-evaluation errors: top-1 error for multi-class tasks, 1 - mAP for multi-label tasks
(docs/protocols/nevis.md#per-task-error).

Labels with no positive item in the evaluated split have no defined average precision: they are skipped
and counted, never scored as 0 or 1.
"""

from __future__ import annotations

import numpy as np

from lifelong.core.tasks import TaskKind


def _first_bad(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def _check_scores(scores: np.ndarray | list, num_items: int, what: str) -> np.ndarray:
    """Return `scores` as a finite real [num_items, C] array; errors say what was wrong and where."""
    scores = np.asarray(scores)
    if scores.ndim != 2:
        raise ValueError(f"{what} must be a 2-d array [items, classes], got shape {scores.shape}")
    if scores.shape[0] != num_items:
        raise ValueError(f"{what} has {scores.shape[0]} rows but there are {num_items} items (shape {scores.shape})")
    if scores.shape[1] < 1:
        raise ValueError(f"{what} has no columns (shape {scores.shape}); one column per class is needed")
    if scores.dtype == np.bool_ or not (
        np.issubdtype(scores.dtype, np.floating) or np.issubdtype(scores.dtype, np.integer)
    ):
        raise ValueError(f"{what} must be real numbers, got dtype {scores.dtype}")
    finite = np.isfinite(scores)
    if not finite.all():
        at = _first_bad(~finite)
        raise ValueError(f"{what} must be finite; item {at[0]}, column {at[1]} is {scores[at].item()!r}")
    return scores


def error_rate(labels: np.ndarray | list, scores: np.ndarray | list) -> float:
    """1 - top-1 accuracy of integer `labels` [N] under `scores` [N, C]; argmax ties go to the lowest index."""
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be a 1-d array of class indices, got shape {labels.shape}")
    if labels.size == 0:
        raise ValueError("labels is empty: an error rate needs at least one item")
    if not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be integers, got dtype {labels.dtype} (first value {labels[0]!r})")
    scores = _check_scores(scores, len(labels), "scores")
    num_classes = scores.shape[1]
    out_of_range = (labels < 0) | (labels >= num_classes)
    if out_of_range.any():
        row = int(np.flatnonzero(out_of_range)[0])
        raise ValueError(
            f"label {int(labels[row])} of item {row} is out of range for scores with {num_classes} columns "
            f"(expected 0..{num_classes - 1})"
        )
    return float(np.mean(np.argmax(scores, axis=1) != labels))


def _check_targets(targets: np.ndarray | list) -> np.ndarray:
    """Return multi-hot `targets` [N, C] as float64; errors name the first value that is not 0 or 1."""
    targets = np.asarray(targets)
    if targets.ndim != 2:
        raise ValueError(f"targets must be a 2-d multi-hot array [items, labels], got shape {targets.shape}")
    if targets.shape[0] == 0 or targets.shape[1] == 0:
        raise ValueError(f"targets is empty (shape {targets.shape}): need at least one item and one label")
    bad = ~np.isin(targets, (0, 1))
    if bad.any():
        at = _first_bad(bad)
        raise ValueError(f"targets must be 0 or 1; item {at[0]}, label {at[1]} is {targets[at].item()!r}")
    return targets.astype(np.float64)


def _average_precisions(targets: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """AP of every column (each must hold a positive), computed as scikit-learn does, to the last bit.

    AP = sum over distinct score thresholds (highest first) of (R_n - R_{n-1}) P_n; tied scores form one
    threshold. The per-column sums run in scikit-learn's order (lowest threshold first) so rounding matches.
    """
    n, num_labels = targets.shape
    order = np.argsort(scores, axis=0, kind="stable")[::-1]  # descending; order within ties is irrelevant
    sorted_scores = np.take_along_axis(scores, order, axis=0)
    true_pos = np.cumsum(np.take_along_axis(targets, order, axis=0), axis=0)
    is_threshold = np.ones((n, num_labels), dtype=bool)  # last item of each run of tied scores
    is_threshold[:-1] = sorted_scores[:-1] != sorted_scores[1:]

    # Thresholds of all columns, column after column, highest score first within a column.
    cols, rows = np.nonzero(is_threshold.T)
    tp = true_pos.T[cols, rows]
    precision = tp / (rows + 1.0)
    recall = tp / true_pos[-1][cols]
    counts = np.bincount(cols, minlength=num_labels)
    starts = np.cumsum(counts) - counts
    previous_recall = np.empty_like(recall)
    previous_recall[1:] = recall[:-1]
    previous_recall[starts] = 0.0
    terms = (previous_recall - recall) * precision  # = -(R_n - R_{n-1}) P_n

    ap = np.empty(num_labels)
    for count in np.unique(counts):  # columns with equal threshold counts are summed together, row-wise
        group = np.flatnonzero(counts == count)
        index = starts[group][:, None] + np.arange(count - 1, -1, -1)[None, :]
        ap[group] = np.maximum(0.0, -terms[index].sum(axis=1))
    return ap


def average_precision_details(targets: np.ndarray | list, scores: np.ndarray | list) -> tuple[float, np.ndarray, int]:
    """(mAP over labels with a positive, per-label AP with NaN where skipped, number of skipped labels)."""
    targets = _check_targets(targets)
    scores = _check_scores(scores, targets.shape[0], "scores")
    if scores.shape != targets.shape:
        raise ValueError(f"scores shape {scores.shape} does not match targets shape {targets.shape}")
    keep = targets.any(axis=0)
    if not keep.any():
        raise ValueError(
            f"no label has a positive item among the {targets.shape[0]} items ({targets.shape[1]} labels): "
            "mean average precision is undefined; evaluate on a split with positives"
        )
    per_label = np.full(targets.shape[1], np.nan)
    per_label[keep] = _average_precisions(targets[:, keep], scores[:, keep])
    return float(np.mean(per_label[keep])), per_label, int((~keep).sum())


def mean_average_precision(targets: np.ndarray | list, scores: np.ndarray | list) -> float:
    """Macro mean of average precision over labels with at least one positive (scikit-learn semantics)."""
    return average_precision_details(targets, scores)[0]


def task_error(kind: TaskKind | str, targets: np.ndarray | list, predictions: np.ndarray | list) -> tuple[float, int]:
    """(error, skipped labels) of one evaluation: 1 - accuracy (multi-class) or 1 - mAP (multi-label)."""
    try:
        kind = TaskKind(kind)
    except ValueError:
        raise ValueError(f"unknown task kind {kind!r}; expected one of {[k.value for k in TaskKind]}") from None
    if kind is TaskKind.MULTI_CLASS:
        return error_rate(targets, predictions), 0
    mean_ap, _, skipped = average_precision_details(targets, predictions)
    return 1.0 - mean_ap, skipped
