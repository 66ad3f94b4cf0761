"""A store's fitted `lifelong` plans, kept beside it so that `bench add-model` does not refit what `plan-model`
fitted (k-means anchors and five cross-fitted refits: minutes at n' in the thousands).

One file per (sort version, budget) under STORE/plans/, written atomically (np.savez, no pickles) and derived
from the sort's ranking models only, which no later insert changes; a file that is missing, unreadable or not a
plan is fitted again (and rewritten). The estimator's design version is in the file name: a new design never reads
an old plan.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import numpy as np

from lifelong.core.files import atomic_write_bytes
from lifelong.sortsearch.estimators.ours import AnchorPlan

PLANS_DIR = "plans"
DESIGN = "lifelong2"  # bump when the estimator's design changes


def plan_path(store_path: Path, version: int, budget: int) -> Path:
    return Path(store_path) / PLANS_DIR / f"{DESIGN}-sort{int(version):06d}-n{int(budget)}.npz"


def cached_plan(store_path: Path, version: int, budget: int, fit: Callable[[], AnchorPlan]) -> AnchorPlan:
    """The plan stored for (sort `version`, `budget`), or `fit()`'s, stored for next time (best effort: a store
    that cannot be written still gets its plan)."""
    path = plan_path(store_path, version, budget)
    if path.is_file():
        try:
            with np.load(path, allow_pickle=False) as arrays:
                plan = AnchorPlan.from_arrays(dict(arrays))
            if plan.items.size == int(budget):
                return plan
        except (OSError, KeyError, ValueError):
            pass  # not a plan: fit it again below
    plan = fit()
    buffer = io.BytesIO()
    np.savez(buffer, **plan.to_arrays())
    try:
        atomic_write_bytes(path, buffer.getvalue())
    except OSError:
        pass  # a read-only store: fitted again next time
    return plan
