"""Streams by name (registered entry points) or by file (manifest, timestamped CSV); see lifelong.suites.names."""

from __future__ import annotations

import functools
import os

from lifelong.core.streams import Stream
from lifelong.suites.names import STREAMS, TEMPORAL_SOURCES, StreamName, classify_stream
from lifelong.suites.options import check_stream_options, stream_options


def get_stream(name_or_path: str | os.PathLike, **options) -> Stream:
    """A registered stream or temporal source by name, or a stream from a manifest or timestamped-CSV path."""
    name = classify_stream(name_or_path)
    check_stream_options(name.value, options)  # a typo in -s is named, with the closest option
    if name.is_temporal:
        from lifelong.suites.clear import get_temporal_stream

        return get_temporal_stream(name, **options)  # it names options its source does not take
    if name.kind == "named":
        build = STREAMS.load(name.value)
    else:
        from lifelong.suites.manifest import load_manifest

        options.pop("data_root", None)  # a manifest names its own paths
        options.pop("allow_missing", None)
        build = functools.partial(load_manifest, name.value)
    try:
        return build(**options)
    except TypeError as exc:
        if "keyword argument" not in str(exc):
            raise
        raise ValueError(
            f"--stream {name.value} does not take one of the options {sorted(options)} ({exc}); see "
            f"`lifelong streams {name.value}`"
        ) from exc


def stream_descriptions() -> dict[str, str]:
    """Every registered stream and temporal source with its one-line description, in registration order."""
    described = {}
    for registry in (STREAMS, TEMPORAL_SOURCES):
        for name in registry.names():
            doc = (registry.load(name).__doc__ or "").strip()
            described[name] = doc.splitlines()[0] if doc else "(no description)"
    return described


def describe_stream(stream: Stream) -> dict:
    """Name, task count and meta-train/meta-test counts, as `lifelong streams` prints them."""
    return {
        "name": stream.name,
        "tasks": len(stream.tasks),
        "meta_train": len(stream.meta_train_tasks),
        "meta_test": len(stream.meta_test_tasks),
        "multi_label": sum(t.key.is_multi_label for t in stream.tasks),
        "missing": len(getattr(stream, "missing_tasks", ())),
        "years": [
            min((t.key.year for t in stream.tasks if t.key.year), default=None),
            max((t.key.year for t in stream.tasks if t.key.year), default=None),
        ],
    }


__all__ = [
    "STREAMS",
    "TEMPORAL_SOURCES",
    "StreamName",
    "check_stream_options",
    "classify_stream",
    "describe_stream",
    "get_stream",
    "stream_options",
]
