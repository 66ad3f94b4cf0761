"""`lifelong bench ...`: keep a growing samples x models benchmark and evaluate new models at a fraction of the cost."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.markup import escape
from rich.table import Table

from lifelong.commands.device_options import (
    ChannelsLastOption,
    CompileOption,
    DeviceOption,
    GpusPerTrialOption,
    PrecisionOption,
)
from lifelong.commands.terminal import console, error_console, fail, note
from lifelong.sortsearch.registry import SAMPLE_FIELDS

bench_app = typer.Typer(
    help="Lifelong benchmarks: a growing samples x models store with Sort & Search.", no_args_is_help=True
)


def _open(store: Path):
    """The store at `store`, or a one-line error (exit 2) when there is none or it cannot be read."""
    from lifelong.sortsearch.store import BenchStore

    if not store.exists():
        raise fail(f"no benchmark store at {store}; create one with `lifelong bench create {store}`")
    try:
        return BenchStore.open(store)
    except (FileNotFoundError, NotADirectoryError, ValueError) as exc:
        raise fail(f"{store} is not a readable benchmark store: {exc}") from None


def _csv_rows(path: Path, columns: tuple[str, ...], what: str) -> list[dict[str, str]]:
    """The rows of a CSV file that must have `columns`, or a ValueError naming the file and what it lacks."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            header = reader.fieldnames or []
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"{path}: not a readable CSV file ({exc}); {what}") from None
    missing = [c for c in columns if c not in header]
    if missing or not rows:
        lacks = f"lacks the column(s) {missing}" if missing else "has no data rows"
        raise ValueError(f"{path} {lacks}: {what}")
    return rows


def _read_samples_csv(path: Path) -> list[dict]:
    """Sample records (source, domain, label, content_hash) from a CSV with those columns."""
    what = f"a samples CSV needs a header with columns {list(SAMPLE_FIELDS)} and one row per sample"
    return [{k: row[k] for k in SAMPLE_FIELDS} for row in _csv_rows(path, SAMPLE_FIELDS, what)]


def _int_cell(path: Path, line: int, column: str, text: str | None, allowed: tuple[int, ...] | None = None) -> int:
    """An integer cell of a CSV file, or a ValueError naming the file, the line and the column."""
    try:
        value = int(str(text).strip())
    except ValueError:
        value = None
    if value is None or (allowed is not None and value not in allowed):
        expected = f"one of {list(allowed)}" if allowed is not None else "an integer"
        raise ValueError(f"{path}, line {line}: {column} is {text!r}; expected {expected}") from None
    return value


def _read_results(path: Path) -> tuple[np.ndarray | None, np.ndarray]:
    """(sample ids or None, 0/1 outcomes) from a 1-D .npy of outcomes or a CSV with columns sample_id, correct."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such results file")
    if path.suffix == ".npy":
        try:
            outcomes = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise ValueError(f"{path}: not a readable .npy array ({exc})") from None
        if outcomes.ndim != 1:
            raise ValueError(
                f"{path} holds an array of shape {outcomes.shape}; --results needs ONE model's outcomes: a 1-D array "
                "of 0/1 (the full row, or the planned samples' outcomes with --budget)"
            )
        if outcomes.dtype != np.bool_ and not np.issubdtype(outcomes.dtype, np.integer):
            raise ValueError(f"{path} holds {outcomes.dtype} values; outcomes are integers 0 (wrong) or 1 (correct)")
        bad = np.flatnonzero(~np.isin(outcomes, (0, 1)))
        if bad.size:
            raise ValueError(f"{path}: entry {int(bad[0])} is {outcomes[bad[0]]!r}; outcomes must be 0 or 1")
        return None, outcomes.astype(np.uint8)
    what = "a results CSV needs columns sample_id, correct (0 or 1), one row per evaluated sample"
    rows = _csv_rows(path, ("sample_id", "correct"), what)
    ids = np.array([_int_cell(path, i + 2, "sample_id", r["sample_id"]) for i, r in enumerate(rows)], np.int64)
    outcomes = np.array([_int_cell(path, i + 2, "correct", r["correct"], (0, 1)) for i, r in enumerate(rows)])
    unique, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise ValueError(f"{path} lists sample_id {int(unique[counts > 1][0])} more than once: give each sample once")
    return ids, outcomes.astype(np.uint8)


@bench_app.command("create")
def create(store: Path = typer.Argument(..., help="Folder for the new store.")) -> None:
    """Create an empty benchmark store."""
    from lifelong.sortsearch.store import BenchStore

    try:
        BenchStore.create(store)
    except (FileExistsError, ValueError, OSError) as exc:
        raise fail(exc) from None
    console.print(f"created {store} (empty: add samples and models, e.g. with `lifelong bench import`)")


@bench_app.command("import")
def import_matrix(
    store: Path = typer.Argument(..., help="Store to create (a new path, or an empty store)."),
    matrix: Path = typer.Option(..., "--matrix", help="Dense uint8 0/1 .npy [models, samples] (e.g. a zoo's)."),
    samples: Path = typer.Option(..., "--samples", help="samples.csv: source, domain, label, content_hash."),
    models: Path = typer.Option(None, "--models", help="models.csv with a `name` column (default: model-<i>)."),
) -> None:
    """Create a store from a fully observed matrix (every cell a fact), e.g. the output of `bench build-zoo`.

    The store is built beside STORE and renamed into place at the end: an interrupted import leaves no store.
    """
    from lifelong.sortsearch.experiment import load_matrix
    from lifelong.sortsearch.store import BenchStore

    try:
        dense = load_matrix(matrix)
        records = _read_samples_csv(samples)
        if len(records) != dense.shape[1]:
            raise ValueError(f"{samples} lists {len(records)} samples but {matrix} has {dense.shape[1]} columns")
        names = [f"model-{i}" for i in range(dense.shape[0])]
        if models is not None:
            rows = _csv_rows(models, ("name",), "a models CSV needs a `name` column, one row per matrix row")
            names = [row["name"] for row in rows]
            if len(names) != dense.shape[0]:
                raise ValueError(f"{models} lists {len(names)} models but {matrix} has {dense.shape[0]} rows")
        for leftover in sorted(store.parent.glob(f".{store.name}.*.partial")):
            note(f"{leftover} looks left behind by an interrupted import or create; delete it to free the space")
        with BenchStore.building(store, replace_empty=True) as bench:
            bench.add_samples(records)
            for i0 in range(0, dense.shape[0], 256):
                chunk = np.asarray(dense[i0 : i0 + 256])
                bench.add_models(names[i0 : i0 + 256], rows=np.packbits(chunk, axis=1))
    except (OSError, ValueError, TypeError, KeyError, IndexError) as exc:
        raise fail(exc) from None
    console.print(f"{store}: {dense.shape[0]} models x {dense.shape[1]} samples, all observed")


@bench_app.command("sort")
def sort(store: Path = typer.Argument(...)) -> None:
    """Rank samples easiest first by the fully observed models (a new sort version)."""
    from lifelong.sortsearch.insert import sort_store

    try:
        version = sort_store(_open(store))
    except ValueError as exc:
        raise fail(exc) from None
    console.print(f"sort version {version}")


@bench_app.command("plan-model")
def plan_model_cli(
    store: Path = typer.Argument(...),
    budget: int = typer.Option(..., "--budget", min=1, help="n': samples to evaluate the new model on."),
    sampling: str = typer.Option("uniform", "--sampling", help="uniform or random."),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Print the sample ids a new model must be evaluated on (one per line)."""
    from lifelong.sortsearch.insert import plan_model

    try:
        plan = plan_model(_open(store), budget, sampling=sampling, seed=seed)
    except (LookupError, ValueError) as exc:
        raise fail(exc) from None
    typer.echo("\n".join(str(i) for i in plan.sample_ids))


@bench_app.command("add-model")
def add_model_cli(
    store: Path = typer.Argument(...),
    name: str = typer.Option(..., "--name"),
    results: Path = typer.Option(
        ...,
        "--results",
        help="CSV sample_id,correct on the planned (or all) samples, or a 1-D .npy: the full row, or with --budget the "
        "planned samples' outcomes in plan order.",
    ),
    budget: int = typer.Option(
        None, "--budget", min=1, help="n' the plan used (default: the CSV's rows; a .npy without it is a full row)."
    ),
    sampling: str = typer.Option("uniform", "--sampling", help="The sampling the plan used."),
    seed: int = typer.Option(0, "--seed", help="The seed the plan used."),
) -> None:
    """Add a model from its observed correctness: on the planned samples (estimated row), or on all samples."""
    from lifelong.sortsearch.insert import add_full_model, add_model, plan_model

    bench = _open(store)
    try:
        ids, outcomes = _read_results(results)
        n = bench.size()[0]
        if n == 0:
            raise ValueError(f"{store} has no samples yet: add samples before models")
        full = ids is not None and ids.size == n and np.array_equal(np.sort(ids), np.arange(n))
        if (ids is None and budget is None) or full:
            if outcomes.size != n:
                raise ValueError(
                    f"{results} holds {outcomes.size} outcomes but {store} has {n} samples: a .npy without --budget "
                    f"is a full row ({n} outcomes); for outcomes on the planned samples (in `lifelong bench "
                    f"plan-model` order) pass --budget {outcomes.size}"
                )
            if full:
                outcomes = outcomes[np.argsort(ids)]
            model_id = add_full_model(bench, name, outcomes)
            console.print(f"model {model_id} {escape(repr(name))}: all {n} samples observed")
            return
        planned = budget if budget is not None else outcomes.size
        if outcomes.size != planned:
            raise ValueError(f"{results} holds {outcomes.size} outcomes but --budget {planned} planned that many")
        plan = plan_model(bench, planned, sampling=sampling, seed=seed)
        if ids is not None:
            lookup = dict(zip(ids.tolist(), outcomes.tolist(), strict=True))
            missing = [i for i in plan.sample_ids.tolist() if i not in lookup]
            extra = sorted(set(lookup) - set(plan.sample_ids.tolist()))
            if missing or extra:
                raise ValueError(
                    f"{results} must hold exactly the {plan.sample_ids.size} planned sample ids (`lifelong bench "
                    f"plan-model {store} --budget {plan.sample_ids.size}`, same --sampling and --seed) or all {n}; "
                    f"missing e.g. {missing[:5]}, not planned e.g. {extra[:5]}"
                )
            outcomes = np.array([lookup[i] for i in plan.sample_ids.tolist()])
        model_id, _ = add_model(bench, name, plan, outcomes)
        accuracy = bench.accuracies([model_id])[model_id]
    except (LookupError, ValueError, OSError, TypeError) as exc:
        raise fail(exc) from None
    console.print(
        f"model {model_id} {escape(repr(name))}: estimated accuracy {accuracy.accuracy:.4f}, "
        f"{_confidence(bench)} interval {_span(accuracy)} (Sort & Search threshold k/n "
        f"{accuracy.threshold_accuracy:.4f}), from {len(outcomes)} of {n} samples observed"
    )


def _confidence(bench: Any) -> str:
    """The level of the intervals the store keeps, e.g. '95%'."""
    from lifelong.sortsearch.intervals import STORE_CONFIDENCE

    return f"{100 * STORE_CONFIDENCE:g}%"


def _span(accuracy: Any) -> str:
    """An accuracy's interval as 'low-high', 'exact' for an observed row, '-' when there is none."""
    if accuracy.kind == "observed":
        return "exact"
    if accuracy.low is None or accuracy.high is None:
        return "-"
    return f"{accuracy.low:.4f}-{accuracy.high:.4f}"


def _empty_line(store: Path, info: dict[str, Any]) -> str:
    """The one-line state of a store with no samples or no models."""
    if info["n"] == 0 and info["m"] == 0:
        return f"{store}: empty store (0 samples, 0 models)"
    if info["n"] == 0:
        return f"{store}: {info['m']} models but no samples yet (no accuracy is defined)"
    return f"{store}: {info['n']} samples but no models yet"


def _json(data: Any) -> str:
    """JSON text of `data` with NaN written as null (NaN is not JSON)."""

    def clean(value: Any) -> Any:
        if isinstance(value, float) and value != value:
            return None
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v) for v in value]
        return value

    return json.dumps(clean(data), indent=2, default=str)


@bench_app.command("status")
def status(
    store: Path = typer.Argument(...),
    top: int = typer.Option(20, "--top", min=0, help="Leaderboard rows."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Sizes, observed fraction, and a leaderboard of accuracies flagged observed / estimated / mixed.

    An estimated model's accuracy is its best estimate, with the interval around it; `k/n` is Sort & Search's own
    (the DP threshold's) estimate, which the paper reports.
    """
    bench = _open(store)
    info = bench.status()
    if info["n"] == 0 or info["m"] == 0:
        if as_json:
            typer.echo(_json({**info, "leaderboard": []}))
        else:
            console.print(escape(_empty_line(store, info)), soft_wrap=True)
        return
    accuracies = bench.accuracies()
    names = {r.id: r.name for r in bench.model_records()}
    board = sorted(accuracies.items(), key=lambda item: (-item[1].accuracy, item[0]))
    if as_json:
        rows = [
            {
                "id": i,
                "name": names.get(i),
                "accuracy": a.accuracy,
                "low": a.low,
                "high": a.high,
                "threshold_accuracy": a.threshold_accuracy,
                "row_accuracy": a.row_accuracy,
                "kind": a.kind,
                "observed_fraction": a.observed_fraction,
            }
            for i, a in board
        ]
        typer.echo(_json({**info, "leaderboard": rows}))
        return
    console.print(
        f"{escape(str(store))}: {info['n']} samples x {info['m']} models; {info['observed_fraction']:.4%} of cells "
        f"observed; {info['estimated_rows']} estimated rows; latest sort {info['latest_sort']}"
    )
    table = Table(title="leaderboard", caption=f"interval: {_confidence(bench)}; k/n: Sort & Search's own estimate")
    for column, justify in (
        ("#", "right"),
        ("model", "left"),
        ("accuracy", "right"),
        ("interval", "center"),
        ("k/n", "right"),
        ("kind", "left"),
        ("obs.", "right"),
    ):
        table.add_column(column, justify=justify, overflow="fold")
    for rank, (i, acc) in enumerate(board[:top], start=1):
        threshold = f"{acc.threshold_accuracy:.4f}" if acc.threshold_accuracy is not None else "-"
        table.add_row(
            str(rank),
            escape(str(names.get(i, i))),
            f"{acc.accuracy:.4f}",
            _span(acc).replace("-", " - ") if acc.low is not None and acc.kind != "observed" else _span(acc),
            threshold,
            acc.kind,
            f"{acc.observed_fraction:.1%}",
        )
    console.print(table)


@bench_app.command("check")
def check(store: Path = typer.Argument(...)) -> None:
    """Integrity check of a store; exits 1 when it finds problems."""
    bench = _open(store)
    problems = bench.check()
    for problem in problems:
        error_console.print(f"[red]problem:[/] {escape(problem)}")
    if problems:
        raise typer.Exit(1)
    info = bench.status()
    console.print(
        f"ok ({escape(_empty_line(store, info))})" if info["n"] == 0 or info["m"] == 0 else "ok", soft_wrap=True
    )


@bench_app.command("experiment")
def experiment(
    rank: Path = typer.Option(..., "--rank", help="Ranking models' matrix .npy (uint8 0/1, rows = models)."),
    evaluate: Path = typer.Option(..., "--eval", help="Evaluated models' matrix .npy."),
    budgets: str = typer.Option("8,16,32,64,128,256,512,1024,2048", "--budgets"),
    sort: str = typer.Option("sum", "--sort", help="sum, confidence or recursive."),
    sampling: str = typer.Option("uniform", "--sampling", help="uniform or random."),
    rank_confidence: Path = typer.Option(
        None, "--rank-confidence", help="True-class probabilities (--sort confidence)."
    ),
    transpose: bool = typer.Option(False, "--transpose", help="Insert samples instead of models."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Reproduce the paper's experiments on any pair of matrices: errors, kappa and Pearson r per budget."""
    from lifelong.commands.bench_reports import experiment_command

    try:
        experiment_command(rank, evaluate, budgets, sort, sampling, rank_confidence, transpose, as_json)
    except (FileNotFoundError, ValueError, TypeError) as exc:
        raise fail(exc) from None


@bench_app.command("beyond")
def beyond(
    matrix: Path = typer.Option(
        None, "--matrix", help="Dense uint8 0/1 .npy [models, samples], split half/half into ranking / held-out."
    ),
    rank: Path = typer.Option(None, "--rank", help="Ranking models' matrix .npy (with --eval, instead of --matrix)."),
    evaluate: Path = typer.Option(None, "--eval", help="Held-out models' matrix .npy (same samples as --rank)."),
    samples: Path = typer.Option(None, "--samples", help="samples.csv with a domain column (domain-aware methods)."),
    budgets: str = typer.Option("1024,2048,4096", "--budgets"),
    split_seed: int = typer.Option(0, "--split-seed", help="Seed of the --matrix half/half split."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Compare rankings beyond sum-sort (clustered orders, domains, IRT) and the accuracy intervals' coverage, on one
    matrix split half/half (--matrix) or on a ranking and a held-out matrix (--rank, --eval), as `experiment` takes."""
    from lifelong.commands.bench_reports import beyond_command

    if (matrix is None) == (rank is None and evaluate is None) or (
        matrix is None and (rank is None or evaluate is None)
    ):
        raise fail("give either --matrix FILE, or both --rank FILE and --eval FILE")
    try:
        beyond_command(
            matrix, samples, budgets, split_seed=split_seed, as_json=as_json, rank_path=rank, eval_path=evaluate
        )
    except (FileNotFoundError, ValueError, TypeError, KeyError) as exc:
        raise fail(exc) from None


def _names(text: str) -> tuple[str, ...]:
    """Names from a comma-separated list ("noise,blur"), blanks dropped."""
    return tuple(c.strip() for c in text.split(",") if c.strip())


def _severities(text: str) -> tuple[int, ...]:
    """Severities from a comma-separated list of integers ("1,2,3")."""
    try:
        return tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise ValueError(f"severities must be comma-separated integers such as 1,2,3, got {text!r}") from None


@bench_app.command("build-zoo")
def build_zoo_cli(
    out: Path = typer.Argument(..., help="Output folder (resumable)."),
    n_models: int = typer.Option(120, "--models", min=1),
    source: str = typer.Option("fashion-mnist", "--source"),
    n_test: int = typer.Option(2000, "--test-samples", min=1),
    corruptions: str = typer.Option("noise,blur,contrast,rotation,occlusion", "--corruptions"),
    severities: str = typer.Option("1,2,3", "--severities"),
    seed: int = typer.Option(0, "--seed"),
    executor: str = typer.Option("local", "--executor", help="local or ray."),
    num_cpus: int = typer.Option(None, "--num-cpus"),
    device: DeviceOption = "auto",
    precision: PrecisionOption = "auto",
    compile: CompileOption = False,
    channels_last: ChannelsLastOption = "auto",
    gpus_per_trial: GpusPerTrialOption = 0.0,
) -> None:
    """Train and evaluate a zoo of varied models on clean + corrupted test samples (a real correctness matrix)."""
    from lifelong.commands.device_options import accelerator_from
    from lifelong.sortsearch.zoo import ZooSettings, build_zoo

    try:
        accelerator_from(device, precision, compile, channels_last)
        settings = ZooSettings(
            n_models=n_models,
            source=source,
            n_test=n_test,
            corruptions=_names(corruptions),
            severities=_severities(severities),
            seed=seed,
        )
        info = build_zoo(
            out, settings, executor=executor, num_cpus=num_cpus, gpus_per_model=gpus_per_trial, on_note=note
        )
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    console.print_json(json.dumps(info, default=str))
