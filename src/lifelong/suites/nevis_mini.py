"""`nevis-mini`: an offline Nevis'22 in miniature, 13 tasks over "years" with a 2019 meta-test boundary.

Built from the same offline sources as `mini`, ordered so that transfer can pay off as in the paper: large
glyph (OCR) tasks come early, and the meta-test part (2019-2021) holds small tasks of related kinds
(few-shot digits, letters, characters, shapes and textures), where starting from a related earlier model
beats training from scratch. It keeps the stream's structure: one multi-label task, one repeated dataset
(`letters`, linked to its first occurrence), mixed sizes (about 150 to 1,800 images) and resolutions.
"""

from __future__ import annotations

from lifelong.core.streams import Stream
from lifelong.core.tasks import TaskKind
from lifelong.data.sources.builtin import CHARS, DIGITS, LETTERS, SHAPE_CLASSES, TEXTURE_CLASSES
from lifelong.suites.spec import build_stream
from lifelong.suites.spec import builtin_task as _spec

META_TEST_FROM_YEAR = 2019


NEVIS_MINI_TASKS = (
    # meta-train: years <= 2018
    _spec("chars", "chars", 1995, "ocr", 32, CHARS, n_per_class=24, seed=10),
    _spec("shapes", "shapes", 1998, "object", 32, SHAPE_CLASSES, n_per_class=150, seed=11),
    _spec("letters", "letters", 2001, "ocr", 28, LETTERS, n_per_class=100, seed=12),
    _spec("textures", "textures", 2004, "texture", 32, TEXTURE_CLASSES, n_per_class=100, seed=13),
    _spec("digits", "digits", 2008, "ocr", 16, DIGITS, n_per_class=None, seed=14),
    _spec(
        "multi_shapes", "multi_shapes", 2011, "object", 32, SHAPE_CLASSES, TaskKind.MULTI_LABEL, n_per_class=80, seed=15
    ),
    _spec("letters_small", "letters", 2014, "ocr", 28, LETTERS, n_per_class=30, seed=16, size=28),
    _spec("textures_16", "textures", 2016, "texture", 16, TEXTURE_CLASSES, n_per_class=50, seed=17, size=16),
    # meta-test: 2019-2021, small tasks related to earlier ones
    _spec("digits_few", "digits", 2019, "ocr", 16, DIGITS, n_per_class=20, seed=18),
    _spec("letters", "letters", 2019, "ocr", 28, LETTERS, n_per_class=100, seed=12),
    _spec("chars_few", "chars", 2020, "ocr", 32, CHARS, n_per_class=6, seed=19),
    _spec("shapes_few", "shapes", 2020, "object", 32, SHAPE_CLASSES, n_per_class=30, seed=20),
    _spec("textures_few", "textures", 2021, "texture", 32, TEXTURE_CLASSES, n_per_class=25, seed=21),
)


def nevis_mini_stream(*, eval_split: str = "dev_test", skip_corrupt: bool = False, split_seed: int = 0) -> Stream:
    """The `nevis-mini` stream (see the module docstring)."""
    return build_stream(
        "nevis-mini",
        NEVIS_MINI_TASKS,
        meta_test_from_year=META_TEST_FROM_YEAR,
        eval_split=eval_split,
        split_seed=split_seed,
        skip_corrupt=skip_corrupt,
    )
