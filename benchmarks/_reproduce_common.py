"""Shared by reproduce.py and its section modules: run a `lifelong` workflow through lifelong.api (`call`),
read finished runs, make table rows.

A section is a function `section(work: Path, quick: bool) -> list[dict]`: it runs its commands in `work` (with
`--resume`, so finished runs are kept and a second call only prints), prints any table of its own in the layout the
docs show, and returns rows for reproduce.py's common table (`row(...)`); `--quick` runs the same commands at a
small size (a smoke test, not the figures).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import platform
import re
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lifelong.api import RunsSpec


def summaries(out: Path, prefix: str) -> list[tuple[dict, dict]]:
    """(summary.json, run.json) of every finished run folder in `out` whose id starts with `prefix`."""
    found = []
    for folder in sorted(out.glob(f"{prefix}*")):
        if re.search(r"-seed\d+$", folder.name) and (folder / "summary.json").is_file():
            found.append(
                (json.loads((folder / "summary.json").read_text()), json.loads((folder / "run.json").read_text()))
            )
    return found


def run_group(spec: RunsSpec) -> str:
    """The id, without "-seed<N>", that `api.run(spec)` gives its runs: finds one command's runs among others in the
    same out folder."""
    from lifelong.results.ids import group_id

    return group_id(spec.run_specs()[0].run_id)


def call(work: Path, name: str, spec: Any) -> Any:
    """`lifelong.api.<name>(spec)` (run, pretrain or pretrain_ssl) in `work`, as the section's command ran there (the
    spec's relative paths are the work folder's); echoes the call, then prints what the command prints."""
    from lifelong import api
    from lifelong.commands.run_console import print_runs
    from lifelong.commands.training_console import print_summary

    given = [f"{f.name}={_value(getattr(spec, f.name))}" for f in dataclasses.fields(spec) if _given(spec, f)]
    print(f"$ api.{name}({type(spec).__name__}({', '.join(given)}))", flush=True)
    with contextlib.chdir(work):
        result = getattr(api, name)(spec, progress=True)
        if name == "run":
            print_runs(result, spec.out)
        else:
            print_summary(result.summary)
    return result


def _given(spec: Any, field: dataclasses.Field) -> bool:
    """Whether `field` of `spec` differs from its default (the echo names only those)."""
    default = field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default
    return getattr(spec, field.name) != default


def _value(value: Any) -> str:
    return repr(str(value)) if isinstance(value, Path) else repr(value)


def row(experiment: str, metric: str, values: list[float], infos: list[dict]) -> dict:
    """One line of the common table: per-seed values, mean +- std (ddof=1) and the runs' recorded provenance."""
    mean = statistics.fmean(values) if values else None
    std = statistics.stdev(values) if len(values) > 1 else None
    machine = infos[0].get("machine", {}) if infos else {}
    files = {Path(p).name: h[:12] for info in infos for p, h in (info.get("files") or {}).items()}
    return {
        "experiment": experiment,
        "metric": metric,
        "per_seed": values,
        "mean": mean,
        "std": std,
        "cpu": machine.get("cpu"),
        "threads": machine.get("threads"),
        "torch": (infos[0].get("versions") or {}).get("torch") if infos else None,
        "files": files,
    }


def this_machine() -> str:
    """The machine a table was printed on, for tables whose runs record no provenance of their own."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"
