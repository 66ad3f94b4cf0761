"""Centred fact vectors: the fact-learning authors' SUBMEAN, and the `padded` fact distance built on it.

`centre_facts(t, mask)`: every fact vector t(f) = [w(S); w(P); w(O)] minus the mean fact vector m over the given facts,
computed and subtracted AFTER zero padding (an undefined part's block becomes -m_c, not 0), as the authors' SUBMEAN
does (see docs/facts.md). The same centred vectors serve as training targets, scoring candidates and task-similarity
inputs, so the option means one thing everywhere (`-s centre=true` on a fact stream).

`padded_vectors(part_ids, part_vectors)`: the rows the `padded` split distance compares. Each part's word vector is
scaled to unit length (so S, P and O weigh alike, as in the part-wise `eq2` distance), an undefined part is a zero
block, the rows are centred as above and then scaled to unit length; the distance between two facts is the Euclidean
distance of their rows, sqrt(2 (1 - cos)) of the centred padded vectors. Unlike `eq2`, where a part counts only when
both facts define it, an undefined part counts here (it sits at -m_c, away from every defined word).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

UNIT_EPS = 1e-12


def mean_fact_vector(fact_vectors: np.ndarray) -> np.ndarray:
    """The mean of the zero-padded fact vectors [C, ...] over the C facts, float64, shaped like one fact."""
    vectors = np.asarray(fact_vectors, dtype=np.float64)
    if vectors.ndim < 2 or len(vectors) == 0:
        raise ValueError(f"fact vectors must be [C, ...] with C >= 1 facts, got shape {vectors.shape}")
    return vectors.mean(axis=0)


def centre_facts(fact_vectors: np.ndarray, mean: np.ndarray | None = None) -> np.ndarray:
    """t(f) - m for every fact (m: `mean`, default the mean over these facts), undefined parts included; float32."""
    vectors = np.asarray(fact_vectors, dtype=np.float64)
    m = mean_fact_vector(vectors) if mean is None else np.asarray(mean, dtype=np.float64)
    if m.shape != vectors.shape[1:]:
        raise ValueError(f"mean fact vector {m.shape} does not match the facts' {vectors.shape[1:]}")
    return (vectors - m).astype(np.float32)


def padded_vectors(part_ids: np.ndarray, part_vectors: Sequence[np.ndarray], centre: bool = True) -> np.ndarray:
    """Rows [n, 3d] compared by the `padded` distance (module docstring); float64, unit length (zero rows stay 0)."""
    ids = np.asarray(part_ids)
    if ids.ndim != 2 or ids.shape[1] != 3:
        raise ValueError(f"part_ids must be [n, 3] (S, P, O; -1 = undefined), got {ids.shape}")
    dims = {np.shape(v)[1] for v in part_vectors}
    if len(part_vectors) != 3 or len(dims) != 1:
        raise ValueError(
            f"part_vectors must be 3 arrays [vocab_c, d] with one d, got {[np.shape(v) for v in part_vectors]}"
        )
    d = dims.pop()
    rows = np.zeros((len(ids), 3 * d))
    for c in range(3):
        table = np.asarray(part_vectors[c], dtype=np.float64)
        table = table / np.maximum(np.linalg.norm(table, axis=1, keepdims=True), UNIT_EPS)
        defined = ids[:, c] >= 0
        rows[defined, c * d : (c + 1) * d] = table[ids[defined, c]]
    if centre:
        rows -= rows.mean(axis=0)
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), UNIT_EPS)


__all__ = ["centre_facts", "mean_fact_vector", "padded_vectors"]
