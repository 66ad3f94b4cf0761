"""`lifelong bench compare`: accuracy estimators from few samples, side by side on the same draws.

Two modes. With `--rank RANK.npy --eval EVAL.npy --budget N --seed S`, every method is fitted on RANK's rows
(the source models) and estimates each EVAL row's accuracy from its outcomes on the method's N samples; EVAL's
full rows give the truth. With `--zoo DIR` (or `--matrix`, `--models`, `--samples`), the protocol: the zoo's
models split into sources and targets (interpolation, extrapolation, shift), `--seeds` seeds each, every budget
and method; records go to OUT/records.jsonl as they finish (`--resume` continues), the table to OUT/table.json.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import typer

from lifelong.commands.terminal import console, fail, note

_DEFAULT_BUDGETS = "10,30,100,1000"


def _methods(text: str | None) -> list[str]:
    from lifelong.core.suggest import did_you_mean
    from lifelong.sortsearch.estimators.base import estimator_names

    known = estimator_names()
    if not text or text == "all":
        return sorted(known, key=lambda name: (name != "random-mean", name))
    names = [w.strip() for w in text.split(",") if w.strip()]
    for name in names:
        if name not in known:
            raise ValueError(f"unknown method {name!r}{did_you_mean(name, known)}; the methods: {', '.join(known)}")
    return names


def single_run(rank: Path, evaluate: Path, budget: int, seed: int, methods: list[str], as_json: bool) -> None:
    """Every method fitted on RANK, estimating EVAL's rows at one budget and seed."""
    from lifelong.sortsearch.estimators.protocol import Split, run_one
    from lifelong.sortsearch.experiment import load_matrix, matrix_size

    source, target = load_matrix(rank), load_matrix(evaluate)
    if source.shape[1] != target.shape[1]:
        raise ValueError(
            f"--rank holds {matrix_size(source.shape)} but --eval {matrix_size(target.shape)}: the same samples "
            "(columns) are needed"
        )
    matrix = np.concatenate([np.asarray(source), np.asarray(target)]).astype(np.uint8, copy=False)
    m = source.shape[0]
    split = Split("given", int(seed), np.arange(m), np.arange(m, matrix.shape[0]))
    out: dict[str, Any] = {"budget": int(budget), "seed": int(seed), "methods": {}}
    for method in methods:
        record = run_one(matrix, split, int(budget), method)
        out["methods"][method] = {
            "estimates": record.estimate,
            "low": record.low,
            "high": record.high,
            "mae": float(np.mean(np.abs(np.subtract(record.estimate, record.truth)))),
            "seconds": record.seconds,
            "peak_mib": record.peak_mib,
        }
        out["truth"] = record.truth
    if as_json:
        print(json.dumps(out))
        return
    console.print(f"{target.shape[0]} models estimated from {budget} samples each, fitted on {m} models (seed {seed})")
    console.print(f"{'method':<16} {'mean abs error %':>17} {'seconds':>9}")
    for method, row in out["methods"].items():
        console.print(f"{method:<16} {100 * row['mae']:>17.2f} {row['seconds']:>9.3f}")


def _zoo_inputs(zoo: Path | None, matrix: Path | None, models: Path | None, samples: Path | None):
    if zoo is not None:
        matrix, models, samples = zoo / "correctness.npy", zoo / "models.csv", zoo / "samples.csv"
    if matrix is None:
        raise ValueError("give --zoo DIR, or --matrix FILE (with --models and --samples for the shift split)")
    return matrix, models, samples


def _column(path: Path | None, column: str, rows: int, what: str) -> list[str] | None:
    if path is None or not path.exists():
        return None
    with path.open(newline="") as handle:
        table = list(csv.DictReader(handle))
    if table and column not in table[0]:
        raise ValueError(f"{path} has no column {column!r} ({what}); its columns: {', '.join(table[0])}")
    if len(table) != rows:
        raise ValueError(f"{path} lists {len(table)} rows; the matrix has {rows}")
    return [row[column] for row in table]


def protocol_run(
    inputs: tuple[Path, Path | None, Path | None],
    splits: list[str],
    seeds: int,
    budgets: list[int],
    methods: list[str],
    family: str,
    out: Path,
    resume: bool,
    as_json: bool,
) -> None:
    from lifelong.commands.bench_compare_table import table_lines
    from lifelong.sortsearch.estimators.protocol import make_splits, run_comparison
    from lifelong.sortsearch.estimators.scoring import paired, summarize
    from lifelong.sortsearch.experiment import load_matrix

    matrix_path, models_path, samples_path = inputs
    matrix = np.ascontiguousarray(load_matrix(matrix_path))
    families = _column(models_path, family, matrix.shape[0], "the model family of the shift split")
    domains = _column(samples_path, "domain", matrix.shape[1], "each sample's domain")
    groups = None if domains is None else np.unique(domains, return_inverse=True)[1]
    if "shift" in splits and families is None:
        raise ValueError("the shift split needs --models (or --zoo) with each model's family column")
    if min(budgets) < 1 or max(budgets) > matrix.shape[1]:
        raise ValueError(f"budgets must lie between 1 and the {matrix.shape[1]} samples")
    all_splits = make_splits(matrix.mean(axis=1), splits, seeds, families)
    out.mkdir(parents=True, exist_ok=True)
    total = len(all_splits) * len(budgets) * len(methods)
    done = [0]

    def progress(record: Any) -> None:
        done[0] += 1
        if not as_json:
            console.print(
                f"[{done[0]}/{total}] {record.split} seed {record.seed} n'={record.budget} {record.method}: "
                f"mean abs error {100 * np.mean(np.abs(np.subtract(record.estimate, record.truth))):.2f}%"
            )

    records = run_comparison(
        matrix, all_splits, budgets, methods, out / "records.jsonl", resume=resume, groups=groups, on_record=progress
    )
    rows = summarize(records)
    versus = paired(records, "lifelong") if "lifelong" in methods else []
    (out / "table.json").write_text(json.dumps({"rows": rows, "paired": versus}, indent=1))
    if as_json:
        print(json.dumps({"rows": rows, "paired": versus}))
        return
    for line in table_lines(rows, versus):
        console.print(line, highlight=False, soft_wrap=True)
    note(f"records in {out / 'records.jsonl'}, the table in {out / 'table.json'}")


def compare(
    rank: Path = typer.Option(None, "--rank", metavar="FILE", help="Source models' matrix .npy (uint8 0/1)."),
    evaluate: Path = typer.Option(None, "--eval", metavar="FILE", help="Target models' matrix .npy (same samples)."),
    budget: int = typer.Option(100, "--budget", min=1, metavar="N", help="Samples each target is evaluated on."),
    seed: int = typer.Option(0, "--seed", min=0, metavar="S", help="Seed of the random draws."),
    zoo: Path = typer.Option(None, "--zoo", metavar="DIR", help="A zoo folder (`bench build-zoo`): the protocol."),
    matrix: Path = typer.Option(None, "--matrix", metavar="FILE", help="The protocol on this matrix .npy."),
    models: Path = typer.Option(None, "--models", metavar="FILE", help="models.csv (families, for --splits shift)."),
    samples: Path = typer.Option(None, "--samples", metavar="FILE", help="samples.csv (each sample's domain)."),
    splits: str = typer.Option(
        "interpolation,extrapolation,shift", "--splits", metavar="LIST", help="Splits of the models, comma-separated."
    ),
    seeds: int = typer.Option(10, "--seeds", min=1, metavar="N", help="Seeds per split."),
    budgets: str = typer.Option(_DEFAULT_BUDGETS, "--budgets", metavar="LIST", help="Budgets of the protocol."),
    methods: str = typer.Option(None, "--methods", metavar="LIST", help="Methods (default: every registered one)."),
    family: str = typer.Option("architecture", "--family", metavar="COLUMN", help="models.csv column of families."),
    out: Path = typer.Option(None, "--out", metavar="DIR", help="Output folder of the protocol."),
    resume: bool = typer.Option(False, "--resume", help="Continue the comparison in --out."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Delete the comparison in --out and start again."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Compare estimators of a model's accuracy from few samples: on --rank/--eval, or the protocol on a zoo."""
    from lifelong.commands.bench_reports import parse_budgets

    try:
        names = _methods(methods)
        if rank is not None or evaluate is not None:
            if rank is None or evaluate is None:
                raise ValueError("--rank and --eval go together")
            single_run(rank, evaluate, budget, seed, names, as_json)
            return
        if out is None:
            raise ValueError("the protocol (--zoo or --matrix) writes its records and table to --out DIR")
        if resume and overwrite:
            raise ValueError("--resume and --overwrite exclude each other: give one of them")
        if (out / "records.jsonl").exists() and not (resume or overwrite):
            raise ValueError(f"{out} holds a comparison: --resume continues it, --overwrite starts again")
        split_names = [w.strip() for w in splits.split(",") if w.strip()]
        inputs = _zoo_inputs(zoo, matrix, models, samples)
        protocol_run(inputs, split_names, seeds, parse_budgets(budgets), names, family, out, resume, as_json)
    except (FileNotFoundError, ValueError, TypeError) as exc:
        raise fail(exc) from None
