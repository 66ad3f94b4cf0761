"""`lifelong bench plan-samples` / `add-samples` from Python: add samples evaluated on m' models only (insert_D).

plan-samples picks the m' models to evaluate new samples on, spread over the store's models ranked most accurate
first; add-samples reads the new samples (the samples CSV of `bench import`) and those models' outcomes on them,
registers the samples, stores the outcomes as facts and every other model's cells as the estimate (each sample's
difficulty: the DP threshold of its outcomes along the ranking, `insert.sample_thresholds`).

A kill never corrupts the store (its write lock and registry, `store.py`) and a rerun completes an interrupted
add: before registering the samples, add-samples writes the plan it uses and a digest of the outcomes to
STORE/plans/add-samples-<digest of the samples>.json and deletes that file when every cell is written. A rerun
that finds the samples registered and that file present writes their cells again with the same plan (the writes
are idempotent), so the store ends equal to an uninterrupted add: from Python, call `bench_add_samples` again with
the same spec. Nothing here prints (`bench_console` renders the results as the commands print them).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lifelong.commands.bench_inputs import _csv_rows, _int_cell, _open, _some, at_least, toolkit_errors
from lifelong.core.errors import Interrupted, ResumeRefused, UsageError
from lifelong.core.files import atomic_write_bytes
from lifelong.core.progress import Progress, ProgressUpdate, progress_bar

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
class BenchAddSamplesResult:
    """What an add did: the new samples' ids, the planned models, each sample's estimated difficulty k (how many of
    the store's `models` get it right), and whether it completed an interrupted add of the same samples."""

    sample_ids: list[int]
    planned: list[str]
    difficulty: np.ndarray
    models: int
    resumed: bool
    store: Path


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def add_samples_from_files(
    bench: Any,
    samples: Path,
    results: Path,
    plan_file: Path | None,
    sampling: str,
    seed: int,
    advance: ProgressUpdate | None = None,
) -> BenchAddSamplesResult:
    """Add the samples of the samples CSV `samples` from their planned models' outcomes in `results`; complete an
    interrupted add of the same samples (module docstring). Raises ValueError / LookupError / OSError in CLI words.
    `advance` moves a progress bar of two steps: the samples registered, their cells written."""
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
        if advance is not None:
            advance(1, "samples registered before")
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
        if advance is not None:
            advance(1, "samples registered")
        write_sample_cells(bench, ids, plan, outcomes)
    pending.unlink(missing_ok=True)
    if advance is not None:
        advance(1, "cells written")
    k = sample_thresholds(plan, outcomes)
    return BenchAddSamplesResult(ids, names, k, int(plan.ranked_models.size), resumed, Path(bench.path))


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


# -- the workflows -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BenchPlanSamplesSpec:
    """`lifelong bench plan-samples STORE --budget M`: the m' models new samples must be evaluated on, spread over
    the store's models ranked most accurate first (`sampling` uniform, the paper's) or at random (with `seed`);
    `out` writes the plan (JSON, for add-samples' `plan`), `overwrite` replaces an existing one."""

    store: str | Path
    budget: int
    sampling: str = "uniform"
    seed: int = 0
    out: str | Path | None = None
    overwrite: bool = False


@dataclass(frozen=True)
class BenchPlanSamplesResult:
    """The planned models' names and ids, most accurate first, out of the store's `store_models` models, and the
    plan file written (None without `out`)."""

    models: list[str]
    model_ids: list[int]
    store_models: int
    budget: int
    sampling: str
    store: Path
    out: Path | None = None


def bench_plan_samples(spec: BenchPlanSamplesSpec) -> BenchPlanSamplesResult:
    """Plan the models new samples must be evaluated on; write the plan to `out` when given."""
    from lifelong.sortsearch.insert import plan_samples

    at_least(spec.budget, 1, "--budget")
    at_least(spec.seed, 0, "--seed")
    store, out = Path(spec.store), None if spec.out is None else Path(spec.out)
    with toolkit_errors():
        if out is not None and out.exists() and not spec.overwrite:
            raise ResumeRefused(f"{out} already exists; pass --overwrite to replace it, or --out to write elsewhere")
        with _open(store) as bench:
            n, m = bench.size()
            if 0 < m < spec.budget:  # no models at all: plan_samples says so
                raise UsageError(f"--budget {spec.budget} is more than the store's {m} models: lower it")
            plan = plan_samples(bench, spec.budget, sampling=spec.sampling, seed=spec.seed)
            names = [record.name for record in bench.model_records()]
        planned = [names[i] for i in plan.model_ids.tolist()]
        if out is not None:
            document = plan_document(plan, names, spec.sampling, spec.seed, n)
            atomic_write_bytes(out, json.dumps(document, indent=1).encode())
    return BenchPlanSamplesResult(planned, plan.model_ids.tolist(), m, spec.budget, spec.sampling, store, out)


@dataclass(frozen=True)
class BenchAddSamplesSpec:
    """`lifelong bench add-samples STORE --samples NEW.csv --results RESULTS`: add the samples of a samples CSV from
    their outcomes on the planned models (`plan`, a plan-samples file; without it planned again with `sampling` and
    `seed`), every other model's cells estimated. Run it again after an interruption: it completes the add."""

    store: str | Path
    samples: str | Path
    results: str | Path
    plan: str | Path | None = None
    sampling: str = "uniform"
    seed: int = 0


def bench_add_samples(spec: BenchAddSamplesSpec, *, progress: Progress = False) -> BenchAddSamplesResult:
    """Register the samples and write their cells (the plan kept in STORE/plans/ until every cell is written);
    `progress` moves through two steps. Ctrl-C raises Interrupted: the same spec again completes the add."""
    at_least(spec.seed, 0, "--seed")
    plan = None if spec.plan is None else Path(spec.plan)
    with toolkit_errors(), _open(Path(spec.store)) as bench:
        with progress_bar(progress, 2, description="add-samples") as advance:
            try:
                return add_samples_from_files(
                    bench, Path(spec.samples), Path(spec.results), plan, spec.sampling, spec.seed, advance
                )
            except KeyboardInterrupt:
                raise Interrupted("Run the same add-samples again to complete the add (it keeps its plan).") from None
