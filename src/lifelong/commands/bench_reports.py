"""What `lifelong bench experiment` and `lifelong bench beyond` run and print: plain-text tables (or JSON) on stdout."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.sortsearch.experiment import load_confidence, load_matrix, run_experiment
from lifelong.sortsearch.intervals import interval_coverage
from lifelong.sortsearch.rankings import RANKING_METHODS, compare_rankings


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


def _parse_budgets(budgets: str | Sequence[int]) -> list[int]:
    """Budgets from a comma-separated string ("8,16,32") or a sequence of ints."""
    if isinstance(budgets, str):
        try:
            return [int(b) for b in budgets.replace(" ", "").split(",") if b]
        except ValueError as err:
            raise ValueError(f"budgets must be comma-separated integers like 8,16,32; got {budgets!r}") from err
    return list(budgets)


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
    rank = load_matrix(rank_path)
    evaluate = load_matrix(eval_path)
    confidence = load_confidence(rank_confidence_path) if rank_confidence_path is not None else None
    results = run_experiment(
        rank,
        evaluate,
        budgets=_parse_budgets(budgets),
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
        what = "models (m')" if transpose else "samples (n')"
        print(f"Sort & Search: rank {rank.shape}, evaluate {evaluate.shape}, sort={sort}, sampling={sampling}, {what}")
        print(format_table(results))
    return results


def _domains_from_csv(path: str | Path, n: int) -> np.ndarray:
    """The domain label of every sample, from a samples.csv with a `domain` column (one row per matrix column)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such samples CSV")
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        if "domain" not in (reader.fieldnames or []):
            raise ValueError(f"{path} has no `domain` column (columns: {reader.fieldnames})")
        labels = [row["domain"] for row in reader]
    if len(labels) != n:
        raise ValueError(f"{path}: {len(labels)} samples listed but the matrix has {n} columns")
    return np.asarray(labels)


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
        where = f"matrix {A.shape}, split seed {split_seed}"
    elif rank_path is not None and eval_path is not None:
        rank, held = np.asarray(load_matrix(rank_path)), np.asarray(load_matrix(eval_path))
        if rank.shape[1] != held.shape[1]:
            raise ValueError(
                f"{rank_path} has {rank.shape[1]} samples (columns) but {eval_path} has {held.shape[1]}: "
                "both matrices must cover the same samples in the same order"
            )
        A = np.concatenate([rank, held])
        rank_ids, eval_ids = np.arange(rank.shape[0]), np.arange(rank.shape[0], A.shape[0])
        where = f"rank {rank.shape} from {rank_path}, held-out {held.shape} from {eval_path}"
    else:
        raise ValueError("give a matrix to split (matrix_path), or both rank_path and eval_path")
    if rank_ids.size == 0 or eval_ids.size == 0:
        raise ValueError(f"need at least one ranking and one held-out model; got {rank_ids.size} and {eval_ids.size}")
    budget_list = _parse_budgets(budgets)
    bad = [b for b in budget_list if not 1 <= b <= A.shape[1]]
    if not budget_list or bad:
        raise ValueError(f"budgets {bad or budget_list} must be integers in [1, {A.shape[1]}] (the samples)")
    method_list = [m.strip() for m in methods.split(",")] if isinstance(methods, str) else list(methods)
    domains = _domains_from_csv(samples_csv, A.shape[1]) if samples_csv is not None else None
    if domains is None:  # the domain-aware methods need a samples CSV
        method_list = [m for m in method_list if "domain" not in m]
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
        print(f"{where}: {len(rank_ids)} ranking / {len(eval_ids)} held-out models")
        print(format_coverage(coverage))
        print(format_rankings(rankings))
    return result


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
