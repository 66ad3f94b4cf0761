"""facts-mini: the fact plan, long-tailed counts, the shipped word vectors, and small seeded builds."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _prereq import emoji_art

from lifelong.data.sources import facts_mini
from lifelong.data.sources.emoji_art import FAMILY, STYLES, EmojiArt
from lifelong.data.sources.facts_mini import (
    ATTRIBUTES,
    RELATIONS,
    FactsMiniOptions,
    build_facts_mini,
    load_facts_mini,
    plan_counts,
    plan_facts,
    read_objects,
    shipped_vectors_path,
    vector_key,
    vocabulary,
)
from lifelong.data.sources.facts_mini_export import export_facts_csv
from lifelong.facts import embed_parts, read_facts_csv, read_word_vectors

SMALL = {"size": 16, "n_sp": 8, "n_spo": 12, "n_images": 388, "min_per_fact": 2, "max_per_fact": 40}
SMALL.update(test_per_fact=2)  # 44 facts: 300 train images, 88 test images


def small(**changes) -> FactsMiniOptions:
    return FactsMiniOptions(**{**SMALL, **changes})


@pytest.fixture(scope="module")
def art():
    return emoji_art()


@pytest.fixture(scope="module")
def built(art):
    return build_facts_mini(small(), art=art)


def test_objects_are_single_words_drawn_by_every_style(art):
    objects = read_objects()
    assert len(objects) >= 20
    assert all(o.name.isalpha() and o.name.islower() for o in objects)
    assert [o for o in objects for s in STYLES if not art.has(s, o.codepoints)] == []


def test_default_plan_has_186_facts_of_every_kind():
    facts = plan_facts()
    kinds = [f.kind for f in facts]
    assert (len(facts), kinds.count("S"), kinds.count("SP"), kinds.count("SPO")) == (186, 24, 62, 100)
    assert len(set(facts)) == len(facts)
    assert {f.P for f in facts if f.kind == "SP"} == set(ATTRIBUTES)
    assert {f.P for f in facts if f.kind == "SPO"} == set(RELATIONS)
    assert all(f.S != f.O for f in facts if f.kind == "SPO")
    mirrors = {"left of": "right of", "right of": "left of", "above": "below", "below": "above"}
    assert not [f for f in facts if f.P in mirrors and (f.O, mirrors[f.P], f.S) in facts]
    assert plan_facts() == facts and plan_facts(FactsMiniOptions(seed=1)) != facts


def test_default_counts_are_long_tailed_and_sum_exactly():
    options = FactsMiniOptions()
    counts = plan_counts(options)
    assert counts.sum() + 186 * options.test_per_fact == options.n_images == 28_624
    assert counts.min() >= options.min_per_fact and counts.max() <= options.max_per_fact
    assert counts.max() / counts.min() >= 20
    top = np.sort(counts)[::-1]
    assert top[: len(top) // 10].sum() > 0.4 * counts.sum()  # a tenth of the facts hold most images
    assert np.array_equal(plan_counts(options), counts)
    assert not np.array_equal(plan_counts(FactsMiniOptions(seed=1)), counts)


def test_bad_options_say_what_to_change():
    with pytest.raises(ValueError, match="n_images"):
        plan_counts(FactsMiniOptions(n_images=100))
    with pytest.raises(ValueError, match="style family"):
        FactsMiniOptions(test_style="emojione")
    with pytest.raises(ValueError, match="keep them apart"):
        FactsMiniOptions(train_styles=("openmoji",), test_style="openmoji")
    with pytest.raises(ValueError, match="SP facts"):
        plan_facts(FactsMiniOptions(n_sp=10_000))


def test_shipped_vectors_cover_every_part_text():
    vectors = read_word_vectors(shipped_vectors_path(), progress=False)
    assert vectors.dim == 384
    assert sorted(vectors.words) == sorted(vector_key(t) for t in vocabulary())
    assert {"left_of", "on_top_of", "upside_down"} <= set(vectors.words)
    assert np.allclose(np.linalg.norm(vectors.matrix, axis=1), 1, atol=1e-4)
    facts = plan_facts()
    vocabularies = [sorted({getattr(f, part) for f in facts if getattr(f, part)}) for part in "SPO"]
    parts, report = embed_parts(vocabularies, vectors, oov="error")
    assert report["phrases_averaged"] == 0  # every phrase found whole
    assert all(np.abs(p).sum(axis=1).min() > 0 for p in parts)


def test_small_build_is_deterministic_and_styles_are_disjoint(art, built):
    options = built.options
    assert built.train_images.shape == (300, 16, 16, 3) and built.train_images.dtype == np.uint8
    assert built.test_images.shape == (88, 16, 16, 3)
    assert {f.kind for f in built.facts} == {"S", "SP", "SPO"}
    assert np.array_equal(built.images_per_fact(), plan_counts(options))
    assert built.images_per_fact().min() >= 1 and np.bincount(built.test_facts).min() >= 1
    train_styles = {STYLES[i] for i in np.unique(built.train_styles)}
    test_styles = {STYLES[i] for i in np.unique(built.test_styles)}
    assert test_styles == {"twemoji"} and not train_styles & test_styles
    assert {FAMILY[s] for s in train_styles} == {"noto", "symbola", "openmoji"}
    again = build_facts_mini(small(), art=EmojiArt())
    for name in ("train_images", "train_facts", "train_styles", "test_images", "test_facts", "test_styles"):
        assert np.array_equal(getattr(again, name), getattr(built, name)), name
    assert again.facts == built.facts
    other = build_facts_mini(small(seed=1, n_spo=0, n_sp=0, n_images=24 * 4), art=art)
    assert not np.array_equal(other.test_images, built.test_images[:48])  # the same 24 S facts come first in both


def _ink(images: np.ndarray) -> np.ndarray:
    return (255 - images.min(axis=3).astype(np.int64)) > 60


def test_attributes_are_visible(built):
    def images(part):
        index = [i for i, f in enumerate(built.facts) if f.P == part and f.O is None]
        return built.train_images[np.isin(built.train_facts, index)]

    assert _ink(images("big")).mean() > _ink(images(None)).mean() > _ink(images("small")).mean()
    for colour, more, less in (("red", 0, 2), ("blue", 2, 0)):
        pixels = images(colour)[_ink(images(colour))].astype(np.int64)
        assert (pixels[:, more] - pixels[:, less]).mean() > 30, colour


def test_cache_round_trip_resume_and_export(art, built, tmp_path, monkeypatch):
    first = load_facts_mini(small(), cache_dir=tmp_path / "cache")
    manifest = json.loads((first.folder / "manifest.json").read_text())
    assert manifest["train_per_fact"] == built.images_per_fact().tolist()
    (first.folder / "manifest.json").unlink()  # as if killed after the train split was written
    (first.folder / "test.npz").unlink()
    resumed = load_facts_mini(small(), cache_dir=tmp_path / "cache")
    assert np.array_equal(resumed.test_images, built.test_images)
    monkeypatch.setattr(facts_mini, "_build", None)  # a complete cache is read, never rebuilt
    second = load_facts_mini(small(), cache_dir=tmp_path / "cache")
    assert second.folder == first.folder and second.facts == built.facts
    for name in ("train_images", "train_facts", "train_styles", "test_images", "test_facts", "test_styles"):
        assert np.array_equal(getattr(second, name), getattr(built, name)), name
    path = export_facts_csv(second, tmp_path / "export")
    table = read_facts_csv(path)
    assert table.facts == [built.facts[i] for i in np.concatenate([built.train_facts, built.test_facts])]
    assert len(table.images) == 388
    with pytest.raises(FileExistsError):
        export_facts_csv(second, tmp_path / "export")
