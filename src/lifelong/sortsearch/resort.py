"""When to re-sort a growing benchmark: `ResortPolicy`, `ResortStats` and `should_resort`.

A sort is stale when many samples were added since (their places were estimated from m' models, not counted),
when many models were added (the ranking set is small next to them), or when new models fit the order worse than
the models added right after the sort (fit = DP score per sampled item, S(k')/n', observable from each model's n'
outcomes: `fit_score`). `ResortPolicy` holds the three limits; `should_resort` takes `ResortStats` (or a
BenchStore, summarised by `store_resort_stats`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lifelong.sortsearch.search import as_sampled, best_step, step_scores
from lifelong.sortsearch.sort import ranked_positions


def fit_score(sampled: Any) -> np.ndarray:
    """DP fit per sampled item, S(k')/n' = (agreements - disagreements of the best step) / n', in [0, 1] per row."""
    B = as_sampled(sampled)
    return best_step(step_scores(B)).score / B.shape[1]


@dataclass(frozen=True)
class ResortPolicy:
    """Re-sort when any limit is passed (None disables it).

    sample_fraction f: samples added since the sort > f x samples in the sort. model_ratio g: models added since
    the sort > g x ranking models. fit_tolerance: mean fit of the last `window` models added < mean fit of the first
    `window` models added after the sort minus the tolerance (needs 2 x window models since the sort).
    """

    sample_fraction: float | None = 0.25
    model_ratio: float | None = 1.0
    fit_tolerance: float | None = 0.03
    window: int = 8

    def __post_init__(self) -> None:
        for name in ("sample_fraction", "model_ratio", "fit_tolerance"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a non-negative number or None; got {value!r}")
        if int(self.window) < 1:
            raise ValueError(f"window must be >= 1; got {self.window}")


@dataclass(frozen=True)
class ResortStats:
    """What the policy looks at: sizes at the last sort and now, and the fits of models added since."""

    n_sorted: int
    n_now: int
    ranking_models: int
    models_added: int
    baseline_fit: float | None = None
    recent_fit: float | None = None

    @classmethod
    def from_fits(
        cls, n_sorted: int, n_now: int, ranking_models: int, fits: Sequence[float], window: int
    ) -> ResortStats:
        """Stats whose fits are the means of the first and the last `window` of `fits` (in insertion order)."""
        fits = [float(f) for f in fits]
        w = int(window)
        baseline = float(np.mean(fits[:w])) if len(fits) >= w else None
        recent = float(np.mean(fits[-w:])) if len(fits) >= 2 * w else None
        return cls(int(n_sorted), int(n_now), int(ranking_models), len(fits), baseline, recent)


def store_resort_stats(store: Any, window: int = 8) -> ResortStats | None:
    """ResortStats of a BenchStore's latest sort (None when it has none): the fits are those of the estimated
    models inserted on that sort, in id order, from their observed cells laid out in the sort's order."""
    sorts = store.sorts()
    if not sorts:
        return None
    latest = sorts[-1]
    n_now, _ = store.size()
    order = store.load_sort(latest.version).astype(np.int64)
    rank = ranked_positions(order)
    fits = []
    for model_id, entry in sorted(store.estimates().items()):
        if entry.sort_version != latest.version:
            continue
        observed = np.unpackbits(store.read_observed([model_id]), axis=1, count=n_now)[0, : order.size]
        row = np.unpackbits(store.read_rows([model_id]), axis=1, count=n_now)[0, : order.size]
        ids = np.flatnonzero(observed)
        if ids.size:
            ids = ids[np.argsort(rank[ids], kind="stable")]
            fits.append(float(fit_score(row[ids])[0]))
    return ResortStats.from_fits(latest.n_samples, n_now, len(latest.ranking_models), fits, window)


def should_resort(stats: Any, policy: ResortPolicy | None = None) -> tuple[bool, str]:
    """(re-sort now?, why): every limit of `policy` that is passed, or why none is. `stats` is ResortStats or a
    BenchStore (summarised with store_resort_stats)."""
    policy = policy or ResortPolicy()
    if not isinstance(stats, ResortStats):
        stats = store_resort_stats(stats, policy.window)
        if stats is None:
            return True, "no sort yet"
    reasons = []
    added = stats.n_now - stats.n_sorted
    if policy.sample_fraction is not None and added > policy.sample_fraction * stats.n_sorted:
        reasons.append(f"samples: {added} added > {policy.sample_fraction:g} x {stats.n_sorted} sorted")
    if policy.model_ratio is not None and stats.models_added > policy.model_ratio * stats.ranking_models:
        reasons.append(
            f"models: {stats.models_added} added > {policy.model_ratio:g} x {stats.ranking_models} ranking models"
        )
    if policy.fit_tolerance is not None and stats.baseline_fit is not None and stats.recent_fit is not None:
        drop = stats.baseline_fit - stats.recent_fit
        if drop > policy.fit_tolerance:
            reasons.append(
                f"fit: recent {stats.recent_fit:.3f} < after-sort {stats.baseline_fit:.3f} - {policy.fit_tolerance:g}"
            )
    if reasons:
        return True, "; ".join(reasons)
    return False, f"within limits ({added} samples, {stats.models_added} models added since the sort)"
