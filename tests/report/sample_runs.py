"""Run folders of every system for the report tests: CoG probe runs (made by `lifelong cog run`'s code on a toy
features set) and two fact-learning runs (recorded from `lifelong run --stream facts-mini`, checked in)."""

from __future__ import annotations

import shutil
from pathlib import Path

from suites.test_cog import write_features_set

from lifelong.commands.cog_runs import cog_run_specs, run_cog_specs

FACT_RUNS = Path(__file__).parent / "data" / "facts"


def write_cog_runs(root: Path, *, levels: str = "seen,L1", seeds: int = 1) -> list[Path]:
    """CoG runs of a toy encoder (one per level and seed, all training data) under root/runs."""
    write_features_set(root / "data" / "cog-features" / "toy", levels=("seen", "L1"))
    options = dict(levels=levels, shots="all", seeds=seeds, probe="fast", out=root / "runs", resume=False)
    options |= dict(overwrite=False, data_root=root / "data", threads=1, progress=False)
    specs = cog_run_specs("toy", "cog-mini", **options)
    run_cog_specs(specs)
    return [Path(s.folder) for s in specs]


def copy_fact_runs(root: Path) -> list[Path]:
    """The two checked-in facts-mini runs (seeds 0 and 1), copied under root."""
    out = []
    for folder in sorted(FACT_RUNS.iterdir()):
        shutil.copytree(folder, root / folder.name)
        out.append(root / folder.name)
    return out
