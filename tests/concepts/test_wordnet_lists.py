"""WordNet 3.0 offline (finding it, nltk's layout) and the vendored concept lists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lifelong.concepts import (
    MalformedWnidError,
    UnknownConceptError,
    WordNetNotFoundError,
    cog_exclusions,
    find_wordnet,
    imagenet1k,
    imagenet21k,
    read_wnids,
)
from lifelong.concepts import wordnet as wordnet_module
from lifelong.concepts.taxonomy import synset_of
from lifelong.concepts.wnids import check_wnid, parse_wnids


def test_a_folder_without_wordnet_is_an_error_naming_the_debian_package(tmp_path):
    with pytest.raises(WordNetNotFoundError, match="wordnet-base"):
        find_wordnet(tmp_path)


def test_missing_wordnet_names_the_debian_packages(monkeypatch, tmp_path):
    monkeypatch.setattr(wordnet_module, "DEFAULT_DIRS", (str(tmp_path),))
    monkeypatch.delenv("WNSEARCHDIR", raising=False)
    with pytest.raises(WordNetNotFoundError, match="apt-get install wordnet-base wordnet-sense-index"):
        find_wordnet()


def test_lexnames_has_wordnets_45_lexicographer_files():
    lines = wordnet_module.lexnames_text().splitlines()
    assert len(lines) == 45
    assert lines[3] == "03\tnoun.Tops\t1" and lines[18] == "18\tnoun.person\t1" and lines[44] == "44\tadj.ppl\t3"


def test_the_nltk_layout_is_built_once_with_nothing_left_behind(wordnet, wordnet_cache):
    source = find_wordnet()
    first = wordnet_module.nltk_layout(source)
    assert first == wordnet_module.nltk_layout(source)
    assert first.parts[-2:] == ("corpora", "wordnet") and (first / "lexnames").is_file()
    assert not [p for p in Path(wordnet_cache).iterdir() if p.name.startswith(".")]  # no temp folder left


def test_wnid_maps_to_the_noun_synset_at_its_offset(wordnet):
    assert synset_of(wordnet, "n02084071").name() == "dog.n.01"
    assert synset_of(wordnet, "n00001740").name() == "entity.n.01"
    with pytest.raises(UnknownConceptError, match="n00000001"):
        synset_of(wordnet, "n00000001")


@pytest.mark.parametrize("bad", ["n1234567", "x02084071", "n020840711", "02084071", ""])
def test_malformed_wnids_are_named(bad):
    with pytest.raises(MalformedWnidError, match=re.escape(repr(bad))):
        check_wnid(bad)


def test_a_list_file_error_names_the_file_and_line(tmp_path):
    path = tmp_path / "seen.txt"
    path.write_text("# seen\nn02084071\n\nn0208\n")
    with pytest.raises(MalformedWnidError, match=r"seen.txt, line 4: 'n0208'"):
        read_wnids(path)
    with pytest.raises(ValueError, match="twice"):
        parse_wnids("n02084071\nn02084071\n", "x")


def test_vendored_lists_are_unique_well_formed_and_complete():
    for wnids, size in ((imagenet1k(), 1000), (imagenet21k(), 21841), (cog_exclusions(), 70)):
        assert len(wnids) == size and len(set(wnids)) == size
        assert all(re.fullmatch(r"n\d{8}", w) for w in wnids)
    assert imagenet1k() == sorted(imagenet1k())
    assert set(cog_exclusions()) <= set(imagenet21k())
    # the one ImageNet-1K class missing from fall 2011's list (teddy bear): it joins the corpus with a notice
    assert sorted(set(imagenet1k()) - set(imagenet21k())) == ["n04399382"]


def test_every_vendored_wnid_is_a_wordnet_3_noun_synset(wordnet, tax):
    missing = [w for w in imagenet1k() + imagenet21k() + cog_exclusions() if w not in tax.index]
    assert missing == [], f"not WordNet 3.0 noun synsets: {missing}"
    assert tax.synset_names[tax.index["n04399382"]] == "teddy.n.01"
