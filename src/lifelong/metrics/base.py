"""The metric protocol: a pure aggregator over per-event records."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Metric(Protocol):
    """`init()` gives an empty state, `add(state, record)` a new state, `compute(state)` the values.

    Records are the JSON-ready dicts the environment emits, one per event. Metrics never see learners,
    models or data, so they can be recomputed from a run's events.jsonl alone.
    """

    name: str

    def init(self) -> Any: ...

    def add(self, state: Any, record: dict) -> Any: ...

    def compute(self, state: Any) -> dict: ...


def compute_all(metrics: list[Metric], records: list[dict]) -> dict:
    """Fold `records` through each metric and merge their outputs (used to recompute from files)."""
    out: dict = {}
    for metric in metrics:
        state = metric.init()
        for record in records:
            state = metric.add(state, record)
        out.update(metric.compute(state))
    return out
