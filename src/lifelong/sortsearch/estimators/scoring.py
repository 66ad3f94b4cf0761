"""The comparison table of `lifelong bench compare`: per (split, budget, method), pooled over seeds and targets.

Metrics: mean absolute, root mean square and max error of the accuracy estimate; its ratio to the random-sample
mean's mean absolute error (same split, budget and draws), with a paired bootstrap interval over (seed, target)
pairs; Kendall tau between estimated and true accuracies among a seed's targets (mean over seeds) and the
share of target pairs put in the right order, by the pair's true accuracy gap; interval coverage and mean width
where the method has intervals; per-sample thresholded error and Brier score where it has per-sample
probabilities; mean seconds per plan + estimate and the largest peak heap memory. `paired` compares one method
with every other: the mean difference of absolute errors per (seed, target) with its bootstrap interval.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.stats import kendalltau

from lifelong.sortsearch.estimators.protocol import Record

GAP_BINS = (0.0, 0.01, 0.02, 0.05, 1.01)  # true accuracy gaps of target pairs: <1, 1-2, 2-5, >=5 points
BOOTSTRAP = 2000


def _bootstrap_mean(values: np.ndarray, seed: int = 0, resamples: int = BOOTSTRAP) -> tuple[float, float]:
    """95% percentile bootstrap interval of a mean."""
    if values.size < 2:
        return (float(values.mean()), float(values.mean())) if values.size else (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, values.size, (resamples, values.size))].mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def _bootstrap_ratio(a: np.ndarray, b: np.ndarray, seed: int = 0, resamples: int = BOOTSTRAP) -> tuple[float, float]:
    """95% paired bootstrap interval of mean(a) / mean(b) (the same pairs resampled for both)."""
    if a.size < 2 or b.mean() == 0:
        return float("nan"), float("nan")
    idx = np.random.default_rng(seed).integers(0, a.size, (resamples, a.size))
    ratios = a[idx].mean(axis=1) / np.maximum(b[idx].mean(axis=1), 1e-12)
    return float(np.quantile(ratios, 0.025)), float(np.quantile(ratios, 0.975))


def _errors(records: Sequence[Record]) -> dict[tuple[int, int], float]:
    """(seed, target model) -> signed error of the estimate."""
    return {(r.seed, t): e - y for r in records for t, e, y in zip(r.targets, r.estimate, r.truth, strict=True)}


def _order_stats(records: Sequence[Record]) -> tuple[float, list[float | None]]:
    """Mean Kendall tau over seeds, and the share of target pairs in the right order per true-gap bin."""
    taus, right, total = [], np.zeros(len(GAP_BINS) - 1), np.zeros(len(GAP_BINS) - 1)
    for r in records:
        est, truth = np.asarray(r.estimate), np.asarray(r.truth)
        if est.size >= 2 and np.ptp(truth) > 0 and np.ptp(est) > 0:
            taus.append(kendalltau(est, truth).statistic)
        i, j = np.triu_indices(est.size, 1)
        gap = np.abs(truth[i] - truth[j])
        keep = gap > 0
        ok = np.sign(est[i] - est[j]) == np.sign(truth[i] - truth[j])
        bins = np.digitize(gap[keep], GAP_BINS) - 1
        np.add.at(total, bins, 1)
        np.add.at(right, bins, ok[keep])
    shares = [float(r / t) if t else None for r, t in zip(right, total, strict=True)]
    return (float(np.mean(taus)) if taus else float("nan")), shares


def summarize(records: Sequence[Record], baseline: str = "random-mean") -> list[dict[str, Any]]:
    """One row per (split, budget, method), in the order the records name them."""
    groups: dict[tuple[str, int, str], list[Record]] = defaultdict(list)
    for r in records:
        groups[(r.split, r.budget, r.method)].append(r)
    rows = []
    for (split, budget, method), group in groups.items():
        errors = _errors(group)
        keys = sorted(errors)
        e = np.array([errors[k] for k in keys])
        row: dict[str, Any] = {
            "split": split,
            "budget": budget,
            "method": method,
            "models": len(keys),
            "seeds": len({r.seed for r in group}),
            "mae": float(np.abs(e).mean()),
            "mae_interval": _bootstrap_mean(np.abs(e)),
            "rmse": float(np.sqrt((e * e).mean())),
            "max_error": float(np.abs(e).max()),
        }
        base = groups.get((split, budget, baseline))
        if base is not None:
            base_errors = _errors(base)
            common = [k for k in keys if k in base_errors]
            a = np.abs(np.array([errors[k] for k in common]))
            b = np.abs(np.array([base_errors[k] for k in common]))
            row["ratio"] = float(a.mean() / b.mean()) if b.mean() > 0 else float("nan")
            row["ratio_interval"] = _bootstrap_ratio(a, b)
        row["kendall_tau"], row["order_by_gap"] = _order_stats(group)
        with_intervals = [r for r in group if r.low is not None]
        if with_intervals:
            low = np.concatenate([r.low for r in with_intervals])
            high = np.concatenate([r.high for r in with_intervals])
            truth = np.concatenate([r.truth for r in with_intervals])
            row["coverage"] = float(np.mean((low <= truth + 1e-12) & (truth <= high + 1e-12)))
            row["width"] = float(np.mean(high - low))
        with_samples = [r for r in group if r.sample_error is not None]
        if with_samples:
            row["sample_error"] = float(np.mean(np.concatenate([r.sample_error for r in with_samples])))
            row["brier"] = float(np.mean(np.concatenate([r.brier for r in with_samples])))
        row["seconds"] = float(np.mean([r.seconds for r in group]))
        row["peak_mib"] = float(max(r.peak_mib for r in group))
        rows.append(row)
    return rows


def paired(records: Sequence[Record], method: str) -> list[dict[str, Any]]:
    """`method` against every other, per (split, budget): mean of |error of method| - |error of other| over
    shared (seed, target) pairs, with its 95% bootstrap interval (negative: `method` is closer)."""
    groups: dict[tuple[str, int, str], list[Record]] = defaultdict(list)
    for r in records:
        groups[(r.split, r.budget, r.method)].append(r)
    out = []
    for (split, budget, other), group in groups.items():
        mine = groups.get((split, budget, method))
        if other == method or mine is None:
            continue
        a, b = _errors(mine), _errors(group)
        common = sorted(set(a) & set(b))
        d = np.abs([a[k] for k in common]) - np.abs([b[k] for k in common])
        low, high = _bootstrap_mean(d)
        out.append(
            {
                "split": split,
                "budget": budget,
                "method": method,
                "other": other,
                "difference": float(d.mean()),
                "interval": (low, high),
                "pairs": len(common),
            }
        )
    return out
