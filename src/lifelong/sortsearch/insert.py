"""Growing a benchmark: sort it, then add models (evaluated on n' samples) and samples (on m' models).

A new model is evaluated on n' samples: by default those the toolkit's estimator plans (`estimators.ours`,
`lifelong`: k-means anchors of the latest sort's ranking models' rows, its sources), or spread uniformly
(or at random) over the current ranked order (`sampling="uniform"|"random"`, Sort & Search's plan). The DP
threshold of its outcomes along the order, extrapolated to all n samples, predicts the rest of its row
(docs/protocols/sort-and-search.md#inserting-models). Each estimated model's accuracy is its estimator's best
estimate with its 95% interval, kept in the registry (`BenchStore.accuracies`): `lifelong`'s, or for Sort & Search's
plans the threshold's k/n corrected by the step's mean error (`intervals`; coverage measured in
benchmarks/bench_beyond.py); the threshold's k/n stays available as `threshold_accuracy`. A new sample
is evaluated on m' models spread over the models ranked most-accurate first; the DP threshold of those outcomes
predicts which of the other models get it right. Every evaluated cell is stored as an observation and every other
cell of the new row or column as an estimate, so each accuracy says how much of it is fact.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lifelong.core.suggest import did_you_mean
from lifelong.sortsearch.bitmatrix import PackedRows
from lifelong.sortsearch.estimators.base import EstimationTask
from lifelong.sortsearch.estimators.ours import Lifelong
from lifelong.sortsearch.plan_cache import cached_plan
from lifelong.sortsearch.registry import EstimateInterval
from lifelong.sortsearch.search import dp_threshold, extrapolate, predict_rows, sample_positions, scatter
from lifelong.sortsearch.sort import descending_order, model_order
from lifelong.sortsearch.store import BenchStore

ROWS_PER_CHUNK = 256
ESTIMATOR = "lifelong"  # the default plan: the toolkit's estimator (`lifelong bench compare` measures it)
SAMPLINGS = (ESTIMATOR, "uniform", "random")


def fully_observed_models(store: BenchStore) -> np.ndarray:
    """Models whose every cell is an observation: the ones a sort may rank samples with."""
    return np.array([i for i, acc in sorted(store.accuracies().items()) if acc.kind == "observed"], dtype=np.int64)


def sort_store(store: BenchStore, ranking_models: Sequence[int] | None = None) -> int:
    """Sort samples easiest first by the column sums of fully observed ranking models; save it as a new version."""
    if store.size()[0] == 0:
        raise ValueError("the store has no samples, so there is nothing to sort: add samples and fully observed models")
    ids = fully_observed_models(store) if ranking_models is None else np.asarray(ranking_models, dtype=np.int64)
    if ids.size == 0:
        raise ValueError("no fully observed model to rank samples with: add models with full results first")
    n = store.size()[0]
    sums = np.zeros(n, dtype=np.int64)
    for i0 in range(0, ids.size, ROWS_PER_CHUNK):
        sums += PackedRows(store.read_rows(ids[i0 : i0 + ROWS_PER_CHUNK]), n).column_sums()
    return store.save_sort(descending_order(sums), ids)


@dataclass(frozen=True)
class ModelPlan:
    """Which samples a new model must be evaluated on: their ids, ranked positions, and the sort they come from."""

    sort_version: int
    positions: np.ndarray
    sample_ids: np.ndarray
    sampling: str
    fitted: Any = field(default=None, compare=False, repr=False)  # the estimator's plan, so add_model reuses it


def plan_model(store: BenchStore, budget: int, *, sampling: str = ESTIMATOR, seed: int = 0) -> ModelPlan:
    """The n' = `budget` sample ids to evaluate a new model on: the `lifelong` estimator's plan (default), or spread
    over the latest sort ("uniform", "random")."""
    if sampling not in SAMPLINGS:
        raise ValueError(
            f"unknown sampling method {sampling!r}{did_you_mean(str(sampling), SAMPLINGS)}; choose one of "
            f"{', '.join(SAMPLINGS)}"
        )
    version, order = store.latest_sort()
    n = store.size()[0]
    if order.size != n:
        raise ValueError(
            f"sort version {version} covers {order.size} samples but the store has {n}: "
            "re-sort (`lifelong bench sort`) after adding samples"
        )
    if not 1 <= int(budget) <= n:
        raise ValueError(f"the budget n'={budget} must lie in [1, n={n}]; lower it or add samples")
    if sampling == ESTIMATOR:
        rank = np.empty(n, np.int64)
        rank[order] = np.arange(n)
        fitted = _estimator_plan(store, version, budget)
        positions = np.sort(rank[fitted.items])
        return ModelPlan(version, positions, order[positions].astype(np.int64), sampling, fitted)
    positions = sample_positions(order.size, budget, sampling, seed)
    return ModelPlan(version, positions, order[positions].astype(np.int64), sampling)


def _estimator_plan(store: BenchStore, version: int, budget: int) -> Any:
    """`lifelong`'s plan from the store: sources = sort `version`'s ranking models (bit-packed rows); the same store
    state and budget always give the same plan, fitted once and kept in the store (`plan_cache`)."""

    def fit() -> Any:
        (record,) = [r for r in store.sorts() if r.version == version]
        sources = PackedRows(store.read_rows(np.asarray(record.ranking_models, np.int64)), store.size()[0])
        return Lifelong().plan(EstimationTask(sources, budget))

    return cached_plan(store.path, version, budget, fit)


def add_model(
    store: BenchStore,
    name: str,
    plan: ModelPlan,
    outcomes: np.ndarray,
    metadata: Mapping[str, Any] | None = None,
) -> tuple[int, float]:
    """Store a model's observed outcomes on `plan.sample_ids` and its estimated row; return (id, best estimate).

    The best estimate (`BenchStore.accuracies`) comes with its interval and the threshold's k/n.
    """
    outcomes = np.asarray(outcomes)
    if outcomes.ndim != 1:
        raise ValueError(f"results of model {name!r}: expected a 1-D array of outcomes, got shape {outcomes.shape}")
    outcomes = _zero_one(outcomes, plan.sample_ids.size, f"results of model {name!r} (the plan's n')")
    order = store.load_sort(plan.sort_version)
    n = order.size
    k = int(extrapolate(dp_threshold(outcomes[None, :])[0:1], plan.positions, n)[0])
    row = scatter(predict_rows([k], n), order)
    intervals = None
    if plan.sampling == ESTIMATOR:  # the estimator's own best estimate and interval
        planned = (
            plan.fitted if plan.fitted is not None else _estimator_plan(store, plan.sort_version, plan.sample_ids.size)
        )
        where = {sample: i for i, sample in enumerate(plan.sample_ids.tolist())}
        est = planned.estimate(outcomes[[where[sample] for sample in planned.items.tolist()]][None, :])
        facts = np.unpackbits(row, axis=1, count=n)[0]  # the stored row: the step, then the facts over it
        facts[plan.sample_ids] = outcomes
        intervals = [
            EstimateInterval(
                float(est.accuracy[0]), float(est.low[0]), float(est.high[0]), 0.95, ESTIMATOR, int(facts.sum())
            )
        ]
    # model and predicted row in one atomic insert, then the facts, then the estimate entry (committed last)
    (model_id,) = store.add_models([name], [dict(metadata or {})], rows=row, observed=False)
    store.write_rows([model_id], plan.sample_ids, outcomes[None, :], observed=True)
    method = ESTIMATOR if plan.sampling == ESTIMATOR else "dp-" + plan.sampling
    store.record_estimates([model_id], [k], plan.sort_version, method, plan.sample_ids.size, intervals)
    return model_id, store.accuracies([model_id])[model_id].accuracy


def evaluate_model(
    store: BenchStore,
    name: str,
    predict_correct: Callable[[np.ndarray], np.ndarray],
    budget: int,
    *,
    sampling: str = ESTIMATOR,
    seed: int = 0,
    metadata: Mapping[str, Any] | None = None,
) -> tuple[int, float]:
    """Evaluate a callable model (sample ids -> 0/1 correctness) on exactly the planned samples, then add it."""
    plan = plan_model(store, budget, sampling=sampling, seed=seed)
    return add_model(store, name, plan, np.asarray(predict_correct(plan.sample_ids)), metadata)


def add_full_model(store: BenchStore, name: str, row: np.ndarray, metadata: Mapping[str, Any] | None = None) -> int:
    """A model evaluated on every sample (e.g. a ranking model): its whole row is observed."""
    n = store.size()[0]
    row = _zero_one(row, n, f"results of model {name!r}")
    return store.add_models([name], [dict(metadata or {})], rows=np.packbits(row[None, :], axis=1))[0]


@dataclass(frozen=True)
class SamplePlan:
    """Which models new samples must be evaluated on: ids (most accurate first order) and their positions."""

    model_ids: np.ndarray
    positions: np.ndarray
    ranked_models: np.ndarray


def plan_samples(store: BenchStore, budget: int, *, sampling: str = "uniform", seed: int = 0) -> SamplePlan:
    """The m' = `budget` models to evaluate new samples on, spread over the models ranked most accurate first."""
    accuracies = store.accuracies()
    ids = np.array(sorted(accuracies), dtype=np.int64)
    if ids.size == 0:
        raise ValueError("the store has no models yet: add models before inserting samples by estimation")
    ranked = ids[model_order(np.array([accuracies[i].accuracy for i in ids]))]
    positions = sample_positions(ranked.size, budget, sampling, seed)
    return SamplePlan(ranked[positions], positions, ranked)


def add_samples(
    store: BenchStore, records: Sequence[Mapping[str, Any]], plan: SamplePlan, outcomes: np.ndarray
) -> list[int]:
    """Register samples, store their observed outcomes on `plan.model_ids` [m', s] and estimate the other models."""
    _sample_outcomes(plan, len(records), outcomes)  # refused before anything is registered
    sample_ids = store.add_samples(records)
    write_sample_cells(store, sample_ids, plan, outcomes)
    return sample_ids


def write_sample_cells(store: BenchStore, sample_ids: Sequence[int], plan: SamplePlan, outcomes: np.ndarray) -> None:
    """Write registered samples' cells: every ranked model's estimated column, then the observed outcomes. Writing
    the same cells again changes nothing, so this also completes an `add_samples` killed after registering."""
    outcomes = _sample_outcomes(plan, len(sample_ids), outcomes)
    k = sample_thresholds(plan, outcomes)
    columns = (np.arange(plan.ranked_models.size)[:, None] < k[None, :]).astype(np.uint8)  # ranked models x samples
    store.write_rows(plan.ranked_models, sample_ids, columns, observed=False)
    store.write_rows(plan.model_ids, sample_ids, outcomes, observed=True)


def sample_thresholds(plan: SamplePlan, outcomes: np.ndarray) -> np.ndarray:
    """Each new sample's estimated difficulty k: how many of the ranked models (most accurate first) get it right,
    the DP threshold of its outcomes [m', s] on the planned models extrapolated to all of them."""
    outcomes = _sample_outcomes(plan, np.shape(outcomes)[-1] if np.ndim(outcomes) else 0, outcomes)
    return np.asarray(extrapolate(dp_threshold(outcomes.T), plan.positions, plan.ranked_models.size), np.int64)


def _sample_outcomes(plan: SamplePlan, samples: int, outcomes: np.ndarray) -> np.ndarray:
    """Outcomes [m', s] of the planned models on `samples` new samples as 0/1 uint8, or a ValueError."""
    outcomes = np.asarray(outcomes)
    if outcomes.ndim != 2 or outcomes.shape != (plan.model_ids.size, samples):
        raise ValueError(
            f"sample results must be [models, samples] = ({plan.model_ids.size}, {samples}); got {outcomes.shape}"
        )
    return _zero_one(outcomes, outcomes.shape[1], "sample results")


def _zero_one(values: np.ndarray, size: int, what: str) -> np.ndarray:
    """0/1 uint8 values of the expected size, or a clear error naming the first bad entry."""
    array = np.asarray(values)
    if array.ndim == 0 or array.shape[-1] != size:
        raise ValueError(f"{what}: expected {size} outcomes, got an array of shape {array.shape}")
    bad = ~np.isin(array, (0, 1))
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{what}: outcomes must be 0 or 1; entry {where} is {array[where]!r}")
    return array.astype(np.uint8)
