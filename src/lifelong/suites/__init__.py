"""Streams by name (built-in suites) or by manifest file."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from lifelong.core.streams import Stream

MANIFEST_SUFFIXES = (".yaml", ".yml", ".toml")


def _mini(**options) -> Stream:
    from lifelong.suites.mini import mini_stream

    return mini_stream(**options)


STREAMS: dict[str, tuple[Callable[..., Stream], str]] = {
    "mini": (_mini, "offline default: digits, glyphs, shapes, textures (one multi-label, two repeated)"),
}


def get_stream(name_or_path: str | os.PathLike, **options) -> Stream:
    """A built-in stream by name, or a custom stream from a .yaml/.yml/.toml manifest path."""
    name_or_path = os.fspath(name_or_path)
    if name_or_path in STREAMS:
        return STREAMS[name_or_path][0](**options)
    if name_or_path.endswith(MANIFEST_SUFFIXES) or Path(name_or_path).exists():
        from lifelong.suites.manifest import load_manifest

        return load_manifest(name_or_path, **options)
    raise ValueError(
        f"unknown stream {name_or_path!r}: give one of {sorted(STREAMS)} or a manifest file (.yaml/.yml/.toml)"
    )


def describe_stream(stream: Stream) -> dict:
    """Name, task count and meta-train/meta-test counts, as `lifelong streams` prints them."""
    return {
        "name": stream.name,
        "tasks": len(stream.tasks),
        "meta_train": len(stream.meta_train_tasks),
        "meta_test": len(stream.meta_test_tasks),
        "multi_label": sum(t.key.is_multi_label for t in stream.tasks),
        "years": [
            min((t.key.year for t in stream.tasks if t.key.year), default=None),
            max((t.key.year for t in stream.tasks if t.key.year), default=None),
        ],
    }
