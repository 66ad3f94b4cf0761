"""Streams by name (built-in suites) or by manifest file."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path

from lifelong.core.streams import Stream

MANIFEST_SUFFIXES = (".yaml", ".yml", ".toml")


def _mini(data_root=None, allow_missing=None, **options) -> Stream:
    """`mini` needs no data root and has no missing tasks: those options are accepted and unused."""
    from lifelong.suites.mini import mini_stream

    return mini_stream(**options)


def _nevis_mini(data_root=None, allow_missing=None, **options) -> Stream:
    from lifelong.suites.nevis_mini import nevis_mini_stream

    return nevis_mini_stream(**options)


def _nevis(variant: str, allow_missing: bool | None = None, **options) -> Stream:
    """A Nevis'22 variant. allow_missing None (listing streams): tasks without data stay in it and fail when
    loaded; False (a run): missing data is an error listing it; True: only the tasks with data."""
    from lifelong.suites.nevis import nevis_stream

    if allow_missing is None:
        return nevis_stream(variant, defer_missing=True, **options)
    return nevis_stream(variant, allow_missing=allow_missing, **options)


def _clear(name: str, **options) -> Stream:
    """A CLEAR temporal stream (lifelong.suites.clear): options protocol, split_seed, and the source's own."""
    from lifelong.suites.clear import get_temporal_stream

    return get_temporal_stream(name, **options)


STREAMS: dict[str, tuple[Callable[..., Stream], str]] = {
    "mini": (_mini, "offline default: digits, glyphs, shapes, textures (one multi-label, two repeated)"),
    "nevis-mini": (_nevis_mini, "offline Nevis'22 in miniature: 13 tasks, meta-test from 2019, transfer pays off"),
    "nevis-full": (partial(_nevis, "full"), "Nevis'22 FULL: 106 tasks 1992-2021, meta-test from 2019 (needs data)"),
    "nevis-short": (partial(_nevis, "short"), "Nevis'22 SHORT: 29 tasks (needs data)"),
    "nevis-tiny": (partial(_nevis, "tiny"), "Nevis'22 TINY: 7 tasks (needs data)"),
    "nevis-debug": (partial(_nevis, "debug"), "Nevis'22 DEBUG: COIL 20 and Pascal 2007 (needs data)"),
    "nevis-major-domain": (partial(_nevis, "major-domain"), "Nevis'22 with object-domain meta-train tasks only"),
    "nevis-large": (partial(_nevis, "large"), "Nevis'22 without meta-train datasets under 10,000 samples"),
    "nevis-imagenet": (partial(_nevis, "imagenet"), "Nevis'22 ImageNet tasks only (2011, 2021)"),
    "clear-mini": (
        partial(_clear, "clear-mini"),
        "offline CLEAR in miniature: drifting glyphs, 1 unlabeled + 10 buckets x 11 classes x 300 (accuracy matrix)",
    ),
    "clear": (partial(_clear, "clear"), "CLEAR-10 from its released layout under --data-root (accuracy matrix)"),
}


def get_stream(name_or_path: str | os.PathLike, **options) -> Stream:
    """A built-in stream by name, or a custom stream from a .yaml/.yml/.toml manifest path."""
    name_or_path = os.fspath(name_or_path)
    if name_or_path in STREAMS:
        return STREAMS[name_or_path][0](**options)
    if name_or_path.endswith(".csv"):
        return _clear(name_or_path, **options)
    if name_or_path.endswith(MANIFEST_SUFFIXES) or Path(name_or_path).exists():
        from lifelong.suites.manifest import load_manifest

        options.pop("data_root", None)  # a manifest names its own paths
        options.pop("allow_missing", None)
        return load_manifest(name_or_path, **options)
    raise ValueError(
        f"unknown stream {name_or_path!r}: give one of {sorted(STREAMS)}, a manifest file (.yaml/.yml/.toml), or a "
        "CSV of timestamped images (path,label,timestamp) for a temporal stream"
    )


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
