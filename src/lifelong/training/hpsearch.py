"""Per-task hyper-parameter search: seeded random trials, best on dev, all FLOPs count
(docs/protocols/nevis.md#hyper-parameter-search).

A trial is a learning rate and a label smoothing. `search` runs a picklable `fit(trial) -> TrialResult` for every
trial, in this process or through an executor (Ray), persisting each trial in a work folder of this process as its
result arrives, so that an interrupted search resumes without redoing finished trials. Selection: lowest dev
error; ties, None and NaN go to the lowest trial index.
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lifelong.core.executors import Executor, LocalExecutor
from lifelong.core.files import atomic_write_bytes

_TRIAL_FILE = "trial-{index:04d}.pkl"


@dataclass(frozen=True)
class SearchSpace:
    """Random search: `trials` draws of lr (log-uniform in `lr`) and label smoothing (uniform in `label_smoothing`).

    Frugal variant: `fixed_label_smoothing` (e.g. 0.15) replaces the label-smoothing draw, and `lr_grid` (e.g.
    (1e-4, 1e-3, 1e-2, 1e-1)) replaces the lr draw: trials walk a seeded permutation of the grid, cycling when
    `trials` exceeds its length, so `trials == len(lr_grid)` tries every grid value once.
    """

    trials: int = 16
    lr: tuple[float, float] = (1e-4, 1e-1)
    label_smoothing: tuple[float, float] = (0.0, 0.3)
    fixed_label_smoothing: float | None = None
    lr_grid: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "lr", tuple(float(v) for v in self.lr))
        object.__setattr__(self, "label_smoothing", tuple(float(v) for v in self.label_smoothing))
        if self.lr_grid is not None:
            object.__setattr__(self, "lr_grid", tuple(float(v) for v in self.lr_grid))
        if not isinstance(self.trials, int) or self.trials < 1:
            raise ValueError(f"trials must be a positive integer, got {self.trials!r}")
        if len(self.lr) != 2 or not 0 < self.lr[0] <= self.lr[1] < math.inf:
            raise ValueError(f"lr must be a range (low, high) with 0 < low <= high, got {self.lr!r}")
        ls = self.label_smoothing
        if len(ls) != 2 or not 0 <= ls[0] <= ls[1] < 1:
            raise ValueError(f"label_smoothing must be a range (low, high) with 0 <= low <= high < 1, got {ls!r}")
        if self.fixed_label_smoothing is not None and not 0 <= self.fixed_label_smoothing < 1:
            raise ValueError(f"fixed_label_smoothing must be in [0, 1) or None, got {self.fixed_label_smoothing!r}")
        if self.lr_grid is not None and (not self.lr_grid or not all(0 < v < math.inf for v in self.lr_grid)):
            raise ValueError(f"lr_grid must be None or a non-empty tuple of positive lrs, got {self.lr_grid!r}")


@dataclass(frozen=True)
class Trial:
    """One point of the search: its index (which also seeds its run) and its hyper-parameters."""

    index: int
    lr: float
    label_smoothing: float


def sample_trials(space: SearchSpace, seed: int) -> list[Trial]:
    """The `space.trials` trials of `space`, drawn with `seed` (the same seed gives the same trials)."""
    if not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    rng = np.random.default_rng(int(seed))
    n = space.trials
    log_lo, log_hi = math.log(space.lr[0]), math.log(space.lr[1])
    # Draws are made for every field even when it is fixed, so each field's values do not depend on the others'.
    lrs = np.exp(rng.uniform(log_lo, log_hi, n))
    smoothing = rng.uniform(space.label_smoothing[0], space.label_smoothing[1], n)
    if space.lr_grid is None:
        lrs = np.clip(lrs, space.lr[0], space.lr[1])  # exp(log(x)) can land one ulp outside the bounds
    else:
        grid = np.asarray(space.lr_grid)[rng.permutation(len(space.lr_grid))]
        lrs = grid[np.arange(n) % len(grid)]
    if space.fixed_label_smoothing is not None:
        smoothing = np.full(n, space.fixed_label_smoothing)
    return [Trial(i, float(lr), float(ls)) for i, (lr, ls) in enumerate(zip(lrs, smoothing, strict=True))]


@dataclass(frozen=True)
class TrialResult:
    """What one trial produced: its best-on-dev weights (CPU tensors), their dev error, its cost and dev curve."""

    trial: Trial
    dev_error: float | None
    train_flops: float
    steps: int
    state_dict: dict
    dev_curve: tuple[float, ...]


def _rank(result: TrialResult) -> tuple[int, float, int]:
    """Sort key: a finite dev error first (lowest wins), then None or NaN; ties by trial index."""
    error = result.dev_error
    if error is None or math.isnan(error):
        return (1, 0.0, result.trial.index)
    return (0, float(error), result.trial.index)


def _trial_path(workdir: Path, trial: Trial) -> Path:
    return workdir / _TRIAL_FILE.format(index=trial.index)


def _save(workdir: Path, result: TrialResult) -> None:
    atomic_write_bytes(_trial_path(workdir, result.trial), pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))


def _load(workdir: Path, trial: Trial) -> TrialResult | None:
    """The finished result of `trial` persisted in `workdir`, or None if it has not finished."""
    path = _trial_path(workdir, trial)
    if not path.exists():
        return None
    try:
        result = pickle.loads(path.read_bytes())
    except Exception as exc:
        raise ValueError(f"cannot read finished trial {path} ({type(exc).__name__}: {exc}); delete it to redo") from exc
    if not isinstance(result, TrialResult) or result.trial != trial:
        found = result.trial if isinstance(result, TrialResult) else type(result).__name__
        raise ValueError(
            f"{path} holds {found}, but this search asks for {trial}: the folder belongs to another search; "
            "delete it (or use another workdir) to start this search afresh"
        )
    return result


def _checked(result: object, trial: Trial) -> TrialResult:
    if not isinstance(result, TrialResult) or result.trial != trial:
        got = result.trial if isinstance(result, TrialResult) else type(result).__name__
        raise TypeError(f"fit({trial}) must return a TrialResult for that trial, got {got}")
    return result


def identical(a: TrialResult, b: TrialResult) -> bool:
    """Same trial, dev error, FLOPs, steps, dev curve and weights (tensors compared exactly)."""
    import torch

    if (a.trial, a.dev_error, a.train_flops, a.steps, a.dev_curve) != (
        b.trial,
        b.dev_error,
        b.train_flops,
        b.steps,
        b.dev_curve,
    ):
        return False
    return a.state_dict.keys() == b.state_dict.keys() and all(
        torch.equal(a.state_dict[k], b.state_dict[k]) for k in a.state_dict
    )


def _best(results: Sequence[TrialResult]) -> TrialResult:
    """The winner: lowest dev error; ties, None and NaN go to the lowest trial index."""
    if not results:
        raise ValueError("no trial results to choose from: run at least one trial")
    return min(results, key=_rank)


def search(
    fit: Callable[[Trial], TrialResult],
    trials: Sequence[Trial],
    *,
    workdir: Path | None = None,
    executor: Executor | None = None,
    progress: Callable[[TrialResult], None] | None = None,
) -> tuple[TrialResult, list[TrialResult]]:
    """Run every trial and return (best, all results in trial order); the FLOPs of ALL trials count.

    Without `executor`, trials run one after the other in this process; with one, through `executor.map`
    (then `fit` must be picklable). With `workdir` (a folder of this process: workers need no access to it),
    each trial is written atomically to its own file (one per trial index) as its result arrives here, and
    trials already there are loaded instead of run, so an interrupted search resumes.
    `progress` is called once per trial, loaded ones included, as its result becomes available.
    """
    trials = list(trials)
    if not trials:
        raise ValueError("search needs at least one trial; sample them with sample_trials(space, seed)")
    indices = [t.index for t in trials]
    if len(set(indices)) != len(indices):
        raise ValueError(f"trial indices must be unique (they name the persisted files and seed runs), got {indices}")
    results: dict[int, TrialResult] = {}
    if workdir is not None:
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        for trial in trials:
            loaded = _load(workdir, trial)
            if loaded is not None:
                results[trial.index] = loaded
                if progress is not None:
                    progress(loaded)
    pending = [t for t in trials if t.index not in results]

    def finish(result: TrialResult) -> None:
        results[result.trial.index] = result
        if workdir is not None:
            _save(workdir, result)
        if progress is not None:
            progress(result)

    if pending:  # each result is checked and persisted here, in the calling process, as its trial ends
        runner = executor or LocalExecutor()
        runner.map(fit, pending, on_result=lambda i, result: finish(_checked(result, pending[i])))
    ordered = [results[t.index] for t in trials]
    return _best(ordered), ordered
