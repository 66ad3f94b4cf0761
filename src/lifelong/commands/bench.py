"""`lifelong bench ...`: keep a growing models x samples benchmark and evaluate new models at a fraction of the cost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.markup import escape

from lifelong.commands.bench_compare import compare
from lifelong.commands.bench_experiments import beyond, build_zoo_cli, experiment
from lifelong.commands.bench_inputs import _csv_rows, _fail, _held_store, _one_of, _open, _read_results, _some
from lifelong.commands.bench_samples import add_samples_command, plan_samples_command
from lifelong.commands.outputs import work_folder
from lifelong.commands.terminal import console, error_console, note

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
    from lifelong.sortsearch.store import BenchStore

    _one_of(resume, overwrite)
    try:
        held = _held_store(store)
        if held is not None and resume:
            console.print(f"{escape(str(store))}: kept as it is ({held[0]} models x {held[1]} samples)", soft_wrap=True)
            return
        if held is not None and not overwrite:
            raise ValueError(
                f"{store} already holds a store with {held[0]} models x {held[1]} samples: pass --resume to keep "
                "it, --overwrite to replace it by an empty store, or pick a new path"
            )
        with BenchStore.building(store, replace_empty=True, replace=overwrite):
            pass
    except (FileExistsError, ValueError, OSError) as exc:
        raise _fail(exc) from None
    console.print(
        f"created {escape(str(store))} (empty: add samples and models, e.g. with `lifelong bench import`)",
        soft_wrap=True,
    )


def _import_names(models: Path | None, count: int, matrix: Path) -> list[str]:
    """The model names of an import: the `name` column of `models`, or model-0, model-1, ..."""
    if models is None:
        return [f"model-{i}" for i in range(count)]
    rows = _csv_rows(models, ("name",), "a models CSV needs a `name` column, one row per matrix row")
    names = [row["name"] for row in rows]
    if len(names) != count:
        raise ValueError(f"{models} lists {len(names)} models but {matrix} has {count} rows (models)")
    return names


def _fill(bench: Any, where: Path, dense: np.ndarray, records: list[dict], names: list[str], samples: Path) -> int:
    """Bring `bench` (at `where`) to hold this import: its samples (added when it has none) and every model of `names`
    it lacks; refuse a store of other samples, or a model of the same name with another row. Returns models added."""
    hashes = bench.sample_hashes()
    wanted = [record["content_hash"] for record in records]
    if not hashes:
        bench.add_samples(records)
    elif hashes != wanted:
        first = next((j for j, (a, b) in enumerate(zip(hashes, wanted, strict=False)) if a != b), len(hashes))
        raise ValueError(
            f"{where} holds other samples than {samples} ({len(hashes)} vs {len(wanted)} samples, first difference "
            f"at sample {first}): --resume continues the import that made it; --overwrite imports anew"
        )
    known = {record.name: record.id for record in bench.model_records()}
    present = [i for i, name in enumerate(names) if name in known]
    for i0 in range(0, len(present), 256):
        part = present[i0 : i0 + 256]
        stored = bench.read_rows([known[names[i]] for i in part])
        differs = np.flatnonzero((stored != np.packbits(np.asarray(dense[part]), axis=1)).any(axis=1))
        if differs.size:
            raise ValueError(
                f"model {names[part[int(differs[0])]]!r} is in {where} with another row than in the matrix: --resume "
                "continues the import that made it; --overwrite imports anew"
            )
    todo = [i for i, name in enumerate(names) if name not in known]
    for i0 in range(0, len(todo), 256):
        part = todo[i0 : i0 + 256]
        bench.add_models([names[i] for i in part], rows=np.packbits(np.asarray(dense[part]), axis=1))
    return len(todo)


def _resume_import(store: Path, dense: np.ndarray, records: list[dict], names: list[str], samples: Path) -> None:
    """Add to the store an import made the models of `names` it lacks (each insert is atomic: no work folder)."""
    with _open(store) as bench:
        added = _fill(bench, store, dense, records, names, samples)
        n, m = bench.size()
        resorted = added and bench.sorts()
    where = escape(str(store))
    if not added:
        console.print(f"{where}: holds every model of this import already ({m} models x {n} samples)")
        return
    console.print(f"{where}: added {added} models, now {m} models x {n} samples")
    if resorted:
        note(f"the store's sort predates these models: re-sort with `lifelong bench sort {store}`")


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
    import shutil

    from lifelong.sortsearch.experiment import load_matrix
    from lifelong.sortsearch.samples_csv import read_samples_csv, store_records
    from lifelong.sortsearch.store import BenchStore

    _one_of(resume, overwrite)
    work = work_folder(store)
    try:
        dense = load_matrix(matrix)
        records = store_records(read_samples_csv(samples, n=dense.shape[1]))
        names = _import_names(models, dense.shape[0], matrix)
        held = _held_store(store)
        if held is not None and resume:
            if work.exists():
                note(f"{work} is left from an interrupted import into {store}, which is complete: delete it")
            _resume_import(store, dense, records, names, samples)
            return
        if held is not None and not overwrite:
            raise ValueError(
                f"{store} already holds a store with {held[0]} models x {held[1]} samples: pass --resume to add the "
                "models it lacks, --overwrite to replace it, or pick a new path"
            )
        if work.exists() and not (resume or overwrite):
            raise ValueError(
                f"{work} holds an interrupted import; pass --resume to continue it, --overwrite to start over, or "
                "pick a new path"
            )
        if overwrite and work.is_dir():
            shutil.rmtree(work)
        with BenchStore.building(store, replace_empty=True, replace=overwrite, work=work, reuse_work=resume) as bench:
            _fill(bench, work, dense, records, names, samples)
    except (OSError, ValueError, TypeError, LookupError) as exc:
        raise _fail(exc) from None
    console.print(f"{escape(str(store))}: {dense.shape[0]} models x {dense.shape[1]} samples, all observed")


@bench_app.command("sort")
def sort(store: Path = typer.Argument(..., help="The store.")) -> None:
    """Rank samples easiest first by the fully observed models (a new sort version)."""
    from lifelong.sortsearch.insert import sort_store

    try:
        with _open(store) as bench:
            version = sort_store(bench)
            record = bench.sorts()[-1]
    except ValueError as exc:
        raise _fail(exc) from None
    console.print(
        f"sort version {version}: {record.n_samples} samples ranked by {len(record.ranking_models)} fully observed "
        "models",
        highlight=False,
    )


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
    from lifelong.sortsearch.insert import plan_model

    try:
        plan = plan_model(_open(store), budget, sampling=sampling, seed=seed)
    except (LookupError, ValueError) as exc:
        raise _fail(exc) from None
    typer.echo("\n".join(str(i) for i in plan.sample_ids))


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
            console.print(f"added model {escape(name)} (id {model_id}): all {n} samples observed", highlight=False)
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
                    f"missing e.g. {_some(missing)}; not planned e.g. {_some(extra)}"
                )
            outcomes = np.array([lookup[i] for i in plan.sample_ids.tolist()])
        model_id, _ = add_model(bench, name, plan, outcomes)
        accuracy = bench.accuracies([model_id])[model_id]
    except (LookupError, ValueError, OSError, TypeError) as exc:
        raise _fail(exc) from None
    console.print(
        f"added model {escape(name)} (id {model_id}), {len(outcomes)} of {n} samples observed", highlight=False
    )
    console.print(
        f"estimated accuracy {accuracy.accuracy:.4f}, {_confidence(bench)} interval {_span(accuracy)}, "
        f"k/n {accuracy.threshold_accuracy:.4f}",
        highlight=False,
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
        return f"{store}: empty store (0 models x 0 samples)"
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


_BOARD_COLUMNS = (("#", ">"), ("model", "<"), ("accuracy", ">"), ("interval", "^"), ("k/n", ">"), ("kind", "<"))
_BOARD_COLUMNS += (("obs.", ">"),)


def leaderboard_lines(rows: list[tuple[str, ...]], width: int) -> list[str]:
    """The leaderboard as plain text lines no wider than `width` whenever the names allow: one line per model when
    every name fits its column, else each model's name on a line of its own above its numbers (names, like the
    numbers, are never broken)."""

    def line(cells: list[str], widths: list[int], aligns: list[str]) -> str:
        return "  ".join(f"{c:{a}{w}}" for c, w, a in zip(cells, widths, aligns, strict=True)).rstrip()

    heads = [h for h, _ in _BOARD_COLUMNS]
    aligns = [a for _, a in _BOARD_COLUMNS]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    if sum(widths) + 2 * (len(widths) - 1) <= width:
        return [line(heads, widths, aligns)] + [line(list(r), widths, aligns) for r in rows]

    def numbers(cells: list[Any]) -> list[Any]:  # every column but # and the model
        return cells[2:]

    indent = " " * (widths[0] + 2)
    out = [f"{'#':>{widths[0]}}  model", indent + line(numbers(heads), numbers(widths), numbers(aligns))]
    for r in rows:
        out.append(f"{r[0]:>{widths[0]}}  {r[1]}")
        out.append(indent + line(numbers(list(r)), numbers(widths), numbers(aligns)))
    return out


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
    sort_text = f"sort version {info['latest_sort']}" if info["latest_sort"] is not None else "not sorted yet"
    rows_text = "1 estimated row" if info["estimated_rows"] == 1 else f"{info['estimated_rows']} estimated rows"
    console.print(escape(str(store)), highlight=False, soft_wrap=True)
    console.print(
        f"  {info['m']} models x {info['n']} samples, {info['observed_fraction']:.2%} of cells observed",
        highlight=False,
    )
    console.print(f"  {rows_text}, {sort_text}", highlight=False)
    cells = [
        (
            str(rank),
            str(names.get(i, i)),
            f"{acc.accuracy:.4f}",
            _span(acc),
            f"{acc.threshold_accuracy:.4f}" if acc.threshold_accuracy is not None else "-",
            acc.kind,
            f"{acc.observed_fraction:.1%}",
        )
        for rank, (i, acc) in enumerate(board[:top], start=1)
    ]
    if not cells:
        return
    shown = f"top {len(cells)} of {len(board)}" if len(cells) < len(board) else f"all {len(board)}"
    console.print(f"\nleaderboard ({shown}; interval: {_confidence(bench)}; k/n: Sort & Search's own estimate)")
    for text in leaderboard_lines(cells, console.width):
        console.print(escape(text), highlight=False, soft_wrap=True)


@bench_app.command("check")
def check(store: Path = typer.Argument(..., help="The store.")) -> None:
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


# The paper's experiments, the zoo, `compare` (estimators from few samples) and `plan-samples` / `add-samples`
# (insert_D) live in their own modules; registered here, after the store's own commands, in `--help` order.
bench_app.command("experiment")(experiment)
bench_app.command("beyond")(beyond)
bench_app.command("build-zoo")(build_zoo_cli)
bench_app.command("compare")(compare)
bench_app.command("plan-samples")(plan_samples_command)
bench_app.command("add-samples")(add_samples_command)
