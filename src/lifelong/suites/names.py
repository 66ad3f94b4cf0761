"""What a `--stream` value names, decided in one place: a registered stream, a temporal source, or a file.

Registered streams (entry points `lifelong.streams`) are factories `(**options) -> Stream`; temporal sources
(`lifelong.temporal_sources`) are factories `(**options) -> TemporalSource` whose buckets become a CLEAR-style
stream under a protocol. A `.csv` path is a timestamped image list (a temporal stream), a `.yaml/.yml/.toml`
path (or any existing file) a task manifest.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from lifelong.core import plugins
from lifelong.core.plugins import Registry
from lifelong.core.suggest import did_you_mean

STREAMS = Registry(plugins.STREAMS, "stream", listing="lifelong streams")
TEMPORAL_SOURCES = Registry(plugins.TEMPORAL_SOURCES, "temporal source", listing="lifelong streams")
MANIFEST_SUFFIXES = (".yaml", ".yml", ".toml")
TIMESTAMPED_SUFFIX = ".csv"


@dataclass(frozen=True)
class StreamName:
    """A classified `--stream` value, `value` as given; `kind`: named, temporal, timestamped-csv or manifest."""

    value: str
    kind: str

    @property
    def is_temporal(self) -> bool:
        """Buckets of one label space over time (CLEAR): runs take a protocol and fill an accuracy matrix."""
        return self.kind in ("temporal", "timestamped-csv")

    @property
    def label(self) -> str:
        return stream_label(self.value)


def stream_label(name_or_path: str | os.PathLike) -> str:
    """The name runs and streams are known by: the file stem for a manifest or CSV path, else the value."""
    value = os.fspath(name_or_path)
    return Path(value).stem if value.endswith((*MANIFEST_SUFFIXES, TIMESTAMPED_SUFFIX)) else value


def classify_stream(name_or_path: str | os.PathLike) -> StreamName:
    """Classify a stream name or path; an unknown name that is no file raises, listing what would work."""
    value = os.fspath(name_or_path)
    if value in STREAMS:
        return StreamName(value, "named")
    if value in TEMPORAL_SOURCES:
        return StreamName(value, "temporal")
    if value.endswith(TIMESTAMPED_SUFFIX):
        return StreamName(value, "timestamped-csv")
    if value.endswith(MANIFEST_SUFFIXES) or Path(value).exists():
        return StreamName(value, "manifest")
    known = sorted([*STREAMS.names(), *TEMPORAL_SOURCES.names()])
    raise ValueError(
        f"unknown stream {value!r}{did_you_mean(value, known)}: give a name `lifelong streams` lists, a manifest "
        "file (.yaml/.yml/.toml), or a CSV of timestamped images (path,label,timestamp) for a temporal stream"
    )
