"""Streams by name (built-in suites) or by manifest file."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path

from lifelong.core.streams import Stream

MANIFEST_SUFFIXES = (".yaml", ".yml", ".toml")


def _mini(**options) -> Stream:
    from lifelong.suites.mini import mini_stream

    return mini_stream(**options)


def _nevis(variant: str, **options) -> Stream:
    """A Nevis'22 variant; tasks without data stay in it (failing when loaded) unless allow_missing is given."""
    from lifelong.suites.nevis import nevis_stream

    if "allow_missing" not in options:
        options.setdefault("defer_missing", True)
    return nevis_stream(variant, **options)


STREAMS: dict[str, tuple[Callable[..., Stream], str]] = {
    "mini": (_mini, "offline default: digits, glyphs, shapes, textures (one multi-label, two repeated)"),
    "nevis-full": (partial(_nevis, "full"), "Nevis'22 FULL: 106 tasks 1992-2021, meta-test from 2019 (needs data)"),
    "nevis-short": (partial(_nevis, "short"), "Nevis'22 SHORT: 29 tasks (needs data)"),
    "nevis-tiny": (partial(_nevis, "tiny"), "Nevis'22 TINY: 7 tasks (needs data)"),
    "nevis-debug": (partial(_nevis, "debug"), "Nevis'22 DEBUG: COIL 20 and Pascal 2007 (needs data)"),
    "nevis-major-domain": (partial(_nevis, "major-domain"), "Nevis'22 with object-domain meta-train tasks only"),
    "nevis-large": (partial(_nevis, "large"), "Nevis'22 without meta-train datasets under 10,000 samples"),
    "nevis-imagenet": (partial(_nevis, "imagenet"), "Nevis'22 ImageNet tasks only (2011, 2021)"),
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
