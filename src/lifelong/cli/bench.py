"""`lifelong bench ...`: keep a growing models x samples benchmark and evaluate new models at a fraction of the cost.

Thin adapters: each command builds its spec from the flags, calls the workflow (`lifelong.commands.bench_api`,
`bench_models`, ...; the same functions `lifelong.api` offers) and prints the result (`commands.bench_console`).
The store's own commands are here; the experiments, the zoo and compare in `cli.bench_experiments`, plan-samples and
add-samples in `cli.bench_samples`.
"""

from __future__ import annotations

from pathlib import Path

import typer

from lifelong.cli.bench_experiments import beyond, build_zoo_cli, compare, experiment
from lifelong.cli.bench_samples import add_samples_command, plan_samples_command

bench_app = typer.Typer(
    help="Lifelong benchmarks: a growing models x samples store with Sort & Search.", no_args_is_help=True
)


@bench_app.command("create")
def create(
    store: Path = typer.Argument(..., help="Folder for the new store."),
    resume: bool = typer.Option(False, "--resume", help="Keep a store already at STORE as it is."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace a store already at STORE by an empty one."),
) -> None:
    """Create an empty benchmark store."""
    from lifelong.commands.bench_api import BenchCreateSpec, bench_create
    from lifelong.commands.bench_console import print_create

    print_create(bench_create(BenchCreateSpec(store, resume=resume, overwrite=overwrite)))


@bench_app.command("import")
def import_matrix(
    store: Path = typer.Argument(..., help="Store to create (a new path, or an empty store)."),
    matrix: Path = typer.Option(
        ..., "--matrix", metavar="FILE", help="Dense uint8 0/1 .npy, rows = models, columns = samples."
    ),
    samples: Path = typer.Option(
        ...,
        "--samples",
        metavar="FILE",
        help="samples.csv, one row per column: source, domain, label, content_hash (+ id, source_item).",
    ),
    models: Path = typer.Option(
        None, "--models", metavar="FILE", help="models.csv with a `name` column (default: model-0, model-1, ...)."
    ),
    resume: bool = typer.Option(
        False,
        "--resume",
        help="Continue an interrupted import (STORE.work), or add to the store this import made the models it lacks.",
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace a store at STORE (and STORE.work) by this import."
    ),
) -> None:
    """Create a store from a fully observed matrix (every cell a fact), e.g. the output of `bench build-zoo`.

    The store is built in STORE.work beside STORE and renamed into place at the end: an interrupted import leaves
    no store, and `--resume` continues it.
    """
    from lifelong.commands.bench_api import BenchImportSpec, bench_import
    from lifelong.commands.bench_console import print_import

    spec = BenchImportSpec(store, matrix, samples, models, resume=resume, overwrite=overwrite)
    print_import(bench_import(spec))


@bench_app.command("sort")
def sort(store: Path = typer.Argument(..., help="The store.")) -> None:
    """Rank samples easiest first by the fully observed models (a new sort version)."""
    from lifelong.commands.bench_api import BenchSortSpec, bench_sort
    from lifelong.commands.bench_console import print_sort

    print_sort(bench_sort(BenchSortSpec(store)))


@bench_app.command("plan-model")
def plan_model_cli(
    store: Path = typer.Argument(..., help="The store."),
    budget: int = typer.Option(..., "--budget", metavar="N", min=1, help="n': samples to evaluate the new model on."),
    sampling: str = typer.Option(
        "lifelong",
        "--sampling",
        metavar="lifelong|uniform|random",
        help="The toolkit's estimator's plan, or Sort & Search's: spread evenly over the sort, or at random.",
    ),
    seed: int = typer.Option(0, "--seed", metavar="N", min=0, help="Seed of --sampling random."),
) -> None:
    """Print the sample ids a new model must be evaluated on (one per line)."""
    from lifelong.commands.bench_console import print_lines
    from lifelong.commands.bench_models import BenchPlanModelSpec, bench_plan_model

    print_lines(bench_plan_model(BenchPlanModelSpec(store, budget, sampling, seed)))


@bench_app.command("add-model")
def add_model_cli(
    store: Path = typer.Argument(..., help="The store."),
    name: str = typer.Option(..., "--name", metavar="NAME", help="The new model's name (unique in the store)."),
    results: Path = typer.Option(
        ...,
        "--results",
        metavar="FILE",
        help="CSV sample_id,correct on the planned (or all) samples, or a 1-D .npy: the full row, or with --budget the "
        "planned samples' outcomes in plan order.",
    ),
    budget: int = typer.Option(
        None,
        "--budget",
        metavar="N",
        min=1,
        help="n' the plan used (default: the CSV's rows; a .npy without it is a full row).",
    ),
    sampling: str = typer.Option(
        "lifelong", "--sampling", metavar="lifelong|uniform|random", help="The plan used (see plan-model)."
    ),
    seed: int = typer.Option(0, "--seed", metavar="N", min=0, help="The seed the plan used."),
) -> None:
    """Add a model from its observed correctness: on the planned samples (estimated row), or on all samples."""
    from lifelong.commands.bench_console import print_add_model
    from lifelong.commands.bench_models import BenchAddModelSpec, bench_add_model

    print_add_model(bench_add_model(BenchAddModelSpec(store, name, results, budget, sampling, seed)))


@bench_app.command("status")
def status(
    store: Path = typer.Argument(..., help="The store."),
    top: int = typer.Option(20, "--top", metavar="N", min=0, help="Leaderboard rows."),
    as_json: bool = typer.Option(False, "--json", help="Print the state and the whole leaderboard as JSON."),
) -> None:
    """Sizes, observed fraction, and a leaderboard of accuracies flagged observed / estimated / mixed.

    An estimated model's accuracy is its best estimate, with the interval around it; `k/n` is Sort & Search's own
    (the DP threshold's) estimate, which the paper reports.
    """
    from lifelong.commands.bench_api import BenchStatusSpec, bench_status
    from lifelong.commands.bench_console import print_status

    print_status(bench_status(BenchStatusSpec(store)), top=top, as_json=as_json)


@bench_app.command("check")
def check(store: Path = typer.Argument(..., help="The store.")) -> None:
    """Integrity check of a store; exits 1 when it finds problems."""
    from lifelong.commands.bench_api import BenchCheckSpec, bench_check
    from lifelong.commands.bench_console import print_check

    result = bench_check(BenchCheckSpec(store))
    print_check(result)
    if not result.ok:
        raise typer.Exit(1)


# The paper's experiments, the zoo, `compare` (estimators from few samples) and `plan-samples` / `add-samples`
# (insert_D) live in their own modules; registered here, after the store's own commands, in `--help` order.
bench_app.command("experiment")(experiment)
bench_app.command("beyond")(beyond)
bench_app.command("build-zoo")(build_zoo_cli)
bench_app.command("compare")(compare)
bench_app.command("plan-samples")(plan_samples_command)
bench_app.command("add-samples")(add_samples_command)
