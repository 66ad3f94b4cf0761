"""What `lifelong bench experiment` and `lifelong bench beyond` print: plain-text tables (or JSON) on stdout, from the
results of `bench_experiments.bench_experiment` / `bench_beyond`."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lifelong.commands.bench_experiments import (
    BenchBeyondResult,
    BenchBeyondSpec,
    BenchExperimentResult,
    BenchExperimentSpec,
    bench_beyond,
    bench_experiment,
)
from lifelong.commands.terminal import note


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


def print_experiment(result: BenchExperimentResult, as_json: bool = False) -> None:
    """The experiment's rows as a table under a header naming the inputs, or as JSON (NaN as null)."""
    from lifelong.sortsearch.experiment import matrix_size

    if as_json:
        clean = [
            {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()} for r in result.rows
        ]
        print(json.dumps(clean, indent=2))
        return
    what = "models inserted per sample (m')" if result.transpose else "samples evaluated per model (n')"
    print(f"Sort & Search experiment: sort {result.sort}, sampling {result.sampling}")
    print(f"rank:     {matrix_size(result.rank_shape)}")
    print(f"evaluate: {matrix_size(result.eval_shape)}")
    print(f"budget:   {what}")
    print(format_table(result.rows))


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
    """`lifelong bench experiment` as the command runs it: the experiment, printed as a table (or JSON); its rows."""
    spec = BenchExperimentSpec(rank_path, eval_path, budgets, sort, sampling, rank_confidence_path, transpose)
    result = bench_experiment(spec)
    print_experiment(result, as_json)
    return result.rows


def print_beyond(result: BenchBeyondResult, as_json: bool = False) -> None:
    """The inputs, then the coverage and ranking tables (or JSON); a note names the methods left out."""
    from lifelong.sortsearch.experiment import matrix_size

    if result.left_out:
        note(f"{', '.join(result.left_out)} left out: they need more than the {result.ranking_models} ranking models")
    if as_json:
        print(json.dumps(result.as_dict(), indent=2, default=lambda v: None))
        return
    if result.matrix is not None:
        print(f"{result.matrix}: {matrix_size(result.shape)}, split with seed {result.split_seed}")
    else:
        print(f"ranking {result.rank}: {matrix_size(result.rank_shape)}")
        print(f"held-out {result.evaluate}: {matrix_size(result.eval_shape)}")
    print(f"{result.ranking_models} ranking models, {result.held_out_models} held-out models")
    print(format_coverage(result.coverage))
    print(format_rankings(result.rankings))


def beyond_command(
    matrix_path: str | Path | None = None,
    samples_csv: str | Path | None = None,
    budgets: str | Sequence[int] = "1024,2048,4096",
    methods: str | Sequence[str] | None = None,
    split_seed: int = 0,
    confidence: float = 0.95,
    as_json: bool = False,
    *,
    rank_path: str | Path | None = None,
    eval_path: str | Path | None = None,
) -> dict[str, Any]:
    """`lifelong bench beyond` as the command runs it: the comparison, printed as tables (or JSON); the tables."""
    spec = BenchBeyondSpec(matrix_path, rank_path, eval_path, samples_csv, budgets, split_seed, methods, confidence)
    result = bench_beyond(spec)
    print_beyond(result, as_json)
    return result.as_dict()


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
    from lifelong.sortsearch.rankings import RANKING_METHODS

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
