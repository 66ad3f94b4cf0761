"""`lifelong bench ...`: keep a growing models x samples benchmark and evaluate new models at a fraction of the cost."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.markup import escape

from lifelong.commands.device_options import (
    ChannelsLastOption,
    CompileOption,
    DeviceOption,
    GpusPerTrialOption,
    PrecisionOption,
)
from lifelong.commands.outputs import work_folder
from lifelong.commands.terminal import console, error_console, fail, note
from lifelong.core.suggest import did_you_mean

bench_app = typer.Typer(
    help="Lifelong benchmarks: a growing models x samples store with Sort & Search.", no_args_is_help=True
)


def _fail(exc: BaseException | str) -> typer.Exit:
    """`fail` with the message of a KeyError as written (str() of a KeyError adds quotes)."""
    if isinstance(exc, KeyError) and exc.args:
        return fail(str(exc.args[0]))
    return fail(exc)


def _some(values: list[int]) -> str:
    """Up to five values as "1, 2, 3", or "none"."""
    return ", ".join(str(v) for v in values[:5]) + (", ..." if len(values) > 5 else "") if values else "none"


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
        lacks = f"lacks the column(s) {', '.join(missing)}" if missing else "has no data rows"
        raise ValueError(f"{path} {lacks}: {what}")
    return rows


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
        from lifelong.sortsearch.experiment import open_zero_one

        needs = (
            "--results needs ONE model's outcomes: a 1-D array of 0/1 (the full row, or the planned samples' "
            "outcomes with --budget)"
        )
        return None, open_zero_one(path, ndim=1, what="one model's outcomes, a 1-D array of 0/1", needs=needs)
    what = "a results CSV needs columns sample_id, correct (0 or 1), one row per evaluated sample"
    rows = _csv_rows(path, ("sample_id", "correct"), what)
    ids = np.array([_int_cell(path, i + 2, "sample_id", r["sample_id"]) for i, r in enumerate(rows)], np.int64)
    outcomes = np.array([_int_cell(path, i + 2, "correct", r["correct"], (0, 1)) for i, r in enumerate(rows)])
    unique, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise ValueError(f"{path} lists sample_id {int(unique[counts > 1][0])} more than once: give each sample once")
    return ids, outcomes.astype(np.uint8)


def _held_store(path: Path) -> tuple[int, int] | None:
    """(models, samples) of the store at `path` when it holds one with content; None when `path` is free: absent,
    an empty folder, or an empty store. Anything else there is an error (never replaced)."""
    from lifelong.sortsearch.registry import Registry
    from lifelong.sortsearch.store_files import REGISTRY_FILE

    if not path.exists() or (path.is_dir() and not any(path.iterdir())):
        return None
    if not (path.is_dir() and (path / REGISTRY_FILE).is_file()):
        raise ValueError(f"{path} exists and is not a benchmark store: pick a new path")
    registry = Registry(path / REGISTRY_FILE)
    try:
        n, m = registry.counts()
        return None if n == 0 and m == 0 and not registry.sorts() else (m, n)
    finally:
        registry.close()


def _one_of(resume: bool, overwrite: bool) -> None:
    """Refuse --resume together with --overwrite."""
    if resume and overwrite:
        raise fail("give --resume or --overwrite, not both")


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


_BUDGETS_HELP = (
    "Budgets n' (m' with --transpose): comma-separated integers (8,32,300), or a geometric run a,b,...,z, each "
    "term the previous times b/a up to z (8,16,...,16384 is 8, 16, 32, ..., 16384)."
)


def _checked_budgets(value: str) -> str:
    """--budgets is checked as the flags are read, so a mistyped list is a usage error before any work."""
    from lifelong.commands.bench_reports import parse_budgets

    try:
        parse_budgets(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    return value


@bench_app.command("experiment")
def experiment(
    rank: Path = typer.Option(
        ..., "--rank", metavar="FILE", help="Ranking models' matrix .npy (uint8 0/1, rows = models)."
    ),
    evaluate: Path = typer.Option(
        ..., "--eval", metavar="FILE", help="Evaluated models' matrix .npy (same samples as --rank)."
    ),
    budgets: str = typer.Option(
        "8,16,...,2048", "--budgets", metavar="LIST", help=_BUDGETS_HELP, callback=_checked_budgets
    ),
    sort: str = typer.Option(
        "sum",
        "--sort",
        metavar="sum|confidence|recursive",
        help="How samples are ranked: sum, confidence or recursive.",
    ),
    sampling: str = typer.Option("uniform", "--sampling", metavar="uniform|random", help="uniform or random."),
    rank_confidence: Path = typer.Option(
        None,
        "--rank-confidence",
        metavar="FILE",
        help="The ranking models' true-class probabilities .npy (for --sort confidence).",
    ),
    transpose: bool = typer.Option(False, "--transpose", help="Insert samples instead of models."),
    as_json: bool = typer.Option(False, "--json", help="Print the rows as JSON."),
) -> None:
    """Reproduce the paper's experiments on any pair of matrices: errors, kappa and Pearson r per budget."""
    from lifelong.commands.bench_reports import experiment_command

    try:
        experiment_command(rank, evaluate, budgets, sort, sampling, rank_confidence, transpose, as_json)
    except (FileNotFoundError, ValueError, TypeError) as exc:
        raise _fail(exc) from None


@bench_app.command("beyond")
def beyond(
    matrix: Path = typer.Option(
        None,
        "--matrix",
        metavar="FILE",
        help="Dense uint8 0/1 .npy [models, samples], split half/half into ranking / held-out.",
    ),
    rank: Path = typer.Option(
        None, "--rank", metavar="FILE", help="Ranking models' matrix .npy (with --eval, instead of --matrix)."
    ),
    evaluate: Path = typer.Option(
        None, "--eval", metavar="FILE", help="Held-out models' matrix .npy (same samples as --rank)."
    ),
    samples: Path = typer.Option(
        None, "--samples", metavar="FILE", help="samples.csv with a domain column (domain-aware methods)."
    ),
    budgets: str = typer.Option(
        "1024,2048,4096",
        "--budgets",
        metavar="LIST",
        help=_BUDGETS_HELP.replace(" (m' with --transpose)", ""),
        callback=_checked_budgets,
    ),
    split_seed: int = typer.Option(0, "--split-seed", metavar="N", min=0, help="Seed of the --matrix half/half split."),
    as_json: bool = typer.Option(False, "--json", help="Print the tables as JSON."),
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
        raise _fail(exc) from None


def _names(text: str) -> tuple[str, ...]:
    """Names from a comma-separated list ("noise,blur"), blanks dropped."""
    return tuple(c.strip() for c in text.split(",") if c.strip())


def _severities(text: str) -> tuple[int, ...]:
    """Severities from a comma-separated list of integers ("1,2,3")."""
    try:
        return tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise ValueError(f"severities must be comma-separated integers such as 1,2,3, got {text!r}") from None


def _zoo_output(out: Path, resume: bool, overwrite: bool) -> None:
    """Refuse an existing non-empty OUT without --resume or --overwrite (or with both)."""
    _one_of(resume, overwrite)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} exists and is not a folder: pick another output folder")
    if out.is_dir() and any(out.iterdir()) and not (resume or overwrite):
        raise ValueError(
            f"{out} already holds files; pass --resume to continue the zoo there (finished models are reused, and "
            "a larger --models grows it), --overwrite to build it again from scratch, or pick another folder"
        )


@bench_app.command("build-zoo")
def build_zoo_cli(
    out: Path = typer.Argument(..., help="Output folder (models/ in it keeps each finished model)."),
    n_models: int = typer.Option(120, "--models", metavar="N", min=1, help="Models in the zoo."),
    source: str = typer.Option(
        "fashion-mnist",
        "--source",
        metavar="SOURCE",
        help="Images: a source as `lifelong data inspect` takes (fashion-mnist, ...).",
    ),
    fallback_source: str = typer.Option(
        None,
        "--fallback-source",
        metavar="SOURCE",
        help="Build on this source instead (e.g. builtin:letters, rendered letters) when --source is not installed; "
        "without it a missing --source is an error.",
    ),
    n_test: int = typer.Option(
        2000, "--test-samples", metavar="N", min=1, help="Clean test samples; each corruption adds a copy."
    ),
    corruptions: str = typer.Option(
        "noise,blur,contrast,rotation,occlusion",
        "--corruptions",
        metavar="LIST",
        help="Comma-separated corruptions (or none: '').",
    ),
    severities: str = typer.Option(
        "1,2,3", "--severities", metavar="LIST", help="Comma-separated severities of each corruption."
    ),
    seed: int = typer.Option(0, "--seed", metavar="N", min=0, help="Seed of the models' settings and of the samples."),
    resume: bool = typer.Option(
        False, "--resume", help="Continue the zoo in OUT: reuse its finished models (a larger --models grows it)."
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Delete the zoo in OUT and build it from scratch."),
    skip_corrupt: bool = typer.Option(False, "--skip-corrupt", help="Skip (and count) corrupt images."),
    executor: str = typer.Option("local", "--executor", metavar="local|ray", help="local or ray."),
    num_cpus: int = typer.Option(None, "--num-cpus", metavar="N", help="CPUs for a local Ray (default: all)."),
    device: DeviceOption = "auto",
    precision: PrecisionOption = "auto",
    compile: CompileOption = False,
    channels_last: ChannelsLastOption = "auto",
    gpus_per_trial: GpusPerTrialOption = 0.0,
    as_json: bool = typer.Option(False, "--json", help="Print the whole summary (zoo.json) as JSON."),
) -> None:
    """Train and evaluate a zoo of varied models on clean + corrupted test samples (a real correctness matrix).

    Writes OUT/correctness.npy (models x samples), samples.csv and models.csv, the inputs of `lifelong bench
    import`, plus confidence.npy, images.npy and zoo.json (the settings that ran).
    """
    from lifelong.commands.device_options import accelerator_from
    from lifelong.sortsearch.zoo import FALLBACK_SOURCE, SourceMissing, ZooSettings, build_zoo

    try:
        accelerator_from(device, precision, compile, channels_last)
        settings = ZooSettings(
            n_models=n_models,
            source=source,
            n_test=n_test,
            corruptions=_names(corruptions),
            severities=_severities(severities),
            seed=seed,
            source_options={"skip_corrupt": True} if skip_corrupt else None,
            fallback_source=fallback_source,
        )
        if executor not in ("local", "ray"):
            raise ValueError(f"unknown --executor {executor!r}{did_you_mean(executor, ('local', 'ray'))}: local or ray")
        _zoo_output(out, resume, overwrite)
        info = build_zoo(
            out,
            settings,
            executor=executor,
            num_cpus=num_cpus,
            gpus_per_model=gpus_per_trial,
            on_note=note,
            start_over=overwrite,
        )
    except SourceMissing as exc:
        raise fail(f"{exc}; or pass --fallback-source {FALLBACK_SOURCE} to build on rendered letters instead") from None
    except (FileNotFoundError, ValueError, OSError) as exc:
        raise _fail(exc) from None
    if as_json:
        typer.echo(json.dumps(info, indent=2, default=str))
        return
    clean = info["clean_accuracy"]
    for line in (
        f"{out}: {info['n_models']} models x {info['n_samples']} samples of {info['source']} "
        f"({info['trained']} trained, {info['reused']} reused, {info['wall_seconds']:.1f} s)",
        f"clean accuracy: min {clean['min']:.3f}, median {clean['median']:.3f}, max {clean['max']:.3f}",
        f"next, import it into a store (the settings that ran are in {out / 'zoo.json'}):",
        f"  lifelong bench import STORE --matrix {out / 'correctness.npy'} \\",
        f"    --samples {out / 'samples.csv'} --models {out / 'models.csv'}",
    ):
        console.print(line, markup=False, highlight=False, soft_wrap=True)


# `compare` (estimators from few samples) and `plan-samples` / `add-samples` (insert_D) live in their own modules.
from lifelong.commands.bench_compare import compare  # noqa: E402
from lifelong.commands.bench_samples import add_samples_command, plan_samples_command  # noqa: E402

bench_app.command("compare")(compare)
bench_app.command("plan-samples")(plan_samples_command)
bench_app.command("add-samples")(add_samples_command)
