"""`lifelong data inspect` and `lifelong data status` from Python: what a data source holds, and which tasks of a
Nevis'22 stream have their data in the data root (what to provide, what `lifelong data fetch` gets)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lifelong.commands.terminal import fail
from lifelong.core.errors import UsageError


@dataclass(frozen=True)
class DataInspectSpec:
    """`lifelong data inspect SOURCE [--skip-corrupt]`: builtin:NAME, idx:DIR, fashion-mnist, folder:DIR, csv:FILE."""

    source: str
    skip_corrupt: bool = False


@dataclass
class DataInspectResult:
    """A loaded source described (`--json`'s document): count, kind, classes, per-class counts, image sizes,
    channels, official split, notes."""

    source: str
    info: dict[str, Any]


def data_inspect(spec: DataInspectSpec) -> DataInspectResult:
    """Load a data source and describe it: items, classes, sizes, channels."""
    from lifelong.data.sources import describe, load_source

    try:
        info = describe(load_source(spec.source, skip_corrupt=spec.skip_corrupt))
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    return DataInspectResult(spec.source, info)


@dataclass(frozen=True)
class DataStatusSpec:
    """`lifelong data status --stream S [--data-root DIR]`: a Nevis'22 stream (nevis-full, nevis-short, ...)."""

    stream: str = "nevis-full"
    data_root: str | Path | None = None


@dataclass
class DataStatusResult:
    """Per task of the stream (`--json`'s rows): uid, name, year, available, source (where found), expected (the
    folder to provide), layouts, published, provide, fetch (the `lifelong data fetch` command, when it gets it)."""

    stream: str
    root: Path
    rows: list[dict[str, Any]]

    @property
    def available(self) -> list[dict[str, Any]]:
        """The tasks whose data is there."""
        return [r for r in self.rows if r["available"]]

    @property
    def missing(self) -> list[dict[str, Any]]:
        """The tasks whose data is missing."""
        return [r for r in self.rows if not r["available"]]

    @property
    def fetchable(self) -> list[str]:
        """The missing datasets `lifelong data fetch` gets, sorted."""
        return sorted({r["name"] for r in self.missing if r["fetch"]})

    def frame(self):
        """The rows as a pandas DataFrame (one row per task)."""
        import pandas as pd

        return pd.DataFrame(self.rows)


def data_status(spec: DataStatusSpec) -> DataStatusResult:
    """Which tasks of a Nevis'22 stream have data, which are missing, and what to provide for each."""
    from lifelong.core.suggest import did_you_mean
    from lifelong.data.roots import resolve_data_root
    from lifelong.suites import nevis

    try:
        nevis.parse_variant(spec.stream)
    except ValueError:
        names = [f"nevis-{v.value}" for v in nevis.Variant]
        raise UsageError(
            f"data status covers the Nevis'22 streams, not {spec.stream!r}{did_you_mean(spec.stream, names)}: "
            f"{', '.join(names)} (offline streams such as mini need no data)"
        ) from None
    try:
        rows = nevis.data_status(spec.stream, spec.data_root)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    return DataStatusResult(spec.stream, resolve_data_root(spec.data_root), rows)


__all__ = ["DataInspectResult", "DataInspectSpec", "DataStatusResult", "DataStatusSpec", "data_inspect", "data_status"]
