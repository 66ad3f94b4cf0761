"""`lifelong bench plan-model` / `add-model` from Python: evaluate a new model on n' planned samples and add it
with every other cell estimated (the paper's insert_M), or add a fully evaluated row. Nothing here prints
(`bench_console` renders the results as the commands print them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from lifelong.commands.bench_inputs import _open, _read_results, _some, at_least, toolkit_errors
from lifelong.core.errors import UsageError

if TYPE_CHECKING:
    from lifelong.sortsearch.best_estimates import Accuracy


@dataclass(frozen=True)
class BenchPlanModelSpec:
    """`lifelong bench plan-model STORE --budget N`: the n' samples a new model must be evaluated on, by the
    toolkit's estimator's plan (`sampling` lifelong) or Sort & Search's (uniform over the sort, or random with
    `seed`)."""

    store: str | Path
    budget: int
    sampling: str = "lifelong"
    seed: int = 0


def bench_plan_model(spec: BenchPlanModelSpec) -> list[int]:
    """The planned sample ids, in plan order (the order add-model reads a .npy of outcomes in)."""
    from lifelong.sortsearch.insert import plan_model

    at_least(spec.budget, 1, "--budget")
    at_least(spec.seed, 0, "--seed")
    with toolkit_errors(), _open(Path(spec.store)) as bench:
        plan = plan_model(bench, spec.budget, sampling=spec.sampling, seed=spec.seed)
    return [int(i) for i in plan.sample_ids.tolist()]


@dataclass(frozen=True)
class BenchAddModelSpec:
    """`lifelong bench add-model STORE --name NAME --results FILE`: a model from its outcomes (a CSV sample_id,correct
    or a 1-D .npy) on the planned samples (of `budget`, `sampling`, `seed`: the plan used) or on all samples."""

    store: str | Path
    name: str
    results: str | Path
    budget: int | None = None
    sampling: str = "lifelong"
    seed: int = 0


@dataclass(frozen=True)
class BenchAddModelResult:
    """The model added: its id, `observed` of the store's `samples` evaluated (`full`: all of them), and its accuracy
    (an estimate with its `confidence`-level interval unless full)."""

    name: str
    model_id: int
    observed: int
    samples: int
    full: bool
    accuracy: Accuracy
    confidence: float


def bench_add_model(spec: BenchAddModelSpec) -> BenchAddModelResult:
    """Add the model: a full row as facts, or the planned outcomes with every other cell estimated."""
    from lifelong.sortsearch.insert import add_full_model, add_model, plan_model
    from lifelong.sortsearch.intervals import STORE_CONFIDENCE

    at_least(spec.budget, 1, "--budget")
    at_least(spec.seed, 0, "--seed")
    store, results, budget, name = Path(spec.store), Path(spec.results), spec.budget, spec.name
    with toolkit_errors(), _open(store) as bench:
        ids, outcomes = _read_results(results)
        n = bench.size()[0]
        if n == 0:
            raise UsageError(f"{store} has no samples yet: add samples before models")
        full = ids is not None and ids.size == n and np.array_equal(np.sort(ids), np.arange(n))
        full = full or (ids is None and budget is None)  # a .npy without --budget is a full row
        if full:
            if outcomes.size != n:
                raise UsageError(
                    f"{results} holds {outcomes.size} outcomes but {store} has {n} samples: a .npy without --budget "
                    f"is a full row ({n} outcomes); for outcomes on the planned samples (in `lifelong bench "
                    f"plan-model` order) pass --budget {outcomes.size}"
                )
            if ids is not None:
                outcomes = outcomes[np.argsort(ids)]
            model_id = add_full_model(bench, name, outcomes)
        else:
            planned = budget if budget is not None else outcomes.size
            if outcomes.size != planned:
                raise UsageError(f"{results} holds {outcomes.size} outcomes but --budget {planned} planned that many")
            plan = plan_model(bench, planned, sampling=spec.sampling, seed=spec.seed)
            if ids is not None:
                lookup = dict(zip(ids.tolist(), outcomes.tolist(), strict=True))
                missing = [i for i in plan.sample_ids.tolist() if i not in lookup]
                extra = sorted(set(lookup) - set(plan.sample_ids.tolist()))
                if missing or extra:
                    raise UsageError(
                        f"{results} must hold exactly the {plan.sample_ids.size} planned sample ids (`lifelong bench "
                        f"plan-model {store} --budget {plan.sample_ids.size}`, same --sampling and --seed) or all {n}; "
                        f"missing e.g. {_some(missing)}; not planned e.g. {_some(extra)}"
                    )
                outcomes = np.array([lookup[i] for i in plan.sample_ids.tolist()])
            model_id, _ = add_model(bench, name, plan, outcomes)
        accuracy = bench.accuracies([model_id])[model_id]
    observed = n if full else int(outcomes.size)
    return BenchAddModelResult(name, int(model_id), observed, n, full, accuracy, STORE_CONFIDENCE)
