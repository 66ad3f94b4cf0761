"""Shared by reproduce.py and its section modules: run a `lifelong` command, read finished runs, make table rows.

A section is a function `section(work: Path, quick: bool) -> list[dict]`: it runs its commands in `work` (with
`--resume`, so finished runs are kept and a second call only prints), prints any table of its own in the layout the
docs show, and returns rows for reproduce.py's common table (`row(...)`); `--quick` runs the same commands at a
small size (a smoke test, not the figures).
"""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import subprocess
import sys
from pathlib import Path

LIFELONG = [sys.executable, "-m", "lifelong.cli"]


def lifelong(*args: str, cwd: Path, capture: bool = False) -> str:
    """Run `lifelong ARGS` in `cwd` (echoing the command); fail on a non-zero exit. Returns stdout if `capture`."""
    print("$ lifelong " + " ".join(args), flush=True)
    done = subprocess.run([*LIFELONG, *args], cwd=cwd, check=True, text=True, capture_output=capture)
    if capture:
        print(done.stdout, end="", flush=True)
        return done.stdout
    return ""


def summaries(out: Path, prefix: str) -> list[tuple[dict, dict]]:
    """(summary.json, run.json) of every finished run folder in `out` whose id starts with `prefix`."""
    found = []
    for folder in sorted(out.glob(f"{prefix}*")):
        if re.search(r"-seed\d+$", folder.name) and (folder / "summary.json").is_file():
            found.append(
                (json.loads((folder / "summary.json").read_text()), json.loads((folder / "run.json").read_text()))
            )
    return found


def run_group(args: list[str]) -> str:
    """The id, without "-seed<N>", that `lifelong run ARGS` gives its runs: its options parsed as the CLI parses them
    (lifelong.cli.parse_options, --protocol as a stream option), then RunSpec.run_id. Finds one command's runs among
    others in the same --out folder."""
    from lifelong.cli import parse_options
    from lifelong.commands.runner import RunSpec
    from lifelong.results.ids import group_id

    def given(flag: str) -> list[str]:
        return [value for name, value in zip(args, args[1:], strict=False) if name == flag]

    stream_options = parse_options(given("-s"))
    if given("--protocol"):
        stream_options["protocol"] = given("--protocol")[-1]
    spec = RunSpec(
        stream=(given("--stream") or ["mini"])[-1],
        learner=(given("--learner") or ["independent"])[-1],
        stream_options=stream_options,
        learner_options=parse_options(given("-o")),
    )
    return group_id(spec.run_id)


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
