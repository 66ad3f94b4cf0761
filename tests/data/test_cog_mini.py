"""cog-mini: the curated emoji -> WordNet mapping, the emoji styles, and small seeded builds of the benchmark."""

from __future__ import annotations

import _prereq
import numpy as np
import pytest

from lifelong.concepts import imagenet1k
from lifelong.data.sources.cog_mini import (
    CogMiniOptions,
    build_cog_mini,
    export_folders,
    load_cog_mini,
    plan_levels,
    read_mapping,
)
from lifelong.data.sources.emoji_art import (
    FAMILIES,
    FAMILY,
    HOLDOUT_FAMILIES,
    STYLES,
    EmojiArt,
    EmojiArtMissingError,
)

APPLE = "1F34E"  # red apple: drawn by every style, Symbola included


@pytest.fixture(scope="module")
def wordnet():
    """nltk's WordNet 3.0 (laid out in the session's cache folder), or a skip naming the Debian package."""
    return _prereq.wordnet()


@pytest.fixture(scope="module")
def art():
    return EmojiArt()


def needs(art: EmojiArt, styles=STYLES) -> None:
    _prereq.emoji_art(styles, art)


def tiny_options(**changes) -> CogMiniOptions:
    """Three seen concepts and four unseen ones in two levels, a few 32 px images each."""
    concepts = ("n02129604", "n07753592", "n04254680", "n02503517", "n07697100", "n02834778", "n02062744")
    base = dict(size=32, train_per_concept=6, test_per_concept=3, levels=2, min_level_size=2, seed=3, concepts=concepts)
    return CogMiniOptions(**{**base, **changes})


# -- the mapping ------------------------------------------------------------------------------------------


def test_mapping_names_unique_concrete_wordnet_nouns(wordnet):
    mapping = read_mapping()
    assert len(mapping) >= 400
    assert len({c.wnid for c in mapping}) == len(mapping)
    assert len({c.codepoints for c in mapping}) == len(mapping)
    physical = wordnet.synset("physical_entity.n.01")
    for concept in mapping:
        synset = wordnet.synset_from_pos_and_offset("n", int(concept.wnid[1:]))
        assert synset.name() == concept.synset_name, concept
        assert any(physical in path for path in synset.hypernym_paths()), f"{concept} is not a concrete noun"
        assert concept.emoji == "".join(chr(int(p, 16)) for p in concept.codepoints.split("-"))


def test_mapping_picks_the_sense_the_emoji_draws(wordnet):
    by_codepoints = {c.codepoints: c.synset_name for c in read_mapping()}
    assert by_codepoints["1F401"] == "mouse.n.01"  # the animal
    assert by_codepoints["1F5B1-FE0F"] == "mouse.n.04"  # the computer mouse
    assert by_codepoints["1F405"] == "tiger.n.02"  # not the fierce person
    assert by_codepoints["1F987"] == "bat.n.01"  # the animal, not the club


def test_mapping_emoji_exist_in_three_styles(art):
    needs(art)
    for concept in read_mapping():
        families = {FAMILY[s] for s in STYLES if art.has(s, concept.codepoints)}
        assert len(families) >= 3, (concept, families)
        assert set(HOLDOUT_FAMILIES) <= families, concept  # every fold's test style draws every concept


def test_symbola_cannot_hold_out_every_concept(art):
    """Why HOLDOUT_FAMILIES leaves Symbola out: some mapped emoji have no Symbola glyph."""
    needs(art)
    missing = [c for c in read_mapping() if not any(art.has(s, c.codepoints) for s in STYLES if FAMILY[s] == "symbola")]
    assert missing and "symbola" not in HOLDOUT_FAMILIES and set(HOLDOUT_FAMILIES) < set(FAMILIES)


def test_read_mapping_rejects_a_repeated_wnid(tmp_path):
    path = tmp_path / "mapping.csv"
    rows = ["emoji,codepoints,emoji_name,wnid,synset_name,note", "🐅,1F405,tiger,n02129604,tiger.n.02,"]
    path.write_text("\n".join([*rows, "🐯,1F42F,tiger face,n02129604,tiger.n.02,\n"]), encoding="utf-8")
    with pytest.raises(ValueError, match="n02129604 is listed twice"):
        read_mapping(path)


# -- the styles ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("style", STYLES)
def test_each_style_draws_a_known_emoji(art, style):
    needs(art, [style])
    image = art.render(style, APPLE, size=32)
    assert image.shape == (32, 32, 3) and image.dtype == np.uint8
    ink = (image < 200).any(axis=2).mean()
    assert 0.1 < ink < 0.9, f"{style} drew {ink:.0%} non-white pixels"
    assert (image[0] > 240).all(), "the top border is white"


def test_missing_style_names_the_package_and_the_install_command(tmp_path, monkeypatch):
    monkeypatch.delenv("LIFELONG_EMOJI_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    empty = EmojiArt(emoji_dir=tmp_path, fonts=[tmp_path])
    if empty.available("twemoji"):
        pytest.skip("emoji-datasource-twitter is installed globally (npm -g)")
    with pytest.raises(EmojiArtMissingError, match=r"emoji-datasource-twitter.*`lifelong cog install-art`"):
        empty.render("twemoji", APPLE)


# -- building the benchmark -----------------------------------------------------------------------------


def test_levels_are_ordered_by_similarity_to_the_seen_concepts(wordnet):
    plan, _ = plan_levels(read_mapping(), levels=5)
    assert list(plan) == ["seen", "L1", "L2", "L3", "L4", "L5"]
    assert {c.wnid for c, _ in plan["seen"]} <= set(imagenet1k())
    sizes = {len(plan[f"L{k}"]) for k in range(1, 6)}
    assert len(sizes) == 1
    for k in range(1, 5):
        closer = [s for _, s in plan[f"L{k}"]]
        farther = [s for _, s in plan[f"L{k + 1}"]]
        assert min(closer) >= max(farther)
        assert closer == sorted(closer, reverse=True)


def test_levels_follow_the_papers_candidate_rules_against_cog_minis_seen_set(wordnet):
    from lifelong.concepts import ConceptError, corpus_with, taxonomy
    from lifelong.concepts.wnids import imagenet21k

    mapping = read_mapping()
    plan, notes = plan_levels(mapping)
    unseen = [c.wnid for name, members in plan.items() if name != "seen" for c, _ in members]
    seen = [c.wnid for c, _ in plan["seen"]]
    assert len(plan) == 6 and all(len(plan[f"L{k}"]) >= 30 for k in range(1, 6))
    assert set(unseen) <= set(imagenet21k())  # candidates are ImageNet-21K concepts only
    tax = taxonomy(corpus_with(("cog-mini", [c.wnid for c in mapping]))[0])
    ancestors = {w: {tax.wnids[j] for j in tax.ancestors[tax.index[w]].indices} - {w} for w in seen + unseen}
    above_seen = set().union(*(ancestors[w] for w in seen))
    assert not above_seen & set(unseen)  # no ancestor of a seen concept (e.g. bus above school bus)
    assert not any(ancestors[w] & set(unseen) for w in unseen)  # leaves only
    assert "n02924116" in {c.wnid for c in mapping} and "n02924116" not in unseen
    assert any("seen-ancestors filter removed" in n for n in notes) and any("not ImageNet-21K" in n for n in notes)
    few = tuple(seen[:3] + unseen[:100])
    three, notes = plan_levels(mapping, levels=5, concepts=few)
    assert len(three) == 4 and any("3 levels instead" in n for n in notes)
    with pytest.raises(ConceptError, match="cannot fill 3 levels of at least 30"):
        plan_levels(mapping, levels=5, concepts=tuple(seen[:3] + unseen[:50]))


def test_tiny_build_is_seeded_and_keeps_train_and_test_styles_apart(wordnet, art):
    needs(art)
    first, again = build_cog_mini(tiny_options(), art), build_cog_mini(tiny_options(), art)
    other = build_cog_mini(tiny_options(seed=4), art)
    assert list(first.levels) == ["seen", "L1", "L2"]
    for name, level in first.levels.items():
        assert level.train_images.shape == (6 * len(level.wnids), 32, 32, 3)
        assert level.test_images.shape == (3 * len(level.wnids), 32, 32, 3)
        assert np.array_equal(level.train_images, again.levels[name].train_images)
        assert np.array_equal(level.test_images, again.levels[name].test_images)
        assert not np.array_equal(level.train_images, other.levels[name].train_images)
        train_families = {FAMILY[STYLES[i]] for i in level.train_styles}
        test_families = {FAMILY[STYLES[i]] for i in level.test_styles}
        assert test_families == {"twemoji"} and not train_families & test_families
        assert np.bincount(level.train_labels).tolist() == [6] * len(level.wnids)
        assert list(level.wnids) == sorted(level.wnids)


def test_other_test_style_holds_out_that_family(wordnet, art):
    needs(art)
    cog = build_cog_mini(tiny_options(test_style="openmoji", train_styles=("noto", "twemoji")), art)
    level = cog.levels["L1"]
    assert {STYLES[i] for i in level.test_styles} == {"openmoji", "openmoji-black"}
    assert {STYLES[i] for i in level.train_styles} == {"noto", "twemoji"}
    assert set(FAMILIES) >= {FAMILY[STYLES[i]] for i in level.train_styles}


def test_cache_round_trip_and_folder_export(wordnet, art, tmp_path):
    needs(art)
    built = load_cog_mini(tiny_options(), cache_dir=tmp_path / "cache")
    assert (built.path / "manifest.json").is_file()
    cached = load_cog_mini(tiny_options(), cache_dir=tmp_path / "cache")
    assert cached.path == built.path and cached.notes == built.notes
    for name, level in built.levels.items():
        assert np.array_equal(level.test_images, cached.levels[name].test_images)
        assert cached.levels[name].wnids == level.wnids
    labeled = cached.levels["seen"].labeled()
    assert labeled.class_names == cached.levels["seen"].wnids
    assert sorted(set(labeled.official_split)) == ["test", "train"]
    root = export_folders(cached, tmp_path / "folders", levels=["L1"])
    wnid = cached.levels["L1"].wnids[0]
    assert len(list((root / "L1" / "train" / wnid).glob("*.png"))) == 6
    assert len(list((root / "L1" / "test" / wnid).glob("*.png"))) == 3
