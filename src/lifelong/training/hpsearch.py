"""Per-task hyper-parameter search: seeded random trials, best on dev, all FLOPs count
(docs/protocols/nevis.md#hyper-parameter-search).

A trial is a learning rate and a label smoothing (the paper's small space); the large space adds weight decay,
the schedule, the batch size, the random crop and the mirror, and the multitask learner adds the weight of its
auxiliary losses. `search` runs a picklable `fit(trial) -> TrialResult` for every trial, in this process or through
an executor (Ray), persisting each trial in a work folder of this process as its result arrives, so that an
interrupted search resumes without redoing finished trials. Selection: lowest dev error; ties, None and NaN go to
the lowest trial index. The sequential GP-UCB search that proposes each trial from the results so far is
`lifelong.training.bayesopt`.
"""

from __future__ import annotations

import dataclasses
import math
import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lifelong.core.executors import Executor, LocalExecutor
from lifelong.core.files import atomic_write_bytes

_TRIAL_FILE = "trial-{index:04d}.pkl"

SPACE_SIZES = ("small", "large")
SCHEDULES = ("cosine", "piecewise")
BATCH_SCALES = (-1, 0, 1)
"""The large space's batch sizes: the recipe's batch size times 2**scale (half, same, double)."""


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
    size: str = "small"
    """"small": lr and label smoothing (the paper's space); "large": also weight decay (log-uniform in
    `weight_decay`), the schedule (SCHEDULES), the batch size (BATCH_SCALES), the random crop and the mirror."""
    weight_decay: tuple[float, float] = (1e-5, 1e-3)
    aux_weight: tuple[float, float] | None = None
    """The multitask learner's auxiliary-loss weight, log-uniform in this range (None: not searched)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "lr", tuple(float(v) for v in self.lr))
        object.__setattr__(self, "label_smoothing", tuple(float(v) for v in self.label_smoothing))
        object.__setattr__(self, "weight_decay", tuple(float(v) for v in self.weight_decay))
        if self.lr_grid is not None:
            object.__setattr__(self, "lr_grid", tuple(float(v) for v in self.lr_grid))
        if self.aux_weight is not None:
            object.__setattr__(self, "aux_weight", tuple(float(v) for v in self.aux_weight))
        if self.size not in SPACE_SIZES:
            raise ValueError(f"the search space must be one of {SPACE_SIZES}, got {self.size!r}")
        for name in ("weight_decay", "aux_weight"):
            bounds = getattr(self, name)
            if bounds is not None and (len(bounds) != 2 or not 0 < bounds[0] <= bounds[1] < math.inf):
                raise ValueError(f"{name} must be a range (low, high) with 0 < low <= high, got {bounds!r}")
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
    weight_decay: float | None = None
    """The large space's weight decay (None: the recipe's)."""
    schedule: str | None = None
    """The large space's schedule, one of SCHEDULES (None: the recipe's, cosine)."""
    batch_scale: int | None = None
    """The large space's batch size: the recipe's times 2**batch_scale (None: the recipe's)."""
    crop: bool | None = None
    """The large space's random resized crop, on or off (None: the recipe's augmentation)."""
    flip: bool | None = None
    """The large space's random mirror, on or off (None: the recipe's; never on for tasks that forbid it)."""
    aux_weight: float | None = None
    """The multitask learner's weight on its auxiliary losses (None: no auxiliary tasks, or the learner's default)."""

    def settings(self) -> dict[str, float | str | int | bool]:
        """The trial's hyper-parameters by name, those left to the recipe (None) omitted."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "index"}
        return {name: value for name, value in values.items() if value is not None}


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
    # The other fields are drawn after these, so the small space's trials are the first fields of the large one's.
    extra: list[dict] = [{} for _ in range(n)]
    if space.aux_weight is not None:
        for fields, value in zip(extra, _log_uniform(rng, space.aux_weight, n), strict=True):
            fields["aux_weight"] = value
    if space.size == "large":
        decays = _log_uniform(rng, space.weight_decay, n)
        schedules, scales = rng.integers(len(SCHEDULES), size=n), rng.integers(len(BATCH_SCALES), size=n)
        crops, flips = rng.random(n) < 0.5, rng.random(n) < 0.5
        for i, fields in enumerate(extra):
            fields.update(
                weight_decay=decays[i],
                schedule=SCHEDULES[schedules[i]],
                batch_scale=BATCH_SCALES[scales[i]],
                crop=bool(crops[i]),
                flip=bool(flips[i]),
            )
    rows = zip(lrs, smoothing, extra, strict=True)
    return [Trial(i, float(lr), float(ls), **fields) for i, (lr, ls, fields) in enumerate(rows)]


def _log_uniform(rng: np.random.Generator, bounds: tuple[float, float], n: int) -> list[float]:
    low, high = bounds
    return [float(v) for v in np.clip(np.exp(rng.uniform(math.log(low), math.log(high), n)), low, high)]


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


def _trial_path(workdir: Path, index: int) -> Path:
    return workdir / _TRIAL_FILE.format(index=index)


def save_finished(workdir: Path, result: TrialResult) -> None:
    """Persist a finished trial in `workdir` (atomically: one file per trial index)."""
    path = _trial_path(workdir, result.trial.index)
    atomic_write_bytes(path, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))


def load_finished(workdir: Path, index: int, expected: Trial | None = None) -> TrialResult | None:
    """The finished trial `index` persisted in `workdir` (None if it has not finished); with `expected`, a file
    holding another trial is refused (the folder belongs to another search)."""
    path = _trial_path(workdir, index)
    if not path.exists():
        return None
    try:
        result = pickle.loads(path.read_bytes())
    except Exception as exc:
        raise ValueError(f"cannot read finished trial {path} ({type(exc).__name__}: {exc}); delete it to redo") from exc
    wanted = f"trial {index}" if expected is None else str(expected)
    if not isinstance(result, TrialResult) or result.trial.index != index or expected not in (None, result.trial):
        found = result.trial if isinstance(result, TrialResult) else type(result).__name__
        raise ValueError(
            f"{path} holds {found}, but this search asks for {wanted}: the folder belongs to another search; "
            "delete it (or use another workdir) to start this search afresh"
        )
    return result


def checked_result(result: object, trial: Trial) -> TrialResult:
    """`result` if it is `fit(trial)`'s TrialResult for `trial`; a TypeError saying what came back otherwise."""
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


def best_of(results: Sequence[TrialResult]) -> TrialResult:
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
            loaded = load_finished(workdir, trial.index, trial)
            if loaded is not None:
                results[trial.index] = loaded
                if progress is not None:
                    progress(loaded)
    pending = [t for t in trials if t.index not in results]

    def finish(result: TrialResult) -> None:
        results[result.trial.index] = result
        if workdir is not None:
            save_finished(workdir, result)
        if progress is not None:
            progress(result)

    if pending:  # each result is checked and persisted here, in the calling process, as its trial ends
        runner = executor or LocalExecutor()
        runner.map(fit, pending, on_result=lambda i, result: finish(checked_result(result, pending[i])))
    ordered = [results[t.index] for t in trials]
    return best_of(ordered), ordered
