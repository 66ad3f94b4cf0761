"""A growing benchmark simulated on a full matrix, to compare re-sort policies (`simulate_growth`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from lifelong.sortsearch.rankings import score_rows
from lifelong.sortsearch.resort import ResortPolicy, ResortStats, fit_score, should_resort
from lifelong.sortsearch.search import dp_threshold, extrapolate, sample_positions
from lifelong.sortsearch.sort import descending_order, model_order


def simulate_growth(
    A: Any,
    domains: Any,
    policy: ResortPolicy | str,
    *,
    initial_domains: int = 4,
    domains_per_step: int = 1,
    initial_ranking: int = 10,
    probe_models: int = 30,
    budget: int = 256,
    sample_budget: int = 8,
    promote: bool = True,
    seed: int = 0,
) -> dict[str, Any]:
    """Grow a benchmark from the full matrix A [models, samples] and compare re-sort policies on it.

    Models are shuffled (seeded): `probe_models` are held out to measure estimation error after every step (never
    ranking, their evaluations not counted), `initial_ranking` start as fully evaluated ranking models, the rest
    arrive evenly over the steps. Samples arrive by whole domains (in order of first appearance): the first
    `initial_domains` at start, then `domains_per_step` per step. A step: (1) new samples are evaluated on
    `sample_budget` ranking models (most accurate first) and placed in the order by their estimated number of
    ranking models that get them right (the DP threshold over the models), (2) arriving models are evaluated on
    `budget` uniform positions and estimated, their fit recorded, (3) the policy decides ("never", "always" or a
    ResortPolicy); a re-sort evaluates the ranking models on every sample and (with `promote`) promotes the models
    added since the last sort to ranking models (fully evaluated), then sorts by exact sums, (4) the probes are
    estimated.
    Costs count evaluated cells beyond the initial ranking block.
    """
    A = np.asarray(A)
    M = A.shape[0]
    labels = np.asarray(domains)
    _, first = np.unique(labels, return_index=True)
    domain_seq = labels[np.sort(first)]
    blocks = [
        np.flatnonzero(np.isin(labels, domain_seq[i : i + domains_per_step]))
        for i in range(initial_domains, domain_seq.size, domains_per_step)
    ]
    cols = np.flatnonzero(np.isin(labels, domain_seq[:initial_domains]))
    perm = np.random.default_rng(seed).permutation(M)
    probes = perm[:probe_models]
    ranking = list(perm[probe_models : probe_models + initial_ranking])
    stream = perm[probe_models + initial_ranking :]
    if not blocks or stream.size == 0 or len(ranking) < 2:
        raise ValueError("nothing to grow: need domains beyond the initial ones, arriving models and 2 ranking models")
    per_step = np.array_split(stream, len(blocks))
    evaluated = np.zeros(A.shape, bool)
    evaluated[np.ix_(ranking, cols)] = True
    base_cells = int(evaluated.sum())

    def resort() -> np.ndarray:
        evaluated[np.ix_(ranking, cols)] = True
        return A[np.ix_(ranking, cols)].sum(axis=0, dtype=np.int64)

    keys = resort()
    n_sorted, ranking_at_sort, fits, resorts, steps = cols.size, len(ranking), [], 0, []
    added_models: list[int] = []
    insertion_errors: list[float] = []
    for step, (block, arrivals) in enumerate(zip(blocks, per_step, strict=True)):
        # (1) samples: estimated key = DP threshold over the ranking models, most accurate first
        rank_arr = np.asarray(ranking)
        ranked_models = rank_arr[model_order(A[np.ix_(rank_arr, cols)].mean(axis=1))]
        mpos = sample_positions(ranked_models.size, min(sample_budget, ranked_models.size))
        chosen = ranked_models[mpos]
        evaluated[np.ix_(chosen, block)] = True
        new_keys = extrapolate(dp_threshold(A[np.ix_(chosen, block)].T), mpos, ranked_models.size)
        cols = np.concatenate([cols, block])
        keys = np.concatenate([keys, new_keys])
        order = descending_order(keys).astype(np.int64)
        n_now = cols.size
        pos = sample_positions(n_now, budget)
        # (2) arriving models, estimated on the current order
        for model in arrivals:
            outcomes = A[model, cols[order[pos]]]
            evaluated[model, cols[order[pos]]] = True
            k = int(extrapolate(dp_threshold(outcomes[None, :]), pos, n_now)[0])
            truth = A[model, cols[order]]
            insertion_errors.append(float((truth != (np.arange(n_now) < k)).mean()))
            fits.append(float(fit_score(outcomes)[0]))
            added_models.append(int(model))
        # (3) the policy
        if policy == "always":
            do, why = True, "every step"
        elif policy == "never":
            do, why = False, "never"
        else:
            stats = ResortStats.from_fits(n_sorted, n_now, ranking_at_sort, fits, policy.window)
            do, why = should_resort(stats, policy)
        if do:
            if promote:
                ranking.extend(added_models)
            keys = resort()
            order = descending_order(keys).astype(np.int64)
            n_sorted, ranking_at_sort, fits, added_models, resorts = n_now, len(ranking), [], [], resorts + 1
        # (4) probes on the current order
        sampled = A[np.ix_(probes, cols[order[pos]])]
        k = extrapolate(dp_threshold(sampled), pos, n_now)
        truth = A[np.ix_(probes, cols[order])]
        pred = (np.arange(n_now)[None, :] < k[:, None]).astype(np.uint8)
        scores = score_rows(truth, pred)
        steps.append({"step": step, "n": n_now, "ranking": len(ranking), "resort": bool(do), "reason": why, **scores})
    return {
        "policy": policy if isinstance(policy, str) else "policy",
        "resorts": resorts,
        "extra_cells": int(evaluated.sum()) - base_cells,
        "full_cells": int(A.size) - base_cells,
        "mean_error": float(np.mean([s["error"] for s in steps])),
        "mean_aggregate_error": float(np.mean([s["aggregate_error"] for s in steps])),
        "mean_kappa": float(np.mean([s["kappa"] for s in steps])),
        "final_error": steps[-1]["error"],
        "insertion_error": float(np.mean(insertion_errors)),
        "steps": steps,
    }
