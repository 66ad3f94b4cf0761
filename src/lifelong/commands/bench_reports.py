"""What `lifelong bench experiment` and `lifelong bench beyond` run and print: plain-text tables (or JSON) on stdout."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.commands.terminal import note
from lifelong.core.suggest import did_you_mean
from lifelong.sortsearch.experiment import SORTS, load_confidence, load_matrix, matrix_size, run_experiment
from lifelong.sortsearch.intervals import interval_coverage
from lifelong.sortsearch.rankings import RANKING_METHODS, compare_rankings
from lifelong.sortsearch.samples_csv import read_samples_csv
from lifelong.sortsearch.search import SAMPLING_METHODS


def format_table(results: Sequence[dict[str, Any]]) -> str:
    """A plain-text table of experiment results (errors in %)."""
    head = f"{'budget':>8} {'error %':>8} {'agg err %':>9} {'kappa':>7} {'pearson':>8} {'aleat %':>8} {'epist %':>8}"
    lines = [head, "-" * len(head)]
    for r in results:
        lines.append(
            f"{r['budget']:>8} {100 * r['error']:>8.2f} {100 * r['aggregate_error']:>9.2f} {r['kappa']:>7.3f} "
            f"{r['pearson']:>8.3f} {100 * r['aleatoric']:>8.2f} {100 * r['epistemic']:>8.2f}"
        )
    return "\n".join(lines)


def parse_budgets(budgets: str | Sequence[int]) -> list[int]:
    """Budgets from a comma-separated string ("8,32,300"), a geometric run ("8,16,...,16384": each term the previous
    times b/a up to z, exactly), or a sequence of ints."""
    if not isinstance(budgets, str):
        return list(budgets)
    words = [w.strip() for w in budgets.split(",") if w.strip()]
    form = "comma-separated integers like 8,32,300, or a geometric run like 8,16,...,16384"
    try:
        if "..." not in words:
            return [int(w) for w in words]
        dots = words.index("...")
        head, tail = [int(w) for w in words[:dots]], [int(w) for w in words[dots + 1 :]]
    except ValueError:
        raise ValueError(f"budgets must be {form}; got {budgets!r}") from None
    if words.count("...") != 1 or len(head) < 2 or len(tail) != 1 or head[0] < 1:
        raise ValueError(f"budgets must be {form} (two or more terms, '...', the last term); got {budgets!r}")
    ratio, rest = divmod(head[1], head[0])
    if rest or ratio < 2 or any(b != head[0] * ratio**i for i, b in enumerate(head)):
        raise ValueError(f"budgets {budgets!r}: the terms before '...' must grow by a whole factor, as 8,16,... does")
    out = list(head)
    while out[-1] < tail[0]:
        out.append(out[-1] * ratio)
    if out[-1] != tail[0]:
        raise ValueError(
            f"budgets {budgets!r}: a geometric run must end on one of its terms, and {tail[0]} is not reached from "
            f"{head[0]} by factors of {ratio}"
        )
    return out


def experiment_command(
    rank_path: str | Path,
    eval_path: str | Path,
    budgets: str | Sequence[int],
    sort: str = "sum",
    sampling: str = "uniform",
    rank_confidence_path: str | Path | None = None,
    transpose: bool = False,
    as_json: bool = False,
) -> list[dict[str, Any]]:
    """`lifelong bench experiment`: load and validate the .npy matrices, run, print a table (or JSON), return rows."""
    if sort not in SORTS:
        raise ValueError(f"unknown --sort {sort!r}{did_you_mean(sort, SORTS)}; choose {', '.join(SORTS)}")
    if sampling not in SAMPLING_METHODS:
        choices = " or ".join(SAMPLING_METHODS)
        raise ValueError(f"unknown --sampling {sampling!r}{did_you_mean(sampling, SAMPLING_METHODS)}; choose {choices}")
    if sort == "confidence" and rank_confidence_path is None:
        raise ValueError(
            "--sort confidence needs --rank-confidence FILE: the ranking models' true-class probabilities "
            "(a .npy of the --rank matrix's shape, e.g. a zoo's confidence.npy)"
        )
    budget_list = parse_budgets(budgets)
    rank = load_matrix(rank_path)
    evaluate = load_matrix(eval_path)
    shared, axis = ("models", 0) if transpose else ("samples", 1)
    if rank.shape[axis] != evaluate.shape[axis]:
        raise ValueError(
            f"--rank {rank_path} has {rank.shape[axis]} {shared} but --eval {eval_path} has {evaluate.shape[axis]}: "
            f"{'with --transpose ' if transpose else ''}both matrices must cover the same {shared}"
        )
    confidence = load_confidence(rank_confidence_path) if rank_confidence_path is not None else None
    if confidence is not None and confidence.shape != rank.shape:
        raise ValueError(
            f"--rank-confidence {rank_confidence_path} is {matrix_size(confidence.shape)} but --rank is "
            f"{matrix_size(rank.shape)}: give one probability per cell of --rank"
        )
    results = run_experiment(
        rank,
        evaluate,
        budgets=budget_list,
        sort=sort,
        sampling=sampling,
        rank_confidence=confidence,
        transpose=transpose,
        validate=False,
    )
    if as_json:
        clean = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()} for r in results]
        print(json.dumps(clean, indent=2))
    else:
        what = "models inserted per sample (m')" if transpose else "samples evaluated per model (n')"
        print(f"Sort & Search experiment: sort {sort}, sampling {sampling}")
        print(f"rank:     {matrix_size(rank.shape)}")
        print(f"evaluate: {matrix_size(evaluate.shape)}")
        print(f"budget:   {what}")
        print(format_table(results))
    return results


def _domains_from_csv(path: str | Path, n: int) -> np.ndarray:
    """The domain label of every sample, from a samples CSV with a `domain` column (one row per matrix column)."""
    return np.asarray([row["domain"] for row in read_samples_csv(path, require=("domain",), n=n)])


def beyond_command(
    matrix_path: str | Path | None = None,
    samples_csv: str | Path | None = None,
    budgets: str | Sequence[int] = "1024,2048,4096",
    methods: str | Sequence[str] = RANKING_METHODS,
    split_seed: int = 0,
    confidence: float = 0.95,
    as_json: bool = False,
    *,
    rank_path: str | Path | None = None,
    eval_path: str | Path | None = None,
) -> dict[str, Any]:
    """`lifelong bench beyond`: ranking models and held-out models from a seeded half/half split of one matrix
    (`matrix_path`) or from two matrices over the same samples (`rank_path`, `eval_path`); interval coverage (uniform
    and random sampling) and ranking methods compared on the held-out models. Prints tables (or JSON), returns them."""
    if matrix_path is not None:
        if rank_path is not None or eval_path is not None:
            raise ValueError("give either one matrix (split half/half) or a ranking and a held-out matrix, not both")
        A = np.asarray(load_matrix(matrix_path))
        perm = np.random.default_rng(split_seed).permutation(A.shape[0])
        rank_ids, eval_ids = np.sort(perm[: A.shape[0] // 2]), np.sort(perm[A.shape[0] // 2 :])
        where = f"{matrix_path}: {matrix_size(A.shape)}, split with seed {split_seed}"
    elif rank_path is not None and eval_path is not None:
        rank, held = np.asarray(load_matrix(rank_path)), np.asarray(load_matrix(eval_path))
        if rank.shape[1] != held.shape[1]:
            raise ValueError(
                f"{rank_path} has {rank.shape[1]} samples (columns) but {eval_path} has {held.shape[1]}: "
                "both matrices must cover the same samples in the same order"
            )
        A = np.concatenate([rank, held])
        rank_ids, eval_ids = np.arange(rank.shape[0]), np.arange(rank.shape[0], A.shape[0])
        where = f"ranking {rank_path}: {matrix_size(rank.shape)}\nheld-out {eval_path}: {matrix_size(held.shape)}"
    else:
        raise ValueError("give a matrix to split (matrix_path), or both rank_path and eval_path")
    if rank_ids.size == 0 or eval_ids.size == 0:
        raise ValueError(f"need at least one ranking and one held-out model; got {rank_ids.size} and {eval_ids.size}")
    budget_list = parse_budgets(budgets)
    bad = [b for b in budget_list if not 1 <= b <= A.shape[1]]
    if not budget_list or bad:
        raise ValueError(
            f"budgets {', '.join(map(str, bad or budget_list))} must be integers in 1..{A.shape[1]} (the samples)"
        )
    method_list = [m.strip() for m in methods.split(",")] if isinstance(methods, str) else list(methods)
    domains = _domains_from_csv(samples_csv, A.shape[1]) if samples_csv is not None else None
    if domains is None:  # the domain-aware methods need a samples CSV
        method_list = [m for m in method_list if "domain" not in m]
    too_few = [m for m in method_list if _clusters(m) > rank_ids.size]
    if too_few:  # k-means needs at least k ranking models
        note(f"{', '.join(too_few)} left out: they need more than the {rank_ids.size} ranking models")
        method_list = [m for m in method_list if m not in too_few]
    coverage = [
        row
        for sampling in ("uniform", "random")
        for row in interval_coverage(
            A[rank_ids], A[eval_ids], budget_list, confidences=(confidence,), sampling=sampling, seed=split_seed
        )
    ]
    rankings = compare_rankings(A, rank_ids, eval_ids, budget_list, methods=method_list, domains=domains)
    result = {"shape": list(A.shape), "split_seed": split_seed, "coverage": coverage, "rankings": rankings}
    if as_json:
        print(json.dumps(result, indent=2, default=lambda v: None))
    else:
        print(where)
        print(f"{len(rank_ids)} ranking models, {len(eval_ids)} held-out models")
        print(format_coverage(coverage))
        print(format_rankings(rankings))
    return result


def _clusters(method: str) -> int:
    """The K of a clusterK or clusterK+domain ranking method, 0 for the others."""
    digits = method.removeprefix("cluster").removesuffix("+domain")
    return int(digits) if method.startswith("cluster") and digits.isdigit() else 0


def format_coverage(rows: Sequence[dict[str, Any]]) -> str:
    """Coverage rows (counts may be summed over repeated splits by the caller) as a table, in %."""
    levels = sorted({key.split("@")[1] for r in rows for key in r if key.startswith("hits@")}, key=float)
    head = f"{'budget':>7} {'sampling':>8} {'method':>10} {'models':>6}"
    head += "".join(f" {'cov@' + c:>8} {'width@' + c:>10}" for c in levels)
    head += f" {'|k/n-a|':>8} {'|est-a|':>8}"
    lines = [head, "-" * len(head)]
    for r in rows:
        cells = "".join(f" {100 * r['hits@' + c] / r['models']:>8.1f} {100 * r['width@' + c]:>10.2f}" for c in levels)
        lines.append(
            f"{r['budget']:>7} {r.get('sampling', 'uniform'):>8} {r['method']:>10} {r['models']:>6}{cells}"
            f" {100 * r['mae_point']:>8.2f} {100 * r['mae_estimate']:>8.2f}"
        )
    return "\n".join(lines)


def format_rankings(rows: Sequence[dict[str, Any]]) -> str:
    """Ranking comparison rows as a table (errors in %)."""
    head = f"{'budget':>7} {'method':>10} {'error %':>8} {'kappa':>7} {'agg err %':>9} {'pearson':>8} {'agg+res %':>9}"
    head += f" {'fit s':>6}"
    lines = [head, "-" * len(head)]
    for r in sorted(
        rows,
        key=lambda r: (
            r["budget"],
            RANKING_METHODS.index(r["method"]) if r["method"] in RANKING_METHODS else 99,
            r["method"],
        ),
    ):
        lines.append(
            f"{r['budget']:>7} {r['method']:>10} {100 * r['error']:>8.2f} {r['kappa']:>7.3f} "
            f"{100 * r['aggregate_error']:>9.2f} {r['pearson']:>8.4f} {100 * r['corrected_aggregate_error']:>9.2f}"
            f" {r['fit_s']:>6.2f}"
        )
    return "\n".join(lines)
