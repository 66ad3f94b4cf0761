"""A levels file placed in our ranking of concepts (`lifelong cog levels --compare FILE`): per-level similarity
bands, contiguity, concepts out of band, concepts our filters remove, ancestor pairs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lifelong.commands.cog_levels import LevelOptions


@dataclass(frozen=True, kw_only=True)
class CogCompareSpec(LevelOptions):
    """`lifelong cog levels --compare FILE`: `file` is our CSV or the authors' cog_levels_mapping_file.pkl; the
    other fields define the ranking it is placed in (image counts play no part)."""

    file: str | Path


@dataclass
class CogCompareResult:
    """The file compared and what `lifelong.concepts.compare_levels` found (`comparison.to_json()` is `--json`'s
    object)."""

    file: Path
    comparison: Any  # lifelong.concepts.compare_levels.LevelComparison


def cog_compare(spec: CogCompareSpec) -> CogCompareResult:
    """Read `spec.file` (our CSV or the authors' pkl) and place its levels in our ranking under `spec`'s options."""
    from lifelong.concepts.compare_levels import compare_levels
    from lifelong.concepts.level_files import read_levels_file

    level_spec, file = spec.level_spec(), Path(spec.file)
    comparison = compare_levels(read_levels_file(file), level_spec, wordnet=spec.wordnet)
    return CogCompareResult(file, comparison)
