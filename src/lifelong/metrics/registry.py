"""Metrics by name, registered as entry points of the group `lifelong.metrics` (the built-ins too).

A registered metric is a factory `(stream) -> Metric | None`: it sees the stream's description (task count,
evaluation, protocol) and returns None where it does not apply.
"""

from __future__ import annotations

from collections.abc import Iterable

from lifelong.core.plugins import METRICS as GROUP
from lifelong.core.plugins import Registry
from lifelong.metrics.base import Metric

METRICS = Registry(GROUP, "metric")


def make_metrics(names: Iterable[str], stream) -> list[Metric]:
    """The registered metrics `names` built for `stream`, leaving out those that do not apply to it."""
    built = []
    for name in names:
        metric = METRICS.load(name)(stream)
        if metric is not None:
            if not isinstance(metric, Metric):
                raise TypeError(
                    f"metric {name!r} built a {type(metric).__name__}, which lacks the Metric protocol "
                    "(name, init, add, compute; see lifelong.metrics.base)"
                )
            built.append(metric)
    return built
