"""Bayesian hyper-parameter optimisation: a sequential search with a Gaussian-process surrogate and the
upper-confidence-bound acquisition, GP-UCB (Srinivas et al. 2010), as Nevis'22's BHPO baseline
(docs/protocols/nevis.md#bhpo).

Trials run one after the other. The first `init_trials` are the random search's first trials (the same seeded
draws), then each next trial maximises UCB(x) = mu(x) + kappa * sigma(x) of scikit-learn's GaussianProcessRegressor
fitted to the finished trials' negated dev errors, over the search space mapped to the unit cube (log scale for
learning rate, weight decay and the auxiliary weight; choices at evenly spaced points). The acquisition is
maximised over a seeded set of candidate points, then refined by L-BFGS-B on the continuous coordinates from the
best candidates. Every trial is persisted as it ends (as in `hpsearch.search`), with the search's settings beside
them, so a killed search resumes from its finished trials without redoing them and the proposals after them are
the same (they depend only on the finished trials and the seed).
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lifelong.core.executors import Executor, LocalExecutor
from lifelong.core.files import atomic_write_bytes
from lifelong.training.hpsearch import (
    BATCH_SCALES,
    SCHEDULES,
    SearchSpace,
    Trial,
    TrialResult,
    best_of,
    checked_result,
    load_finished,
    sample_trials,
    save_finished,
)

_SIGNATURE_FILE = "search.json"
_REFINE_STARTS = 5  # candidates L-BFGS-B starts from


@dataclass(frozen=True)
class Dimension:
    """One coordinate of the search: a Trial field, on a log or linear scale between low and high, or a choice."""

    name: str
    scale: str  # "log", "linear" or "choice"
    low: float = 0.0
    high: float = 1.0
    choices: tuple = ()

    def to_unit(self, value: float | str | bool) -> float:
        """`value` mapped to [0, 1]."""
        if self.scale == "choice":
            return self.choices.index(value) / max(1, len(self.choices) - 1)
        low, high, value = float(self.low), float(self.high), float(value)  # type: ignore[arg-type]
        if self.scale == "log":
            low, high, value = math.log(low), math.log(high), math.log(value)
        return 0.0 if high == low else min(1.0, max(0.0, (value - low) / (high - low)))

    def from_unit(self, u: float) -> float | str | bool:
        """The value at `u` in [0, 1] (a choice: the nearest one)."""
        u = min(1.0, max(0.0, float(u)))
        if self.scale == "choice":
            return self.choices[round(u * (len(self.choices) - 1))]
        if self.scale == "log":
            return float(
                min(self.high, max(self.low, math.exp(math.log(self.low) + u * math.log(self.high / self.low))))
            )
        return float(self.low + u * (self.high - self.low))


def dimensions(space: SearchSpace) -> list[Dimension]:
    """The coordinates the GP models for `space` (a fixed label smoothing is not one)."""
    dims = [
        Dimension("lr", "choice", choices=tuple(sorted(space.lr_grid)))
        if space.lr_grid is not None
        else Dimension("lr", "log", *space.lr)
    ]
    if space.fixed_label_smoothing is None:
        dims.append(Dimension("label_smoothing", "linear", *space.label_smoothing))
    if space.aux_weight is not None:
        dims.append(Dimension("aux_weight", "log", *space.aux_weight))
    if space.size == "large":
        dims += [
            Dimension("weight_decay", "log", *space.weight_decay),
            Dimension("schedule", "choice", choices=SCHEDULES),
            Dimension("batch_scale", "choice", choices=BATCH_SCALES),
            Dimension("crop", "choice", choices=(False, True)),
            Dimension("flip", "choice", choices=(False, True)),
        ]
    return dims


def encode(dims: Sequence[Dimension], trial: Trial) -> np.ndarray:
    """`trial`'s point in the unit cube of `dims`."""
    return np.array([d.to_unit(getattr(trial, d.name)) for d in dims], dtype=np.float64)


def decode(dims: Sequence[Dimension], point: np.ndarray, index: int, space: SearchSpace) -> Trial:
    """The trial `index` at `point` of the unit cube of `dims` (choices snapped to the nearest)."""
    values = {d.name: d.from_unit(u) for d, u in zip(dims, point, strict=True)}
    values.setdefault("label_smoothing", space.fixed_label_smoothing)
    return Trial(index, **values)


@dataclass(frozen=True)
class GpUcb:
    """GP-UCB's settings: random trials before the GP proposes, the exploration weight, and the candidate set.

    kappa = sqrt(beta) weighs sigma against mu; 1.8 is the constant UCB coefficient of Open Source Vizier's GP
    bandit (the service the paper used). The candidate set of `candidates` seeded uniform points (choices snapped)
    is where the acquisition is first evaluated; L-BFGS-B then refines the best few on the continuous coordinates.
    """

    init_trials: int = 3
    kappa: float = 1.8
    candidates: int = 2048

    def __post_init__(self) -> None:
        if not isinstance(self.init_trials, int) or self.init_trials < 1:
            raise ValueError(f"the GP's initial random trials must be a positive integer, got {self.init_trials!r}")
        if not 0 <= self.kappa < math.inf:
            raise ValueError(f"the UCB exploration weight kappa must be >= 0, got {self.kappa!r}")
        if not isinstance(self.candidates, int) or self.candidates < 1:
            raise ValueError(f"candidates must be a positive integer, got {self.candidates!r}")


def objective(results: Sequence[TrialResult]) -> np.ndarray:
    """What the GP models: minus each trial's dev error; a failed trial (NaN) counts as the worst error seen."""
    errors = [r.dev_error for r in results]
    if any(e is None for e in errors):
        raise ValueError("GP-UCB search needs a dev error for every trial: the task has no dev split to score them on")
    finite = [e for e in errors if not math.isnan(e)]  # type: ignore[arg-type]
    worst = max(finite, default=1.0)
    return -np.array([worst if math.isnan(e) else e for e in errors], dtype=np.float64)  # type: ignore[arg-type]


def fit_surrogate(points: np.ndarray, values: np.ndarray, seed: int):
    """scikit-learn's GaussianProcessRegressor on (points, values): a constant times an ARD Matern-5/2 kernel plus
    white noise, targets normalised, kernel hyper-parameters by maximum marginal likelihood (seeded restarts)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

    dims = points.shape[1]
    kernel = ConstantKernel(1.0, (1e-3, 1e3)) * Matern(
        length_scale=np.full(dims, 0.5), length_scale_bounds=(1e-2, 1e2), nu=2.5
    ) + WhiteKernel(1e-4, (1e-8, 1e-1))
    gp = GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=3, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gp.fit(points, values)
    return gp


def ucb(gp, points: np.ndarray, kappa: float) -> np.ndarray:
    """The upper confidence bound mu + kappa * sigma of `gp` at each of `points` (rows)."""
    mean, std = gp.predict(np.atleast_2d(points), return_std=True)
    return mean + kappa * std


def propose(
    space: SearchSpace, results: Sequence[TrialResult], index: int, seed: int, settings: GpUcb = GpUcb()
) -> Trial:
    """Trial `index`: a random-search draw while fewer than `settings.init_trials` trials have finished, else the
    maximiser of UCB of the GP fitted to `results`."""
    if len(results) < settings.init_trials:
        return sample_trials(space, seed=seed)[index]  # the random search's trial `index` (same space, same seed)
    from threadpoolctl import threadpool_limits  # scikit-learn's dependency

    dims = dimensions(space)
    with threadpool_limits(1):  # matrices of a few trials: BLAS threads only contend (and the GP fit stays exact)
        gp = fit_surrogate(np.stack([encode(dims, r.trial) for r in results]), objective(results), seed)
        point = maximise_ucb(gp, dims, settings, np.random.default_rng([seed, index]))
    return decode(dims, point, index, space)


def maximise_ucb(gp, dims: Sequence[Dimension], settings: GpUcb, rng: np.random.Generator) -> np.ndarray:
    """The point of the unit cube with the highest UCB found: the best of the seeded candidates, or better, the best
    L-BFGS-B refinement of the top candidates over the continuous coordinates (choices held)."""
    from scipy.optimize import minimize

    snapped = np.array(
        [
            [d.to_unit(d.from_unit(u)) for d, u in zip(dims, row, strict=True)]
            for row in rng.random((settings.candidates, len(dims)))
        ]
    )
    scores = ucb(gp, snapped, settings.kappa)
    best_point, best_score = snapped[int(np.argmax(scores))], float(np.max(scores))
    free = [i for i, d in enumerate(dims) if d.scale != "choice"]
    if not free:
        return best_point
    for start in snapped[np.argsort(-scores, kind="stable")[:_REFINE_STARTS]]:

        def negative(x: np.ndarray, start: np.ndarray = start) -> float:
            point = start.copy()
            point[free] = x
            return -float(ucb(gp, point, settings.kappa)[0])

        found = minimize(negative, start[free], method="L-BFGS-B", bounds=[(0.0, 1.0)] * len(free))
        if -found.fun > best_score:
            best_point = start.copy()
            best_point[free] = np.clip(found.x, 0.0, 1.0)
            best_score = -float(found.fun)
    return best_point


def _signature(space: SearchSpace, seed: int, settings: GpUcb) -> dict:
    return {"search": "gp-ucb", "seed": seed, "space": dataclasses.asdict(space), "gp": dataclasses.asdict(settings)}


def _check_signature(workdir: Path, signature: dict) -> None:
    """Write the search's settings beside its trials, or refuse a folder holding another search's trials."""
    path = workdir / _SIGNATURE_FILE
    expected = json.loads(json.dumps(signature))  # tuples as lists, as read back
    if path.exists():
        found = json.loads(path.read_text())
        if found != expected:
            raise ValueError(
                f"{workdir} holds the trials of another search ({found}), not of this one ({expected}); delete it "
                "(or use another workdir) to start this search afresh"
            )
        return
    if any(workdir.glob("trial-*.pkl")):
        raise ValueError(
            f"{workdir} holds trials of a search that was not GP-UCB; delete it (or use another workdir) to start "
            "this search afresh"
        )
    atomic_write_bytes(path, (json.dumps(expected, indent=1, sort_keys=True) + "\n").encode())


def gp_ucb_search(
    fit: Callable[[Trial], TrialResult],
    space: SearchSpace,
    seed: int,
    *,
    settings: GpUcb = GpUcb(),
    workdir: Path | None = None,
    executor: Executor | None = None,
    progress: Callable[[TrialResult], None] | None = None,
) -> tuple[TrialResult, list[TrialResult]]:
    """Run `space.trials` trials one after the other, each proposed from the ones before; return (best, all results
    in trial order). Finished trials in `workdir` are loaded instead of run; the FLOPs of all trials count."""
    results: list[TrialResult] = []
    if workdir is not None:
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        _check_signature(workdir, _signature(space, seed, settings))
    for index in range(space.trials):
        result = None if workdir is None else load_finished(workdir, index)
        if result is None:
            trial = propose(space, results, index, seed, settings)
            result = _run_one(fit, trial, executor)
            if workdir is not None:
                save_finished(workdir, result)
        results.append(result)
        if progress is not None:
            progress(result)
    return best_of(results), results


def _run_one(fit: Callable[[Trial], TrialResult], trial: Trial, executor: Executor | None) -> TrialResult:
    return checked_result((executor or LocalExecutor()).map(fit, [trial])[0], trial)
