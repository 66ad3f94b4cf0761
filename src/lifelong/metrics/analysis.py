"""Analysis of runs (docs/protocols/nevis.md#analyses): Pareto front, regret, forward transfer, slices, seed aggregates.

Pure functions of per-event records (as written to a run folder's events.jsonl) and of run summaries; reading
run folders is lifelong.results', drawing is lifelong.report's.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from lifelong.metrics.statistics import mean_std

SIZE_BINS = (1_000, 10_000)  # docs/protocols/nevis.md#slices: small < 1,000 items <= medium < 10,000 items <= large
SLICE_KEYS = ("domain", "size", "resolution")


def records_of_type(records: Iterable[Mapping[str, Any]], kind: str) -> list[Mapping[str, Any]]:
    """Records of one type ('train' or 'predict') in stream order."""
    return sorted((r for r in records if r.get("type") == kind), key=lambda r: r.get("event", 0))


def _listing(names: Iterable[str], limit: int = 10) -> str:
    """A short, sorted listing of names for error messages."""
    names = sorted(names)
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


# ----------------------------------------------------------------------------------------------- Pareto front


def pareto_front(points: Sequence[tuple[float, float]] | np.ndarray) -> list[int]:
    """Indices of the non-dominated (cflop, error) points, both minimised, in order of increasing cflop.

    A point is dominated when another is no worse in both and strictly better in one. Ties: identical points
    do not dominate each other, so all copies of a non-dominated point are on the front (in index order);
    of points with equal cflop only those with the lowest error can be on it, and equally for equal error.
    """
    arr = np.asarray(points, dtype=float)
    if arr.size == 0:
        return []
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"points must be (cflop, error) pairs, got an array of shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr).all(axis=1))
    if bad.size:
        raise ValueError(f"points {bad.tolist()} are not finite: {arr[bad].tolist()}; drop or fix those runs first")
    order = np.lexsort((arr[:, 1], arr[:, 0]))  # by cflop, then error; stable, so ties keep index order
    front: list[int] = []
    best_cheaper = math.inf  # lowest error among points with strictly smaller cflop
    start = 0
    while start < len(order):
        stop = start
        while stop < len(order) and arr[order[stop], 0] == arr[order[start], 0]:
            stop += 1
        group = order[start:stop]
        lowest = arr[group[0], 1]
        if lowest < best_cheaper:
            front.extend(int(i) for i in group if arr[i, 1] == lowest)
        best_cheaper = min(best_cheaper, lowest)
        start = stop
    return front


# ------------------------------------------------------------------------------------------------------ regret


def _errors_by_task(records: Iterable[Mapping[str, Any]], what: str) -> dict[str, float]:
    """Error of each evaluated task (uid -> error) in stream order; a task evaluated twice is an error."""
    errors: dict[str, float] = {}
    for record in records_of_type(records, "predict"):
        uid, error = record.get("task"), record.get("error")
        if uid in errors:
            raise ValueError(f"{what}: task {uid!r} is evaluated more than once (events of two runs mixed?)")
        if error is None or not math.isfinite(float(error)):
            raise ValueError(f"{what}: predict record of event {record.get('event')} ({uid!r}) has error {error!r}")
        errors[str(uid)] = float(error)
    return errors


def regret_curve(
    method_records: Iterable[Mapping[str, Any]], reference_records: Iterable[Mapping[str, Any]]
) -> np.ndarray:
    """R(t) = sum over the first t evaluated tasks of (method error - reference error), in the method's stream order.

    Both runs must have evaluated the same tasks (matched by uid); otherwise a ValueError names the tasks only
    one of them evaluated. With Independent as the reference this is the protocol's regret curve; R(T) is the
    total error difference, negative when the method beats the reference.
    """
    method = _errors_by_task(method_records, "method run")
    reference = _errors_by_task(reference_records, "reference run")
    if method.keys() != reference.keys():
        only_method, only_reference = method.keys() - reference.keys(), reference.keys() - method.keys()
        parts = []
        if only_method:
            parts.append(f"only the method run evaluated {_listing(only_method)}")
        if only_reference:
            parts.append(f"only the reference run evaluated {_listing(only_reference)}")
        raise ValueError(
            f"cannot compare runs that evaluated different tasks: {'; '.join(parts)}; "
            "compare finished runs over the same stream"
        )
    return np.cumsum([method[uid] - reference[uid] for uid in method], dtype=float)


# -------------------------------------------------------------------------------------------- forward transfer


def _auc(curve: Sequence[float], where: str) -> float:
    """Mean accuracy (1 - error) over a training curve of errors."""
    errors = np.asarray(curve, dtype=float)
    if not np.isfinite(errors).all():
        raise ValueError(f"{where}: dev curve has non-finite errors: {list(curve)}")
    return float(np.mean(1.0 - errors))


def forward_transfer_details(records: Iterable[Mapping[str, Any]]) -> tuple[dict[str, float], dict[str, str]]:
    """Forward transfer per repeated dataset, and for each repeated dataset left out, the reason why.

    FT = (AUC_2 - AUC_1) / (1 - AUC_1), where AUC_1 and AUC_2 are the mean accuracy (1 - error) over the training
    curve of the first and second occurrence of the dataset (records' `occurrence` 0 and 1: it counts earlier
    appearances). The curve is the `dev_curve` of the train record: the selected model's dev error after each
    epoch. It stands in for the paper's curve on the evaluation split, which the protocol keeps from the learner
    (so no learner can record it). Later occurrences are ignored. A dataset is skipped when a curve is missing
    or empty, or when AUC_1 = 1 (FT undefined).
    """
    curves: dict[str, dict[int, list[float]]] = {}
    for record in records_of_type(records, "train"):
        name, occurrence = str(record.get("task_name")), int(record.get("occurrence") or 0)
        curves.setdefault(name, {})[occurrence] = list(record.get("dev_curve") or [])
    values: dict[str, float] = {}
    skipped: dict[str, str] = {}
    for name, by_occurrence in curves.items():
        if 1 not in by_occurrence:
            continue
        missing = [which for which, k in (("first", 0), ("second", 1)) if not by_occurrence.get(k)]
        if missing:
            skipped[name] = f"no dev curve for the {' and '.join(missing)} occurrence (the learner reported none)"
            continue
        auc1 = _auc(by_occurrence[0], f"dataset {name!r}, first occurrence")
        auc2 = _auc(by_occurrence[1], f"dataset {name!r}, second occurrence")
        if auc1 >= 1.0:
            skipped[name] = "AUC_1 = 1 (no error from the first epoch on), so FT is undefined"
            continue
        values[name] = (auc2 - auc1) / (1.0 - auc1)
    return values, skipped


def forward_transfer(records: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """FT per dataset that occurs twice (see `forward_transfer_details`); warns naming the datasets skipped."""
    values, skipped = forward_transfer_details(records)
    if skipped:
        reasons = "; ".join(f"{name!r}: {why}" for name, why in sorted(skipped.items()))
        warnings.warn(f"forward transfer skipped {len(skipped)} repeated dataset(s): {reasons}", stacklevel=2)
    return values


# ------------------------------------------------------------------------------------------------------ slices


def _bin_labels(edges: Sequence[float]) -> list[str]:
    """Labels of the bins cut by ascending `edges`: '< a', 'a-b' (a <= v < b), ..., '>= z'."""
    text = [f"{e:,g}" if isinstance(e, float) and not float(e).is_integer() else f"{int(e):,}" for e in edges]
    middle = [f"{lo}-{hi}" for lo, hi in zip(text, text[1:], strict=False)]
    return [f"< {text[0]}", *middle, f">= {text[-1]}"]


def _task_value(
    record: Mapping[str, Any], key: str, values: Mapping[str, float] | None, train_items: Mapping[str, Any]
) -> Any:
    """The size or resolution of the record's task: `values` by uid or name, else what the records hold."""
    uid, name = record.get("task"), record.get("task_name")
    if values is not None:
        return values.get(uid, values.get(name))
    if key == "size":
        size = record.get("size", train_items.get(uid))
        return record.get("num_items") if size is None else size
    return record.get("resolution")


def slices(
    records: Iterable[Mapping[str, Any]],
    key: str = "domain",
    bins: Sequence[float] | None = None,
    *,
    values: Mapping[str, float] | None = None,
    meta_test_only: bool = False,
) -> dict[str, dict[str, Any]]:
    """Mean error of the evaluated tasks per slice: {slice label: {"mean_error", "tasks"}}; empty slices left out.

    `key="domain"`: one slice per domain (sorted; tasks with no or an empty domain under '(none)'); `bins` not allowed.
    `key="size"`: bins of the task's number of items, by default `SIZE_BINS`: '< 1,000', '1,000-10,000'
    (1,000 <= n < 10,000) and '>= 10,000'. Without `values` the size is the record's `size`, else the train
    record's `num_items`, else the predict record's `num_items` (the evaluation split: a proxy that keeps the
    order of sizes under fixed split fractions; pass full dataset sizes in `values` to bin by dataset size).
    `key="resolution"`: from `values` or the records' `resolution`; one slice per resolution unless `bins`.
    `values` maps task uid (or task name) to the size or resolution. Slices are in bin (or name) order.
    """
    if key not in SLICE_KEYS:
        raise ValueError(f"slice key must be one of {SLICE_KEYS}, got {key!r}")
    if key == "domain" and (bins is not None or values is not None):
        raise ValueError("slices by domain take no bins or values; they group by each record's 'domain'")
    if bins is None and key == "size":
        bins = SIZE_BINS
    if bins is not None:
        bins = [float(b) for b in bins]
        if not bins or any(b >= c for b, c in zip(bins, bins[1:], strict=False)):
            raise ValueError(f"bins must be a non-empty, strictly ascending sequence of edges, got {bins}")
    records = list(records)
    predictions = [
        r
        for r in records_of_type(records, "predict")
        if r.get("error") is not None and (r.get("meta_test") or not meta_test_only)
    ]
    train_items = {r.get("task"): r.get("num_items") for r in records_of_type(records, "train")}
    bin_labels = _bin_labels(bins) if bins is not None else []
    labelled: list[tuple[Any, str, float, str]] = []  # (sort key, label, error, uid) per task
    missing = []
    for record in predictions:
        uid, error = str(record.get("task")), float(record["error"])
        if key == "domain":
            label = str(record.get("domain") or "(none)")
            labelled.append(((label == "(none)", label), label, error, uid))
            continue
        value = _task_value(record, key, values, train_items)
        if value is None:
            missing.append(uid)
            continue
        if bins is None:
            labelled.append((float(value), f"{value:g}" if isinstance(value, float) else str(value), error, uid))
        else:
            position = int(np.searchsorted(bins, float(value), side="right"))
            labelled.append((position, bin_labels[position], error, uid))
    if missing:
        raise ValueError(
            f"no {key} known for tasks {_listing(missing)}; pass values={{task uid or name: {key}}} "
            f"or leave the {key} slice out"
        )
    result: dict[str, dict[str, Any]] = {}
    for _, label, error, uid in sorted(labelled, key=lambda item: item[0]):
        entry = result.setdefault(label, {"errors": [], "tasks": []})
        entry["errors"].append(error)
        entry["tasks"].append(uid)
    return {label: {"mean_error": float(np.mean(e["errors"])), "tasks": e["tasks"]} for label, e in result.items()}


def aggregate_seeds(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Mean and sample std (ddof=1; None with one seed) of E and cFLOP over seeds per (stream, eval split, setting):
    a row's `setting` (its learner and options), else its learner.

    Groups come in order of first appearance. E averages only the runs that evaluated meta-test tasks
    (`num_scored` of `num_runs`). Two rows of one group with the same seed are an error.
    """
    groups: dict[tuple[str, Any, str], list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["stream"], row.get("eval_split"), row.get("setting", row["learner"])), []).append(row)
    result = []
    for (stream, eval_split, setting), members in groups.items():
        learner = members[0]["learner"]
        seeds = [int(r["seed"]) for r in members]
        if len(set(seeds)) < len(seeds):
            repeated = sorted({s for s in seeds if seeds.count(s) > 1})
            runs = [r.get("run_id") for r in members if int(r["seed"]) in repeated]
            raise ValueError(
                f"learner {setting!r} on stream {stream!r} has several runs with seed(s) {repeated}: {runs}; "
                "pass each run once"
            )
        errors = [float(r["meta_test_mean_error"]) for r in members if r.get("meta_test_mean_error") is not None]
        error_mean, error_std = mean_std(errors)
        cflop_mean, cflop_std = mean_std([float(r["cflop"]) for r in members])
        result.append(
            {
                "stream": stream,
                "eval_split": eval_split,
                "learner": learner,
                "setting": setting,
                "seeds": seeds,
                "num_runs": len(members),
                "num_scored": len(errors),
                "meta_test_mean_error_mean": error_mean,
                "meta_test_mean_error_std": error_std,
                "cflop_mean": cflop_mean,
                "cflop_std": cflop_std,
            }
        )
    return result
