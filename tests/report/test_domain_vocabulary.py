"""Every built-in stream names its task domains from one vocabulary (Nevis'22's, singular), so that the report's
domain slices put the same kind of images under one name whatever stream they came from."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from _prereq import emoji_art
from fetch_fixtures import mnist_files, write_files
from suites.test_clear import _bucket_images
from suites.test_cog import write_features_set
from suites.test_fact_files import _stream as fact_file_stream
from suites.test_fact_files import folder as fact_folder  # noqa: F401 - the fixture, under its own name below

from lifelong.core.domains import DOMAINS, FORMER_NAMES, canonical_domain
from lifelong.core.streams import Stream
from lifelong.suites import get_stream
from lifelong.suites.names import STREAMS, TEMPORAL_SOURCES


def _cog(name: str) -> Callable[[Path], Stream]:
    def build(root: Path) -> Stream:
        write_features_set(root / "cog-features" / "toy")
        return get_stream(name, data_root=str(root), features="toy")

    return build


def _clear_folder(root: Path) -> Stream:
    _bucket_images(root, per_class=3, start=0)
    return get_stream("clear", data_root=str(root), protocol="iid", split="ours")


def _facts_mini(root: Path) -> Stream:
    emoji_art()
    options = dict(size=16, n_sp=8, n_spo=12, n_images=388, min_per_fact=2, max_per_fact=40, test_per_fact=2, tasks=3)
    return get_stream("facts-mini", data_root=str(root), split="random", **options)


def _mnist(name: str) -> Callable[[Path], Stream]:
    def build(root: Path) -> Stream:
        files, _ = mnist_files(train=6, test=4)
        write_files(root / "mnist", files)  # gzipped IDX, as a fetch of the published files leaves them
        return get_stream(name, data_root=str(root), protocol="iid", experiences=2)

    return build


# streams that need data or options to be built; every other stream is built by name alone
NEEDS_DATA: dict[str, Callable[[Path], Stream]] = {
    "cog": _cog("cog"),
    "cog-mini": _cog("cog-mini"),
    "clear": _clear_folder,
    "facts-mini": _facts_mini,
    "permuted-mnist": _mnist("permuted-mnist"),
    "rotated-mnist": _mnist("rotated-mnist"),
}


def test_the_vocabulary_is_the_nevis_one_singular() -> None:
    assert "object" in DOMAINS and "objects" not in DOMAINS
    assert all(not d.endswith("s") for d in DOMAINS if d != "ocr")  # 'texture', 'shape': singular as the paper


@pytest.mark.parametrize("name", sorted([*STREAMS.names(), *TEMPORAL_SOURCES.names()]))
def test_every_builtin_stream_uses_the_one_vocabulary(name: str, tmp_path: Path, request) -> None:
    if name == "facts":
        stream = fact_file_stream(request.getfixturevalue("fact_folder"), tasks=2)
    elif name in NEEDS_DATA:
        stream = NEEDS_DATA[name](tmp_path)
    else:
        stream = get_stream(name)
    domains = {task.key.domain for task in stream.tasks}
    assert domains, f"{name}: no task"
    assert domains <= set(DOMAINS), f"{name} names domains outside the vocabulary: {sorted(domains - set(DOMAINS))}"


def test_former_names_are_read_under_the_current_one() -> None:
    """Run folders written before the vocabulary was one ('objects') are sliced with today's ('object')."""
    assert set(FORMER_NAMES.values()) <= set(DOMAINS)
    assert canonical_domain("objects") == "object" and canonical_domain("textures") == "texture"
    assert canonical_domain("ocr") == "ocr"
