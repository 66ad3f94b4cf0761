"""The estimator interface: fitted on source models' full 0/1 rows, a plan picks the samples every target model is
evaluated on, and the plan turns the targets' outcomes on those samples into accuracy estimates.

An estimator is an object with a `name` and `plan(task: EstimationTask) -> Plan`. `task.source` holds the source
models' rows ([models, samples] uint8 0/1, or a `bitmatrix.RowSource` such as bit-packed rows at full scale:
`task.columns(items)`, `task.column_sums()` and `task.accuracies()` read either), `task.budget` the number of
samples n' each target is evaluated on,
`task.random_items` the seed's uniform random draw of n' distinct samples, which every method that samples at
random uses (so methods are compared on the same draws), and `task.rng(name)` a generator for anything else a
method draws, fixed by (seed, name). A plan's `items` are the n' sample ids (all targets see the same ones);
`estimate(observed)` takes the targets' outcomes on them ([targets, n'] uint8, columns in `items` order) and
returns an `Estimate`: the accuracy of every target over all samples, and where the method has them a 95%
interval and per-sample probabilities of a correct answer (for per-sample error and Brier score).

Estimators register as entry points of the group "lifelong.estimators" (lifelong's own in its pyproject.toml,
exactly as another package would); `estimator(name, **options)` builds one, `estimator_names()` lists them. An
estimator class may declare `min_sources`, the fewest source models its plan can be fitted on (1 when it declares
none); `min_sources(name)` reads it, so a comparison can refuse a split that has fewer before any work.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from lifelong.core.plugins import Registry
from lifelong.sortsearch.bitmatrix import RowSource

ESTIMATORS = Registry("lifelong.estimators", "estimator", listing="lifelong bench compare --help")


@dataclass(frozen=True)
class EstimationTask:
    """What an estimator may use: the source models' rows, the budget, the seed's shared random draw."""

    source: np.ndarray | RowSource  # [source models, n] uint8 0/1, or bit-packed rows
    budget: int  # n': samples each target model is evaluated on
    seed: int = 0
    random_items: np.ndarray = field(default=None)  # type: ignore[assignment]  # [budget] sorted distinct sample ids
    groups: np.ndarray | None = None  # optional [n] int domain of each sample (corruption, source dataset)

    def __post_init__(self) -> None:
        source = self.source if isinstance(self.source, RowSource) else np.asarray(self.source)
        if len(source.shape) != 2 or source.shape[0] < 1:
            raise ValueError(f"the source models' rows must be a [models, samples] matrix; got shape {source.shape}")
        n = source.shape[1]
        if not 1 <= int(self.budget) <= n:
            raise ValueError(f"the budget must be between 1 and the {n} samples; got {self.budget}")
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "budget", int(self.budget))
        if self.random_items is None:
            object.__setattr__(self, "random_items", random_items(n, self.budget, self.seed))
        if len(self.random_items) != self.budget:
            raise ValueError(f"random_items holds {len(self.random_items)} ids for a budget of {self.budget}")

    @property
    def n(self) -> int:
        return int(self.source.shape[1])

    def columns(self, items: np.ndarray) -> np.ndarray:
        """The source rows' cells at the given samples: uint8 [source models, len(items)]."""
        if isinstance(self.source, RowSource):
            return self.source.gather(None, np.asarray(items, np.int64))
        return np.asarray(self.source[:, items], np.uint8)

    def column_sums(self) -> np.ndarray:
        """Correct source models per sample: int64 [n] (streamed over packed rows)."""
        if isinstance(self.source, RowSource):
            return self.source.column_sums()
        return self.source.sum(axis=0, dtype=np.int64)

    def accuracies(self) -> np.ndarray:
        """Each source model's accuracy over all n samples: float64 [source models]."""
        if isinstance(self.source, RowSource):
            return self.source.row_sums() / self.n
        return self.source.mean(axis=1, dtype=np.float64)

    def rng(self, name: str) -> np.random.Generator:
        """A generator fixed by (seed, name): a method's own draws, independent of every other method's."""
        salt = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")
        return np.random.default_rng([int(self.seed), salt])


def random_items(n: int, budget: int, seed: int) -> np.ndarray:
    """The shared uniform random draw of `budget` distinct sample ids out of n for a seed (sorted)."""
    return np.sort(np.random.default_rng([int(seed), 0x5EED]).choice(int(n), size=int(budget), replace=False))


PER_SAMPLE_CELLS = 50_000_000  # per-sample probabilities only up to this many targets x samples (200 MB float32)


def wants_per_sample(targets: int, n: int) -> bool:
    """Whether an estimate should carry per-sample probabilities (not at full scale for many targets)."""
    return int(targets) * int(n) <= PER_SAMPLE_CELLS


@dataclass(frozen=True)
class Estimate:
    """Per target: the estimated accuracy over all n samples; optional 95% interval and per-sample P(correct)."""

    accuracy: np.ndarray  # [targets] float64
    low: np.ndarray | None = None  # [targets]
    high: np.ndarray | None = None  # [targets]
    per_sample: np.ndarray | None = None  # [targets, n] float32 in [0, 1]


class Plan(Protocol):
    """An estimator's choice of samples for a task: evaluate the targets on `items`, then `estimate` from them."""

    items: np.ndarray  # [budget] sample ids the targets are evaluated on

    def estimate(self, observed: np.ndarray) -> Estimate: ...


class Estimator(Protocol):
    """A model's accuracy from few samples (entry points `lifelong.estimators`): it plans, then estimates."""

    name: str

    def plan(self, task: EstimationTask) -> Plan: ...


def estimator_names() -> list[str]:
    return ESTIMATORS.names()


def estimator(name: str, **options: Any) -> Estimator:
    """The registered estimator `name`, built with its options."""
    return ESTIMATORS.load(name)(**options)


def min_sources(name: str) -> int:
    """The fewest source models the registered estimator `name` can be fitted on: its class's `min_sources`, else 1."""
    return max(1, int(getattr(ESTIMATORS.load(name), "min_sources", 1)))


def check_observed(observed: Any, items: np.ndarray) -> np.ndarray:
    """Targets' outcomes on a plan's items as a [targets, n'] uint8 0/1 array, or an error in plain words."""
    observed = np.asarray(observed)
    if observed.ndim == 1:
        observed = observed[None, :]
    if observed.ndim != 2 or observed.shape[1] != len(items):
        raise ValueError(
            f"outcomes must be one row of {len(items)} values (the plan's samples) per target model; "
            f"got shape {observed.shape}"
        )
    if observed.size and not np.isin(observed, (0, 1)).all():
        raise ValueError("outcomes must be 0 (wrong) or 1 (correct)")
    return observed.astype(np.uint8, copy=False)
