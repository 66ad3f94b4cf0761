"""Metrics of estimated 0/1 rows y against true rows a, vectorised over many rows
(docs/protocols/sort-and-search.md#metrics).

Rows are dense uint8/bool [r, n] (a 1-D row gives a float), packed [r, ceil(n/8)] with `n` given, or a
PackedRows/DenseRows view. Every metric derives from four counts per row: n, |a|, |y| and |a AND y|.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lifelong.sortsearch.bitmatrix import as_rows, popcount_rows
from lifelong.sortsearch.search import check_order, optimal_thresholds, prefix_and_total_ones


@dataclass(frozen=True)
class Agreement:
    """Per-row counts of true rows a and estimates y over n samples: |a|, |y| and |a AND y| (int64 [r])."""

    n: int
    ones_a: np.ndarray
    ones_y: np.ndarray
    ones_both: np.ndarray

    @property
    def error(self) -> np.ndarray:
        """Sample-level error E = ||a - y||_1 / n (Eq. 2), a fraction."""
        return (self.ones_a + self.ones_y - 2 * self.ones_both) / self.n

    @property
    def chance(self) -> np.ndarray:
        """Chance agreement E_rand = (|a|/n)(|y|/n) + (1 - |a|/n)(1 - |y|/n) (Eq. 3)."""
        a, y, n = self.ones_a.astype(np.float64), self.ones_y.astype(np.float64), float(self.n)
        return (a * y + (n - a) * (n - y)) / (n * n)

    @property
    def kappa(self) -> np.ndarray:
        """Cohen's kappa ((1 - E) - E_rand) / (1 - E_rand) (Eq. 4); NaN where E_rand = 1 (a and y both constant
        and equal: all ones or all zeros), where kappa is undefined (0/0)."""
        a, y, b, n = (x.astype(np.float64) for x in (self.ones_a, self.ones_y, self.ones_both, np.asarray(self.n)))
        # exact rearrangement of Eq. 4 over n^2: numerator 2(n|a&y| - |a||y|), denominator |a|(n-|y|) + |y|(n-|a|)
        num = 2.0 * (n * b - a * y)
        den = a * (n - y) + y * (n - a)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)

    @property
    def aggregate_error(self) -> np.ndarray:
        """Error of the estimated accuracy: | |y| - |a| | / n."""
        return np.abs(self.ones_y - self.ones_a) / self.n


def agreement(a: Any, y: Any, n: int | None = None) -> Agreement:
    """Counts of true rows a against estimated rows y (same layout: both dense, or both packed with n)."""
    ra, ry = as_rows(a, n), as_rows(y, n)
    if ra.shape != ry.shape:
        raise ValueError(f"true rows {ra.shape} and estimated rows {ry.shape} must have the same shape")
    m, cols = ra.shape
    if cols == 0:
        raise ValueError("rows have no samples (n = 0); metrics are undefined")
    ones_a, ones_y, both = (np.empty(m, np.int64) for _ in range(3))
    step = ra.default_chunk((cols + 7) // 8 * 4)
    for i0 in range(0, m, step):
        i1 = min(m, i0 + step)
        pa, py = ra.packed_rows(i0, i1), ry.packed_rows(i0, i1)
        ones_a[i0:i1] = popcount_rows(pa, cols)
        ones_y[i0:i1] = popcount_rows(py, cols)
        both[i0:i1] = popcount_rows(pa & py, cols)
    return Agreement(cols, ones_a, ones_y, both)


def step_agreement(a: Any, order: Any, k: Any, n: int | None = None) -> Agreement:
    """Counts of true rows a against step predictions y = scatter(predict_rows(k), order), never building y."""
    rows = as_rows(a, n)
    if rows.shape[1] == 0:
        raise ValueError("rows have no samples (n = 0); metrics are undefined")
    both, ones = prefix_and_total_ones(rows, order, k)
    return Agreement(rows.shape[1], ones, np.asarray(k, np.int64).reshape(-1), both)


def _single(a: Any, y: Any, values: np.ndarray) -> np.ndarray | float:
    """A float for 1-D dense inputs, else the per-row array."""
    if isinstance(a, np.ndarray) and isinstance(y, np.ndarray) and a.ndim == 1 and y.ndim == 1:
        return float(values[0])
    return values


def sample_level_error(a: Any, y: Any, n: int | None = None) -> np.ndarray | float:
    """Per-row fraction of samples where the estimate disagrees with the truth (Eq. 2)."""
    return _single(a, y, agreement(a, y, n).error)


def chance_agreement(a: Any, y: Any, n: int | None = None) -> np.ndarray | float:
    """Per-row agreement expected by chance from the two rows' accuracies (Eq. 3)."""
    return _single(a, y, agreement(a, y, n).chance)


def cohen_kappa(a: Any, y: Any, n: int | None = None) -> np.ndarray | float:
    """Per-row Cohen's kappa (Eq. 4); NaN where E_rand = 1 (both rows constant and equal)."""
    return _single(a, y, agreement(a, y, n).kappa)


def aggregate_error(a: Any, y: Any, n: int | None = None) -> np.ndarray | float:
    """Per-row absolute error of the estimated accuracy, | |y| - |a| | / n."""
    return _single(a, y, agreement(a, y, n).aggregate_error)


def pearson(est_acc: Any, true_acc: Any) -> float:
    """Pearson correlation of estimated and true accuracies across models; NaN if either is constant."""
    x, y = np.asarray(est_acc, np.float64), np.asarray(true_acc, np.float64)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"pearson needs two 1-D arrays of equal length; got {x.shape} and {y.shape}")
    if x.size < 2:
        raise ValueError(f"pearson needs at least 2 models; got {x.size}")
    xm, ym = x - x.mean(), y - y.mean()
    den = np.sqrt(np.dot(xm, xm) * np.dot(ym, ym))
    if den == 0:
        return float("nan")
    return float(np.clip(np.dot(xm, ym) / den, -1.0, 1.0))


def epistemic_error(k: Any, k_star: Any, n: int) -> np.ndarray:
    """||y* - y||_1 / n = |k - k*| / n for two step rows on the same order."""
    return np.abs(np.asarray(k, np.int64) - np.asarray(k_star, np.int64)) / float(n)


def decomposition(a: Any, order: Any, k: Any, n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(aleatoric, epistemic) error per row: y* = the DP step on all n ranked samples (n' = n).

    Aleatoric = ||a - y*||_1 / n (what no budget can remove under this order); epistemic = |k - k*| / n.
    """
    rows = as_rows(a, n)
    m, cols = rows.shape
    order = check_order(order, cols)
    k = np.asarray(k, np.int64).reshape(-1)
    if k.size != m:
        raise ValueError(f"{k.size} thresholds for {m} rows")
    best = optimal_thresholds(rows, order)
    aleatoric = Agreement(cols, rows.row_sums(), best.k, (best.score + best.k) // 2).error
    return aleatoric, epistemic_error(k, best.k, cols)
