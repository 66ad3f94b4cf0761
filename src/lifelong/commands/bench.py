"""`lifelong bench ...`: keep a growing samples x models benchmark and evaluate new models at a fraction of the cost."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import typer
from rich.markup import escape
from rich.table import Table

from lifelong.commands.terminal import console, error_console, fail
from lifelong.sortsearch.registry import SAMPLE_FIELDS

bench_app = typer.Typer(
    help="Lifelong benchmarks: a growing samples x models store with Sort & Search.", no_args_is_help=True
)


def _open(store: Path):
    from lifelong.sortsearch.store import BenchStore

    if not store.exists():
        raise fail(f"no benchmark store at {store}; create one with `lifelong bench create {store}`")
    return BenchStore.open(store)


def _read_samples_csv(path: Path) -> list[dict]:
    """Sample records (source, domain, label, content_hash) from a CSV with those columns."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    missing = [c for c in SAMPLE_FIELDS if rows and c not in rows[0]]
    if not rows or missing:
        raise ValueError(f"{path}: needs a header with columns {list(SAMPLE_FIELDS)} and one row per sample")
    return [{k: row[k] for k in SAMPLE_FIELDS} for row in rows]


def _read_results(path: Path) -> tuple[np.ndarray | None, np.ndarray]:
    """(sample ids or None, 0/1 outcomes) from a .npy of outcomes or a CSV with columns sample_id, correct."""
    if path.suffix == ".npy":
        return None, np.load(path)
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or {"sample_id", "correct"} - set(rows[0]):
        raise ValueError(f"{path}: a results CSV needs columns sample_id, correct (0 or 1)")
    return np.array([int(r["sample_id"]) for r in rows]), np.array([int(r["correct"]) for r in rows])


@bench_app.command("create")
def create(store: Path = typer.Argument(..., help="Folder for the new store.")) -> None:
    """Create an empty benchmark store."""
    from lifelong.sortsearch.store import BenchStore

    try:
        BenchStore.create(store)
    except (FileExistsError, ValueError) as exc:
        raise fail(exc) from None
    console.print(f"created {store}")


@bench_app.command("import")
def import_matrix(
    store: Path = typer.Argument(..., help="Store to create."),
    matrix: Path = typer.Option(..., "--matrix", help="Dense uint8 0/1 .npy [models, samples] (e.g. a zoo's)."),
    samples: Path = typer.Option(..., "--samples", help="samples.csv: source, domain, label, content_hash."),
    models: Path = typer.Option(None, "--models", help="models.csv with a `name` column (default: model-<i>)."),
) -> None:
    """Create a store from a fully observed matrix (every cell a fact), e.g. the output of `bench build-zoo`."""
    from lifelong.sortsearch.experiment import load_matrix
    from lifelong.sortsearch.store import BenchStore

    try:
        dense = load_matrix(matrix)
        records = _read_samples_csv(samples)
        if len(records) != dense.shape[1]:
            raise ValueError(f"{samples} lists {len(records)} samples but {matrix} has {dense.shape[1]} columns")
        names = [f"model-{i}" for i in range(dense.shape[0])]
        if models is not None:
            with open(models, newline="") as f:
                names = [row["name"] for row in csv.DictReader(f)]
        bench = BenchStore.create(store)
        bench.add_samples(records)
        for i0 in range(0, dense.shape[0], 256):
            chunk = np.asarray(dense[i0 : i0 + 256])
            bench.add_models(names[i0 : i0 + 256], rows=np.packbits(chunk, axis=1))
    except (FileNotFoundError, FileExistsError, ValueError, TypeError, KeyError) as exc:
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
    results: Path = typer.Option(..., "--results", help="CSV sample_id,correct (planned ids) or a full .npy row."),
    sampling: str = typer.Option("uniform", "--sampling", help="The sampling the plan used."),
    seed: int = typer.Option(0, "--seed", help="The seed the plan used."),
) -> None:
    """Add a model from its observed correctness: on the planned samples (estimated row), or on all samples."""
    from lifelong.sortsearch.insert import add_full_model, add_model, plan_model

    try:
        bench = _open(store)
        ids, outcomes = _read_results(results)
        n = bench.size()[0]
        if ids is None and outcomes.size == n:
            model_id = add_full_model(bench, name, outcomes)
            console.print(f"model {model_id} {name!r}: all {n} samples observed")
            return
        plan = plan_model(bench, len(outcomes), sampling=sampling, seed=seed)
        if ids is not None:
            lookup = dict(zip(ids.tolist(), outcomes.tolist(), strict=True))
            missing = [i for i in plan.sample_ids.tolist() if i not in lookup]
            if missing or len(lookup) != plan.sample_ids.size:
                raise ValueError(
                    f"{results} must hold exactly the {plan.sample_ids.size} planned sample ids "
                    f"(`lifelong bench plan-model {store} --budget {plan.sample_ids.size}`); missing e.g. {missing[:5]}"
                )
            outcomes = np.array([lookup[i] for i in plan.sample_ids.tolist()])
        model_id, accuracy = add_model(bench, name, plan, outcomes)
    except (LookupError, ValueError, FileNotFoundError) as exc:
        raise fail(exc) from None
    console.print(f"model {model_id} {name!r}: estimated accuracy {accuracy:.4f} from {len(outcomes)} observed samples")


@bench_app.command("status")
def status(
    store: Path = typer.Argument(...),
    top: int = typer.Option(20, "--top", help="Leaderboard rows."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Sizes, observed fraction, and a leaderboard of accuracies flagged observed / estimated / mixed."""
    bench = _open(store)
    info = bench.status()
    accuracies = bench.accuracies()
    records = {r.id: r for r in bench.model_records()}
    names = {i: r.name for i, r in records.items()}
    intervals = {i: r.metadata.get("accuracy_interval") for i, r in records.items()}
    board = sorted(accuracies.items(), key=lambda item: -item[1].accuracy)
    if as_json:
        rows = [
            {
                "id": i,
                "name": names.get(i),
                "accuracy": a.accuracy,
                "kind": a.kind,
                "observed_fraction": a.observed_fraction,
                "interval": intervals.get(i),
            }
            for i, a in board
        ]
        typer.echo(json.dumps({**info, "leaderboard": rows}, indent=2, default=str))
        return
    console.print(
        f"{store}: {info['n']} samples x {info['m']} models; {info['observed_fraction']:.4%} of cells observed; "
        f"{info['estimated_rows']} estimated rows; latest sort {info['latest_sort']}"
    )
    table = Table(title="leaderboard")
    for column in ("rank", "model", "accuracy", "95% interval", "kind", "observed"):
        table.add_column(column)
    for rank, (i, acc) in enumerate(board[:top], start=1):
        ci = intervals.get(i)
        span = f"{ci['low']:.4f}-{ci['high']:.4f}" if ci else "exact" if acc.kind == "observed" else "-"
        name = escape(str(names.get(i, i)))
        table.add_row(str(rank), name, f"{acc.accuracy:.4f}", span, acc.kind, f"{acc.observed_fraction:.2%}")
    console.print(table)


@bench_app.command("check")
def check(store: Path = typer.Argument(...)) -> None:
    """Integrity check of a store; exits 1 when it finds problems."""
    problems = _open(store).check()
    for problem in problems:
        error_console.print(f"[red]problem:[/] {escape(problem)}")
    if problems:
        raise typer.Exit(1)
    console.print("ok")


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
    matrix: Path = typer.Option(..., "--matrix", help="Dense uint8 0/1 .npy [models, samples], e.g. a zoo's."),
    samples: Path = typer.Option(None, "--samples", help="samples.csv with a domain column (domain-aware methods)."),
    budgets: str = typer.Option("1024,2048,4096", "--budgets"),
    split_seed: int = typer.Option(0, "--split-seed"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Compare rankings beyond sum-sort (clustered orders, domains, IRT) on a matrix, same split and budget."""
    from lifelong.commands.bench_reports import beyond_command

    try:
        beyond_command(matrix, samples, budgets, split_seed=split_seed, as_json=as_json)
    except (FileNotFoundError, ValueError, TypeError) as exc:
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
) -> None:
    """Train and evaluate a zoo of varied models on clean + corrupted test samples (a real correctness matrix)."""
    from lifelong.sortsearch.zoo import ZooSettings, build_zoo

    try:
        settings = ZooSettings(
            n_models=n_models,
            source=source,
            n_test=n_test,
            corruptions=_names(corruptions),
            severities=_severities(severities),
            seed=seed,
        )
        info = build_zoo(out, settings, executor=executor, num_cpus=num_cpus)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    console.print_json(json.dumps(info, default=str))
