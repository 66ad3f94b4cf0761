"""`lifelong bench plan-samples` / `add-samples`: add samples evaluated on m' models only (the paper's insert_D).

plan-samples picks the m' models to evaluate new samples on, spread over the store's models ranked most accurate
first; add-samples reads the new samples (the samples CSV of `bench import`) and those models' outcomes on them,
registers the samples, stores the outcomes as facts and every other model's cells as the estimate (each sample's
difficulty: the DP threshold of its outcomes along the ranking, `insert.sample_thresholds`).

A kill never corrupts the store (its write lock and registry, `store.py`) and a rerun completes an interrupted
add: before registering the samples, add-samples writes the plan it uses and a digest of the outcomes to
STORE/plans/add-samples-<digest of the samples>.json and deletes that file when every cell is written. A rerun
that finds the samples registered and that file present writes their cells again with the same plan (the writes
are idempotent), so the store ends equal to an uninterrupted add.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
import typer
from rich.markup import escape

from lifelong.commands.terminal import console, note
from lifelong.core.files import atomic_write_bytes

if TYPE_CHECKING:
    from lifelong.sortsearch.insert import SamplePlan

PLAN_FORMAT = "lifelong-sample-plan/1"
_PENDING = "add-samples-{}.json"  # under STORE/plans/ (plan_cache's folder): the plan of an add not yet complete


# -- the plan file -----------------------------------------------------------------------------------------------
def plan_document(plan: SamplePlan, names: list[str], sampling: str, seed: int, n: int) -> dict[str, Any]:
    """The plan as JSON-able data: the planned models (names, ids, ranked positions), the whole ranking, and how."""
    return {
        "format": PLAN_FORMAT,
        "sampling": sampling,
        "seed": seed,
        "budget": int(plan.model_ids.size),
        "store_models": int(plan.ranked_models.size),
        "store_samples": n,
        "models": [names[i] for i in plan.model_ids.tolist()],
        "model_ids": plan.model_ids.tolist(),
        "positions": plan.positions.tolist(),
        "ranking": plan.ranked_models.tolist(),
    }


def plan_from_document(doc: Any, where: str) -> tuple[SamplePlan, list[str]]:
    """(plan, planned model names) from `plan_document`'s data, or a ValueError naming `where` and what is wrong."""
    from lifelong.sortsearch.insert import SamplePlan

    redo = "make it again with `lifelong bench plan-samples STORE --budget M --out PLAN`"
    if not isinstance(doc, dict) or doc.get("format") != PLAN_FORMAT:
        raise ValueError(f"{where} is not a sample plan written by `lifelong bench plan-samples --out`: {redo}")
    try:
        ranking = np.asarray(doc["ranking"], np.int64)
        positions = np.asarray(doc["positions"], np.int64)
        model_ids = np.asarray(doc["model_ids"], np.int64)
        names = [str(name) for name in doc["models"]]
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{where} lacks a readable ranking, positions, model_ids or models: {redo}") from None
    m = ranking.size
    valid = (
        ranking.ndim == 1
        and np.array_equal(np.sort(ranking), np.arange(m))
        and positions.ndim == 1
        and 0 < positions.size == model_ids.size == len(names)
        and positions.min() >= 0
        and positions.max() < m
        and (np.diff(positions) > 0).all()
        and np.array_equal(ranking[positions], model_ids)
    )
    if not valid:
        raise ValueError(f"{where} is damaged (its planned models do not match its ranking): {redo}")
    return SamplePlan(model_ids, positions, ranking), names


def check_plan_models(plan: SamplePlan, names: list[str], store_names: list[str], where: str) -> None:
    """Refuse a plan whose models are not the store's: another store's, or one made before models were added."""
    redo = "plan again with `lifelong bench plan-samples STORE --budget M --out PLAN`"
    if plan.ranked_models.size != len(store_names):
        raise ValueError(
            f"{where} ranks {plan.ranked_models.size} models but the store has {len(store_names)}: models were added "
            f"since (or it is another store's plan); {redo}"
        )
    for model_id, name in zip(plan.model_ids.tolist(), names, strict=True):
        if store_names[model_id] != name:
            raise ValueError(
                f"{where} plans model {name!r} as id {model_id}, but the store's model {model_id} is "
                f"{store_names[model_id]!r}: it is another store's plan; {redo}"
            )


# -- the results ---------------------------------------------------------------------------------------------------
def read_sample_results(path: Path, samples: int) -> tuple[list[str] | None, np.ndarray]:
    """(model names or None, outcomes [models, samples]) of the new samples from RESULTS: a CSV model,sample_id,
    correct (sample_id: the row of the samples CSV, 0, 1, ...; every model on every sample; names in file order),
    or a 2-D .npy (no names: rows in plan order)."""
    from lifelong.commands.bench_inputs import _csv_rows, _int_cell

    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such results file")
    if path.suffix == ".npy":
        return None, _npy_results(path, samples)
    what = "a results CSV needs columns model, sample_id (the row of --samples: 0, 1, ...), correct (0 or 1)"
    rows = _csv_rows(path, ("model", "sample_id", "correct"), what)
    cells: dict[tuple[str, int], int] = {}
    for line, row in enumerate(rows, start=2):
        sample = _int_cell(path, line, "sample_id", row["sample_id"])
        if not 0 <= sample < samples:
            raise ValueError(
                f"{path}, line {line}: sample_id {sample} is not a row of --samples (sample ids 0-{samples - 1})"
            )
        key = (str(row["model"]), sample)
        if key in cells:
            raise ValueError(f"{path}, line {line}: model {key[0]!r} on sample_id {sample} is given twice")
        cells[key] = _int_cell(path, line, "correct", row["correct"], (0, 1))
    models = list(dict.fromkeys(model for model, _ in cells))
    outcomes = np.zeros((len(models), samples), np.uint8)
    for i, name in enumerate(models):
        for sample in range(samples):
            if (name, sample) not in cells:
                raise ValueError(
                    f"{path} lacks model {name!r} on sample_id {sample}: give every planned model's outcome on "
                    f"every new sample ({len(models)} models x {samples} samples)"
                )
            outcomes[i, sample] = cells[name, sample]
    return models, outcomes


def in_plan_order(given: list[str] | None, outcomes: np.ndarray, planned: list[str], path: Path) -> np.ndarray:
    """The outcomes' rows in plan order: a CSV's by name (exactly the planned models), a .npy's as they are."""
    from lifelong.commands.bench_inputs import _some

    if given is None:
        if outcomes.shape[0] != len(planned):
            raise ValueError(
                f"{path} holds {outcomes.shape[0]} rows but the plan has {len(planned)} models: give one row per "
                "planned model, in the order `lifelong bench plan-samples` lists them"
            )
        return outcomes
    missing = [name for name in planned if name not in given]
    extra = [name for name in given if name not in planned]
    if missing or extra:
        raise ValueError(
            f"{path} must hold exactly the planned models' outcomes ({len(planned)} models, as `lifelong bench "
            f"plan-samples` lists them); planned but missing: {_some(missing)}; not planned: {_some(extra)}"
        )
    row = {name: i for i, name in enumerate(given)}
    return outcomes[[row[name] for name in planned]]


def _npy_results(path: Path, samples: int) -> np.ndarray:
    """Outcomes [models, samples] from a 2-D .npy of 0/1, rows in plan order, columns in --samples order."""
    from lifelong.sortsearch.experiment import open_zero_one

    needs = (
        "--results needs the planned models' outcomes as a 2-D array of 0/1: one row per planned model (in "
        f"`lifelong bench plan-samples` order) x {samples} columns (the rows of --samples)"
    )
    outcomes = open_zero_one(path, ndim=2, what="a 2-D array of 0/1, planned models x new samples", needs=needs)
    if outcomes.shape[1] != samples:
        from lifelong.sortsearch.experiment import shape_words

        raise ValueError(f"{path} holds {shape_words(outcomes.shape)}; {needs}")
    return outcomes


# -- adding --------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AddedSamples:
    """What an add did: the new samples' ids, the planned models, each sample's estimated difficulty k of m."""

    sample_ids: list[int]
    planned: list[str]
    difficulty: np.ndarray
    models: int
    resumed: bool


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def add_samples_from_files(
    bench: Any, samples: Path, results: Path, plan_file: Path | None, sampling: str, seed: int
) -> AddedSamples:
    """Add the samples of the samples CSV `samples` from their planned models' outcomes in `results`; complete an
    interrupted add of the same samples (module docstring). Raises ValueError / LookupError / OSError in CLI words."""
    from lifelong.sortsearch.insert import sample_thresholds, write_sample_cells
    from lifelong.sortsearch.plan_cache import PLANS_DIR
    from lifelong.sortsearch.samples_csv import read_samples_csv, store_records

    records = store_records(read_samples_csv(samples))
    hashes = [record["content_hash"] for record in records]
    pending = bench.path / PLANS_DIR / _PENDING.format(_digest("\n".join(hashes).encode()))
    stored = {h: i for i, h in enumerate(bench.sample_hashes())}
    present = [h for h in hashes if h in stored]
    store_names = [record.name for record in bench.model_records()]
    if present and (len(present) < len(hashes) or not pending.is_file()):
        line = 2 + hashes.index(present[0])
        done = len(present) == len(hashes)
        raise ValueError(
            f"{samples}, line {line}: the sample with content_hash {present[0]} is in the store already (id "
            f"{stored[present[0]]})"
            + (": every sample of it was added before, nothing to add" if done else ": drop the rows already added")
        )
    resumed = bool(present)
    given, outcomes = read_sample_results(results, len(records))
    if resumed:  # an add of these samples was interrupted after registering them: its plan decides
        document = _read_json(pending)
        document = document if isinstance(document, dict) else {}
        plan, names = plan_from_document(document.get("plan"), str(pending))
        if plan_file is not None and _read_json(plan_file).get("models") != names:
            raise ValueError(f"{plan_file} is not the plan the interrupted add used ({pending}): drop --plan")
    else:
        plan, names = _plan(bench, plan_file, store_names, outcomes.shape[0], sampling, seed, results)
    outcomes = in_plan_order(given, outcomes, names, results)
    digest = _digest(outcomes.tobytes())
    if resumed:
        if document.get("outcomes") != digest:
            raise ValueError(
                f"an interrupted add of these samples used other results than {results} ({pending} records its plan): "
                "pass the same --results to complete it"
            )
        ids = [stored[h] for h in hashes]
        write_sample_cells(bench, ids, plan, outcomes)
    else:
        n = bench.size()[0]
        doc = {"plan": plan_document(plan, store_names, sampling, seed, n), "outcomes": digest}
        atomic_write_bytes(pending, json.dumps(doc).encode())
        try:
            ids = bench.add_samples(records)
        except Exception:
            pending.unlink(missing_ok=True)  # nothing was registered: no add to complete
            raise
        write_sample_cells(bench, ids, plan, outcomes)
    pending.unlink(missing_ok=True)
    return AddedSamples(ids, names, sample_thresholds(plan, outcomes), plan.ranked_models.size, resumed)


def _plan(
    bench: Any, plan_file: Path | None, store_names: list[str], budget: int, sampling: str, seed: int, results: Path
) -> tuple[SamplePlan, list[str]]:
    """The plan of a new add: PLAN's (checked against the store), or planned again for the results' m' models."""
    from lifelong.sortsearch.insert import plan_samples

    if plan_file is not None:
        plan, names = plan_from_document(_read_json(plan_file), str(plan_file))
        check_plan_models(plan, names, store_names, str(plan_file))
        return plan, names
    if budget > len(store_names):
        raise ValueError(f"{results} holds {budget} models' outcomes but the store has {len(store_names)} models")
    plan = plan_samples(bench, budget, sampling=sampling, seed=seed)
    return plan, [store_names[i] for i in plan.model_ids.tolist()]


def _read_json(path: Path) -> Any:
    """The JSON data of `path`, or a ValueError naming it."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such plan file (write one with `lifelong bench plan-samples --out`)")
    try:
        return json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(
            f"{path} is not a JSON plan ({exc}): write one with `lifelong bench plan-samples --out`"
        ) from None


def _span(ids: list[int]) -> str:
    """Sample ids as '300-359' when consecutive, else the first few."""
    if ids == list(range(ids[0], ids[0] + len(ids))):
        return f"{ids[0]}-{ids[-1]}" if len(ids) > 1 else str(ids[0])
    return ", ".join(map(str, ids[:5])) + (", ..." if len(ids) > 5 else "")


def added_lines(added: AddedSamples, store: Path) -> list[str]:
    """What was added and the estimate's summary, as printed."""
    s, m, planned = len(added.sample_ids), added.models, len(added.planned)
    k = added.difficulty
    head = "completed the interrupted add: " if added.resumed else "added "
    return [
        f"{head}{s} samples (ids {_span(added.sample_ids)}) to {store}: observed on {planned} of {m} models "
        f"({planned * s} cells), estimated for the other {m - planned}",
        f"estimated difficulty (models of {m} that get a sample right): mean {k.mean():.1f} ({k.mean() / m:.2f} of "
        f"the models), median {np.median(k):g}, min {k.min()}, max {k.max()}",
    ]


# -- the commands --------------------------------------------------------------------------------------------------
def plan_samples_command(
    store: Annotated[Path, typer.Argument(help="The store.")],
    budget: Annotated[
        int, typer.Option("--budget", metavar="M", min=1, help="m': models to evaluate the new samples on.")
    ],
    sampling: Annotated[
        str,
        typer.Option(
            "--sampling",
            metavar="uniform|random",
            help="Spread evenly over the models ranked most accurate first (the paper's), or at random.",
        ),
    ] = "uniform",
    seed: Annotated[int, typer.Option("--seed", metavar="N", min=0, help="Seed of --sampling random.")] = 0,
    out: Annotated[
        Path | None,
        typer.Option("--out", metavar="PLAN", help="Write the plan (JSON, for add-samples --plan); print a summary."),
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing PLAN file.")] = False,
) -> None:
    """Print the models new samples must be evaluated on (one name per line, most accurate first)."""
    from lifelong.commands.bench_inputs import _fail, _open, _some
    from lifelong.sortsearch.insert import plan_samples

    try:
        if out is not None and out.exists() and not overwrite:
            raise ValueError(f"{out} already exists; pass --overwrite to replace it, or --out to write elsewhere")
        with _open(store) as bench:
            n, m = bench.size()
            if 0 < m < budget:  # no models at all: plan_samples says so
                raise ValueError(f"--budget {budget} is more than the store's {m} models: lower it")
            plan = plan_samples(bench, budget, sampling=sampling, seed=seed)
            names = [record.name for record in bench.model_records()]
        planned = [names[i] for i in plan.model_ids.tolist()]
        if out is not None:
            atomic_write_bytes(out, json.dumps(plan_document(plan, names, sampling, seed, n), indent=1).encode())
    except (LookupError, ValueError, OSError) as exc:
        raise _fail(exc) from None
    if out is None:
        typer.echo("\n".join(planned))
        return
    for line in (
        f"planned {budget} of {m} models ({sampling} over the ranking, most accurate first): {_some(planned)}",
        f"written to {out}; evaluate every new sample on them, then:",
        f"  lifelong bench add-samples {store} --samples NEW.csv --results RESULTS.csv --plan {out}",
    ):
        console.print(escape(line), highlight=False, soft_wrap=True)


def add_samples_command(
    store: Annotated[Path, typer.Argument(help="The store.")],
    samples: Annotated[
        Path,
        typer.Option(
            "--samples",
            metavar="FILE",
            help="The new samples: a samples CSV as `bench import` takes (source, domain, label, content_hash).",
        ),
    ],
    results: Annotated[
        Path,
        typer.Option(
            "--results",
            metavar="FILE",
            help="CSV model,sample_id,correct (sample_id: the row of --samples, 0, 1, ...), or a 2-D .npy: the "
            "planned models (in plan order) x the new samples.",
        ),
    ],
    plan: Annotated[
        Path | None,
        typer.Option("--plan", metavar="PLAN", help="The plan from `plan-samples --out` (default: plan again)."),
    ] = None,
    sampling: Annotated[
        str,
        typer.Option("--sampling", metavar="uniform|random", help="The plan used, without --plan (see plan-samples)."),
    ] = "uniform",
    seed: Annotated[
        int, typer.Option("--seed", metavar="N", min=0, help="The seed the plan used, without --plan.")
    ] = 0,
) -> None:
    """Add samples from their outcomes on the planned models (the other models' cells estimated).

    Run it again after an interruption: it completes the add with the same plan.
    """
    from lifelong.commands.bench_inputs import _fail, _open

    try:
        with _open(store) as bench:
            added = add_samples_from_files(bench, samples, results, plan, sampling, seed)
    except (LookupError, ValueError, OSError, TypeError) as exc:
        raise _fail(exc) from None
    if added.resumed:
        note("an interrupted add-samples of these samples was found: completed it with its own plan")
    for line in added_lines(added, store):
        console.print(escape(line), highlight=False, soft_wrap=True)
