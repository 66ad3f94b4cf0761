"""Plug-ins by Python entry points: learners, streams, temporal sources and metrics register by name.

The built-ins register in lifelong's own pyproject.toml exactly as a third-party package registers in its own
(`[project.entry-points."lifelong.learners"]` etc.), so extending the toolkit never means editing it.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points
from typing import Any

from lifelong.core.suggest import did_you_mean

LEARNERS = "lifelong.learners"
STREAMS = "lifelong.streams"
TEMPORAL_SOURCES = "lifelong.temporal_sources"
METRICS = "lifelong.metrics"


class PluginError(ValueError):
    """A name that no installed package registers, or an entry point that cannot be loaded."""


class Registry:
    """The entry points of one group, by name, in registration order (lifelong's own first)."""

    def __init__(self, group: str, what: str, listing: str | None = None) -> None:
        self.group = group
        self.what = what
        self.listing = listing  # the command that lists the names, e.g. `lifelong learners`

    def _entries(self) -> dict[str, EntryPoint]:
        found = sorted(entry_points(group=self.group), key=lambda ep: ep.dist is None or ep.dist.name != "lifelong")
        entries: dict[str, EntryPoint] = {}
        for ep in found:
            entries.setdefault(ep.name, ep)  # lifelong's built-ins win a clash of names
        return entries

    def names(self) -> list[str]:
        """Registered names: lifelong's in the order of its pyproject.toml, then other packages'."""
        return list(self._entries())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._entries()

    def load(self, name: str) -> Any:
        """The object registered as `name` (imported on use, so listing names imports nothing)."""
        entry = self._entry(name)
        try:
            return entry.load()
        except Exception as exc:
            raise PluginError(
                f"{self.what} {name!r} is registered as {entry.value!r} (entry point group {self.group!r}) but "
                f"cannot be loaded: {type(exc).__name__}: {exc}"
            ) from exc

    def _entry(self, name: str) -> EntryPoint:
        entries = self._entries()
        if name not in entries:
            see = f"; see `{self.listing}`" if self.listing else ""
            raise PluginError(
                f"unknown {self.what} {name!r}{did_you_mean(name, entries)}; known {self.what}s: "
                f"{', '.join(sorted(entries))}{see} (a package adds one under "
                f'[project.entry-points."{self.group}"] in its pyproject.toml)'
            )
        return entries[name]
