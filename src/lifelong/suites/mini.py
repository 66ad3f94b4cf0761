"""`mini`: the offline default stream, 9 tasks over "years" from data every install has.

Built only from scikit-learn's digits and the generators of lifelong.data.sources.builtin (glyphs from
matplotlib's fonts, procedural shapes, textures). Mixed sizes (~600 to ~1,800 images), resolutions (16, 28,
32), one multi-label task, two repeated datasets (digits, letters), and OCR tasks before and after the
meta-train/meta-test boundary (2019), as in Nevis'22.
"""

from __future__ import annotations

from lifelong.core.streams import Stream
from lifelong.core.tasks import TaskKind
from lifelong.data.sources.builtin import CHARS, DIGITS, LETTERS, SHAPE_CLASSES, TEXTURE_CLASSES
from lifelong.suites.spec import build_stream
from lifelong.suites.spec import builtin_task as _spec

MINI_TASKS = (
    _spec("digits", "digits", 1998, "ocr", 16, DIGITS, n_per_class=None, seed=0),
    _spec("shapes", "shapes", 2001, "object", 32, SHAPE_CLASSES, n_per_class=100, seed=1),
    _spec("letters", "letters", 2004, "ocr", 28, LETTERS, n_per_class=120, seed=2),
    _spec("textures", "textures", 2008, "texture", 32, TEXTURE_CLASSES, n_per_class=80, seed=3),
    _spec("chars", "chars", 2012, "ocr", 32, CHARS, n_per_class=20, seed=4),
    _spec(
        "multi_shapes",
        "multi_shapes",
        2016,
        "object",
        32,
        SHAPE_CLASSES,
        TaskKind.MULTI_LABEL,
        n_per_class=100,
        seed=5,
    ),
    _spec("digits", "digits", 2019, "ocr", 16, DIGITS, n_per_class=None, seed=0),
    _spec("letters", "letters", 2020, "ocr", 28, LETTERS, n_per_class=120, seed=2),
    _spec("shapes_small", "shapes", 2021, "object", 16, SHAPE_CLASSES, n_per_class=60, seed=6, size=16),
)
META_TEST_FROM_YEAR = 2019


def mini_stream(*, eval_split: str = "dev_test", skip_corrupt: bool = False, split_seed: int = 0) -> Stream:
    """The `mini` stream (see the module docstring)."""
    return build_stream(
        "mini",
        MINI_TASKS,
        meta_test_from_year=META_TEST_FROM_YEAR,
        eval_split=eval_split,
        split_seed=split_seed,
        skip_corrupt=skip_corrupt,
    )
