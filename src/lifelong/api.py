"""lifelong's public Python API: the one place a script or notebook imports the toolkit's workflows from.

It grows into a function for every workflow a `lifelong` command offers; for now it holds running a learner over
a stream and reading the results back:

    from lifelong import api

    summary = api.execute(api.RunSpec(stream="mini", learner="nearest-mean", out="runs"))
    frame = api.results("runs")  # one row per (run, event, metric): run, system, stream, learner, seed, task, ...

The `lifelong` command is built on these same functions.
"""

from __future__ import annotations

from lifelong.commands.runner import RunSpec, execute
from lifelong.results.frame import results

__all__ = ["RunSpec", "execute", "results"]
