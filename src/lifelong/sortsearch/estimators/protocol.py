"""The comparison protocol of `lifelong bench compare`: splits of a zoo's models into source and target models,
every estimator run on the same splits, seeds, budgets and random draws, one record per (split, seed, budget,
method) with each target's estimate, interval, truth and per-sample scores.

Splits (`make_splits`), each for `seeds` seeds:
- interpolation: a random 25% of the models are targets, the rest sources (a new draw per seed);
- extrapolation: sources are the least accurate 50%, targets the most accurate 30% (the middle 20% unused; the
  same models for every seed, the seeds vary the draws);
- shift: whole model families (e.g. architectures) held out: seed s holds out family s mod F, the others are
  sources.
Per record: the estimator's plan is made from the source rows (timed, with its peak Python heap memory), the
targets' outcomes on the plan's samples are given to it, and its estimates are scored against the targets' true
accuracies over all samples. Records are appended to a JSON-lines file as they finish, so a killed comparison
resumes where it stopped (`run_comparison(..., resume=True)`).
"""

from __future__ import annotations

import json
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.core.files import atomic_write_bytes
from lifelong.sortsearch.estimators.base import Estimate, EstimationTask, estimator

SPLITS = ("interpolation", "extrapolation", "shift")
TARGET_SHARE = 0.25  # interpolation
EXTRAPOLATION_SOURCE, EXTRAPOLATION_TARGET = 0.5, 0.3


@dataclass(frozen=True)
class Split:
    kind: str
    seed: int
    source: np.ndarray  # model (row) indices
    target: np.ndarray
    note: str = ""


def make_splits(
    accuracies: Sequence[float], kinds: Sequence[str], seeds: int, families: Sequence[str] | None = None
) -> list[Split]:
    """The protocol's splits of models (rows) into sources and targets, `seeds` of each kind."""
    acc = np.asarray(accuracies, np.float64)
    m = acc.size
    out = []
    for kind in kinds:
        if kind not in SPLITS:
            raise ValueError(f"unknown split {kind!r}; choose from {', '.join(SPLITS)}")
        for seed in range(int(seeds)):
            if kind == "interpolation":
                perm = np.random.default_rng([seed, 0x1A7E]).permutation(m)
                cut = max(1, round(TARGET_SHARE * m))
                out.append(Split(kind, seed, np.sort(perm[cut:]), np.sort(perm[:cut]), "random 25% targets"))
            elif kind == "extrapolation":
                order = np.lexsort((np.arange(m), acc))  # least accurate first, ties by index
                source = np.sort(order[: round(EXTRAPOLATION_SOURCE * m)])
                target = np.sort(order[m - round(EXTRAPOLATION_TARGET * m) :])
                out.append(Split(kind, seed, source, target, "least accurate 50% -> most accurate 30%"))
            else:
                if families is None:
                    raise ValueError("the shift split needs each model's family (e.g. models.csv's architecture)")
                names = sorted(set(families))
                if len(names) < 2:
                    raise ValueError(f"the shift split needs at least 2 model families; found {names}")
                held = names[seed % len(names)]
                fam = np.asarray(families)
                source, target = np.flatnonzero(fam != held), np.flatnonzero(fam == held)
                out.append(Split(kind, seed, source, target, f"{held} held out"))
    return out


@dataclass(frozen=True)
class Record:
    """One estimator on one split, seed and budget: per target its estimate, interval, truth and per-sample
    scores; the plan's and the estimates' wall time and the peak heap memory while planning and estimating."""

    split: str
    seed: int
    budget: int
    method: str
    targets: list[int]
    truth: list[float]
    estimate: list[float]
    low: list[float] | None
    high: list[float] | None
    sample_error: list[float] | None  # per target: share of samples whose thresholded P(correct) is wrong
    brier: list[float] | None
    seconds: float
    peak_mib: float

    def key(self) -> tuple[str, int, int, str]:
        return (self.split, self.seed, self.budget, self.method)


def _per_sample_scores(per_sample: np.ndarray, truth_rows: np.ndarray) -> tuple[list[float], list[float]]:
    """Per target: thresholded per-sample error (P >= 0.5 taken as correct) and Brier score, in row chunks."""
    errors, briers = [], []
    for p, y in zip(per_sample, truth_rows, strict=True):
        p = np.asarray(p, np.float64)
        y = y.astype(np.float64)
        errors.append(float(np.mean((p >= 0.5) != (y == 1))))
        briers.append(float(np.mean((p - y) ** 2)))
    return errors, briers


def run_one(
    matrix: np.ndarray,
    split: Split,
    budget: int,
    method: str,
    make: Callable[[str], Any] = estimator,
    groups: np.ndarray | None = None,
    rows: tuple[np.ndarray, np.ndarray] | None = None,
) -> Record:
    """One estimator on one split and budget (source rows only for fitting; targets' outcomes on its samples).
    `rows` = (source rows, target rows) of the split when the caller has them (the same objects for every budget,
    so estimators can recognise a source they have already fitted)."""
    source, targets = rows if rows is not None else (matrix[split.source], matrix[split.target])
    task = EstimationTask(source, budget, seed=split.seed, groups=groups)
    tracemalloc.start()
    started = time.perf_counter()
    try:
        plan = make(method).plan(task)
        items = np.asarray(plan.items, np.int64)
        if items.shape != (budget,) or len(np.unique(items)) != budget or items.min() < 0 or items.max() >= task.n:
            raise ValueError(f"{method}: its plan must pick {budget} distinct samples; got {items.shape}")
        est: Estimate = plan.estimate(targets[:, items])
        seconds = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    truth = targets.mean(axis=1, dtype=np.float64)
    acc = np.asarray(est.accuracy, np.float64)
    if acc.shape != truth.shape or not np.all(np.isfinite(acc)):
        raise ValueError(f"{method}: expected {truth.size} finite estimates; got {acc.shape}")
    sample_error = brier = None
    if est.per_sample is not None:
        sample_error, brier = _per_sample_scores(est.per_sample, targets)
    return Record(
        split.kind,
        split.seed,
        budget,
        method,
        split.target.tolist(),
        truth.tolist(),
        acc.tolist(),
        None if est.low is None else np.asarray(est.low, np.float64).tolist(),
        None if est.high is None else np.asarray(est.high, np.float64).tolist(),
        sample_error,
        brier,
        seconds,
        peak / 2**20,
    )


def read_records(path: Path) -> list[Record]:
    """The records of a comparison's JSON-lines file (a last line cut short by a kill is ignored)."""
    records = []
    if not path.exists():
        return records
    for line in path.read_text().splitlines():
        try:
            records.append(Record(**json.loads(line)))
        except (json.JSONDecodeError, TypeError):
            continue
    return records


def run_comparison(
    matrix: np.ndarray,
    splits: Sequence[Split],
    budgets: Sequence[int],
    methods: Sequence[str],
    out: Path,
    *,
    resume: bool = False,
    groups: np.ndarray | None = None,
    on_record: Callable[[Record], None] | None = None,
) -> list[Record]:
    """Every (split, budget, method), appended to `out` (JSON lines) as it finishes; with `resume` the records
    already in `out` are kept and not run again. One estimator object per (split, method) serves every budget,
    so an estimator may cache what does not depend on the budget."""
    done = {r.key(): r for r in read_records(out)} if resume else {}
    out.parent.mkdir(parents=True, exist_ok=True)
    # the whole records only (a line cut short by a kill is dropped), written atomically before any append
    atomic_write_bytes(out, "".join(json.dumps(r.__dict__) + "\n" for r in done.values()).encode())
    records = list(done.values())
    for split in splits:
        built: dict[str, Any] = {}

        def make(name: str, built: dict[str, Any] = built) -> Any:
            if name not in built:
                built[name] = estimator(name)
            return built[name]

        rows = (matrix[split.source], matrix[split.target])
        for budget in budgets:
            for method in methods:
                if (split.kind, split.seed, int(budget), method) in done:
                    continue
                record = run_one(matrix, split, int(budget), method, make, groups, rows)
                with out.open("a") as f:
                    f.write(json.dumps(record.__dict__) + "\n")
                records.append(record)
                if on_record is not None:
                    on_record(record)
    return records
