"""Missing prerequisites (real data, system tools, optional packages): a skip here, a failure in CI.

Every test that cannot run for want of something installable goes through `missing` (directly, or through the
`needs` mark that tests/conftest.py checks at setup). With LIFELONG_REQUIRE_PREREQS=1, which .ci/run sets, it
fails the test with the same reason instead of skipping it, so CI cannot pass with real-data tests left out.
Skips that are not about a prerequisite (no CUDA GPU on this machine, say) stay plain `pytest.skip`.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from types import ModuleType
from typing import NoReturn

import pytest

from lifelong.concepts import WordNetNotFoundError, find_wordnet, open_wordnet
from lifelong.data.sources.emoji_art import INSTALL_SCRIPT, STYLES, EmojiArt
from lifelong.data.sources.idx import FASHION_MNIST_DIRS

REQUIRE_ENV = "LIFELONG_REQUIRE_PREREQS"
MARK = "prereq"
FASHION_MNIST = FASHION_MNIST_DIRS[0]  # where Debian's dataset-fashion-mnist puts the IDX files
WORDNET_REASON = "WordNet 3.0 is not installed: apt-get install wordnet-base (Debian package)"


def required() -> bool:
    """Whether a missing prerequisite fails the test ($LIFELONG_REQUIRE_PREREQS=1) rather than skipping it."""
    return os.environ.get(REQUIRE_ENV) == "1"


def missing(reason: str) -> NoReturn:
    """Skip the running test for a missing prerequisite, or fail it with the same reason when one is required."""
    if required():
        pytest.fail(f"missing prerequisite, and {REQUIRE_ENV}=1: {reason}", pytrace=False)
    raise pytest.skip.Exception(reason, _use_item_location=True)  # the summary names the test, not this line


def needs(present: bool, reason: str) -> pytest.MarkDecorator:
    """Mark a test (or a module, as `pytestmark`) that needs a prerequisite; `missing(reason)` at setup if absent."""
    return pytest.mark.prereq(reason=None if present else reason)


def check_marks(item: pytest.Item) -> None:
    """`missing` for the first absent prerequisite marked on `item` (tests/conftest.py calls it at setup)."""
    for mark in item.iter_markers(MARK):
        if mark.kwargs["reason"] is not None:
            missing(mark.kwargs["reason"])


def package_reason(module: str, extra: str) -> str:
    return f"{module} is not installed: pip install -e '.[{extra}]'"


def needs_package(module: str, extra: str) -> pytest.MarkDecorator:
    """`needs` for an optional package of the project's `extra`, checked without importing it."""
    return needs(importlib.util.find_spec(module) is not None, package_reason(module, extra))


def import_or_missing(module: str, extra: str) -> ModuleType:
    """`pytest.importorskip` through `missing`: the module, or the reason naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        pass  # out of the `except`, so that a failure does not show the import's traceback
    missing(package_reason(module, extra))


needs_fashion_mnist = needs(FASHION_MNIST.is_dir(), f"{FASHION_MNIST} absent: apt-get install dataset-fashion-mnist")


def emoji_art(styles=STYLES, art: EmojiArt | None = None) -> EmojiArt:
    """`art` (default: the installed emoji artwork), or `missing` naming the styles it lacks and the install script."""
    art = art or EmojiArt()
    absent = art.missing(styles)
    if absent:
        missing(f"emoji style(s) {absent} not installed: run {INSTALL_SCRIPT}")
    return art


def wordnet():
    """nltk's reader over the local WordNet 3.0 (laid out in the cache folder), or `missing` naming the package."""
    try:
        find_wordnet()
    except WordNetNotFoundError:
        missing(WORDNET_REASON)
    return open_wordnet()
