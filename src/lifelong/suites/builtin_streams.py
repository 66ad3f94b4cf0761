"""The built-in named streams, registered as entry points `lifelong.streams` in lifelong's pyproject.toml.

Each is a factory `(**options) -> Stream`; the first docstring line is what `lifelong streams` shows. Options a
run always passes (`eval_split`, `skip_corrupt`, `data_root`, `allow_missing`) go where the stream uses them.
"""

from __future__ import annotations

from lifelong.core.streams import Stream


def mini(data_root=None, allow_missing=None, **options) -> Stream:
    """offline default: digits, glyphs, shapes, textures (one multi-label, two repeated)

    `mini` needs no data root and has no missing tasks: those options are accepted and unused.
    """
    from lifelong.suites.mini import mini_stream

    return mini_stream(**options)


def nevis_mini(data_root=None, allow_missing=None, **options) -> Stream:
    """offline Nevis'22 in miniature: 13 tasks, meta-test from 2019, transfer pays off"""
    from lifelong.suites.nevis_mini import nevis_mini_stream

    return nevis_mini_stream(**options)


def _nevis(variant: str, allow_missing: bool | None = None, **options) -> Stream:
    """A Nevis'22 variant. allow_missing None (listing streams): tasks without data stay in it and fail when
    loaded; False (a run): missing data is an error listing it; True: only the tasks with data."""
    from lifelong.suites.nevis import nevis_stream

    if allow_missing is None:
        return nevis_stream(variant, defer_missing=True, **options)
    return nevis_stream(variant, allow_missing=allow_missing, **options)


def nevis_full(**options) -> Stream:
    """Nevis'22 FULL: 106 tasks 1992-2021, meta-test from 2019 (needs data)"""
    return _nevis("full", **options)


def nevis_short(**options) -> Stream:
    """Nevis'22 SHORT: 29 tasks (needs data)"""
    return _nevis("short", **options)


def nevis_tiny(**options) -> Stream:
    """Nevis'22 TINY: 7 tasks (needs data)"""
    return _nevis("tiny", **options)


def nevis_debug(**options) -> Stream:
    """Nevis'22 DEBUG: Pascal 2007 (1999), COIL 20 (2000), as the reference (needs data)"""
    return _nevis("debug", **options)


def nevis_major_domain(**options) -> Stream:
    """Nevis'22 MAJOR_DOMAIN_ONLY: 70 tasks, object and scene meta-train tasks, as the reference"""
    return _nevis("major-domain", **options)


def nevis_major_domain_object(**options) -> Stream:
    """Nevis'22 with object-domain meta-train tasks only: 65 tasks (stricter than the reference)"""
    return _nevis("major-domain-object", **options)


def nevis_large(**options) -> Stream:
    """Nevis'22 LARGE_DATASET_ONLY: 67 tasks, meta-train datasets of 10,000+ samples, as the reference"""
    return _nevis("large", **options)


def nevis_imagenet(**options) -> Stream:
    """Nevis'22 IMAGENET_ONLY: ImageNet alone (2014), the reference's pretraining stream"""
    return _nevis("imagenet", **options)
