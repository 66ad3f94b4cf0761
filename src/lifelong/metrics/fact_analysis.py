"""Lifelong fact learning analyses (docs/protocols/facts.md): pure functions, numpy in, plain dicts out.

- `fact_transfer`: GEM-style backward / forward transfer of the T x T generalized top-5 matrix R.
- `long_tail`, `few_shot`, `compositional`: accuracy pooled over test items, grouped by the training images of
  each item's fact. Per-fact inputs are aligned arrays (index = fact): training images, test items, correct items.
  Facts with no test item carry no accuracy and are ignored everywhere (they are neither counted nor listed).
- `task_similarity`: cosine of the tasks' mean fact embeddings and the S/P/O vocabulary overlap of the tasks.

Mean and std over runs: `lifelong.metrics.statistics.mean_std`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lifelong.metrics.accuracy_matrix import _validated

PARTS = ("S", "P", "O")
UNDEFINED = (None, "*")  # an undefined fact part (the paper's "*")


# ------------------------------------------------------------------------------------------------- transfer


def fact_transfer(R: Any, b: Any) -> dict[str, Any]:
    """BWT, FWT and the final mean of R (R[i, j]: generalized accuracy on task j after training task i, 0-based).

    BWT = mean_{i < T-1} (R[T-1, i] - R[i, i]);  FWT = mean_{i >= 1} (R[i-1, i] - b[i]);
    final_mean_over_tasks = mean_j R[T-1, j]. b[j] is the untrained model's accuracy on task j. R must be square,
    T >= 2, finite and in [0, 1]; b of length T, likewise.
    """
    matrix = _validated(R)
    n = len(matrix)
    try:
        base = np.array(b, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"b must be a list of {n} accuracies (one per task), got {b!r}") from exc
    if base.shape != (n,):
        raise ValueError(f"b must hold one accuracy per task: shape ({n},) for a {n} x {n} R, got {base.shape}")
    bad = np.flatnonzero(~np.isfinite(base) | (base < 0.0) | (base > 1.0))
    if bad.size:
        raise ValueError(
            f"b[{int(bad[0])}] = {base[bad[0]]!r} (and {bad.size - 1} more) not an accuracy in [0, 1]; "
            "b holds the untrained model's accuracies, not percentages"
        )
    backward = matrix[n - 1, : n - 1] - np.diag(matrix)[: n - 1]
    forward = np.diag(matrix, k=1) - base[1:]
    return {
        "bwt": float(backward.mean()),
        "fwt": float(forward.mean()),
        "final_mean_over_tasks": float(matrix[n - 1].mean()),
        "backward_per_task": [float(v) for v in backward],  # R[T-1, i] - R[i, i], i = 0..T-2
        "forward_per_task": [float(v) for v in forward],  # R[i-1, i] - b[i], i = 1..T-1
        "R": [[float(v) for v in row] for row in matrix],
        "b": [float(v) for v in base],
    }


# -------------------------------------------------------------------------------------------- per-fact counts


def _count_array(name: str, values: Any) -> np.ndarray:
    """`values` as a 1-D int64 array of non-negative whole numbers."""
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a list of counts (one per fact), got {values!r}") from exc
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one count per fact), got shape {array.shape}")
    bad = np.flatnonzero(~np.isfinite(array) | (array < 0) | (array != np.round(array)))
    if bad.size:
        raise ValueError(f"{name}[{int(bad[0])}] = {array[bad[0]]!r} is not a count (a whole number >= 0)")
    return array.astype(np.int64)


def _per_fact(train: Any, items: Any, correct: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three per-fact count arrays, checked: equal lengths and correct <= items."""
    arrays = (
        _count_array("train_images_per_fact", train),
        _count_array("items_per_fact", items),
        _count_array("correct_per_fact", correct),
    )
    lengths = [len(a) for a in arrays]
    if len(set(lengths)) != 1:
        raise ValueError(
            "train_images_per_fact, items_per_fact and correct_per_fact must have one entry per fact, got lengths "
            f"{lengths[0]}, {lengths[1]} and {lengths[2]}"
        )
    over = np.flatnonzero(arrays[2] > arrays[1])
    if over.size:
        i = int(over[0])
        raise ValueError(f"fact {i} has {arrays[2][i]} correct of {arrays[1][i]} test items (correct > items)")
    return arrays


def _check_int(name: str, value: Any, least: int, meaning: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < least:
        raise ValueError(f"{name} must be an integer >= {least} ({meaning}), got {value!r}")


def _pooled(items: np.ndarray, correct: np.ndarray, members: np.ndarray) -> dict[str, Any]:
    """{"facts", "items", "correct", "accuracy"} pooled over the facts in `members` (a boolean mask)."""
    n_items, n_correct = int(items[members].sum()), int(correct[members].sum())
    return {
        "facts": int(members.sum()),
        "items": n_items,
        "correct": n_correct,
        "accuracy": n_correct / n_items if n_items else None,
    }


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)


def _default_edges(train: np.ndarray) -> np.ndarray:
    """Powers of two 1, 2, 4, ... up to the first above max(train); a leading 0 when some fact has no image."""
    edges = [0, 1] if train.min() == 0 else [1]
    while edges[-1] <= train.max():
        edges.append(2 * edges[-1])
    return np.array(edges, dtype=float)


def long_tail(
    train_images_per_fact: Any, items_per_fact: Any, correct_per_fact: Any, edges: Sequence[float] | None = None
) -> list[dict[str, Any]]:
    """Accuracy pooled over test items, binned by the training images of each item's fact: one row per bin.

    Row: {"low", "high", "facts", "items", "correct", "accuracy"}; a fact with n training images falls in the bin
    with low <= n < high; accuracy = correct / items over the bin's facts (None when no items). Default edges:
    1, 2, 4, ... covering the largest count (with a [0, 1) bin first when a fact has no training image). Given
    edges must be strictly increasing and cover every fact with test items (np.inf may close the last bin).
    """
    train, items, correct = _per_fact(train_images_per_fact, items_per_fact, correct_per_fact)
    counted = items > 0
    if not counted.any():
        return []
    if edges is None:
        bounds = _default_edges(train[counted])
    else:
        bounds = np.asarray(edges, dtype=float)
        if bounds.ndim != 1 or len(bounds) < 2 or np.isnan(bounds).any() or (np.diff(bounds) <= 0).any():
            raise ValueError(f"edges must be a strictly increasing list of >= 2 numbers, got {list(edges)!r}")
        outside = np.flatnonzero(counted & ((train < bounds[0]) | (train >= bounds[-1])))
        if outside.size:
            i = int(outside[0])
            raise ValueError(
                f"fact {i} has {train[i]} training images, outside the bins [{bounds[0]}, {bounds[-1]}) "
                f"({outside.size} fact(s) outside); widen the edges (np.inf may close the last bin)"
            )
    bins = np.searchsorted(bounds, train, side="right") - 1
    return [
        {"low": _number(bounds[k]), "high": _number(bounds[k + 1]), **_pooled(items, correct, counted & (bins == k))}
        for k in range(len(bounds) - 1)
    ]


def few_shot(
    train_images_per_fact: Any, items_per_fact: Any, correct_per_fact: Any, threshold: int = 10
) -> dict[str, Any]:
    """Accuracy pooled over the test items of few-shot facts: 1 <= training images <= threshold.

    {"threshold", "facts", "items", "correct", "accuracy" (None without items)}, plus "zero_shot" (the same
    counts for facts with no training image) when such facts have test items.
    """
    _check_int("threshold", threshold, 1, "the most training images of a few-shot fact")
    train, items, correct = _per_fact(train_images_per_fact, items_per_fact, correct_per_fact)
    counted = items > 0
    out: dict[str, Any] = {
        "threshold": int(threshold),
        **_pooled(items, correct, counted & (train >= 1) & (train <= threshold)),
    }
    zero = counted & (train == 0)
    if zero.any():
        out["zero_shot"] = _pooled(items, correct, zero)
    return out


# -------------------------------------------------------------------------------------------- compositional


def _fact_parts(facts: Sequence[Sequence[Any]], n: int | None = None) -> list[tuple[Any, Any, Any]]:
    """Each fact as an (S, P, O) tuple with None for an undefined part (None or "*")."""
    parts = []
    for i, fact in enumerate(facts):
        if isinstance(fact, str) or len(fact) != 3:
            raise ValueError(f"fact {i} must be an (S, P, O) triple with None for undefined parts, got {fact!r}")
        parts.append(tuple(None if p in UNDEFINED else p for p in fact))
    if n is not None and len(parts) != n:
        raise ValueError(f"facts must hold one (S, P, O) triple per fact: {n} expected, got {len(parts)}")
    return parts


def compositional(
    facts: Sequence[Sequence[Any]],
    train_images_per_fact: Any,
    items_per_fact: Any,
    correct_per_fact: Any,
    rare: int = 10,
    frequent: int = 50,
) -> dict[str, Any]:
    """Accuracy on rare SPO facts whose parts were each seen often (compositional generalization).

    With freq_c(w) = sum of training images over all facts whose part c (S, P or O) is w, a fact (s, p, o) with
    all three parts defined is compositional when train(f) <= rare and freq_S(s), freq_P(p), freq_O(o) are all
    >= frequent (f's own images count). {"rare", "frequent", "facts", "items", "correct", "accuracy" (None without
    items), "fact_indices"} over the compositional facts that have test items.
    """
    _check_int("rare", rare, 0, "the most training images of a rare fact")
    _check_int("frequent", frequent, 1, "the fewest training images of a frequent word")
    train, items, correct = _per_fact(train_images_per_fact, items_per_fact, correct_per_fact)
    parts = _fact_parts(facts, len(train))
    seen: list[dict[Any, int]] = [{}, {}, {}]
    for fact, n in zip(parts, train, strict=True):
        for c, word in enumerate(fact):
            if word is not None:
                seen[c][word] = seen[c].get(word, 0) + int(n)
    members = np.array(
        [
            items[i] > 0
            and train[i] <= rare
            and all(w is not None and seen[c][w] >= frequent for c, w in enumerate(fact))
            for i, fact in enumerate(parts)
        ],
        dtype=bool,
    )
    return {
        "rare": int(rare),
        "frequent": int(frequent),
        **_pooled(items, correct, members),
        "fact_indices": [int(i) for i in np.flatnonzero(members)],
    }


# ------------------------------------------------------------------------------------------- task similarity


def _jaccard(a: set, b: set) -> float:
    """|a & b| / |a | b|; NaN when both are empty (the part is then left out of the geometric mean)."""
    union = a | b
    return len(a & b) / len(union) if union else float("nan")


def task_similarity(fact_vectors: Any, task: Any, facts: Sequence[Sequence[Any]], tasks: int | None = None) -> dict:
    """T x T task similarities: cosine of the mean fact embeddings, and the S/P/O vocabulary overlap.

    cosine[a, b] = <m_a, m_b> / (|m_a| |m_b|), m_t = mean of t(f) over task t's facts (rows of fact_vectors; a
    trailing [3, d] is flattened). spo_overlap[a, b] = (prod_c J_c(a, b))^(1/k), J_c the Jaccard index
    |V_a ∩ V_b| / |V_a ∪ V_b| of the two tasks' vocabularies of part c (defined words only), the product over the
    k parts whose vocabularies are not both empty (1.0 if none is). Diagonals are 1. Also returns "jaccard":
    {"S", "P", "O"} matrices (NaN where both vocabularies are empty) and "tasks" = T (default max(task) + 1).
    """
    vectors = np.asarray(fact_vectors)  # no float64 copy: 165k facts x 900-d is large
    if vectors.dtype.kind not in "iuf" or vectors.ndim < 2:
        raise ValueError(f"fact_vectors must be [n, D] (one embedding per fact), got shape {vectors.shape}")
    vectors = vectors.reshape(len(vectors), -1)
    if not np.isfinite(vectors).all():
        raise ValueError("fact_vectors must be finite")
    owner = np.asarray(task)
    if owner.ndim != 1 or len(owner) != len(vectors) or (owner.size and owner.dtype.kind not in "iu"):
        raise ValueError(f"task must be one integer task index per fact ({len(vectors)}), got {owner!r}")
    parts = _fact_parts(facts, len(vectors))
    if tasks is not None:
        _check_int("tasks", tasks, 1, "the number of tasks")
    if owner.size == 0:
        raise ValueError("no facts: task similarity needs at least one fact per task")
    T = int(owner.max()) + 1 if tasks is None else int(tasks)
    if owner.min() < 0 or owner.max() >= T:
        raise ValueError(f"task indices must lie in 0..{T - 1} (tasks = {T}), got values {owner.min()}..{owner.max()}")
    empty = [t for t in range(T) if not (owner == t).any()]
    if empty:
        raise ValueError(f"task(s) {empty} own no fact: their mean embedding and vocabularies are undefined")
    means = np.stack([vectors[owner == t].mean(axis=0, dtype=np.float64) for t in range(T)])
    norms = np.linalg.norm(means, axis=1)
    if (norms == 0).any():
        raise ValueError(f"task(s) {np.flatnonzero(norms == 0).tolist()} have a zero mean embedding: cosine undefined")
    cosine = np.clip(means @ means.T / np.outer(norms, norms), -1.0, 1.0)
    np.fill_diagonal(cosine, 1.0)
    vocab: list[list[set]] = [[set() for _ in range(T)] for _ in PARTS]
    for fact, t in zip(parts, owner.tolist(), strict=True):
        for c, word in enumerate(fact):
            if word is not None:
                vocab[c][t].add(word)
    jaccard = {
        name: np.array([[_jaccard(vocab[c][a], vocab[c][b]) for b in range(T)] for a in range(T)])
        for c, name in enumerate(PARTS)
    }
    overlap = np.ones((T, T))
    for a in range(T):
        for b in range(T):
            values = [jaccard[name][a, b] for name in PARTS if not np.isnan(jaccard[name][a, b])]
            if values and a != b:
                overlap[a, b] = float(np.prod(values)) ** (1.0 / len(values))
    return {"tasks": T, "cosine": cosine, "spo_overlap": overlap, "jaccard": jaccard}


__all__ = ["compositional", "fact_transfer", "few_shot", "long_tail", "task_similarity"]
