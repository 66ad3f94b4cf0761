"""What the `lifelong bench` commands print: each workflow's result (`bench_api`, `bench_models`, `bench_samples`,
`bench_experiments`, `bench_compare`) as lines on the console, or JSON. The experiment and beyond tables are
`bench_reports`', the compare protocol's table `bench_compare_table`'s."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from rich.markup import escape

from lifelong.commands.bench_inputs import _some
from lifelong.commands.terminal import console, error_console, note

if TYPE_CHECKING:
    from lifelong.commands.bench_api import (
        BenchCheckResult,
        BenchCreateResult,
        BenchImportResult,
        BenchSortResult,
        BenchStatusResult,
    )
    from lifelong.commands.bench_compare import BenchCompareResult
    from lifelong.commands.bench_experiments import BenchBuildZooResult
    from lifelong.commands.bench_models import BenchAddModelResult
    from lifelong.commands.bench_samples import BenchAddSamplesResult, BenchPlanSamplesResult


# -- the store -----------------------------------------------------------------------------------------------------
def print_create(result: BenchCreateResult) -> None:
    """The store created, or kept as it is."""
    where = escape(str(result.store))
    if result.kept:
        console.print(f"{where}: kept as it is ({result.models} models x {result.samples} samples)", soft_wrap=True)
        return
    console.print(f"created {where} (empty: add samples and models, e.g. with `lifelong bench import`)", soft_wrap=True)


def print_import(result: BenchImportResult) -> None:
    """The store's size after the import, or what a --resume into a complete store added (notes on stderr)."""
    where = escape(str(result.store))
    if not result.grown:
        console.print(f"{where}: {result.models} models x {result.samples} samples, all observed")
        return
    if result.stale_work is not None:
        note(
            f"{result.stale_work} is left from an interrupted import into {result.store}, which is complete: delete it"
        )
    if not result.added:
        console.print(
            f"{where}: holds every model of this import already ({result.models} models x {result.samples} samples)"
        )
        return
    console.print(f"{where}: added {result.added} models, now {result.models} models x {result.samples} samples")
    if result.sort_outdated:
        note(f"the store's sort predates these models: re-sort with `lifelong bench sort {result.store}`")


def print_sort(result: BenchSortResult) -> None:
    """The new sort version."""
    console.print(
        f"sort version {result.version}: {result.samples} samples ranked by {len(result.ranking_models)} fully "
        "observed models",
        highlight=False,
    )


def print_lines(values: list[Any]) -> None:
    """One value per line on stdout (a plan's sample ids or model names), nothing styled."""
    print("\n".join(str(value) for value in values))


def print_add_model(result: BenchAddModelResult) -> None:
    """The model added, and its estimated accuracy with its interval."""
    name, model_id, n = escape(result.name), result.model_id, result.samples
    if result.full:
        console.print(f"added model {name} (id {model_id}): all {n} samples observed", highlight=False)
        return
    accuracy = result.accuracy
    console.print(f"added model {name} (id {model_id}), {result.observed} of {n} samples observed", highlight=False)
    console.print(
        f"estimated accuracy {accuracy.accuracy:.4f}, {_level(result.confidence)} interval "
        f"{_span(accuracy.kind, accuracy.low, accuracy.high)}, k/n {accuracy.threshold_accuracy:.4f}",
        highlight=False,
    )


def _level(confidence: float) -> str:
    """An interval's level, e.g. '95%'."""
    return f"{100 * confidence:g}%"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _span(kind: str, low: float | None, high: float | None) -> str:
    """An accuracy's interval as 'low-high', 'exact' for an observed row, '-' when there is none."""
    if kind == "observed":
        return "exact"
    if _missing(low) or _missing(high):
        return "-"
    return f"{low:.4f}-{high:.4f}"


def _empty_line(store: Path, n: int, m: int) -> str:
    """The one-line state of a store with no samples or no models."""
    if n == 0 and m == 0:
        return f"{store}: empty store (0 models x 0 samples)"
    if n == 0:
        return f"{store}: {m} models but no samples yet (no accuracy is defined)"
    return f"{store}: {n} samples but no models yet"


def _json(data: Any) -> str:
    """JSON text of `data` with NaN written as null (NaN is not JSON) and NumPy scalars as numbers."""

    def clean(value: Any) -> Any:
        if isinstance(value, np.generic):
            value = value.item()
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


def print_status(result: BenchStatusResult, top: int = 20, as_json: bool = False) -> None:
    """Sizes, observed fraction and the leaderboard's `top` rows (or the state and the whole leaderboard as JSON)."""
    board = result.leaderboard.to_dict("records")
    if as_json:
        print(_json({**result.info(), "leaderboard": board}))
        return
    if result.n == 0 or result.m == 0:
        console.print(escape(_empty_line(result.store, result.n, result.m)), soft_wrap=True)
        return
    sort_text = f"sort version {result.latest_sort}" if result.latest_sort is not None else "not sorted yet"
    rows_text = "1 estimated row" if result.estimated_rows == 1 else f"{result.estimated_rows} estimated rows"
    console.print(escape(str(result.store)), highlight=False, soft_wrap=True)
    console.print(
        f"  {result.m} models x {result.n} samples, {result.observed_fraction:.2%} of cells observed", highlight=False
    )
    console.print(f"  {rows_text}, {sort_text}", highlight=False)
    cells = [
        (
            str(rank),
            str(row["name"] if row["name"] is not None else row["id"]),
            f"{row['accuracy']:.4f}",
            _span(row["kind"], row["low"], row["high"]),
            "-" if _missing(row["threshold_accuracy"]) else f"{row['threshold_accuracy']:.4f}",
            row["kind"],
            f"{row['observed_fraction']:.1%}",
        )
        for rank, row in enumerate(board[:top], start=1)
    ]
    if not cells:
        return
    shown = f"top {len(cells)} of {len(board)}" if len(cells) < len(board) else f"all {len(board)}"
    level = _level(result.confidence)
    console.print(f"\nleaderboard ({shown}; interval: {level}; k/n: Sort & Search's own estimate)")
    for text in leaderboard_lines(cells, console.width):
        console.print(escape(text), highlight=False, soft_wrap=True)


def print_check(result: BenchCheckResult) -> None:
    """Each problem on stderr, or `ok` (with the state of an empty store)."""
    for problem in result.problems:
        error_console.print(f"[red]problem:[/] {escape(problem)}")
    if result.problems:
        return
    n, m = result.n or 0, result.m or 0
    console.print(f"ok ({escape(_empty_line(result.store, n, m))})" if n == 0 or m == 0 else "ok", soft_wrap=True)


# -- the zoo and the estimators ------------------------------------------------------------------------------------
def print_zoo(result: BenchBuildZooResult, as_json: bool = False) -> None:
    """The zoo's sizes and accuracies and how to import it (or its whole summary as JSON)."""
    info, out = result.summary, result.out
    if as_json:
        print(json.dumps(info, indent=2, default=str))
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


def print_record(description: str, done: float, total: float | None) -> None:
    """A `progress` callback of the compare protocol, one line per record (`bench compare --verbose`, logs):
    `[k/N] what finished: its mean absolute error`."""
    if done:
        console.print(f"[{int(done)}/{int(total or 0)}] {escape(description)}", highlight=False)


def print_compare(result: BenchCompareResult, as_json: bool = False) -> None:
    """`--rank`/`--eval`: each method's mean absolute error and time; the protocol: its table and where it is."""
    from lifelong.commands.bench_compare_table import table_lines

    single = result.single
    if single is not None:
        if as_json:
            print(json.dumps(single))
            return
        console.print(
            f"{len(single['truth'])} models estimated from {single['budget']} samples each, fitted on "
            f"{result.sources} models (seed {single['seed']})"
        )
        console.print(f"{'method':<16} {'mean abs error %':>17} {'seconds':>9}")
        for method, row in single["methods"].items():
            console.print(f"{method:<16} {100 * row['mae']:>17.2f} {row['seconds']:>9.3f}")
        return
    if as_json:
        print(json.dumps({"rows": result.rows, "paired": result.paired}))
        return
    for line in table_lines(result.rows, result.paired, console.width):
        console.print(line, highlight=False, soft_wrap=True, markup=False)
    out = Path(result.out or ".")
    note(f"records in {out / 'records.jsonl'}, the table in {out / 'table.json'}")


# -- new samples ---------------------------------------------------------------------------------------------------
def print_plan_samples(result: BenchPlanSamplesResult) -> None:
    """The planned models' names, one a line; with a plan file, a summary and the add-samples command to run."""
    if result.out is None:
        print_lines(result.models)
        return
    for line in (
        f"planned {result.budget} of {result.store_models} models ({result.sampling} over the ranking, most accurate "
        f"first): {_some(result.models)}",
        f"written to {result.out}; evaluate every new sample on them, then:",
        f"  lifelong bench add-samples {result.store} --samples NEW.csv --results RESULTS.csv --plan {result.out}",
    ):
        console.print(escape(line), highlight=False, soft_wrap=True)


def _id_span(ids: list[int]) -> str:
    """Sample ids as '300-359' when consecutive, else the first few."""
    if ids == list(range(ids[0], ids[0] + len(ids))):
        return f"{ids[0]}-{ids[-1]}" if len(ids) > 1 else str(ids[0])
    return ", ".join(map(str, ids[:5])) + (", ..." if len(ids) > 5 else "")


def added_lines(added: BenchAddSamplesResult) -> list[str]:
    """What was added and the estimate's summary, as printed."""
    s, m, planned = len(added.sample_ids), added.models, len(added.planned)
    k = added.difficulty
    head = "completed the interrupted add: " if added.resumed else "added "
    store = added.store
    return [
        f"{head}{s} samples (ids {_id_span(added.sample_ids)}) to {store}: observed on {planned} of {m} models "
        f"({planned * s} cells), estimated for the other {m - planned}",
        f"estimated difficulty (models of {m} that get a sample right): mean {k.mean():.1f} ({k.mean() / m:.2f} of "
        f"the models), median {np.median(k):g}, min {k.min()}, max {k.max()}",
    ]


def print_add_samples(result: BenchAddSamplesResult) -> None:
    """What was added (a note first when it completed an interrupted add)."""
    if result.resumed:
        note("an interrupted add-samples of these samples was found: completed it with its own plan")
    for line in added_lines(result):
        console.print(escape(line), highlight=False, soft_wrap=True)
